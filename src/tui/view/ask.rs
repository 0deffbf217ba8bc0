//! Drawing a server's question over the screen: an elicitation's form, a URL to visit, or a
//! sampling request under review. The server's text (its name, message, titles,
//! descriptions, choices, URL, messages) goes through `clean_line` or `clean_text`.

use super::parts::{clean_line, unicode_width, width};
use crate::protocol::server_requests::{FieldKind, FormField, format_example};
use crate::tui::app::App;
use crate::tui::form::{Ask, Asking, FieldValue, FormState, Review, choice_labels, label};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Padding, Paragraph};

/// Lines of a server's message shown at most.
const MESSAGE_LINES: usize = 4;

/// Draws `asking` over `area`; the keys it takes, for the footer.
pub(crate) fn draw(app: &App, asking: &Asking, frame: &mut Frame, area: Rect) -> &'static str {
    let popup = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(1),
    };
    let more = app.asked.queue.len().saturating_sub(1);
    let mut title = format!(" {} asks ", clean_line(&asking.server));
    if more > 0 {
        title.push_str(&format!("({more} more waiting) "));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::new().fg(Color::Yellow))
        .padding(Padding::horizontal(1))
        .title(Span::styled(title, Style::new().bold()));
    let inner = block.inner(popup);
    let room = usize::from(inner.width);
    let (mut lines, cursor, keys) = match &asking.what {
        Ask::Form(form) => form_lines(form, room, inner.height),
        Ask::Url {
            message,
            url,
            origin,
        } => {
            let mut lines = message_lines(message, room);
            lines.push(Line::default());
            lines.push(Line::from(vec![
                Span::styled("It asks you to open ", Style::new()),
                Span::styled(clean_line(origin), Style::new().bold().fg(Color::Yellow)),
            ]));
            lines.push(Line::from(clean_line(url)).style(Style::new().fg(Color::Cyan)));
            lines.push(Line::default());
            lines.push(Line::from("y opens it in the browser; n or Esc declines."));
            (lines, None, "y open it in the browser  n/Esc decline")
        }
        Ask::Sampling(review) => (
            review_lines(review, room),
            None,
            "Enter/Esc decline (the panel has no model to answer with)",
        ),
    };
    if let Some(e) = &asking.error {
        lines.push(Line::from(clean_line(e)).style(Style::new().fg(Color::Red)));
    }
    // As tall as its lines, within the screen.
    let height = (lines.len() as u16 + 2).min(popup.height);
    let popup = Rect { height, ..popup };
    frame.render_widget(Clear, popup);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    frame.render_widget(Paragraph::new(lines), inner);
    // The cursor on the focused field, or out of the way on the popup's first line.
    let (row, column) = cursor.unwrap_or((0, 0));
    let (x, y) = (inner.x + column as u16, inner.y + row as u16);
    if x < inner.right() && y < inner.bottom() {
        frame.set_cursor_position(Position::new(x, y));
    }
    keys
}

/// A server's message, wrapped, at most [`MESSAGE_LINES`] lines.
fn message_lines(message: &str, room: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> = message
        .lines()
        .flat_map(|l| crate::safe_text::wrap(&clean_line(l), room, unicode_width))
        .map(Line::from)
        .collect();
    if lines.len() > MESSAGE_LINES {
        lines.truncate(MESSAGE_LINES);
        lines.push(Line::from("…").dark_gray());
    }
    lines
}

/// What a field takes, for the line under it.
fn hint(field: &FormField) -> &'static str {
    let format = field.schema.get("format").and_then(|f| f.as_str());
    match &field.kind {
        FieldKind::Text => format.and_then(format_example).unwrap_or("text"),
        FieldKind::Number => "a number",
        FieldKind::Integer => "a whole number",
        FieldKind::Boolean => "yes or no: Space",
        FieldKind::Choice(_) => "one of these: ←/→",
        FieldKind::Choices(_) => "any of these: ←/→ and Space",
    }
}

/// The form's lines (the fields around the focused one, as many as fit), where the cursor
/// goes, and the keys.
fn form_lines(
    form: &FormState,
    room: usize,
    height: u16,
) -> (Vec<Line<'static>>, Option<(usize, usize)>, &'static str) {
    let mut lines = message_lines(&form.form.message, room);
    lines.push(Line::default());
    let fields = &form.form.fields;
    let labels = fields
        .iter()
        .map(|f| width(&clean_line(label(f))) as usize + 1)
        .max()
        .unwrap_or(0)
        .min(room / 2);
    // Room for the fields: the height less the message, the focused field's help and the
    // error line.
    let fit = usize::from(height).saturating_sub(lines.len() + 2).max(1);
    let first = form.field.saturating_sub(fit.saturating_sub(1));
    let mut cursor = None;
    for (i, field) in fields.iter().enumerate().skip(first).take(fit) {
        let focused = i == form.field;
        let mut name = clean_line(label(field));
        if field.required {
            name.push('*');
        }
        let name: String = crate::safe_text::wrap(&name, labels, unicode_width)
            .into_iter()
            .next()
            .unwrap_or_default();
        let prefix = format!("{} {name:<labels$} ", if focused { "›" } else { " " });
        let style = if focused {
            Style::new().bold()
        } else {
            Style::new()
        };
        let mut spans = vec![Span::styled(prefix.clone(), style)];
        match &form.values[i] {
            FieldValue::Text(input) => {
                let (shown, at) = input.shown();
                if focused {
                    let column: usize = shown.chars().take(at).map(unicode_width).sum();
                    cursor = Some((lines.len(), width(&prefix) as usize + column));
                }
                spans.push(Span::raw(shown));
            }
            FieldValue::Flag(flag) => spans.push(Span::raw(match flag {
                Some(true) => "[x] yes",
                Some(false) => "[ ] no",
                None => "[ ] (not given)",
            })),
            FieldValue::Choice(choice) => {
                let labels = choice_labels(field);
                let shown = choice.and_then(|c| labels.get(c)).map(|l| clean_line(l));
                spans.push(Span::raw(format!(
                    "‹ {} ›",
                    shown.as_deref().unwrap_or("(not given)")
                )));
            }
            FieldValue::Choices { chosen, at } => {
                for (j, (choice, on)) in choice_labels(field).iter().zip(chosen).enumerate() {
                    let text = format!("[{}] {} ", if *on { "x" } else { " " }, clean_line(choice));
                    let style = if focused && j == *at {
                        Style::new().add_modifier(Modifier::REVERSED)
                    } else {
                        Style::new()
                    };
                    spans.push(Span::styled(text, style));
                }
            }
        }
        lines.push(Line::from(spans));
        if focused {
            let mut help = hint(field).to_string();
            if let Some(about) = &field.description {
                help.push_str(" · ");
                help.push_str(&clean_line(about));
            }
            lines.push(Line::from(format!("    {help}")).style(Style::new().fg(Color::Gray)));
        }
    }
    let keys = "Tab/Shift-Tab field  Space/←/→ choose  Enter send  Esc decline";
    (lines, cursor, keys)
}

fn review_lines(review: &Review, room: usize) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from("It asks for a message from your model (sampling):").bold(),
        Line::default(),
    ];
    if let Some(system) = &review.system {
        lines.push(Line::from(format!("system: {}", clean_line(system))).dark_gray());
    }
    for (role, text) in &review.messages {
        lines.push(Line::from(format!("[{}]", clean_line(role))).bold());
        lines.extend(message_lines(text, room));
    }
    if let Some(max) = review.max_tokens {
        lines.push(Line::from(format!("at most {max} tokens")).dark_gray());
    }
    lines.push(Line::default());
    lines.push(Line::from(
        "The panel has no model to answer with: Enter or Esc declines.",
    ));
    lines
}
