//! Every folder the binary creates is private (mode 0700), whichever command creates it: the
//! config folder named by `AGENVOY_CONFIG_DIR` that does not exist yet, and its missing
//! parents. (`serve` made them 0755 once: the API token's folder was made with
//! `create_dir_all`.)

// Modes are Unix; on Windows the same function gives the folders a private ACL.
#![cfg(all(feature = "cli", unix))]

mod common;

use common::{Listening, binary};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// The mode bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Asserts that `outer` and `outer/inner` (made by `command`) are 0700.
fn assert_private(outer: &Path, command: &str) {
    for folder in [outer.to_path_buf(), outer.join("agenvoy")] {
        assert!(folder.is_dir(), "{command} made {}", folder.display());
        assert_eq!(
            mode(&folder),
            0o700,
            "{command} made {} mode {:o}",
            folder.display(),
            mode(&folder)
        );
    }
}

#[test]
fn serve_makes_a_missing_config_folder_private() {
    let dir = tempfile::tempdir().unwrap();
    let outer = dir.path().join("new");
    let config_dir = outer.join("agenvoy");
    let mut command = Command::new(binary());
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(config_dir.join("oauth-tokens.json"))
        .env("AGENVOY_CONFIG_DIR", &config_dir);
    let daemon = Listening::start(command);
    assert!(config_dir.join("api-token").is_file());
    assert_private(&outer, "serve");
    drop(daemon);
}

#[test]
fn tools_and_call_make_a_missing_config_folder_private() {
    for args in [
        &["tools"][..],
        &["call", "--yes", "mcp__fixture__echo", r#"{"text":"hi"}"#][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("new");
        let output = Command::new(binary())
            .args(args)
            .env("AGENVOY_CONFIG_DIR", outer.join("agenvoy"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_private(&outer, args[0]);
    }
}
