//! Many servers in one daemon (issue 30, §4), beside its baselines in the same run.
//!
//! For each count (`MANY_SERVERS`, default `10,100,1000`) of stdio fixture servers in one
//! config, `agenvoy-mcp serve` is started and timed until `GET /v1/mcp/status` shows every
//! server connected (the daemon listens once none is still connecting, so that is the line
//! that says it listens, then one status read); then, after a second idle, its resident
//! memory (VmRSS) and open descriptors (/proc/PID/fd) less those of the daemon with no
//! server, per server; then the latency of `GET /v1/mcp/status` and `GET /v1/mcp/tools`
//! (p50 and p99 of sequential requests on one keep-alive connection, and the answer's size),
//! beside the same at no server; then the most a `/status` took while every server was
//! reconnecting (`POST /v1/mcp/reconnect`), polled every 20 ms.
//!
//! The baselines: the daemon with no server (start, memory, descriptors, route latency), and
//! the same count of fixture servers connected by this crate's `Client` in a new process of
//! this bench (all at once, each connect followed by its tool list, as the daemon does), timed
//! the same way, with that process's memory and descriptors per server.
//!
//! Rounds (`MANY_SERVERS_ROUNDS`, default 3) repeat it all; the median counts. The soft limit
//! of open files is raised to the hard one where it is lower than the largest count needs.
//!
//! Targets (issue 30): 1,000 servers connected in under 5 s, at most 160 KiB of daemon RSS per
//! idle server, `/tools` with 1,000 servers' tools under 50 ms (at p99).
//!
//!     cargo bench --bench many_servers

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

    use agenvoy_mcp::{Client, ClientOptions};
    use bytes::Bytes;
    use daemon::{Daemon, fail, median, quantile};
    use hyper::Method;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// Requests per route for the latency figures.
    const REQUESTS: usize = 50;
    /// How long the daemon may take to listen.
    const START_DEADLINE: Duration = Duration::from_secs(120);
    /// Idle time after connecting, before memory is read (the first tool lists settle).
    const SETTLE: Duration = Duration::from_secs(1);

    /// One daemon's figures.
    #[derive(Clone, Copy, Default)]
    struct Figures {
        /// From the spawn to every server connected (ms): a first start, and a restart with the
        /// servers' eras remembered.
        connected_ms: f64,
        restarted_ms: f64,
        rss_kib: f64,
        fds: f64,
        status_p50_ms: f64,
        status_p99_ms: f64,
        status_bytes: f64,
        tools_p50_ms: f64,
        tools_p99_ms: f64,
        tools_bytes: f64,
        tools: f64,
        /// `POST /v1/mcp/call` of one server's echo, with every server's tools registered.
        call_p50_ms: f64,
        call_p99_ms: f64,
        /// The slowest `/status` while every server reconnects (ms), and how long that took.
        status_reconnecting_max_ms: f64,
        reconnect_ms: f64,
    }

    /// The library baseline's figures.
    #[derive(Clone, Copy, Default)]
    struct Direct {
        connected_ms: f64,
        rss_kib: f64,
        fds: f64,
    }

    /// Set in the bench's runs of itself that measure the direct baseline: the count.
    const DIRECT_RUN: &str = "MANY_SERVERS_DIRECT";

    /// The direct baseline, in a new process of this bench (so that no memory the allocator kept
    /// from an earlier run counts): its one line of figures.
    fn direct_in_new_process(count: usize) -> Direct {
        let output = std::env::current_exe()
            .and_then(|me| {
                Command::new(me)
                    .env(DIRECT_RUN, count.to_string())
                    .stderr(Stdio::inherit())
                    .output()
            })
            .unwrap_or_else(|e| fail(format!("the direct run: {e}")));
        let line = String::from_utf8_lossy(&output.stdout);
        let figures: Vec<f64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        match figures[..] {
            [connected_ms, rss_kib, fds] if output.status.success() => Direct {
                connected_ms,
                rss_kib,
                fds,
            },
            _ => fail(format!("the direct run said {line:?} ({})", output.status)),
        }
    }

    /// `count` fixture servers connected by this crate's client in this process, at once.
    async fn direct(count: usize) -> Direct {
        let (rss_before, fds_before) = daemon::process_memory_and_fds(std::process::id());
        let started = Instant::now();
        let mut connecting = tokio::task::JoinSet::new();
        for i in 0..count {
            connecting.spawn(async move {
                let client = Client::connect_stdio(
                    &format!("s{i}"),
                    &daemon::fixture_config(),
                    ClientOptions::default(),
                )
                .await
                .unwrap_or_else(|e| fail(format!("a direct connect: {e}")));
                client
                    .list_tools()
                    .await
                    .unwrap_or_else(|e| fail(format!("a direct tools/list: {e}")));
                client
            });
        }
        let mut clients = Vec::with_capacity(count);
        while let Some(client) = connecting.join_next().await {
            clients.push(client.unwrap_or_else(|e| fail(format!("a connect task: {e}"))));
        }
        let connected = started.elapsed();
        tokio::time::sleep(SETTLE).await;
        let (rss, fds) = daemon::process_memory_and_fds(std::process::id());
        let mut closing = tokio::task::JoinSet::new();
        for client in clients {
            closing.spawn(async move { client.close().await });
        }
        while closing.join_next().await.is_some() {}
        Direct {
            connected_ms: connected.as_secs_f64() * 1e3,
            rss_kib: rss.saturating_sub(rss_before) as f64,
            fds: fds.saturating_sub(fds_before) as f64,
        }
    }

    /// p50, p99 (ms) and the answer's size of `REQUESTS` sequential GETs of `path`.
    async fn latency(api: &mut daemon::Api, path: &str) -> (f64, f64, usize) {
        let mut times = Vec::with_capacity(REQUESTS);
        let mut size = 0;
        for _ in 0..REQUESTS {
            let t = Instant::now();
            match api.request(Method::GET, path, None).await {
                Ok((200, body)) => size = body.len(),
                Ok((status, _)) => fail(format!("GET {path}: {status}")),
                Err(e) => fail(format!("GET {e}")),
            }
            times.push(t.elapsed());
        }
        times.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        (ms(quantile(&times, 0.5)), ms(quantile(&times, 0.99)), size)
    }

    /// Polls `/v1/mcp/status` until all `count` servers are connected; the time since `started`.
    async fn all_connected(api: &mut daemon::Api, count: usize, started: Instant) -> Duration {
        loop {
            let status = api.get_json("/v1/mcp/status").await;
            let servers = status["servers"].as_array().cloned().unwrap_or_default();
            let up = servers.iter().filter(|s| s["state"] == "connected").count();
            if up == count {
                return started.elapsed();
            }
            if servers.iter().any(|s| s["state"] == "failed") {
                fail(format!("a server failed: {status}"));
            }
            if started.elapsed() > START_DEADLINE {
                fail(format!(
                    "{up} of {count} servers connected after {START_DEADLINE:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// p50 and p99 (ms) of `REQUESTS` sequential `POST /v1/mcp/call`s of the first server's echo.
    async fn call_latency(api: &mut daemon::Api) -> (f64, f64) {
        let body = Bytes::from_static(
            br#"{"name":"mcp__s0__echo","arguments":{"text":"hello"},"mode":"auto"}"#,
        );
        let mut times = Vec::with_capacity(REQUESTS);
        for _ in 0..REQUESTS {
            let t = Instant::now();
            match api
                .request(Method::POST, "/v1/mcp/call", Some(body.clone()))
                .await
            {
                Ok((200, answer)) if answer.windows(7).any(|w| w == b"\"hello\"") => {}
                Ok((status, answer)) => fail(format!(
                    "POST /v1/mcp/call: {status} {}",
                    String::from_utf8_lossy(&answer)
                )),
                Err(e) => fail(format!("POST {e}")),
            }
            times.push(t.elapsed());
        }
        times.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        (ms(quantile(&times, 0.5)), ms(quantile(&times, 0.99)))
    }

    /// The daemon with `count` fixture servers: a first start (no era remembered: each server is
    /// probed), its figures, then a restart on the same config folder (timed only).
    async fn in_daemon(count: usize) -> Figures {
        let servers: serde_json::Map<String, serde_json::Value> = (0..count)
            .map(|i| (format!("s{i}"), daemon::fixture_entry()))
            .collect();
        let dir = tempfile::tempdir().unwrap_or_else(|e| fail(format!("temp dir: {e}")));
        let started = Instant::now();
        let daemon = Daemon::start(dir.path(), servers.clone(), START_DEADLINE);
        let mut api = daemon.connect().await;
        let connected = all_connected(&mut api, count, started).await;
        tokio::time::sleep(SETTLE).await;
        let (rss, fds) = daemon.memory_and_fds();
        let (status_p50_ms, status_p99_ms, status_bytes) =
            latency(&mut api, "/v1/mcp/status").await;
        let (tools_p50_ms, tools_p99_ms, tools_bytes) = latency(&mut api, "/v1/mcp/tools").await;
        let (call_p50_ms, call_p99_ms) = if count > 0 {
            call_latency(&mut api).await
        } else {
            (0.0, 0.0)
        };
        let tools = api.get_json("/v1/mcp/tools").await["tools"]
            .as_array()
            .map_or(0, Vec::len);
        // Every server reconnecting (each closed and started again) while /status is polled on
        // another connection.
        let mut reconnecting = daemon.connect().await;
        let reconnect_started = Instant::now();
        let reconnect = tokio::spawn(async move {
            reconnecting
                .request(Method::POST, "/v1/mcp/reconnect", Some(Bytes::new()))
                .await
        });
        let mut slowest = Duration::ZERO;
        while !reconnect.is_finished() {
            let t = Instant::now();
            api.get_json("/v1/mcp/status").await;
            slowest = slowest.max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        match reconnect.await {
            Ok(Ok((200, _))) => {}
            other => fail(format!("POST /v1/mcp/reconnect: {other:?}")),
        }
        let reconnect_ms = reconnect_started.elapsed().as_secs_f64() * 1e3;
        drop(daemon);
        // Every server's era remembered, so the restart starts each with `initialize`.
        let eras = std::fs::read_to_string(dir.path().join("server-eras.json")).unwrap_or_default();
        let remembered = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&eras)
            .map_or(0, |m| m.len());
        if count > 0 && remembered != count {
            fail(format!(
                "server-eras.json remembers {remembered} of {count} servers"
            ));
        }
        let started = Instant::now();
        let daemon = Daemon::start(dir.path(), servers, START_DEADLINE);
        let restarted = all_connected(&mut daemon.connect().await, count, started).await;
        drop(daemon);
        Figures {
            connected_ms: connected.as_secs_f64() * 1e3,
            restarted_ms: restarted.as_secs_f64() * 1e3,
            rss_kib: rss as f64,
            fds: fds as f64,
            status_p50_ms,
            status_p99_ms,
            status_bytes: status_bytes as f64,
            tools_p50_ms,
            tools_p99_ms,
            tools_bytes: tools_bytes as f64,
            tools: tools as f64,
            call_p50_ms,
            call_p99_ms,
            status_reconnecting_max_ms: slowest.as_secs_f64() * 1e3,
            reconnect_ms,
        }
    }

    /// Says the limit of processes (and threads) this user may run: each fixture server is a
    /// process with two threads or so, in the daemon's run and in the direct baseline's.
    fn check_process_limit(needed: u64) {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut limit) } != 0 {
            fail("getrlimit(RLIMIT_NPROC) failed");
        }
        let soft = limit.rlim_cur;
        eprintln!("processes: soft limit {soft}, about {needed} needed at most");
        if soft < needed {
            fail("the limit of processes is too low for the largest count (ulimit -u)");
        }
    }

    pub fn main() {
        if let Some(count) = std::env::var(DIRECT_RUN).ok().and_then(|c| c.parse().ok()) {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let d = runtime.block_on(direct(count));
            println!("{} {} {}", d.connected_ms, d.rss_kib, d.fds);
            return;
        }
        let counts: Vec<usize> = std::env::var("MANY_SERVERS")
            .unwrap_or_else(|_| "10,100,1000".to_string())
            .split(',')
            .map(|c| {
                c.trim()
                    .parse()
                    .unwrap_or_else(|_| fail("MANY_SERVERS: counts, as 10,100"))
            })
            .collect();
        let rounds = std::env::var("MANY_SERVERS_ROUNDS")
            .ok()
            .and_then(|r| r.parse::<usize>().ok())
            .unwrap_or(3)
            .max(1);
        let largest = counts.iter().copied().max().unwrap_or(0) as u64;
        // Each stdio server holds three pipes, in the daemon and in the direct baseline, and the
        // daemon keeps a few more descriptors of its own.
        daemon::raise_file_limit(largest * 8 + 1024);
        check_process_limit(largest * 3 + 256);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut base = Vec::new();
        let mut results = vec![(Vec::new(), Vec::new()); counts.len()];
        runtime.block_on(async {
        for round in 1..=rounds {
            let b = in_daemon(0).await;
            eprintln!(
                "round {round}: no server: listening after {:.0} ms, {:.0} KiB, {} fds",
                b.connected_ms, b.rss_kib, b.fds
            );
            base.push(b);
            for (i, &count) in counts.iter().enumerate() {
                let f = in_daemon(count).await;
                let d = direct_in_new_process(count);
                eprintln!(
                    "round {round}: {count:>5} servers: daemon {:.0} ms, {:.0} KiB, {} fds, /status {:.2} ms, /tools {:.2} ms ({} tools), call {:.3} ms, reconnect {:.0} ms (slowest /status {:.1} ms); direct {:.0} ms, +{:.0} KiB, +{} fds",
                    f.connected_ms,
                    f.rss_kib,
                    f.fds,
                    f.status_p50_ms,
                    f.tools_p50_ms,
                    f.tools,
                    f.call_p50_ms,
                    f.reconnect_ms,
                    f.status_reconnecting_max_ms,
                    d.connected_ms,
                    d.rss_kib,
                    d.fds
                );
                results[i].0.push(f);
                results[i].1.push(d);
            }
        }
    });
        report(&counts, &base, &results, rounds);
    }

    type Rounds = (Vec<Figures>, Vec<Direct>);

    fn report(counts: &[usize], base: &[Figures], results: &[Rounds], rounds: usize) {
        let of = |runs: &[Figures], f: fn(&Figures) -> f64| {
            median(&mut runs.iter().map(f).collect::<Vec<_>>())
        };
        let of_direct = |runs: &[Direct], f: fn(&Direct) -> f64| {
            median(&mut runs.iter().map(f).collect::<Vec<_>>())
        };
        let base_rss = of(base, |f| f.rss_kib);
        let base_fds = of(base, |f| f.fds);
        println!();
        println!(
            "many servers: stdio fixture servers in one daemon, beside the daemon with none and the same servers connected directly by the library; medians of {rounds} rounds"
        );
        println!();
        println!(
            "| servers | all connected, first start | restart (eras remembered) | the library directly | first start / direct | reconnect all | slowest /status meanwhile |"
        );
        println!("|---|---|---|---|---|---|---|");
        println!(
            "| 0 | {:.0} ms (listening) | {:.0} ms | | | | |",
            of(base, |f| f.connected_ms),
            of(base, |f| f.restarted_ms)
        );
        for (&count, (runs, direct)) in counts.iter().zip(results) {
            let connected = of(runs, |f| f.connected_ms);
            let direct_ms = of_direct(direct, |d| d.connected_ms);
            println!(
                "| {count} | {connected:.0} ms | {:.0} ms | {direct_ms:.0} ms | {:.2}x | {:.0} ms | {:.1} ms |",
                of(runs, |f| f.restarted_ms),
                connected / direct_ms,
                of(runs, |f| f.reconnect_ms),
                of(runs, |f| f.status_reconnecting_max_ms),
            );
        }
        println!();
        println!(
            "| servers | daemon RSS | RSS per server | the library's RSS per server | daemon fds | fds per server | the library's fds per server |"
        );
        println!("|---|---|---|---|---|---|---|");
        println!(
            "| 0 | {:.1} MiB | | | {base_fds:.0} | | |",
            base_rss / 1024.0
        );
        for (&count, (runs, direct)) in counts.iter().zip(results) {
            let n = count as f64;
            let rss = of(runs, |f| f.rss_kib);
            let fds = of(runs, |f| f.fds);
            println!(
                "| {count} | {:.1} MiB | {:.1} KiB | {:.1} KiB | {fds:.0} | {:.2} | {:.2} |",
                rss / 1024.0,
                (rss - base_rss) / n,
                of_direct(direct, |d| d.rss_kib) / n,
                (fds - base_fds) / n,
                of_direct(direct, |d| d.fds) / n,
            );
        }
        println!();
        println!(
            "| servers | tools | /status p50 | /status p99 | its size | /tools p50 | /tools p99 | its size | call p50 | call p99 |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        let routes = |count: usize, runs: &[Figures]| {
            println!(
                "| {count} | {:.0} | {:.2} ms | {:.2} ms | {:.0} KiB | {:.2} ms | {:.2} ms | {:.0} KiB | {:.3} ms | {:.3} ms |",
                of(runs, |f| f.tools),
                of(runs, |f| f.status_p50_ms),
                of(runs, |f| f.status_p99_ms),
                of(runs, |f| f.status_bytes) / 1024.0,
                of(runs, |f| f.tools_p50_ms),
                of(runs, |f| f.tools_p99_ms),
                of(runs, |f| f.tools_bytes) / 1024.0,
                of(runs, |f| f.call_p50_ms),
                of(runs, |f| f.call_p99_ms),
            )
        };
        routes(0, base);
        for (&count, (runs, _)) in counts.iter().zip(results) {
            routes(count, runs);
        }
        println!();
        for (&count, (runs, direct)) in counts.iter().zip(results) {
            if count != 1000 {
                continue;
            }
            let connected = of(runs, |f| f.connected_ms);
            let direct_ms = of_direct(direct, |d| d.connected_ms);
            let per_server = (of(runs, |f| f.rss_kib) - base_rss) / count as f64;
            let tools_p99 = of(runs, |f| f.tools_p99_ms);
            println!(
                "1,000 servers connected in {:.2} s at a first start ({:.2} s at a restart; the library directly: {:.2} s, {:.2}x); target under 5 s: {}",
                connected / 1e3,
                of(runs, |f| f.restarted_ms) / 1e3,
                direct_ms / 1e3,
                connected / direct_ms,
                verdict(connected < 5000.0)
            );
            println!(
                "daemon RSS per idle server at 1,000: {per_server:.1} KiB (the library alone: {:.1} KiB); target at most 160 KiB: {}",
                of_direct(direct, |d| d.rss_kib) / count as f64,
                verdict(per_server <= 160.0)
            );
            println!(
                "/tools with 1,000 servers: p99 {tools_p99:.2} ms (no server: {:.2} ms); target under 50 ms: {}",
                of(base, |f| f.tools_p99_ms),
                verdict(tools_p99 < 50.0)
            );
        }
    }

    fn verdict(ok: bool) -> &'static str {
        if ok { "met" } else { "MISSED" }
    }
}
