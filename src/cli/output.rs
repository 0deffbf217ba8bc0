//! Command output on stdout, and how it ends when its reader goes away.
//!
//! `agenvoy-mcp tools | head -1`: once `head` has exited, every write to stdout fails with
//! `EPIPE` (Rust ignores SIGPIPE, so the process is not killed, and `println!` would panic).
//! Commands print through `out!` (`println!` that returns the write's error) and [`json`],
//! stop at the first error with `?`, close their servers as they always do, and end with
//! [`exit_code`]: quietly, with status [`CLOSED`], when the reader is gone.

use std::io::{self, Write};
use std::process::ExitCode;

/// The exit status of a command whose stdout was closed before it finished: 141, 128 plus
/// SIGPIPE's number, what a shell reports for a Unix tool that SIGPIPE ended. The output was
/// cut short, so a script with `set -o pipefail` sees it as it sees `cat file | head -1`, and
/// it matches the 128 plus N of the other signals these commands handle themselves.
pub const CLOSED: u8 = 141;

/// How to log in to `server` from the command line: what the commands add to an error that
/// needs a login.
pub fn login_advice(server: &str) -> String {
    format!("run `agenvoy-mcp login {server}`")
}

/// Writes one line (like `println!`) to stdout and returns how the write went.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::line(format_args!($($arg)*))
    };
}

/// Writes `text` and a line break to stdout: `out!`'s body.
pub fn line(text: std::fmt::Arguments<'_>) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_fmt(text)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes `value` as pretty JSON on stdout. serde_json escapes C0 controls in strings; the
/// other characters that drive a terminal (DEL, C1, bidirectional controls) are escaped here
/// too, so no server text reaches the terminal raw. JSON's structure is ASCII, so each such
/// character is inside a string, where `\uXXXX` means the same character.
pub fn json(value: &serde_json::Value) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).expect("JSON serializes");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if agenvoy_mcp::safe_text::drives_terminal(c) && !c.is_ascii_whitespace() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    line(format_args!("{out}"))
}

/// The exit code of `command` once its output is written: `code` if it all was; [`CLOSED`],
/// saying nothing, if the reader went away; 1 with the reason on stderr for any other
/// failure (a full disk).
pub fn exit_code(command: &str, written: io::Result<ExitCode>) -> ExitCode {
    match written {
        Ok(code) => code,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(CLOSED),
        Err(e) => {
            eprintln!("{command} failed: cannot write its output: {e}");
            ExitCode::from(1)
        }
    }
}

/// How many columns `text` takes on a terminal.
pub fn width(text: &str) -> usize {
    ratatui::text::Span::raw(text).width()
}

/// Rows of cells as lines, each cell padded to its column's widest, two spaces between
/// columns, so columns stay aligned whatever the content (a long tool name, a wide
/// character); no trailing spaces.
pub fn columns(rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width(cell)),
                None => widths.push(width(cell)),
            }
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (cell, w) in row.iter().zip(&widths) {
                line.push_str(cell);
                line.push_str(&" ".repeat(w - width(cell) + 2));
            }
            line.trim_end().to_string()
        })
        .collect()
}

/// `label` then `text`; on a terminal too narrow for them on one line, `text` wraps with every
/// further line indented under its start. Into a pipe or a file it stays one line, for
/// `grep`.
pub fn labelled(label: &str, text: &str) -> String {
    use std::io::IsTerminal;
    let terminal = io::stdout().is_terminal();
    let Some((columns, _)) = terminal
        .then(crossterm::terminal::size)
        .and_then(Result::ok)
    else {
        return format!("{label}{text}");
    };
    let indent = width(label);
    let room = usize::from(columns).saturating_sub(indent);
    let lines = agenvoy_mcp::safe_text::wrap(text, room, |c| width(c.encode_utf8(&mut [0; 4])));
    let mut out = label.to_string();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(line);
    }
    out
}

/// What a server told of a call in flight, escaped, each part only if it sent it: the number
/// (`1/3`), a task's status (`working`) and the message; a status with no number is shown
/// as such, never as progress 0.
pub fn progress(p: &agenvoy_mcp::Progress) -> String {
    let number = p.progress.map(|n| match p.total {
        Some(total) => format!("{n}/{total}"),
        None => n.to_string(),
    });
    let status = p.status.as_ref().map(|s| match &p.message {
        Some(_) => format!("{s}:"),
        None => s.clone(),
    });
    let parts: Vec<String> = [number, status, p.message.clone()]
        .into_iter()
        .flatten()
        .collect();
    agenvoy_mcp::safe_text::escape_controls(&parts.join(" ")).into_owned()
}
