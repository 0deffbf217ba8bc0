//! Text made safe to show: what a server sends, escaped for a terminal.
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
/// (C0, DEL, C1) or a bidirectional formatting character (Unicode's Bidi_Control set).
pub fn drives_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_where(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    let Some(first) = s.find(&escape) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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
}
