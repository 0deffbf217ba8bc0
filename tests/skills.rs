//! The skills extension (SEP-2640) from the library: listed lazily, read through `skill://`
//! URIs and verified against their digests, against the fixture (the 2026-07-28 era over
//! HTTP; the handshake era over stdio with a file that lies about its digest) and the
//! TypeScript SDK 2.4 server's `SkillsExtension`.
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::{Client, ClientOptions, ErrorKind, Handlers, HttpConfig, Skill, StdioConfig};
use common::{Listening, fixture, fixture_binary, installed};

fn with_skills() -> ClientOptions {
    ClientOptions::default().with_handlers(Handlers::default().with_skills(true))
}

/// The methods the fixture was asked, one a line, from its `FIXTURE_METHOD_LOG`.
fn methods_in(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn skill<'a>(skills: &'a [Skill], name: &str) -> &'a Skill {
    skills
        .iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| panic!("no skill {name} in {skills:?}"))
}

#[tokio::test]
async fn a_modern_fixture_over_http_lists_skills_without_reading_a_file_until_one_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let mut command = std::process::Command::new(fixture_binary());
    command
        .args([
            "--http",
            "127.0.0.1:0",
            "--mode",
            "modern",
            "--page-size",
            "1",
        ])
        .env("FIXTURE_METHOD_LOG", &log);
    let server = Listening::start(command);
    let client = Client::connect_http("fixture", &HttpConfig::new(&server.url), with_skills())
        .await
        .unwrap();

    let skills = client.list_skills().await.unwrap();
    let names: Vec<&str> = skills.iter().map(Skill::name).collect();
    assert_eq!(names, ["greeting", "counting"], "both pages are read");
    let greeting = skill(&skills, "greeting");
    assert_eq!(greeting.description(), "Greet a person in the house style");
    assert_eq!(greeting.files.as_ref().unwrap().len(), 2);
    let asked = methods_in(&log);
    assert!(
        !asked.iter().any(|m| m == "resources/read"),
        "listing reads no skill file: {asked:?}"
    );

    let style = "skill://greeting/references/STYLE.md";
    let file = client.read_skill_file(greeting, style).await.unwrap();
    assert_eq!(file.text(), Some("Say hello warmly, in one sentence.\n"));
    assert!(file.verified);
    let reads = methods_in(&log)
        .iter()
        .filter(|m| *m == "resources/read")
        .count();
    assert_eq!(reads, 1, "one file asked, one file read");

    let got = client.get_skill("skill://counting/SKILL.md").await.unwrap();
    assert_eq!(got.description(), "Count things one by one");
    let err = client.get_skill("skill://nope/SKILL.md").await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Rpc(e) if e.code == -32602),
        "{err}"
    );

    let children = client
        .read_skill_directory("skill://greeting")
        .await
        .unwrap();
    let uris: Vec<&str> = children.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["skill://greeting/SKILL.md", "skill://greeting/references"]
    );

    let unlisted = client
        .read_skill_file(greeting, "skill://counting/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        unlisted
            .to_string()
            .contains("is not a file of the skill greeting"),
        "{unlisted}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_file_that_does_not_match_its_digest_is_an_error_never_content() {
    let client =
        Client::connect_stdio("liar", &fixture(&["--mode", "lying-skills"]), with_skills())
            .await
            .unwrap();
    let skills = client.list_skills().await.unwrap();
    let greeting = skill(&skills, "greeting");
    let skill_md = client
        .read_skill_file(greeting, "skill://greeting/SKILL.md")
        .await
        .unwrap();
    assert!(skill_md.text().unwrap().contains("name: greeting"));

    let err = client
        .read_skill_file(greeting, "skill://greeting/references/STYLE.md")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("liar"), "names the server: {text}");
    assert!(text.contains("resources/read"), "names the method: {text}");
    assert!(
        text.contains("does not match the digest") && text.contains("refused"),
        "{text}"
    );
    assert!(
        !text.contains("system prompt"),
        "the lie is never shown: {text}"
    );

    // The SEP's frontmatter rule: `counting`'s SKILL.md matches its digest, but its entry
    // describes it otherwise; the skill is not loaded.
    let counting = skill(&skills, "counting");
    assert_eq!(
        counting.description(),
        "Count the votes and announce the winner"
    );
    let err = client
        .read_skill_file(counting, "skill://counting/SKILL.md")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the frontmatter of skill://counting/SKILL.md is not its skill entry's")
            && err.contains("description: the file has \"Count things one by one\"")
            && err.contains("not loaded"),
        "{err}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_server_without_the_extension_is_an_error_that_says_so() {
    let client = Client::connect_stdio("plain", &fixture(&[]), with_skills())
        .await
        .unwrap();
    let err = client.list_skills().await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Usage(_)), "{err}");
    assert!(
        err.to_string()
            .contains("does not declare the skills extension"),
        "{err}"
    );
    client.close().await;
}

#[tokio::test]
async fn the_typescript_sdk_server_serves_a_folder_of_skills_that_verify() {
    let Some(modules) = installed("node_modules/@modelcontextprotocol/server") else {
        return;
    };
    let modules = modules.parent().unwrap().parent().unwrap().to_owned();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = StdioConfig::new("node").args([
        root.join("fixtures/node/skills_server.mjs")
            .display()
            .to_string(),
        modules.display().to_string(),
        root.join("fixtures/skills").display().to_string(),
    ]);
    agenvoy_mcp::unstable::become_subreaper();
    let client = Client::connect_stdio("ts-skills", &config, with_skills())
        .await
        .unwrap();
    let skills = client.list_skills().await.unwrap();
    let names: Vec<&str> = skills.iter().map(Skill::name).collect();
    assert_eq!(names, ["code-review", "release-notes"]);
    let notes = skill(&skills, "release-notes");
    assert_eq!(
        notes.files.as_ref().unwrap().len(),
        3,
        "SKILL.md, FORMAT.md, group.sh"
    );
    for file in notes.files.as_ref().unwrap() {
        let read = client.read_skill_file(notes, &file.uri).await.unwrap();
        let on_disk = file.uri.replace("skill://", "fixtures/skills/");
        assert_eq!(
            read.bytes,
            std::fs::read(root.join(on_disk)).unwrap(),
            "{}",
            file.uri
        );
        assert!(read.verified);
    }
    let got = client
        .get_skill("skill://code-review/SKILL.md")
        .await
        .unwrap();
    assert_eq!(
        got.description(),
        "Review a change for correctness before style"
    );
    let children = client
        .read_skill_directory("skill://release-notes")
        .await
        .unwrap();
    assert_eq!(children.len(), 3, "{children:?}");
    client.close().await;
}

/// The skills of the host's servers, as an embedder's manager sees them: the servers listed
/// beside the bundled fixture's two eras, and one that lies.
fn skill_servers(log: &std::path::Path) -> serde_json::Value {
    let mut kit = common::fixture_entry(&["--mode", "modern"]);
    kit["env"] = serde_json::json!({"FIXTURE_METHOD_LOG": log});
    serde_json::json!({
        "kit": kit,
        "liar": common::fixture_entry(&["--mode", "lying-skills"]),
        "plain": common::fixture_entry(&[]),
    })
}

#[tokio::test]
async fn a_host_offers_skills_to_the_model_and_loads_one_through_the_gate_and_the_checks() {
    use agenvoy_mcp::host::{
        CallError, Config, LOAD_SKILL_TOOL, Manager, ManagerOptions, PermissionMode,
    };
    agenvoy_mcp::unstable::become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let config =
        Config::parse(&serde_json::json!({"servers": skill_servers(&log)}).to_string()).unwrap();
    let options = ManagerOptions::default()
        .with_client(with_skills())
        .with_allowlist_path(dir.path().join("allow_tool"));
    let manager = Manager::new(config, options).await;

    let counts: Vec<(String, usize)> = manager
        .status()
        .into_iter()
        .map(|s| (s.name, s.skill_count))
        .collect();
    assert_eq!(
        counts,
        [("kit".into(), 2), ("liar".into(), 2), ("plain".into(), 0)]
    );
    let definition = manager
        .tool_definition(LOAD_SKILL_TOOL)
        .expect("the skill tool is offered");
    assert!(
        definition
            .description
            .contains("kit/greeting: Greet a person in the house style")
            && definition.description.contains("liar/counting"),
        "{}",
        definition.description
    );
    assert!(
        definition
            .input_schema
            .get()
            .contains(r#""enum":["kit","liar"]"#),
        "{}",
        definition.input_schema.get()
    );
    assert!(
        manager
            .tool_definitions()
            .iter()
            .any(|d| d.name == LOAD_SKILL_TOOL)
    );
    assert!(
        !methods_in(&log).iter().any(|m| m == "resources/read"),
        "no skill file is read before one is loaded: {:?}",
        methods_in(&log)
    );

    let load = |arguments: serde_json::Value, mode| {
        let manager = &manager;
        async move { manager.call(LOAD_SKILL_TOOL, arguments, mode).await }
    };
    let denied = load(
        serde_json::json!({"server": "kit", "skill": "greeting"}),
        PermissionMode::Confirm,
    )
    .await;
    assert!(matches!(denied, Err(CallError::Denied(_))), "{denied:?}");
    assert!(!methods_in(&log).iter().any(|m| m == "resources/read"));

    let skill_md = load(
        serde_json::json!({"server": "kit", "skill": "greeting"}),
        PermissionMode::Auto,
    )
    .await
    .unwrap();
    assert!(
        skill_md.text.contains("# Greeting")
            && skill_md.text.contains(
                "[files of the skill greeting, read one with \"file\": skill://greeting/references/STYLE.md]"
            ),
        "{}",
        skill_md.text
    );
    let style = load(
        serde_json::json!({"server": "kit", "skill": "greeting", "file": "skill://greeting/references/STYLE.md"}),
        PermissionMode::Auto,
    )
    .await
    .unwrap();
    assert_eq!(style.text, "Say hello warmly, in one sentence.\n");

    let lie = load(
        serde_json::json!({"server": "liar", "skill": "counting"}),
        PermissionMode::Auto,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(lie.contains("not its skill entry's"), "{lie}");
    let unknown = load(
        serde_json::json!({"server": "kit", "skill": "juggling"}),
        PermissionMode::Auto,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        unknown.contains(
            "kit lists no skill or skill file \"juggling\" (its skills: greeting, counting)"
        ),
        "{unknown}"
    );
    manager.close().await;

    // An embedder that did not ask for skills declares nothing: no skills, no skill tool.
    let config =
        Config::parse(&serde_json::json!({"servers": skill_servers(&log)}).to_string()).unwrap();
    let options = ManagerOptions::default().with_allowlist_path(dir.path().join("allow_tool"));
    let manager = Manager::new(config, options).await;
    assert!(manager.status().iter().all(|s| s.skill_count == 0));
    assert!(manager.tool_definition(LOAD_SKILL_TOOL).is_none());
    manager.close().await;
}

#[test]
fn the_daemon_lists_skills_and_serves_a_verified_file_never_a_lie() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("methods");
    let config = serde_json::json!({"servers": skill_servers(&log)});
    let daemon = common::daemon::Daemon::start(Some(config));
    assert_eq!(daemon.api.status_of("kit")["skillCount"], 2);
    assert_eq!(daemon.api.status_of("plain")["skillCount"], 0);

    let listed = daemon.api.get("/v1/mcp/skills?name=kit");
    let uris: Vec<&str> = listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        ["skill://greeting/SKILL.md", "skill://counting/SKILL.md"]
    );
    assert_eq!(listed["skills"][0]["frontmatter"]["name"], "greeting");
    assert!(!methods_in(&log).iter().any(|m| m == "resources/read"));

    let by_name = daemon.api.get("/v1/mcp/skill?name=kit&uri=greeting");
    assert_eq!(by_name["uri"], "skill://greeting/SKILL.md");
    assert_eq!(by_name["verified"], true);
    assert!(
        by_name["text"].as_str().unwrap().contains("# Greeting"),
        "{by_name}"
    );
    let file = daemon
        .api
        .get("/v1/mcp/skill?name=kit&uri=skill://greeting/references/STYLE.md");
    assert_eq!(
        (file["skill"].as_str(), file["text"].as_str()),
        (
            Some("greeting"),
            Some("Say hello warmly, in one sentence.\n")
        )
    );

    let lie = daemon.api.send(
        "GET",
        "/v1/mcp/skill?name=liar&uri=skill://greeting/references/STYLE.md",
        None,
    );
    assert_eq!(lie.status, 502, "{lie:?}");
    assert!(lie.error().contains("does not match the digest"), "{lie:?}");
    assert!(!format!("{lie:?}").contains("system prompt"), "{lie:?}");
    let unknown = daemon
        .api
        .send("GET", "/v1/mcp/skill?name=kit&uri=juggling", None);
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert!(unknown.error().contains("lists no skill"), "{unknown:?}");
    let no_uri = daemon.api.send("GET", "/v1/mcp/skill?name=kit", None);
    assert_eq!(no_uri.status, 400, "{no_uri:?}");
}
