//! On-demand servers (issue 41), beside their baselines in the same run:
//!
//! 1. Ten real servers (server-everything, server-memory, the ext-apps example server and
//!    mcp-server-time from `.ci/peers`, named apart; skipped, saying so, when they are not
//!    installed): `agenvoy-mcp serve` with all ten started at launch (the baseline), then with
//!    `"start": "on_demand"` on a new config folder (the first launch fills each catalog),
//!    then again on that folder (the catalogs kept). For each: from the spawn to the API
//!    listening with every tool registered (one `GET /v1/mcp/tools` read), the tools it lists,
//!    and after two idle seconds the resident memory of the daemon's whole process tree.
//! 2. The first call to a cold stdio fixture server (on demand, its catalog kept, idle): the
//!    time of `POST /v1/mcp/call`, beside the server's own start measured by this crate's
//!    `Client` in this process (spawn, handshake, tool list) plus one warm call through the
//!    daemon; what is left is ours. `ON_DEMAND_COLD_ROUNDS` (10) rounds, each after the
//!    server went idle again (`idle_timeout` 0.3 s); medians.
//! 3. `ON_DEMAND_COUNT` (1,000) fixture servers: started at launch (the baseline), then on
//!    demand with their catalogs kept: launch to every tool registered, and the daemon's RSS.
//!
//! Targets: 1. the process tree within 30 MiB after launch, idle, `/tools` complete, and
//! launch to every tool under 100 ms; 2. at most 20 ms of ours; 3. launch under 1 s and the
//! daemon under 40 MiB.
//!
//!     cargo bench --bench on_demand

#[cfg(target_os = "linux")]
mod daemon;

#[cfg(target_os = "linux")]
fn main() {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("this bench reads /proc: it runs on Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use super::daemon::{self, Daemon, fail, median};
    use agenvoy_mcp::{Client, ClientOptions};
    use bytes::Bytes;
    use hyper::Method;
    use serde_json::{Map, Value, json};
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    /// How long a daemon may take to listen (a first launch starts every server).
    const START_DEADLINE: Duration = Duration::from_secs(180);
    /// Idle time before memory is read.
    const SETTLE: Duration = Duration::from_secs(2);

    pub fn main() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            real_servers().await;
            cold_call().await;
            many().await;
        });
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    fn mib(kib: u64) -> f64 {
        kib as f64 / 1024.0
    }

    /// The repository's `.ci/peers`, where `.ci/install` puts the real servers.
    fn peers() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/peers")
    }

    /// The ten real servers, or `None` if one is not installed.
    fn ten_real_servers() -> Option<Map<String, Value>> {
        let bin = peers().join("node_modules/.bin");
        let program = |path: PathBuf| path.exists().then(|| path.display().to_string());
        let everything = program(bin.join("mcp-server-everything"))?;
        let memory = program(bin.join("mcp-server-memory"))?;
        let apps = program(bin.join("mcp-server-basic-vanillajs"))?;
        let time = program(peers().join("venv/bin/mcp-server-time"))?;
        let mut servers = Map::new();
        for i in 0..3 {
            servers.insert(
                format!("everything{i}"),
                json!({"command": everything, "args": ["stdio"]}),
            );
            servers.insert(format!("memory{i}"), json!({"command": memory}));
        }
        for i in 0..2 {
            servers.insert(
                format!("apps{i}"),
                json!({"command": apps, "args": ["--stdio"]}),
            );
            servers.insert(format!("time{i}"), json!({"command": time}));
        }
        Some(servers)
    }

    /// One daemon's launch: to listening with every tool registered, the tools, the tree's RSS.
    struct Launch {
        ready_ms: f64,
        tools: usize,
        tree_kib: u64,
        daemon_kib: u64,
    }

    async fn launch(dir: &Path, config: Value) -> Launch {
        let started = Instant::now();
        let daemon = Daemon::start_with(dir, config, START_DEADLINE);
        let mut api = daemon.connect().await;
        let tools = api.get_json("/v1/mcp/tools").await;
        let ready_ms = ms(started.elapsed());
        let count = tools["tools"].as_array().map_or(0, Vec::len);
        let status = api.get_json("/v1/mcp/status").await;
        let failed: Vec<&Value> = status["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| !matches!(s["state"].as_str(), Some("connected" | "idle")))
            .collect();
        if !failed.is_empty() {
            fail(format!("servers not up: {failed:?}"));
        }
        tokio::time::sleep(SETTLE).await;
        Launch {
            ready_ms,
            tools: count,
            tree_kib: daemon::tree_memory(daemon.pid()),
            daemon_kib: daemon.memory_and_fds().0,
        }
    }

    fn temp_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| fail(format!("a temporary folder: {e}")))
    }

    async fn real_servers() {
        let Some(servers) = ten_real_servers() else {
            println!(
                "SKIPPED ten real servers: not all installed in {} (run .ci/install)",
                peers().display()
            );
            return;
        };
        let at_launch = launch(temp_dir().path(), json!({"servers": servers})).await;
        let dir = temp_dir();
        let lazy = json!({"start": "on_demand", "servers": servers});
        let filling = launch(dir.path(), lazy.clone()).await;
        let kept = launch(dir.path(), lazy).await;
        if kept.tools != at_launch.tools {
            fail(format!(
                "on demand lists {} tools, at launch {}",
                kept.tools, at_launch.tools
            ));
        }
        println!("ten real servers ({} tools):", at_launch.tools);
        println!(
            "| start | launch to every tool | process tree RSS, idle | daemon RSS |\n|---|---|---|---|"
        );
        for (what, l) in [
            ("at launch (baseline)", &at_launch),
            ("on demand, first launch (fills the catalogs)", &filling),
            ("on demand, catalogs kept", &kept),
        ] {
            println!(
                "| {what} | {:.0} ms | {:.1} MiB | {:.1} MiB |",
                l.ready_ms,
                mib(l.tree_kib),
                mib(l.daemon_kib)
            );
        }
        println!(
            "targets: tree within 30 MiB: {:.1} MiB ({:.1}x less than at launch); launch under 100 ms: {:.0} ms",
            mib(kept.tree_kib),
            at_launch.tree_kib as f64 / kept.tree_kib.max(1) as f64,
            kept.ready_ms
        );
    }

    /// A call's time through the API, which must answer 200.
    async fn call(api: &mut daemon::Api) -> f64 {
        let body = Bytes::from_static(
            br#"{"name": "mcp__fx__echo", "arguments": {"text": "hi"}, "mode": "auto"}"#,
        );
        let started = Instant::now();
        match api.request(Method::POST, "/v1/mcp/call", Some(body)).await {
            Ok((200, _)) => ms(started.elapsed()),
            Ok((status, body)) => {
                fail(format!("call: {status} {}", String::from_utf8_lossy(&body)))
            }
            Err(e) => fail(format!("call: {e}")),
        }
    }

    async fn until_idle(api: &mut daemon::Api) {
        let started = Instant::now();
        loop {
            let status = api.get_json("/v1/mcp/status").await;
            if status["servers"][0]["state"] == "idle" {
                return;
            }
            if started.elapsed() > Duration::from_secs(30) {
                fail(format!("the server did not go idle: {status}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn cold_call() {
        let rounds: usize = std::env::var("ON_DEMAND_COLD_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(10);
        let dir = temp_dir();
        let config = json!({"start": "on_demand", "idle_timeout": 0.3,
            "servers": {"fx": daemon::fixture_entry()}});
        // The first launch fills the catalog; the second starts nothing.
        drop(Daemon::start_with(
            dir.path(),
            config.clone(),
            START_DEADLINE,
        ));
        let daemon = Daemon::start_with(dir.path(), config, START_DEADLINE);
        let mut api = daemon.connect().await;
        let (mut cold, mut warm, mut own) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            until_idle(&mut api).await;
            cold.push(call(&mut api).await);
            warm.push(call(&mut api).await);
            let started = Instant::now();
            let client =
                Client::connect_stdio("fx", &daemon::fixture_config(), ClientOptions::default())
                    .await
                    .unwrap_or_else(|e| fail(format!("a direct connect: {e}")));
            client
                .list_tools()
                .await
                .unwrap_or_else(|e| fail(format!("a direct tools/list: {e}")));
            own.push(ms(started.elapsed()));
            client.close().await;
        }
        let (cold, warm, own) = (median(&mut cold), median(&mut warm), median(&mut own));
        println!("the first call to a cold stdio fixture server ({rounds} rounds, medians):");
        println!(
            "| cold call | the server's own start (direct) | a warm call | ours: cold - start - warm |\n|---|---|---|---|"
        );
        println!(
            "| {cold:.1} ms | {own:.1} ms | {warm:.1} ms | {:.1} ms |",
            cold - own - warm
        );
        println!("target: at most 20 ms of ours: {:.1} ms", cold - own - warm);
    }

    async fn many() {
        let count: usize = std::env::var("ON_DEMAND_COUNT")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(1000);
        daemon::raise_file_limit(count as u64 * 8 + 1024);
        let servers: Map<String, Value> = (0..count)
            .map(|i| (format!("s{i}"), daemon::fixture_entry()))
            .collect();
        let at_launch = launch(temp_dir().path(), json!({"servers": servers})).await;
        let dir = temp_dir();
        let lazy = json!({"start": "on_demand", "servers": servers});
        let filling = launch(dir.path(), lazy.clone()).await;
        let kept = launch(dir.path(), lazy).await;
        println!("{count} fixture servers ({} tools):", kept.tools);
        println!(
            "| start | launch to every tool | daemon RSS | process tree RSS |\n|---|---|---|---|"
        );
        for (what, l) in [
            ("at launch (baseline)", &at_launch),
            ("on demand, first launch (fills the catalogs)", &filling),
            ("on demand, catalogs kept", &kept),
        ] {
            println!(
                "| {what} | {:.0} ms | {:.1} MiB | {:.1} MiB |",
                l.ready_ms,
                mib(l.daemon_kib),
                mib(l.tree_kib)
            );
        }
        println!(
            "targets: launch under 1 s: {:.0} ms ({:.1}x faster than at launch); daemon under 40 MiB: {:.1} MiB",
            kept.ready_ms,
            at_launch.ready_ms / kept.ready_ms.max(1.0),
            mib(kept.daemon_kib)
        );
    }
}
