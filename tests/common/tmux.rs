//! A tmux server of its own for tests that drive a program in a real terminal.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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
        self.run(&["send-keys", "-l", text]);
    }

    /// Waits until the screen shows `needle`; the screen then.
    pub fn wait_for(&self, needle: &str) -> String {
        super::until_shown(needle, || self.screen())
    }
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
