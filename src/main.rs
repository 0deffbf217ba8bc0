//! The `agenvoy-mcp` binary: the daemon and its management API, the `/mcp` panel, list and call the tools of
//! the configured MCP servers, probe one server, and run the small demo server of the embedded default config.

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "agenvoy-mcp",
    version,
    about = "An MCP client: probe and manage MCP servers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options of the commands that read the config file.
#[derive(clap::Args)]
struct HostOptions {
    /// The config file (default: ~/.config/agenvoy/mcp.json, or mcp.json in
    /// $AGENVOY_CONFIG_DIR).
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Seconds each server gets to start, and to answer each request, where its entry in the
    /// config sets no "timeout" or "startup_timeout" (default: 60). For `call`, the call's own
    /// timeout, over the entry's.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
}

impl HostOptions {
    fn into_args(self) -> Result<cli::HostArgs, ExitCode> {
        let Some(seconds) = self.timeout else {
            return Ok(cli::HostArgs {
                config: self.config,
                timeout: None,
            });
        };
        match positive_seconds(seconds) {
            Some(timeout) => Ok(cli::HostArgs {
                config: self.config,
                timeout: Some(timeout),
            }),
            None => {
                eprintln!("--timeout must be a positive number of seconds");
                Err(ExitCode::from(2))
            }
        }
    }
}

// Parsed once per run: the size of its largest variant (probe's flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// The daemon: connect every configured server, then serve the management API (routes in
    /// docs/API.md). Prints `listening on http://ADDR` when ready; SIGINT, SIGTERM or SIGHUP closes
    /// every server and exits.
    Serve {
        #[command(flatten)]
        host: HostOptions,
        /// Where the API listens (loopback unless --allow-remote).
        #[arg(long, value_name = "ADDR", default_value = cli::serve::DEFAULT_LISTEN)]
        listen: std::net::SocketAddr,
        /// Allow a --listen address other machines can reach (plain HTTP; requests still need
        /// the token).
        #[arg(long)]
        allow_remote: bool,
        /// Keep OAuth tokens and client secrets in this file (mode 0600) instead of the OS
        /// keychain.
        #[arg(long, value_name = "FILE")]
        token_file: Option<std::path::PathBuf>,
        /// How long a server's question (elicitation, sampling) waits for an answer on
        /// POST /v1/mcp/requests/{id} before it is cancelled.
        #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        ask_timeout: u64,
        /// Start a trace (a random W3C traceparent in the request's _meta) for each call,
        /// resource read and prompt whose caller sent no valid traceparent header.
        #[arg(long)]
        start_traces: bool,
    },
    /// The /mcp panel: servers, tools and their auto-approve marks, logins, from the
    /// keyboard (keys in the README). Logs go to stderr only when it is not a terminal.
    Tui {
        #[command(flatten)]
        host: HostOptions,
        /// Keep OAuth tokens and client secrets in this file (mode 0600) instead of the OS
        /// keychain.
        #[arg(long, value_name = "FILE")]
        token_file: Option<std::path::PathBuf>,
        /// Logins show the URL only; no browser is started.
        #[arg(long)]
        no_browser: bool,
    },
    /// Connect every configured server; print each server's status, then every tool.
    ///
    /// Exit status: 0 when every server (but the disabled ones) connected; 3 when any
    /// failed or needs a login (the report is printed all the same, with each error); 1
    /// when the config cannot be read.
    Tools {
        #[command(flatten)]
        host: HostOptions,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Print only the tools that best match QUERY, best first (tool search's ranking).
        #[arg(long, value_name = "QUERY")]
        search: Option<String>,
        /// How many tools `--search` prints.
        #[arg(long, value_name = "N", default_value_t = 5, requires = "search")]
        limit: usize,
        /// With --json: print `{"format", "tools"}`, the tools as the request's tool list of
        /// that model API (openai, openai-responses, anthropic, gemini, json-schema).
        #[arg(long, value_name = "F", requires = "json", conflicts_with = "search")]
        format: Option<agenvoy_mcp::host::model_api::ModelApi>,
    },
    /// Call one tool (mcp__<server>__<tool>) through the confirm gate and print what the
    /// model would see.
    Call {
        #[command(flatten)]
        host: HostOptions,
        /// Run the call without asking, even if the tool is not allowlisted.
        #[arg(long)]
        yes: bool,
        /// The tool's registered name, as `tools` lists it.
        name: String,
        /// The arguments, a JSON object (default {}).
        #[arg(value_name = "JSON")]
        arguments: Option<String>,
    },
    /// OAuth login for one server: opens the browser (and prints the URL), waits for the
    /// redirect on http://localhost:17988/callback or for the redirect URL pasted on stdin.
    Login {
        #[command(flatten)]
        host: HostOptions,
        /// Print the URL only; do not start a browser.
        #[arg(long)]
        no_browser: bool,
        /// The server's name in the config.
        name: String,
    },
    /// Connect one server with no config; print its era, version, info, capabilities,
    /// instructions, tools, resources, resource templates, prompts and skills; optionally
    /// call one tool, read one resource, get one prompt, load one skill or complete one
    /// argument.
    ///
    /// What it prints (text, `--json`'s members, stderr) and its exit status: docs/PROBE.md
    /// (in the repository and in the published crate).
    Probe {
        /// Print one JSON object instead of text (its members: docs/PROBE.md).
        #[arg(long)]
        json: bool,
        /// Call this tool and print what the model would see.
        #[arg(long, value_name = "TOOL", conflicts_with_all = ["read", "prompt"])]
        call: Option<String>,
        /// Read this resource and print what the model would see of it.
        #[arg(long, value_name = "URI", conflicts_with = "prompt")]
        read: Option<String>,
        /// Get this prompt (with --args) and print its messages.
        #[arg(long, value_name = "NAME")]
        prompt: Option<String>,
        /// Load this skill (its name or SKILL.md URI, or one of its files' URIs) and print
        /// it, verified against its entry.
        #[arg(long, value_name = "NAME")]
        skill: Option<String>,
        /// Ask for completions of one argument: REF is prompt/NAME or resource/URI_TEMPLATE,
        /// then the argument and what is typed so far (ARG or ARG=VALUE); --args gives the
        /// arguments already chosen, as context.
        #[arg(long, num_args = 2, value_names = ["REF", "ARG[=VALUE]"])]
        complete: Option<Vec<String>>,
        /// Set the server's log level (debug, info, notice, warning, error, critical, alert,
        /// emergency) and print its log messages to stderr.
        #[arg(long, value_name = "LEVEL")]
        log_level: Option<String>,
        /// The arguments of --call or --prompt, or --complete's context: a JSON object.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Answer the server's elicitations: accept=JSON (a form's values; `accept` alone
        /// for a URL), decline or cancel. Each request is shown on stderr; no URL is opened.
        #[arg(long, value_name = "ANSWER")]
        elicit: Option<String>,
        /// Answer the server's sampling requests with this text (shown on stderr).
        #[arg(long, value_name = "TEXT")]
        sample: Option<String>,
        /// Offer this folder as a root (repeatable): sent as a file:// URI.
        #[arg(long, value_name = "PATH")]
        root: Vec<std::path::PathBuf>,
        /// Declare the MCP Apps extension (io.modelcontextprotocol/ui), as a host that renders
        /// its pages does, so the server names each tool's page; --read of a ui:// URI then
        /// reads the page whole (its HTML, CSP and permissions).
        #[arg(long)]
        ui: bool,
        /// Seconds to wait for each response.
        #[arg(long, value_name = "SECS", default_value_t = 60.0)]
        timeout: f64,
        /// Pass the whole environment to the server command (by default it gets only PATH,
        /// HOME, the locale and a few more; use `-- env NAME=VALUE CMD` to add one).
        #[arg(long, conflicts_with = "url")]
        inherit_env: bool,
        /// The HTTP proxy to reach the server through, http://[user:password@]host:port, or
        /// `none` (default: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY).
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        proxy: Option<String>,
        /// The server's URL (streamable HTTP, or HTTP+SSE found by fallback).
        #[arg(value_name = "URL", required_unless_present = "command")]
        url: Option<String>,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, value_name = "CMD", conflicts_with = "url")]
        command: Vec<String>,
    },
    /// Client mode for the official MCP conformance suite: reads MCP_CONFORMANCE_SCENARIO
    /// (and MCP_CONFORMANCE_CONTEXT), connects to URL, and does what the scenario asks.
    Conformance {
        /// The test server's URL (the suite appends it).
        url: String,
    },
    /// Check one MCP server against the spec: every check that applies to what it declares
    /// is run and reported as passed, failed (what was exchanged, the spec's section),
    /// warning (a SHOULD broken) or not applicable (the checks: docs/CHECK.md). Nothing is
    /// written to the server unless asked: tools are called only when marked read-only and
    /// needing no argument, or named by --call. Exit status 0 only if nothing failed, 1 if
    /// a check failed, 2 for bad usage.
    Check {
        /// How to print the report: text, json, junit (JUnit XML, one test case a check) or
        /// sarif (SARIF 2.1.0).
        #[arg(long, value_enum, default_value = "text")]
        format: cli::check::Format,
        /// The era to speak: auto (server/discover, then initialize), handshake
        /// (initialize) or stateless (2026-07-28).
        #[arg(long, value_name = "ERA", default_value = "auto", value_parser = ["auto", "handshake", "stateless"])]
        era: String,
        /// A header sent with every HTTP request, 'NAME: VALUE' (such as a bearer token;
        /// repeatable).
        #[arg(long, value_name = "HEADER", requires = "url")]
        header: Vec<String>,
        /// Call this tool too, with these arguments (NAME or NAME='{"key": "value"}';
        /// repeatable): it may change the server's data.
        #[arg(long, value_name = "TOOL[=JSON]")]
        call: Vec<String>,
        /// Call every tool that needs no argument, not only the read-only ones: they may
        /// change the server's data.
        #[arg(long)]
        allow_writes: bool,
        /// Run only the check with this ID (repeatable).
        #[arg(long, value_name = "ID")]
        only: Vec<String>,
        /// Seconds to wait for each response.
        #[arg(long, value_name = "SECS", default_value_t = 30.0)]
        timeout: f64,
        /// Pass the whole environment to the server command.
        #[arg(long, conflicts_with = "url")]
        inherit_env: bool,
        /// The server's URL (streamable HTTP).
        #[arg(value_name = "URL", required_unless_present = "command")]
        url: Option<String>,
        /// The server command and its arguments, after `--`.
        #[arg(last = true, value_name = "CMD", conflicts_with = "url")]
        command: Vec<String>,
    },
    /// The demo MCP server over stdio that the embedded default config runs. The test
    /// fixture, with --http and fault modes, is the separate `agenvoy-mcp-fixture`.
    #[command(hide = true)]
    FixtureServer {
        /// Only `normal` here; the fault modes are `agenvoy-mcp-fixture`'s.
        #[arg(long, default_value = "normal")]
        mode: String,
        /// Refused here, saying so; `agenvoy-mcp-fixture --http ADDR` serves HTTP.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
}

/// The log target of a server's own log messages and stderr lines (`probe --log-level`
/// prints the messages itself).
const SERVER_LOG: &str = "agenvoy_mcp::server";
/// The log target of what a server's status shows too: its failure, an invalid entry, a name
/// collision (`tools` prints them in its report).
const STATUS_LOG: &str = "agenvoy_mcp::status";

/// Logs to stderr at `AGENVOY_LOG`, by default warnings and errors but those of the targets
/// in `printed`, which the command prints itself (each line once).
fn init_logging(printed: &[&str]) {
    use std::io::IsTerminal;
    use tracing_subscriber::field::MakeExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENVOY_LOG").unwrap_or_else(|_| {
        let quiet = printed.iter().map(|target| format!(",{target}=off"));
        tracing_subscriber::EnvFilter::new(format!("warn{}", quiet.collect::<String>()))
    });
    // Log lines carry servers' text (their stderr, errors, excerpts): every field is shown
    // with its control characters escaped and the secrets of its URLs hidden, whatever
    // logged it (ours, or a dependency's).
    let fields = tracing_subscriber::fmt::format::debug_fn(|out, field, value| {
        let text = format!("{value:?}");
        let text =
            agenvoy_mcp::safe_text::escape_controls(&agenvoy_mcp::safe_text::redact_urls(&text))
                .into_owned();
        match field.name() {
            "message" => write!(out, "{text}"),
            name => write!(out, "{}={text}", name.trim_start_matches("r#")),
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .fmt_fields(fields)
        .init();
}

/// `secs` as a duration, if it is a positive, finite number of seconds.
fn positive_seconds(secs: f64) -> Option<std::time::Duration> {
    let duration = std::time::Duration::try_from_secs_f64(secs).ok();
    duration.filter(|d| !d.is_zero())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A runtime on the calling thread alone, for `probe`: it talks to one server, so a second
/// thread only adds hand-offs (the body read on one thread, decoded on another: a fifth to a
/// third more CPU for a large result, and a thread switch per answer).
fn runtime_on_this_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs a command that connects the configured servers: its options checked, logging on
/// (but the targets it prints itself), orphaned grandchildren adopted so they can be reaped.
fn run_with_servers<F: std::future::Future<Output = ExitCode>>(
    host: HostOptions,
    printed: &[&str],
    command: impl FnOnce(cli::HostArgs) -> F,
) -> ExitCode {
    let host = match host.into_args() {
        Ok(h) => h,
        Err(code) => return code,
    };
    init_logging(printed);
    agenvoy_mcp::unstable::become_subreaper();
    runtime().block_on(command(host))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            host,
            listen,
            allow_remote,
            token_file,
            ask_timeout,
            start_traces,
        } => run_with_servers(host, &[], |host| {
            cli::serve::run(cli::serve::ServeArgs {
                host,
                listen,
                allow_remote,
                token_file,
                ask_timeout: std::time::Duration::from_secs(ask_timeout),
                start_traces,
            })
        }),
        Command::Tui {
            host,
            token_file,
            no_browser,
        } => {
            let host = match host.into_args() {
                Ok(h) => h,
                Err(code) => return code,
            };
            use std::io::IsTerminal;
            if !std::io::stderr().is_terminal() {
                init_logging(&[]);
            }
            agenvoy_mcp::unstable::become_subreaper();
            runtime().block_on(cli::tui::run(cli::tui::TuiArgs {
                host,
                token_file,
                no_browser,
            }))
        }
        Command::Tools {
            host,
            json,
            search,
            limit,
            format,
        } => run_with_servers(host, &[STATUS_LOG], |host| {
            cli::tools::run(cli::tools::ToolsArgs {
                host,
                json,
                search,
                limit,
                format,
            })
        }),
        Command::Call {
            host,
            yes,
            name,
            arguments,
        } => run_with_servers(host, &[], |host| {
            cli::call::run(cli::call::CallArgs {
                host,
                yes,
                name,
                arguments,
            })
        }),
        Command::Login {
            host,
            no_browser,
            name,
        } => {
            let host = match host.into_args() {
                Ok(h) => h,
                Err(code) => return code,
            };
            init_logging(&[]);
            runtime().block_on(cli::login::run(cli::login::LoginArgs {
                host,
                no_browser,
                name,
            }))
        }
        Command::Conformance { url } => {
            init_logging(&[]);
            runtime().block_on(cli::conformance::run(&url))
        }
        Command::Check {
            format,
            era,
            header,
            call,
            allow_writes,
            only,
            timeout,
            inherit_env,
            url,
            command,
        } => {
            let Some(timeout) = positive_seconds(timeout) else {
                eprintln!("check: --timeout must be a positive number of seconds");
                return ExitCode::from(2);
            };
            // The server's log messages are not findings: left out.
            init_logging(&[SERVER_LOG]);
            runtime().block_on(cli::check::run(cli::check::CheckArgs {
                format,
                only,
                timeout,
                inherit_env,
                url,
                command,
                headers: header,
                calls: call,
                allow_writes,
                era: match era.as_str() {
                    "handshake" => agenvoy_mcp::EraPreference::Handshake,
                    "stateless" => agenvoy_mcp::EraPreference::Stateless,
                    _ => agenvoy_mcp::EraPreference::Auto,
                },
            }))
        }
        Command::FixtureServer { mode, http } => cli::demo_server::run(&mode, http),
        Command::Probe {
            json,
            call,
            read,
            prompt,
            skill,
            complete,
            log_level,
            args,
            elicit,
            sample,
            root,
            ui,
            timeout,
            inherit_env,
            proxy,
            url,
            command,
        } => {
            let Some(timeout) = positive_seconds(timeout) else {
                eprintln!(
                    "probe failed at arguments: --timeout must be a positive number of seconds"
                );
                return ExitCode::from(2);
            };
            // With --log-level, probe prints the server's log messages itself.
            let printed: &[&str] = if log_level.is_some() {
                &[SERVER_LOG]
            } else {
                &[]
            };
            init_logging(printed);
            agenvoy_mcp::unstable::become_subreaper();
            let runtime = runtime_on_this_thread();
            let args = cli::probe::ProbeArgs {
                json,
                call,
                read,
                prompt,
                skill,
                complete,
                log_level,
                args,
                elicit,
                sample,
                roots: root,
                ui,
                url,
                command,
                inherit_env,
                timeout,
                proxy,
            };
            runtime.block_on(cli::probe::run(args))
        }
    }
}
