//! The release as the package states it: the changelog's latest version is the one in
//! `Cargo.toml`, dated, its changes grouped; the license `Cargo.toml` names comes with its
//! texts. (CONTRIBUTING.md says how a release is made.)

use std::path::Path;

fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The changelog's `## ` sections, each as its heading and its lines.
fn sections(changelog: &str) -> Vec<(&str, Vec<&str>)> {
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in changelog.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push((heading, Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            lines.push(line);
        }
    }
    sections
}

#[test]
fn the_changelogs_latest_version_is_the_one_in_cargo_toml() {
    let changelog = read("CHANGELOG.md");
    let sections = sections(&changelog);
    // Between releases, changes gather in an `Unreleased` section above the latest version.
    let (heading, lines) = sections
        .iter()
        .find(|(heading, _)| *heading != "Unreleased")
        .expect("a version section in CHANGELOG.md");
    let version = env!("CARGO_PKG_VERSION");
    let (named, date) = heading
        .strip_prefix('[')
        .and_then(|rest| rest.split_once("] - "))
        .unwrap_or_else(|| panic!("`## {heading}` is not `## [X.Y.Z] - YYYY-MM-DD`"));
    assert_eq!(
        named, version,
        "CHANGELOG.md's latest version is {named}, Cargo.toml's is {version}"
    );
    let digits: Vec<&str> = date.split('-').collect();
    assert!(
        digits.len() == 3
            && [4, 2, 2]
                .iter()
                .zip(&digits)
                .all(|(n, d)| d.len() == *n && d.bytes().all(|b| b.is_ascii_digit())),
        "{version}'s date {date:?} is not YYYY-MM-DD"
    );
    // Its changes grouped: each kind under one heading, only the kinds Keep a Changelog names.
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("### "))
        .collect();
    assert!(!kinds.is_empty(), "{version} lists no changes");
    for kind in &kinds {
        assert!(
            [
                "Added",
                "Changed",
                "Deprecated",
                "Removed",
                "Fixed",
                "Security"
            ]
            .contains(kind),
            "{version} has a `### {kind}` group"
        );
        let times = kinds.iter().filter(|k| *k == kind).count();
        assert_eq!(times, 1, "{version} has {times} `### {kind}` groups");
    }
    assert!(
        changelog.contains(&format!("[{version}]: ")),
        "CHANGELOG.md has no link for [{version}]"
    );
}

#[test]
fn the_license_cargo_toml_names_comes_with_its_texts() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT OR Apache-2.0");
    let mit = read("LICENSE-MIT");
    assert!(mit.starts_with("MIT License") && mit.contains("WITHOUT WARRANTY OF ANY KIND"));
    let apache = read("LICENSE-APACHE");
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
}
