//! The stdio transport: the server is a child process speaking newline-delimited JSON-RPC.
//!
//! The child gets [`DEFAULT_ENV`] from this process's environment plus its config's `env`,
//! not the whole environment (unless [`StdioConfig::inherit_env`]). Its stderr lines go to
//! the log (target `agenvoy_mcp::server`, level info), control characters escaped and its
//! `env` values hidden; the last few are kept, so that when the server exits, the connection's
//! end names its exit status and what it said last (a server that fails at start says why).
//!
//! On Unix the child runs in a process group of its own, so closing reaches everything it
//! started (npx-style launchers start node). Closing is: close stdin, wait 2 s, SIGTERM the
//! group, wait 2 s, SIGKILL the group. Dropping the transport without closing does the same on
//! a thread of its own.
//!
//! Orphaned grandchildren are re-parented to the nearest subreaper, usually init. Where init
//! does not reap (some containers), call [`become_subreaper`] once so that this process
//! adopts them and the close sequence reaps them: no zombie is left either way.
//!
//! On Windows the command is found over `PATH` and `PATHEXT` as `cmd.exe` finds it (`npx` is
//! `npx.cmd`), a batch file runs through the system's `cmd.exe` with every argument quoted, and
//! an argument that cannot be quoted safely (one holding `"`, `%` or a control character) is
//! refused with an error naming it (`args[2]`). The child's process tree is held in a Job
//! Object that kills it when closed. Closing is: close stdin, wait 2 s, terminate the job,
//! wait 2 s; and the job dies with this process, however it ends.

use super::{Assembler, BoxFuture, Inbound, Limits, Shortcut, Transport, WholeReplies};
use crate::error::{Error, ErrorKind, Result};
use crate::wire::decode::Decoded;
use crate::wire::framing::{LineFramer, Piece};
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, BufReader};
#[cfg(unix)]
use tokio::process::Command;
use tokio::process::{Child, ChildStdin};
use tokio::sync::{Notify, mpsc, oneshot};

// Plain functions (tested everywhere); only Windows calls them.
#[cfg_attr(not(windows), allow(dead_code))]
mod command;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows::{Tree, shut_down};

/// Size asked for the pipe of the server's stdout, and of each read from it: with the default
/// 64 KiB pipe, server and client take turns on every 64 KiB; with 1 MiB the server writes
/// ahead while the client decodes (about 2.5x faster end to end on a 256 MiB result).
/// Costs kernel memory for the pipe and one buffer per server, both touched only as far as the
/// server writes ahead (a server of small messages keeps using the first pages).
const PIPE_SIZE: usize = 1 << 20;

/// How long a server gets after stdin closes, and again after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(2);
/// Longest stderr line forwarded to the log; the rest is cut.
pub const STDERR_LINE_MAX: usize = 4096;
/// How many of the last stderr lines the end of a connection names, and how many characters
/// of each: enough to say why a server failed, bounded whatever it prints.
const STDERR_TAIL_LINES: usize = 5;
const STDERR_TAIL_CHARS: usize = 300;
/// How long the end of stdout waits for the server's exit status and the rest of its stderr.
const EXIT_WAIT: Duration = Duration::from_millis(500);

/// The variables a server inherits from this process unless its config says
/// [`StdioConfig::inherit_env`]: what programs need to find themselves, their home, the
/// terminal and the locale (`LC_*` too), on Unix and on Windows. Nothing else: a server never
/// sees the secrets meant for others (cloud keys, other servers' tokens).
pub const DEFAULT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "TMPDIR",
    "TZ",
    // Windows
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "TEMP",
    "TMP",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "HOMEDRIVE",
    "HOMEPATH",
    "USERNAME",
];

/// Whether the variable `name` is passed to a server by default (see [`DEFAULT_ENV`]).
pub fn is_default_env(name: &str) -> bool {
    // Windows names are case-insensitive (`Path`); on Unix no one spells these otherwise.
    DEFAULT_ENV.iter().any(|d| d.eq_ignore_ascii_case(name)) || name.starts_with("LC_")
}

/// How to start a stdio server: [`StdioConfig::new`] with the program, then the setters for
/// the rest.
///
/// ```
/// use agenvoy_mcp::StdioConfig;
///
/// let config = StdioConfig::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .env("LOG_LEVEL", "debug");
/// assert_eq!(config.args.len(), 2);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program to run, found on `PATH` if it has no slash (on Windows, as `cmd.exe` finds
    /// it: each folder of `PATH` with each extension of `PATHEXT`, so `npx` is `npx.cmd`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it, over the ones it inherits.
    pub env: HashMap<String, String>,
    /// Whether it inherits this process's whole environment; by default it gets only
    /// [`DEFAULT_ENV`] (plus `env`).
    pub inherit_env: bool,
    /// The working directory; the current one if `None`.
    pub cwd: Option<std::path::PathBuf>,
}

impl StdioConfig {
    /// A config that runs `command` with no arguments, the default environment, in the
    /// current directory.
    pub fn new(command: impl Into<String>) -> Self {
        StdioConfig {
            command: command.into(),
            args: Vec::new(),
            env: HashMap::new(),
            inherit_env: false,
            cwd: None,
        }
    }

    /// With the argument `arg` after those given so far.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// With the arguments `args` after those given so far.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// With the variable `name` set to `value` for the server.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// With this process's whole environment inherited, or only [`DEFAULT_ENV`].
    pub fn with_inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// With the server started in the directory `cwd`.
    pub fn with_cwd(mut self, cwd: impl Into<std::path::PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }
}

impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Arguments and variable values are expanded from the environment: secrets, often.
        let mut names: Vec<&str> = self.env.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &format_args!("[{} hidden]", self.args.len()))
            .field("env", &names)
            .field("inherit_env", &self.inherit_env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// Messages waiting for the writer; past this many, `send` waits (within its caller's
/// deadline) for room.
const WRITE_QUEUE: usize = 64;

/// One message for the writer, and where to say how its write ended.
struct Outgoing {
    bytes: Vec<u8>,
    /// How much of `bytes` `send` wrote already: the rest must follow, caller or not.
    at: usize,
    written: oneshot::Sender<std::io::Result<()>>,
}

/// The server's stdin, shared by `send`, which writes a message itself when nothing is queued
/// and the pipe takes it whole (no task hop: the common case), the writer task, which writes
/// everything else in order, and the reader, which corks it.
struct Pipe {
    /// `None` once closed: dropping it closes the pipe, even in the middle of a write the
    /// server does not read.
    stdin: Option<ChildStdin>,
    /// Messages queued for the writer task and not yet written; while there are any, `send`
    /// queues too, so messages keep their order.
    queued: usize,
    /// Set by the reader when it hands over several answers at once: their callers' next
    /// requests are gathered here, and written in one write instead of one write (and one
    /// wake-up of the server) each: by the caller that brings `owed` to nothing, or by the
    /// writer each time the runtime has run the tasks that were ready; the pipe stays corked
    /// until a turn gathers nothing.
    corked: Option<Vec<u8>>,
    /// Answers handed over since the pipe was corked whose callers have not sent since (as
    /// far as counting tells: any request sent counts).
    owed: usize,
}

/// A running stdio server.
pub struct StdioTransport {
    server: String,
    /// The writer's queue; `None` once closed.
    writer: StdMutex<Option<mpsc::Sender<Outgoing>>>,
    cork: Cork,
    /// The writer task.
    writer_task: tokio::task::AbortHandle,
    /// The server, until the close sequence takes it; the reader reads its exit status.
    child: Arc<StdMutex<Option<Child>>>,
    /// Its process tree (process group or Job Object), taken with `child`.
    tree: StdMutex<Option<Tree>>,
    pid: u32,
    /// Why the server's stdout ended, once the reader knows: a write that failed because the
    /// server exited says so, with its exit status and last stderr lines.
    ended: tokio::sync::watch::Receiver<Option<String>>,
    /// How the reader hands responses to the session without the channel.
    shortcut: Arc<Shortcut>,
    /// The requests whose answers the reader keeps whole.
    whole: Arc<WholeReplies>,
}

impl StdioTransport {
    /// Starts the server and returns the transport with the channel of what it says.
    pub fn spawn(
        server: &str,
        config: &StdioConfig,
        limits: Limits,
    ) -> Result<(StdioTransport, mpsc::Receiver<Inbound>)> {
        let spawn_error = |why: String| Error::new(server, ErrorKind::Spawn(why));
        #[cfg(unix)]
        let mut cmd = {
            let mut cmd = Command::new(&config.command);
            cmd.args(&config.args).process_group(0);
            cmd
        };
        #[cfg(windows)]
        let mut cmd = windows::command(config).map_err(spawn_error)?;
        if !config.inherit_env {
            cmd.env_clear()
                .envs(std::env::vars_os().filter(|(k, _)| k.to_str().is_some_and(is_default_env)));
        }
        cmd.envs(&config.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &config.cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| spawn_error(format!("{}: {e}", config.command)).caused_by(e))?;
        let pid = child.id().expect("a child just spawned has a pid");
        #[cfg(unix)]
        let tree = Tree {
            pgid: pid as libc::pid_t,
        };
        #[cfg(windows)]
        let tree = Tree::adopt(&mut child)
            .map_err(|why| spawn_error(format!("{}: {why}", config.command)))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        grow_pipe(&stdout);
        let (tx, rx) = mpsc::channel(64);
        let (queue, outgoing) = mpsc::channel(WRITE_QUEUE);
        let pipe = Arc::new(StdMutex::new(Pipe {
            stdin: Some(stdin),
            queued: 0,
            corked: None,
            owed: 0,
        }));
        let cork = Cork {
            pipe: pipe.clone(),
            flush: Arc::new(Notify::new()),
        };
        let child = Arc::new(StdMutex::new(Some(child)));
        let tail = Arc::new(StdMutex::new(VecDeque::new()));
        let secrets = config.env.values().filter(|v| v.len() >= 4).cloned();
        let stderr = tokio::spawn(forward_stderr(
            server.to_string(),
            stderr,
            secrets.collect(),
            tail.clone(),
        ));
        let (why_ended, ended) = tokio::sync::watch::channel(None);
        let reader_ended = Ended {
            child: child.clone(),
            stderr,
            tail,
            reported: why_ended,
        };
        let shortcut = Arc::new(Shortcut::default());
        let whole = limits.whole.clone();
        let reader = read_stdout(
            server.to_string(),
            stdout,
            limits,
            (tx, shortcut.clone()),
            cork.clone(),
            reader_ended,
        );
        tokio::spawn(reader);
        let writer_task = tokio::spawn(write_stdin(cork.clone(), outgoing)).abort_handle();
        let transport = StdioTransport {
            server: server.to_string(),
            writer: StdMutex::new(Some(queue)),
            cork,
            writer_task,
            child,
            tree: StdMutex::new(Some(tree)),
            pid,
            ended,
            shortcut,
            whole,
        };
        Ok((transport, rx))
    }
}

impl StdioTransport {
    /// The error of a write that failed (`fallback` says how): why the server ended, when its
    /// stdout ends within [`EXIT_WAIT`] and a little more, as it does when it exited.
    async fn ended_error(&self, fallback: &str) -> Error {
        let mut ended = self.ended.clone();
        let known = ended.wait_for(Option::is_some);
        let why = match tokio::time::timeout(EXIT_WAIT * 2, known).await {
            Ok(Ok(why)) => why.clone().unwrap_or_default(),
            _ => fallback.to_string(),
        };
        Error::new(&self.server, ErrorKind::Closed(why))
    }
}

impl Transport for StdioTransport {
    /// Writes the message at once if nothing is queued and the pipe takes it whole; adds it to
    /// the cork if the pipe is corked and no write is under way (and writes the cork, if it is
    /// the last request owed); else queues (the rest of) it for the writer and waits until it
    /// is written. Dropping the future (a deadline) before the write starts means it is never
    /// written; once a byte of it is written or it is in the cork, it all follows.
    fn send(&self, message: super::Outbound) -> BoxFuture<'_, Result<()>> {
        let mut message = message.bytes;
        Box::pin(async move {
            message.push(b'\n');
            let closed = |why: &str| Error::new(&self.server, ErrorKind::Closed(why.into()));
            let queue = self.writer.lock().expect("writer lock").clone();
            let queue = queue.ok_or_else(|| closed("the transport was closed"))?;
            // The one wait before the message is committed: room in the queue, in case the
            // pipe does not take it all now.
            let Ok(room) = queue.reserve().await else {
                return Err(self.ended_error("the server's stdin is closed").await);
            };
            let outcome = {
                let mut pipe = self.cork.pipe.lock().expect("pipe lock");
                let Pipe {
                    stdin,
                    queued,
                    corked,
                    owed,
                } = &mut *pipe;
                let stdin = stdin
                    .as_mut()
                    .ok_or_else(|| closed("the transport was closed"))?;
                // Only while no write is under way: a server that stops reading leaves later
                // messages waiting for room on the bounded queue, not growing the cork.
                if let Some(cork) = corked.as_mut().filter(|_| *queued == 0) {
                    if cork.is_empty() {
                        *cork = message;
                    } else {
                        cork.extend_from_slice(&message);
                    }
                    if *owed != 1 {
                        *owed = owed.saturating_sub(1);
                        return Ok(());
                    }
                    // The last request owed: nothing more is coming, so it is written now, by
                    // its caller, whichever thread that runs on (no wait for the writer's turn).
                    *owed = 0;
                    message = corked.take().unwrap_or_default();
                }
                let at = if *queued == 0 {
                    write_now(stdin, &message)
                } else {
                    0
                };
                if at == message.len() {
                    return Ok(());
                }
                *queued += 1;
                let (written, outcome) = oneshot::channel();
                room.send(Outgoing {
                    bytes: message,
                    at,
                    written,
                });
                outcome
            };
            // A message is read by the server only once its last byte (the newline) is
            // written, so a failed write never reached it.
            match outcome.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(self
                    .ended_error(&format!("writing to the server's stdin: {e}"))
                    .await),
                Err(_) => Err(closed("the transport was closed during the write")),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Never waits for a write: a server that stopped reading would hold it forever.
            self.writer.lock().expect("writer lock").take();
            self.writer_task.abort();
            self.cork.pipe.lock().expect("pipe lock").stdin.take();
            let child = self.child.lock().expect("child lock").take();
            let tree = self.tree.lock().expect("tree lock").take();
            if let (Some(child), Some(tree)) = (child, tree) {
                let _ = tokio::task::spawn_blocking(move || shut_down(child, tree)).await;
            }
        })
    }

    fn kind(&self) -> &'static str {
        "stdio"
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn shortcut(&self) -> Option<Arc<Shortcut>> {
        Some(self.shortcut.clone())
    }

    fn whole_replies(&self) -> Option<Arc<WholeReplies>> {
        Some(self.whole.clone())
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Dropping stdin closes the pipe.
        self.writer_task.abort();
        if let Ok(mut pipe) = self.cork.pipe.lock() {
            pipe.stdin.take();
        }
        let child = self.child.lock().expect("child lock").take();
        let tree = self.tree.lock().map(|mut t| t.take()).unwrap_or(None);
        if let (Some(child), Some(tree)) = (child, tree) {
            // The rest of the sequence blocks, so it runs on a thread of its own.
            std::thread::spawn(move || shut_down(child, tree));
        }
    }
}

/// Writes what the pipe takes now, without waiting; returns how much that was. An error stops
/// it too: the writer task meets it again on the rest, and reports it.
fn write_now(stdin: &mut ChildStdin, bytes: &[u8]) -> usize {
    let mut cx = Context::from_waker(Waker::noop());
    let mut at = 0;
    while at < bytes.len() {
        match Pin::new(&mut *stdin).poll_write(&mut cx, &bytes[at..]) {
            Poll::Ready(Ok(n)) if n > 0 => at += n,
            _ => break,
        }
    }
    at
}

/// The pipe, with the means to cork it.
#[derive(Clone)]
struct Cork {
    pipe: Arc<StdMutex<Pipe>>,
    /// Tells the writer that the pipe was corked.
    flush: Arc<Notify>,
}

impl Cork {
    /// Corks the pipe for the callers of `answers` answers handed over, unless a write is
    /// queued; if it is corked already, they are owed too.
    fn cork(&self, answers: usize) {
        let mut pipe = self.pipe.lock().expect("pipe lock");
        if pipe.corked.is_some() {
            pipe.owed += answers;
        } else if pipe.queued == 0 && pipe.stdin.is_some() {
            pipe.corked = Some(Vec::new());
            pipe.owed = answers;
            self.flush.notify_one();
        }
    }
}

/// Writes queued messages to the server's stdin, one after another, and what the cork
/// gathered, until the queue closes or a write fails. A message whose sender stopped waiting
/// before its turn is skipped.
async fn write_stdin(cork: Cork, mut queue: mpsc::Receiver<Outgoing>) {
    let pipe = &*cork.pipe;
    loop {
        tokio::select! {
            biased;
            outgoing = queue.recv() => {
                let Some(outgoing) = outgoing else { return };
                let result = if outgoing.at == 0 && outgoing.written.is_closed() {
                    Ok(())
                } else {
                    write_all(pipe, &outgoing.bytes[outgoing.at..]).await
                };
                pipe.lock().expect("pipe lock").queued -= 1;
                let failed = result.is_err();
                let _ = outgoing.written.send(result);
                if failed {
                    return;
                }
            }
            () = cork.flush.notified() => {
                // Each turn writes what the callers the runtime ran since the last one gathered
                // (it runs the ready tasks before it comes back here), and the pipe stays corked
                // until a turn gathers nothing: the callers woken in one turn may run in
                // several (the runtime's maintenance comes every 61 polls). Callers outside the
                // tasks (`block_on`) that have not run by the first turn send on their own: a
                // server on another CPU is better off starting on the first request than
                // waiting for the last (holding the cork for them cost 10-15% of the calls/s
                // unpinned, docs/BENCHMARKS.md).
                loop {
                    tokio::task::yield_now().await;
                    let gathered = {
                        let mut pipe = pipe.lock().expect("pipe lock");
                        let gathered = pipe.corked.take().unwrap_or_default();
                        if gathered.is_empty() || pipe.stdin.is_none() {
                            break;
                        }
                        pipe.corked = Some(Vec::new());
                        // While this write is under way, later messages queue behind it.
                        pipe.queued += 1;
                        gathered
                    };
                    let result = write_all(pipe, &gathered).await;
                    pipe.lock().expect("pipe lock").queued -= 1;
                    // A failed write ends the connection: the callers learn of it from its end.
                    if result.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Writes all of `bytes` (a pipe needs no flush), holding the lock only while it polls.
async fn write_all(pipe: &StdMutex<Pipe>, bytes: &[u8]) -> std::io::Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        let n = std::future::poll_fn(|cx| match &mut pipe.lock().expect("pipe lock").stdin {
            Some(stdin) => Pin::new(stdin).poll_write(cx, &bytes[at..]),
            None => Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
        })
        .await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        at += n;
    }
    Ok(())
}

/// The server's process group (Unix).
#[cfg(unix)]
struct Tree {
    pgid: libc::pid_t,
}

/// The close sequence, after stdin is closed: wait for the server to exit, then SIGTERM the
/// group, then SIGKILL it; reap the server and any adopted member of its group.
#[cfg(unix)]
fn shut_down(mut child: Child, tree: Tree) {
    let pgid = tree.pgid;
    // An error means the leader was already reaped (by the group reaping below).
    let mut exited = || matches!(child.try_wait(), Ok(Some(_)) | Err(_));
    // Polled each millisecond: most servers exit a few milliseconds after their stdin closes,
    // and a close should not wait much past that.
    wait_until(GRACE, Duration::from_millis(1), &mut exited);
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        if exited() && !group_alive(pgid) {
            return;
        }
        signal_group(pgid, signal);
        // Each poll may read /proc: every 10 ms.
        wait_until(GRACE, Duration::from_millis(10), || {
            exited() && !group_alive(pgid)
        });
    }
}

/// Polls `done` every `pause` until it holds or `limit` passes; says whether it held.
fn wait_until(limit: Duration, pause: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep(pause.min(deadline - now));
    }
}

/// Whether any process of the group still runs; reaps adopted members that have exited.
#[cfg(unix)]
fn group_alive(pgid: libc::pid_t) -> bool {
    // SAFETY: waitpid and kill take plain integers and touch no memory of ours.
    unsafe {
        while libc::waitpid(-pgid, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
        libc::kill(-pgid, 0) == 0 && !only_zombies(pgid)
    }
}

/// Whether every member of the group has exited and waits for a parent that is not us to reap
/// it: nothing left to signal.
#[cfg(unix)]
fn only_zombies(pgid: libc::pid_t) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces): state, ppid, pgrp, ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<libc::pid_t>().ok()) == Some(pgid)
            && fields[0] != "Z"
        {
            return false;
        }
    }
    true
}

#[cfg(unix)]
fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: killpg takes plain integers.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Makes this process the reaper of its orphaned descendants (Linux only; a no-op elsewhere).
/// Call it once, early, in a process whose init does not reap orphans.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Asks for a [`PIPE_SIZE`] pipe (Linux; elsewhere, and if refused, the pipe stays as it is).
fn grow_pipe(stdout: &tokio::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl with F_SETPIPE_SZ takes the descriptor and an integer; a refusal
        // (over /proc/sys/fs/pipe-max-size) leaves the pipe unchanged.
        unsafe {
            libc::fcntl(
                stdout.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                PIPE_SIZE as libc::c_int,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stdout;
}

/// Most messages handed to the session at once: many small answers read together cost the
/// session one wake-up, and the channel (64 deliveries) holds a bounded number of them.
const BATCH: usize = 64;
/// Most bytes of a read decoded before what they hold is delivered: decoded messages take more
/// memory than their bytes, so a read of many tiny ones is not decoded whole first.
const SLICE: usize = 16 << 10;

async fn read_stdout(
    server: String,
    mut stdout: tokio::process::ChildStdout,
    limits: Limits,
    to_session: (mpsc::Sender<Inbound>, Arc<Shortcut>),
    cork: Cork,
    ended: Ended,
) {
    let (tx, shortcut) = &to_session;
    let mut framer = LineFramer::new();
    let mut incoming = Assembler::new(&limits);
    let mut buf = vec![0u8; PIPE_SIZE];
    let mut messages = Vec::new();
    let reason = loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) => {
                framer.finish(&mut |p| take_piece(p, &mut incoming, &mut messages, &server));
                let _ = deliver(tx, shortcut, &mut messages).await;
                break ended.why().await;
            }
            Ok(n) => n,
            Err(e) => break format!("reading the server's stdout: {e}"),
        };
        for slice in buf[..n].chunks(SLICE) {
            framer.push(slice, &mut |p| {
                take_piece(p, &mut incoming, &mut messages, &server)
            });
            // Several answers wake several callers, whose next requests then go out together.
            if messages.len() > 1 {
                let answers = messages
                    .iter()
                    .filter(|d| d.id.is_some() && d.method.is_none());
                cork.cork(answers.count());
            }
            if deliver(tx, shortcut, &mut messages).await.is_err() {
                return;
            }
            // A slice counts against the task's budget: a server that writes lines nothing
            // is delivered for (`yes`) cannot keep the runtime's timers from firing.
            tokio::task::consume_budget().await;
        }
    };
    shortcut.queued();
    let _ = tx.send(Inbound::Closed(reason)).await;
}

/// Hands `messages` to the session, in order: the responses at the front through the
/// shortcut when it is open, the rest on the channel, [`BATCH`] at most at a time; fails once
/// the session is gone.
async fn deliver(
    tx: &mpsc::Sender<Inbound>,
    shortcut: &Shortcut,
    messages: &mut Vec<Decoded>,
) -> Result<(), ()> {
    shortcut.take(messages);
    while !messages.is_empty() {
        let item = if messages.len() == 1 {
            Inbound::Message(messages.pop().expect("one message"))
        } else {
            let rest = messages.split_off(messages.len().min(BATCH));
            Inbound::Batch(std::mem::replace(messages, rest))
        };
        shortcut.queued();
        super::hand_over(tx, item).await?;
    }
    Ok(())
}

/// Feeds one piece of a line to the decoder; a line's end completes its message.
fn take_piece(
    piece: Piece<'_>,
    incoming: &mut Assembler,
    messages: &mut Vec<Decoded>,
    server: &str,
) {
    match piece {
        Piece::Data(d) => incoming.feed(d),
        Piece::End => messages.extend(incoming.finish(server)),
    }
}

/// What the end of stdout needs to say why the server ended.
struct Ended {
    child: Arc<StdMutex<Option<Child>>>,
    /// The task that reads stderr: it ends when the server's stderr closes.
    stderr: tokio::task::JoinHandle<()>,
    /// The last lines of stderr, escaped, secrets hidden, each cut to [`STDERR_TAIL_CHARS`].
    tail: Arc<StdMutex<VecDeque<String>>>,
    /// Where the reason goes for a write that failed meanwhile.
    reported: tokio::sync::watch::Sender<Option<String>>,
}

impl Ended {
    /// Why stdout ended: the server's exit status, when it exited within [`EXIT_WAIT`], and the
    /// last lines of its stderr. Waits for the rest of stderr only while the server is ours
    /// (the close sequence has not taken it), and at most [`EXIT_WAIT`] in all.
    async fn why(mut self) -> String {
        let deadline = tokio::time::Instant::now() + EXIT_WAIT;
        let mut status = None;
        let ours = loop {
            let polled = match self.child.lock().expect("child lock").as_mut() {
                Some(child) => child.try_wait().map(|s| s.map(|s| s.to_string())),
                None => break false,
            };
            match polled {
                Ok(None) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(exited) => {
                    status = exited;
                    break true;
                }
                Err(_) => break true,
            }
        };
        if ours {
            let _ = tokio::time::timeout_at(deadline, &mut self.stderr).await;
        }
        let mut why = match status {
            Some(status) => format!("the server exited ({status})"),
            None => "the server closed its stdout".to_string(),
        };
        let tail = self.tail.lock().expect("tail lock");
        if !tail.is_empty() {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            why.push_str(&format!("; its last stderr lines: {}", lines.join(" | ")));
        }
        self.reported.send_replace(Some(why.clone()));
        why
    }
}

async fn forward_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    secrets: Vec<String>,
    tail: Arc<StdMutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Read at most one bounded line; the rest of a long line is skipped.
        let n = match (&mut reader)
            .take(STDERR_LINE_MAX as u64)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let cut = n == STDERR_LINE_MAX && line.last() != Some(&b'\n');
        let mut rest = Vec::new();
        while cut && !rest.ends_with(b"\n") {
            rest.clear();
            match (&mut reader)
                .take(STDERR_LINE_MAX as u64)
                .read_until(b'\n', &mut rest)
                .await
            {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let mut text = String::from_utf8_lossy(&line).into_owned();
        // A server that prints a value of its `env` (a token) does not get it logged or shown.
        for secret in &secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), crate::safe_text::REDACTED);
            }
        }
        let text = crate::safe_text::escape_controls(text.trim_end());
        if !text.is_empty() {
            let mut tail = tail.lock().expect("tail lock");
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            let mut kept: String = text.chars().take(STDERR_TAIL_CHARS).collect();
            if cut || kept.len() < text.len() {
                kept.push('…');
            }
            tail.push_back(kept);
        }
        if cut {
            tracing::info!(target: "agenvoy_mcp::server", server = %server, "stderr: {text}…");
        } else if !text.is_empty() {
            tracing::info!(target: "agenvoy_mcp::server", server = %server, "stderr: {text}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_environment_keeps_what_windows_programs_need() {
        // cmd.exe, npx.cmd and node need these to find themselves, the user's folders and the
        // temporary folder; names ignore case on Windows.
        for name in [
            "SystemRoot",
            "SYSTEMDRIVE",
            "windir",
            "ComSpec",
            "PATHEXT",
            "Path",
            "USERPROFILE",
            "APPDATA",
            "LOCALAPPDATA",
            "TEMP",
            "TMP",
            "ProgramData",
            "ProgramFiles",
            "ProgramFiles(x86)",
            "HOMEDRIVE",
            "HOMEPATH",
            "USERNAME",
        ] {
            assert!(is_default_env(name), "{name}");
        }
        for name in ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY"] {
            assert!(!is_default_env(name), "{name}");
        }
    }
}
