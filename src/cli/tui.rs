//! `agenvoy-mcp tui [--config FILE] [--token-file FILE] [--no-browser]`: the `/mcp` panel,
//! full screen.
//!
//! Starts every configured server in the background (the embedded default when there is no
//! config file), registers their tools and follows them, answers their elicitation and
//! sampling requests through the panel (a [`PendingRequests`] board), and shows the panel
//! (`agenvoy_mcp::tui`) on the alternate screen, in raw mode, with bracketed paste. `q` on
//! the list (or Ctrl-C, SIGTERM, SIGHUP) closes every server, restores the terminal and
//! exits 0; a panic restores the terminal too. Exit code 1 if it cannot start (config, not a terminal).
//!
//! Logs would garble the screen: they are written only when stderr is not a terminal
//! (`agenvoy-mcp tui 2>panel.log`, with `AGENVOY_LOG=debug` for more).

use super::HostArgs;
use agenvoy_mcp::host::{self, Control, EventBus, Manager, PendingRequests};
use agenvoy_mcp::tui::{Flow, Panel};
use crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste, Event};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{IsTerminal, Stdout};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// How often the panel reads the manager and the files again and turns its spinner.
const TICK: Duration = Duration::from_millis(200);

/// What `tui` was asked to do.
pub struct TuiArgs {
    /// The config and timeout.
    pub host: HostArgs,
    /// Keep OAuth tokens in this file instead of the OS keychain.
    pub token_file: Option<PathBuf>,
    /// Logins show the URL only; no browser is started.
    pub no_browser: bool,
}

/// Runs `tui`.
pub async fn run(args: TuiArgs) -> ExitCode {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        eprintln!("tui failed: the panel needs a terminal (stdin and stdout)");
        return ExitCode::from(1);
    }
    let (config, _) = match super::load_config(&args.host) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tui failed: {e}");
            return ExitCode::from(1);
        }
    };
    let (store, options) = super::token_store(args.token_file.as_deref());
    // The servers' elicitation and sampling requests wait on a board the panel answers.
    let bus = EventBus::new();
    let board = PendingRequests::new(bus.clone(), host::DEFAULT_EXPIRY);
    // Listening from before the first server starts, so that a request asked before the
    // panel is up waits for it (the board declines when no one listens).
    let early = bus.subscribe();
    let options = options
        .with_events(bus)
        .with_elicitation(board.elicitation_handler())
        .with_sampling(board.sampling_handler());
    let manager = Manager::start(config, super::binary_options(&args.host, options));
    manager.register_all();
    manager.watch();
    let control = Control::with_token_store(manager.clone(), args.host.config_path(), store);
    let panel = Panel::new(control)
        .open_browser(!args.no_browser)
        .answering(board);
    drop(early);
    let shown = match Screen::enter() {
        Ok(mut screen) => {
            let shown = show(&mut screen.terminal, panel).await;
            drop(screen);
            shown
        }
        Err(e) => Err(e),
    };
    super::close_servers(&manager).await;
    match shown {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tui failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// The panel until it quits: drawn after every key, background result and tick.
async fn show(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    mut panel: Panel,
) -> std::io::Result<()> {
    // SIGTERM and SIGHUP (the terminal went away), and on Windows the console closing,
    // Ctrl-Break, logoff and shutdown, end the panel as `q` does (Ctrl-C is a key here).
    let mut signals = super::Signals::listen_but_interrupt()?;
    let (events, mut keys) = mpsc::channel::<std::io::Result<Event>>(64);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = read_events(events, stop.clone());
    let mut ticker = tokio::time::interval(TICK);
    let outcome = loop {
        panel.tick();
        if let Err(e) = terminal.draw(|frame| panel.draw(frame, frame.area())) {
            break Err(e);
        }
        tokio::select! {
            event = keys.recv() => match event {
                Some(Ok(event)) => if panel.handle_event(&event) == Flow::Quit { break Ok(()) },
                Some(Err(e)) => break Err(e),
                None => break Ok(()),
            },
            () = panel.changed() => {}
            _ = ticker.tick() => {}
            _ = signals.wait() => break Ok(()),
        }
    };
    stop.store(true, Ordering::SeqCst);
    // A reader waiting for room in the channel sees it closed.
    drop(keys);
    // It sees `stop` within its 100 ms poll; but on a terminal that went away (SIGHUP)
    // crossterm's read may never return, and the panel must end all the same.
    let deadline = std::time::Instant::now() + Duration::from_millis(500);
    while !reader.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    outcome
}

/// Reads terminal events on a thread of its own (crossterm's reads block), polling so that
/// it notices `stop` within 100 ms.
fn read_events(
    events: mpsc::Sender<std::io::Result<Event>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            let event = match event::poll(Duration::from_millis(100)) {
                Ok(false) => continue,
                Ok(true) => event::read(),
                Err(e) => Err(e),
            };
            let failed = event.is_err();
            if events.blocking_send(event).is_err() || failed {
                break;
            }
        }
    })
}

/// The terminal in the panel's modes; dropping it (or a panic) restores the terminal.
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

fn restore_terminal() {
    let _ = execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        enable_raw_mode()?;
        if let Err(e) = execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste
        ) {
            restore_terminal();
            return Err(e);
        }
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            hook(info);
        }));
        match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore_terminal();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore_terminal();
    }
}
