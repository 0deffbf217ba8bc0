//! The Linux keychain, tested against the real thing: GNOME Keyring's Secret Service on a
//! private D-Bus session bus with a HOME of its own, as a person's desktop session has them,
//! and the strict authorization server of `tests/oauth.rs`. The user's commands (`login`,
//! `call`) run as the binary with that session's environment only.
//!
//! Needs Debian's `dbus`, `gnome-keyring` and `libsecret-tools` (`.ci/install` installs them)
//! and the venv of `tests/oauth.rs`; without them each test says SKIPPED and passes, unless
//! `AGENVOY_REQUIRE_INTEROP=1`.
#![cfg(all(feature = "cli", target_os = "linux"))]

mod common;

use common::py_oauth::{PyServer, authorize};
use serde_json::json;
use std::ffi::OsStr;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The programs these tests drive, from Debian's packages.
const PROGRAMS: [&str; 4] = [
    "dbus-daemon",
    "dbus-send",
    "gnome-keyring-daemon",
    "secret-tool",
];
/// The password of the login keyring.
const PASSWORD: &str = "correct horse battery staple";
/// The login keyring, GNOME Keyring's default collection.
const LOGIN: &str = "/org/freedesktop/secrets/collection/login";
/// How long one command may take: longer is a hang.
const LIMIT: Duration = Duration::from_secs(30);
/// A session bus that starts nothing by itself: what runs on it is what a test starts.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=RUNTIME</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

/// Whether the programs are there; says SKIPPED (or fails, when required) if not.
fn programs_installed() -> bool {
    PROGRAMS
        .into_iter()
        .all(|p| common::system_program(p, "Debian's dbus, gnome-keyring and libsecret-tools"))
}

/// A person's session: HOME, XDG_RUNTIME_DIR, a session bus and, when started, GNOME
/// Keyring holding the login keyring. Everything it started is stopped when it is dropped.
struct Desktop {
    root: tempfile::TempDir,
    bus: Option<Child>,
    keyring: Option<Child>,
    /// The bus address, empty while there is no bus.
    address: String,
}

impl Desktop {
    /// A new session (nothing running yet) whose config has server `py` at `url`.
    fn new(url: &str) -> Desktop {
        use std::os::unix::fs::DirBuilderExt;
        let root = tempfile::tempdir().unwrap();
        for dir in ["home/.config/agenvoy", "run"] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root.path().join(dir))
                .unwrap();
        }
        let desktop = Desktop {
            root,
            bus: None,
            keyring: None,
            address: String::new(),
        };
        let config = json!({"servers": {"py": {"url": url, "auth": "oauth"}}});
        std::fs::write(desktop.config_dir().join("mcp.json"), config.to_string()).unwrap();
        desktop
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn config_dir(&self) -> PathBuf {
        self.home().join(".config/agenvoy")
    }

    fn runtime(&self) -> PathBuf {
        self.root.path().join("run")
    }

    /// Starts the session bus.
    fn start_bus(&mut self) {
        let config = self.root.path().join("bus.conf");
        let text = BUS_CONFIG.replace("RUNTIME", &self.runtime().display().to_string());
        std::fs::write(&config, text).unwrap();
        let mut bus = self
            .command("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("unix:"), "the bus's address: {line:?}");
        self.address = line.trim().to_string();
        self.bus = Some(bus);
    }

    /// Starts GNOME Keyring's Secret Service, which unlocks the login keyring with
    /// [`PASSWORD`] (making it, the first time), and waits until it is served.
    fn start_keyring(&mut self) {
        let mut keyring = self
            .command("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(PASSWORD.as_bytes()).unwrap();
        drop(stdin);
        self.keyring = Some(keyring);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self
            .dbus_send(&[
                LOGIN,
                "org.freedesktop.DBus.Properties.Get",
                "string:org.freedesktop.Secret.Collection",
                "string:Locked",
            ])
            .contains("boolean false")
        {
            assert!(
                Instant::now() < deadline,
                "GNOME Keyring did not serve an unlocked login keyring within 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the keyring, then the bus, as logging out does.
    fn stop(&mut self) {
        for mut child in [self.keyring.take(), self.bus.take()].into_iter().flatten() {
            // SAFETY: a signal to a child this test started and has not yet waited for.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        self.address.clear();
    }

    /// A command with this session's environment and nothing else of the test's.
    fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_RUNTIME_DIR", self.runtime());
        if !self.address.is_empty() {
            command.env("DBUS_SESSION_BUS_ADDRESS", &self.address);
        }
        command
    }

    /// A method call to the Secret Service: `dbus-send`'s printed reply (or error).
    fn dbus_send(&self, args: &[&str]) -> String {
        let mut command = self.command("dbus-send");
        command.args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.secrets",
        ]);
        let out = run(command.args(args), |_| {});
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Locks the login keyring, as the desktop's "lock keyring" does.
    fn lock(&self) {
        let reply = self.dbus_send(&[
            "/org/freedesktop/secrets",
            "org.freedesktop.Secret.Service.Lock",
            &format!("array:objpath:{LOGIN}"),
        ]);
        assert!(reply.contains(LOGIN), "locked: {reply}");
    }

    /// `agenvoy-mcp ARGS` in this session.
    fn agenvoy(&self, args: &[&str]) -> Output {
        let mut command = self.command(common::binary());
        run(command.args(args), |_| {})
    }

    /// `agenvoy-mcp login py`, its authorization URL followed by a headless browser.
    fn login(&self) -> Output {
        let mut command = self.command(common::binary());
        run(command.args(["login", "--no-browser", "py"]), |line| {
            let line = line.trim();
            if line.starts_with("http://") {
                authorize(line);
            }
        })
    }

    /// What `secret-tool search --all service agenvoy` shows.
    fn secrets(&self) -> String {
        let mut command = self.command("secret-tool");
        let out = run(
            command.args(["search", "--all", "service", "agenvoy"]),
            |_| {},
        );
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Every `oauth-tokens.json` under the session's folders.
    fn token_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, found);
                } else if entry.file_name() == "oauth-tokens.json" {
                    found.push(path);
                }
            }
        }
        let mut found = Vec::new();
        walk(self.root.path(), &mut found);
        found
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `command` to its end within [`LIMIT`] (past it the command is killed and the test
/// fails: that is a hang); `on_stderr` sees each line of its stderr as it comes. Its stdin
/// stays open meanwhile.
fn run(command: &mut Command, on_stderr: impl Fn(&str) + Send + 'static) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            on_stderr(&line);
            text.push_str(&line);
            text.push('\n');
        }
        text.into_bytes()
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} still ran after {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err
            .join()
            .expect("the stderr reader (and the browser) did not fail"),
    }
}

/// The Python server, and a session with its bus (and GNOME Keyring, with `keyring`)
/// started; `None` when the test is skipped.
fn start(keyring: bool) -> Option<(PyServer, Desktop)> {
    start_with(keyring, &[])
}

/// [`start`] with the Python server started with `args`.
fn start_with(keyring: bool, args: &[&str]) -> Option<(PyServer, Desktop)> {
    if !programs_installed() {
        return None;
    }
    let server = PyServer::start_with(args)?;
    let mut desktop = Desktop::new(&server.url);
    desktop.start_bus();
    if keyring {
        desktop.start_keyring();
    }
    Some((server, desktop))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Logs in to the login keyring, finds the entries with `secret-tool`, then stops the bus
/// and the keyring and starts them again (as a reboot does) and is still logged in; then
/// clears the entries as the README says.
#[test]
fn tokens_live_in_the_login_keyring_and_survive_a_restart() {
    let Some((server, mut desktop)) = start(true) else {
        return;
    };

    let login = desktop.login();
    let (stdout, stderr) = (text(&login.stdout), text(&login.stderr));
    assert!(login.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("logged in to py (tokens in Secret Service keyring)"),
        "{stdout}"
    );
    assert!(
        !stderr.contains("keychain"),
        "no fallback warning: {stderr}"
    );
    let secrets = desktop.secrets();
    let issuer = format!("http://{}", server.authority());
    for line in [
        "label = agenvoy: OAuth tokens for MCP server py",
        "attribute.key = tokens:py",
        &format!("label = agenvoy: OAuth client registered with {issuer}"),
        &format!("attribute.key = client:{issuer}"),
    ] {
        assert!(secrets.contains(line), "{line:?} in:\n{secrets}");
    }
    assert!(desktop.token_files().is_empty(), "no token file");

    desktop.stop();
    assert!(
        desktop
            .home()
            .join(".local/share/keyrings/login.keyring")
            .is_file()
    );
    desktop.start_bus();
    desktop.start_keyring();
    let call = desktop.agenvoy(&["call", "--yes", "mcp__py__whoami"]);
    let (stdout, stderr) = (text(&call.stdout), text(&call.stderr));
    assert!(call.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("hello from the protected server"),
        "{stdout}"
    );
    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["registrations"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "no second login: {stats}");
    assert!(desktop.token_files().is_empty(), "no token file");

    let mut clear = desktop.command("secret-tool");
    let cleared = run(clear.args(["clear", "service", "agenvoy"]), |_| {});
    assert!(cleared.status.success());
    assert_eq!(desktop.secrets(), "");
    let call = desktop.agenvoy(&["call", "--yes", "mcp__py__whoami"]);
    let stderr = text(&call.stderr);
    assert!(!call.status.success());
    assert!(stderr.contains("oauth login required"), "{stderr}");
}

/// A keyring locked after the login: the call fails at once saying so, and a new login
/// fails saying so (not "logged in" with tokens that last until the process ends), and puts
/// no tokens in a file instead.
#[test]
fn a_locked_keyring_is_reported_at_once() {
    let Some((_server, desktop)) = start(true) else {
        return;
    };
    let login = desktop.login();
    assert!(login.status.success(), "{}", text(&login.stderr));

    desktop.lock();
    let locked = "the Secret Service keyring is locked: unlock it (log in to the desktop, or \
                  open Seahorse or KWalletManager) and try again";
    let started = Instant::now();
    let call = desktop.agenvoy(&["call", "--yes", "mcp__py__whoami"]);
    let stderr = text(&call.stderr);
    assert!(!call.status.success());
    assert!(stderr.contains(locked), "{stderr}");
    let login = desktop.login();
    let (stdout, stderr) = (text(&login.stdout), text(&login.stderr));
    assert!(!login.status.success());
    assert!(stderr.contains(locked), "{stderr}");
    assert!(!stdout.contains("logged in"), "{stdout}");
    assert!(
        stderr.contains("login failed: ")
            && stderr.contains(&format!("the tokens could not be kept: {locked}")),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "no wait");
    assert!(desktop.token_files().is_empty(), "no token file");
}

/// A Secret Service that stops answering (GNOME Keyring stopped with SIGSTOP, its bus name
/// still owned): a call is not held past the 10 s deadline of its D-Bus operations (the
/// run is killed, and the test fails, at 30 s).
#[test]
fn a_secret_service_that_does_not_answer_cannot_hold_a_call() {
    let Some((_server, desktop)) = start(true) else {
        return;
    };
    let login = desktop.login();
    assert!(login.status.success(), "{}", text(&login.stderr));
    let keyring = desktop.keyring.as_ref().expect("the keyring runs").id() as i32;
    /// Lets the keyring run again, however the test ends.
    struct Resume(i32);
    impl Drop for Resume {
        fn drop(&mut self) {
            // SAFETY: a signal to a child this test started.
            unsafe { libc::kill(self.0, libc::SIGCONT) };
        }
    }
    // SAFETY: a signal to a child this test started and has not yet waited for.
    unsafe { libc::kill(keyring, libc::SIGSTOP) };
    let _resume = Resume(keyring);
    let started = Instant::now();
    let call = desktop.agenvoy(&["call", "--yes", "mcp__py__whoami"]);
    let took = started.elapsed();
    let stderr = text(&call.stderr);
    assert!(!call.status.success(), "{stderr}");
    // The deadline is the promise; a wide margin for a busy machine.
    assert!(took < Duration::from_secs(25), "took {took:?}: {stderr}");
    // Reported as such, and never traded for the file: tokens kept there now would be
    // missed once the keyring answers again.
    assert!(
        stderr.contains("the Secret Service did not answer within 10 s"),
        "{stderr}"
    );
    assert!(!stderr.contains("no OS keychain is reachable"), "{stderr}");
    assert!(!desktop.config_dir().join("oauth-tokens.json").exists());
}

/// A session bus without a Secret Service, then no bus at all: the tokens go to the 0600
/// file, and each process says so once.
#[test]
fn without_a_secret_service_the_file_is_used_with_one_warning() {
    let Some((_server, mut desktop)) = start(false) else {
        return;
    };
    let file = desktop.config_dir().join("oauth-tokens.json");
    let login = desktop.login();
    let (stdout, stderr) = (text(&login.stdout), text(&login.stderr));
    assert!(login.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("(tokens in {})", file.display())));
    let warning = format!(
        "no OS keychain is reachable (no Secret Service on the session bus (GNOME Keyring or \
         KWallet is not running)); OAuth tokens and client secrets are kept in {} (mode 0600)",
        file.display()
    );
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("no OS keychain").count(), 1, "{stderr}");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    desktop.stop();
    let call = desktop.agenvoy(&["call", "--yes", "mcp__py__whoami"]);
    let (stdout, stderr) = (text(&call.stdout), text(&call.stderr));
    assert!(call.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("hello from the protected server"));
    assert_eq!(stderr.matches("no OS keychain").count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "no OS keychain is reachable (no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set"
        ),
        "{stderr}"
    );
}

/// Issue 38 §3 with the keychain: the daemon and three `call` processes of one session, all
/// after the access token expired, with the authorization server rotating refresh tokens:
/// one refresh reaches it, none is refused, every call answers, the daemon stays connected
/// and the tokens stay in the keyring.
#[test]
fn the_daemon_and_calls_refresh_once_with_the_keychain() {
    let Some((server, desktop)) = start_with(true, &["--token-lifetime", "20"]) else {
        return;
    };
    let login = desktop.login();
    assert!(login.status.success(), "{}", text(&login.stderr));
    let logged_in = Instant::now();
    let mut serve = desktop.command(common::binary());
    serve.args(["serve", "--timeout", "20", "--listen", "127.0.0.1:0"]);
    let daemon = common::Listening::start(serve);
    let api = common::daemon::Api {
        authority: daemon.url.trim_start_matches("http://").to_string(),
        token: std::fs::read_to_string(desktop.config_dir().join("api-token")).unwrap(),
    };
    assert_eq!(api.status_of("py")["state"], "connected");
    // The token lives 20 s from the login.
    std::thread::sleep(Duration::from_secs(21).saturating_sub(logged_in.elapsed()));

    let daemon_api = api.clone();
    let from_daemon = std::thread::spawn(move || {
        daemon_api.post(
            "/v1/mcp/call",
            json!({"name": "mcp__py__whoami", "arguments": {}, "mode": "auto"}),
        )
    });
    let calls: Vec<Child> = (0..3)
        .map(|_| {
            desktop
                .command(common::binary())
                .args(["call", "--yes", "mcp__py__whoami"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for call in calls {
        let out = call.wait_with_output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("hello from the protected server"),
            "{stdout}"
        );
    }
    let reply = from_daemon.join().unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");

    let stats = server.request("GET", "/test/stats");
    assert_eq!(stats["refresh_grants"], 1, "one refresh: {stats}");
    assert_eq!(stats["refused_refresh"], 0, "{stats}");
    assert_eq!(stats["authorizations"], 1, "no second login: {stats}");
    assert_eq!(api.status_of("py")["state"], "connected");
    assert!(desktop.secrets().contains("attribute.key = tokens:py"));
    assert!(desktop.token_files().is_empty(), "no token file");
}
