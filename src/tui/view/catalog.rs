//! Drawing the resources, prompts, skills, arguments, call and output screens. Everything a server
//! sent (names, URIs, descriptions, completions, outputs) goes through `clean_line` or
//! `clean_text`.

use super::parts::{LABEL, clean_line, clean_text, draw_input, spinner, unicode_width, width};
use crate::tui::app::App;
use crate::tui::catalog::{ArgsForm, CallForm, Output, Page, Target, skill_rows};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};

/// The most completions listed under a field.
const SHOWN_COMPLETIONS: usize = 8;

/// The title and footer keys of these screens.
pub(crate) fn title_and_keys(page: &Page) -> (String, &'static str) {
    match page {
        Page::Resources { server, .. } => (
            format!("/mcp · {server} · resources"),
            "↑/↓ move  Enter read it (a template asks for its variables)  Esc back",
        ),
        Page::Prompts { server, .. } => (
            format!("/mcp · {server} · prompts"),
            "↑/↓ move  Enter fill it in and get its messages  Esc back",
        ),
        Page::Skills { server, .. } => (
            format!("/mcp · {server} · skills"),
            "↑/↓ move  Enter load it, checked against its entry  Esc back",
        ),
        Page::Arguments(form) => (
            match &form.target {
                Target::Prompt(name) => format!("/mcp · {} · prompt {name}", form.server),
                Target::Template(uri) => format!("/mcp · {} · {uri}", form.server),
            },
            "Tab/Shift-Tab field  ↑/↓ choose a value  Enter take it / send  Esc back",
        ),
        Page::Call(form) => (
            format!("/mcp · {} · call", form.server),
            "Enter call with these arguments  Esc back",
        ),
        Page::Output(output) => (
            format!("/mcp · {} · {}", output.server, output.title),
            "↑/↓ scroll  PgUp/PgDn page  Esc back",
        ),
    }
}

/// Draws `page` into `area`.
pub(crate) fn draw(app: &App, page: &Page, frame: &mut Frame, area: Rect) {
    match page {
        Page::Resources { server, selected } => draw_resources(app, frame, area, server, *selected),
        Page::Prompts { server, selected } => draw_prompts(app, frame, area, server, *selected),
        Page::Skills { server, selected } => draw_skills(app, frame, area, server, *selected),
        Page::Arguments(form) => draw_arguments(frame, area, form),
        Page::Call(form) => draw_call(frame, area, form),
        Page::Output(output) => draw_output(app, frame, area, output),
    }
}

/// Why a server's list is empty.
fn nothing(app: &App, server: &str, what: &str) -> String {
    match app.status(server) {
        Some(s) if s.state != crate::host::ServerState::Connected => {
            format!("No {what}: {} is {}.", clean_line(server), s.state)
        }
        _ => format!("{} offers no {what}.", clean_line(server)),
    }
}

/// A table of rows of three cells, the first two columns as wide as their widest cell (the
/// last keeps at least 16 columns), the selected row marked.
fn table(
    frame: &mut Frame,
    area: Rect,
    header: [&str; 3],
    rows: Vec<[String; 3]>,
    selected: usize,
) {
    let room = area.width.saturating_sub(2 + 4 + 16);
    let mut widths = [0u16; 2];
    for (i, w) in widths.iter_mut().enumerate() {
        let widest = rows.iter().map(|r| width(&r[i])).max().unwrap_or(0);
        *w = widest.max(width(header[i]));
    }
    // Two wide columns share the room, the first never under a third of it.
    widths[0] = widths[0].min(room.saturating_sub(widths[1]).max(room / 3));
    widths[1] = widths[1].min(room.saturating_sub(widths[0]));
    let rows = rows.into_iter().map(|[a, b, c]| {
        Row::new([
            Cell::from(a),
            Cell::from(b),
            Cell::from(c).style(Style::new().fg(Color::Gray)),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(widths[0]),
            Constraint::Length(widths[1]),
            Constraint::Fill(1),
        ],
    )
    .column_spacing(2)
    .header(Row::new(header).style(Style::new().bold()))
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
    .highlight_symbol("› ");
    let mut state = TableState::default().with_selected(Some(selected));
    frame.render_stateful_widget(table, area, &mut state);
}

fn draw_skills(app: &App, frame: &mut Frame, area: Rect, server: &str, selected: usize) {
    let Some(catalog) = app.catalog(server).map(|c| &c.catalog) else {
        frame.render_widget(Paragraph::new(nothing(app, server, "skills")), area);
        return;
    };
    let rows = skill_rows(catalog);
    if rows.is_empty() {
        frame.render_widget(Paragraph::new(nothing(app, server, "skills")), area);
        return;
    }
    let [head, list] = Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(area);
    let told = format!(
        "{} skills. Enter loads a skill (its SKILL.md) or one of its files, checked against the skill's entry; nothing is read before.",
        catalog.skills.len()
    );
    frame.render_widget(Paragraph::new(told).wrap(Wrap { trim: true }), head);
    let rows = rows
        .iter()
        .map(|row| {
            if row.is_skill {
                let files = row.skill.files.as_ref().map_or("dynamic".to_string(), |f| {
                    format!("{} file{}", f.len(), if f.len() == 1 { "" } else { "s" })
                });
                [
                    clean_line(row.skill.name()),
                    files,
                    clean_line(row.skill.description()),
                ]
            } else {
                let path = row
                    .uri
                    .strip_prefix(row.skill.uri.trim_end_matches("SKILL.md"));
                [
                    format!("  {}", clean_line(path.unwrap_or(&row.uri))),
                    String::new(),
                    clean_line(&row.uri),
                ]
            }
        })
        .collect();
    table(
        frame,
        list,
        ["skill", "files", "description"],
        rows,
        selected,
    );
}

fn draw_resources(app: &App, frame: &mut Frame, area: Rect, server: &str, selected: usize) {
    let catalog = app.catalog(server).map(|c| &c.catalog);
    let (resources, templates) = catalog.map_or((&[][..], &[][..]), |c| {
        (c.resources.as_slice(), c.templates.as_slice())
    });
    if resources.is_empty() && templates.is_empty() {
        frame.render_widget(Paragraph::new(nothing(app, server, "resources")), area);
        return;
    }
    let [head, list] = Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(area);
    let told = format!(
        "{} resources, {} templates. Enter shows one as the model sees it.",
        resources.len(),
        templates.len()
    );
    frame.render_widget(Paragraph::new(told).wrap(Wrap { trim: true }), head);
    let about = |description: Option<&str>, mime: Option<&str>| {
        let mut parts: Vec<&str> = mime.into_iter().collect();
        parts.extend(description);
        clean_line(&parts.join(" · "))
    };
    let rows = resources
        .iter()
        .map(|r| {
            [
                clean_line(&r.name),
                clean_line(&r.uri),
                about(r.description.as_deref(), r.mime_type.as_deref()),
            ]
        })
        .chain(templates.iter().map(|t| {
            [
                clean_line(&t.name),
                clean_line(&t.uri_template),
                about(t.description.as_deref(), Some("template")),
            ]
        }))
        .collect();
    let last = resources.len() + templates.len() - 1;
    table(
        frame,
        list,
        ["NAME", "URI", "ABOUT"],
        rows,
        selected.min(last),
    );
}

fn draw_prompts(app: &App, frame: &mut Frame, area: Rect, server: &str, selected: usize) {
    let prompts = app
        .catalog(server)
        .map_or(&[][..], |c| &c.catalog.prompts[..]);
    if prompts.is_empty() {
        frame.render_widget(Paragraph::new(nothing(app, server, "prompts")), area);
        return;
    }
    let rows = prompts
        .iter()
        .map(|p| {
            let arguments: Vec<String> = p
                .arguments
                .iter()
                .map(|a| format!("{}{}", a.name, if a.required { "*" } else { "" }))
                .collect();
            [
                clean_line(&p.name),
                clean_line(&arguments.join(", ")),
                clean_line(p.description.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    let selected = selected.min(prompts.len() - 1);
    table(
        frame,
        area,
        ["NAME", "ARGUMENTS (* required)", "ABOUT"],
        rows,
        selected,
    );
}

fn draw_arguments(frame: &mut Frame, area: Rect, form: &ArgsForm) {
    let mut lines = vec![
        Line::from(match &form.target {
            Target::Prompt(name) => format!("The arguments of the prompt {}:", clean_line(name)),
            Target::Template(uri) => format!("The variables of {}:", clean_line(uri)),
        }),
        Line::default(),
    ];
    let names = form
        .args
        .iter()
        .map(|a| width(&clean_line(&a.name)) as usize + 1)
        .max()
        .unwrap_or(0)
        .clamp(LABEL - 2, 24);
    let mut cursor = None;
    for (i, arg) in form.args.iter().enumerate() {
        let focused = i == form.field;
        let name = format!(
            "{}{}",
            clean_line(&arg.name),
            if arg.required { "*" } else { "" }
        );
        let (shown, at) = arg.input.shown();
        let prefix = format!("{} {name:<names$} ", if focused { "›" } else { " " });
        if focused {
            let column: usize = shown.chars().take(at).map(unicode_width).sum();
            cursor = Some((lines.len(), width(&prefix) as usize + column));
        }
        let style = if focused {
            Style::new().bold()
        } else {
            Style::new()
        };
        lines.push(Line::from(vec![
            Span::styled(prefix, style),
            Span::raw(shown),
        ]));
        if focused {
            if let Some(about) = &arg.description {
                let about = format!("  {}", clean_line(about));
                lines.push(Line::from(about).style(Style::new().fg(Color::Gray)));
            }
            for (j, value) in form.completions.iter().take(SHOWN_COMPLETIONS).enumerate() {
                let line = Line::from(format!("    {}", clean_line(value)));
                lines.push(if form.chosen == Some(j) {
                    line.style(Style::new().add_modifier(Modifier::REVERSED))
                } else {
                    line.style(Style::new().fg(Color::Cyan))
                });
            }
            if form.completions.len() > SHOWN_COMPLETIONS {
                let more = form.completions.len() - SHOWN_COMPLETIONS;
                lines.push(Line::from(format!("    … {more} more: type to narrow")).dark_gray());
            }
        }
    }
    if let Some(e) = &form.error {
        lines.push(Line::default());
        lines.push(Line::from(clean_line(e)).style(Style::new().fg(Color::Red)));
    }
    frame.render_widget(Paragraph::new(lines), area);
    if let Some((row, column)) = cursor {
        let (x, y) = (area.x + column as u16, area.y + row as u16);
        if x < area.right() && y < area.bottom() {
            frame.set_cursor_position(Position::new(x, y));
        }
    }
}

fn draw_call(frame: &mut Frame, area: Rect, form: &CallForm) {
    let mut lines = vec![
        Line::from(format!(
            "Call {} now (you approve it by sending).",
            clean_line(&form.tool)
        )),
        Line::default(),
        Line::from("Its arguments, a JSON object (empty: {}):").bold(),
    ];
    draw_input(frame, area, &mut lines, &form.input, form.error.as_deref());
}

fn draw_output(app: &App, frame: &mut Frame, area: Rect, output: &Output) {
    let text = match &output.text {
        None => Text::from(format!(
            "{} waiting for {}…",
            spinner(app.frame),
            clean_line(&output.server)
        )),
        Some(Ok(text)) if text.is_empty() => Text::from("(nothing)".dark_gray()),
        Some(Ok(text)) => Text::from(clean_text(text)),
        Some(Err(e)) => Text::from(format!("It failed: {}", clean_text(e))).red(),
    };
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .scroll((output.scroll, 0)),
        area,
    );
}
