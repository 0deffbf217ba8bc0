//! Interop with a server written on the Python `mcp` SDK 2.x (`fixtures/python/modern_server.py`,
//! run from the venv `.ci/install` makes), which serves both the stateless 2026-07-28 revision
//! and the initialize-based one: over stdio, streamable HTTP with sessions (stateful) and
//! streamable HTTP without (stateless). With no era flag the client must find 2026-07-28;
//! forced to the handshake, the same servers must work in the initialize era.
//!
//! Skipped when the venv is missing, unless `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::EraPreference;
use agenvoy_mcp::HttpConfig;
use agenvoy_mcp::StdioConfig;
use agenvoy_mcp::host::{Config, Manager, ManagerOptions, PermissionMode};
use agenvoy_mcp::{Client, ClientOptions};
use agenvoy_mcp::{ElicitationAnswer, ElicitationRequest, Handlers};
use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The venv's Python, which has the `mcp` SDK.
fn python() -> Option<PathBuf> {
    installed("venv/bin/python")
}

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/python/modern_server.py")
        .display()
        .to_string()
}

/// How the Python server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Stdio,
    /// Streamable HTTP with sessions (in the initialize era; 2026-07-28 is stateless anyway).
    Http,
    /// Streamable HTTP with `stateless_http=True`.
    HttpStateless,
}

const MODES: [Mode; 3] = [Mode::Stdio, Mode::Http, Mode::HttpStateless];

/// The Python server serving HTTP on a free loopback port, killed when dropped.
struct PyHttp {
    _server: Listening,
    url: String,
}

impl PyHttp {
    fn start(python: &Path, mode: Mode) -> PyHttp {
        let arg = match mode {
            Mode::Http => "http",
            Mode::HttpStateless => "http-stateless",
            Mode::Stdio => unreachable!("stdio servers are started by the client"),
        };
        let mut command = std::process::Command::new(python);
        command.args([script().as_str(), arg, "0"]);
        let server = Listening::start(command);
        PyHttp {
            url: server.url.clone(),
            _server: server,
        }
    }
}

fn stdio_config(python: &Path) -> StdioConfig {
    StdioConfig::new(python.display().to_string()).args([script(), "stdio".into()])
}

/// A connected client, and the HTTP server it talks to (none for stdio: the client owns it).
async fn connect(python: &Path, mode: Mode, options: ClientOptions) -> (Client, Option<PyHttp>) {
    agenvoy_mcp::unstable::become_subreaper();
    let name = format!("python-{mode:?}");
    match mode {
        Mode::Stdio => {
            let client = Client::connect_stdio(&name, &stdio_config(python), options)
                .await
                .unwrap_or_else(|e| panic!("connect {mode:?}: {e}"));
            (client, None)
        }
        Mode::Http | Mode::HttpStateless => {
            let server = PyHttp::start(python, mode);
            let client = Client::connect_http(&name, &HttpConfig::new(&server.url), options)
                .await
                .unwrap_or_else(|e| panic!("connect {mode:?}: {e}"));
            (client, Some(server))
        }
    }
}

/// Options whose elicitation handler answers "Ada" and records every question it is asked.
fn options_with_elicitation(era: EraPreference) -> (ClientOptions, Arc<Mutex<Vec<Value>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let sink = asked.clone();
    let handlers = Handlers::default().with_elicitation(move |request: ElicitationRequest| {
        sink.lock().unwrap().push(request.raw);
        async { ElicitationAnswer::accept(json!({"name": "Ada"})) }
    });
    let options = ClientOptions::default()
        .with_handlers(handlers)
        .with_timeout(Duration::from_secs(20))
        .with_era(era);
    (options, asked)
}

async fn text(client: &Client, tool: &str, args: Value) -> String {
    let out = client
        .call_tool(tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(!out.is_error, "{tool} reported an error: {}", out.text);
    out.text
}

/// Lists the tools, calls `add` and `greet` (answering its question) and `weather`.
async fn exercise(client: &Client, mode: Mode, asked: &Mutex<Vec<Value>>) {
    let names = tool_names(client).await;
    for tool in ["add", "greet", "weather", "add_tool"] {
        assert!(names.iter().any(|n| n == tool), "{mode:?}: {names:?}");
    }
    assert_eq!(text(client, "add", json!({"a": 2, "b": 3})).await, "5");

    let stateless_era = client.details().era.name() == "stateless";
    if stateless_era || mode != Mode::HttpStateless {
        assert_eq!(text(client, "greet", json!({})).await, "Hello, Ada!");
        let questions = asked.lock().unwrap().clone();
        assert_eq!(questions.len(), 1, "{mode:?}: one question: {questions:?}");
        assert_eq!(questions[0]["message"], "What is your name?");
        assert_eq!(
            questions[0]["requestedSchema"]["properties"]["name"]["type"], "string",
            "{mode:?}: the question carries its schema"
        );
    } else {
        // The initialize era asks with a standalone request, which a server without
        // sessions has no way to send (an SDK limit, not the client's): a clear RPC error.
        let refused = client
            .call_tool("greet", json!({}))
            .await
            .expect_err("the SDK cannot elicit over stateless HTTP in the initialize era");
        assert!(refused.to_string().contains("back-channel"), "{refused}");
        assert!(asked.lock().unwrap().is_empty());
    }

    let forecast = text(client, "weather", json!({"region": "Oslo", "days": 2})).await;
    assert!(
        forecast.starts_with("sunny in Oslo for 2 day(s)"),
        "{forecast}"
    );
    // Only a 2026-07-28 client over HTTP mirrors x-mcp-header parameters into headers.
    let mirrored = mode != Mode::Stdio && stateless_era;
    let header = if mirrored { "Oslo" } else { "None" };
    assert!(
        forecast.ends_with(&format!("header Mcp-Param-Region: {header}")),
        "{mode:?}: {forecast}"
    );
}

/// With no era flag, every transport runs 2026-07-28 with the Python server.
#[tokio::test]
async fn python_sdk_server_is_found_stateless_with_no_flag() {
    let Some(python) = python() else { return };
    for mode in MODES {
        let (options, asked) = options_with_elicitation(EraPreference::Auto);
        assert_eq!(ClientOptions::default().era, EraPreference::Auto);
        let (client, server) = connect(&python, mode, options).await;
        let details = client.details();
        assert_eq!(details.era.name(), "stateless", "{mode:?}");
        assert_eq!(details.protocol_version, "2026-07-28", "{mode:?}");
        assert_eq!(details.server_info["name"], "python-modern", "{mode:?}");
        assert_eq!(
            details.capabilities["tools"]["listChanged"], true,
            "{mode:?}: the SDK announces list changes on subscriptions/listen"
        );
        assert_eq!(
            details.instructions.as_deref(),
            Some("A dual-era test server.")
        );
        exercise(&client, mode, &asked).await;
        let pid = (mode == Mode::Stdio).then(|| server_pid(&client));
        client.close().await;
        if let Some(pid) = pid {
            assert_group_gone_within(pid, Duration::from_secs(3));
        }
        drop(server);
    }
}

/// Forced to the handshake, the same dual-era servers work in the initialize era; `greet`
/// then asks through a standalone `elicitation/create` request (over stdio and stateful HTTP;
/// the SDK refuses it on stateless HTTP, which has no back-channel in that era).
#[tokio::test]
async fn python_sdk_server_speaks_the_initialize_era_when_asked() {
    let Some(python) = python() else { return };
    for mode in MODES {
        let (options, asked) = options_with_elicitation(EraPreference::Handshake);
        let (client, server) = connect(&python, mode, options).await;
        let details = client.details();
        assert_eq!(details.era.name(), "handshake", "{mode:?}");
        assert_eq!(details.protocol_version, "2025-11-25", "{mode:?}");
        assert_eq!(details.server_info["name"], "python-modern", "{mode:?}");
        exercise(&client, mode, &asked).await;
        client.close().await;
        drop(server);
    }
}

/// `probe` with no flag finds 2026-07-28 on all three transports, beside a legacy server
/// (server-everything over stdio) that it finds in the initialize era.
#[test]
fn probe_finds_each_era_with_no_flag() {
    let Some(python) = python() else { return };
    let probe = |target: &[&str]| {
        let mut args = vec!["--call", "add", "--args", r#"{"a":20,"b":22}"#];
        args.extend(target);
        probe_json(&args)
    };
    let python = python.display().to_string();
    let script = script();
    let stdio = probe(&["--", &python, &script, "stdio"]);
    let http = PyHttp::start(Path::new(&python), Mode::Http);
    let stateful = probe(&[&http.url]);
    let stateless_server = PyHttp::start(Path::new(&python), Mode::HttpStateless);
    let stateless = probe(&[&stateless_server.url]);
    for (report, transport) in [(stdio, "stdio"), (stateful, "http"), (stateless, "http")] {
        assert_eq!(report["era"], "stateless", "{report}");
        assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
        assert_eq!(report["transport"], transport, "{report}");
        assert_eq!(report["serverInfo"]["name"], "python-modern", "{report}");
        assert_eq!(report["call"]["text"], "42", "{report}");
    }

    let Some(everything) = installed("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let everything = everything.display().to_string();
    let report = probe_json(&["--", &everything, "stdio"]);
    assert_eq!(report["era"], "handshake", "{report}");
    assert_eq!(report["protocolVersion"], "2025-11-25", "{report}");
}

/// The Manager keeps `subscriptions/listen` open for the stateless Python server: a tool the
/// server adds at run time is registered through the listen stream's list-changed notice.
#[tokio::test]
async fn manager_registers_a_tool_announced_on_the_listen_stream() {
    let Some(python) = python() else { return };
    let http = PyHttp::start(&python, Mode::HttpStateless);
    let sessions = PyHttp::start(&python, Mode::Http);
    let servers = json!({
        "pystdio": {"command": python.display().to_string(), "args": [script(), "stdio"]},
        "pyhttp": {"url": http.url},
        "pysessions": {"url": sessions.url},
    });
    let config = Config::parse(&json!({ "servers": servers }).to_string()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ManagerOptions::default()
        .with_client(ClientOptions::default().with_timeout(Duration::from_secs(20)))
        .with_allowlist_path(dir.path().join("allow_tool"));
    const SERVERS: [&str; 3] = ["pystdio", "pyhttp", "pysessions"];
    agenvoy_mcp::unstable::become_subreaper();
    let manager = Manager::new(config, options).await;
    manager.register_all();
    let mut acks = Vec::new();
    for server in SERVERS {
        let client = manager
            .client(server)
            .unwrap_or_else(|| panic!("{server} connected: {:?}", manager.status()));
        assert_eq!(client.details().era.name(), "stateless", "{server}");
        acks.push((server, client.notifications()));
    }
    manager.watch();
    // Wait until each listen stream is open (its first frame is the acknowledgement), so the
    // change below is not announced before anyone listens.
    for (server, notifications) in &mut acks {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let n = notifications.recv().await.unwrap();
                if n.method == "notifications/subscriptions/acknowledged" {
                    return;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{server}: subscriptions/listen acknowledged"));
    }
    for server in SERVERS {
        let added = manager
            .call(
                &format!("mcp__{server}__add_tool"),
                json!({"name": "fresh"}),
                PermissionMode::Auto,
            )
            .await
            .unwrap_or_else(|e| panic!("{server}: {e}"));
        assert_eq!(added.text, "added fresh");
        let name = format!("mcp__{server}__fresh");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !manager.tool_definitions().iter().any(|d| d.name == name) {
            assert!(
                Instant::now() < deadline,
                "{name} not registered within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let out = manager
            .call(&name, json!({}), PermissionMode::Auto)
            .await
            .unwrap();
        assert_eq!(out.text, "I am fresh");
    }
    manager.close().await;
    drop((http, sessions));
}

/// A call made before the tools were listed carries no `Mcp-Param-Region`; the SDK answers
/// `HeaderMismatch` (-32020), and the client lists the tools and sends the call once more,
/// now with the header.
#[tokio::test]
async fn header_mismatch_from_the_sdk_refreshes_tools_and_retries() {
    let Some(python) = python() else { return };
    let (options, _) = options_with_elicitation(EraPreference::Auto);
    let (client, server) = connect(&python, Mode::HttpStateless, options).await;
    let forecast = text(&client, "weather", json!({"region": "Lima"})).await;
    assert_eq!(
        forecast,
        "sunny in Lima for 1 day(s); header Mcp-Param-Region: Lima"
    );
    client.close().await;
    drop(server);
}

/// A loopback relay to `upstream` (`host:port`) that answers nothing until `delay` after it
/// starts: every connection waits, then is forwarded both ways. A server slow to answer.
async fn slow_relay(upstream: String, delay: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let ready = tokio::time::Instant::now() + delay;
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(ready).await;
                let mut outbound = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    address.to_string()
}

/// A modern server that takes longer than the discover probe's first wait (3 s) to answer is
/// still found stateless, over stdio (a slow start: `sleep 4`, then the server) and over HTTP
/// (every answer 4 s late). Before, the probe gave up, `initialize` followed, and the server,
/// which had read the probe, refused it with -32022: the connection failed.
#[tokio::test]
async fn a_slow_modern_server_is_still_found_stateless() {
    let Some(python) = python() else { return };
    agenvoy_mcp::unstable::become_subreaper();
    let slow = StdioConfig::new("sh").args([
        "-c".to_string(),
        format!("sleep 4; exec '{}' '{}' stdio", python.display(), script()),
    ]);
    let options = ClientOptions::default().with_timeout(Duration::from_secs(30));
    let client = Client::connect_stdio("slow-stdio", &slow, options.clone())
        .await
        .expect("a slow stdio start connects");
    assert_eq!(client.details().era.name(), "stateless", "over stdio");
    assert_eq!(text(&client, "add", json!({"a": 2, "b": 3})).await, "5");
    client.close().await;

    let server = PyHttp::start(&python, Mode::HttpStateless);
    let (authority, path) = server
        .url
        .trim_start_matches("http://")
        .split_once('/')
        .unwrap();
    let relay = slow_relay(authority.to_string(), Duration::from_secs(4)).await;
    let url = format!("http://{relay}/{path}");
    let client = Client::connect_http("slow-http", &HttpConfig::new(&url), options)
        .await
        .expect("a slow HTTP server connects");
    assert_eq!(client.details().era.name(), "stateless", "over HTTP");
    assert_eq!(text(&client, "add", json!({"a": 2, "b": 3})).await, "5");
    client.close().await;
}

/// Resources, a template, a prompt and completions of the Python SDK's server, in both eras on
/// every transport.
#[tokio::test]
async fn python_sdk_resources_prompts_and_completions_in_both_eras() {
    use agenvoy_mcp::CompletionRef;
    let Some(python) = python() else { return };
    for era in [EraPreference::Auto, EraPreference::Handshake] {
        for mode in MODES {
            let options = ClientOptions::default()
                .with_era(era)
                .with_timeout(Duration::from_secs(20));
            let (client, server) = connect(&python, mode, options).await;
            let at = format!("{mode:?} {}", client.details().era.name());
            let resources = client.list_resources().await.expect("resources/list");
            let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
            assert_eq!(uris, ["note://readme", "note://pixel"], "{at}");
            let templates = client.list_resource_templates().await.expect("templates");
            assert_eq!(templates[0].uri_template, "note://topics/{topic}", "{at}");
            let readme = client.read_resource("note://readme").await.expect("read");
            assert_eq!(readme.text, "A note from Python.", "{at}");
            let pixel = client.read_resource("note://pixel").await.expect("read");
            assert_eq!(pixel.text, "[blob image/png, 8 bytes]", "{at}");
            let note = client
                .read_resource("note://topics/mcp")
                .await
                .expect("read");
            assert_eq!(note.text, "A note on mcp.", "{at}");

            let prompts = client.list_prompts().await.expect("prompts/list");
            assert_eq!(prompts[0].name, "review", "{at}");
            let required: Vec<(&str, bool)> = prompts[0]
                .arguments
                .iter()
                .map(|a| (a.name.as_str(), a.required))
                .collect();
            assert_eq!(required, [("code", true), ("language", false)], "{at}");
            let got = client
                .get_prompt("review", json!({"code": "main.rs", "language": "rust"}))
                .await
                .expect("prompts/get");
            assert_eq!(
                got.messages[0].text().as_deref(),
                Some("Review this rust code: main.rs"),
                "{at}"
            );

            let review = CompletionRef::Prompt("review".into());
            let plain = client
                .complete(&review, "language", "r", &[])
                .await
                .unwrap();
            assert_eq!(plain.values, ["ruby", "rust"], "{at}");
            let context = [("code".to_string(), "main.rs".to_string())];
            let ranked = client
                .complete(&review, "language", "r", &context)
                .await
                .unwrap();
            assert_eq!(ranked.values, ["rust", "ruby"], "{at}: the context counts");
            let topics = CompletionRef::ResourceTemplate("note://topics/{topic}".into());
            let topic = client.complete(&topics, "topic", "m", &[]).await.unwrap();
            assert_eq!(topic.values, ["mcp"], "{at}");
            client.close().await;
            drop(server);
        }
    }
}

/// SEP-414 against a real server: the trace context of a call reaches the Python SDK's
/// server in `_meta` exactly as given, and the SDK's own OpenTelemetry middleware reads it
/// (the span the tool runs in belongs to the caller's trace, with its state and baggage),
/// over stdio and both HTTP flavours, in both eras. A call without one carries none.
#[tokio::test]
async fn python_sdk_server_reads_the_trace_context_in_both_eras() {
    use agenvoy_mcp::{RequestOptions, TraceContext};
    let Some(python) = python() else { return };
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const STATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
    const BAGGAGE: &str = "userId=alice,isProduction=false";
    for era in [EraPreference::Auto, EraPreference::Handshake] {
        for mode in MODES {
            let options = ClientOptions::default()
                .with_timeout(Duration::from_secs(20))
                .with_era(era);
            let (client, _server) = connect(&python, mode, options).await;
            let trace = TraceContext::new(PARENT, Some(STATE), Some(BAGGAGE)).unwrap();
            let traced = RequestOptions::default().with_trace(trace);
            let out = client
                .call_tool_with("trace_context", json!({}), traced)
                .await
                .unwrap_or_else(|e| panic!("{era:?} {mode:?}: {e}"));
            let seen: Value = serde_json::from_str(&out.text).unwrap();
            let what = format!("{era:?} {mode:?}: {seen}");
            let sent = json!({"traceparent": PARENT, "tracestate": STATE, "baggage": BAGGAGE});
            assert_eq!(seen["meta"], sent, "{what}");
            assert_eq!(seen["otel"]["traceId"], &PARENT[3..35], "{what}");
            assert_eq!(seen["otel"]["tracestate"], STATE, "{what}");
            let baggage = json!({"userId": "alice", "isProduction": "false"});
            assert_eq!(seen["otel"]["baggage"], baggage, "{what}");
            let plain = text(&client, "trace_context", json!({})).await;
            let seen: Value = serde_json::from_str(&plain).unwrap();
            assert_eq!(seen["meta"]["traceparent"], Value::Null, "{what}: {seen}");
            assert_eq!(seen["otel"]["traceId"], Value::Null, "{what}: {seen}");
            client.close().await;
        }
    }
}
