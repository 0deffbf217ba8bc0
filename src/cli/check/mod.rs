//! `agenvoy-mcp check [--format text|json|junit|sarif] [--only ID]... [--timeout SECS]
//! [--header 'NAME: VALUE']... [--call TOOL[=JSON]]... [--allow-writes] [--inherit-env]
//! (URL | -- CMD ARGS...)`: a strict client that tells a server's author what the server
//! gets wrong. It connects the server, runs every check that applies to what the server
//! declares (docs/CHECK.md lists them with the spec's section each holds the server to), and
//! reports each as passed, failed (what was exchanged, what the spec asks), warned (a SHOULD
//! broken) or not applicable. Exit status 0 only if nothing failed; 1 if a check failed; 2
//! for bad usage.
//!
//! No check changes a server's data unless asked: tools are called only when their
//! annotations say they are read-only and they need no argument, or when named by `--call`;
//! `--allow-writes` calls every tool that needs no argument.

mod http;
mod list;
mod protocol;
mod report;
mod schema;
mod stdio;
mod tools;

use agenvoy_mcp::safe_text::redact_urls;
use agenvoy_mcp::{
    Client, ClientOptions, EraPreference, ErrorKind, HttpConfig, Notification, RequestOptions,
    StdioConfig,
};
use list::{CHECKS, Check, Level};
use serde_json::Value;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the spec's revisions are.
const SPEC_ROOT: &str = "https://modelcontextprotocol.io/specification";

/// The revision whose sections the checks cite unless they name another.
const SPEC_REVISION: &str = "2025-11-25";

/// The most characters of an exchanged message a finding shows.
const MAX_SHOWN: usize = 600;

/// The most notifications kept for `notifications-declared`: a flood is judged by its first.
const MAX_NOTIFICATIONS: usize = 10_000;

/// How a report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For a person.
    Text,
    /// One JSON document (its shape: docs/CHECK.md).
    Json,
    /// JUnit XML, one test case a check.
    Junit,
    /// SARIF 2.1.0, one rule a check and one result a check run.
    Sarif,
}

/// What `check` was asked to do.
pub struct CheckArgs {
    pub format: Format,
    /// Only the checks with these IDs (all when empty).
    pub only: Vec<String>,
    pub timeout: Duration,
    /// The era to speak (auto: `server/discover`, then `initialize`).
    pub era: EraPreference,
    pub inherit_env: bool,
    pub url: Option<String>,
    pub command: Vec<String>,
    /// Headers sent with every HTTP request (`NAME: VALUE`), such as a bearer token.
    pub headers: Vec<String>,
    /// Tools to call, `NAME` or `NAME=JSON-OBJECT` (the arguments).
    pub calls: Vec<String>,
    /// Call every tool that needs no argument, not only read-only ones.
    pub allow_writes: bool,
}

/// The server under check: how the checks that open connections of their own reach it.
enum Target {
    Url(String),
    Command {
        program: String,
        args: Vec<String>,
        inherit_env: bool,
    },
}

/// What a check found.
enum Verdict {
    Passed,
    /// What is wrong, and what was exchanged (cut to a readable size).
    Failed {
        why: String,
        exchange: Option<String>,
    },
    /// Why the check does not apply to this server.
    NotApplicable(String),
}

struct Finding {
    check: &'static Check,
    verdict: Verdict,
    took: Duration,
}

impl Finding {
    /// A MUST broken.
    fn is_failure(&self) -> bool {
        matches!(self.verdict, Verdict::Failed { .. }) && self.check.level == Level::Must
    }

    /// A SHOULD broken.
    fn is_warning(&self) -> bool {
        matches!(self.verdict, Verdict::Failed { .. }) && self.check.level == Level::Should
    }
}

/// A failure; secrets in URLs (a query's values, a password) are hidden from what it says.
fn failed(why: impl Into<String>, exchange: Option<String>) -> Verdict {
    Verdict::Failed {
        why: redact_urls(&why.into()).into_owned(),
        exchange: exchange.map(|e| redact_urls(&e).into_owned()),
    }
}

/// Why a check does not apply; secrets in URLs are hidden from it too.
fn not_applicable(why: impl Into<String>) -> Verdict {
    Verdict::NotApplicable(redact_urls(&why.into()).into_owned())
}

/// `value` as compact JSON, cut to [`MAX_SHOWN`] characters.
fn shown(value: &Value) -> String {
    cut(&value.to_string())
}

/// `text` cut to [`MAX_SHOWN`] characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_SHOWN) {
        Some((at, _)) => format!("{}... ({} bytes)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// The JSON-RPC error code of an error, if it was one.
fn rpc_code(error: &agenvoy_mcp::Error) -> Option<i64> {
    match error.kind() {
        ErrorKind::Rpc(object) => Some(object.code),
        _ => None,
    }
}

/// The `_meta` of a 2026-07-28 request `check` writes itself.
fn stateless_meta(version: &str) -> Value {
    serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": client_info(),
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// An `initialize` request `check` writes itself, with the id 1.
fn initialize_request(version: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": client_info(),
    }})
}

/// How `check` names itself on the connections it opens itself.
fn client_info() -> Value {
    serde_json::json!({"name": "agenvoy-mcp-check", "version": env!("CARGO_PKG_VERSION")})
}

/// A raw request: its result, or the error as the server gave it.
async fn request(client: &Client, method: &str, params: Value) -> agenvoy_mcp::Result<Value> {
    client
        .session()
        .request(method, Some(params), RequestOptions::default())
        .await
}

/// What `tools-call` did: the tools listed before it called any, and each call.
struct Calls {
    names_before: Vec<String>,
    runs: Vec<ToolRun>,
}

/// One tool called by `tools-call`: its listing, and the result or why it failed; the
/// progress reported for the call.
struct ToolRun {
    tool: Value,
    outcome: Result<Value, String>,
    progress: Vec<Option<f64>>,
}

/// What the checks share.
struct Ctx {
    /// `None` when the server did not connect (the checks on connections of their own
    /// still run).
    client: Option<Client>,
    /// Why the server did not connect.
    connect_error: Option<String>,
    target: Target,
    timeout: Duration,
    headers: Vec<(String, String)>,
    calls: Vec<(String, Value)>,
    allow_writes: bool,
    /// Every notification the server sent over the run.
    seen: Arc<Mutex<Vec<Notification>>>,
    calls_made: tokio::sync::OnceCell<Calls>,
    http: tokio::sync::OnceCell<http::Opened>,
}

/// `NAME: VALUE` as a pair.
fn parse_header(text: &str) -> Option<(String, String)> {
    let (name, value) = text.split_once(':')?;
    let name = name.trim();
    (!name.is_empty()).then(|| (name.to_string(), value.trim().to_string()))
}

/// `NAME` or `NAME=JSON-OBJECT` as a tool and its arguments.
fn parse_call(text: &str) -> Result<(String, Value), String> {
    match text.split_once('=') {
        None => Ok((text.to_string(), Value::Object(Default::default()))),
        Some((name, json)) => match serde_json::from_str::<Value>(json) {
            Ok(arguments @ Value::Object(_)) => Ok((name.to_string(), arguments)),
            _ => Err(format!(
                "--call {name}=...: the arguments must be a JSON object, such as {name}='{{\"path\": \"/tmp\"}}'"
            )),
        },
    }
}

/// Runs `check`.
pub async fn run(args: CheckArgs) -> ExitCode {
    let unknown: Vec<&String> = args
        .only
        .iter()
        .filter(|id| !CHECKS.iter().any(|c| c.id == id.as_str()))
        .collect();
    if !unknown.is_empty() {
        let ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        eprintln!(
            "check: no check named {unknown:?}; the checks are: {}",
            ids.join(", ")
        );
        return ExitCode::from(2);
    }
    let mut headers = Vec::new();
    for text in &args.headers {
        match parse_header(text) {
            Some(pair) => headers.push(pair),
            None => {
                eprintln!("check: --header takes 'NAME: VALUE', not {text:?}");
                return ExitCode::from(2);
            }
        }
    }
    let calls = match args.calls.iter().map(|c| parse_call(c)).collect() {
        Ok(calls) => calls,
        Err(why) => {
            eprintln!("check: {why}");
            return ExitCode::from(2);
        }
    };
    let target = match (&args.url, args.command.split_first()) {
        (Some(url), None) => Target::Url(url.clone()),
        (None, Some((program, rest))) => Target::Command {
            program: program.clone(),
            args: rest.to_vec(),
            inherit_env: args.inherit_env,
        },
        _ => {
            eprintln!("check: give the server's URL, or its command after --");
            return ExitCode::from(2);
        }
    };
    let options = ClientOptions::default()
        .with_timeout(args.timeout)
        .with_era(args.era);
    let started = Instant::now();
    let connected = match &target {
        Target::Url(url) => {
            let mut config = HttpConfig::new(url).with_header_timeout(args.timeout);
            for (name, value) in &headers {
                config = config.header(name, value);
            }
            Client::connect_http("server", &config, options).await
        }
        Target::Command {
            program,
            args,
            inherit_env,
        } => {
            let config = StdioConfig::new(program)
                .args(args)
                .with_inherit_env(*inherit_env);
            Client::connect_stdio("server", &config, options).await
        }
    };
    let connect_took = started.elapsed();
    let (client, connect_error) = match connected {
        Ok(client) => (Some(client), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let collector = client.as_ref().map(|c| collect(c, seen.clone()));
    let ctx = Ctx {
        client,
        connect_error,
        target,
        timeout: args.timeout,
        headers,
        calls,
        allow_writes: args.allow_writes,
        seen,
        calls_made: Default::default(),
        http: Default::default(),
    };
    let wanted = |id: &str| args.only.is_empty() || args.only.iter().any(|o| o == id);
    let mut findings = Vec::new();
    for check in CHECKS.iter().filter(|c| wanted(c.id)) {
        let started = Instant::now();
        let verdict = judge(&ctx, check).await;
        let took = if check.id == "initialize" {
            connect_took
        } else {
            started.elapsed()
        };
        findings.push(Finding {
            check,
            verdict,
            took,
        });
    }
    if let Some(client) = &ctx.client {
        client.close().await;
    }
    if let Some(collector) = collector {
        collector.abort();
    }
    let server = match &ctx.target {
        Target::Url(url) => redact_urls(url).into_owned(),
        Target::Command { program, .. } => program.clone(),
    };
    let written = match args.format {
        Format::Text => report::text(&findings),
        Format::Json => super::output::json(&report::json(&server, &findings)),
        Format::Junit => report::junit(&findings),
        Format::Sarif => super::output::json(&report::sarif(&server, &findings)),
    };
    let code = if findings.iter().any(Finding::is_failure) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    super::output::exit_code("check", written.map(|()| code))
}

/// Keeps every notification `client` receives in `seen` (the first [`MAX_NOTIFICATIONS`]).
fn collect(client: &Client, seen: Arc<Mutex<Vec<Notification>>>) -> tokio::task::JoinHandle<()> {
    let mut notifications = client.notifications();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match notifications.recv().await {
                Ok(notification) => {
                    let mut seen = seen.lock().expect("seen lock");
                    if seen.len() < MAX_NOTIFICATIONS {
                        seen.push(notification);
                    }
                }
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            }
        }
    })
}

async fn judge(ctx: &Ctx, check: &Check) -> Verdict {
    match check.id {
        "stdio-framing" => stdio::framing(ctx).await,
        "oauth-discovery" => http::oauth_discovery(ctx).await,
        id if id.starts_with("http-") => http::judge(ctx, id).await,
        "notifications-declared" => protocol::notifications_declared(ctx),
        id => match (&ctx.client, &ctx.connect_error) {
            (Some(client), _) => protocol::judge(ctx, client, id).await,
            (None, Some(why)) if id == "initialize" => {
                if http::needs_authorization(ctx).await {
                    not_applicable(format!(
                        "the server requires authorization ({why}); give a token with --header 'Authorization: Bearer ...' to check the rest"
                    ))
                } else {
                    failed(format!("could not connect: {why}"), None)
                }
            }
            (None, _) => not_applicable("the server did not connect (see initialize)"),
        },
    }
}
