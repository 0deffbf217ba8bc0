#![allow(dead_code)] // each bench uses a part of it
//! What the daemon benches share: `agenvoy-mcp serve` started on a config of its own, a
//! keep-alive HTTP/1.1 connection to its API (hyper's client connection, no pool), the
//! daemon's memory and descriptors from /proc, and percentiles.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request};
use serde_json::Value;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long one request to the API may take before the bench gives up on it.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// The binary cargo built beside this bench (the bench profile: release).
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_agenvoy-mcp")
}

/// The test fixture server cargo built beside it, `agenvoy-mcp-fixture`.
pub fn fixture_binary() -> &'static str {
    env!("CARGO_BIN_EXE_agenvoy-mcp-fixture")
}

/// A config entry for one stdio fixture server.
pub fn fixture_entry() -> Value {
    serde_json::json!({"command": fixture_binary(), "args": []})
}

/// The same server, for the library's direct calls.
pub fn fixture_config() -> agenvoy_mcp::StdioConfig {
    agenvoy_mcp::StdioConfig::new(fixture_binary())
}

/// Prints `why` and exits 1: a bench that cannot run its setup has no figure to give.
pub fn fail(why: impl std::fmt::Display) -> ! {
    eprintln!("FAILED: {why}");
    std::process::exit(1)
}

/// A running `agenvoy-mcp serve`: SIGTERM and reaped when dropped.
pub struct Daemon {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// The API token.
    pub token: String,
    /// From the spawn to its `listening on` line (it listens once no server is connecting).
    pub ready_after: Duration,
}

impl Daemon {
    /// Starts the daemon on a config in `dir` (its config folder: token, eras, allowlist)
    /// whose `servers` are `servers`, and waits (at most `deadline`) for the line that says
    /// it listens. It gets SIGTERM if this process dies first.
    pub fn start(
        dir: &std::path::Path,
        servers: serde_json::Map<String, Value>,
        deadline: Duration,
    ) -> Daemon {
        Daemon::start_with(dir, serde_json::json!({ "servers": servers }), deadline)
    }

    /// [`Daemon::start`] with the whole config document `config`.
    pub fn start_with(dir: &std::path::Path, config: Value, deadline: Duration) -> Daemon {
        let text = serde_json::to_vec(&config).expect("json");
        let config = dir.join("mcp.json");
        std::fs::write(&config, text).unwrap_or_else(|e| fail(format!("config: {e}")));
        let log = std::fs::File::create(dir.join("serve.log"))
            .unwrap_or_else(|e| fail(format!("log: {e}")));
        let started = Instant::now();
        let mut command = Command::new(binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .arg("--token-file")
            .arg(dir.join("tokens.json"))
            // Its eras file and allowlist here too, never in the user's config folder.
            .env("AGENVOY_CONFIG_DIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        // For experiments: the daemon's worker threads (tokio reads TOKIO_WORKER_THREADS).
        if let Ok(workers) = std::env::var("DAEMON_WORKER_THREADS") {
            command.env("TOKIO_WORKER_THREADS", workers);
        }
        die_with_this_process(&mut command);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| fail(format!("cannot start {}: {e}", binary())));
        let stdout = child.stdout.take().expect("piped");
        // The line is read on a thread so that its wait has a deadline.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(deadline).unwrap_or_default();
        let ready_after = started.elapsed();
        let Some(url) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default();
            fail(format!(
                "serve did not say where it listens within {deadline:?} ({line:?}); its stderr:\n{log}"
            ));
        };
        let token = std::fs::read_to_string(dir.join("api-token"))
            .unwrap_or_else(|e| fail(format!("api-token: {e}")))
            .trim()
            .to_string();
        Daemon {
            address: url.to_string(),
            token,
            ready_after,
            child,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory in KiB (VmRSS) and its open descriptors, now.
    pub fn memory_and_fds(&self) -> (u64, usize) {
        process_memory_and_fds(self.pid())
    }

    /// A keep-alive connection to its API.
    pub async fn connect(&self) -> Api {
        Api::connect(&self.address, &self.token).await
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // SIGTERM closes every server (their processes end) and exits within 5 s.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(15);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("the daemon did not exit within 15 s of SIGTERM: killed");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Has `command`'s process get SIGTERM when this one dies (a bench that fails leaves no
/// daemon or proxy behind). Spawns must come from the main thread: the signal follows the
/// thread that spawned the process.
pub fn die_with_this_process(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// A process's resident memory in KiB (VmRSS) and its open descriptors.
pub fn process_memory_and_fds(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    (rss, fds)
}

/// Raises the soft limit of open files to what `needed` asks, as far as the hard limit
/// allows (the daemon inherits it); says what it did.
pub fn raise_file_limit(needed: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        fail("getrlimit(RLIMIT_NOFILE) failed");
    }
    let soft = limit.rlim_cur;
    let hard = limit.rlim_max;
    if soft >= needed {
        eprintln!("open files: soft limit {soft} (hard {hard}), {needed} needed at most");
        return;
    }
    limit.rlim_cur = needed.min(hard);
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        fail("setrlimit(RLIMIT_NOFILE) failed");
    }
    eprintln!(
        "open files: soft limit raised from {soft} to {} (hard {hard}), {needed} needed at most",
        limit.rlim_cur
    );
    if limit.rlim_cur < needed {
        fail("the hard limit of open files is too low for the largest count");
    }
}

/// The resident memory in KiB (VmRSS) of process `pid` and of every process below it.
pub fn tree_memory(pid: u32) -> u64 {
    let mut parents = std::collections::HashMap::<u32, Vec<u32>>::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The parent is the second field after the command's closing parenthesis.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(parent) = parent {
            parents.entry(parent).or_default().push(child);
        }
    }
    let mut total = 0;
    let mut todo = vec![pid];
    while let Some(next) = todo.pop() {
        total += process_memory_and_fds(next).0;
        todo.extend(parents.get(&next).into_iter().flatten());
    }
    total
}

/// A process's CPU time so far (user and system), from /proc: to 10 ms.
pub fn process_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis((ticks(11) + ticks(12)) * 1000 / hz)
}

/// One keep-alive HTTP/1.1 connection to the API, with the token and `Host` it needs.
pub struct Api {
    sender: SendRequest<Full<Bytes>>,
    address: String,
    authorization: String,
}

impl Api {
    /// Connects (within [`REQUEST_DEADLINE`]).
    pub async fn connect(address: &str, token: &str) -> Api {
        let connecting = async {
            let stream = tokio::net::TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(std::io::Error::other)
        };
        let (sender, connection) = tokio::time::timeout(REQUEST_DEADLINE, connecting)
            .await
            .unwrap_or_else(|_| fail(format!("no connection to {address} in time")))
            .unwrap_or_else(|e| fail(format!("cannot connect to {address}: {e}")));
        tokio::spawn(connection);
        Api {
            sender,
            address: address.to_string(),
            authorization: format!("Bearer {token}"),
        }
    }

    /// One request (a POST with a JSON body when `body` is given); its status and body.
    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<(u16, Bytes), String> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.address)
            .header("authorization", &self.authorization);
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            self.sender.ready().await?;
            let response = self.sender.send_request(request).await?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, hyper::Error>((status, body))
        };
        match tokio::time::timeout(REQUEST_DEADLINE, exchange).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("{path}: {e}")),
            Err(_) => Err(format!("{path}: no answer within {REQUEST_DEADLINE:?}")),
        }
    }

    /// `GET path`, which must answer 200 with JSON.
    pub async fn get_json(&mut self, path: &str) -> Value {
        match self.request(Method::GET, path, None).await {
            Ok((200, body)) => serde_json::from_slice(&body)
                .unwrap_or_else(|e| fail(format!("GET {path}: not JSON: {e}"))),
            Ok((status, body)) => fail(format!(
                "GET {path}: {status} {}",
                String::from_utf8_lossy(&body)
            )),
            Err(e) => fail(format!("GET {e}")),
        }
    }
}

/// The `q` quantile of sorted `values` (nearest rank).
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

/// The median of `values` (sorted here).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return 0.0;
    }
    values[values.len() / 2]
}
