//! `agenvoy-mcp login [--config FILE] [--no-browser] NAME`: OAuth login for one server.
//!
//! Starts the loopback listener (port 17988 on 127.0.0.1 and [::1], `/callback`), opens the
//! browser where it can and always prints the authorization URL. If the browser cannot reach
//! this machine, paste the URL it ends on (with `code=`) as a line on stdin. Then connects once with the
//! new token and says how many tools the server has. Exit code 0 when logged in, 1 if not.

use super::HostArgs;
use agenvoy_mcp::auth::LoopbackAgent;
use agenvoy_mcp::host::connect_server_with_store;
use agenvoy_mcp::host::{self, Config};
use agenvoy_mcp::{ClientOptions, host::ServerConfig};
use std::io::BufRead;
use std::process::ExitCode;
use tokio::sync::mpsc;

/// What `login` was asked to do.
pub struct LoginArgs {
    /// The config and timeout.
    pub host: HostArgs,
    /// Do not start a browser (print the URL only).
    pub no_browser: bool,
    /// The server's name.
    pub name: String,
}

/// Runs `login`.
pub async fn run(args: LoginArgs) -> ExitCode {
    let path = args
        .host
        .config
        .clone()
        .unwrap_or_else(host::default_config_path);
    let loaded = match Config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("login failed: {e}");
            return ExitCode::from(1);
        }
    };
    let store = host::token_store();
    let (tx, rx) = mpsc::channel(8);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut agent = LoopbackAgent::new().with_paste(rx);
    agent.open_browser = !args.no_browser;
    eprintln!("logging in to {} ...", args.name);
    if let Err(e) = host::login(&loaded, &args.name, store.clone(), &agent).await {
        eprintln!("login failed: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = out!(
        "logged in to {} (tokens in {})",
        args.name,
        store.describe()
    ) {
        return super::output::exit_code("login", Err(e));
    }
    if let Some(note) = host::login_note(&loaded, &args.name, store.clone()) {
        eprintln!("note: {note}");
    }
    let Some(Ok(server @ ServerConfig::Http(_))) = loaded.server(&args.name) else {
        return ExitCode::SUCCESS;
    };
    let mut options = ClientOptions::default();
    options.timeout = args.host.timeout.unwrap_or(options.timeout);
    match connect_server_with_store(&args.name, &server, &options, store).await {
        Ok(client) => {
            let written = match client.list_tools().await {
                Ok(tools) => out!("{}: connected, {} tools", args.name, tools.len()),
                Err(e) => {
                    eprintln!("logged in, but listing the tools failed: {e}");
                    Ok(())
                }
            };
            client.close().await;
            super::output::exit_code("login", written.map(|()| ExitCode::SUCCESS))
        }
        Err(e) => {
            eprintln!("logged in, but connecting failed: {e}");
            ExitCode::from(1)
        }
    }
}
