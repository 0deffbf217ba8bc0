//! `${VAR}` and `$VAR` expansion in config values, with the semantics of Go's `os.Expand`.
//!
//! Agenvoy's config files were written for a Go host, so the same text must expand the same
//! way here. The rules, exactly as Go applies them:
//!
//! - `$NAME` takes the longest run of ASCII letters, digits and `_` after the `$`.
//! - `${NAME}` takes everything up to the next `}`, whatever it is (`${A B}` looks up `A B`).
//! - `$` followed by one special character (`*`, `#`, `$`, `@`, `!`, `?`, `-` or a digit) takes
//!   just that character: `$$` looks up the variable `$`, `$1x` looks up `1` then keeps `x`.
//!   `${*}` (one special character in braces) is the same.
//! - An unset variable expands to nothing.
//! - `${}` is bad syntax: it is dropped. An unterminated `${` is bad syntax too: the `${` is
//!   dropped and the rest is kept as text.
//! - A `$` followed by anything else (a space, `/`, `.`, the end of the text) stays as it is.

/// Expands `$VAR` and `${VAR}` in `text` with `lookup`; a `None` from `lookup` (unset)
/// becomes empty.
pub fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // Start of the text not yet copied to `out`.
    let mut copied = 0;
    let mut j = 0;
    while j < bytes.len() {
        if bytes[j] == b'$' && j + 1 < bytes.len() {
            out.push_str(&text[copied..j]);
            let (name, width) = shell_name(&text[j + 1..]);
            match name {
                // Bad syntax: drop what was read.
                None if width > 0 => {}
                // No name after the `$`: keep the `$`.
                None => out.push('$'),
                Some(name) => out.push_str(&lookup(name).unwrap_or_default()),
            }
            j += width;
            copied = j + 1;
        }
        j += 1;
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

/// [`expand`] with the process environment as the lookup.
pub fn expand_env(text: &str) -> String {
    expand(text, |name| std::env::var(name).ok())
}

/// Whether `text` expands to exactly one variable's value and nothing else (`$TOKEN`,
/// `${TOKEN}`): such a value holds no secret itself, only where to find one (the API shows it
/// unredacted).
#[cfg(any(feature = "api", test, fuzzing))]
pub fn is_pure_reference(text: &str) -> bool {
    const MARK: &str = "\u{0}";
    let lookups = std::cell::Cell::new(0);
    let expanded = expand(text, |_| {
        lookups.set(lookups.get() + 1);
        Some(MARK.to_string())
    });
    lookups.get() == 1 && expanded == MARK
}

fn is_special(c: u8) -> bool {
    matches!(
        c,
        b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
    )
}

fn is_name_byte(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphanumeric()
}

/// The variable name at the start of `s` (the text after a `$`) and how many bytes it spans.
/// `(None, 0)`: no name, keep the `$`; `(None, n > 0)`: bad syntax, drop `$` and `n` bytes.
fn shell_name(s: &str) -> (Option<&str>, usize) {
    let b = s.as_bytes();
    if b[0] == b'{' {
        if b.len() > 2 && is_special(b[1]) && b[2] == b'}' {
            return (Some(&s[1..2]), 3);
        }
        return match b[1..].iter().position(|&c| c == b'}') {
            Some(0) => (None, 2),
            Some(end) => (Some(&s[1..end + 1]), end + 2),
            None => (None, 1),
        };
    }
    if is_special(b[0]) {
        return (Some(&s[..1]), 1);
    }
    let end = b.iter().position(|&c| !is_name_byte(c)).unwrap_or(b.len());
    if end == 0 {
        (None, 0)
    } else {
        (Some(&s[..end]), end)
    }
}

#[cfg(test)]
mod tests {
    use super::{expand, is_pure_reference};

    #[test]
    fn pure_references() {
        for text in ["$TOKEN", "${TOKEN}", "${A B}", "$1"] {
            assert!(is_pure_reference(text), "{text:?}");
        }
        for text in [
            "",
            "s3cret",
            "Bearer $TOKEN",
            "${TOKEN}x",
            "$A$B",
            "$",
            "${}",
            "${TOKEN",
            "${\0",
            "\0",
        ] {
            assert!(!is_pure_reference(text), "{text:?}");
        }
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("s3cret".into()),
            "A_1" => Some("a1".into()),
            "A B" => Some("spaced".into()),
            "1" => Some("one".into()),
            "*" => Some("star".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    /// Each case is what Go's `os.Expand` returns for the same text and the same mapping.
    #[test]
    fn matches_go_os_expand() {
        let table: &[(&str, &str)] = &[
            ("", ""),
            ("plain", "plain"),
            ("$HOME", "/home/u"),
            ("${HOME}", "/home/u"),
            ("$HOME/bin", "/home/u/bin"),
            ("${HOME}bin", "/home/ubin"),
            ("$HOMEbin", ""),
            ("Bearer $TOKEN", "Bearer s3cret"),
            ("Bearer ${TOKEN}!", "Bearer s3cret!"),
            ("$A_1-x", "a1-x"),
            ("$UNSET", ""),
            ("a${UNSET}b", "ab"),
            ("$EMPTY.", "."),
            // A special character after `$` is a one-character name.
            ("$$", ""),
            ("$$HOME", "HOME"),
            ("$1", "one"),
            ("$12", "one2"),
            ("$*", "star"),
            ("${*}", "star"),
            ("${1}", "one"),
            ("$#", ""),
            ("$-", ""),
            ("$@x", "x"),
            // Braces take anything up to the next `}`.
            ("${A B}", "spaced"),
            ("${HOME}}", "/home/u}"),
            ("${{}", ""),
            // Bad syntax is dropped.
            ("${}", ""),
            ("x${}y", "xy"),
            ("${HOME", "HOME"),
            ("a${", "a"),
            // A `$` with no name after it stays.
            ("$", "$"),
            ("a$", "a$"),
            ("$ x", "$ x"),
            ("$/", "$/"),
            ("$.HOME", "$.HOME"),
            ("$é", "$é"),
            ("€$HOME€", "€/home/u€"),
        ];
        for (input, want) in table {
            assert_eq!(expand(input, env), *want, "expanding {input:?}");
        }
    }
}
