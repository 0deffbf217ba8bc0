//! No secret anywhere: canary secrets (literal and `$VAR` env values, header values, URL
//! query keys and a URL password, OAuth access and refresh tokens, client secrets from the
//! config, the token store, the API, the panel and the conformance context) configured, then
//! every command of the binary and every route of the management API run at every log level,
//! with calls that succeed and calls that fail (a crashing server, a missing command, a wrong
//! tool, a refused URL, an HTTP 500, refused tokens, a real OAuth login and logout). Nothing
//! they print, log, answer or write may hold a canary, raw, percent-encoded or in base64
//! (Basic auth carries `client_id:secret` so), except the token store, and the config file
//! for what the user wrote into it.
//!
//! The list of commands comes from `agenvoy-mcp --help` and the routes from the route table
//! of `src/api/mod.rs` and the headings of `docs/API.md`: a command or route added without a
//! run here fails this test.
// Signals the daemon it starts (SIGTERM): Unix only.
#![cfg(all(feature = "cli", unix))]

mod common;

use base64::Engine;
use common::py_oauth::{PyServer, raw_http};
use common::tmux::{Tmux, quoted};
use common::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

// The canaries. Each holds "CANARY"; those with `+`, `/` and `=` change when percent- or
// base64-encoded, so those forms are looked for too.
const ENV_LITERAL: &str = "CANARY-env-literal-4f1d";
/// The value of `$AGENVOY_TEST_SECRET`, which entries name as `${AGENVOY_TEST_SECRET}`.
const ENV_EXPANDED: &str = "CANARY-env-expanded-9a2c";
const ENV_CRASH: &str = "CANARY-env-crash-1b7e";
const ENV_NO_COMMAND: &str = "CANARY-env-nocommand-d3a0";
const HEADER: &str = "CANARY-header-x-api-key-77b0";
const HEADER_DOWN: &str = "CANARY-header-down-5c19";
const HEADER_500: &str = "CANARY-header-http500-e2f4";
const QUERY: &str = "CANARY-query-3e5a";
const QUERY_DOWN: &str = "CANARY-query-down-0d6b";
const QUERY_500: &str = "CANARY-query-http500-8f2c";
const PASSWORD: &str = "CANARY-password-c0de";
const PROXY_PASSWORD: &str = "CANARY-proxy-password-7d3e";
const ACCESS: &str = "CANARY-access-token-51aa";
const REFRESH: &str = "CANARY-refresh-token-8b7e";
const STORED_CLIENT_SECRET: &str = "CANARY+stored/client=secret-62f0";
const CONFIG_CLIENT_SECRET: &str = "CANARY+config/client=secret-19c4";
const API_CLIENT_SECRET: &str = "CANARY+api/client=secret-a3d9";
const API_ENV: &str = "CANARY-api-added-env-0b3f";
const API_HEADER: &str = "CANARY-api-added-header-7e21";
const API_QUERY: &str = "CANARY-api-added-query-4c88";
const PANEL_ENV: &str = "CANARY-panel-typed-env-6a5d";
const PANEL_HEADER: &str = "CANARY-panel-typed-header-93b1";
const PANEL_CLIENT_SECRET: &str = "CANARY+panel/client=secret-2e7f";
const CONFORMANCE_SECRET: &str = "CANARY+conformance/secret-5d21";

/// Secrets that never belong in `mcp.json` either: the user wrote them elsewhere (the
/// environment, the token store, the API's client route, the panel's client form).
const NEVER_IN_CONFIG: &[&str] = &[
    ENV_EXPANDED,
    ACCESS,
    REFRESH,
    STORED_CLIENT_SECRET,
    API_CLIENT_SECRET,
    PANEL_CLIENT_SECRET,
    CONFORMANCE_SECRET,
];

/// The canaries written into config entries, the API or the panel.
const IN_CONFIG: &[&str] = &[
    ENV_LITERAL,
    ENV_CRASH,
    ENV_NO_COMMAND,
    HEADER,
    HEADER_DOWN,
    HEADER_500,
    QUERY,
    QUERY_DOWN,
    QUERY_500,
    PASSWORD,
    PROXY_PASSWORD,
    CONFIG_CLIENT_SECRET,
    API_ENV,
    API_HEADER,
    API_QUERY,
    PANEL_ENV,
    PANEL_HEADER,
];

/// The commands `--help` lists that this test runs (`help` itself aside; the hidden
/// `fixture-server` is the demo server; the servers here are `agenvoy-mcp-fixture`).
const COMMANDS: &[&str] = &[
    "serve",
    "tui",
    "tools",
    "call",
    "login",
    "probe",
    "check",
    "conformance",
];

/// The servers every run shares.
struct Shared {
    /// The HTTP fixture (`json` mode).
    http: HttpFixture,
    /// A loopback URL where nothing listens.
    closed: String,
    /// A server answering every request with HTTP 500.
    broken: String,
    /// The strict OAuth server, if installed.
    py: Option<PyOAuth>,
}

/// The Python OAuth server and what a seeded store needs of it.
struct PyOAuth {
    server: PyServer,
    issuer: String,
    token_endpoint: String,
    registration_endpoint: Option<String>,
}

/// Everything one level's run saw, and the secrets it must not hold.
#[derive(Default)]
struct Seen {
    /// (where, bytes).
    blobs: Vec<(String, Vec<u8>)>,
    /// Secrets learned while running (tokens and clients the OAuth server issued, the API
    /// token).
    learned: Vec<String>,
    /// Commands run, by name.
    commands: BTreeSet<String>,
    /// Routes answered, as `METHOD /path`.
    routes: BTreeSet<String>,
}

impl Seen {
    fn add(&mut self, what: impl Into<String>, bytes: &[u8]) {
        self.blobs.push((what.into(), bytes.to_vec()));
    }

    fn text(&self) -> String {
        let mut all = String::new();
        for (_, bytes) in &self.blobs {
            all.push_str(&String::from_utf8_lossy(bytes));
        }
        all
    }
}

/// The forms a secret takes on its way out: as it is, percent-encoded, JSON-escaped, and
/// the part of its base64 (standard or URL-safe) that is the same wherever it starts.
fn forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string(), secret.replace('/', "\\/")];
    let mut percent = String::new();
    for b in secret.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            percent.push(b as char);
        } else {
            percent.push_str(&format!("%{b:02X}"));
        }
    }
    forms.push(percent.clone());
    forms.push(percent.to_ascii_lowercase());
    for pad in 0..3 {
        let mut bytes = vec![b'.'; pad];
        bytes.extend(secret.bytes());
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        // Only the groups of three bytes that are all the secret's.
        let first = pad.div_ceil(3);
        let last = bytes.len() / 3;
        if last > first + 1 {
            let piece = &encoded[4 * first..4 * last];
            forms.push(piece.to_string());
            forms.push(piece.replace('+', "-").replace('/', "_"));
        }
    }
    forms.sort();
    forms.dedup();
    forms
}

/// Every leak in `seen`: where, which secret, and the text around it.
fn leaks(seen: &Seen, secrets: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let all_forms: Vec<(String, String)> = secrets
        .iter()
        .flat_map(|s| forms(s).into_iter().map(move |f| (s.clone(), f)))
        .collect();
    for (what, bytes) in &seen.blobs {
        let text = String::from_utf8_lossy(bytes);
        let mut hits: Vec<(usize, String)> = all_forms
            .iter()
            .filter_map(|(secret, form)| text.find(form.as_str()).map(|at| (at, secret.clone())))
            .collect();
        // Any canary at all, however else it was changed.
        if hits.is_empty()
            && let Some(at) = text.find("CANARY")
        {
            hits.push((at, "a canary".into()));
        }
        for (at, secret) in hits {
            let mut start = at.saturating_sub(120);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (at + 120).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            found.push(format!("{what}: {secret} in ...{:?}...", &text[start..end]));
        }
    }
    found
}

// The config.

/// A proxy URL with [`PROXY_PASSWORD`] at the authority of `closed` (nothing listens).
fn proxy_with_password(closed: &str) -> String {
    let authority = closed
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    format!("http://user:{PROXY_PASSWORD}@{authority}")
}

fn config(shared: &Shared) -> Value {
    let mut local = fixture_entry(&[]);
    local["env"] = json!({"TOKEN": ENV_LITERAL, "EXPANDED": "${AGENVOY_TEST_SECRET}"});
    let mut crash = fixture_entry(&["--mode", "crash-at-start"]);
    crash["env"] = json!({"TOKEN": ENV_CRASH});
    let closed = &shared.closed;
    let mut servers = json!({
        "local": local,
        "crash": crash,
        "nocommand": {"command": "/nonexistent/mcp-server", "env": {"TOKEN": ENV_NO_COMMAND}},
        "remote": {"url": format!("{}?api_key={QUERY}", shared.http.url),
                   "headers": {"X-Api-Key": HEADER, "Authorization": "Bearer ${AGENVOY_TEST_SECRET}"}},
        "down": {"url": format!("{closed}?api_key={QUERY_DOWN}&x=1"),
                 "headers": {"X-Api-Key": HEADER_DOWN}},
        "broken": {"url": format!("{}?key={QUERY_500}", shared.broken),
                   "headers": {"Authorization": format!("Bearer {HEADER_500}")}},
        "userinfo": {"url": closed.replace("http://", &format!("http://user:{PASSWORD}@"))},
        // A proxy with credentials that refuses connections: the error names the proxy.
        "proxied": {"url": shared.http.url, "proxy": proxy_with_password(closed)},
    });
    if let Some(py) = &shared.py {
        let url = &py.server.url;
        // Tokens seeded in the store: refused, then refreshed with the seeded client.
        servers["py"] = json!({"url": url, "auth": "oauth"});
        servers["pyseed"] = json!({"url": url, "auth": "oauth"});
        // A pre-registered client the authorization server does not know.
        servers["pyconf"] = json!({"url": url, "auth": "oauth", "oauth_client_id": "pre-conf",
                                   "oauth_client_secret": CONFIG_CLIENT_SECRET});
    }
    json!({ "servers": servers })
}

/// One level's home: `HOME` (the config in `~/.config/agenvoy`), no keychain reachable, so
/// the token store is `~/.config/agenvoy/oauth-tokens.json`.
struct Home {
    dir: tempfile::TempDir,
    level: &'static str,
}

impl Home {
    fn new(level: &'static str, shared: &Shared) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = Home { dir, level };
        std::fs::create_dir_all(home.config_dir()).unwrap();
        std::fs::create_dir_all(home.dir.path().join("run")).unwrap();
        std::fs::write(home.config_path(), config(shared).to_string()).unwrap();
        home
    }

    fn config_dir(&self) -> PathBuf {
        self.dir.path().join(".config/agenvoy")
    }

    fn config_path(&self) -> PathBuf {
        self.config_dir().join("mcp.json")
    }

    fn store_path(&self) -> PathBuf {
        self.config_dir().join("oauth-tokens.json")
    }

    /// The binary with this home, the level and the canary variable, and nothing else of
    /// this process's environment (no session bus: no keychain).
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary());
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"))
            .env("AGENVOY_LOG", self.level)
            .env("AGENVOY_TEST_SECRET", ENV_EXPANDED)
            .stdin(Stdio::null());
        command
    }

    /// Runs a command to its end; records its output.
    /// Runs the binary with `args`; asserts it exited with `status` (a command that dies
    /// early must not pass for one that leaked nothing).
    fn run(
        &self,
        seen: &mut Seen,
        args: &[&str],
        extra_env: &[(&str, &str)],
        status: i32,
    ) -> Output {
        let output = self
            .command(args)
            .envs(extra_env.iter().copied())
            .output()
            .expect("run the binary");
        seen.commands.insert(args[0].to_string());
        let what = format!("AGENVOY_LOG={} {args:?}", self.level);
        seen.add(format!("{what} stdout"), &output.stdout);
        seen.add(format!("{what} stderr"), &output.stderr);
        assert_eq!(
            output.status.code(),
            Some(status),
            "{what}: exit status\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Writes the store: the seeded canary tokens for `servers`, and the seeded client.
    fn seed(&self, shared: &Shared, servers: &[&str]) {
        let mut store = serde_json::Map::new();
        let current: Value = std::fs::read(self.store_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(json!({}));
        if let Some(current) = current.as_object() {
            store.extend(current.clone());
        }
        let Some(py) = &shared.py else { return };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        for server in servers {
            let tokens = json!({"server_url": py.server.url, "access_token": ACCESS,
                "refresh_token": REFRESH, "expires_at": now + 3600, "issuer": py.issuer,
                "token_endpoint": py.token_endpoint, "resource": py.server.url});
            store.insert(format!("tokens:{server}"), tokens.to_string().into());
        }
        let client_key = format!("client:{}", py.issuer.trim_end_matches('/'));
        if !store.contains_key(&client_key) {
            let client = json!({"issuer": py.issuer, "client_id": "seeded-client",
                "client_secret": STORED_CLIENT_SECRET,
                "token_endpoint_auth_method": "client_secret_basic",
                "redirect_uris": ["http://localhost:17988/callback"],
                "token_endpoint": py.token_endpoint,
                "registration_endpoint": py.registration_endpoint});
            store.insert(client_key, client.to_string().into());
        }
        std::fs::write(self.store_path(), Value::Object(store).to_string()).unwrap();
    }

    /// Takes the seeded client out of the store.
    fn forget_seeded_client(&self, shared: &Shared) {
        let Some(py) = &shared.py else { return };
        let mut store: Value =
            serde_json::from_slice(&std::fs::read(self.store_path()).unwrap()).unwrap();
        let key = format!("client:{}", py.issuer.trim_end_matches('/'));
        store.as_object_mut().unwrap().remove(&key);
        std::fs::write(self.store_path(), store.to_string()).unwrap();
    }

    /// Every secret the store holds now (what the OAuth server issued, what was seeded).
    fn stored_secrets(&self) -> Vec<String> {
        let store: Value = std::fs::read(self.store_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(json!({}));
        let mut secrets = Vec::new();
        for (key, value) in store.as_object().into_iter().flatten() {
            let value = value.as_str().unwrap_or_default();
            let Ok(parsed) = serde_json::from_str::<Value>(value) else {
                // client_secret:<server> holds the secret as it is.
                secrets.push(value.to_string());
                continue;
            };
            for member in ["access_token", "refresh_token", "client_secret"] {
                if let Some(s) = parsed[member].as_str() {
                    secrets.push(s.to_string());
                }
            }
            let _ = key;
        }
        secrets.retain(|s| s.len() >= 8);
        secrets
    }

    /// Every file under the home but the token store, for the scan; `mcp.json` apart.
    fn files(&self) -> (Vec<(String, Vec<u8>)>, String) {
        let mut files = Vec::new();
        let mut config = String::new();
        let mut pending = vec![self.dir.path().to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    pending.push(path);
                } else if path == self.store_path()
                    || path.ends_with("api-token")
                    || !kind.is_file()
                {
                    continue;
                } else if path == self.config_path() {
                    config = std::fs::read_to_string(&path).unwrap();
                } else {
                    let what = format!("AGENVOY_LOG={} file {}", self.level, path.display());
                    files.push((what, std::fs::read(&path).unwrap_or_default()));
                }
            }
        }
        (files, config)
    }
}

// The shared servers.

fn json_of(authority: &str, target: &str) -> Value {
    let (head, body) = raw_http(authority, "GET", target);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{target}: {e}: {head}\n{body}"))
}

fn start_py() -> Option<PyOAuth> {
    let server = PyServer::start()?;
    let authority = server.authority();
    let resource = json_of(&authority, "/.well-known/oauth-protected-resource/mcp");
    let issuer = resource["authorization_servers"][0]
        .as_str()
        .expect("an authorization server")
        .to_string();
    let issuer_authority = issuer
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let meta = json_of(&issuer_authority, "/.well-known/oauth-authorization-server");
    Some(PyOAuth {
        issuer,
        token_endpoint: meta["token_endpoint"].as_str().unwrap().to_string(),
        registration_endpoint: meta["registration_endpoint"].as_str().map(str::to_string),
        server,
    })
}

/// OAuth logins bind the callback port 17988: one at a time in this process.
static LOGIN: Mutex<()> = Mutex::new(());

// The commands.

/// Every command but `serve` and `tui`, with the seeded canary tokens met by each.
fn run_commands(home: &Home, shared: &Shared, seen: &mut Seen) {
    let config = home.config_path();
    let config = config.to_str().unwrap();
    let fixture = fixture_binary();
    let remote = format!("{}?api_key={QUERY}", shared.http.url);
    let down = format!("{}?api_key={QUERY_DOWN}&x=1", shared.closed);
    let broken = format!("{}?key={QUERY_500}", shared.broken);
    let userinfo = shared
        .closed
        .replace("http://", &format!("http://user:{PASSWORD}@"));
    let call = |tool: &'static str, args: &'static str| -> Vec<String> {
        ["call", "--timeout", "20", "--yes", tool, args]
            .map(String::from)
            .to_vec()
    };
    let proxied = vec![
        "probe".into(),
        "--proxy".into(),
        proxy_with_password(&shared.closed),
        remote.clone(),
    ];
    // Each with the exit status it must end with.
    let mut commands: Vec<(i32, Vec<String>)> = vec![
        // Some servers fail: exit 3.
        (3, vec!["tools".into()]),
        (
            3,
            vec![
                "tools".into(),
                "--json".into(),
                "--config".into(),
                config.into(),
            ],
        ),
        (
            0,
            call("mcp__local__echo", r#"{"text":"hi","stderr":true}"#),
        ),
        (1, call("mcp__local__nosuchtool", "{}")),
        (0, call("mcp__remote__echo", r#"{"text":"hi"}"#)),
        (1, call("mcp__down__echo", "{}")),
        (1, call("mcp__py__whoami", "{}")),
        (
            1,
            vec!["login".into(), "--no-browser".into(), "down".into()],
        ),
        (
            0,
            vec![
                "probe".into(),
                "--json".into(),
                "--call".into(),
                "echo".into(),
                "--args".into(),
                r#"{"text":"hi"}"#.into(),
                remote.clone(),
            ],
        ),
        (
            1,
            vec![
                "probe".into(),
                "--call".into(),
                "nosuchtool".into(),
                remote.clone(),
            ],
        ),
        (1, vec!["probe".into(), down.clone()]),
        (0, vec!["check".into(), remote.clone()]),
        (
            1,
            vec!["check".into(), "--format".into(), "junit".into(), down],
        ),
        (1, vec!["probe".into(), "--json".into(), broken.clone()]),
        (1, vec!["probe".into(), userinfo]),
        (1, proxied),
        (
            0,
            vec![
                "probe".into(),
                "--inherit-env".into(),
                "--call".into(),
                "echo".into(),
                "--args".into(),
                r#"{"text":"hi","stderr":true}"#.into(),
                "--".into(),
                fixture,
            ],
        ),
    ];
    if let Some(py) = &shared.py {
        commands.push((1, vec!["probe".into(), py.server.url.clone()]));
    }
    for (status, args) in &commands {
        // Every command meets the canary tokens (a refused refresh drops them).
        home.seed(shared, &["py", "pyseed"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        home.run(seen, &args, &[], *status);
    }
    // The conformance client: a clean run with a secret query, then client credentials with
    // a secret from the context.
    let remote = format!("{}?api_key={QUERY}", shared.http.url);
    home.run(
        seen,
        &["conformance", &remote],
        &[("MCP_CONFORMANCE_SCENARIO", "initialize")],
        0,
    );
    let context = json!({"client_id": "cc", "client_secret": CONFORMANCE_SECRET}).to_string();
    let target = shared
        .py
        .as_ref()
        .map_or(broken.clone(), |py| py.server.url.clone());
    home.run(
        seen,
        &["conformance", &target],
        &[
            ("MCP_CONFORMANCE_SCENARIO", "auth/client-credentials-basic"),
            ("MCP_CONFORMANCE_CONTEXT", &context),
        ],
        1,
    );
    if shared.py.is_some() {
        login_by_paste(home, seen);
        // With real tokens now: a call that succeeds, and the list.
        home.run(seen, &["call", "--yes", "mcp__py__whoami"], &[], 0);
        home.run(seen, &["tools", "--json"], &[], 3);
        seen.learned.extend(home.stored_secrets());
    }
}

/// `login py` completed by pasting the URL the browser ended on into its stdin.
fn login_by_paste(home: &Home, seen: &mut Seen) {
    let _one = LOGIN.lock().unwrap_or_else(|e| e.into_inner());
    // A fresh login: no seeded client to try.
    std::fs::write(home.store_path(), "{}").unwrap();
    let mut child = KillOnDrop(
        home.command(&["login", "--no-browser", "py"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let drain = |mut from: Box<dyn Read + Send>| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let into = buffer.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = from.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                into.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        buffer
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let url = wait_until("login prints its URL", Duration::from_secs(30), || {
        let text = String::from_utf8_lossy(&stdout.lock().unwrap()).into_owned()
            + &String::from_utf8_lossy(&stderr.lock().unwrap());
        text.split_whitespace()
            .find(|w| w.starts_with("http://") && w.contains("code_challenge="))
            .map(str::to_string)
            .ok_or(text)
    });
    let location = redirect_of(&url);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{location}").unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(40))
        .unwrap_or_else(|| panic!("login did not end"));
    drop(stdin);
    std::thread::sleep(Duration::from_millis(100));
    let out = stdout.lock().unwrap().clone();
    let err = stderr.lock().unwrap().clone();
    assert!(
        status.success(),
        "login py: {}{}",
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&err)
    );
    seen.commands.insert("login".into());
    let what = format!("AGENVOY_LOG={} login py (pasted)", home.level);
    seen.add(format!("{what} stdout"), &out);
    seen.add(format!("{what} stderr"), &err);
}

/// A child process killed (and reaped) if the test fails while it runs.
struct KillOnDrop(std::process::Child);

impl std::ops::Deref for KillOnDrop {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// The panel, in a real terminal.

/// `tui` in tmux: every server opened, with its instructions and its client screen (OAuth
/// servers; a warning for others), a stdio server with a secret env value and an OAuth one
/// with a secret header added through the wizard, a client secret typed, then `q`. What it
/// drew (every byte, through `pipe-pane`), each screen seen, and its log are recorded.
fn run_panel(home: &Home, _shared: &Shared, seen: &mut Seen) {
    let dir = home.dir.path();
    let store = home.store_path();
    let mut names: Vec<String> = config_servers(home);
    names.sort();
    let command = format!(
        "sleep 0.5; env -i PATH={path} HOME={home} XDG_RUNTIME_DIR={run} AGENVOY_LOG={level} AGENVOY_TEST_SECRET={secret} {binary} tui --no-browser --token-file {store} 2> {log}; echo $? > {exit}; sleep 60",
        path = quoted(Path::new(&std::env::var("PATH").unwrap_or_default())),
        home = quoted(dir),
        run = quoted(&dir.join("run")),
        level = home.level,
        secret = ENV_EXPANDED,
        binary = quoted(Path::new(&binary())),
        store = quoted(&store),
        log = quoted(&dir.join("panel.log")),
        exit = quoted(&dir.join("exit")),
    );
    let Some(tmux) = Tmux::start(dir, &command) else {
        // Not run, and not counted as run: the skip was said (and fails when required).
        return;
    };
    let drawn = dir.join("panel.screen");
    tmux.run(&["pipe-pane", "-o", &format!("cat >> {}", quoted(&drawn))]);
    let mut screens = String::new();
    screens.push_str(&tmux.wait_for("TRANSPORT"));
    // Escape until the list is back (one key at a time: Escape and a next key read
    // together would be one Alt key).
    let to_list = |tmux: &Tmux| {
        wait_until("the list", Duration::from_secs(30), || {
            let screen = tmux.screen();
            if screen.contains("Enter open") {
                return Ok(());
            }
            tmux.keys(&["Escape"]);
            std::thread::sleep(Duration::from_millis(200));
            Err(screen)
        })
    };
    for (i, name) in names.iter().enumerate() {
        screens.push_str(&tmux.wait_for(&format!("› {name} ")));
        press(&tmux, &["Enter"]);
        screens.push_str(&tmux.wait_for("last error"));
        press(&tmux, &["i"]);
        screens.push_str(&tmux.wait_for("instructions ─"));
        tmux.keys(&["Escape"]);
        screens.push_str(&tmux.wait_for("last error"));
        press(&tmux, &["c"]);
        let screen = wait_until("the client screen", Duration::from_secs(30), || {
            let screen = tmux.screen();
            if screen.contains("Client id") || screen.contains("does not log in") {
                Ok(screen)
            } else {
                Err(screen)
            }
        });
        screens.push_str(&screen);
        to_list(&tmux);
        if i + 1 < names.len() {
            press(&tmux, &["Down"]);
        }
    }
    // The wizard: a stdio server with a secret env value, an HTTP one with a secret header.
    press(&tmux, &["a"]);
    typed(&tmux, "zz-local");
    press(&tmux, &["Enter", "Enter"]);
    typed(&tmux, &fixture_binary());
    press(&tmux, &["Enter", "Enter"]);
    typed(&tmux, &format!("TOKEN={PANEL_ENV}"));
    press(&tmux, &["Enter", "Enter", "Enter"]);
    screens.push_str(&tmux.wait_for("Enter saves"));
    press(&tmux, &["Enter"]);
    screens.push_str(&tmux.wait_for("› zz-local "));
    press(&tmux, &["a"]);
    typed(&tmux, "zz-web");
    press(&tmux, &["Enter", "Down", "Enter"]);
    typed(&tmux, "http://127.0.0.1:9/mcp");
    press(&tmux, &["Enter"]);
    typed(&tmux, &format!("X-Api-Key: {PANEL_HEADER}"));
    press(&tmux, &["Enter", "Enter", "Down", "Enter", "Enter"]);
    screens.push_str(&tmux.wait_for("Enter saves"));
    press(&tmux, &["Enter"]);
    screens.push_str(&tmux.wait_for("› zz-web "));
    // Its client, with a secret typed.
    press(&tmux, &["Enter"]);
    screens.push_str(&tmux.wait_for("last error"));
    press(&tmux, &["c"]);
    screens.push_str(&tmux.wait_for("Client id"));
    press(&tmux, &["C-u"]);
    typed(&tmux, "panel-client");
    press(&tmux, &["Enter"]);
    typed(&tmux, PANEL_CLIENT_SECRET);
    press(&tmux, &["Enter", "Enter"]);
    screens.push_str(&tmux.wait_for("is saved"));
    to_list(&tmux);
    press(&tmux, &["q"]);
    wait_until("the panel exited", Duration::from_secs(30), || {
        let exit = read_in(dir, "exit");
        if exit.is_empty() {
            Err(tmux.screen())
        } else {
            Ok(())
        }
    });
    assert_eq!(read_in(dir, "exit").trim(), "0", "tui's exit status");
    seen.commands.insert("tui".into());
    let what = format!("AGENVOY_LOG={} tui", home.level);
    seen.add(format!("{what} screens"), screens.as_bytes());
    let bytes = std::fs::read(&drawn).unwrap_or_default();
    seen.add(
        format!("{what} drawn, escapes stripped"),
        strip_escapes(&bytes).as_bytes(),
    );
    // The typed secrets were kept where they belong.
    let saved = std::fs::read_to_string(home.config_path()).unwrap();
    assert!(
        saved.contains(PANEL_ENV) && saved.contains(PANEL_HEADER),
        "{saved}"
    );
    let stored = std::fs::read_to_string(&store).unwrap_or_default();
    assert!(stored.contains("client_secret:zz-web"), "{stored}");
}

/// Sends `keys` (tmux names) at once: callers wait for the screen they lead to, and none is
/// Escape (an Escape read together with the next key is one Alt key).
fn press(tmux: &Tmux, keys: &[&str]) {
    assert!(!keys.contains(&"Escape"));
    let mut args = vec!["send-keys"];
    args.extend(keys);
    tmux.run(&args);
}

/// Types `text` as it is.
fn typed(tmux: &Tmux, text: &str) {
    tmux.run(&["send-keys", "-l", "--", text]);
}

/// The names of the servers in the config.
fn config_servers(home: &Home) -> Vec<String> {
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(home.config_path()).unwrap()).unwrap();
    config["servers"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// The text of terminal output without its escape sequences.
fn strip_escapes(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.next_if_eq(&'[').is_some() {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

// The daemon and its API.

/// `serve` on a free port with this home; its log in a file of the home.
struct Daemon {
    server: Listening,
    authority: String,
    token: String,
}

impl Daemon {
    fn start(home: &Home) -> Daemon {
        let store = home.store_path();
        let mut command = home.command(&[
            "serve",
            "--timeout",
            "20",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            store.to_str().unwrap(),
        ]);
        command.stderr(std::fs::File::create(home.dir.path().join("daemon.log")).unwrap());
        let server = Listening::start_keeping_stderr(command);
        let authority = server.url.strip_prefix("http://").unwrap().to_string();
        let token = std::fs::read_to_string(home.config_dir().join("api-token")).unwrap();
        Daemon {
            server,
            authority,
            token,
        }
    }

    /// Sends one request (HTTP/1.1, with the token, `Connection: close`) on a new connection.
    fn open(&self, method: &str, target: &str, body: &str) -> TcpStream {
        let mut stream = TcpStream::connect(&self.authority).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let content_type = if body.is_empty() {
            ""
        } else {
            "Content-Type: application/json\r\n"
        };
        write!(
            stream,
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n{content_type}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.authority,
            self.token,
            body.len()
        )
        .unwrap();
        stream
    }

    /// One request; records the whole answer.
    fn request(
        &self,
        seen: &mut Seen,
        method: &str,
        target: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut stream = self.open(method, target, &body);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        seen.add(format!("{method} {target} {body}"), &answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, text) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP answer to {method} {target}: {answer:?}"));
        let path = target.split('?').next().unwrap();
        let path = match path.strip_prefix("/v1/mcp/requests/") {
            Some(_) => "/v1/mcp/requests/{id}",
            None => path,
        };
        let error_type =
            serde_json::from_str::<Value>(text).unwrap_or(Value::Null)["error"]["type"].clone();
        if !(status == 405
            || status == 404 && error_type == "not_found" && text.contains("no route"))
        {
            seen.routes.insert(format!("{method} {path}"));
        }
        (status, serde_json::from_str(text).unwrap_or(Value::Null))
    }

    /// A login through the stream, completed by pasting back where the browser ended.
    fn login(&self, seen: &mut Seen, name: &str) {
        let _one = LOGIN.lock().unwrap_or_else(|e| e.into_inner());
        let stream = self.open("GET", &format!("/v1/mcp/oauth?name={name}"), "");
        let mut reader = BufReader::new(stream);
        let mut streamed = Vec::new();
        let mut url = None;
        let mut line = String::new();
        while url.is_none() && reader.read_line(&mut line).unwrap() > 0 {
            streamed.extend_from_slice(line.as_bytes());
            if let Some(data) = line.strip_prefix("data: ") {
                let event: Value = serde_json::from_str(data.trim()).unwrap();
                url = Some(event["url"].as_str().expect("the URL first").to_string());
            }
            line.clear();
        }
        let url = url.unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&streamed)));
        seen.routes.insert("GET /v1/mcp/oauth".into());
        let location = redirect_of(&url);
        let (status, _) = self.request(
            seen,
            "POST",
            "/v1/mcp/oauth/callback",
            Some(json!({"name": name, "url": location})),
        );
        let _ = reader.read_to_end(&mut streamed);
        let text = String::from_utf8_lossy(&streamed).into_owned();
        seen.add(format!("GET /v1/mcp/oauth?name={name}"), &streamed);
        assert_eq!(status, 200, "{text}");
        assert!(text.contains(r#"{"done":true,"ok":true}"#), "{text}");
    }

    /// The event stream, with a server's question on it answered by id while the call that
    /// asked waits.
    fn question(&self, seen: &mut Seen) {
        let mut events = BufReader::new(self.open("GET", "/v1/mcp/events", ""));
        let ask = json!({"name": "mcp__local__client_request", "mode": "auto", "arguments": {
            "method": "elicitation/create",
            "params": {"message": "Your name?", "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string"}}}}}})
        .to_string();
        let mut streamed = Vec::new();
        let answer = std::thread::scope(|scope| {
            let call = scope.spawn(|| {
                let mut answer = Vec::new();
                let _ = self
                    .open("POST", "/v1/mcp/call", &ask)
                    .read_to_end(&mut answer);
                answer
            });
            let mut id = None;
            let mut line = String::new();
            while id.is_none() && events.read_line(&mut line).unwrap() > 0 {
                streamed.extend_from_slice(line.as_bytes());
                if let Some(data) = line.strip_prefix("data: ") {
                    let event: Value = serde_json::from_str(data.trim()).unwrap();
                    if event["type"] == "request" {
                        id = event["id"].as_str().map(str::to_string);
                    }
                }
                line.clear();
            }
            let id = id.unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&streamed)));
            let (status, whole) =
                self.request(seen, "GET", &format!("/v1/mcp/requests/{id}"), None);
            assert_eq!(status, 200, "{whole}");
            let (status, answered) = self.request(
                seen,
                "POST",
                &format!("/v1/mcp/requests/{id}"),
                Some(json!({"action": "accept", "content": {"name": "Ada"}})),
            );
            assert_eq!(status, 200, "{answered}");
            call.join().unwrap()
        });
        seen.add(format!("POST /v1/mcp/call {ask}"), &answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(answer.contains("Ada"), "{answer}");
        seen.add("GET /v1/mcp/events", &streamed);
        seen.routes.insert("GET /v1/mcp/events".into());
        seen.routes.insert("POST /v1/mcp/call".into());
    }

    /// SIGTERM, then its exit.
    fn stop(mut self) {
        // SAFETY: a plain signal to the daemon this test started.
        unsafe { libc::kill(self.server.pid() as i32, libc::SIGTERM) };
        let status = self.server.wait_exit(Duration::from_secs(10));
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
    }
}

/// Every route, with answers that succeed and answers that fail.
fn run_api(home: &Home, shared: &Shared, seen: &mut Seen) {
    if shared.py.is_some() {
        home.seed(shared, &["pyseed"]);
    }
    let daemon = Daemon::start(home);
    seen.commands.insert("serve".into());
    seen.learned.push(daemon.token.trim().to_string());
    let api = |seen: &mut Seen, method: &str, target: &str, body: Option<Value>| {
        daemon.request(seen, method, target, body)
    };
    let remote = format!("{}?api_key={API_QUERY}", shared.http.url);
    let mut added_local = fixture_entry(&[]);
    added_local["name"] = json!("added");
    added_local["env"] = json!({"TOKEN": API_ENV, "REF": "${AGENVOY_TEST_SECRET}"});
    let requests: Vec<(&str, &str, Option<Value>, u16)> = vec![
        ("GET", "/v1/mcp", None, 200),
        ("GET", "/v1/mcp/status", None, 200),
        ("GET", "/v1/mcp/tools", None, 200),
        ("POST", "/v1/mcp", Some(added_local), 201),
        (
            "POST",
            "/v1/mcp",
            Some(json!({"name": "addedweb", "url": remote, "headers": {"X-Api-Key": API_HEADER}})),
            201,
        ),
        (
            "POST",
            "/v1/mcp",
            Some(
                json!({"name": "addeddown", "url": format!("{}?api_key={API_QUERY}", shared.closed),
                        "headers": {"Authorization": format!("Bearer {API_HEADER}")}}),
            ),
            201,
        ),
        (
            "POST",
            "/v1/mcp",
            Some(json!({"name": "local", "command": "x", "env": {"TOKEN": API_ENV}})),
            409,
        ),
        (
            "POST",
            "/v1/mcp",
            Some(json!({"name": "bad", "command": "x", "url": remote,
                        "headers": {"X-Api-Key": API_HEADER}, "env": {"TOKEN": API_ENV}})),
            400,
        ),
        (
            "POST",
            "/v1/mcp",
            Some(json!({"name": "bad2", "url": format!("ftp://h/?k={API_QUERY}")})),
            400,
        ),
        ("GET", "/v1/mcp", None, 200),
        ("GET", "/v1/mcp/status", None, 200),
        ("GET", "/v1/mcp/tools", None, 200),
        (
            "POST",
            "/v1/mcp/call",
            Some(
                json!({"name": "mcp__local__echo", "arguments": {"text": "hi", "stderr": true}, "mode": "auto"}),
            ),
            200,
        ),
        (
            "POST",
            "/v1/mcp/call",
            Some(
                json!({"name": "mcp__addedweb__echo", "arguments": {"text": "hi"}, "mode": "auto"}),
            ),
            200,
        ),
        (
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__remote__fail", "mode": "auto"})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__local__echo", "arguments": {"text": "hi"}})),
            403,
        ),
        (
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__down__echo", "mode": "auto"})),
            503,
        ),
        (
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__local__nosuchtool", "mode": "auto"})),
            404,
        ),
        ("POST", "/v1/mcp/reconnect", Some(json!({})), 200),
        (
            "POST",
            "/v1/mcp/reconnect",
            Some(json!({"name": "down"})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/reconnect",
            Some(json!({"name": "broken"})),
            200,
        ),
        ("GET", "/v1/allowlist", None, 200),
        (
            "POST",
            "/v1/allowlist",
            Some(json!({"tool": {"prefix": "mcp__local__", "entries": ["mcp__local__echo"]}})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__local__echo", "arguments": {"text": "hi"}})),
            200,
        ),
        ("DELETE", "/v1/mcp/oauth?name=down", None, 400),
        ("DELETE", "/v1/mcp/oauth?name=nope", None, 404),
        (
            "POST",
            "/v1/mcp/oauth/callback",
            Some(json!({"name": "down", "url": "http://localhost:17988/callback?code=c&state=s"})),
            404,
        ),
        ("GET", "/v1/mcp/oauth?name=down", None, 400),
        ("GET", "/v1/mcp/tools/search?q=echo&limit=3", None, 200),
        ("GET", "/v1/mcp/tools/offered?conversation=c1", None, 200),
        (
            "POST",
            "/v1/mcp/tools/visibility",
            Some(json!({"server": "local", "tool": "env", "visible": false})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/start",
            Some(json!({"name": "down", "start": "on_demand"})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/enable",
            Some(json!({"name": "down", "enabled": false})),
            200,
        ),
        ("GET", "/v1/mcp/resources?name=local", None, 200),
        (
            "GET",
            "/v1/mcp/resource?name=local&uri=fixture://readme",
            None,
            200,
        ),
        ("GET", "/v1/mcp/skills?name=local", None, 200),
        ("GET", "/v1/mcp/skill?name=local&uri=greeting", None, 404),
        (
            "GET",
            "/v1/mcp/ui?name=local&uri=ui://fixture/clock.html",
            None,
            200,
        ),
        ("GET", "/v1/mcp/prompts?name=local", None, 200),
        (
            "POST",
            "/v1/mcp/prompt",
            Some(json!({"name": "local", "prompt": "greet", "arguments": {"name": "Ada"}})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/complete",
            Some(json!({"name": "local", "prompt": "greet", "argument": "name", "value": "A"})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/subscribe",
            Some(json!({"name": "local", "uri": "fixture://readme"})),
            200,
        ),
        (
            "POST",
            "/v1/mcp/unsubscribe",
            Some(json!({"name": "local", "uri": "fixture://readme"})),
            200,
        ),
        ("GET", "/v1/mcp/requests", None, 200),
        (
            "POST",
            "/v1/mcp/requests/999",
            Some(json!({"action": "decline"})),
            404,
        ),
        (
            "POST",
            "/v1/mcp/call/cancel",
            Some(json!({"id": "nothing-runs"})),
            404,
        ),
        ("GET", "/v1/mcp/nothing", None, 404),
        ("PUT", "/v1/mcp", None, 405),
    ];
    for (method, target, body, expected) in requests {
        let shown = body.as_ref().map(Value::to_string).unwrap_or_default();
        let (status, answer) = api(seen, method, target, body);
        assert_eq!(status, expected, "{method} {target} {shown}: {answer}");
    }
    daemon.question(seen);
    if shared.py.is_some() {
        // pyseed's seeded tokens were refused and refreshed with the seeded client.
        let (status, answer) = api(
            seen,
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__pyseed__whoami", "mode": "auto"})),
        );
        // The authorization server does not know the seeded client: the refresh is refused,
        // so pyseed needs a login, and the call says so.
        assert_eq!(status, 409, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or("");
        assert!(
            message
                .contains("mcp__pyseed__whoami cannot be called: server \"pyseed\" needs a login"),
            "{answer}"
        );
        let (_, status) = api(seen, "GET", "/v1/mcp/status", None);
        let pyseed = status["servers"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == "pyseed"));
        assert_eq!(
            pyseed.map(|s| s["state"].clone()),
            Some(json!("needs login")),
            "{status}"
        );
        // A fresh login: the seeded client is not one the authorization server knows.
        home.forget_seeded_client(shared);
        daemon.login(seen, "py");
        seen.learned.extend(home.stored_secrets());
        let (status, answer) = api(
            seen,
            "POST",
            "/v1/mcp/call",
            Some(json!({"name": "mcp__py__whoami", "mode": "auto"})),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["text"], "hello from the protected server");
        api(seen, "GET", "/v1/mcp/status", None);
        let (status, answer) = api(
            seen,
            "POST",
            "/v1/mcp/oauth/client",
            Some(json!({"name": "pyconf", "client_id": "api-client",
                        "client_secret": API_CLIENT_SECRET})),
        );
        assert_eq!(status, 200, "{answer}");
        let (status, answer) = api(seen, "DELETE", "/v1/mcp/oauth?name=py", None);
        assert_eq!(status, 200, "{answer}");
        api(seen, "GET", "/v1/mcp", None);
        api(seen, "GET", "/v1/mcp/status", None);
    } else {
        let (status, answer) = api(
            seen,
            "POST",
            "/v1/mcp/oauth/client",
            Some(json!({"name": "down", "client_id": "x", "client_secret": API_CLIENT_SECRET})),
        );
        assert_eq!(status, 400, "{answer}");
    }
    for name in ["added", "addedweb", "addeddown", "nocommand"] {
        let (status, answer) = api(
            seen,
            "POST",
            "/v1/mcp/remove",
            Some(json!({ "name": name })),
        );
        assert_eq!(status, 200, "{name}: {answer}");
    }
    api(seen, "GET", "/v1/mcp", None);
    daemon.stop();
    let log = std::fs::read(home.dir.path().join("daemon.log")).unwrap_or_default();
    assert!(!log.is_empty(), "the daemon logged nothing");
}

// The test.

/// What runs at each level, each in a home of its own and at the same time (the panel
/// mostly waits for its screens): the commands, the daemon and its API, the panel.
type Surface = fn(&Home, &Shared, &mut Seen);
const SURFACES: [(&str, Surface); 3] = [
    ("commands", run_commands),
    ("API", run_api),
    ("panel", run_panel),
];

/// One surface at one level: what it showed and wrote, and what `mcp.json` holds that it
/// should not.
fn run_surface(level: &'static str, surface: Surface, shared: &Shared) -> (Seen, Vec<String>) {
    let home = Home::new(level, shared);
    let mut seen = Seen::default();
    surface(&home, shared, &mut seen);
    seen.learned.extend(home.stored_secrets());
    let (files, config) = home.files();
    seen.blobs.extend(files);
    // The config holds what the user wrote there, and nothing else.
    let mut config_leaks = Vec::new();
    let learned = seen.learned.clone();
    for secret in NEVER_IN_CONFIG.iter().map(|s| s.to_string()).chain(learned) {
        for form in forms(&secret) {
            if config.contains(&form) {
                config_leaks.push(format!("AGENVOY_LOG={level} mcp.json holds {secret}"));
            }
        }
    }
    (seen, config_leaks)
}

/// The commands `agenvoy-mcp --help` lists.
fn listed_commands() -> BTreeSet<String> {
    let help = Command::new(binary()).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let commands = help
        .split("Commands:")
        .nth(1)
        .expect("--help lists commands")
        .split("\n\n")
        .next()
        .unwrap();
    commands
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The routes of the API's route table (`src/api/mod.rs`), as `METHOD /path`.
fn table_routes() -> BTreeSet<String> {
    include_str!("../src/api/mod.rs")
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("(\"/")?;
            let (path, rest) = l.split_once('"')?;
            let method = rest.split('"').nth(1)?;
            Some(format!("{method} /{path}"))
        })
        .collect()
}

/// The routes `docs/API.md` documents (its `###` headings), as `METHOD /path`.
fn documented_routes() -> BTreeSet<String> {
    include_str!("../docs/API.md")
        .lines()
        .filter(|l| l.starts_with("### "))
        .flat_map(|l| l.split('`').skip(1).step_by(2).map(str::to_string))
        .map(|r| r.split('?').next().unwrap().to_string())
        .collect()
}

#[test]
fn no_secret_appears_in_any_output_log_answer_or_file_at_any_level() {
    become_subreaper_here();
    let started = Instant::now();
    let shared = Arc::new(Shared {
        http: HttpFixture::start("json", &[]),
        closed: closed_url(),
        broken: answering_500("the server is down for maintenance"),
        py: start_py(),
    });
    let runs: Vec<_> = LEVELS
        .iter()
        .flat_map(|&level| SURFACES.map(|surface| (level, surface)))
        .map(|(level, (name, surface))| {
            let shared = shared.clone();
            let thread = std::thread::Builder::new()
                .name(format!("{name} at {level}"))
                .spawn(move || {
                    let started = Instant::now();
                    let run = run_surface(level, surface, &shared);
                    eprintln!("AGENVOY_LOG={level}: {name} took {:?}", started.elapsed());
                    run
                })
                .unwrap();
            (level, name, thread)
        })
        .collect();
    let mut secrets: Vec<String> = NEVER_IN_CONFIG
        .iter()
        .chain(IN_CONFIG)
        .map(|s| s.to_string())
        .collect();
    let mut problems = Vec::new();
    let mut seen_all: Vec<(&str, Seen)> = LEVELS.iter().map(|&l| (l, Seen::default())).collect();
    // Every run joined before any failure is reported, so each stops what it started.
    let runs: Vec<_> = runs
        .into_iter()
        .map(|(level, name, thread)| (level, name, thread.join()))
        .collect();
    let failed: Vec<String> = runs
        .iter()
        .filter(|(_, _, run)| run.is_err())
        .map(|(level, name, _)| format!("{name} at {level}"))
        .collect();
    assert!(failed.is_empty(), "runs failed (see above): {failed:?}");
    for (level, _, run) in runs {
        let (seen, config_leaks) = run.unwrap();
        problems.extend(config_leaks);
        secrets.extend(seen.learned.iter().cloned());
        let all = &mut seen_all.iter_mut().find(|(l, _)| *l == level).unwrap().1;
        all.blobs.extend(seen.blobs);
        all.learned.extend(seen.learned);
        all.commands.extend(seen.commands);
        all.routes.extend(seen.routes);
    }
    secrets.sort();
    secrets.dedup();
    for (_, seen) in &seen_all {
        problems.extend(leaks(seen, &secrets));
    }
    assert!(
        problems.is_empty(),
        "{} secret(s) leaked:\n{}",
        problems.len(),
        problems.join("\n")
    );

    // Every command and route was run, at every level.
    let listed = listed_commands();
    let expected: BTreeSet<String> = COMMANDS.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        listed, expected,
        "--help lists other commands than this test runs: add the new one here"
    );
    let table = table_routes();
    assert_eq!(
        table,
        documented_routes(),
        "src/api/mod.rs's route table and docs/API.md's headings differ"
    );
    // Without tmux the panel did not run (said SKIPPED; a failure when peers are required).
    let mut expected = expected;
    if seen_all
        .iter()
        .any(|(_, seen)| !seen.commands.contains("tui"))
        && !common::system_program("tmux", "Debian's tmux")
    {
        expected.remove("tui");
    }
    for (level, seen) in &seen_all {
        assert_eq!(seen.commands, expected, "AGENVOY_LOG={level}: commands run");
        if shared.py.is_some() {
            assert_eq!(seen.routes, table, "AGENVOY_LOG={level}: routes answered");
        } else {
            let missing: Vec<_> = table.difference(&seen.routes).collect();
            assert!(
                missing.iter().all(|r| r.contains("oauth")),
                "AGENVOY_LOG={level}: routes not run: {missing:?}"
            );
        }
    }

    // The runs did what they were meant to: servers connected, failed and were reported,
    // logs were written at the levels that have them.
    let text = |level: &str| seen_all.iter().find(|(l, _)| *l == level).unwrap().1.text();
    let trace = text("trace");
    let mut states = vec![
        ("remote", "connected"),
        ("local", "connected"),
        ("down", "failed"),
        ("broken", "failed"),
    ];
    // The OAuth server is a peer: without it there is no `py` entry to show.
    if shared.py.is_some() {
        states.push(("py", "needs login"));
    }
    for (name, state) in states {
        assert!(
            trace.lines().any(|l| {
                let mut words = l.split_whitespace();
                words.next() == Some(name) && l.contains(state)
            }),
            "{name} is not shown {state} in the trace run"
        );
    }
    for shown in [
        "?api_key=***&x=***",
        "user:password@ is not sent",
        "HTTP 500",
        "TRACE",
        "DEBUG",
        "hi",
    ] {
        assert!(
            trace.contains(shown),
            "{shown:?} missing from the trace run"
        );
    }
    if shared.py.is_some() {
        // Only the OAuth runs keep tokens, and so reach the token store.
        assert!(trace.contains("no OS keychain is reachable"));
        assert!(trace.contains("hello from the protected server"));
        assert!(trace.contains("logged in to py"));
    }
    assert!(
        !text("error").contains(" WARN "),
        "AGENVOY_LOG=error shows warnings"
    );
    eprintln!("the canary run took {:?}", started.elapsed());
}

/// Adopts orphaned grandchildren of the servers, so none is left as a zombie.
fn become_subreaper_here() {
    agenvoy_mcp::unstable::become_subreaper();
}

#[test]
fn a_secret_is_found_however_it_was_encoded() {
    let secret = STORED_CLIENT_SECRET;
    let standard = &base64::engine::general_purpose::STANDARD;
    let url_safe = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut texts = vec![
        format!(
            "grant_type=refresh_token&client_secret={}",
            "CANARY%2Bstored%2Fclient%3Dsecret-62f0"
        ),
        format!("{{\"secret\":\"{}\"}}", secret.replace('/', "\\/")),
    ];
    // Basic auth's `client_id:secret`, the secret at each of the three alignments.
    for id in ["a", "ab", "abc"] {
        texts.push(format!(
            "Authorization: Basic {}",
            standard.encode(format!("{id}:{secret}"))
        ));
        texts.push(url_safe.encode(format!("{id}:{secret}")));
    }
    for text in texts {
        let seen = Seen {
            blobs: vec![("text".into(), text.clone().into_bytes())],
            ..Seen::default()
        };
        assert!(
            !leaks(&seen, &[secret.to_string()]).is_empty(),
            "not found in {text}"
        );
    }
    // A server's own words are not a secret.
    let seen = Seen {
        blobs: vec![("text".into(), b"client_secret=*** api_key=***".to_vec())],
        ..Seen::default()
    };
    assert!(leaks(&seen, &[secret.to_string()]).is_empty());
}
