//! The pieces every screen draws with: server text made safe for the terminal, widths in
//! columns, a labelled line, the field being edited, and the spinner.

use crate::tui::input::Input;
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// One line of server text: line breaks and tabs become spaces, other control characters
/// are shown escaped (`\u{1b}`), as [`crate::safe_text`] does.
pub(crate) fn clean_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if crate::safe_text::drives_terminal(c) => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Server text of several lines: line breaks kept, tabs as four spaces, other control
/// characters shown escaped.
pub(crate) fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' => {}
            c if crate::safe_text::drives_terminal(c) => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// The spinner's picture at redraw `frame`.
pub(crate) fn spinner(frame: usize) -> &'static str {
    SPINNER[frame % SPINNER.len()]
}

/// How wide the labels of [`field`] are.
pub(crate) const LABEL: usize = 13;

pub(crate) fn field(name: &str, value: impl Into<String>) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name:<LABEL$}"), Style::new().bold()),
        Span::raw(value.into()),
    ])
}

/// A field being edited: its prompt, the (masked) text with the cursor, and an error.
pub(crate) fn draw_input(
    frame: &mut Frame,
    area: Rect,
    lines: &mut Vec<Line<'static>>,
    input: &Input,
    error: Option<&str>,
) {
    let (shown, cursor) = input.shown();
    lines.push(Line::from(vec![
        Span::styled("> ", Style::new().fg(Color::Cyan)),
        Span::raw(shown.clone()),
    ]));
    let row = lines.len() as u16 - 1;
    if let Some(e) = error {
        lines.push(Line::from(clean_line(e)).style(Style::new().fg(Color::Red)));
    }
    frame.render_widget(
        Paragraph::new(std::mem::take(lines)).wrap(Wrap { trim: false }),
        area,
    );
    let column: usize = shown.chars().take(cursor).map(unicode_width).sum();
    let x = area.x + 2 + column as u16;
    let y = area.y + row;
    if x < area.right() && y < area.bottom() {
        frame.set_cursor_position(Position::new(x, y));
    }
}

pub(crate) fn unicode_width(c: char) -> usize {
    Span::raw(c.to_string()).width()
}

/// How many columns `text` takes, for a table column's width.
pub(crate) fn width(text: &str) -> u16 {
    u16::try_from(Span::raw(text).width()).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_reaches_no_cell_raw() {
        let hostile = "a\x1b[2J\x07b\u{9b}c\u{202e}d\te\nf\r";
        assert_eq!(
            clean_line(hostile),
            "a\\u{1b}[2J\\u{7}b\\u{9b}c\\u{202e}d e f "
        );
        assert_eq!(
            clean_text(hostile),
            "a\\u{1b}[2J\\u{7}b\\u{9b}c\\u{202e}d    e\nf"
        );
        assert_eq!(clean_line("plain – ünïcode 漢字"), "plain – ünïcode 漢字");
    }
}
