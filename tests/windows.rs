//! A stdio server on Windows, run for real (CI runs this file under Wine, `.ci/wine/run`): a
//! `.cmd` or `.bat` server found by name over `PATH` and `PATHEXT` gets hostile arguments
//! intact or a clear refusal, a server's grandchild ends with its Job Object, the startup
//! timeout fires, and two writers of one allowlist lose no change (the lock across processes).
#![cfg(windows)]

mod common;

use agenvoy_mcp::{Client, ClientOptions, ErrorKind, StdioConfig};
use common::{fixture, fixture_binary, process_running};
use std::path::Path;
use std::time::{Duration, Instant};

/// Writes `dir/name` (a `.cmd` or `.bat`) that runs the fixture reporting its arguments, with
/// the script's own arguments after (`%*`).
fn wrapper(dir: &Path, name: &str) {
    let script = format!("@\"{}\" --mode report-args %*\r\n", fixture_binary());
    std::fs::write(dir.join(name), script).unwrap();
}

/// A config that starts `command` found only over `dir` (as `PATH`) and the usual `PATHEXT`.
fn found_in(dir: &Path, command: &str, args: &[&str]) -> StdioConfig {
    StdioConfig::new(command)
        .args(args.iter().copied())
        .env("PATH", dir.to_string_lossy())
        .env("PATHEXT", ".COM;.EXE;.BAT;.CMD")
}

/// What `cmd.exe` would read as its own syntax, but a server must get as written.
const HOSTILE: &[&str] = &[
    "two words",
    "",
    "&",
    "|",
    "^",
    "<in>",
    "a&echo INJECTED",
    "x|more",
    "caret^and^",
    "(parens)",
    "!bang!",
    "trailing\\",
    "C:\\Program Files\\x",
];

#[tokio::test]
async fn a_cmd_and_a_bat_server_found_by_name_get_hostile_arguments_intact() {
    let dir = tempfile::tempdir().unwrap();
    for script in ["wrapped-cmd.cmd", "wrapped-bat.bat"] {
        wrapper(dir.path(), script);
        let name = script.split('.').next().unwrap();
        let config = found_in(dir.path(), name, HOSTILE);
        let client = Client::connect_stdio(name, &config, ClientOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{script}: {e}"));
        let reported: Vec<String> =
            serde_json::from_str(client.details().instructions.as_deref().unwrap()).unwrap();
        let mut expected = vec!["--mode", "report-args"];
        expected.extend(HOSTILE);
        assert_eq!(reported, expected, "{script}");
        client.close().await;
    }
}

#[tokio::test]
async fn an_argument_no_quoting_makes_safe_for_a_batch_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    wrapper(dir.path(), "wrapped.cmd");
    for (args, named) in [
        (&["fine", "say \"hi\""][..], "args[1]"),
        (&["%PATH%"][..], "args[0]"),
        (&["line\nbreak"][..], "args[0]"),
    ] {
        let config = found_in(dir.path(), "wrapped", args);
        let err = Client::connect_stdio("batchy", &config, ClientOptions::default())
            .await
            .err()
            .unwrap_or_else(|| panic!("{args:?} was passed to a batch file"));
        assert!(matches!(err.kind(), ErrorKind::Spawn(_)), "{err}");
        let shown = err.to_string();
        assert!(
            shown.starts_with("mcp server \"batchy\": could not start the server"),
            "{shown}"
        );
        assert!(shown.contains(named), "{args:?}: {shown}");
        assert!(shown.contains("wrapped"), "names the command: {shown}");
    }
}

#[tokio::test]
async fn closing_a_server_ends_its_grandchild_with_the_job_object() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let config = fixture(&["--mode", "spawn-grandchild"])
        .env("FIXTURE_GRANDCHILD_PID", pid_file.to_string_lossy());
    let client = Client::connect_stdio("parent", &config, ClientOptions::default())
        .await
        .unwrap();
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().parse().unwrap();
    assert!(
        process_running(pid),
        "the grandchild runs while its server does"
    );
    client.close().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while process_running(pid) {
        assert!(
            Instant::now() < deadline,
            "grandchild {pid} outlived its server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_fails_at_the_startup_timeout() {
    let options = ClientOptions::default().with_startup_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let err = Client::connect_stdio("mute", &fixture(&["--mode", "no-init-response"]), options)
        .await
        .err()
        .expect("no answer, no client");
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().starts_with("mcp server \"mute\""), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// Two `Control`s on one config folder, as a daemon and a panel in two processes would be
/// (each has its own in-process lock, so only the lock file keeps them apart), each changing
/// the allowlist 15 times at once with the other: every change is kept.
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_of_one_allowlist_lose_no_change() {
    use agenvoy_mcp::auth::MemoryStore;
    use agenvoy_mcp::host::{Control, Manager, ManagerOptions};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"servers": {}}"#).unwrap();
    let control = || async {
        let options = ManagerOptions::default()
            .with_allowlist_path(dir.path().join("allow_tool"))
            .with_token_store(Arc::new(MemoryStore::new()));
        Control::new(Manager::load(&path, options).await.unwrap(), path.clone())
    };
    let (a, b) = (control().await, control().await);
    let writes = |control: Control, side: &'static str| async move {
        for n in 0..15 {
            let prefix = format!("mcp__{side}{n}__");
            control
                .set_allowed(&prefix, &[format!("{prefix}*")])
                .await
                .unwrap();
        }
        control
    };
    let (a, b) = tokio::join!(tokio::spawn(writes(a, "a")), tokio::spawn(writes(b, "b")));
    let kept = std::fs::read_to_string(dir.path().join("allow_tool")).unwrap();
    for side in ["a", "b"] {
        for n in 0..15 {
            assert!(
                kept.contains(&format!("mcp__{side}{n}__*")),
                "{side}{n} lost: {kept}"
            );
        }
    }
    assert!(dir.path().join("allow_tool.lock").is_file());
    a.unwrap().close().await;
    b.unwrap().close().await;
}
