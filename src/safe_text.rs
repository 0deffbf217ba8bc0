//! Text made safe to show: what a server sends, escaped for a terminal; URLs, with their
//! secrets hidden.
//!
//! Everything a server sends is hostile input. A tool description or an error body that
//! holds `ESC [ 2 J` clears the screen of whoever prints it raw; a `\r` or backspaces overwrite
//! what was printed before. The binary shows server text only through these functions, and
//! embedders that show it on a terminal should too.

use std::borrow::Cow;

/// Server text as one line: every control character (C0 with `\n` and `\t`, DEL, C1) and every
/// bidirectional formatting character (which reorders what a terminal shows) replaced by its
/// Rust escape (`\u{1b}`, `\n`, `\r`, `\u{202e}`). Borrows when there is nothing to escape.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    escape_where(s, drives_terminal)
}

/// [`escape_controls`] for multi-line text (instructions, tool results): `\n` and `\t` are
/// kept, every other control character is escaped (`\r` too, which would overwrite a line).
pub fn escape_controls_keep_lines(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| drives_terminal(c) && c != '\n' && c != '\t')
}

/// Whether `c` does something to a terminal besides showing a glyph: a control character
/// (C0, DEL, C1), a bidirectional formatting character (Unicode's Bidi_Control set), or a
/// zero-width one that hides text (U+200B to U+200D, U+FEFF).
pub fn drives_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn escape_where(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(mut at) = next_escaped(s, 0, &escape) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    let mut copied = 0;
    loop {
        out.push_str(&s[copied..at]);
        let c = s[at..].chars().next().expect("a character starts there");
        out.extend(c.escape_default());
        copied = at + c.len_utf8();
        match next_escaped(s, copied, &escape) {
            Some(next) => at = next,
            None => break,
        }
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// Where the next character to escape starts in `s[from..]` (`from` on a character boundary).
/// Printable ASCII never drives a terminal, so it is skipped a byte at a time without
/// decoding characters (a tool result can be a megabyte of it).
fn next_escaped(s: &str, from: usize, escape: &impl Fn(char) -> bool) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        if (0x20..0x7f).contains(&bytes[i]) {
            i += 1;
            continue;
        }
        let c = s[i..].chars().next().expect("a character starts there");
        if escape(c) {
            return Some(i);
        }
        i += c.len_utf8();
    }
    None
}

/// What stands for a hidden secret.
pub const REDACTED: &str = "***";

/// A URL fit for errors, logs and status: the password of its userinfo and the value of
/// every query (and fragment) parameter replaced by `***`; a parameter without `=` is hidden
/// whole. Names, host, port and path are kept, so the URL still says where it points
/// (`https://u:***@h/mcp?api_key=***`). Text that is not a URL is returned as it is. Borrows
/// when there is nothing to hide.
pub fn redact_url(url: &str) -> Cow<'_, str> {
    // The authority runs from after `scheme://` to the first `/`, `?` or `#`.
    let authority_start = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[authority_start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| authority_start + i);
    let authority = &url[authority_start..authority_end];
    let password = authority
        .rfind('@')
        .and_then(|at| authority[..at].find(':').map(|colon| (colon, at)))
        .filter(|(colon, at)| colon + 1 < *at);
    let rest = &url[authority_end..];
    let query_start = rest.find(['?', '#']);
    if password.is_none() && query_start.is_none() {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    match password {
        Some((colon, at)) => {
            out.push_str(&url[..authority_start + colon + 1]);
            out.push_str(REDACTED);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(&url[..authority_end]),
    }
    let Some(query_start) = query_start else {
        out.push_str(rest);
        return Cow::Owned(out);
    };
    out.push_str(&rest[..query_start]);
    // `?a=1&b=2#c=3`: each separator is kept, each value hidden.
    let mut tail = &rest[query_start..];
    while let Some(separator) = tail.chars().next() {
        out.push(separator);
        let part = &tail[1..];
        let end = part.find(['&', ';', '#']).map_or(part.len(), |i| i);
        let parameter = &part[..end];
        match parameter.split_once('=') {
            Some((name, _)) => {
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            None if parameter.is_empty() => {}
            None => out.push_str(REDACTED),
        }
        tail = &part[end..];
    }
    Cow::Owned(out)
}

/// `redact_url` (query values and a password as `***`) applied to every URL (`scheme://...`, up to a space, a quote, `<`, `>` or
/// `\\`) in a text such as an error message.
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut done = 0; // `text[..done]` is in `out` already
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let colon = from + found;
        from = colon + 3;
        let scheme = text[..colon]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        if scheme == colon || scheme < done {
            continue;
        }
        let end = text[from..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '\\'))
            .map_or(text.len(), |i| from + i);
        if let Cow::Owned(hidden) = redact_url(&text[scheme..end]) {
            out.push_str(&text[done..scheme]);
            out.push_str(&hidden);
            done = end;
        }
        from = end;
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// `text` in lines of at most `width` columns (at least one), broken at spaces; a word longer
/// than a line is cut where the line ends. For a value shown under its label, each line after
/// the first indented to where the first began. `columns` is how many columns a character
/// takes on the terminal (two for most CJK ones).
pub fn wrap(text: &str, width: usize, columns: impl Fn(char) -> usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    let mut used = 0;
    for (i, word) in text.split(' ').enumerate() {
        let wide: usize = word.chars().map(&columns).sum();
        if used > 0 && used + 1 + wide > width {
            lines.push(String::new());
            used = 0;
        } else if i > 0 && used > 0 {
            lines.last_mut().expect("one line at least").push(' ');
            used += 1;
        }
        for c in word.chars() {
            let w = columns(c);
            if used > 0 && used + w > width {
                lines.push(String::new());
                used = 0;
            }
            lines.last_mut().expect("one line at least").push(c);
            used += w;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped() {
        let table: &[(&str, &str, &str)] = &[
            // input, one line, keeping lines
            ("plain text, é €", "plain text, é €", "plain text, é €"),
            (
                "\x1b[2J\x1b]0;title\x07",
                "\\u{1b}[2J\\u{1b}]0;title\\u{7}",
                "\\u{1b}[2J\\u{1b}]0;title\\u{7}",
            ),
            ("a\r\nb\tc", "a\\r\\nb\\tc", "a\\r\nb\tc"),
            (
                "back\x08\x08ok\x7f",
                "back\\u{8}\\u{8}ok\\u{7f}",
                "back\\u{8}\\u{8}ok\\u{7f}",
            ),
            (
                "\u{9b}31m C1 CSI \u{85}",
                "\\u{9b}31m C1 CSI \\u{85}",
                "\\u{9b}31m C1 CSI \\u{85}",
            ),
            ("\0", "\\u{0}", "\\u{0}"),
            ("abc\u{202e}fed", "abc\\u{202e}fed", "abc\\u{202e}fed"),
            ("é\u{7}😀\n", "é\\u{7}😀\\n", "é\\u{7}😀\n"),
        ];
        for (input, line, lines) in table {
            assert_eq!(escape_controls(input), *line, "{input:?}");
            assert_eq!(escape_controls_keep_lines(input), *lines, "{input:?}");
        }
        assert!(matches!(escape_controls("fine"), Cow::Borrowed(_)));
        assert!(matches!(
            escape_controls_keep_lines("two\nlines"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn urls_keep_where_they_point_and_hide_secrets() {
        let table: &[(&str, &str)] = &[
            ("https://h.test/mcp", "https://h.test/mcp"),
            (
                "https://h.test/mcp?api_key=s3cret&v=2",
                "https://h.test/mcp?api_key=***&v=***",
            ),
            ("http://h:8/p?token", "http://h:8/p?***"),
            ("http://h/p?", "http://h/p?"),
            ("http://h/p?a=1;b=2#frag", "http://h/p?a=***;b=***#***"),
            ("http://h/#access_token=x", "http://h/#access_token=***"),
            ("https://u:pw@h.test/mcp", "https://u:***@h.test/mcp"),
            ("https://u@h.test/mcp", "https://u@h.test/mcp"),
            ("https://u:@h.test/", "https://u:@h.test/"),
            ("https://u:p@ss@h.test?k=v", "https://u:***@h.test?k=***"),
            ("h.test:80/x?k=v", "h.test:80/x?k=***"),
            ("not a url", "not a url"),
            ("", ""),
        ];
        for (url, want) in table {
            assert_eq!(redact_url(url), *want, "{url}");
        }
        assert!(matches!(redact_url("https://h/mcp"), Cow::Borrowed(_)));
    }

    #[test]
    fn urls_in_text_hide_their_secrets() {
        let table: &[(&str, &str)] = &[
            ("no url here", "no url here"),
            (
                "http://127.0.0.1:1/mcp?api_key=s3cret: connection refused",
                "http://127.0.0.1:1/mcp?api_key=*** connection refused",
            ),
            (
                "tried \"https://a.test/x?k=1\" and <wss://u:pw@b.test/?t=2>, then https://c.test/",
                "tried \"https://a.test/x?k=***\" and <wss://u:***@b.test/?t=***>, then https://c.test/",
            ),
            ("://?k=v ftp://h?k=v", "://?k=v ftp://h?k=***"),
            ("a https://h/?k=v\nb", "a https://h/?k=***\nb"),
        ];
        for (text, want) in table {
            assert_eq!(redact_urls(text), *want, "{text}");
        }
    }

    #[test]
    fn wrapped_lines_break_at_spaces_and_fit() {
        let one = |_: char| 1;
        let table: &[(&str, usize, &[&str])] = &[
            ("", 10, &[""]),
            ("short", 10, &["short"]),
            ("one two three four", 9, &["one two", "three", "four"]),
            ("one two three", 7, &["one two", "three"]),
            ("abcdefghij kl", 4, &["abcd", "efgh", "ij", "kl"]),
            ("a  b", 10, &["a  b"]),
            ("x y", 0, &["x", "y"]),
        ];
        for (text, width, want) in table {
            assert_eq!(wrap(text, *width, one), *want, "{text:?} in {width}");
        }
        // Wide characters count as what they take.
        let cjk = |c: char| if c.is_ascii() { 1 } else { 2 };
        assert_eq!(wrap("漢字漢字 ok", 5, cjk), ["漢字", "漢字", "ok"]);
    }
}
