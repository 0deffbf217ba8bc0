//! Text from servers and web pages, made safe to show on a terminal.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL and C1: `char::is_control`, newlines and tabs
/// included) shown as a Rust escape such as `\u{1b}`, so that text a server or a web page
/// chose can never move the cursor, change colours or retitle the terminal it is printed on.
/// Text without control characters is returned as it is, unallocated.
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_unicode());
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
    fn controls_are_escaped_and_the_rest_is_kept() {
        assert!(matches!(
            escape_controls("plain: ünïcode ✓"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_controls("a\u{1b}[31mred\u{7}\r\nb\u{7f}\u{9b}c\td"),
            "a\\u{1b}[31mred\\u{7}\\u{d}\\u{a}b\\u{7f}\\u{9b}c\\u{9}d"
        );
    }
}
