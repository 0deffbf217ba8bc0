//! The `/mcp` panel on ratatui's `TestBackend`, over a real manager, real fixture servers
//! and real files: every screen and key, the files after each change, the background jobs
//! (the panel draws and takes keys while they run), and what is never drawn (secrets, raw
//! control characters: every screen drawn here is checked for those).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::auth::{MemoryStore, TokenStore};
use agenvoy_mcp::host::{
    Config, Control, EventBus, Manager, ManagerOptions, PendingRequests, PermissionMode, ToolCall,
};
use agenvoy_mcp::tui::{Flow, Panel};
use agenvoy_mcp::{ClientOptions, Handlers};
use common::*;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a background job may take in these tests.
const PATIENCE: Duration = Duration::from_secs(30);

/// An entry whose server never answers (nothing listens on port 9).
fn unreachable_entry(oauth: bool) -> Value {
    let mut entry = json!({"url": "http://127.0.0.1:9/mcp"});
    if oauth {
        entry["auth"] = json!("oauth");
    }
    entry
}

/// A panel over a manager started from `config` (written as mcp.json in a temp dir, with
/// allow_tool beside it), drawn on a `TestBackend`.
struct Harness {
    panel: Panel,
    terminal: Terminal<TestBackend>,
    store: Arc<MemoryStore>,
    dir: tempfile::TempDir,
}

impl Harness {
    fn start(config: Value) -> Harness {
        Harness::start_sized(config, 80, 24)
    }

    fn start_sized(config: Value, width: u16, height: u16) -> Harness {
        Harness::start_with(config, width, height, false)
    }

    /// With `answering`, the manager's elicitation and sampling requests wait on a board the
    /// panel answers, as in `agenvoy-mcp tui`.
    fn start_with(config: Value, width: u16, height: u16, answering: bool) -> Harness {
        agenvoy_mcp::unstable::become_subreaper();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, config.to_string()).unwrap();
        let store = Arc::new(MemoryStore::new());
        let bus = EventBus::new();
        let board = PendingRequests::new(bus.clone(), Duration::from_secs(60));
        let mut options = ManagerOptions::default()
            .with_allowlist_path(dir.path().join("allow_tool"))
            .with_token_store(store.clone())
            .with_client(
                // As the binary runs it: skills listed (src/cli/mod.rs, binary_options).
                ClientOptions::default()
                    .with_timeout(Duration::from_secs(20))
                    .with_handlers(Handlers::default().with_skills(true)),
            )
            .with_events(bus);
        if answering {
            options = options
                .with_elicitation(board.elicitation_handler())
                .with_sampling(board.sampling_handler());
        }
        let manager = Manager::start(Config::load(&path).unwrap(), options);
        manager.register_all();
        manager.watch();
        let control = Control::with_token_store(manager, path, store.clone());
        let mut panel = Panel::new(control).open_browser(false);
        if answering {
            panel = panel.answering(board);
        }
        Harness {
            panel,
            terminal: Terminal::new(TestBackend::new(width, height)).unwrap(),
            store,
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> String {
        read_in(self.dir.path(), name)
    }

    /// mcp.json as it is now.
    fn config(&self) -> Value {
        serde_json::from_str(&self.read("mcp.json")).unwrap()
    }

    /// Ticks and draws; the screen as text, one line per row. Fails if a cell holds a
    /// control character.
    fn screen(&mut self) -> String {
        self.panel.tick();
        let panel = &self.panel;
        self.terminal
            .draw(|frame| panel.draw(frame, frame.area()))
            .unwrap();
        let buffer = self.terminal.backend().buffer();
        let mut text = String::new();
        for y in 0..buffer.area.height {
            for x in 0..buffer.area.width {
                let symbol = buffer[(x, y)].symbol();
                assert!(
                    !symbol.chars().any(char::is_control),
                    "a raw control character at ({x}, {y}): {symbol:?}"
                );
                text.push_str(symbol);
            }
            text.push('\n');
        }
        text
    }

    /// The row of the screen that holds `needle`.
    fn row(&mut self, needle: &str) -> String {
        let screen = self.screen();
        screen
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no row with {needle:?}:\n{screen}"))
            .to_string()
    }

    fn key(&mut self, code: KeyCode) -> Flow {
        self.panel
            .handle_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn char(&mut self, c: char) -> Flow {
        self.key(KeyCode::Char(c))
    }

    fn text(&mut self, text: &str) {
        for c in text.chars() {
            assert_eq!(self.char(c), Flow::Continue);
        }
    }

    fn enter(&mut self) {
        self.key(KeyCode::Enter);
    }

    /// Draws until the screen shows `needle` (each draw applies the background results that
    /// came).
    fn wait_for(&mut self, needle: &str) -> String {
        until_shown(needle, || self.screen())
    }

    async fn settle(&mut self) {
        assert!(
            self.panel.settle(PATIENCE).await,
            "the background work ended"
        );
    }

    async fn close(self) {
        self.panel.control().close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_draws_at_once_moves_and_quits() {
    let mut h = Harness::start(json!({"servers": {
        "fx": fixture_entry(&[]),
        "slow": fixture_entry(&["--mode", "slow-start=2"]),
        "broken": unreachable_entry(false),
        "login": unreachable_entry(true),
    }}));
    // The panel is up while the slow server still starts, and takes keys.
    let slow = h.row("slow");
    assert!(slow.contains("connecting"), "{slow}");
    assert!(
        slow.contains(['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']),
        "{slow}"
    );
    h.key(KeyCode::Down);
    assert!(h.row("fx").contains("› fx"));
    assert!(h.row("slow").contains("connecting"));
    h.settle().await;
    let screen = h.screen();
    assert!(
        screen.contains("↑/↓ move  Enter open  a add  d delete  q quit"),
        "{screen}"
    );
    assert!(screen.contains("NAME") && screen.contains("TRANSPORT") && screen.contains("TOOLS"));
    let fx = h.row(" fx ");
    for cell in ["stdio", "connected", "9"] {
        assert!(fx.contains(cell), "{fx}");
    }
    let broken = h.row("broken");
    assert!(
        broken.contains("http") && broken.contains("failed"),
        "{broken}"
    );
    assert!(h.row("login").contains("needs login"));
    assert!(h.row("slow").contains("connected"));
    // ↓, j, ↑, k, and no further than the ends.
    for (key, selected) in [
        (KeyCode::Down, "login"),
        (KeyCode::Char('j'), "slow"),
        (KeyCode::Char('j'), "slow"),
        (KeyCode::Up, "login"),
        (KeyCode::Char('k'), "fx"),
        (KeyCode::Char('k'), "broken"),
        (KeyCode::Up, "broken"),
    ] {
        h.key(key);
        assert!(
            h.row(selected).contains(&format!("› {selected}")),
            "{key:?}"
        );
    }
    // Enter opens, Esc goes back; q quits.
    h.enter();
    assert!(h.screen().contains("/mcp · broken"));
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("/mcp · servers"));
    assert_eq!(h.char('q'), Flow::Quit);
    // Ctrl-C leaves from any screen.
    let mut other = Panel::new(h.panel.control().clone());
    other.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(other.handle_key(ctrl_c), Flow::Quit);
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_screen_and_its_actions() {
    let mut h = Harness::start(json!({"servers": {
        "fx": fixture_entry(&["--page-size", "6101"]),
        "login": unreachable_entry(true),
    }}));
    h.settle().await;
    h.enter();
    let screen = h.screen();
    for shown in [
        "/mcp · fx",
        "connected",
        "handshake",
        "tools        9",
        "instructions yes",
        "auth         none",
        "offers       2 resources, 1 templates, 2 prompts, 0 skills",
        "t tools  R resources  P prompts  S skills  r reconnect  e on/off  o on demand  i instructions  Esc back",
    ] {
        assert!(flat(&screen).contains(&flat(shown)), "{shown:?}:\n{screen}");
    }
    // Login and client are keys of OAuth servers only.
    assert!(
        !screen.contains("l login") && !screen.contains("login / relogin"),
        "{screen}"
    );
    // i: the instructions; Esc back.
    h.char('i');
    let screen = h.screen();
    assert!(screen.contains("The agenvoy fixture server"), "{screen}");
    assert!(screen.contains("↑/↓ scroll"));
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("r reconnect"));
    // r: this server only, in the background.
    let before = pid_with("6101");
    h.char('r');
    assert!(h.screen().contains("reconnecting"));
    h.char('r');
    assert!(h.screen().contains("fx is busy (reconnecting)"));
    h.wait_for("fx reconnected: 9 tools");
    h.settle().await;
    let after = pid_with("6101");
    assert_ne!(before, after);
    assert_group_gone_within(before, Duration::from_secs(5));
    // o: on demand and back, saved to its entry (issue 41).
    assert!(h.screen().contains("from launch"));
    h.char('o');
    h.wait_for("fx now starts on demand (stopped after 600 s idle)");
    h.settle().await;
    assert!(
        h.screen()
            .contains("on demand, stopped after 600 s idle (o: from launch)")
    );
    h.char('o');
    h.wait_for("fx now runs from launch");
    // l and c, not shown here, say why they do nothing.
    for key in ['l', 'c'] {
        h.char(key);
        assert!(h.screen().contains("fx does not log in"), "{key}");
    }
    h.key(KeyCode::Esc);
    // A login that cannot reach its server says why; Enter goes back.
    h.key(KeyCode::Down);
    h.enter();
    let screen = h.screen();
    // The panel's own way to log in, not a command or a route (issue 44 §4).
    assert!(
        screen.contains("oauth login required; press l to log in"),
        "{screen}"
    );
    assert!(
        flat(&screen).contains(&flat(
            "t tools  R resources  P prompts  S skills  r reconnect  e on/off  o on demand  l login  c client  Esc"
        )) && screen.contains("login / relogin (OAuth)")
            && screen.contains("client: a pre-registered OAuth client"),
        "{screen}"
    );
    h.char('l');
    let screen = h.wait_for("The login failed");
    assert!(screen.contains("cannot reach the server"), "{screen}");
    assert!(screen.contains("Enter/Esc back"));
    h.enter();
    assert!(h.screen().contains("/mcp · login ─"));
    h.settle().await;
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_screen_shows_the_proxy_without_its_credentials() {
    let mut entry = unreachable_entry(false);
    entry["proxy"] = json!("http://alice:pr0xy-s3cret@127.0.0.1:9");
    let mut h = Harness::start(json!({"servers": {"far": entry, "fx": fixture_entry(&[])}}));
    h.settle().await;
    h.enter();
    let screen = h.screen();
    assert!(
        screen.contains("proxy        http://127.0.0.1:9"),
        "{screen}"
    );
    assert!(
        !screen.contains("pr0xy-s3cret") && !screen.contains("alice"),
        "{screen}"
    );
    h.key(KeyCode::Esc);
    h.key(KeyCode::Down);
    h.enter();
    let screen = h.screen();
    assert!(
        screen.contains("/mcp · fx") && screen.contains("proxy        -"),
        "{screen}"
    );
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_toggles_rewrite_only_this_servers_entries() {
    let mut h = Harness::start(json!({"servers": {"fx": fixture_entry(&[])}}));
    std::fs::write(h.path("allow_tool"), "# mine\nbash\nmcp__other__*\n").unwrap();
    h.settle().await;
    h.enter();
    h.char('t');
    let screen = h.screen();
    assert!(
        screen.contains(
            "↑/↓ move  Enter call  Space approve  A server  v show/hide  V all  Esc back"
        )
    );
    assert!(h.row("mcp__fx__add ").contains("› [ ]"), "{screen}");
    assert!(h.row("mcp__fx__echo").contains("[ ] [v] mcp__fx__echo"));
    assert!(h.row("mcp__fx__echo").contains("Returns the text"));
    // Space: the selected tool, at once.
    h.char(' ');
    h.settle().await;
    assert_eq!(
        h.read("allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__add\n"
    );
    assert!(h.row("mcp__fx__add ").contains("[x]"));
    h.key(KeyCode::Down);
    h.char('j');
    h.char('k');
    assert!(h.row("mcp__fx__add_tool").contains("› [ ]"));
    h.char(' ');
    h.settle().await;
    assert_eq!(
        h.read("allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__add\nmcp__fx__add_tool\n"
    );
    // A: the whole server, replacing its entries; a tool off then keeps the others.
    h.char('A');
    h.settle().await;
    assert_eq!(
        h.read("allow_tool"),
        "# mine\nbash\nmcp__other__*\nmcp__fx__*\n"
    );
    let screen = h.screen();
    assert!(
        screen.contains("Whole server auto-approved (mcp__fx__*)"),
        "{screen}"
    );
    assert_eq!(screen.matches("[x] [v] mcp__").count(), 9, "{screen}");
    h.char(' ');
    h.settle().await;
    let list = h.read("allow_tool");
    assert!(
        !list.contains("mcp__fx__*") && !list.contains("mcp__fx__add_tool"),
        "{list}"
    );
    assert_eq!(list.matches("mcp__fx__").count(), 8, "{list}");
    assert!(h.row("mcp__fx__add_tool").contains("[ ]"));
    // Quick keys land in order: A on, A off.
    h.char('A');
    h.char('A');
    h.settle().await;
    assert_eq!(h.read("allow_tool"), "# mine\nbash\nmcp__other__*\n");
    assert_eq!(h.screen().matches("[x] [v] mcp__").count(), 0);
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("/mcp · fx ─"));
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_add_wizard_saves_connects_and_refuses_bad_input() {
    let mut h = Harness::start(json!({"theme": "dark", "servers": {"fx": fixture_entry(&[])}}));
    h.settle().await;
    let before = h.read("mcp.json");
    // Esc cancels: nothing saved.
    h.char('a');
    h.text("gone");
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("nothing was added"));
    assert_eq!(h.read("mcp.json"), before);

    h.char('a');
    let screen = h.screen();
    assert!(
        screen.contains("/mcp · add a server") && screen.contains("Name ("),
        "{screen}"
    );
    assert!(screen.contains("Enter accept  Esc cancel"));
    for (typed, error) in [
        ("fx", "already configured"),
        ("a b", "is not valid: use letters"),
        ("", "give the server a name"),
    ] {
        h.panel
            .handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        h.text(typed);
        h.enter();
        assert!(h.screen().contains(error), "{typed:?}");
    }
    h.text("two");
    h.enter();
    let screen = h.screen();
    assert!(
        screen.contains("› Local stdio") && screen.contains("  Remote HTTP"),
        "{screen}"
    );
    assert!(screen.contains("↑/↓ choose"));
    h.key(KeyCode::Down);
    assert!(h.screen().contains("› Remote HTTP"));
    h.key(KeyCode::Up);
    h.enter();
    h.enter();
    assert!(h.screen().contains("give the command"), "an empty command");
    h.text(&fixture_binary());
    h.enter();
    h.text("--page-size '6202");
    h.enter();
    assert!(h.screen().contains("quote is not closed"));
    h.text("'");
    h.enter();
    // Env: names only, values never drawn, not even while typed.
    h.text("TOKEN=supersecret");
    assert!(h.row("> TOKEN=").contains("TOKEN=•••••••••••"));
    h.enter();
    h.text("no equals");
    h.enter();
    assert!(h.screen().contains("KEY=VALUE"));
    h.panel
        .handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.panel
        .handle_event(&Event::Paste("OTHER=pasted-secret".into()));
    h.enter();
    let screen = h.screen();
    assert!(
        screen.contains("OTHER, TOKEN (values hidden)")
            || screen.contains("TOKEN, OTHER (values hidden)"),
        "{screen}"
    );
    h.enter();
    // Timeouts: checked on their step, then kept.
    assert!(h.screen().contains("Timeouts in seconds"));
    h.text("0");
    h.enter();
    assert!(
        h.screen()
            .contains("\"timeout\" is 0; it must be a number of seconds above 0")
    );
    h.panel
        .handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.text("90 15");
    h.enter();
    let screen = h.screen();
    for shown in [
        "two",
        "Local stdio",
        "--page-size 6202",
        "90 s a request, 15 s to start",
        "Enter save and connect",
    ] {
        assert!(screen.contains(shown), "{shown:?}:\n{screen}");
    }
    assert!(!screen.contains("supersecret") && !screen.contains("pasted-secret"));
    h.enter();
    // Back on the list at once, the new server connecting, selected.
    let screen = h.wait_for("two connected: 9 tools");
    assert!(screen.contains("› two"), "{screen}");
    let config = h.config();
    assert_eq!(config["theme"], "dark");
    assert_eq!(
        config["servers"]["two"]["args"],
        json!(["--page-size", "6202"])
    );
    assert_eq!(
        config["servers"]["two"]["env"],
        json!({"TOKEN": "supersecret", "OTHER": "pasted-secret"})
    );
    assert_eq!(
        (
            &config["servers"]["two"]["timeout"],
            &config["servers"]["two"]["startup_timeout"]
        ),
        (&json!(90), &json!(15))
    );
    pid_with("6202");

    // A remote server with a header and OAuth; the URL is checked on its step.
    h.char('a');
    h.text("web");
    h.enter();
    h.key(KeyCode::Down);
    h.enter();
    h.text("ftp://x");
    h.enter();
    assert!(h.screen().contains("must start with http:// or https://"));
    h.panel
        .handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.text("http://127.0.0.1:9/mcp");
    h.enter();
    h.text("Authorization: Bearer header-secret");
    assert!(!h.screen().contains("header-secret"));
    h.enter();
    h.enter();
    assert!(h.screen().contains("› none"));
    h.key(KeyCode::Down);
    h.enter();
    h.enter();
    let screen = h.screen();
    assert!(
        screen.contains("Authorization (values hidden)") && screen.contains("oauth"),
        "{screen}"
    );
    assert!(!screen.contains("header-secret"));
    // The name was taken elsewhere meanwhile: refused on the summary, nothing saved.
    let mut config = h.config();
    config["servers"]["web"] = json!({"url": "http://127.0.0.1:9/other"});
    std::fs::write(h.path("mcp.json"), config.to_string()).unwrap();
    h.enter();
    let screen = h.wait_for("already in the config");
    assert!(screen.contains("/mcp · add a server"), "{screen}");
    assert_eq!(h.config(), config);
    h.key(KeyCode::Esc);
    let mut config = h.config();
    config["servers"].as_object_mut().unwrap().remove("web");
    std::fs::write(h.path("mcp.json"), config.to_string()).unwrap();
    h.screen();
    h.char('a');
    h.text("web");
    h.enter();
    h.key(KeyCode::Down);
    h.enter();
    h.text("http://127.0.0.1:9/mcp");
    h.enter();
    h.enter();
    h.key(KeyCode::Down);
    h.enter();
    h.enter();
    h.enter();
    h.wait_for("web needs a login; log in: open web in the list and press l");
    assert_eq!(
        h.config()["servers"]["web"],
        json!({"url": "http://127.0.0.1:9/mcp", "auth": "oauth"})
    );
    h.settle().await;
    assert!(h.row(" web ").contains("needs login"));
    h.close().await;
}

/// The column where `needle` starts in `row`, in characters (each cell is one).
/// `text` with each run of white space (line breaks too) one space: a footer that wraps
/// onto a second row reads as the one line it is.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn column(row: &str, needle: &str) -> usize {
    let at = row
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {row:?}"));
    row[..at].chars().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_follow_their_content_and_an_error_wraps_under_its_label() {
    let long = "a-server-with-quite-a-long-name";
    let mut h = Harness::start(json!({"servers": {
        "fx": fixture_entry(&[]),
        "broken": unreachable_entry(false),
    }}));
    h.settle().await;
    // Short names: a narrow NAME column, every row's cells under their titles.
    let header = h.row("NAME");
    let transport = column(&header, "TRANSPORT");
    assert!(transport < 16, "{header}");
    for (name, kind) in [("fx", "stdio"), ("broken", "http")] {
        let row = h.row(&format!(" {name} "));
        assert_eq!(column(&row, kind), transport, "{row}");
    }
    // The server screen: the error's further lines start under its first.
    h.enter();
    let screen = h.screen();
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().position(|l| l.contains("last error")).unwrap();
    let start = column(lines[at], "last error") + 13;
    assert!(
        lines[at].chars().nth(start).is_some_and(|c| c != ' '),
        "{screen}"
    );
    let next = lines[at + 1];
    assert!(
        next.chars().skip(1).take(start - 1).all(|c| c == ' ')
            && next.chars().nth(start).is_some_and(|c| c != ' '),
        "the error wraps under its start:\n{screen}"
    );
    h.key(KeyCode::Esc);

    // A long name: the NAME column as wide as it, the tools' names whole and aligned.
    h.char('a');
    h.text(long);
    h.enter();
    h.enter();
    h.text(&fixture_binary());
    h.enter();
    h.enter();
    h.enter();
    h.enter();
    h.enter();
    h.wait_for(&format!("{long} connected: 9 tools"));
    h.settle().await;
    let header = h.row("NAME");
    let transport = column(&header, "TRANSPORT");
    assert_eq!(transport, column(&h.row(long), "stdio"));
    assert_eq!(transport, column(&h.row(" fx "), "stdio"));
    h.enter();
    h.char('t');
    let screen = h.screen();
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains("mcp__")).collect();
    assert_eq!(rows.len(), 9, "{screen}");
    let name = format!("mcp__{long}__client_request");
    assert!(screen.contains(&name), "whole:\n{screen}");
    let after = column(rows[0], "mcp__") + name.chars().count() + 1;
    for row in &rows {
        let cells: Vec<char> = row.chars().collect();
        assert!(
            cells[after - 1] == ' ' && cells[after] != ' ',
            "descriptions in one column:\n{screen}"
        );
    }
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wizard_goes_back_keeping_what_was_typed_and_hides_url_secrets() {
    let mut h = Harness::start(json!({"servers": {}}));
    h.settle().await;
    let before = h.read("mcp.json");
    h.char('a');
    // Backspace on the first step's empty field goes nowhere.
    h.key(KeyCode::Backspace);
    assert!(h.screen().contains("Name ("));
    h.text("web");
    h.enter();
    assert!(h.screen().contains("› Local stdio"));
    // Shift-Tab: back to the name, as typed.
    h.key(KeyCode::BackTab);
    assert!(h.row("> ").contains("> web"), "{}", h.screen());
    h.enter();
    h.key(KeyCode::Down);
    h.enter();
    // The URL: its query values hidden while typed, and on every later step.
    let url = "http://127.0.0.1:9/mcp?token=s3cret&v=2";
    h.text(url);
    let screen = h.screen();
    assert!(
        screen.contains("> http://127.0.0.1:9/mcp?token=***&v=***"),
        "{screen}"
    );
    assert!(!screen.contains("s3cret"), "{screen}");
    h.enter();
    let screen = h.screen();
    assert!(screen.contains("Headers,"), "{screen}");
    assert!(
        screen.contains("url          http://127.0.0.1:9/mcp?token=***&v=***")
            && !screen.contains("s3cret"),
        "{screen}"
    );
    // Backspace on the empty headers field: back to the URL, kept.
    h.key(KeyCode::Backspace);
    let screen = h.screen();
    assert!(
        screen.contains("URL (") && screen.contains("> http://127.0.0.1:9/mcp?token=***&v=***"),
        "{screen}"
    );
    h.enter();
    h.text("X-Key: k");
    h.enter();
    h.enter();
    assert!(h.screen().contains("Authentication:"));
    h.key(KeyCode::BackTab);
    h.key(KeyCode::BackTab);
    let screen = h.screen();
    assert!(screen.contains("URL ("), "{screen}");
    // Forward again: the header kept, then the summary, secrets hidden.
    h.enter();
    assert!(h.screen().contains("X-Key (values hidden)"));
    h.enter();
    h.enter();
    h.enter();
    let screen = h.screen();
    assert!(screen.contains("Enter save and connect"), "{screen}");
    assert!(
        screen.contains("http://127.0.0.1:9/mcp?token=***&v=***") && !screen.contains("s3cret"),
        "{screen}"
    );
    assert!(screen.contains("Shift-Tab back"), "{screen}");
    // Esc still cancels; nothing was written.
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("nothing was added"));
    assert_eq!(h.read("mcp.json"), before);
    // Back and forth through a local server: the arguments and env kept as typed.
    h.char('a');
    h.text("loc");
    h.enter();
    h.enter();
    h.text(&fixture_binary());
    h.enter();
    h.text("--page-size 6401");
    h.enter();
    h.text("A=1");
    h.enter();
    h.key(KeyCode::Backspace);
    assert!(h.row("> ").contains("> --page-size 6401"), "{}", h.screen());
    h.key(KeyCode::BackTab);
    assert!(h.row("> ").contains(&format!("> {}", fixture_binary())));
    h.enter();
    h.enter();
    h.enter();
    let screen = h.screen();
    assert!(screen.contains("A (values hidden)"), "{screen}");
    h.enter();
    h.enter();
    h.wait_for("loc connected: 9 tools");
    assert_eq!(
        h.config()["servers"]["loc"],
        json!({"command": fixture_binary(), "args": ["--page-size", "6401"], "env": {"A": "1"}})
    );
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_asks_first() {
    let mut h = Harness::start(json!({"servers": {
        "a": fixture_entry(&["--page-size", "6301"]),
        "b": unreachable_entry(false),
    }}));
    h.settle().await;
    let pid = pid_with("6301");
    h.char('d');
    let screen = h.screen();
    assert!(
        screen.contains("Delete a? It leaves the config file"),
        "{screen}"
    );
    assert!(screen.contains("y delete  any other key keeps it"));
    h.char('n');
    assert!(h.screen().contains("a is kept"));
    assert!(h.config()["servers"].get("a").is_some());
    h.char('d');
    h.char('y');
    assert!(h.screen().contains("removing a"));
    h.wait_for("a removed");
    h.settle().await;
    assert!(h.config()["servers"].get("a").is_none());
    assert!(h.config()["servers"].get("b").is_some());
    assert_group_gone_within(pid, Duration::from_secs(5));
    assert!(h.row("› b").contains("failed"));
    assert!(!h.screen().contains("│  a "));
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_form_keeps_the_secret_out_of_the_file_and_off_the_screen() {
    let mut h = Harness::start(json!({"servers": {"login": unreachable_entry(true)}}));
    h.settle().await;
    h.enter();
    h.char('c');
    let screen = h.screen();
    assert!(
        screen.contains("/mcp · login · OAuth client") && screen.contains("Client id:"),
        "{screen}"
    );
    h.enter();
    assert!(h.screen().contains("give the client id"));
    h.text("client-1");
    h.enter();
    h.text("the-client-secret");
    let screen = h.screen();
    assert!(
        !screen.contains("the-client-secret") && screen.contains("•••••"),
        "{screen}"
    );
    h.enter();
    let screen = h.screen();
    assert!(
        screen.contains("> http://localhost:17988/callback"),
        "{screen}"
    );
    assert!(screen.contains("set (hidden)"));
    h.panel
        .handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.text("https://evil.test/cb");
    h.enter();
    h.wait_for("is not http://localhost:PORT/PATH");
    h.panel
        .handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.text("http://127.0.0.1:17999/cb");
    h.enter();
    let screen = h.wait_for("the OAuth client of login is saved");
    assert!(
        screen.contains("pre-registered client client-1"),
        "{screen}"
    );
    let entry = &h.config()["servers"]["login"];
    assert_eq!(entry["oauth_client_id"], "client-1");
    assert_eq!(entry["oauth_redirect_uri"], "http://127.0.0.1:17999/cb");
    assert!(!h.read("mcp.json").contains("the-client-secret"));
    let kept = h.store.load("client_secret:login").unwrap().unwrap();
    assert!(kept.contains("the-client-secret"));
    // Esc leaves the form without a change.
    h.char('c');
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("the client was not changed"));
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_is_drawn_escaped() {
    let mut h = Harness::start(json!({"servers": {
        "hostile": fixture_entry(&["--mode", "hostile"]),
    }}));
    h.settle().await;
    h.enter();
    h.char('i');
    // `screen` fails on any raw control character; the escapes show instead.
    let screen = h.screen();
    assert!(screen.contains("\\u{1b}[2J\\u{1b}[H"), "{screen}");
    assert!(
        screen.contains("\\u{7}") && screen.contains("\\u{202e}"),
        "{screen}"
    );
    h.key(KeyCode::Esc);
    h.char('t');
    let row = h.row("mcp__hostile__echo");
    assert!(row.contains("\\u{1b}[2J"), "{row}");
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_screen_fits_80x24_and_survives_a_resize() {
    let mut h = Harness::start(json!({"servers": {
        "fx": fixture_entry(&[]),
        "login": unreachable_entry(true),
    }}));
    h.settle().await;
    // Each screen at 80x24 shows its whole footer; at any size it draws without panicking.
    let screens: &[(&[KeyCode], &str)] = &[
        (&[], "↑/↓ move  Enter open  a add  d delete  q quit"),
        (
            &[KeyCode::Enter],
            "t tools  R resources  P prompts  S skills  r reconnect  e on/off  o on demand  i instructions  Esc back",
        ),
        (
            &[KeyCode::Char('t')],
            "↑/↓ move  Enter call  Space approve  A server  v show/hide  V all  Esc back",
        ),
        (
            &[KeyCode::Esc, KeyCode::Char('i')],
            "↑/↓ scroll  PgUp/PgDn page  Esc back",
        ),
        (
            &[KeyCode::Esc, KeyCode::Esc, KeyCode::Char('a')],
            "Enter accept  Esc cancel",
        ),
        (
            &[KeyCode::Esc, KeyCode::Down, KeyCode::Enter],
            "t tools  R resources  P prompts  S skills  r reconnect  e on/off  o on demand  l login  c client  Esc",
        ),
        (&[KeyCode::Char('c')], "Enter accept  Esc cancel"),
        (
            &[
                KeyCode::Esc,
                KeyCode::Esc,
                KeyCode::Up,
                KeyCode::Enter,
                KeyCode::Char('R'),
            ],
            "↑/↓ move  Enter read it (a template asks for its variables)  Esc back",
        ),
        (
            &[KeyCode::Down, KeyCode::Down, KeyCode::Enter],
            "Tab/Shift-Tab field  ↑/↓ choose a value  Enter take it / send  Esc back",
        ),
        (
            &[KeyCode::Esc, KeyCode::Esc, KeyCode::Char('P')],
            "↑/↓ move  Enter fill it in and get its messages  Esc back",
        ),
        (
            &[KeyCode::Esc, KeyCode::Char('t'), KeyCode::Enter],
            "Enter call with these arguments  Esc back",
        ),
        (&[KeyCode::Enter], "↑/↓ scroll  PgUp/PgDn page  Esc back"),
    ];
    for (keys, footer) in screens {
        for key in *keys {
            h.key(*key);
        }
        for (width, height) in [(80, 24), (40, 10), (12, 4), (1, 1), (200, 60), (80, 24)] {
            h.terminal.backend_mut().resize(width, height);
            let screen = h.screen();
            if (width, height) == (80, 24) {
                assert!(
                    flat(&screen).contains(&flat(footer)),
                    "{footer:?}:\n{screen}"
                );
            }
        }
    }
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_shows_the_url_and_takes_the_pasted_redirect() {
    let Some(py) = oauth_fixture() else {
        return;
    };
    // Wide, so the URL is on one row.
    let mut h = Harness::start_sized(
        json!({"servers": {"py": {"url": py.url, "auth": "oauth"}}}),
        400,
        30,
    );
    h.settle().await;
    assert!(h.row(" py ").contains("needs login"));
    h.enter();
    // Esc cancels a login in progress; another can start.
    h.char('l');
    h.wait_for("Open this URL");
    h.key(KeyCode::Esc);
    assert!(h.screen().contains("the login to py was cancelled"));
    let started = Instant::now();
    let url = loop {
        h.char('l');
        let screen = h.wait_for("/mcp · py · login");
        if !screen.contains("already in progress") {
            let screen = h.wait_for("Open this URL");
            let line = screen
                .lines()
                .find(|l| l.contains("code_challenge"))
                .unwrap();
            let url = line.trim_matches(|c| c == '│' || c == ' ').to_string();
            break url;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the cancelled login never ended"
        );
        h.enter();
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let screen = h.screen();
    assert!(
        screen.contains("Logging in to py: waiting for the browser"),
        "{screen}"
    );
    assert!(screen.contains("p paste the URL the browser ended on  Esc cancel"));
    // p: the URL the browser ended on; a wrong one is refused on the screen.
    h.char('p');
    assert!(h.screen().contains("Enter send the URL  Esc stop pasting"));
    h.text("http://localhost:17988/callback");
    h.enter();
    h.wait_for("no code= or error=");
    let location = tokio::task::spawn_blocking(move || redirect_of(&url))
        .await
        .unwrap();
    h.char('p');
    h.panel.handle_event(&Event::Paste(location));
    h.enter();
    h.wait_for("Logged in to py.");
    h.enter();
    h.settle().await;
    let screen = h.screen();
    assert!(
        screen.contains("connected") && !screen.contains("needs login"),
        "{screen}"
    );
    assert!(h.store.load("tokens:py").unwrap().is_some());
    h.close().await;
}

#[test]
fn a_panel_can_move_to_a_task() {
    fn send<T: Send + 'static>() {}
    send::<Panel>();
    send::<Control>();
}

/// With a board, a server's form opens over the screen as soon as it asks (the panel listens
/// from its start, so the board waits for it), draws its text escaped, survives any size,
/// and sends the answer the server then gets; a sampling request is shown and declined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_requests_open_over_the_screen_and_are_answered() {
    let mut h = Harness::start_with(json!({"servers": {"fx": fixture_entry(&[])}}), 80, 24, true);
    h.settle().await;
    h.enter();
    h.char('t');
    let control = h.panel.control().clone();
    let ask = |params: Value| {
        let control = control.clone();
        tokio::spawn(async move {
            let arguments = json!({"method": params["method"], "params": params["params"]});
            let call = ToolCall::new("mcp__fx__client_request", arguments);
            let call = control.call(call.with_mode(PermissionMode::Auto));
            call.await
                .map(|done| done.output.text)
                .map_err(|e| e.to_string())
        })
    };
    let form = ask(json!({"method": "elicitation/create", "params": {
        "message": "Your name?\u{1b}[2J", "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string", "title": "Name\u{7}"}, "ok": {"type": "boolean", "default": true}},
        "required": ["name"]}}}));
    let screen = h.wait_for("fx asks");
    for shown in [
        "Your name?\\u{1b}[2J",
        "› Name\\u{7}*",
        "[x] yes",
        "/mcp · fx · tools",
    ] {
        assert!(screen.contains(shown), "{shown}:\n{screen}");
    }
    assert!(screen.contains("Enter send  Esc decline"), "{screen}");
    for (width, height) in [(40, 10), (12, 4), (1, 1), (200, 60), (80, 24)] {
        h.terminal.backend_mut().resize(width, height);
        h.screen();
    }
    // Enter with the name empty names it; typed, the answer goes to the server.
    h.enter();
    assert!(h.screen().contains("Name\\u{7}: required"));
    h.text("Ada");
    h.enter();
    let answered = form.await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&answered).unwrap(),
        json!({"result": {"action": "accept", "content": {"name": "Ada", "ok": true}}})
    );
    let screen = h.screen();
    assert!(!screen.contains("fx asks") && screen.contains("answered fx's request"));
    // The keys are the tools screen's again.
    assert!(screen.contains("Enter call"), "{screen}");

    let sample = ask(json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
        "systemPrompt": "Be brief.", "maxTokens": 5}}));
    let screen = h.wait_for("It asks for a message from your model");
    assert!(
        screen.contains("[user]") && screen.contains("Say hi"),
        "{screen}"
    );
    assert!(screen.contains("system: Be brief.") && screen.contains("at most 5 tokens"));
    h.key(KeyCode::Esc);
    let answered = sample.await.unwrap().unwrap();
    assert!(answered.contains("declined"), "{answered}");
    h.close().await;
}

/// The call field starts empty: what is typed is the whole arguments object (it started with
/// `{}`, so typed arguments came after it and were not JSON), and an empty field calls with
/// `{}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_field_starts_empty_and_takes_what_is_typed() {
    let mut h = Harness::start(json!({"servers": {"fx": fixture_entry(&[])}}));
    h.settle().await;
    h.enter();
    h.char('t');
    let selected = |h: &mut Harness, tool: &str| {
        let screen = h.screen();
        screen
            .lines()
            .any(|l| l.contains('›') && l.contains(&format!("__{tool} ")))
    };
    let open = |h: &mut Harness, tool: &str| {
        for _ in 0..12 {
            h.key(KeyCode::Up);
        }
        for _ in 0..12 {
            if selected(h, tool) {
                break;
            }
            h.key(KeyCode::Down);
        }
        assert!(selected(h, tool), "{tool} selected:\n{}", h.screen());
        h.enter();
        let screen = h.screen();
        let field = screen
            .lines()
            .skip_while(|l| !l.contains("Its arguments, a JSON object (empty: {}):"))
            .nth(1)
            .unwrap_or_default();
        let field = field.trim_matches(|c| c == '│' || c == ' ');
        assert_eq!(field, ">", "an empty field:\n{screen}");
    };
    open(&mut h, "echo");
    h.text(r#"{"text": "typed"}"#);
    h.enter();
    let screen = h.wait_for("│ typed");
    assert!(screen.contains("· call mcp__fx__echo"), "{screen}");
    // Back to the tools; a tool that needs no arguments runs on an empty field.
    h.key(KeyCode::Esc);
    open(&mut h, "cancellations");
    h.enter();
    let screen = h.wait_for("│ []");
    assert!(screen.contains("· call mcp__fx__cancellations"), "{screen}");
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_listed_with_their_files_and_loaded_only_when_checked() {
    let mut h = Harness::start(json!({"servers": {
        "kit": fixture_entry(&["--mode", "modern"]),
        "liar": fixture_entry(&["--mode", "lying-skills"]),
    }}));
    h.settle().await;
    h.enter();
    let screen = h.wait_for("2 skills");
    assert!(
        screen.contains("offers       2 resources, 1 templates, 2 prompts, 2 skills"),
        "{screen}"
    );
    h.char('S');
    let screen = h.wait_for("greeting");
    for shown in [
        "/mcp · kit · skills",
        "2 skills. Enter loads a skill",
        "greeting",
        "2 files",
        "Greet a person in the house style",
        "references/STYLE.md",
        "counting",
        "1 file ",
        "Count things one by one",
    ] {
        assert!(screen.contains(shown), "{shown:?}:\n{screen}");
    }
    assert!(
        flat(&screen).contains("↑/↓ move Enter load it, checked against its entry Esc back"),
        "{screen}"
    );
    // The second row is the skill's file.
    h.key(KeyCode::Down);
    h.enter();
    let screen = h.wait_for("Say hello warmly");
    assert!(
        screen.contains("/mcp · kit · skill://greeting/references/STYLE.md"),
        "{screen}"
    );
    h.key(KeyCode::Esc);
    // Back on the list once its catalog is read again.
    h.wait_for("Count things one by one");
    h.key(KeyCode::Up);
    h.enter();
    h.wait_for("Read references/STYLE.md, then greet the person by name.");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Esc);
    h.key(KeyCode::Esc);

    // The liar's file does not match its digest: an error, never the file.
    h.key(KeyCode::Down);
    h.enter();
    h.char('S');
    h.wait_for("references/STYLE.md");
    h.key(KeyCode::Down);
    h.enter();
    let screen = h.wait_for("does not match the digest");
    assert!(!screen.contains("system prompt"), "{screen}");
    h.close().await;
}
