//! The command line: one binary, several commands.

#[macro_use]
pub mod output;

pub mod call;
pub mod check;
pub mod conformance;
pub mod demo_server;
pub mod login;
pub mod probe;
pub mod serve;
pub mod tools;
pub mod tui;

use agenvoy_mcp::auth::{FileStore, TokenStore};
use agenvoy_mcp::host::{self, Config, ConfigError};
use agenvoy_mcp::host::{EraMemory, Manager, ManagerOptions, ServerState};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Options every config-reading command takes.
pub struct HostArgs {
    /// `--config FILE`, else the default config file.
    pub config: Option<PathBuf>,
    /// `--timeout`: seconds each server gets to start and to answer each request, where its
    /// entry sets none; for `call`, the call's own timeout.
    pub timeout: Option<Duration>,
}

impl HostArgs {
    /// The config file: `--config FILE`, else the default one.
    pub fn config_path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(host::default_config_path)
    }
}

/// Where the config came from, for the first line of output.
pub fn describe_source(config: &Config, path: &std::path::Path) -> String {
    if config.found() {
        path.display().to_string()
    } else {
        format!("{} (not found: using the embedded default)", path.display())
    }
}

/// Reads the config file, or the embedded default when there is none. Returns it and where
/// it came from.
pub fn load_config(args: &HostArgs) -> Result<(Config, String), ConfigError> {
    let path = args.config_path();
    let mut loaded = Config::load(&path)?;
    let source = describe_source(&loaded, &path);
    if !loaded.found() {
        let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("agenvoy-mcp"));
        loaded = Config::embedded_default(&program);
    }
    Ok((loaded, source))
}

/// The OAuth token store (`--token-file FILE`, else the keychain or its 0600 file) and
/// manager options that use it.
pub fn token_store(token_file: Option<&std::path::Path>) -> (Arc<dyn TokenStore>, ManagerOptions) {
    let store: Arc<dyn TokenStore> = match token_file {
        Some(path) => Arc::new(FileStore::new(path)),
        None => agenvoy_mcp::host::token_store(),
    };
    let options = ManagerOptions::default().with_token_store(store.clone());
    (store, options)
}

/// `options` as the binary runs them: the clients' default timeout of `--timeout`, the skills
/// extension declared, and the servers'
/// eras remembered in the config folder (`server-eras.json`), so a server of the initialize
/// era starts without the `server/discover` probe the next time.
pub fn binary_options(args: &HostArgs, mut options: ManagerOptions) -> ManagerOptions {
    if let Some(timeout) = args.timeout {
        options.client.timeout = timeout;
    }
    // The daemon, the panel and the commands list skills (no file is read until one is loaded).
    options.client.handlers.skills = true;
    options.eras = options.eras.or_else(|| {
        let path = host::config_dir().join("server-eras.json");
        Some(Arc::new(EraMemory::new(path)))
    });
    options
}

/// The signals that stop a command, taken before any server starts: SIGINT, SIGTERM and
/// SIGHUP on Unix; on Windows Ctrl-C, Ctrl-Break, the console closing, logoff and shutdown
/// (after the last three Windows gives a process about 5 s, more than closing the servers
/// takes: [`CLOSE_LIMIT`]). The servers run in process groups of their own (on Windows, with
/// no console of ours), out of reach of the terminal's Ctrl-C, so a command that is stopped
/// must close them itself.
pub struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
    #[cfg(windows)]
    ctrl_c: Option<tokio::signal::windows::CtrlC>,
    #[cfg(windows)]
    ctrl_break: tokio::signal::windows::CtrlBreak,
    #[cfg(windows)]
    close: tokio::signal::windows::CtrlClose,
    #[cfg(windows)]
    logoff: tokio::signal::windows::CtrlLogoff,
    #[cfg(windows)]
    shutdown: tokio::signal::windows::CtrlShutdown,
}

impl Signals {
    /// Takes every signal that stops a command, for this process.
    pub fn listen() -> std::io::Result<Signals> {
        Self::take(true)
    }

    /// Takes them all but the interrupt (Ctrl-C), which the panel reads as a key.
    pub fn listen_but_interrupt() -> std::io::Result<Signals> {
        Self::take(false)
    }

    #[cfg(unix)]
    fn take(interrupt: bool) -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            interrupt: interrupt
                .then(|| signal(SignalKind::interrupt()))
                .transpose()?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    #[cfg(windows)]
    fn take(interrupt: bool) -> std::io::Result<Signals> {
        use tokio::signal::windows;
        Ok(Signals {
            ctrl_c: interrupt.then(windows::ctrl_c).transpose()?,
            ctrl_break: windows::ctrl_break()?,
            close: windows::ctrl_close()?,
            logoff: windows::ctrl_logoff()?,
            shutdown: windows::ctrl_shutdown()?,
        })
    }

    /// Waits for the next one; returns its name and the exit code it means (128 plus its
    /// number, as a shell reports a process it ended; on Windows that of its Unix
    /// counterpart: Ctrl-C 130, Ctrl-Break 131, the console closing 129, logoff and
    /// shutdown 143).
    pub async fn wait(&mut self) -> (&'static str, u8) {
        /// The next signal of an optional listener; never, without one.
        macro_rules! maybe {
            ($listener:expr) => {
                async {
                    match $listener {
                        Some(listener) => listener.recv().await,
                        None => std::future::pending().await,
                    }
                }
            };
        }
        #[cfg(unix)]
        let (name, number) = tokio::select! {
            _ = maybe!(&mut self.interrupt) => ("SIGINT", 2),
            _ = self.terminate.recv() => ("SIGTERM", 15),
            _ = self.hangup.recv() => ("SIGHUP", 1),
        };
        #[cfg(windows)]
        let (name, number) = tokio::select! {
            _ = maybe!(&mut self.ctrl_c) => ("Ctrl-C", 2),
            _ = self.ctrl_break.recv() => ("Ctrl-Break", 3),
            _ = self.close.recv() => ("the console closing", 1),
            _ = self.logoff.recv() => ("logoff", 15),
            _ = self.shutdown.recv() => ("shutdown", 15),
        };
        (name, 128 + number)
    }

    /// Waits for the next one; says which on stderr and returns the exit code it means (see
    /// [`Signals::wait`]).
    pub async fn next(&mut self) -> ExitCode {
        let (name, code) = self.wait().await;
        eprintln!("{name}: closing every server");
        ExitCode::from(code)
    }
}

/// Returns once no server of `manager` is still connecting.
pub async fn started(manager: &Manager) {
    while manager
        .status()
        .iter()
        .any(|s| s.state == ServerState::Connecting)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs command `command`: starts the servers of the config, runs `work` with the manager and
/// where its config came from once every server is connected or failed, and closes them. A
/// signal at any point closes them at once (those still starting too) and ends the command
/// with 128 plus its number.
pub async fn run_with_servers(
    args: &HostArgs,
    options: ManagerOptions,
    command: &str,
    work: impl AsyncFnOnce(&Manager, &str) -> ExitCode,
) -> ExitCode {
    let mut signals = match Signals::listen() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{command} failed: cannot handle signals: {e}");
            return ExitCode::from(1);
        }
    };
    let (config, source) = match load_config(args) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("{command} failed: {e}");
            return ExitCode::from(1);
        }
    };
    let manager = Manager::start(config, binary_options(args, options));
    let outcome = tokio::select! {
        code = async {
            started(&manager).await;
            work(&manager, &source).await
        } => code,
        code = signals.next() => code,
    };
    close_servers(&manager).await;
    outcome
}

/// How long closing the servers may take when a command ends (the stdio close sequence takes
/// at most 4 s: 2 s for the server to exit, 2 s after SIGTERM, then SIGKILL).
const CLOSE_LIMIT: Duration = Duration::from_millis(4500);

/// Closes every server of `manager`, waiting at most [`CLOSE_LIMIT`] (with a warning after).
pub async fn close_servers(manager: &Manager) {
    if tokio::time::timeout(CLOSE_LIMIT, manager.close())
        .await
        .is_err()
    {
        eprintln!(
            "warning: some servers had not closed after {} ms",
            CLOSE_LIMIT.as_millis()
        );
    }
}
