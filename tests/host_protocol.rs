//! The Manager beyond tools, against the bundled fixture in both eras: each server's
//! resources, templates and prompts, the host tools that list and read resources (through the
//! gate), elicitation handed to the embedder with the server's name, and the event stream
//! (log messages, list changes, updated resources).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::host::{
    CallError, Config, Event, LIST_RESOURCES_TOOL, Manager, ManagerOptions, PermissionMode,
    READ_RESOURCE_TOOL,
};
use agenvoy_mcp::{ClientOptions, ElicitationAnswer, ElicitationKind, LogLevel};
use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn options(dir: &Path) -> ManagerOptions {
    ManagerOptions::default()
        .with_client(ClientOptions::default().with_timeout(Duration::from_secs(20)))
        .with_allowlist_path(dir.join("allow_tool"))
}

async fn start(servers: Value, options: ManagerOptions) -> Manager {
    agenvoy_mcp::unstable::become_subreaper();
    let config = Config::parse(&json!({ "servers": servers }).to_string()).unwrap();
    Manager::new(config, options).await
}

async fn text_of(manager: &Manager, name: &str, arguments: Value) -> String {
    let output = manager
        .call(name, arguments, PermissionMode::Auto)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!output.is_error, "{name}: {}", output.text);
    output.text
}

/// Waits for the first event that `wanted` picks, for at most 20 s.
async fn event_where(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    wanted: impl Fn(&Event) -> bool,
) -> Event {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let event = events.recv().await.expect("the bus is open");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("the event within 20 s")
}

#[tokio::test]
async fn the_host_tools_list_and_read_every_servers_resources_through_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(two_fixtures(), options(dir.path())).await;
    for status in manager.status() {
        assert_eq!(
            (
                status.resource_count,
                status.template_count,
                status.prompt_count
            ),
            (2, 1, 2),
            "{status:?}"
        );
    }
    let definitions = manager.tool_definitions();
    let read = definitions
        .iter()
        .find(|d| d.name == READ_RESOURCE_TOOL)
        .expect("the read tool is offered");
    assert!(
        read.description.contains("init, modern"),
        "{}",
        read.description
    );
    assert!(definitions.iter().any(|d| d.name == LIST_RESOURCES_TOOL));
    // Never taken by a server's tool: those are mcp__<server>__<tool>.
    assert!(manager.registry().get(READ_RESOURCE_TOOL).is_none());

    for server in ["init", "modern"] {
        let listed = text_of(&manager, LIST_RESOURCES_TOOL, json!({"server": server})).await;
        assert!(
            listed.starts_with(&format!(
                "2 resources and 1 resource templates of {server}:\n"
            )) && listed.contains(r#""uri":"fixture://logo""#)
                && listed.contains(r#""uriTemplate":"fixture://big/{bytes}""#),
            "{listed}"
        );
        let readme = json!({"server": server, "uri": "fixture://readme"});
        let text = text_of(&manager, READ_RESOURCE_TOOL, readme).await;
        assert_eq!(text, "The agenvoy fixture server's readme.");
        let big = json!({"server": server, "uri": "fixture://big/2000000"});
        let text = text_of(&manager, READ_RESOURCE_TOOL, big).await;
        assert!(
            text.ends_with("[mcp output truncated: 2000000 bytes total, 1048576 kept]"),
            "{}",
            &text[text.len() - 80..]
        );
        let prompt = manager
            .get_prompt(server, "greet", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(
            prompt.messages[0].text().unwrap(),
            "Greet Ada in a casual way."
        );
    }
    // Unknown servers and missing arguments say so to the model.
    let missing = manager
        .call(
            READ_RESOURCE_TOOL,
            json!({"server": "init"}),
            PermissionMode::Auto,
        )
        .await
        .unwrap();
    assert!(
        missing.is_error && missing.text.contains("\"uri\""),
        "{missing:?}"
    );
    let unknown = manager
        .call(
            LIST_RESOURCES_TOOL,
            json!({"server": "nope"}),
            PermissionMode::Auto,
        )
        .await
        .unwrap();
    assert!(unknown.is_error, "{unknown:?}");
    // In confirm mode, with no one to ask and nothing allowlisted, the gate refuses.
    let refused = manager
        .call(
            READ_RESOURCE_TOOL,
            json!({"server": "init", "uri": "fixture://readme"}),
            PermissionMode::Confirm,
        )
        .await;
    assert!(matches!(refused, Err(CallError::Denied(_))), "{refused:?}");
    manager.close().await;
}

#[tokio::test]
async fn elicitation_reaches_the_embedder_with_the_servers_name_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let with_handler = options(dir.path()).with_elicitation(move |server, request| {
        let ElicitationKind::Form(form) = &request.kind else {
            panic!("a form")
        };
        seen.lock()
            .unwrap()
            .push((server.clone(), form.message.clone()));
        async move { ElicitationAnswer::accept(json!({"name": server})) }
    });
    let manager = start(two_fixtures(), with_handler).await;
    for server in ["init", "modern"] {
        let ask = json!({"method": "elicitation/create", "params": {"message": "Who?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
        let text = text_of(&manager, &format!("mcp__{server}__client_request"), ask).await;
        assert!(text.contains(&format!(r#""name":"{server}""#)), "{text}");
    }
    // With no handler the question is refused, saying why.
    let plain = start(json!({"f": fixture_entry(&[])}), options(dir.path())).await;
    let ask = json!({"method": "elicitation/create", "params": {"message": "Who?",
        "requestedSchema": {"type": "object", "properties": {}}}});
    let text = text_of(&plain, "mcp__f__client_request", ask).await;
    assert!(text.contains("did not declare elicitation"), "{text}");
    plain.close().await;
    assert_eq!(
        *asked.lock().unwrap(),
        [
            ("init".to_string(), "Who?".to_string()),
            ("modern".into(), "Who?".into())
        ]
    );
    manager.close().await;
}

#[tokio::test]
async fn log_messages_list_changes_and_updates_reach_the_event_stream() {
    let dir = tempfile::tempdir().unwrap();
    let manager = start(two_fixtures(), options(dir.path())).await;
    manager.watch();
    let mut events = manager.events();
    // The fixture answers logging/setLevel with a warning (and a debug message, which this
    // level keeps out).
    let client = manager.client("init").unwrap();
    client.set_log_level(LogLevel::Warning).await.unwrap();
    let Event::Log { server, level, .. } =
        event_where(&mut events, |e| matches!(e, Event::Log { .. })).await
    else {
        unreachable!()
    };
    assert_eq!((server.as_str(), level), ("init", LogLevel::Warning));

    for server in ["init", "modern"] {
        let added = json!({"name": "added", "resource": "fixture://added"});
        text_of(&manager, &format!("mcp__{server}__add_tool"), added).await;
        let changed = event_where(
            &mut events,
            |e| matches!(e, Event::ListChanged { server: s, list: "resources", .. } if s == server),
        )
        .await;
        assert!(
            matches!(changed, Event::ListChanged { count: 4, .. }),
            "{changed:?}"
        );
        let catalog = manager.catalog(server).unwrap();
        assert!(catalog.resources.iter().any(|r| r.uri == "fixture://added"));

        manager.subscribe(server, "fixture://readme").await.unwrap();
        let updated = event_where(
            &mut events,
            |e| matches!(e, Event::ResourceUpdated { server: s, .. } if s == server),
        )
        .await;
        assert!(
            matches!(&updated, Event::ResourceUpdated { uri, .. } if uri == "fixture://readme"),
            "{updated:?}"
        );
        assert_eq!(manager.subscriptions(server), ["fixture://readme"]);
    }
    manager.close().await;
}
