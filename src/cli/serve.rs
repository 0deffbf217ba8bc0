//! `agenvoy-mcp serve [--listen ADDR] [--config FILE] [--allow-remote] [--token-file FILE]
//! [--start-traces]`: the daemon.
//!
//! Connects every configured server (the embedded default when there is no config file),
//! registers their tools and follows them, as an agent host does; then serves the
//! management API (`agenvoy_mcp::api`, routes in docs/API.md) on ADDR (default
//! 127.0.0.1:17989). Its first line on stdout, once it is ready, is `listening on
//! http://ADDR` with the real port (so `--listen 127.0.0.1:0` works). Requests need the
//! token in `api-token` beside the config file (made on first start, mode 0600).
//! With `"render_ui": true` at the top of the config, the API's callers render MCP Apps
//! pages, so every server is told so (the UI extension is declared).
//!
//! SIGINT, SIGTERM or SIGHUP closes every server (no child left) and exits 0. Exit code 1 if it
//! cannot start (config, token file, address), 2 for a non-loopback address without
//! `--allow-remote`.

use super::HostArgs;
use agenvoy_mcp::api::{self, ApiOptions, ApiToken, Limits};
use agenvoy_mcp::host::{EventBus, Manager, PendingRequests};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The default address of the API.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:17989";

/// What `serve` was asked to do.
pub struct ServeArgs {
    /// The config and timeout.
    pub host: HostArgs,
    /// Where the API listens.
    pub listen: SocketAddr,
    /// Listen on a non-loopback address.
    pub allow_remote: bool,
    /// Keep OAuth tokens in this file instead of the OS keychain.
    pub token_file: Option<PathBuf>,
    /// How long a server's question (elicitation, sampling) waits for an answer.
    pub ask_timeout: Duration,
    /// Start a trace for each request that reaches a server whose caller sent none.
    pub start_traces: bool,
}

/// Runs `serve`.
pub async fn run(args: ServeArgs) -> ExitCode {
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        eprintln!(
            "serve: {} is not a loopback address; the API runs commands as you, so it listens on loopback unless you pass --allow-remote (requests still need the token)",
            args.listen
        );
        return ExitCode::from(2);
    }
    // Taken before anything starts, so a signal during startup still closes every server.
    let mut signals = match super::Signals::listen() {
        Ok(s) => s,
        Err(e) => return failed(format!("cannot handle signals: {e}")),
    };
    let config_path = args.host.config_path();
    let token_path = api::token_path(&config_path);
    let token = match ApiToken::load_or_create(&token_path) {
        Ok(t) => t,
        Err(e) => return failed(e),
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => return failed(format!("cannot listen on {}: {e}", args.listen)),
    };
    let address = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => return failed(format!("cannot listen on {}: {e}", args.listen)),
    };
    let (store, options) = super::token_store(args.token_file.as_deref());
    let (config, source) = match super::load_config(&args.host) {
        Ok(loaded) => loaded,
        Err(e) => return failed(e.to_string()),
    };
    // The servers' questions go to the event stream's listeners and wait on this board.
    let events = EventBus::new();
    let board = PendingRequests::new(events.clone(), args.ask_timeout);
    let mut options = options;
    // The API's callers render MCP Apps pages only if the config says so.
    match config.render_ui() {
        Ok(true) => {
            let handlers = std::mem::take(&mut options.client.handlers);
            options.client.handlers = handlers.with_ui([agenvoy_mcp::UI_MIME_TYPE]);
        }
        Ok(false) => {}
        Err(e) => return failed(e.to_string()),
    }
    let options = options
        .with_events(events)
        .with_elicitation(board.elicitation_handler())
        .with_sampling(board.sampling_handler());
    let manager = Manager::start(config, super::binary_options(&args.host, options));
    // Ready once every server is connected or failed; a signal before that stops the
    // servers still starting too (their processes end), at once.
    tokio::select! {
        () = super::started(&manager) => {}
        _ = signals.next() => {
            super::close_servers(&manager).await;
            return ExitCode::SUCCESS;
        }
    }
    manager.watch();
    eprintln!("config: {source}");
    eprintln!("api token: {}", token_path.display());
    if !address.ip().is_loopback() {
        eprintln!(
            "warning: the API is reachable from other machines on {address}, over plain HTTP; anyone who has the token can run commands as you"
        );
    }
    // The only line on stdout: a reader that has gone away (`serve | head -1`) stops no
    // daemon, so a failed write is not an error.
    let _ = out!("listening on http://{address}");
    let options = ApiOptions {
        config_path,
        token,
        token_store: store,
        allow_remote: args.allow_remote,
        limits: Limits {
            // Room for a connect and a tools/list (or a call) and a reconnect.
            request_timeout: args.host.timeout.unwrap_or(Duration::from_secs(60)) * 2
                + Duration::from_secs(30),
            ..Limits::default()
        },
        requests: Some(board),
        start_traces: args.start_traces,
    };
    let served = api::serve(listener, manager.clone(), options, async {
        signals.next().await;
    })
    .await;
    super::close_servers(&manager).await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failed(e.to_string()),
    }
}

fn failed(why: impl std::fmt::Display) -> ExitCode {
    eprintln!("serve failed: {why}");
    ExitCode::from(1)
}
