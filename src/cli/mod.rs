//! The command line: one binary, several commands.

pub mod call;
pub mod conformance;
pub mod fixture_http;
pub mod fixture_server;
pub mod login;
pub mod probe;
pub mod serve;
pub mod tools;
pub mod tui;

use agenvoy_mcp::ClientOptions;
use agenvoy_mcp::auth::{FileStore, TokenStore};
use agenvoy_mcp::host::config::{self, Config, ConfigError};
use agenvoy_mcp::host::{EraMemory, Manager, ManagerOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Options every config-reading command takes.
pub struct HostArgs {
    /// `--config FILE`, else the default config file.
    pub config: Option<PathBuf>,
    /// Seconds each server gets to start and to answer each request.
    pub timeout: Duration,
}

impl HostArgs {
    /// The config file: `--config FILE`, else the default one.
    pub fn config_path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(config::default_config_path)
    }
}

/// Prints `value` as pretty JSON on stdout. serde_json escapes C0 controls in strings; the
/// other characters that drive a terminal (DEL, C1, bidirectional controls) are escaped here
/// too, so no server text reaches the terminal raw. JSON's structure is ASCII, so each such
/// character is inside a string, where `\uXXXX` means the same character.
pub fn print_json(value: &serde_json::Value) {
    let text = serde_json::to_string_pretty(value).expect("JSON serializes");
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if agenvoy_mcp::__private::text::drives_terminal(c) && !c.is_ascii_whitespace() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    println!("{out}");
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
        None => agenvoy_mcp::host::oauth::token_store(),
    };
    let options = ManagerOptions {
        token_store: Some(store.clone()),
        ..ManagerOptions::default()
    };
    (store, options)
}

/// `options` as the binary runs them: the clients' timeout of `--timeout`, and the servers'
/// eras remembered in the config folder (`server-eras.json`), so a server of the initialize
/// era starts without the `server/discover` probe the next time.
pub fn binary_options(args: &HostArgs, options: ManagerOptions) -> ManagerOptions {
    ManagerOptions {
        client: ClientOptions {
            timeout: args.timeout,
            ..options.client
        },
        eras: options.eras.or_else(|| {
            let path = config::config_dir().join("server-eras.json");
            Some(Arc::new(EraMemory::new(path)))
        }),
        ..options
    }
}

/// Reads the config file (or the embedded default when there is none) and connects every
/// server. Returns the manager and where its config came from.
pub async fn start_manager(
    args: &HostArgs,
    options: ManagerOptions,
) -> Result<(Manager, String), ConfigError> {
    let (config, source) = load_config(args)?;
    Ok((
        Manager::new(config, binary_options(args, options)).await,
        source,
    ))
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
