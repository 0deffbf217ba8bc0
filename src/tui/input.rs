//! The panel's keys and text fields: which key moves up or down, a one-line editor, how a
//! field is masked when drawn, and the parsers of what the add wizard takes (arguments split
//! as a shell would, `KEY=VALUE`, `Name: value`).

use crate::safe_text::redact_url;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Whether `key` is the character `c` typed plainly (Ctrl-`c` is an editing key).
pub(crate) fn key_is(key: &KeyEvent, c: char) -> bool {
    key.code == KeyCode::Char(c) && !key.modifiers.contains(KeyModifiers::CONTROL)
}

/// ↑ or `k`.
pub(crate) fn up(key: &KeyEvent) -> bool {
    key.code == KeyCode::Up || key_is(key, 'k')
}

/// ↓ or `j`.
pub(crate) fn down(key: &KeyEvent) -> bool {
    key.code == KeyCode::Down || key_is(key, 'j')
}

/// How a field's text is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mask {
    /// As typed.
    #[default]
    None,
    /// Every character as `•` (a secret).
    All,
    /// As typed up to the first `sep`, then `•` (an env or header value).
    After(char),
    /// A URL: its query values and password as `***` ([`crate::safe_text::redact_url`]).
    Url,
}

/// A one-line editor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Input {
    text: String,
    /// The cursor, in characters.
    cursor: usize,
    pub(crate) mask: Mask,
}

/// The longest text a field takes (a pasted book is cut here).
const MAX_CHARS: usize = 4096;

impl Input {
    pub(crate) fn new(mask: Mask) -> Input {
        Input {
            mask,
            ..Input::default()
        }
    }

    pub(crate) fn with_text(text: &str, mask: Mask) -> Input {
        let mut input = Input::new(mask);
        input.insert(text);
        input
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
    }

    fn byte_at(&self, chars: usize) -> usize {
        self.text
            .char_indices()
            .nth(chars)
            .map_or(self.text.len(), |(i, _)| i)
    }

    /// Inserts text at the cursor (line breaks and other control characters dropped).
    pub(crate) fn insert(&mut self, text: &str) {
        for c in text.chars().filter(|c| !c.is_control()) {
            if self.text.chars().count() >= MAX_CHARS {
                break;
            }
            let at = self.byte_at(self.cursor);
            self.text.insert(at, c);
            self.cursor += 1;
        }
    }

    /// Edits by a key; false if the key is not an editing key.
    pub(crate) fn handle(&mut self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('u') if ctrl => self.clear(),
            KeyCode::Char(_) if ctrl => return false,
            KeyCode::Char(c) => self.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                let at = self.byte_at(self.cursor);
                self.text.remove(at);
            }
            KeyCode::Delete if self.cursor < self.text.chars().count() => {
                let at = self.byte_at(self.cursor);
                self.text.remove(at);
            }
            KeyCode::Left => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Right => self.cursor = (self.cursor + 1).min(self.text.chars().count()),
            KeyCode::Home => self.cursor = 0,
            KeyCode::End => self.cursor = self.text.chars().count(),
            KeyCode::Backspace | KeyCode::Delete => {}
            _ => return false,
        }
        true
    }

    /// The text as drawn (masked), and the cursor's column in it.
    pub(crate) fn shown(&self) -> (String, usize) {
        let shown = match self.mask {
            Mask::None => self.text.clone(),
            Mask::All => "•".repeat(self.text.chars().count()),
            Mask::After(sep) => match self.text.split_once(sep) {
                Some((name, value)) => {
                    format!("{name}{sep}{}", "•".repeat(value.chars().count()))
                }
                None => self.text.clone(),
            },
            Mask::Url => {
                // The cursor stays after what is before it, as that part is shown.
                let before = &self.text[..self.byte_at(self.cursor)];
                let cursor = redact_url(before).chars().count();
                let shown = redact_url(&self.text).into_owned();
                let cursor = cursor.min(shown.chars().count());
                return (shown, cursor);
            }
        };
        (shown, self.cursor)
    }
}

/// Splits a command line into arguments as a POSIX shell would (whitespace, `'…'`, `"…"`,
/// backslash escapes), without expanding anything.
pub(crate) fn split_args(line: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    args.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a ' quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a \" quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a \" quote is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("the line ends with a lone \\".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    args.extend(word);
    Ok(args)
}

/// One `KEY=VALUE` line of the wizard's env step.
pub(crate) fn parse_env(line: &str) -> Result<(String, String), String> {
    let Some((key, value)) = line.split_once('=') else {
        return Err("write KEY=VALUE (an empty line ends the list)".into());
    };
    let mut chars = key.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "{key:?} is not a variable name: letters, digits and _, not starting with a digit"
        ));
    }
    Ok((key.to_string(), value.to_string()))
}

/// One `Name: value` line of the wizard's headers step.
pub(crate) fn parse_header(line: &str) -> Result<(String, String), String> {
    let Some((name, value)) = line.split_once(':') else {
        return Err("write Name: value (an empty line ends the list)".into());
    };
    let name = name.trim();
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_as_a_shell_would() {
        let table: &[(&str, &[&str])] = &[
            ("", &[]),
            ("  a  b\tc ", &["a", "b", "c"]),
            ("--page-size 5", &["--page-size", "5"]),
            ("'a b' \"c d\"", &["a b", "c d"]),
            ("x'y z'w", &["xy zw"]),
            ("'' \"\"", &["", ""]),
            ("a\\ b", &["a b"]),
            ("\"a\\\"b\\\\c\\n\"", &["a\"b\\c\\n"]),
            ("'$HOME' \"$HOME\"", &["$HOME", "$HOME"]),
        ];
        for (line, want) in table {
            assert_eq!(split_args(line).unwrap(), *want, "{line}");
        }
        for bad in ["'open", "\"open", "end\\", "\"x\\"] {
            assert!(split_args(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn env_and_header_lines() {
        assert_eq!(parse_env("A_1=x=y").unwrap(), ("A_1".into(), "x=y".into()));
        assert_eq!(parse_env("E=").unwrap(), ("E".into(), String::new()));
        for bad in ["A", "=x", "1A=x", "A B=x", "é=x"] {
            assert!(parse_env(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_header("Authorization:  Bearer t ").unwrap(),
            ("Authorization".into(), "Bearer t".into())
        );
        for bad in ["X", ": v", "A B: v"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn editing_and_masks() {
        use crossterm::event::KeyEvent;
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        let mut input = Input::new(Mask::After('='));
        input.insert("TOKEN=s3\ncret");
        assert_eq!(input.text(), "TOKEN=s3cret");
        assert_eq!(input.shown().0, "TOKEN=••••••");
        input.handle(&key(KeyCode::Home));
        input.handle(&key(KeyCode::Delete));
        input.handle(&key(KeyCode::End));
        input.handle(&key(KeyCode::Backspace));
        input.handle(&key(KeyCode::Left));
        input.handle(&key(KeyCode::Char('é')));
        assert_eq!(input.text(), "OKEN=s3crée");
        assert_eq!(input.shown(), ("OKEN=••••••".to_string(), 10));
        let ctrl_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert!(input.handle(&ctrl_u) && input.text().is_empty());
        assert_eq!(Input::with_text("abc", Mask::All).shown().0, "•••");
        assert_eq!(
            Input::with_text("X-Key: v", Mask::After(':')).shown().0,
            "X-Key:••"
        );
    }
}
