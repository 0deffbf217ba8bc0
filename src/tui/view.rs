//! Drawing the panel: one function per screen, a status line and the footer with the
//! screen's keys. Text a server sent (names, descriptions, errors, instructions, URLs) is
//! drawn with control characters escaped; env values, header values and secrets never are,
//! and the URL the add wizard takes is drawn with its query values and password as `***`.

mod ask;
mod catalog;
mod parts;

use super::app::{App, Screen, ToolRow};
use super::oauth::{ClientField, ClientForm, LoginState};
use super::wizard::{AUTHS, Step, TRANSPORTS, Wizard};
use crate::host::Start;
use crate::host::manager::{ServerState, ServerStatus};
use crate::host::registry::PREFIX;
use crate::safe_text::redact_url;
use parts::{LABEL, clean_line, clean_text, draw_input, field, spinner, unicode_width, width};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Padding, Paragraph, Row, Table, TableState, Wrap};

fn state_style(state: ServerState) -> Style {
    match state {
        ServerState::Connected => Style::new().fg(Color::Green),
        ServerState::Failed | ServerState::Disconnected => Style::new().fg(Color::Red),
        ServerState::NeedsLogin => Style::new().fg(Color::Yellow),
        ServerState::Connecting => Style::new().fg(Color::Cyan),
        ServerState::Disabled => Style::new().fg(Color::DarkGray),
        ServerState::Idle => Style::new().fg(Color::Blue),
    }
}

/// A server's state as the list shows it: a spinner while it connects or a job runs.
fn state_text(app: &App, status: &ServerStatus) -> String {
    if !app.is_busy(status) {
        return status.state.name().to_string();
    }
    let doing = app
        .jobs
        .get(&status.name)
        .map_or(status.state.name(), |job| job.doing());
    format!("{} {doing}", spinner(app.frame))
}

/// The title of the screen and the keys its footer shows.
fn title_and_keys(app: &App) -> (String, &'static str) {
    match &app.screen {
        Screen::List if app.confirm_delete.is_some() => (
            "/mcp · servers".to_string(),
            "y delete  any other key keeps it",
        ),
        Screen::List => (
            "/mcp · servers".to_string(),
            "↑/↓ move  Enter open  a add  d delete  q quit",
        ),
        Screen::Server(name) if app.data.oauth.contains_key(name) => (
            format!("/mcp · {name}"),
            "t tools  R resources  P prompts  S skills  r reconnect  e on/off  o on demand  l login  c client  Esc",
        ),
        Screen::Server(name) => (
            format!("/mcp · {name}"),
            "t tools  R resources  P prompts  S skills  r reconnect  e on/off  o on demand  i instructions  Esc back",
        ),
        Screen::Tools { server, .. } => (
            format!("/mcp · {server} · tools"),
            "↑/↓ move  Enter call  Space approve  A server  v show/hide  V all  Esc back",
        ),
        Screen::Catalog(page) => catalog::title_and_keys(page),
        Screen::Instructions { server, .. } => (
            format!("/mcp · {server} · instructions"),
            "↑/↓ scroll  PgUp/PgDn page  Esc back",
        ),
        Screen::Add(wizard) => (
            "/mcp · add a server".to_string(),
            match wizard.step {
                Step::Name => "Enter accept  Esc cancel",
                Step::Transport | Step::Auth => {
                    "↑/↓ choose  Enter accept  Shift-Tab back  Esc cancel"
                }
                Step::Env | Step::Headers => {
                    "Enter add the line (empty line: done)  Shift-Tab back  Esc cancel"
                }
                Step::Summary => "Enter save and connect  Shift-Tab back  Esc cancel",
                _ => "Enter accept  Shift-Tab back  Esc cancel",
            },
        ),
        Screen::Client { server, .. } => (
            format!("/mcp · {server} · OAuth client"),
            "Enter accept  Esc cancel",
        ),
        Screen::Login {
            server,
            state,
            paste,
            ..
        } => (
            format!("/mcp · {server} · login"),
            match (state, paste) {
                (LoginState::Done(_), _) => "Enter/Esc back",
                (_, Some(_)) => "Enter send the URL  Esc stop pasting",
                _ => "p paste the URL the browser ended on  Esc cancel",
            },
        ),
    }
}

/// Draws the whole panel into `area`.
pub(crate) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let (title, keys) = title_and_keys(app);
    // Keys wider than the terminal wrap onto a second row rather than being cut.
    let footer_rows = if width(keys) > area.width { 2 } else { 1 };
    let [body, status, footer] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(footer_rows),
    ])
    .areas(area);
    let block = Block::default()
        .borders(Borders::ALL)
        .padding(Padding::horizontal(1))
        .title(Span::styled(
            format!(" {} ", clean_line(&title)),
            Style::new().add_modifier(Modifier::BOLD),
        ));
    let area = block.inner(body);
    frame.render_widget(block, body);
    match &app.screen {
        Screen::List => draw_list(app, frame, area),
        Screen::Server(name) => draw_server(app, frame, area, name),
        Screen::Tools { server, selected } => draw_tools(app, frame, area, server, *selected),
        Screen::Instructions { server, scroll } => {
            draw_instructions(app, frame, area, server, *scroll)
        }
        Screen::Add(wizard) => draw_wizard(app, frame, area, wizard),
        Screen::Client { server, form } => draw_client(app, frame, area, server, form),
        Screen::Login { .. } => draw_login(app, frame, area),
        Screen::Catalog(page) => catalog::draw(app, page, frame, area),
    }
    draw_status(app, frame, status);
    // A server's question is drawn over the screen, with its own keys.
    let keys = match app.asked.front() {
        Some(asking) => ask::draw(app, asking, frame, body),
        None => keys,
    };
    frame.render_widget(
        Paragraph::new(Line::from(keys).style(Style::new().add_modifier(Modifier::REVERSED)))
            .wrap(Wrap { trim: true }),
        footer,
    );
}

fn draw_status(app: &App, frame: &mut Frame, area: Rect) {
    let line = if let Some(name) = &app.confirm_delete {
        Line::from(format!(
            "Delete {}? It leaves the config file and its login is forgotten.",
            clean_line(name)
        ))
        .style(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD))
    } else if let Some(notice) = &app.notice {
        let style = if notice.error {
            Style::new().fg(Color::Red)
        } else {
            Style::new().fg(Color::Green)
        };
        Line::from(clean_line(&notice.text)).style(style)
    } else if let Some(problem) = &app.data.problem {
        Line::from(clean_line(problem)).style(Style::new().fg(Color::Red))
    } else {
        Line::default()
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_list(app: &App, frame: &mut Frame, area: Rect) {
    if app.data.servers.is_empty() {
        frame.render_widget(Paragraph::new("No servers yet. Press a to add one."), area);
        return;
    }
    let cells: Vec<[String; 4]> = app
        .data
        .servers
        .iter()
        .map(|s| {
            [
                clean_line(&s.name),
                s.transport.clone(),
                state_text(app, s),
                s.tool_count.to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "TRANSPORT", "STATE", "TOOLS"];
    // Each column as wide as its widest cell, the header's included.
    let widths: Vec<Constraint> = (0..header.len())
        .map(|i| {
            let widest = cells.iter().map(|row| width(&row[i])).max().unwrap_or(0);
            Constraint::Length(widest.max(width(header[i])))
        })
        .collect();
    let rows = app
        .data
        .servers
        .iter()
        .zip(cells)
        .map(|(s, [name, transport, state, tools])| {
            Row::new([
                Cell::from(name),
                Cell::from(transport),
                Cell::from(state).style(state_style(s.state)),
                Cell::from(tools),
            ])
        });
    let table = Table::new(rows, widths)
        .column_spacing(2)
        .header(Row::new(header).style(Style::new().bold()))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("› ");
    let mut state = TableState::default().with_selected(Some(app.selected));
    frame.render_stateful_widget(table, area, &mut state);
}

fn draw_server(app: &App, frame: &mut Frame, area: Rect, name: &str) {
    let Some(status) = app.status(name) else {
        frame.render_widget(
            Paragraph::new(format!("{} is gone. Esc goes back.", clean_line(name))),
            area,
        );
        return;
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled("status       ", Style::new().bold()),
            Span::styled(state_text(app, status), state_style(status.state)),
        ]),
        field("transport", status.transport.clone()),
        field("proxy", clean_line(status.proxy.as_deref().unwrap_or("-"))),
        field(
            "start",
            match status.start {
                Start::OnDemand { idle_timeout } => format!(
                    "on demand, stopped after {} s idle (o: from launch)",
                    idle_timeout.as_secs_f64()
                ),
                _ => "from launch (o: on demand, started by its first use)".to_string(),
            },
        ),
        field(
            "protocol",
            match (&status.protocol_version, status.era) {
                (Some(version), Some(era)) => format!("{} ({})", clean_line(version), era.name()),
                _ => "-".to_string(),
            },
        ),
        field(
            "tools",
            if status.hidden_tools > 0 {
                format!("{} ({} hidden)", status.tool_count, status.hidden_tools)
            } else {
                status.tool_count.to_string()
            },
        ),
        field(
            "instructions",
            if status.has_instructions {
                "yes"
            } else {
                "none"
            },
        ),
        field(
            "offers",
            format!(
                "{} resources, {} templates, {} prompts, {} skills",
                status.resource_count,
                status.template_count,
                status.prompt_count,
                status.skill_count
            ),
        ),
    ];
    let auth = match app.data.oauth.get(name) {
        None => "none".to_string(),
        Some(info) => match &info.client_id {
            Some(id) => format!("oauth, pre-registered client {}", clean_line(id)),
            None => "oauth, client registered at login".to_string(),
        },
    };
    lines.push(field("auth", auth));
    // A long error wraps under its start, not under its label.
    let mut error = clean_line(status.last_error.as_deref().unwrap_or("-"));
    if status.state == ServerState::NeedsLogin {
        error.push_str("; press l to log in");
    }
    let room = usize::from(area.width).saturating_sub(LABEL);
    for (i, part) in crate::safe_text::wrap(&error, room, unicode_width)
        .into_iter()
        .enumerate()
    {
        let label = if i == 0 { "last error" } else { "" };
        lines.push(field(label, part));
    }
    lines.push(Line::default());
    lines.push(Line::from("Actions").bold());
    let oauth = app.data.oauth.contains_key(name);
    for (key, what) in [
        (
            "t",
            "tools: auto-approve and visibility marks; Enter calls one",
        ),
        (
            "R",
            "resources and templates: read one as the model sees it",
        ),
        ("P", "prompts: fill one in and see its messages"),
        ("r", "reconnect this server"),
        ("e", "enable / disable it (kept in the file, not started)"),
        ("l", "login / relogin (OAuth)"),
        ("c", "client: a pre-registered OAuth client"),
        ("i", "instructions the server gives the model"),
    ] {
        if matches!(key, "l" | "c") && !oauth {
            continue;
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {key}  "), Style::new().fg(Color::Cyan).bold()),
            Span::raw(what),
        ]));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

fn draw_tools(app: &App, frame: &mut Frame, area: Rect, server: &str, selected: usize) {
    let tools: Vec<&ToolRow> = app.tools_of(server);
    let whole = format!("{PREFIX}{server}__*");
    let whole_on = app.data.allowlist.entries().contains(&whole.as_str());
    let [head, list] = Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(area);
    let head_text = if whole_on {
        format!("Whole server auto-approved ({}).", clean_line(&whole))
    } else {
        "[x] auto-approved: runs without asking (allow_tool); [v] visible: the model sees it (mcp.json); [ui URI]: its MCP Apps page.".to_string()
    };
    frame.render_widget(Paragraph::new(head_text).wrap(Wrap { trim: true }), head);
    if tools.is_empty() {
        let why = match app.status(server) {
            Some(s) if s.state != ServerState::Connected => {
                format!("No tools: {} is {}.", clean_line(server), s.state)
            }
            _ => "This server has no tools.".to_string(),
        };
        frame.render_widget(Paragraph::new(why), list);
        return;
    }
    // Names as wide as the longest, but the descriptions keep 12 columns (besides the
    // selection mark, the two check boxes and the spaces between columns, 11 in all).
    let widest = tools.iter().map(|t| width(&clean_line(&t.name))).max();
    let names = widest.unwrap_or(0).min(list.width.saturating_sub(11 + 12));
    let rows = tools.iter().map(|t| {
        let mark = if app.data.allowlist.allows(&t.name, Some(&t.server)) {
            "[x]"
        } else {
            "[ ]"
        };
        let seen = if t.visible { "[v]" } else { "[ ]" };
        // A tool with an MCP Apps page: its URI before the description.
        let ui =
            t.ui.as_deref()
                .map(|uri| Span::styled(format!("[ui {}] ", clean_line(uri)), Color::Magenta));
        let description = Span::styled(clean_line(&t.description), Color::Gray);
        Row::new([
            Cell::from(mark),
            Cell::from(seen),
            Cell::from(clean_line(&t.name)),
            Cell::from(Line::from_iter(ui.into_iter().chain([description]))),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(3),
            Constraint::Length(3),
            Constraint::Length(names),
            Constraint::Fill(1),
        ],
    )
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
    .highlight_symbol("› ");
    let mut state = TableState::default().with_selected(Some(selected));
    frame.render_stateful_widget(table, list, &mut state);
}

fn draw_instructions(app: &App, frame: &mut Frame, area: Rect, server: &str, scroll: u16) {
    let text = match app.data.instructions.get(server) {
        Some(text) => Text::from(clean_text(text)),
        None => Text::from(format!(
            "{} gives no instructions (or is not connected).",
            clean_line(server)
        )),
    };
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0)),
        area,
    );
}

fn choices(lines: &mut Vec<Line<'static>>, options: &[&str], chosen: usize) {
    for (i, option) in options.iter().enumerate() {
        let line = if i == chosen {
            Line::from(format!("› {option}")).style(Style::new().add_modifier(Modifier::REVERSED))
        } else {
            Line::from(format!("  {option}"))
        };
        lines.push(line);
    }
}

/// The wizard's timeouts as the summary shows them.
fn shown_timeouts(timeouts: &[serde_json::Value]) -> String {
    match timeouts {
        [] => "the defaults".into(),
        [request] => format!("{request} s a request"),
        [request, startup, ..] => format!("{request} s a request, {startup} s to start"),
    }
}

fn draw_wizard(app: &App, frame: &mut Frame, area: Rect, wizard: &Wizard) {
    let mut lines: Vec<Line<'static>> = Vec::new();
    // What earlier steps took; the current step's value is in its field.
    if !wizard.name.is_empty() && wizard.step != Step::Name {
        lines.push(field("name", clean_line(&wizard.name)));
    }
    let stdio = wizard.is_stdio();
    let past_transport = !matches!(wizard.step, Step::Name | Step::Transport);
    if past_transport {
        lines.push(field("transport", TRANSPORTS[wizard.transport]));
    }
    if stdio && !wizard.command.is_empty() && wizard.step != Step::Command {
        lines.push(field("command", clean_line(&wizard.command)));
    }
    if stdio && matches!(wizard.step, Step::Env | Step::Timeouts | Step::Summary) {
        lines.push(field("args", clean_line(&shown_args(&wizard.args))));
        lines.push(field("env", names(&wizard.env)));
    }
    if !stdio && !wizard.url.is_empty() && wizard.step != Step::Url {
        lines.push(field("url", clean_line(&redact_url(&wizard.url))));
        lines.push(field("headers", names(&wizard.headers)));
    }
    if !stdio && matches!(wizard.step, Step::Timeouts | Step::Summary) {
        lines.push(field("auth", AUTHS[wizard.auth]));
    }
    if wizard.step == Step::Summary {
        lines.push(field("timeouts", shown_timeouts(&wizard.timeouts)));
    }
    if !lines.is_empty() {
        lines.push(Line::default());
    }
    let prompt = match wizard.step {
        Step::Name => "Name (letters, digits, _ or -; tools become mcp__<name>__<tool>):",
        Step::Transport => "Transport:",
        Step::Command => "Command (the program that starts the server):",
        Step::Args => "Arguments (split as a shell would; empty for none):",
        Step::Env => "Environment, one KEY=VALUE a line (values stay hidden); empty line: done:",
        Step::Url => "URL (http:// or https://):",
        Step::Headers => "Headers, one Name: value a line (values stay hidden); empty line: done:",
        Step::Auth => "Authentication:",
        Step::Timeouts => {
            "Timeouts in seconds: each request's, then optionally the startup's (120, or 120 20); empty: the defaults (60):"
        }
        Step::Summary => "Enter saves the server to the config file and connects it.",
    };
    lines.push(Line::from(prompt).bold());
    match wizard.step {
        Step::Transport => choices(&mut lines, &TRANSPORTS, wizard.transport),
        Step::Auth => choices(&mut lines, &AUTHS, wizard.auth),
        Step::Summary => {
            if wizard.saving {
                lines.push(Line::from(format!("{} saving…", spinner(app.frame))));
            }
            if let Some(e) = &wizard.error {
                lines.push(Line::from(clean_line(e)).style(Style::new().fg(Color::Red)));
            }
        }
        _ => {
            return draw_input(
                frame,
                area,
                &mut lines,
                &wizard.input,
                wizard.error.as_deref(),
            );
        }
    }
    if let (Some(e), Step::Transport | Step::Auth) = (&wizard.error, wizard.step) {
        lines.push(Line::from(clean_line(e)).style(Style::new().fg(Color::Red)));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

/// Arguments as a shell would take them back.
fn shown_args(args: &[String]) -> String {
    if args.is_empty() {
        return "-".to_string();
    }
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The names of `KEY=VALUE` pairs, never their values.
fn names(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return "-".to_string();
    }
    let names: Vec<String> = pairs.iter().map(|(k, _)| clean_line(k)).collect();
    format!("{} (values hidden)", names.join(", "))
}

fn draw_client(app: &App, frame: &mut Frame, area: Rect, server: &str, form: &ClientForm) {
    let mut lines = vec![
        Line::from(format!(
            "A client registered by hand with {}'s authorization server.",
            clean_line(server)
        )),
        Line::default(),
    ];
    if form.field != ClientField::Id {
        lines.push(field("client id", clean_line(&form.client_id)));
    }
    if form.field == ClientField::Redirect {
        let secret = if form.secret.is_some() {
            "set (hidden)"
        } else {
            "none"
        };
        lines.push(field("secret", secret));
    }
    let prompt = match form.field {
        ClientField::Id => "Client id:",
        ClientField::Secret => {
            "Client secret (hidden; kept in the token store; empty: none, a stored one is forgotten):"
        }
        ClientField::Redirect => "Redirect URI (Enter saves):",
    };
    lines.push(Line::from(prompt).bold());
    if form.saving {
        lines.push(Line::from(format!("{} saving…", spinner(app.frame))));
    }
    draw_input(frame, area, &mut lines, &form.input, form.error.as_deref());
}

fn draw_login(app: &App, frame: &mut Frame, area: Rect) {
    let Screen::Login {
        server,
        url,
        state,
        paste,
        error,
    } = &app.screen
    else {
        return;
    };
    let server = clean_line(server);
    let mut lines = vec![match state {
        LoginState::Waiting => Line::from(format!(
            "{} Logging in to {server}: waiting for the browser…",
            spinner(app.frame)
        )),
        LoginState::Done(Ok(None)) => {
            Line::from(format!("Logged in to {server}.")).style(Style::new().fg(Color::Green))
        }
        LoginState::Done(Ok(Some(note))) => {
            Line::from(format!("Logged in to {server}, but {}", clean_line(note)))
                .style(Style::new().fg(Color::Yellow))
        }
        LoginState::Done(Err(e)) => Line::from(format!("The login failed: {}", clean_line(e)))
            .style(Style::new().fg(Color::Red)),
    }];
    if *state == LoginState::Waiting {
        lines.push(Line::default());
        match url.as_deref() {
            None => lines.push(Line::from("Finding the authorization server…")),
            Some(url) => {
                lines.push(Line::from("Open this URL to log in:"));
                lines.push(Line::from(clean_line(url)).style(Style::new().fg(Color::Cyan)));
                lines.push(Line::default());
                lines.push(Line::from(
                    "If the browser cannot come back here, press p and paste the URL it ended on.",
                ));
            }
        }
    }
    if let Some(input) = paste {
        lines.push(Line::default());
        lines.push(Line::from("The URL the browser ended on:").bold());
        return draw_input(frame, area, &mut lines, input, error.as_deref());
    }
    if let Some(e) = error {
        lines.push(Line::from(clean_line(e)).style(Style::new().fg(Color::Red)));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_shown_as_a_shell_takes_them() {
        let args = [
            "fixture-server".to_string(),
            "a b".into(),
            "it's".into(),
            String::new(),
        ];
        assert_eq!(shown_args(&args), "fixture-server 'a b' 'it'\\''s' ''");
        assert_eq!(
            super::super::input::split_args(&shown_args(&args)).unwrap(),
            args
        );
    }
}
