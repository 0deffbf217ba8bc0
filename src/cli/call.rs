//! `agenvoy-mcp call [--config FILE] [--yes] NAME [JSON]`: call one registered tool through
//! the confirm gate and print what the model would see.
//!
//! The call runs in `confirm` mode: an allowlisted tool runs at once; otherwise, with
//! `--yes` it runs, on a terminal the user is asked `y/N` on stderr, and without a terminal
//! the call is refused with the reason. Progress notifications are shown as a progress line on
//! stderr. The output goes to stdout. Exit code: 0 on success; 1 if the call failed, was
//! refused, or the tool reported an error (its output is still printed); 2 for bad arguments;
//! 141 if stdout closed before the output was written (see [`super::output`]).
//! What the server sent (output, progress messages, errors) is shown with its control
//! characters escaped (the output keeps its newlines and tabs).

use super::HostArgs;
use agenvoy_mcp::Progress;
use agenvoy_mcp::RequestOptions;
use agenvoy_mcp::host::{ConfirmCallback, ConfirmRequest, Decision};
use agenvoy_mcp::host::{Control, ManagerOptions, PermissionMode, ToolCall};
use agenvoy_mcp::safe_text::{escape_controls, escape_controls_keep_lines};
use serde_json::Value;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What `call` was asked to do.
pub struct CallArgs {
    /// The config and timeout.
    pub host: HostArgs,
    /// Approve the call without asking.
    pub yes: bool,
    /// The registered tool name, `mcp__<server>__<tool>`.
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Option<String>,
}

fn ask_on_terminal(request: &ConfirmRequest) -> Result<(), String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "Call {} with {}? [y/N] ",
        request.name, request.arguments
    );
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| format!("could not read the answer: {e}"))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err("not confirmed".into()),
    }
}

fn confirm_callback(yes: bool, allowlist: String) -> ConfirmCallback {
    Arc::new(move |request: ConfirmRequest| {
        let allowlist = allowlist.clone();
        Box::pin(async move {
            if yes {
                return Decision::Approve;
            }
            if !std::io::stdin().is_terminal() {
                return Decision::Refuse(format!(
                    "it is not on the allowlist ({allowlist}) and there is no terminal to ask for confirmation; pass --yes, or add it to the allowlist"
                ));
            }
            let answer = tokio::task::spawn_blocking(move || ask_on_terminal(&request))
                .await
                .unwrap_or_else(|e| Err(format!("asking failed: {e}")));
            answer.map_or_else(Decision::Refuse, |()| Decision::Approve)
        })
    })
}

fn progress_printer(shown: Arc<AtomicBool>) -> Arc<dyn Fn(Progress) + Send + Sync> {
    let terminal = std::io::stderr().is_terminal();
    Arc::new(move |p: Progress| {
        let line = format!("progress: {}", super::output::progress(&p));
        let mut err = std::io::stderr().lock();
        let _ = if terminal {
            write!(err, "\r\x1b[K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
        shown.store(true, Ordering::Relaxed);
    })
}

/// Runs `call`.
pub async fn run(args: CallArgs) -> ExitCode {
    let arguments: Value = match args
        .arguments
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
    {
        Ok(Some(v @ Value::Object(_))) => v,
        Ok(None) => Value::Object(Default::default()),
        Ok(Some(_)) => {
            eprintln!(
                "call failed: the arguments must be a JSON object, like '{{\"text\": \"hi\"}}'"
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("call failed: the arguments are not valid JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = ManagerOptions::default();
    let allowlist = options.allowlist_path.display().to_string();
    options.confirm = Some(confirm_callback(args.yes, allowlist));
    let (name, timeout) = (args.name.as_str(), args.host.timeout);
    let config_path = args.host.config_path();
    super::run_with_servers(&args.host, options, "call", async |manager, _| {
        let control = Control::new(manager.clone(), config_path);
        call(&control, name, arguments, timeout).await
    })
    .await
}

/// Calls tool `name` through the confirm gate and prints what the model would see.
/// `timeout` is `--timeout`; without it the server's own (its entry's `timeout`, else 60 s).
async fn call(
    control: &Control,
    name: &str,
    arguments: Value,
    timeout: Option<Duration>,
) -> ExitCode {
    let shown = Arc::new(AtomicBool::new(false));
    let mut request = RequestOptions::default().with_progress_resets_timeout(true);
    request.timeout = timeout;
    request.on_progress = Some(progress_printer(shown.clone()));
    let call = ToolCall::new(name, arguments)
        .with_mode(PermissionMode::Confirm)
        .with_request(request);
    let result = control.call(call).await.map(|done| done.output);
    if shown.load(Ordering::Relaxed) && std::io::stderr().is_terminal() {
        eprintln!();
    }
    match result {
        Ok(output) => {
            let written = out!("{}", escape_controls_keep_lines(&output.text));
            let code = if output.is_error {
                eprintln!("call: the tool reported an error (isError)");
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
            super::output::exit_code("call", written.map(|()| code))
        }
        Err(e) => {
            let mut why = escape_controls(&e.to_string()).into_owned();
            if let Some(server) = e.needs_login() {
                why = format!("{why}; {}", super::output::login_advice(server));
            }
            eprintln!("call failed: {why}");
            ExitCode::from(1)
        }
    }
}
