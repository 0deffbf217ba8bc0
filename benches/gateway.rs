//! The daemon as a gateway (issue 30, §3): `POST /v1/mcp/call` as a hop, in one run beside
//! its baselines.
//!
//! Three ways to call the stdio fixture server's `echo` tool, each a fixture process of its
//! own:
//! - **direct**: this crate's `Client` over stdio, in this process (the baseline);
//! - **daemon**: `agenvoy-mcp serve` with the fixture in its config, called by a load client on
//!   hyper's HTTP/1.1 client connection, one keep-alive connection per caller, no pool;
//! - **mcp-proxy**: the same fixture behind `mcp-proxy` (PyPI, pinned in
//!   `benches/gateway-requirements.txt`, installed by this bench into a venv under
//!   `target/tmp/`), the common way to share a stdio server over streamable HTTP, called by
//!   this crate's `Client` over HTTP.
//!
//! Each is measured with 1 caller and with 64 callers in flight: a warm-up, then every call
//! timed for `GATEWAY_SECONDS` (default 3): p50, p99, calls/s, and the CPU time the daemon or
//! the proxy used per call. Rounds (`GATEWAY_ROUNDS`, default 3) interleave the three, and the
//! median of the rounds counts. `GATEWAY_PROXY=off` leaves mcp-proxy out. Then the bench runs
//! itself again with every process on CPU 0 (`GATEWAY_PIN=off` skips it): no wake-ups across
//! CPUs, the cost of the code itself. `DAEMON_WORKER_THREADS=N` runs the daemon on N tokio
//! worker threads (an experiment: the binary's default is one per CPU).
//!
//! Targets (issue 30): the hop adds at most 50 µs at p50 over a direct call (1 in flight); at
//! 64 in flight the daemon keeps at least 80% of the direct calls/s; against mcp-proxy the
//! daemon makes at least 5x its calls/s, with a lower p99.
//!
//!     cargo bench --bench gateway

// It reads /proc and sets resource limits: Linux only.
#[cfg(target_os = "linux")]
mod daemon;

#[cfg(target_os = "linux")]
fn main() {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("this bench reads /proc and sets resource limits: it runs on Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use super::daemon;

    use agenvoy_mcp::{Client, ClientOptions, HttpConfig};
    use bytes::Bytes;
    use daemon::{Api, Daemon, fail, median, quantile};
    use hyper::Method;
    use serde_json::json;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Callers in flight in the concurrent runs.
    const INFLIGHT: usize = 64;
    /// The warm-up before each timed window (connections made, pools filled, caches warm).
    const WARM_UP: Duration = Duration::from_millis(500);
    /// The echo call's text.
    const TEXT: &str = "hello";
    /// The daemon's call: its registered tool name, auto mode (no allowlist asked).
    const DAEMON_CALL: &[u8] =
        br#"{"name":"mcp__fixture__echo","arguments":{"text":"hello"},"mode":"auto"}"#;
    /// The pinned mcp-proxy and every package it installs.
    const REQUIREMENTS: &str = "benches/gateway-requirements.txt";
    const PROXY_VERSION: &str = "0.13.0";

    fn env_number(name: &str, default: f64) -> f64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// One caller's way to the echo tool.
    enum Caller {
        Library(Arc<Client>),
        Daemon(Api),
    }

    impl Caller {
        async fn echo(&mut self) -> Result<(), String> {
            match self {
                Caller::Library(client) => {
                    let out = client
                        .call_tool("echo", json!({ "text": TEXT }))
                        .await
                        .map_err(|e| e.to_string())?;
                    if out.text != TEXT || out.is_error {
                        return Err(format!("echo answered {:?}", out.text));
                    }
                }
                Caller::Daemon(api) => {
                    let (status, body) = api
                        .request(
                            Method::POST,
                            "/v1/mcp/call",
                            Some(Bytes::from_static(DAEMON_CALL)),
                        )
                        .await?;
                    let body = String::from_utf8_lossy(&body);
                    let answered =
                        body.contains(r#""text":"hello""#) && body.contains(r#""isError":false"#);
                    if status != 200 || !answered {
                        return Err(format!("the daemon answered {status} {body}"));
                    }
                }
            }
            Ok(())
        }
    }

    /// Where a target's calls go.
    enum Target {
        Direct(Arc<Client>),
        Daemon(Daemon),
        Proxy(Arc<Client>, Child),
    }

    impl Target {
        fn name(&self) -> &'static str {
            match self {
                Target::Direct(_) => "direct",
                Target::Daemon(_) => "daemon",
                Target::Proxy(..) => "mcp-proxy",
            }
        }

        /// The process that forwards the calls (whose CPU time is counted), if any.
        fn forwarder(&self) -> Option<u32> {
            match self {
                Target::Direct(_) => None,
                Target::Daemon(d) => Some(d.pid()),
                Target::Proxy(_, child) => Some(child.id()),
            }
        }

        async fn caller(&self) -> Caller {
            match self {
                Target::Direct(c) | Target::Proxy(c, _) => Caller::Library(c.clone()),
                Target::Daemon(d) => Caller::Daemon(d.connect().await),
            }
        }
    }

    /// One run's figures.
    #[derive(Clone, Copy, Default)]
    struct Figures {
        p50_us: f64,
        p99_us: f64,
        calls_per_s: f64,
        /// CPU time of the daemon or the proxy per call (µs); 0 for direct calls.
        forwarder_cpu_us: f64,
    }

    /// `inflight` callers call echo in a loop: a warm-up, then `window` of timed calls (a call
    /// counts if it started and ended in the window).
    async fn measure(target: &Target, inflight: usize, window: Duration) -> Figures {
        let mut callers = Vec::with_capacity(inflight);
        for _ in 0..inflight {
            callers.push(target.caller().await);
        }
        let start = Instant::now() + WARM_UP;
        let end = start + window;
        // The forwarder's CPU time at the window's start and end.
        let forwarder = target.forwarder();
        let cpu_at = |when: Instant| {
            tokio::spawn(async move {
                tokio::time::sleep_until(when.into()).await;
                forwarder.map(daemon::process_cpu)
            })
        };
        let (cpu_start, cpu_end) = (cpu_at(start), cpu_at(end));
        let workers: Vec<_> = callers
            .into_iter()
            .map(|mut caller| {
                tokio::spawn(async move {
                    let mut times = Vec::with_capacity(1 << 16);
                    loop {
                        let t = Instant::now();
                        if t >= end {
                            break;
                        }
                        if let Err(e) = caller.echo().await {
                            fail(format!("a call failed: {e}"));
                        }
                        let done = Instant::now();
                        if t >= start && done <= end {
                            times.push(done - t);
                        }
                    }
                    times
                })
            })
            .collect();
        let mut times = Vec::new();
        for w in workers {
            times.extend(w.await.unwrap_or_else(|e| fail(format!("a caller: {e}"))));
        }
        let cpu = match (cpu_start.await, cpu_end.await) {
            (Ok(Some(before)), Ok(Some(after))) => after.saturating_sub(before),
            _ => Duration::ZERO,
        };
        times.sort_unstable();
        let calls = times.len().max(1) as f64;
        Figures {
            p50_us: quantile(&times, 0.50).as_secs_f64() * 1e6,
            p99_us: quantile(&times, 0.99).as_secs_f64() * 1e6,
            calls_per_s: times.len() as f64 / window.as_secs_f64(),
            forwarder_cpu_us: cpu.as_secs_f64() * 1e6 / calls,
        }
    }

    /// mcp-proxy's executable, installed into a venv of its own on first use; `None` (and why)
    /// when it cannot be.
    fn mcp_proxy() -> Result<PathBuf, String> {
        let venv =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-proxy-{PROXY_VERSION}"));
        let executable = venv.join("bin").join("mcp-proxy");
        if executable.exists() {
            return Ok(executable);
        }
        let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join(REQUIREMENTS);
        eprintln!(
            "installing mcp-proxy {PROXY_VERSION} into {} (pip, {REQUIREMENTS})",
            venv.display()
        );
        let run = |command: &mut Command| -> Result<(), String> {
            match command.status() {
                Ok(s) if s.success() => Ok(()),
                Ok(s) => Err(format!("{command:?} exited with {s}")),
                Err(e) => Err(format!("{command:?}: {e}")),
            }
        };
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        let pip = venv.join("bin").join("pip");
        let installed = run(Command::new(&pip)
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements));
        if let Err(e) = installed {
            // No half-made venv left to be taken for a whole one next time.
            let _ = std::fs::remove_dir_all(&venv);
            return Err(e);
        }
        Ok(executable)
    }

    /// Starts mcp-proxy (in a process group of its own) on a free port in front of a fixture
    /// server, and connects this crate's client to its streamable HTTP endpoint.
    async fn start_proxy(executable: &Path) -> Result<Target, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = {
            use std::os::unix::process::CommandExt;
            let mut command = Command::new(executable);
            command
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--log-level", "WARNING", "--", daemon::fixture_binary()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0);
            daemon::die_with_this_process(&mut command);
            command
                .spawn()
                .map_err(|e| format!("cannot start mcp-proxy: {e}"))?
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let connected = Client::connect_http(
                "mcp-proxy",
                &HttpConfig::new(&url),
                ClientOptions::default().with_timeout(Duration::from_secs(10)),
            )
            .await;
            match connected {
                Ok(client) => return Ok(Target::Proxy(Arc::new(client), child)),
                Err(e) if Instant::now() > until => {
                    stop_group(child);
                    return Err(format!("mcp-proxy at {url} did not answer in 30 s: {e}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Ends a process group that `child` leads: SIGTERM, then SIGKILL after 5 s.
    fn stop_group(mut child: Child) {
        let group = child.id() as i32;
        unsafe { libc::kill(-group, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = child.wait();
    }

    /// Set in the bench's second run of itself, every process on CPU 0.
    const PINNED_PASS: &str = "GATEWAY_PINNED_PASS";

    /// Keeps this thread, and the threads and processes it starts from now on, on CPU 0.
    fn pin_to_cpu_0() {
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes within it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                fail("sched_setaffinity to CPU 0 failed");
            }
        }
    }

    pub fn main() {
        // `cargo bench` passes `--bench`; this bench takes its settings from the environment.
        let pinned = std::env::var_os(PINNED_PASS).is_some();
        if pinned {
            pin_to_cpu_0();
        }
        let window = Duration::from_secs_f64(env_number("GATEWAY_SECONDS", 3.0));
        let rounds = env_number("GATEWAY_ROUNDS", 3.0).max(1.0) as usize;
        let with_proxy = std::env::var("GATEWAY_PROXY").as_deref() != Ok("off");
        let proxy_executable = if with_proxy { Some(mcp_proxy()) } else { None };
        run(window, rounds, proxy_executable, pinned);
        if pinned || std::env::var("GATEWAY_PIN").as_deref() == Ok("off") {
            return;
        }
        // The same again with every process (this one's threads, the daemon, the fixtures, the
        // proxy) on one CPU: no wake-ups across CPUs, the cost of the code itself.
        let status = std::env::current_exe()
            .and_then(|me| Command::new(me).env(PINNED_PASS, "1").status())
            .unwrap_or_else(|e| fail(format!("the pinned run: {e}")));
        if !status.success() {
            fail(format!("the pinned run exited with {status}"));
        }
    }

    /// One pass: the three targets, interleaved rounds, and the table.
    fn run(
        window: Duration,
        rounds: usize,
        proxy_executable: Option<Result<PathBuf, String>>,
        pinned: bool,
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
        let direct = Client::connect_stdio("fixture", &daemon::fixture_config(), ClientOptions::default())
            .await
            .unwrap_or_else(|e| fail(format!("the fixture server: {e}")));
        let mut servers = serde_json::Map::new();
        servers.insert("fixture".into(), daemon::fixture_entry());
        let dir = tempfile::tempdir().unwrap_or_else(|e| fail(format!("temp dir: {e}")));
        let mut targets = vec![
            Target::Direct(Arc::new(direct)),
            Target::Daemon(Daemon::start(dir.path(), servers, Duration::from_secs(60))),
        ];
        let mut proxy_note = None;
        match proxy_executable {
            Some(Ok(executable)) => match start_proxy(&executable).await {
                Ok(proxy) => targets.push(proxy),
                Err(e) => proxy_note = Some(e),
            },
            Some(Err(e)) => proxy_note = Some(format!("mcp-proxy could not be installed: {e}")),
            None => proxy_note = Some("GATEWAY_PROXY=off".to_string()),
        }
        if let Some(note) = &proxy_note {
            eprintln!("mcp-proxy left out: {note}");
        }
        // [target][0: 1 in flight, 1: 64 in flight][round]
        let mut results = vec![[Vec::new(), Vec::new()]; targets.len()];
        for round in 1..=rounds {
            for (i, target) in targets.iter().enumerate() {
                for (k, inflight) in [1, INFLIGHT].into_iter().enumerate() {
                    let f = measure(target, inflight, window).await;
                    eprintln!(
                        "round {round}: {:>9}, {inflight:>2} in flight: p50 {:>7.1} µs, p99 {:>8.1} µs, {:>7.0} calls/s, forwarder CPU {:>6.1} µs/call",
                        target.name(),
                        f.p50_us,
                        f.p99_us,
                        f.calls_per_s,
                        f.forwarder_cpu_us
                    );
                    results[i][k].push(f);
                }
            }
        }
        let medians: Vec<[Figures; 2]> = results
            .iter()
            .map(|per| per.clone().map(|runs| median_figures(&runs)))
            .collect();
        report(&targets, &medians, window, rounds, proxy_note.as_deref(), pinned);
        for target in targets {
            match target {
                Target::Direct(c) => c.close().await,
                Target::Daemon(d) => drop(d),
                Target::Proxy(c, child) => {
                    c.close().await;
                    stop_group(child);
                }
            }
        }
    });
    }

    fn median_figures(runs: &[Figures]) -> Figures {
        let of = |f: fn(&Figures) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
        Figures {
            p50_us: of(|f| f.p50_us),
            p99_us: of(|f| f.p99_us),
            calls_per_s: of(|f| f.calls_per_s),
            forwarder_cpu_us: of(|f| f.forwarder_cpu_us),
        }
    }

    /// Prints the table (medians of the rounds), the ratios and the targets' verdicts.
    fn report(
        targets: &[Target],
        medians: &[[Figures; 2]],
        window: Duration,
        rounds: usize,
        proxy_note: Option<&str>,
        pinned: bool,
    ) {
        println!();
        println!(
            "gateway, {}: echo through the daemon beside direct calls and mcp-proxy {PROXY_VERSION}; medians of {rounds} interleaved rounds of {:.1} s per figure",
            if pinned {
                "pinned (every process on CPU 0)"
            } else {
                "unpinned"
            },
            window.as_secs_f64()
        );
        println!(
            "{:<10} {:>9} {:>10} {:>10} {:>10} {:>16}",
            "target", "in flight", "p50 µs", "p99 µs", "calls/s", "fwd CPU µs/call"
        );
        for (target, figures) in targets.iter().zip(medians) {
            for (inflight, f) in [1, INFLIGHT].into_iter().zip(figures) {
                println!(
                    "{:<10} {:>9} {:>10.1} {:>10.1} {:>10.0} {:>16.1}",
                    target.name(),
                    inflight,
                    f.p50_us,
                    f.p99_us,
                    f.calls_per_s,
                    f.forwarder_cpu_us
                );
            }
        }
        let [direct, daemon] = [&medians[0], &medians[1]];
        let hop = daemon[0].p50_us - direct[0].p50_us;
        let kept = daemon[1].calls_per_s / direct[1].calls_per_s;
        println!();
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        println!(
            "the hop at p50, 1 in flight: {:.1} µs over direct ({:.1} vs {:.1} µs, {:.2}x); target at most 50 µs: {}",
            hop,
            daemon[0].p50_us,
            direct[0].p50_us,
            daemon[0].p50_us / direct[0].p50_us,
            verdict(hop <= 50.0)
        );
        println!(
            "64 in flight: the daemon keeps {:.0}% of the direct calls/s ({:.0} vs {:.0}); target at least 80%: {}",
            kept * 100.0,
            daemon[1].calls_per_s,
            direct[1].calls_per_s,
            verdict(kept >= 0.8)
        );
        match medians.get(2) {
            Some(proxy) => {
                for (k, inflight) in [1, INFLIGHT].into_iter().enumerate() {
                    let times = daemon[k].calls_per_s / proxy[k].calls_per_s;
                    println!(
                        "{inflight} in flight: the daemon makes {times:.1}x mcp-proxy's calls/s ({:.0} vs {:.0}), p99 {:.1} vs {:.1} µs ({:.1}x lower); target at least 5x and a lower p99: {}",
                        daemon[k].calls_per_s,
                        proxy[k].calls_per_s,
                        daemon[k].p99_us,
                        proxy[k].p99_us,
                        proxy[k].p99_us / daemon[k].p99_us,
                        verdict(times >= 5.0 && daemon[k].p99_us < proxy[k].p99_us)
                    );
                }
            }
            None => println!(
                "mcp-proxy: not measured ({})",
                proxy_note.unwrap_or("unknown")
            ),
        }
    }
}
