//! What the three Rust client programs share: the command line, the modes, and what they print
//! (one JSON line on stdout, read by `run.py`). Each program only says how to connect, call and
//! close with its library.
//!
//! `CLIENT TRANSPORT TARGET MODE [ARG]`
//!   TRANSPORT  stdio | http-json | http-sse
//!   TARGET     the server's command line (stdio, split on spaces) or its URL (http)
//!   MODE       startup | echo N | inflight SECONDS | big BYTES

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Concurrent calls in the `inflight` mode.
pub const INFLIGHT: usize = 64;
/// Echo calls made before the timed ones.
pub const WARMUP: usize = 200;

pub enum Mode {
    Startup,
    Echo(usize),
    Inflight(f64),
    Big(u64),
}

pub struct Args {
    pub transport: String,
    pub target: String,
    pub mode: Mode,
}

pub fn args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: CLIENT stdio|http-json|http-sse TARGET startup|echo N|inflight SECS|big BYTES";
    let arg = |i: usize| argv.get(i).cloned().unwrap_or_else(|| fail(usage));
    let number = |i: usize| arg(i).parse::<f64>().unwrap_or_else(|_| fail(usage));
    let mode = match arg(2).as_str() {
        "startup" => Mode::Startup,
        "echo" => Mode::Echo(number(3) as usize),
        "inflight" => Mode::Inflight(number(3)),
        "big" => Mode::Big(number(3) as u64),
        _ => fail(usage),
    };
    let transport = arg(0);
    if !["stdio", "http-json", "http-sse"].contains(&transport.as_str()) {
        fail(usage);
    }
    Args {
        transport,
        target: arg(1),
        mode,
    }
}

pub fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}

/// The program's tokio runtime: multi-threaded (what `#[tokio::main]` builds), or with
/// `PEER_RUNTIME=current` one thread, the caller's, as the floor and Node run. The flavor
/// decides whether a response wakes the caller across threads: tokio's workers poll the
/// server's pipe, and `block_on` runs the caller on the main thread.
pub fn runtime() -> tokio::runtime::Runtime {
    let mut builder = match std::env::var("PEER_RUNTIME").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    builder
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("runtime: {e}")))
}

/// Where the calls are made from (`PEER_CALLER`).
#[derive(PartialEq)]
pub enum Caller {
    /// Unset: the sequential calls from `block_on`, the 64 in flight from spawned tasks.
    Default,
    /// `block_on`: the calls from the future `block_on` runs; the 64 in flight joined there.
    BlockOn,
    /// `task`: the calls from spawned tasks (one for the sequential calls).
    Task,
}

pub fn caller_kind() -> Caller {
    match std::env::var("PEER_CALLER").as_deref() {
        Ok("task") => Caller::Task,
        Ok("block_on") => Caller::BlockOn,
        Ok(other) => fail(&format!("PEER_CALLER: task | block_on, not {other}")),
        Err(_) => Caller::Default,
    }
}

/// One connected client, as the modes use it.
pub trait Peer: Send + Sync + 'static {
    /// Lists the tools; returns how many.
    fn tools(&self) -> impl Future<Output = Result<usize, String>> + Send;
    /// Calls `echo` and returns its text.
    fn echo(&self, text: &str) -> impl Future<Output = Result<String, String>> + Send;
    /// Calls `big` and returns how many bytes of text the result had.
    fn big(&self, bytes: u64) -> impl Future<Output = Result<u64, String>> + Send;
    fn close(&self) -> impl Future<Output = ()> + Send;
}

/// Runs the mode and prints its one line.
pub async fn drive<P, F>(args: &Args, connect: F)
where
    P: Peer,
    F: Future<Output = Result<P, String>>,
{
    let start = Instant::now();
    let peer = Arc::new(
        connect
            .await
            .unwrap_or_else(|e| fail(&format!("connect: {e}"))),
    );
    let connected = start.elapsed();
    let line = match args.mode {
        Mode::Startup => {
            let tools = peer.tools().await.unwrap_or_else(|e| fail(&e));
            let listed = start.elapsed();
            peer.close().await;
            format!(
                r#"{{"connect_us":{},"list_us":{},"total_us":{},"tools":{tools}}}"#,
                connected.as_micros(),
                listed.as_micros(),
                start.elapsed().as_micros()
            )
        }
        Mode::Echo(n) => {
            let calls = {
                let peer = peer.clone();
                async move {
                    for _ in 0..WARMUP {
                        check_echo(peer.echo("hello").await);
                    }
                    let mut times = Vec::with_capacity(n);
                    for _ in 0..n {
                        let t = Instant::now();
                        check_echo(peer.echo("hello").await);
                        times.push(t.elapsed());
                    }
                    times
                }
            };
            // With `PEER_CALLER=task` the calls run in a spawned task, as in a server or an
            // agent host: on the multi-threaded runtime the answer then wakes the caller on the
            // worker that read it, where from `block_on` it wakes the main thread.
            let mut times = if caller_kind() == Caller::Task {
                tokio::spawn(calls)
                    .await
                    .unwrap_or_else(|e| fail(&format!("caller: {e}")))
            } else {
                calls.await
            };
            peer.close().await;
            times.sort();
            let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
            format!(
                r#"{{"p50_us":{:.1},"p99_us":{:.1},"calls":{n}}}"#,
                micros(at(0.50)),
                micros(at(0.99))
            )
        }
        Mode::Inflight(secs) => {
            let done = Arc::new(AtomicU64::new(0));
            let t = Instant::now();
            let deadline = t + Duration::from_secs_f64(secs);
            let caller = move |peer: Arc<P>, done: Arc<AtomicU64>| async move {
                while Instant::now() < deadline {
                    check_echo(peer.echo("hello").await);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            };
            if caller_kind() == Caller::BlockOn {
                // The 64 callers are futures joined on the caller's own thread, as
                // `join_all` in `#[tokio::main]` makes them: no task of their own.
                let callers = (0..INFLIGHT).map(|_| caller(peer.clone(), done.clone()));
                futures::future::join_all(callers).await;
            } else {
                let workers: Vec<_> = (0..INFLIGHT)
                    .map(|_| tokio::spawn(caller(peer.clone(), done.clone())))
                    .collect();
                for w in workers {
                    w.await.unwrap_or_else(|e| fail(&format!("worker: {e}")));
                }
            }
            let calls = done.load(Ordering::Relaxed);
            let rate = calls as f64 / t.elapsed().as_secs_f64();
            peer.close().await;
            format!(r#"{{"calls_per_s":{rate:.0},"calls":{calls}}}"#)
        }
        Mode::Big(bytes) => {
            let t = Instant::now();
            let outcome = peer.big(bytes).await;
            let secs = t.elapsed().as_secs_f64();
            peer.close().await;
            match outcome {
                Ok(got) if got == bytes => format!(r#"{{"ok":true,"secs":{secs:.3}}}"#),
                Ok(got) => format!(
                    r#"{{"ok":false,"secs":{secs:.3},"error":"got {got} bytes of {bytes}"}}"#
                ),
                Err(e) => format!(
                    r#"{{"ok":false,"secs":{secs:.3},"error":{}}}"#,
                    serde_json::Value::String(e.chars().take(2000).collect())
                ),
            }
        }
    };
    // The client's own peak RSS and CPU time (the server is another process, even where it is
    // our child).
    let line = format!(
        r#"{},"rss_kb":{},"cpu_ms":{}}}"#,
        &line[..line.len() - 1],
        peak_rss_kb(),
        cpu_ms()
    );
    println!("{line}");
}

/// The CPU time of this process so far, user and system, all threads, in ms (0 where /proc
/// has none); counted in the kernel's ticks, so to the nearest 10 ms.
pub fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which may hold spaces: utime and stime are 12 and 13.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    ticks * 10
}

/// VmHWM of this process, in KiB (0 where /proc has none).
pub fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:"));
    let kb = line.and_then(|l| l.split_whitespace().nth(1));
    kb.and_then(|kb| kb.parse().ok()).unwrap_or(0)
}

fn check_echo(reply: Result<String, String>) {
    match reply {
        Ok(text) if text == "hello" => {}
        Ok(text) => fail(&format!("echo answered {text:?}")),
        Err(e) => fail(&format!("echo: {e}")),
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
