//! A tmux server of its own for tests that drive a program in a real terminal.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long a step of a panel may take.
const PATIENCE: Duration = Duration::from_secs(30);

/// A tmux server of its own (its socket in the test's folder), killed when dropped.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// Starts `command` (a shell line) in a detached 80x24 session.
    pub fn start(dir: &Path, command: &str) -> Option<Tmux> {
        if !super::system_program("tmux", "Debian's tmux") {
            return None;
        }
        let tmux = Tmux {
            socket: dir.join("tmux.sock"),
        };
        let started = tmux
            .run(&["new-session", "-d", "-x", "80", "-y", "24", command])
            .status
            .success();
        assert!(started, "tmux started");
        Some(tmux)
    }

    /// Runs `tmux ARGS` on this server.
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// The screen as text.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p"]).stdout).into_owned()
    }

    /// Sends keys by tmux's names (`Enter`, `Escape`, `Space`, `q`), each after a short
    /// pause, so that Escape and the next key are not read as one Alt key.
    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            std::thread::sleep(Duration::from_millis(150));
            self.run(&["send-keys", key]);
        }
    }

    /// Types `text` as it is.
    pub fn type_text(&self, text: &str) {
        std::thread::sleep(Duration::from_millis(150));
        // `--`: a text that starts with `-` (a server's flags) is typed, not read as an option.
        self.run(&["send-keys", "-l", "--", text]);
    }

    /// Waits until the screen shows `needle`; the screen then.
    pub fn wait_for(&self, needle: &str) -> String {
        super::until_shown(needle, || self.screen())
    }

    /// The line of the screen with the selection mark (`› `), if any.
    pub fn selected(&self) -> Option<String> {
        let screen = self.screen();
        let line = screen.lines().find(|l| l.contains("› "))?;
        Some(line.to_string())
    }

    /// Moves the selection (Down, then Up from the end of the list) until the selected line
    /// shows `needle`; each press waits for the selection to move. Fails when neither way
    /// finds it.
    pub fn select(&self, needle: &str) {
        for key in ["Down", "Up"] {
            loop {
                let before = self.selected();
                if before.as_deref().is_some_and(|l| l.contains(needle)) {
                    return;
                }
                self.keys(&[key]);
                let moved =
                    super::wait_until_or_not(Duration::from_secs(2), || self.selected() != before);
                if !moved {
                    break;
                }
            }
        }
        panic!("no row shows {needle:?}:\n{}", self.screen());
    }
}

/// Starts `agenvoy-mcp tui` on `config` (written to mcp.json in `dir`, which is also its
/// config folder) in tmux; after it ends, its exit status goes to `exit` and the terminal's
/// modes (`stty -a`) to `stty`.
pub fn start_panel(dir: &Path, config: &serde_json::Value) -> Option<Tmux> {
    std::fs::write(dir.join("mcp.json"), config.to_string()).unwrap();
    let command = format!(
        "env AGENVOY_CONFIG_DIR={dir} {binary} tui --no-browser --config {config} --token-file {tokens}; echo $? > {exit}; stty -a > {stty}; sleep 60",
        dir = quoted(dir),
        binary = quoted(Path::new(&super::binary())),
        config = quoted(&dir.join("mcp.json")),
        tokens = quoted(&dir.join("tokens.json")),
        exit = quoted(&dir.join("exit")),
        stty = quoted(&dir.join("stty")),
    );
    Tmux::start(dir, &command)
}

/// Waits for the panel to end; fails unless it exited 0 with the terminal's modes back
/// (not raw) and the alternate screen gone.
pub fn assert_ended_cleanly(dir: &Path, tmux: &Tmux) {
    super::wait_until("the panel exited", PATIENCE, || {
        let stty = super::read_in(dir, "stty");
        if stty.is_empty() {
            Err(tmux.screen())
        } else {
            Ok(())
        }
    });
    assert_eq!(super::read_in(dir, "exit").trim(), "0");
    let stty = super::read_in(dir, "stty");
    let modes: Vec<&str> = stty.split_whitespace().collect();
    for mode in ["icanon", "echo", "isig"] {
        assert!(modes.contains(&mode), "{mode} is back on: {stty}");
    }
    let screen = tmux.screen();
    assert!(
        !screen.contains("/mcp"),
        "the alternate screen is gone:\n{screen}"
    );
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `path` quoted for a shell line.
pub fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}
