//! The daemon (`agenvoy-mcp serve`) and its management API, over real HTTP: every route,
//! every error, the lock-down (token, Host, Origin, Content-Type, body cap), the bounds,
//! concurrent changes to the files, shutdown on signals, and OAuth logins (by the stream and
//! by paste-back) against the strict authorization server of `fixtures/oauth/server.py`.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::api::{self, ApiOptions, ApiToken, Limits};
use agenvoy_mcp::auth::MemoryStore;
use agenvoy_mcp::host::{Config, Manager, ManagerOptions};
use common::daemon::*;
use common::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn serve_with_no_config_file_serves_the_embedded_default() {
    let daemon = Daemon::start(None);
    let api = &daemon.api;
    assert_ne!(api.port(), 0, "the real port");
    assert_eq!(api.token.len(), 43, "32 random bytes, base64url");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(daemon.path("api-token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let fixture = api.status_of("fixture");
    assert_eq!(fixture["state"], "connected", "{fixture}");
    assert_eq!(fixture["transport"], "stdio");
    assert_eq!(fixture["era"], "handshake");
    assert_eq!(fixture["protocolVersion"], "2025-11-25");
    assert_eq!(fixture["toolCount"], 4, "the demo server's tools");
    assert_eq!(fixture["lastError"], Value::Null);

    let listed = api.get("/v1/mcp");
    assert_eq!(
        listed["servers"],
        json!({"fixture": {"command": binary(), "args": ["fixture-server"]}})
    );
    let tools = api.get("/v1/mcp/tools");
    let echo = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fixture__echo")
        .unwrap()
        .clone();
    assert_eq!(echo["server"], "fixture");
    assert_eq!(echo["autoApprove"], false);
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert!(echo["description"].is_string());
    let found = api.get("/v1/mcp/tools/search?q=echo%20text&limit=2");
    assert_eq!(found["tools"][0]["name"], "mcp__fixture__echo", "{found}");
    let score = found["tools"][0]["score"].as_f64();
    assert!(score.is_some_and(|s| s > 0.8), "{found}");
    assert_eq!(found["tools"][0]["weak"], false, "{found}");

    let called = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__fixture__echo", "arguments": {"text": "hi"}, "mode": "auto"}),
    );
    assert_eq!(called.status, 200, "{called:?}");
    assert_eq!(
        called.json(),
        json!({"text": "hi", "isError": false, "totalBytes": 2})
    );
}

/// With no config file, the embedded default follows one rule on every route: it is shown,
/// called, reconnected and its tools approved, and every change of its entry answers the same
/// 409 that says to add a server of one's own, before and after the first server added (which
/// makes the file, with that server only). The next start uses only the file.
#[test]
fn the_embedded_default_is_shown_and_used_but_never_changed() {
    let daemon = Daemon::start(None);
    let api = &daemon.api;
    let path = daemon.path("mcp.json");
    let refused = format!(
        "server \"fixture\" is not in {}: it comes with the default config used when that file did not exist, which is never written, so it cannot be changed; add a server of your own (POST /v1/mcp, or `a` in the panel): the file then holds yours, and the next start uses only the file",
        path.display()
    );
    let changes = [
        (
            "/v1/mcp/enable",
            json!({"name": "fixture", "enabled": false}),
        ),
        (
            "/v1/mcp/enable",
            json!({"name": "fixture", "enabled": true}),
        ),
        ("/v1/mcp/remove", json!({"name": "fixture"})),
        (
            "/v1/mcp/start",
            json!({"name": "fixture", "start": "on_demand"}),
        ),
        (
            "/v1/mcp/tools/visibility",
            json!({"server": "fixture", "tool": "echo", "visible": false}),
        ),
        (
            "/v1/mcp/tools/visibility",
            json!({"server": "fixture", "disabled_tools": ["echo"]}),
        ),
        (
            "/v1/mcp/oauth/client",
            json!({"name": "fixture", "client_id": "id"}),
        ),
    ];
    let each_change_refused = || {
        for (route, body) in &changes {
            let answer = api.post(route, body.clone());
            assert_eq!(answer.status, 409, "{route} {body}: {answer:?}");
            assert_eq!(answer.json()["error"]["type"], "conflict");
            assert_eq!(answer.error(), refused, "{route} {body}");
        }
        assert_eq!(api.status_of("fixture")["state"], "connected");
    };
    each_change_refused();
    assert!(!path.exists(), "nothing written");
    // Using it is no change: reconnect, approve a tool, call.
    let reconnected = api.post("/v1/mcp/reconnect", json!({"name": "fixture"}));
    assert_eq!(reconnected.status, 200, "{reconnected:?}");
    let approved = api.post(
        "/v1/allowlist",
        json!({"tool": {"prefix": "mcp__fixture__", "entries": ["mcp__fixture__echo"]}}),
    );
    assert_eq!(approved.status, 200, "{approved:?}");
    let called = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__fixture__echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(called.status, 200, "{called:?}");
    assert!(!path.exists(), "nothing written");

    // The first server added makes the file, with it only; the same rule holds after.
    let added = api.post(
        "/v1/mcp",
        json!({"name": "two", "command": binary(), "args": ["fixture-server"]}),
    );
    assert_eq!(added.status, 201, "{added:?}");
    let file = json!({"servers": {"two": {"command": binary(), "args": ["fixture-server"]}}});
    assert_eq!(daemon.config(), file);
    each_change_refused();
    assert_eq!(daemon.config(), file);
    // The file's server changes as any does.
    let disabled = api.post("/v1/mcp/enable", json!({"name": "two", "enabled": false}));
    assert_eq!(disabled.status, 200, "{disabled:?}");

    // The next start uses only the file.
    let Daemon { server, dir, .. } = daemon;
    drop(server);
    let daemon = Daemon::start_in(dir, &[]);
    let names: Vec<Value> = daemon.api.get("/v1/mcp/status")["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(names, [json!("two")]);
}

/// No local user can lock the owner out: 300 idle sockets (no token, no bytes) and 80 calls to
/// a server that never answers leave status, management and a call to a healthy server
/// answered at once; past 64 calls in flight the hung server's calls are refused with 429 and
/// `Retry-After`, naming it.
#[test]
fn idle_sockets_and_a_hung_server_never_hold_the_owner() {
    let daemon = Daemon::start(Some(json!({"servers": {
        "hung": fixture_entry(&["--mode", "hang"]),
        "ok": fixture_entry(&[]),
    }})));
    let api = &daemon.api;
    assert_eq!(api.status_of("hung")["state"], "connected");
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(&api.authority).unwrap())
        .collect();
    let (answers, answered) = std::sync::mpsc::channel();
    let calls: Vec<_> = (0..80)
        .map(|_| {
            let api = Api {
                authority: api.authority.clone(),
                token: api.token.clone(),
            };
            let answers = answers.clone();
            std::thread::spawn(move || {
                let reply = api.post(
                    "/v1/mcp/call",
                    json!({"name": "mcp__hung__echo", "arguments": {"text": "x"}, "mode": "auto"}),
                );
                let _ = answers.send(reply);
            })
        })
        .collect();
    // 16 of the 80 are refused at once; 64 stay in flight.
    let mut refused = Vec::new();
    while refused.len() < 16 {
        let reply = answered
            .recv_timeout(Duration::from_secs(20))
            .expect("the calls past the bound are refused at once");
        assert_eq!(reply.status, 429, "{reply:?}");
        refused.push(reply);
    }
    assert_eq!(refused[0].header("retry-after").as_deref(), Some("1"));
    assert!(
        refused[0]
            .error()
            .contains("server \"hung\" has 64 calls in flight"),
        "{:?}",
        refused[0]
    );
    // The owner is served: status, the tools, and a healthy server's call.
    for _ in 0..10 {
        let started = Instant::now();
        assert_eq!(api.status_of("ok")["state"], "connected");
        assert!(api.get("/v1/mcp/tools")["tools"].as_array().unwrap().len() >= 9);
        let called = api.post(
            "/v1/mcp/call",
            json!({"name": "mcp__ok__echo", "arguments": {"text": "hi"}, "mode": "auto"}),
        );
        assert_eq!(called.json()["text"], "hi", "{called:?}");
        // Wide: the promise is "never behind the hung calls" (20 s each).
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    assert!(
        answered.try_recv().is_err(),
        "the 64 hung calls are still in flight"
    );
    // Removing the hung server ends its calls.
    assert_eq!(
        api.post("/v1/mcp/remove", json!({"name": "hung"})).status,
        200
    );
    for call in calls {
        call.join().unwrap();
    }
    for _ in 0..64 {
        let reply = answered.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(reply.status, 502, "{reply:?}");
    }
    drop(idle);
}

/// The CPU time a process has used (user and system), from `/proc/PID/stat`.
#[cfg(unix)]
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// A server that never stops saying its tool list changed costs the daemon at most a tenth
/// of a core (the session reads a flooding server more slowly), and its tools are still
/// refreshed now and then, and still callable.
#[cfg(unix)]
#[test]
fn a_list_changed_flood_costs_little() {
    let flood = HttpFixture::start("list-changed-flood", &[]);
    let mut daemon = Daemon::start(Some(json!({"servers": {"flood": {"url": flood.url}}})));
    let api = &daemon.api;
    assert_eq!(api.status_of("flood")["state"], "connected");
    let pid = daemon.server.pid();
    // The flood is under way once the GET stream is open: give it a moment to build up.
    std::thread::sleep(Duration::from_secs(1));
    let (before, started) = (cpu_time(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(4));
    let used = cpu_time(pid) - before;
    let share = used.as_secs_f64() / started.elapsed().as_secs_f64();
    assert!(
        share <= 0.1,
        "the daemon used {used:?} in {:?}",
        started.elapsed()
    );
    let called = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__flood__echo", "arguments": {"text": "hi"}, "mode": "auto"}),
    );
    assert_eq!(called.json()["text"], "hi", "{called:?}");
    assert!(daemon.server.wait_exit(Duration::ZERO).is_none());
}

#[test]
fn requests_are_locked_to_the_owner() {
    let daemon = Daemon::start(Some(json!({"servers": {}})));
    let api = &daemon.api;
    let (authority, token) = (api.authority.as_str(), api.token.as_str());
    let port = api.port();
    let auth = format!("Authorization: Bearer {token}");
    let host = format!("Host: {authority}");
    let json_type = "Content-Type: application/json";
    struct Case {
        what: &'static str,
        head: String,
        body: Vec<u8>,
        status: u16,
        says: &'static str,
    }
    let case = |what, lines: &[&str], body: &[u8], status, says| Case {
        what,
        head: lines.join("\r\n"),
        body: body.to_vec(),
        status,
        says,
    };
    let get = "GET /v1/mcp/status HTTP/1.1";
    let post = "POST /v1/mcp/reconnect HTTP/1.1";
    let other_port = format!("Host: 127.0.0.1:{}", port.wrapping_add(1));
    let localhost = format!("Host: localhost:{port}");
    let evil = format!("Host: evil.test:{port}");
    let remote_ip = format!("Host: 10.1.2.3:{port}");
    let big = vec![b' '; 1024 * 1024 + 1];
    let cases = [
        case("the token", &[get, &host, &auth], b"", 200, ""),
        case("no token", &[get, &host], b"", 401, "Authorization: Bearer"),
        case(
            "a wrong token",
            &[
                get,
                &host,
                "Authorization: Bearer wrong-token-wrong-token-wrong",
            ],
            b"",
            401,
            "token is wrong",
        ),
        case(
            "another scheme",
            &[get, &host, &format!("Authorization: Basic {token}")],
            b"",
            401,
            "Bearer",
        ),
        case("localhost", &[get, &localhost, &auth], b"", 200, ""),
        case(
            "a name (DNS rebinding)",
            &[get, &evil, &auth],
            b"",
            403,
            "DNS rebinding",
        ),
        case(
            "a remote IP",
            &[get, &remote_ip, &auth],
            b"",
            403,
            "not a loopback",
        ),
        case(
            "no port",
            &[get, "Host: 127.0.0.1", &auth],
            b"",
            403,
            "port",
        ),
        case("another port", &[get, &other_port, &auth], b"", 403, "port"),
        case(
            "no Host",
            &["GET /v1/mcp/status HTTP/1.0", &auth],
            b"",
            403,
            "Host",
        ),
        case(
            "an absolute URI naming another host",
            &[
                &format!("GET http://evil.test:{port}/v1/mcp/status HTTP/1.1"),
                &host,
                &auth,
            ],
            b"",
            403,
            "DNS rebinding",
        ),
        case(
            "a cross-site Origin",
            &[get, &host, &auth, "Origin: http://evil.test"],
            b"",
            403,
            "cross-site",
        ),
        case(
            "Origin null",
            &[get, &host, &auth, "Origin: null"],
            b"",
            403,
            "cross-site",
        ),
        case(
            "a loopback Origin",
            &[get, &host, &auth, "Origin: http://localhost:5173"],
            b"",
            200,
            "",
        ),
        case(
            "the token is checked before the route",
            &["GET /v1/nothing HTTP/1.1", &host],
            b"",
            401,
            "",
        ),
        case(
            "an unknown route",
            &["GET /v1/nothing HTTP/1.1", &host, &auth],
            b"",
            404,
            "no route",
        ),
        case(
            "a wrong method",
            &["PUT /v1/mcp HTTP/1.1", &host, &auth],
            b"",
            405,
            "GET, POST",
        ),
        case(
            "a text body",
            &[post, &host, &auth, "Content-Type: text/plain"],
            b"{}",
            415,
            "application/json",
        ),
        case(
            "no Content-Type",
            &[post, &host, &auth],
            b"{}",
            415,
            "application/json",
        ),
        case(
            "an empty body with no Content-Type is {} (curl -X POST)",
            &[post, &host, &auth],
            b"",
            200,
            "",
        ),
        case(
            "an empty body of another type",
            &[post, &host, &auth, "Content-Type: text/plain"],
            b"",
            415,
            "application/json",
        ),
        case(
            "JSON with a charset",
            &[
                post,
                &host,
                &auth,
                "Content-Type: application/json; charset=utf-8",
            ],
            b"{}",
            200,
            "",
        ),
        case(
            "a body over 1 MiB",
            &[post, &host, &auth, json_type],
            &big,
            413,
            "over",
        ),
        case(
            "not JSON",
            &[post, &host, &auth, json_type],
            b"{",
            400,
            "not valid JSON",
        ),
        case(
            "not an object",
            &[post, &host, &auth, json_type],
            b"[]",
            400,
            "JSON object",
        ),
    ];
    for c in cases {
        let reply = exchange(authority, &c.head, &c.body);
        assert_eq!(reply.status, c.status, "{}: {reply:?}", c.what);
        if c.status >= 400 {
            let message = reply.error();
            assert!(message.contains(c.says), "{}: {message}", c.what);
            assert!(
                !message.contains(token),
                "{}: the token is never echoed",
                c.what
            );
        }
        if c.status == 401 {
            assert_eq!(reply.header("www-authenticate").as_deref(), Some("Bearer"));
        }
        if c.status == 405 {
            assert_eq!(reply.header("allow").as_deref(), Some("GET, POST"));
        }
    }
}

#[test]
fn a_non_loopback_listen_needs_allow_remote_and_still_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let output = serve_command(dir.path(), &["--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(!dir.path().join("api-token").exists(), "nothing started");

    let daemon = Daemon::start_with(
        Some(json!({"servers": {}})),
        &["--listen", "0.0.0.0:0", "--allow-remote"],
    );
    let port = daemon.api.port();
    let authority = format!("127.0.0.1:{port}");
    let head = |host: &str, auth: bool| {
        let mut head = format!("GET /v1/mcp/status HTTP/1.1\r\nHost: {host}");
        if auth {
            head.push_str(&format!("\r\nAuthorization: Bearer {}", daemon.api.token));
        }
        head
    };
    let remote = format!("10.1.2.3:{port}");
    assert_eq!(exchange(&authority, &head(&remote, false), b"").status, 401);
    assert_eq!(exchange(&authority, &head(&remote, true), b"").status, 200);
    let name = format!("evil.test:{port}");
    assert_eq!(exchange(&authority, &head(&name, true), b"").status, 403);
}

#[test]
fn servers_are_added_and_removed_through_the_api() {
    let daemon = Daemon::start(Some(json!({
        "theme": "dark",
        "servers": {"keep": {"url": "http://127.0.0.1:9/mcp", "note": "kept"}}
    })));
    let api = &daemon.api;
    let marker = "4711";
    let added = api.post(
        "/v1/mcp",
        json!({"name": "fx", "command": fixture_binary(), "args": ["--page-size", marker], "env": {"A": "b"}}),
    );
    assert_eq!(added.status, 201, "{added:?}");
    let server = &added.json()["server"];
    assert_eq!(server["state"], "connected");
    assert_eq!(server["toolCount"], 9);
    assert!(api.tool_names().contains(&"mcp__fx__echo".to_string()));
    let pid = pid_with(marker);
    let config = daemon.config();
    assert_eq!(config["theme"], "dark");
    assert_eq!(config["servers"]["keep"]["note"], "kept");
    assert_eq!(config["servers"]["fx"]["args"][1], marker);

    // Every refusal leaves the file as it was.
    let before = daemon.read("mcp.json");
    let refused: &[(Value, u16, &str)] = &[
        (json!({"name": "fx", "command": "x"}), 409, "already"),
        (json!({"name": "keep", "command": "x"}), 409, "already"),
        (
            json!({"name": "bad name", "command": "x"}),
            400,
            "letters, digits",
        ),
        (json!({"command": "x"}), 400, "\"name\""),
        (json!({"name": 3, "command": "x"}), 400, "must be a string"),
        (
            json!({"name": "b", "command": "x", "url": "http://h"}),
            400,
            "both",
        ),
        (json!({"name": "b"}), 400, "neither"),
        (
            json!({"name": "b", "command": "x", "args": "a b"}),
            400,
            "array of strings",
        ),
        (json!({"name": "b", "url": "ftp://h"}), 400, "http://"),
        (
            json!({"name": "b", "command": "x", "cwd": "/"}),
            400,
            "unknown member",
        ),
        (
            json!({"name": "b", "url": "http://h", "auth": "basic"}),
            400,
            "oauth",
        ),
        (
            json!({"name": "x".repeat(100_000), "command": "x"}),
            400,
            "is 100000 characters; at most 32",
        ),
        (
            json!({"name": "b", "command": "x", "timeout": 0}),
            400,
            "\"timeout\" is 0; it must be a number of seconds above 0",
        ),
    ];
    api.assert_refused("/v1/mcp", refused);
    assert_eq!(daemon.read("mcp.json"), before);

    // A server that cannot connect is added, and shown failed.
    let remote = api.post(
        "/v1/mcp",
        json!({"name": "remote", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${KEY}"}}),
    );
    assert_eq!(remote.status, 201, "{remote:?}");
    assert_eq!(remote.json()["server"]["state"], "failed");
    assert!(remote.json()["server"]["lastError"].is_string());

    let removed = api.post("/v1/mcp/remove", json!({"name": "fx"}));
    assert_eq!(removed.status, 200, "{removed:?}");
    assert_eq!(removed.json(), json!({"removed": "fx"}));
    assert_group_gone_within(pid, Duration::ZERO);
    assert!(!api.tool_names().iter().any(|n| n.starts_with("mcp__fx__")));
    assert_eq!(api.status_of("fx"), Value::Null);
    let config = daemon.config();
    assert!(config["servers"].get("fx").is_none());
    assert_eq!(config["servers"]["keep"]["note"], "kept");
    let again = api.post("/v1/mcp/remove", json!({"name": "fx"}));
    assert_eq!(again.status, 404);
    assert!(again.error().contains("no server named"));
    assert_eq!(api.post("/v1/mcp/remove", json!({})).status, 400);
    assert_eq!(
        api.post("/v1/mcp/remove", json!({"name": "remote"})).status,
        200
    );
    let names: Vec<String> = daemon.config()["servers"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(names, ["keep"]);
}

#[test]
fn secrets_never_come_back() {
    let daemon = Daemon::start(Some(json!({"servers": {
        "local": {"command": "/nonexistent/server", "env": {"TOKEN": "literal-env-secret", "REF": "${MY_TOKEN}"}},
        "remote": {"url": "http://u:literal-password@127.0.0.1:9/mcp?api_key=literal-query-secret",
                   "headers": {"Authorization": "Bearer literal-header-secret", "X-Key": "$MY_KEY"}},
        "login": {"url": "http://127.0.0.1:9/mcp", "auth": "oauth", "oauth_client_id": "c1",
                  "oauth_client_secret": "literal-client-secret"}
    }})));
    let listed = daemon.api.send("GET", "/v1/mcp", None);
    assert_eq!(listed.status, 200);
    for secret in [
        "literal-env-secret",
        "literal-header-secret",
        "literal-client-secret",
        "literal-query-secret",
        "literal-password",
    ] {
        assert!(!listed.text.contains(secret), "{secret}: {}", listed.text);
    }
    let servers = &listed.json()["servers"];
    assert_eq!(servers["local"]["env"]["REF"], "${MY_TOKEN}");
    assert_eq!(servers["local"]["env"]["TOKEN"], "[redacted]");
    assert_eq!(servers["remote"]["headers"]["X-Key"], "$MY_KEY");
    assert_eq!(servers["remote"]["headers"]["Authorization"], "[redacted]");
    assert_eq!(
        servers["remote"]["url"],
        "http://u:***@127.0.0.1:9/mcp?api_key=***"
    );
    assert_eq!(servers["login"]["oauth_client_secret"], "[redacted]");
    assert_eq!(servers["login"]["oauth_client_id"], "c1");
    let status = daemon.api.send("GET", "/v1/mcp/status", None);
    assert!(!status.text.contains("literal-"), "{}", status.text);
}

#[test]
fn reconnect_all_or_one() {
    let daemon = Daemon::start(Some(json!({"servers": {
        "a": fixture_entry(&["--page-size", "4801"]),
        "b": fixture_entry(&["--page-size", "4802"]),
    }})));
    let api = &daemon.api;
    let (a, b) = (pid_with("4801"), pid_with("4802"));
    let one = api.post("/v1/mcp/reconnect", json!({"name": "a"}));
    assert_eq!(one.status, 200, "{one:?}");
    assert_eq!(one.json(), json!({"results": [{"name": "a", "ok": true}]}));
    let a2 = pid_with("4801");
    assert_ne!(a, a2);
    assert_eq!(pid_with("4802"), b);
    assert_group_gone_within(a, Duration::from_secs(5));
    let all = api.post("/v1/mcp/reconnect", json!({}));
    assert_eq!(
        all.json(),
        json!({"results": [{"name": "a", "ok": true}, {"name": "b", "ok": true}]})
    );
    assert_ne!(pid_with("4801"), a2);
    assert_ne!(pid_with("4802"), b);
    assert_eq!(api.tool_names().len(), 18, "re-registered");
    let unknown = api.post("/v1/mcp/reconnect", json!({"name": "nope"}));
    assert_eq!(unknown.status, 404);
    assert_eq!(
        api.post("/v1/mcp/reconnect", json!({"name": ""})).status,
        400
    );
}

#[test]
fn the_allowlist_route_and_the_gate() {
    let daemon = Daemon::start(Some(json!({"servers": {"fx": fixture_entry(&[])}})));
    std::fs::write(daemon.path("allow_tool"), "# mine\nbash\nmcp__other__*\n").unwrap();
    let api = &daemon.api;
    let call = |name: &str, mode: Option<&str>| {
        let mut body = json!({"name": name, "arguments": {"text": "x", "a": 1, "b": 2}});
        if let Some(mode) = mode {
            body["mode"] = json!(mode);
        }
        api.post("/v1/mcp/call", body)
    };
    // Confirm (the default) refuses what is not allowlisted, with the reason.
    let refused = call("mcp__fx__echo", None);
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(refused.json()["error"]["type"], "denied");
    assert!(refused.error().contains("allow_tool"), "{refused:?}");

    let set = |entries: Value| {
        api.post(
            "/v1/allowlist",
            json!({"tool": {"prefix": "mcp__fx__", "entries": entries}}),
        )
    };
    let reply = set(json!(["mcp__fx__echo"]));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        api.get("/v1/allowlist"),
        json!({"entries": ["bash", "mcp__other__*", "mcp__fx__echo"]})
    );
    assert_eq!(
        daemon.read("allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__echo\n"
    );
    assert_eq!(call("mcp__fx__echo", Some("confirm")).status, 200);
    assert_eq!(call("mcp__fx__add", Some("confirm")).status, 403);
    assert_eq!(call("mcp__fx__add", Some("auto")).json()["text"], "3");
    let tools = api.get("/v1/mcp/tools");
    let approved: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["autoApprove"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(approved, ["mcp__fx__echo"]);

    // `prefix*` approves the whole server, replacing that prefix's entries only.
    assert_eq!(set(json!(["mcp__fx__*"])).status, 200);
    assert_eq!(
        daemon.read("allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__*\n"
    );
    assert_eq!(call("mcp__fx__add", None).status, 200);

    // Refusals change nothing.
    let before = daemon.read("allow_tool");
    let bad: &[(Value, u16, &str)] = &[
        (
            json!({"tool": {"prefix": "mcp__fx__", "entries": ["bash"]}}),
            400,
            "does not start with",
        ),
        (
            json!({"tool": {"prefix": "mcp__fx__", "entries": ["mcp__fx__a b"]}}),
            400,
            "not a tool name",
        ),
        (
            json!({"tool": {"prefix": "mcp__fx__", "entries": ["mcp__fx___*"]}}),
            400,
            "approves every tool of server \"fx_\"",
        ),
        (
            json!({"tool": {"prefix": "bash", "entries": []}}),
            400,
            "mcp__<server>__",
        ),
        (
            json!({"tool": {"prefix": "mcp__", "entries": []}}),
            400,
            "mcp__<server>__",
        ),
        (
            json!({"tool": {"prefix": "mcp__fx__", "entries": "mcp__fx__*"}}),
            400,
            "entries",
        ),
        (
            json!({"tool": {"prefix": "mcp__fx__", "entries": [1]}}),
            400,
            "array of strings",
        ),
        (json!({"prefix": "mcp__fx__"}), 400, "unknown member"),
        (json!({}), 400, "the body must be"),
    ];
    api.assert_refused("/v1/allowlist", bad);
    assert_eq!(daemon.read("allow_tool"), before);

    // The call route's own errors.
    let failed = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__fx__fail", "arguments": {"message": "nope"}}),
    );
    assert_eq!(
        failed.json(),
        json!({"text": "nope", "isError": true, "totalBytes": 4})
    );
    let errors: &[(Value, u16, &str)] = &[
        (
            json!({"name": "mcp__fx__nothing"}),
            404,
            "no MCP tool named",
        ),
        (
            json!({"name": "mcp__fx__echo", "mode": "yolo"}),
            400,
            "confirm",
        ),
        (
            json!({"name": "mcp__fx__echo", "arguments": [1]}),
            400,
            "JSON object",
        ),
        (json!({"arguments": {}}), 400, "\"name\""),
    ];
    api.assert_refused("/v1/mcp/call", errors);
}

#[test]
fn concurrent_changes_are_never_lost() {
    let daemon = Daemon::start(Some(json!({
        "theme": "dark",
        "servers": {"keep": {"url": "http://127.0.0.1:9/mcp", "note": "kept"}}
    })));
    std::fs::write(daemon.path("allow_tool"), "# mine\nbash\n").unwrap();
    let threads: Vec<_> = (0..8)
        .flat_map(|i| {
            let (servers, allowlist) = (daemon.api.clone(), daemon.api.clone());
            [
                std::thread::spawn(move || {
                    servers.post(
                        "/v1/mcp",
                        json!({"name": format!("s{i}"), "url": "http://127.0.0.1:9/mcp"}),
                    )
                }),
                std::thread::spawn(move || {
                    let prefix = format!("mcp__s{i}__");
                    allowlist.post(
                        "/v1/allowlist",
                        json!({"tool": {"prefix": prefix, "entries": [format!("{prefix}*")]}}),
                    )
                }),
            ]
        })
        .collect();
    for t in threads {
        let reply = t.join().unwrap();
        assert!(reply.status == 200 || reply.status == 201, "{reply:?}");
    }
    let config = daemon.config();
    let names: Vec<&String> = config["servers"].as_object().unwrap().keys().collect();
    assert_eq!(names.len(), 9, "{names:?}");
    assert_eq!(config["theme"], "dark");
    assert_eq!(config["servers"]["keep"]["note"], "kept");
    let allowlist = daemon.read("allow_tool");
    assert!(allowlist.starts_with("# mine\nbash\n"), "{allowlist}");
    for i in 0..8 {
        assert!(
            allowlist.contains(&format!("mcp__s{i}__*\n")),
            "{allowlist}"
        );
    }
}

#[test]
fn a_daemon_killed_while_writing_leaves_valid_files() {
    for round in 0..3 {
        let mut daemon = Daemon::start(Some(json!({"servers": {}})));
        let api = daemon.api.clone();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let answered = done.clone();
        let writer = std::thread::spawn(move || {
            for i in 0.. {
                answered.store(i, std::sync::atomic::Ordering::SeqCst);
                let body = json!({"name": format!("s{i}"), "url": "http://127.0.0.1:9/mcp"});
                let Ok(mut stream) = TcpStream::connect(&api.authority) else {
                    return i;
                };
                let body = body.to_string();
                let request = format!(
                    "POST /v1/mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    api.authority,
                    api.token,
                    body.len()
                );
                if stream.write_all(request.as_bytes()).is_err() {
                    return i;
                }
                let _ = stream.read_to_end(&mut Vec::new());
            }
            unreachable!()
        });
        // Killed once some writes were answered (more each round), during the next ones:
        // counted, not timed, so a busy machine cannot make it kill before the first.
        wait_until("writes answered", Duration::from_secs(60), || {
            let n = done.load(std::sync::atomic::Ordering::SeqCst);
            if n > 2 + 3 * round {
                Ok(())
            } else {
                Err(format!("{n} answered"))
            }
        });
        let status = Command::new("kill")
            .args(["-9", &daemon.server.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        assert!(daemon.server.wait_exit(Duration::from_secs(5)).is_some());
        let sent = writer.join().unwrap();
        let config = Config::load(&daemon.path("mcp.json")).expect("a whole, valid file");
        let saved = config.server_names().len();
        assert!(saved > 0 && saved <= sent, "{saved} saved of {sent} sent");
        let left: Vec<_> = std::fs::read_dir(daemon.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("mcp.json") && n != "mcp.json")
            .collect();
        assert!(left.len() <= 1, "at most the one temporary file: {left:?}");
    }
}

#[test]
fn sigterm_sigint_and_sighup_close_every_server_and_exit_0() {
    for (signal, marker) in [("TERM", "4901"), ("INT", "4902"), ("HUP", "4911")] {
        let mut daemon = Daemon::start(Some(json!({"servers": {
            "plain": fixture_entry(&["--page-size", marker]),
            "parent": fixture_entry(&["--page-size", marker, "--mode", "spawn-grandchild"]),
        }})));
        let pids = processes_with_arg(marker);
        assert_eq!(pids.len(), 2, "{pids:?}");
        let started = Instant::now();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &daemon.server.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = daemon
            .server
            .wait_exit(Duration::from_secs(5))
            .unwrap_or_else(|| panic!("SIG{signal}: still running after 5 s"));
        assert_eq!(exit.code(), Some(0), "SIG{signal}");
        eprintln!("SIG{signal}: exited in {:?}", started.elapsed());
        for pid in pids {
            assert_group_gone_within(pid, Duration::ZERO);
        }
    }
}

/// A signal while a server is still starting ends the daemon at once all the same: the
/// servers still starting are stopped (their processes end) rather than waited for (up to
/// the timeout), and none is left behind.
#[test]
fn a_signal_during_startup_stops_the_servers_still_starting() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "4903";
    let config = json!({"servers": {
        "slow": fixture_entry(&["--page-size", marker, "--mode", "slow-start=30"]),
        "quick": fixture_entry(&["--page-size", marker]),
    }});
    std::fs::write(dir.path().join("mcp.json"), config.to_string()).unwrap();
    let mut daemon = serve_command(dir.path(), &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let pids = loop {
        let pids = processes_with_arg(marker);
        if pids.len() == 2 {
            break pids;
        }
        assert!(
            Instant::now() < deadline,
            "the servers did not start: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = wait_exit(&mut daemon, Duration::from_secs(5))
        .unwrap_or_else(|| panic!("still running 5 s after SIGTERM"));
    let output = daemon.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(exit.code(), Some(0), "{stderr}");
    assert!(!stdout.contains("listening"), "never ready: {stdout}");
    assert!(stderr.contains("SIGTERM: closing every server"), "{stderr}");
    assert!(
        !stderr.contains("failed"),
        "a shutdown is no failure: {stderr}"
    );
    for pid in pids {
        assert_group_gone_within(pid, Duration::ZERO);
    }
}

/// The Python authorization and MCP server of tests/oauth.rs, if its venv is installed.
fn oauth_server() -> Option<Listening> {
    let python = installed("venv/bin/python")?;
    let mut command = Command::new(python);
    command.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/oauth/server.py"));
    Some(Listening::start(command))
}

/// A browser that gets as far as the authorization server's redirect: its `Location`.
fn authorize(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, target) = rest.split_at(rest.find('/').unwrap());
    let reply = exchange(
        authority,
        &format!("GET {target} HTTP/1.1\r\nHost: {authority}"),
        b"",
    );
    assert!(matches!(reply.status, 302 | 307), "{reply:?}");
    reply.header("location").expect("a Location")
}

/// The browser following the redirect into the daemon's loopback listener.
fn follow_to_callback(location: &str) {
    let rest = location.strip_prefix("http://localhost:").unwrap();
    let (port, target) = rest.split_at(rest.find('/').unwrap());
    let authority = format!("127.0.0.1:{port}");
    let reply = exchange(
        &authority,
        &format!("GET {target} HTTP/1.1\r\nHost: localhost:{port}"),
        b"",
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.text.contains("Login finished"), "{reply:?}");
}

#[test]
fn oauth_login_through_the_stream_and_by_paste_back() {
    let Some(py) = oauth_server() else {
        return;
    };
    let daemon = Daemon::start(Some(json!({"servers": {}})));
    let api = &daemon.api;
    let added = api.post(
        "/v1/mcp",
        json!({"name": "py", "url": py.url, "auth": "oauth"}),
    );
    assert_eq!(added.status, 201, "{added:?}");
    assert_eq!(added.json()["server"]["state"], "needs login");
    // A call before the login says how an API client logs in (issue 44 §4).
    let before = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__py__whoami", "mode": "auto"}),
    );
    assert_eq!(before.status, 409, "{before:?}");
    assert_eq!(before.json()["error"]["type"], "login_required");
    assert_eq!(
        before.error(),
        "mcp__py__whoami cannot be called: server \"py\" needs a login: mcp server \"py\": oauth login required; log in with GET /v1/mcp/oauth?name=py"
    );

    // Errors first: nothing is pending, the server is not one that logs in, or unknown.
    let no_login = api.post(
        "/v1/mcp/oauth/callback",
        json!({"name": "py", "url": "http://localhost:1/callback?code=c&state=s"}),
    );
    assert_eq!(no_login.status, 404, "{no_login:?}");
    assert_eq!(api.send("GET", "/v1/mcp/oauth?name=nope", None).status, 404);
    assert_eq!(api.send("GET", "/v1/mcp/oauth", None).status, 400);

    // 1. The stream: the URL, the browser reaches the loopback listener, done.
    let mut events = api.login_stream("py");
    assert!(events.head.starts_with("HTTP/1.1 200"), "{}", events.head);
    assert!(
        events
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream")
    );
    let url = events.next().unwrap()["url"].as_str().unwrap().to_string();
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let busy = api.send("GET", "/v1/mcp/oauth?name=py", None);
    assert_eq!(busy.status, 409, "one login per server: {busy:?}");
    follow_to_callback(&authorize(&url));
    assert_eq!(events.next().unwrap(), json!({"done": true, "ok": true}));
    assert_eq!(events.next(), None, "the stream ends");
    assert_eq!(api.status_of("py")["state"], "connected");
    let called = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__py__whoami", "mode": "auto"}),
    );
    assert_eq!(called.json()["text"], "hello from the protected server");
    assert!(daemon.read("oauth-tokens.json").contains("tokens:py"));

    // 2. Logout: the server needs a login again.
    let out = api.send("DELETE", "/v1/mcp/oauth?name=py", None);
    assert_eq!(out.status, 200, "{out:?}");
    assert_eq!(out.json(), json!({"name": "py", "state": "needs login"}));
    assert_eq!(api.status_of("py")["state"], "needs login");
    assert!(!daemon.read("oauth-tokens.json").contains("tokens:py"));

    // 3. Paste-back: the URL the browser ended on, posted to the callback route.
    let mut events = api.login_stream("py");
    let url = events.next().unwrap()["url"].as_str().unwrap().to_string();
    let location = authorize(&url);
    let not_it = api.post(
        "/v1/mcp/oauth/callback",
        json!({"name": "py", "url": "http://localhost/callback"}),
    );
    assert_eq!(not_it.status, 400, "{not_it:?}");
    // Another login's redirect (its state is not this login's) is refused at once, and the
    // login goes on.
    let started = Instant::now();
    let other = api.post(
        "/v1/mcp/oauth/callback",
        json!({"name": "py", "url": "http://localhost:17988/callback?code=c&state=another-login"}),
    );
    assert_eq!(other.status, 400, "{other:?}");
    assert!(
        other
            .error()
            .contains("not the redirect of this login to py (its state does not match)"),
        "{other:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let pasted = api.post(
        "/v1/mcp/oauth/callback",
        json!({"name": "py", "url": location}),
    );
    assert_eq!(pasted.status, 200, "{pasted:?}");
    assert_eq!(pasted.json(), json!({"name": "py", "ok": true}));
    assert_eq!(events.next().unwrap(), json!({"done": true, "ok": true}));
    assert_eq!(api.status_of("py")["state"], "connected");

    // 4. A pre-registered client: its secret goes to the token store and never back out;
    // the next login uses it.
    let secret = "pre-registered-secret-value";
    let client = api.post(
        "/v1/mcp/oauth/client",
        json!({"name": "py", "client_id": "pre-1", "client_secret": secret}),
    );
    assert_eq!(client.status, 200, "{client:?}");
    assert_eq!(
        client.json(),
        json!({"name": "py", "client_id": "pre-1", "redirect_uri": "http://localhost:17988/callback", "hasSecret": true})
    );
    let listed = api.send("GET", "/v1/mcp", None);
    assert!(!listed.text.contains(secret));
    assert_eq!(listed.json()["servers"]["py"]["oauth_client_id"], "pre-1");
    assert!(!daemon.read("mcp.json").contains(secret));
    assert!(daemon.read("oauth-tokens.json").contains(secret));
    let mut events = api.login_stream("py");
    let url = events.next().unwrap()["url"].as_str().unwrap().to_string();
    assert!(url.contains("client_id=pre-1"), "{url}");
    // Closing the stream cancels the login: another can start.
    drop(events);
    let started = Instant::now();
    loop {
        let mut events = api.login_stream("py");
        if events.head.starts_with("HTTP/1.1 200") {
            assert!(events.next().unwrap()["url"].is_string());
            break;
        }
        assert!(events.head.starts_with("HTTP/1.1 409"), "{}", events.head);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the closed stream's login was not cancelled"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "a closed login stream was noticed after {:?}",
        started.elapsed()
    );

    // Removing the server forgets its tokens and client secret.
    assert_eq!(
        api.post("/v1/mcp/remove", json!({"name": "py"})).status,
        200
    );
    let store = daemon.read("oauth-tokens.json");
    assert!(
        !store.contains(secret) && !store.contains("tokens:py"),
        "{store}"
    );
}

#[test]
fn the_oauth_client_route_checks_its_input() {
    let daemon = Daemon::start(Some(json!({"servers": {
        "login": {"url": "http://127.0.0.1:9/mcp", "auth": "oauth", "note": "kept"},
        "plain": {"url": "http://127.0.0.1:9/mcp"}
    }})));
    let api = &daemon.api;
    let before = daemon.read("mcp.json");
    let bad: &[(Value, u16, &str)] = &[
        (
            json!({"name": "nope", "client_id": "c"}),
            404,
            "no server named",
        ),
        (
            json!({"name": "plain", "client_id": "c"}),
            400,
            "not an OAuth server",
        ),
        (json!({"name": "login"}), 400, "client_id"),
        (
            json!({"name": "login", "client_id": "c", "redirect_uri": "https://evil.test/cb"}),
            400,
            "redirect_uri",
        ),
        (
            json!({"name": "login", "client_id": "c", "extra": 1}),
            400,
            "unknown member",
        ),
    ];
    api.assert_refused("/v1/mcp/oauth/client", bad);
    assert_eq!(daemon.read("mcp.json"), before);
    let set = api.post(
        "/v1/mcp/oauth/client",
        json!({"name": "login", "client_id": "c2", "redirect_uri": "http://127.0.0.1:17999/cb"}),
    );
    assert_eq!(set.status, 200, "{set:?}");
    assert_eq!(set.json()["hasSecret"], false);
    let entry = &daemon.config()["servers"]["login"];
    assert_eq!(entry["oauth_client_id"], "c2");
    assert_eq!(entry["oauth_redirect_uri"], "http://127.0.0.1:17999/cb");
    assert_eq!(entry["note"], "kept");
    let out = api.send("DELETE", "/v1/mcp/oauth?name=plain", None);
    assert_eq!(out.status, 400, "{out:?}");
}

/// The API served in this process with small limits, for the bounds.
async fn small_api(
    limits: Limits,
) -> (
    Api,
    Manager,
    tokio::sync::oneshot::Sender<()>,
    tempfile::TempDir,
) {
    agenvoy_mcp::unstable::become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let config =
        Config::parse(&json!({"servers": {"fx": fixture_entry(&[])}}).to_string()).unwrap();
    let manager = Manager::new(
        config,
        ManagerOptions::default().with_allowlist_path(dir.path().join("allow_tool")),
    )
    .await;
    manager.register_all();
    let token = ApiToken::new("a-test-token-that-is-long-enough").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    let options = ApiOptions {
        config_path: dir.path().join("mcp.json"),
        token: token.clone(),
        token_store: Arc::new(MemoryStore::new()),
        allow_remote: false,
        limits,
        requests: None,
        start_traces: false,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(api::serve(listener, manager.clone(), options, async {
        let _ = stopped.await;
    }));
    let api = Api {
        authority,
        token: token.expose().to_string(),
    };
    (api, manager, stop, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bounds_hold() {
    let limits = Limits {
        max_connections: 1,
        header_read_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_secs(1),
        max_body: 1024,
        ..Limits::default()
    };
    let (api, manager, stop, _dir) = small_api(limits).await;
    tokio::task::block_in_place(|| {
        // A request that passes its deadline is 504; its work goes on.
        let mut late = fixture_entry(&["--mode", "slow-start=2"]);
        late["name"] = json!("late");
        let slow = api.post("/v1/mcp", late);
        assert_eq!(slow.status, 504, "{slow:?}");
        assert!(slow.error().contains("the work goes on"));
        // A tool call is bounded by its server's own timeout, not by this deadline.
        let call = api.post(
            "/v1/mcp/call",
            json!({"name": "mcp__fx__slow", "arguments": {"seconds": 2}, "mode": "auto"}),
        );
        assert_eq!(call.status, 200, "{call:?}");

        // A body over the cap is refused even without Content-Length (chunked).
        let mut stream = TcpStream::connect(&api.authority).unwrap();
        let chunk = "x".repeat(800);
        write!(
            stream,
            "POST /v1/mcp/call HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
            api.authority, api.token, chunk.len(), chunk.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

        // A client that never finishes its headers holds the only connection until the
        // owner connects: then it is closed, and the owner served.
        let mut silent = TcpStream::connect(&api.authority).unwrap();
        silent
            .write_all(b"GET /v1/mcp/status HTTP/1.1\r\nHo")
            .unwrap();
        silent
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // The server has taken it in (its head is read) before the owner comes.
        std::thread::sleep(Duration::from_millis(100));
        let waited = api.send("GET", "/v1/mcp/status", None);
        assert_eq!(waited.status, 200);
        let mut rest = Vec::new();
        let read = silent.read_to_end(&mut rest);
        // Dropped with its head unread, the socket is reset rather than closed in order.
        let reset = read
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset);
        assert!(
            matches!(read, Ok(0)) || reset,
            "closed at once: {read:?} {rest:?}"
        );
        // One that never finishes its headers while nobody else comes is cut off after the
        // header timeout.
        let mut silent = TcpStream::connect(&api.authority).unwrap();
        silent
            .write_all(b"GET /v1/mcp/status HTTP/1.1\r\nHo")
            .unwrap();
        silent
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let started = Instant::now();
        let read = silent.read_to_end(&mut rest);
        let timed_out = read.as_ref().is_err_and(|e| {
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        });
        assert!(!timed_out, "closed (or reset), not timed out: {read:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    });
    let _ = stop.send(());
    manager.close().await;
}

/// `POST /v1/mcp/start`: a server made on demand is saved so, shown so by the status, stops
/// when idle with its tools still listed, and starts again at the next call; made to run
/// from launch again, its entry loses the members. Bad input is a 4xx and writes nothing.
#[test]
fn the_start_route_makes_a_server_run_on_demand() {
    let daemon = Daemon::start(Some(json!({"servers": {
        "a": fixture_entry(&[]),
        "b": fixture_entry(&[]),
    }})));
    let api = &daemon.api;
    let before = daemon.read("mcp.json");
    api.assert_refused(
        "/v1/mcp/start",
        &[
            (
                json!({"name": "nope", "start": "on_demand"}),
                404,
                "no server named",
            ),
            (json!({"name": "b", "start": "lazy"}), 400, "\"on_demand\""),
            (json!({"name": "b"}), 400, "needs \"start\""),
            (
                json!({"name": "b", "start": "on_demand", "idle_timeout": 0}),
                400,
                "idle_timeout",
            ),
            (
                json!({"name": "b", "start": "launch", "idle_timeout": 5}),
                400,
                "on_demand\" only",
            ),
        ],
    );
    assert_eq!(daemon.read("mcp.json"), before);

    let tools = api.tool_names().len();
    let lazy = json!({"name": "b", "start": "on_demand", "idle_timeout": 0.5});
    let answer = api.post("/v1/mcp/start", lazy);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["start"], "on_demand");
    assert_eq!(daemon.config()["servers"]["b"]["start"], "on_demand");
    assert_eq!(daemon.config()["servers"]["b"]["idle_timeout"], 0.5);
    let status = api.status_of("b");
    assert_eq!(
        (&status["start"], &status["idleTimeout"]),
        (&json!("on_demand"), &json!(0.5))
    );
    wait_until("b stopping when idle", Duration::from_secs(10), || {
        let state = api.status_of("b")["state"].clone();
        (state == "idle").then_some(()).ok_or(state.to_string())
    });
    assert_eq!(
        api.tool_names().len(),
        tools,
        "an idle server's tools stay listed"
    );
    assert!(daemon.path("catalogs/b.json").exists(), "its catalog kept");
    let call = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__b__echo", "arguments": {"text": "up"}, "mode": "auto"}),
    );
    assert_eq!(call.status, 200, "{call:?}");
    assert_eq!(call.json()["text"], "up");

    let eager = api.post("/v1/mcp/start", json!({"name": "b", "start": "launch"}));
    assert_eq!(eager.status, 200, "{eager:?}");
    assert_eq!(api.status_of("b")["state"], "connected");
    assert_eq!(api.status_of("b")["start"], "launch");
    let entry = &daemon.config()["servers"]["b"];
    assert!(
        entry.get("start").is_none() && entry.get("idle_timeout").is_none(),
        "{entry}"
    );
}

/// `POST /v1/mcp/enable` and `POST /v1/mcp/tools/visibility`: each change is saved to the
/// server's entry and shown by `GET /v1/mcp/tools` and the status; bad input is a 4xx with
/// a reason and writes nothing.
#[test]
fn enable_and_visibility_routes() {
    let daemon = Daemon::start(Some(json!({"servers": {
        "a": fixture_entry(&[]),
        "b": fixture_entry(&[]),
    }})));
    let api = &daemon.api;
    let hide = api.post(
        "/v1/mcp/tools/visibility",
        json!({"server": "a", "tool": "echo", "visible": false}),
    );
    assert_eq!(hide.status, 200, "{hide:?}");
    assert_eq!(
        hide.json(),
        json!({"server": "a", "enabled_tools": null, "disabled_tools": ["echo"]})
    );
    let tools = api.get("/v1/mcp/tools");
    assert_eq!(tools["tools"].as_array().unwrap().len(), 17);
    assert_eq!(tools["hidden"][0]["name"], json!("mcp__a__echo"));
    assert_eq!(tools["hidden"][0]["visible"], json!(false));
    assert_eq!(tools["tools"][0]["visible"], json!(true));
    assert_eq!(
        daemon.config()["servers"]["a"]["disabled_tools"],
        json!(["echo"])
    );
    let call = api.post(
        "/v1/mcp/call",
        json!({"name": "mcp__a__echo", "mode": "auto"}),
    );
    assert_eq!(call.status, 404, "{call:?}");
    let lists = api.post(
        "/v1/mcp/tools/visibility",
        json!({"server": "a", "enabled_tools": ["add*"]}),
    );
    assert_eq!(lists.status, 200, "{lists:?}");
    assert_eq!(api.tool_names().len(), 9 + 2);

    let before = daemon.read("mcp.json");
    api.assert_refused(
        "/v1/mcp/tools/visibility",
        &[
            (
                json!({"server": "nope", "visible": false}),
                404,
                "no server named",
            ),
            (
                json!({"server": "a", "disabled_tools": ["mcp__b__echo"]}),
                400,
                "reaches beyond",
            ),
            (
                json!({"server": "a", "enabled_tools": ["echo"], "disabled_tools": ["e*"]}),
                400,
                "hides every tool",
            ),
            (
                json!({"server": "a", "visible": "no"}),
                400,
                "true or false",
            ),
            (json!({"server": "a"}), 400, "needs"),
        ],
    );
    api.assert_refused(
        "/v1/mcp/enable",
        &[
            (
                json!({"name": "nope", "enabled": false}),
                404,
                "no server named",
            ),
            (json!({"name": "a"}), 400, "enabled"),
        ],
    );
    assert_eq!(daemon.read("mcp.json"), before);

    let off = api.post("/v1/mcp/enable", json!({"name": "b", "enabled": false}));
    assert_eq!(off.status, 200, "{off:?}");
    assert_eq!(api.status_of("b")["state"], json!("disabled"));
    assert_eq!(daemon.config()["servers"]["b"]["enabled"], json!(false));
    assert_eq!(api.tool_names().len(), 2);
    let on = api.post("/v1/mcp/enable", json!({"name": "b", "enabled": true}));
    assert_eq!(on.status, 200, "{on:?}");
    assert_eq!(api.status_of("b")["state"], json!("connected"));
    assert_eq!(api.tool_names().len(), 11);
}
