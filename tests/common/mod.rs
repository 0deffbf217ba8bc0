//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod daemon;
pub mod oidc;
pub mod py_oauth;
pub mod tmux;

use agenvoy_mcp::StdioConfig;
use agenvoy_mcp::{Client, ClientOptions, ElicitationAnswer, ElicitationKind, Handlers};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The built binary. Its hidden `fixture-server` is the small demo server of the embedded
/// default config; the tests' server is [`fixture_binary`].
pub fn binary() -> String {
    env!("CARGO_BIN_EXE_agenvoy-mcp").to_string()
}

/// The test fixture, `agenvoy-mcp-fixture` (fixtures/server/): the MCP server with a fault
/// mode for each way a server misbehaves.
pub fn fixture_binary() -> String {
    env!("CARGO_BIN_EXE_agenvoy-mcp-fixture").to_string()
}

/// The config of a fixture server with extra flags.
pub fn fixture(flags: &[&str]) -> StdioConfig {
    StdioConfig::new(fixture_binary()).args(flags.iter().copied())
}

/// The command line of a fixture server with `flags`, as `probe -- CMD ARGS...` takes it.
pub fn fixture_command(flags: &[&str]) -> Vec<String> {
    let mut command = vec![fixture_binary()];
    command.extend(flags.iter().map(|f| f.to_string()));
    command
}

/// Connects a fixture server; the test process adopts orphans so none is left as a zombie.
pub async fn connect(flags: &[&str], options: ClientOptions) -> Client {
    agenvoy_mcp::unstable::become_subreaper();
    Client::connect_stdio("fixture", &fixture(flags), options)
        .await
        .expect("connect the fixture server")
}

/// Every process of a process group, as (pid, state letter), from /proc. Unix only (under
/// Wine, `/proc` would be the Linux host's, which knows no Windows pid).
pub fn group_members(pgid: u32) -> Vec<(u32, String)> {
    if !cfg!(unix) {
        panic!("process groups are Unix; tests/windows.rs has Windows's");
    }
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) {
            members.push((pid, fields[0].to_string()));
        }
    }
    members
}

/// Waits until the group has no process at all (neither running nor zombie), or panics. On
/// Windows, until the server process `pgid` has ended (its tree is the Job Object's:
/// tests/windows.rs).
#[cfg(windows)]
pub fn assert_group_gone_within(pgid: u32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while process_running(pgid) {
        assert!(
            Instant::now() < deadline,
            "process {pgid} runs after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether Windows process `pid` is still running.
#[cfg(windows)]
pub fn process_running(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_TIMEOUT};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, PROCESS_SYNCHRONIZE, WaitForSingleObject,
    };
    // SAFETY: opens a handle that is closed below; a process that is gone gives null.
    let handle = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: the handle opened above, polled without blocking.
    let waiting = unsafe { WaitForSingleObject(handle, 0) } == WAIT_TIMEOUT;
    // SAFETY: as above; closed once.
    unsafe { CloseHandle(handle) };
    waiting
}

/// Waits until the group has no process at all (neither running nor zombie), or panics.
#[cfg(not(windows))]
pub fn assert_group_gone_within(pgid: u32, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let members = group_members(pgid);
        if members.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes left in group {pgid} after {limit:?}: {members:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process group of a stdio client's server.
pub fn server_pid(client: &Client) -> u32 {
    client.server_pid().expect("a stdio transport has a pid")
}

/// Pids of running (not zombie) processes whose command line has `arg` as one argument. Unix
/// only (/proc).
pub fn processes_with_arg(arg: &str) -> Vec<u32> {
    if !cfg!(unix) {
        panic!("/proc is Unix");
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// A server process that prints `listening on URL` as its first line; killed when dropped.
pub struct Listening {
    child: std::process::Child,
    /// Where it listens.
    pub url: String,
}

impl Listening {
    /// Starts `command` and waits for its `listening on URL` line. What it prints after that
    /// line, and on stderr, goes to the test's own output, which the harness shows only for a
    /// test that fails: a passing run stays quiet.
    pub fn start(mut command: std::process::Command) -> Listening {
        command.stderr(std::process::Stdio::piped());
        Listening::start_keeping_stderr(command)
    }

    /// [`Listening::start`] for a `command` whose stderr the caller has set (a file to read).
    pub fn start_keeping_stderr(mut command: std::process::Command) -> Listening {
        use std::io::BufRead;
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the server");
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        forward_to_test_output(stdout);
        if let Some(stderr) = child.stderr.take() {
            forward_to_test_output(std::io::BufReader::new(stderr));
        }
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the server says where it listens, not {line:?}"))
            .to_string();
        Listening { child, url }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the server to exit; its exit status, or `None` if it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        wait_exit(&mut self.child, limit)
    }
}

/// Copies `from`'s lines into the test's captured output (threads inherit the capture) until
/// it ends; read to the end, so the writer never fails on a closed pipe.
fn forward_to_test_output(mut from: impl std::io::BufRead + Send + 'static) {
    std::thread::spawn(move || {
        let mut line = Vec::new();
        while from.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            print!("{}", String::from_utf8_lossy(&line));
            line.clear();
        }
    });
}

/// Waits up to `limit` for `child` to exit; its exit status, or `None` if it still runs.
pub fn wait_exit(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fixture server over HTTP, killed when dropped.
pub struct HttpFixture {
    _server: Listening,
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpFixture {
    /// Starts `agenvoy-mcp-fixture --http 127.0.0.1:0 --mode MODE` plus `extra` flags.
    pub fn start(mode: &str, extra: &[&str]) -> HttpFixture {
        HttpFixture::start_at("127.0.0.1:0", mode, extra)
    }

    /// [`HttpFixture::start`] listening on `address` (`IP:0` for a free port).
    pub fn start_at(address: &str, mode: &str, extra: &[&str]) -> HttpFixture {
        let mut command = std::process::Command::new(fixture_binary());
        command
            .args(["--http", address, "--mode", mode])
            .args(extra);
        let server = Listening::start(command);
        HttpFixture {
            url: server.url.clone(),
            _server: server,
        }
    }

    /// The fixture's counters (`GET /stats`).
    pub fn stats(&self) -> serde_json::Value {
        use std::io::{Read, Write};
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let mut stream = std::net::TcpStream::connect(authority).unwrap();
        write!(stream, "GET /stats HTTP/1.0\r\nHost: {authority}\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let body = response.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap()
    }
}

/// Whether `AGENVOY_HIDE_PEERS=1` asks every test to run as on a fresh clone, with none of the
/// peers `.ci/install` brings (`.ci/run` runs the suite so once, to prove that it passes).
fn peers_hidden() -> bool {
    std::env::var("AGENVOY_HIDE_PEERS").is_ok_and(|v| v == "1")
}

/// The installed program `relative` (under `.ci/peers`, or `$AGENVOY_INTEROP_DIR`), if it is
/// there. `.ci/install` installs the real servers; without them a test says so and passes,
/// unless `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run` sets), where a missing one fails it.
pub fn installed(relative: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("AGENVOY_INTEROP_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/peers"));
    let path = dir.join(relative);
    if path.exists() && !peers_hidden() {
        return Some(path);
    }
    not_installed(&path.display().to_string());
    None
}

/// Whether the system program `name` (Debian's tmux, gnome-keyring, ...) is on `PATH`; says
/// SKIPPED (or fails, when required) if not, naming `what` installs it.
pub fn system_program(name: &str, what: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| dir.join(name).is_file());
    if found && !peers_hidden() {
        return true;
    }
    not_installed(&format!("{name} ({what})"));
    false
}

/// Says that `what` is missing: fails the test when `AGENVOY_REQUIRE_INTEROP=1` (as `.ci/run`
/// sets), else prints `SKIPPED <test>: <what> is not installed` for the test to pass.
pub fn not_installed(what: &str) {
    use std::io::Write;
    let required = std::env::var("AGENVOY_REQUIRE_INTEROP").is_ok_and(|v| v == "1");
    assert!(!required, "{what} is not installed: run .ci/install");
    // Written to stderr itself, not through `eprintln!`, which the test harness captures and
    // hides for a test that passes: a skip must be seen.
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {what} is not installed (run .ci/install; AGENVOY_REQUIRE_INTEROP=1 fails instead)"
    );
}

/// Runs `probe --json` with `args` (flags, then the server: a URL or `-- CMD ARGS...`),
/// asserts it succeeded, and returns its report.
pub fn probe_json(args: &[&str]) -> serde_json::Value {
    let output = std::process::Command::new(binary())
        .args(["probe", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "probe {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The names of a client's tools, as listed now.
pub async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_tools()
        .await
        .expect("tools/list succeeds")
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// The strict OAuth authorization and MCP server of `fixtures/oauth/server.py`, if its venv
/// is installed (see [`installed`]); it says where its MCP endpoint is.
pub fn oauth_fixture() -> Option<Listening> {
    let python = installed("venv/bin/python")?;
    let mut command = std::process::Command::new(python);
    command
        .arg(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/oauth/server.py"));
    Some(Listening::start(command))
}

/// A browser that goes as far as the authorization server's redirect: the URL it ends on
/// (the one a user pastes back).
pub fn redirect_of(authorization_url: &str) -> String {
    use std::io::{Read, Write};
    let rest = authorization_url
        .strip_prefix("http://")
        .expect("an http:// URL");
    let (authority, target) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(stream, "GET {target} HTTP/1.0\r\nHost: {authority}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no redirect: {response}"))
}

/// A config entry that runs the fixture server with `flags`.
pub fn fixture_entry(flags: &[&str]) -> serde_json::Value {
    serde_json::json!({"command": fixture_binary(), "args": flags})
}

/// Config entries of both eras of the fixture: `init` speaks 2025-11-25, `modern` 2026-07-28.
/// A fixture client whose elicitation handler declines and keeps what it is asked: the
/// library's reading of a URL elicitation, through the fixture's `client_request`.
pub struct UrlAsker {
    client: Client,
    asked: Arc<Mutex<Vec<ElicitationKind>>>,
}

impl UrlAsker {
    pub async fn start() -> UrlAsker {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let handlers = Handlers::default().with_elicitation(move |request| {
            seen.lock().unwrap().push(request.kind);
            async { Ok(ElicitationAnswer::Decline) }
        });
        let client = connect(&[], ClientOptions::default().with_handlers(handlers)).await;
        UrlAsker { client, asked }
    }

    /// The origin a URL elicitation of `url` is handed over with, or the message of the
    /// server's error (-32602) when it is refused unread.
    pub async fn origin(&self, url: &str) -> Result<String, String> {
        let params = serde_json::json!({"mode": "url", "message": "Go", "url": url});
        let out = self
            .client
            .call_tool(
                "client_request",
                serde_json::json!({"method": "elicitation/create", "params": params}),
            )
            .await
            .unwrap();
        let answer: serde_json::Value = serde_json::from_str(&out.text).unwrap();
        let asked = self.asked.lock().unwrap().pop();
        match (&answer["error"], asked) {
            (serde_json::Value::Null, Some(ElicitationKind::Url(request))) => Ok(request.origin),
            (serde_json::Value::Null, other) => panic!("{url}: handed over as {other:?}"),
            (error, None) => {
                assert_eq!(error["code"], -32602, "{url}: {answer}");
                Err(error["message"].as_str().unwrap_or_default().to_string())
            }
            (_, Some(_)) => panic!("{url}: handed over though refused: {answer}"),
        }
    }

    pub async fn close(self) {
        self.client.close().await;
    }
}

pub fn two_fixtures() -> serde_json::Value {
    serde_json::json!({"init": fixture_entry(&[]), "modern": fixture_entry(&["--mode", "modern"])})
}

/// server-everything over stdio, if it is installed (see [`installed`]); the test process
/// adopts orphans, as for the fixture.
pub fn everything() -> Option<StdioConfig> {
    let program = installed("node_modules/.bin/mcp-server-everything")?;
    agenvoy_mcp::unstable::become_subreaper();
    Some(StdioConfig::new(program.display().to_string()).arg("stdio"))
}

/// The pid of the one running process whose command line has `marker`.
pub fn pid_with(marker: &str) -> u32 {
    let pids = processes_with_arg(marker);
    assert_eq!(pids.len(), 1, "one process with {marker}: {pids:?}");
    pids[0]
}

/// The text of the file `name` in `dir` (empty if there is none).
pub fn read_in(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Tries `attempt` every 50 ms until it gives a value, for at most `limit`; fails saying
/// `what` (and what the last attempt saw) after that.
pub fn wait_until<T>(
    what: &str,
    limit: Duration,
    mut attempt: impl FnMut() -> Result<T, String>,
) -> T {
    let started = Instant::now();
    loop {
        match attempt() {
            Ok(value) => return value,
            Err(seen) => assert!(
                started.elapsed() < limit,
                "{what} did not happen in {limit:?}:\n{seen}"
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Tries `check` every 50 ms for at most `limit`; whether it held.
pub fn wait_until_or_not(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Draws `screen` until it shows `needle` (at most 30 s); the screen then.
pub fn until_shown(needle: &str, mut screen: impl FnMut() -> String) -> String {
    let what = format!("showing {needle:?}");
    wait_until(&what, Duration::from_secs(30), || {
        let now = screen();
        if now.contains(needle) {
            Ok(now)
        } else {
            Err(now)
        }
    })
}

/// A loopback HTTP server that reads each request whole and answers it with a 500 whose
/// body is `body`. It lives as long as the test process.
pub fn answering_500(body: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(&stream);
                let mut length = 0;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    line.clear();
                }
                let _ = reader.take(length).read_to_end(&mut Vec::new());
                let _ = write!(
                    &stream,
                    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    url
}

/// A URL where nothing listens.
pub fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    url
}
