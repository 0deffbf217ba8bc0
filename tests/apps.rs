//! MCP Apps (SEP-1865, `io.modelcontextprotocol/ui`) from the library: the extension declared
//! only by an embedder that renders, each tool's UI as the library shows it (hostile URIs
//! refused), and `ui://` pages read whole past the model's cap, up to their own bound, over
//! stdio and HTTP; against the fixture's `apps` mode and the example server of
//! `@modelcontextprotocol/ext-apps` (`server-basic-vanillajs`).
#![cfg(feature = "cli")]

mod common;

use agenvoy_mcp::{
    Client, ClientOptions, ErrorKind, Handlers, HttpConfig, StdioConfig, Tool, UI_MIME_TYPE,
};
use common::{HttpFixture, connect, installed};

/// Options of a client that renders MCP Apps pages.
fn renders() -> ClientOptions {
    ClientOptions::default().with_handlers(Handlers::default().with_ui([UI_MIME_TYPE]))
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn a_client_that_renders_sees_each_tools_ui_and_hostile_uris_are_refused() {
    let client = connect(&["--mode", "apps"], renders()).await;
    let tools = client.list_tools().await.unwrap();

    let clock = tool(&tools, "clock").ui().expect("clock has a UI");
    assert_eq!(clock.resource_uri, "ui://fixture/clock.html");
    assert_eq!(clock.visibility, ["model", "app"]);
    let refresh = tool(&tools, "clock_refresh").ui().unwrap();
    assert_eq!(refresh.visibility, ["app"]);
    assert!(!refresh.visible_to_model());
    let flat = tool(&tools, "flat_ui").ui().unwrap();
    assert_eq!(
        flat.resource_uri, "ui://fixture/blob.html",
        "the older flat key"
    );
    for bad in ["bad_scheme", "bad_control", "bad_long"] {
        assert_eq!(tool(&tools, bad).ui(), None, "{bad}");
    }
    assert_eq!(tool(&tools, "echo").ui(), None, "a tool without a UI");

    let page = client.read_ui_resource(&clock.resource_uri).await.unwrap();
    assert_eq!(page.uri, "ui://fixture/clock.html");
    assert_eq!(page.mime_type.as_deref(), Some(UI_MIME_TYPE));
    assert_eq!(
        page.html,
        "<!DOCTYPE html><html><body><p id=\"time\">12:00 été</p></body></html>"
    );
    assert_eq!(page.ui.csp.connect_domains, ["https://api.example.com"]);
    assert_eq!(page.ui.csp.resource_domains, ["https://*.cdn.example"]);
    assert_eq!(page.ui.permissions, ["clipboardWrite"]);
    assert_eq!(page.ui.prefers_border, Some(false));

    let blob = client.read_ui_resource(&flat.resource_uri).await.unwrap();
    assert_eq!(
        blob.html,
        "<!DOCTYPE html><html><body><p>from a blob ✓</p></body></html>"
    );

    let err = client
        .read_ui_resource("fixture://readme")
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Usage(_)), "{err}");
    assert!(err.to_string().contains("read_resource"), "{err}");
    client.close().await;
}

#[tokio::test]
async fn a_client_that_does_not_render_declares_nothing_and_gets_the_text_fallback() {
    let client = connect(&["--mode", "apps"], ClientOptions::default()).await;
    let tools = client.list_tools().await.unwrap();
    let clock = tool(&tools, "clock");
    assert_eq!(clock.ui(), None, "the server saw no UI extension declared");
    assert!(tools.iter().all(|t| t.ui().is_none()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.name == "big_page"));
    let said = client.call_tool("clock", serde_json::json!({})).await;
    assert_eq!(said.unwrap().text, "It is 12:00.");
    client.close().await;
}

/// The fixture's `big.html` (6 MiB): what its rows hold, so a page read whole can be told
/// from one cut or mangled.
fn assert_big_page(html: &str) {
    assert_eq!(html.len(), 6 << 20);
    assert!(html.starts_with("<!DOCTYPE html><html><body>\n<p class=\"row\">row 0 é \\</p>\n"));
    assert!(html.ends_with("x</body></html>\n"));
    let rows = html.matches("<p class=\"row\">").count();
    assert!(rows > 150_000, "{rows} rows");
    assert!(html.contains(&format!("<p class=\"row\">row {} é \\</p>", rows - 1)));
}

#[tokio::test]
async fn a_page_past_the_models_cap_is_read_whole_and_one_past_its_bound_is_an_error() {
    let client = connect(&["--mode", "apps"], renders()).await;
    let page = client
        .read_ui_resource("ui://fixture/big.html")
        .await
        .unwrap();
    assert_big_page(&page.html);
    // The same resource as a model sees it is cut at the cap.
    let for_model = client.read_resource("ui://fixture/big.html").await.unwrap();
    assert!(
        for_model.text.ends_with(" kept]") && for_model.text.len() < (1 << 20) + 100,
        "{} bytes",
        for_model.text.len()
    );

    let err = client
        .read_ui_resource("ui://fixture/huge.html")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err.kind(), ErrorKind::Protocol(_)), "{text}");
    assert!(
        text.contains("fixture") && text.contains("resources/read"),
        "{text}"
    );
    assert!(
        text.contains("ui://fixture/huge.html") && text.contains("more than the 8388608"),
        "{text}"
    );

    // The connection goes on, and a tool result past the cap is cut as before.
    let big = client
        .call_tool("big", serde_json::json!({"bytes": 2 << 20}))
        .await
        .unwrap();
    assert!(big.text.ends_with("2097152 bytes total, 1048576 kept]"));
    assert_eq!(
        client
            .read_ui_resource("ui://fixture/clock.html")
            .await
            .unwrap()
            .uri,
        "ui://fixture/clock.html"
    );
    client.close().await;
}

#[tokio::test]
async fn pages_are_read_whole_over_http_in_json_and_sse_answers() {
    for mode in ["json", "sse"] {
        let server = HttpFixture::start(mode, &[]);
        let client = Client::connect_http("web", &HttpConfig::new(&server.url), renders())
            .await
            .unwrap();
        let page = client
            .read_ui_resource("ui://fixture/big.html")
            .await
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_big_page(&page.html);
        let err = client
            .read_ui_resource("ui://fixture/huge.html")
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("more than the 8388608"),
            "{mode}: {err}"
        );
        client.close().await;
    }
}

/// The example server, its stdin copied to `log` on the way (`tee`), so that a test sees
/// what the client sent it.
fn example_server(log: &std::path::Path) -> Option<StdioConfig> {
    let program = installed("node_modules/.bin/mcp-server-basic-vanillajs")?;
    agenvoy_mcp::unstable::become_subreaper();
    let script = r#"tee "$1" | exec node "$2" --stdio"#;
    Some(StdioConfig::new("sh").args([
        "-c".to_string(),
        script.to_string(),
        "sh".to_string(),
        log.display().to_string(),
        program.canonicalize().unwrap().display().to_string(),
    ]))
}

/// The `capabilities` of the `initialize` request in a log of what the client sent.
fn declared_capabilities(log: &std::path::Path) -> serde_json::Value {
    let sent = std::fs::read_to_string(log).unwrap();
    let initialize = sent
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| m["method"] == "initialize")
        .expect("an initialize request");
    initialize["params"]["capabilities"].clone()
}

#[tokio::test]
async fn the_ext_apps_example_server_names_its_page_and_it_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sent");
    let Some(config) = example_server(&log) else {
        return;
    };
    let client = Client::connect_stdio("basic", &config, renders())
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    let get_time = tool(&tools, "get-time");
    let ui = get_time.ui().expect("get-time names its page");
    assert_eq!(ui.resource_uri, "ui://get-time/mcp-app.html");
    assert_eq!(ui.visibility, ["model", "app"]);

    let page = client.read_ui_resource(&ui.resource_uri).await.unwrap();
    let program = installed("node_modules/.bin/mcp-server-basic-vanillajs").unwrap();
    let on_disk = program
        .canonicalize()
        .unwrap()
        .with_file_name("mcp-app.html");
    assert_eq!(page.html, std::fs::read_to_string(on_disk).unwrap());
    assert_eq!(page.mime_type.as_deref(), Some(UI_MIME_TYPE));
    assert_eq!(
        page.ui,
        Default::default(),
        "it asks for no origin or permission"
    );
    let said = client
        .call_tool("get-time", serde_json::json!({}))
        .await
        .unwrap();
    assert!(said.text.contains('T'), "an ISO 8601 time: {}", said.text);
    client.close().await;
    assert_eq!(
        declared_capabilities(&log)["extensions"],
        serde_json::json!({"io.modelcontextprotocol/ui": {"mimeTypes": [UI_MIME_TYPE]}})
    );

    let quiet_log = dir.path().join("sent-quiet");
    let config = example_server(&quiet_log).unwrap();
    let client = Client::connect_stdio("basic", &config, ClientOptions::default())
        .await
        .unwrap();
    client.list_tools().await.unwrap();
    client.close().await;
    assert_eq!(
        declared_capabilities(&quiet_log),
        serde_json::json!({}),
        "a client that does not render declares nothing"
    );
}

/// The fixture in `apps` mode, as a command after `--`.
fn apps_fixture() -> Vec<String> {
    common::fixture_command(&["--mode", "apps"])
}

/// `probe` with `flags`, then the fixture in `apps` mode: its stdout, asserting success.
fn probe_text(flags: &[&str]) -> String {
    let output = std::process::Command::new(common::binary())
        .arg("probe")
        .args(flags)
        .arg("--")
        .args(apps_fixture())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "probe {flags:?}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn probe_declares_the_extension_with_ui_and_shows_each_tools_page() {
    let command = apps_fixture();
    let mut args = vec!["--ui", "--"];
    args.extend(command.iter().map(String::as_str));
    let report = common::probe_json(&args);
    let tools = report["tools"].as_array().unwrap();
    let shown = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    assert_eq!(
        shown("clock")["ui"],
        serde_json::json!({"resourceUri": "ui://fixture/clock.html", "visibility": ["model", "app"]})
    );
    assert_eq!(
        shown("clock_refresh")["ui"]["visibility"],
        serde_json::json!(["app"])
    );
    assert_eq!(
        shown("clock")["_meta"]["ui"]["resourceUri"],
        "ui://fixture/clock.html",
        "the tool as the server sent it"
    );
    for name in ["bad_scheme", "bad_control", "bad_long", "echo"] {
        assert!(shown(name).get("ui").is_none(), "{name}: {}", shown(name));
    }

    let text = probe_text(&["--ui"]);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name}:\n{text}"))
            .to_string()
    };
    assert!(
        row("clock").contains("[ui ui://fixture/clock.html] The fixture's clock."),
        "{text}"
    );
    assert!(
        row("clock_refresh").contains("[ui ui://fixture/clock.html, app only]"),
        "{text}"
    );
    assert!(!row("bad_control").contains("[ui"), "{text}");
    assert!(!text.contains('\u{1b}'), "no raw escape: {text}");

    // Without --ui nothing is declared, and the fixture names no page.
    let mut args = vec!["--"];
    args.extend(command.iter().map(String::as_str));
    let report = common::probe_json(&args);
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t.get("ui").is_none()), "{tools:?}");
    assert!(!probe_text(&[]).contains("[ui "));
}

#[test]
fn probe_reads_a_page_whole_with_ui_and_as_the_model_sees_it_without() {
    let command = apps_fixture();
    let with = |flags: &[&str]| {
        let mut args: Vec<&str> = flags.to_vec();
        args.push("--");
        args.extend(command.iter().map(String::as_str));
        common::probe_json(&args)
    };
    let report = with(&["--ui", "--read", "ui://fixture/big.html"]);
    assert_big_page(report["page"]["html"].as_str().unwrap());
    assert_eq!(report["page"]["mimeType"], UI_MIME_TYPE);
    assert!(report.get("read").is_none());
    let report = with(&["--ui", "--read", "ui://fixture/clock.html"]);
    assert_eq!(
        report["page"]["ui"],
        serde_json::json!({
            "csp": {"connectDomains": ["https://api.example.com"],
                    "resourceDomains": ["https://*.cdn.example"],
                    "frameDomains": [], "baseUriDomains": []},
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": false,
        })
    );
    let text = probe_text(&["--ui", "--read", "ui://fixture/clock.html"]);
    assert!(
        text.contains(
            "page ui://fixture/clock.html (69 bytes, text/html;profile=mcp-app):\n  csp connect: https://api.example.com\n  csp resource: https://*.cdn.example\n  permissions: clipboardWrite\n<!DOCTYPE html>"
        ),
        "{text}"
    );

    // Without --ui, --read is what the model sees: cut at the cap.
    let report = with(&["--read", "ui://fixture/big.html"]);
    assert!(report.get("page").is_none());
    assert_eq!(report["read"]["totalBytes"], 6 << 20);
    assert!(report["read"]["text"].as_str().unwrap().ends_with(" kept]"));

    // A page past its bound fails the probe, naming the step and the bound.
    let output = std::process::Command::new(common::binary())
        .args(["probe", "--ui", "--read", "ui://fixture/huge.html", "--"])
        .args(&command)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("resources/read") && stderr.contains("more than the 8388608"),
        "{stderr}"
    );
}

/// A daemon whose one server, `fx`, is the fixture in `apps` mode; `render_ui` as given.
fn apps_daemon(render_ui: Option<serde_json::Value>) -> common::daemon::Daemon {
    let mut config =
        serde_json::json!({"servers": {"fx": common::fixture_entry(&["--mode", "apps"])}});
    if let Some(flag) = render_ui {
        config["render_ui"] = flag;
    }
    common::daemon::Daemon::start(Some(config))
}

#[test]
fn a_daemon_whose_callers_render_lists_each_tools_page_and_serves_it_whole() {
    let daemon = apps_daemon(Some(serde_json::json!(true)));
    let api = &daemon.api;
    let listed = api.get("/v1/mcp/tools");
    let tools = listed["tools"].as_array().unwrap();
    let shown = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {listed}"))
            .clone()
    };
    assert_eq!(
        shown("mcp__fx__clock")["ui"],
        serde_json::json!({"resourceUri": "ui://fixture/clock.html", "visibility": ["model", "app"]})
    );
    assert_eq!(
        shown("mcp__fx__flat_ui")["ui"]["resourceUri"],
        "ui://fixture/blob.html"
    );
    for name in [
        "mcp__fx__bad_scheme",
        "mcp__fx__bad_control",
        "mcp__fx__echo",
    ] {
        assert!(shown(name).get("ui").is_none(), "{}", shown(name));
    }
    // A tool only for its page is not the model's: not registered, listed as hidden with
    // its UI, not callable.
    assert!(
        !tools.iter().any(|t| t["name"] == "mcp__fx__clock_refresh"),
        "{listed}"
    );
    let hidden = listed["hidden"].as_array().unwrap();
    assert_eq!(hidden.len(), 1, "{listed}");
    assert_eq!(hidden[0]["name"], "mcp__fx__clock_refresh");
    assert_eq!(hidden[0]["ui"]["visibility"], serde_json::json!(["app"]));
    assert_eq!(api.status_of("fx")["hiddenTools"], 1);
    let reply = api.post(
        "/v1/mcp/call",
        serde_json::json!({"name": "mcp__fx__clock_refresh", "arguments": {}, "mode": "auto"}),
    );
    assert_eq!(reply.status, 404, "{reply:?}");
    let found = api.get("/v1/mcp/tools/search?q=clock");
    let first = &found["tools"][0];
    assert_eq!(
        first["ui"]["resourceUri"], "ui://fixture/clock.html",
        "{found}"
    );

    let page = api.get("/v1/mcp/ui?name=fx&uri=ui%3A%2F%2Ffixture%2Fbig.html");
    assert_eq!(page["uri"], "ui://fixture/big.html");
    assert_eq!(page["mimeType"], UI_MIME_TYPE);
    assert_big_page(page["html"].as_str().unwrap());
    let page = api.get("/v1/mcp/ui?name=fx&uri=ui://fixture/clock.html");
    assert_eq!(
        page["ui"]["csp"]["connectDomains"],
        serde_json::json!(["https://api.example.com"])
    );
    assert_eq!(
        page["ui"]["permissions"],
        serde_json::json!({"clipboardWrite": {}})
    );
    // What the model sees of the same resource is cut at its cap.
    let for_model = api.get("/v1/mcp/resource?name=fx&uri=ui://fixture/big.html");
    assert_eq!(for_model["totalBytes"], 6 << 20);

    for (target, status, says) in [
        (
            "/v1/mcp/ui?name=fx&uri=ui://fixture/huge.html",
            502,
            "more than the 8388608",
        ),
        (
            "/v1/mcp/ui?name=fx&uri=fixture://readme",
            400,
            "GET /v1/mcp/resource",
        ),
        ("/v1/mcp/ui?name=fx", 400, "?uri="),
        (
            "/v1/mcp/ui?name=nope&uri=ui://fixture/clock.html",
            404,
            "nope",
        ),
    ] {
        let reply = api.send("GET", target, None);
        assert_eq!(reply.status, status, "{target}: {reply:?}");
        assert!(reply.error().contains(says), "{target}: {}", reply.error());
    }
}

#[test]
fn a_daemon_declares_the_extension_only_when_its_config_says_its_callers_render() {
    let daemon = apps_daemon(None);
    let tools = daemon.api.get("/v1/mcp/tools");
    let tools = tools["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "mcp__fx__clock"));
    assert!(tools.iter().all(|t| t.get("ui").is_none()), "{tools:?}");
    drop(daemon);
    let daemon = apps_daemon(Some(serde_json::json!(false)));
    let tools = daemon.api.get("/v1/mcp/tools");
    assert!(!tools.to_string().contains("resourceUri"), "{tools}");
    drop(daemon);

    let dir = tempfile::tempdir().unwrap();
    let config = serde_json::json!({"render_ui": "yes", "servers": {}});
    std::fs::write(dir.path().join("mcp.json"), config.to_string()).unwrap();
    let output = common::daemon::serve_command(dir.path(), &[])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"render_ui\" must be true or false"),
        "{stderr}"
    );
}

/// The ext-apps example server as a config entry (stdio), if installed.
fn example_entry() -> Option<serde_json::Value> {
    let program = installed("node_modules/.bin/mcp-server-basic-vanillajs")?;
    let program = program.canonicalize().unwrap().display().to_string();
    Some(serde_json::json!({"command": "node", "args": [program, "--stdio"]}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_marks_the_example_servers_tool_with_its_page() {
    use agenvoy_mcp::host::{Config, Control, Manager, ManagerOptions};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let Some(entry) = example_entry() else {
        return;
    };
    agenvoy_mcp::unstable::become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let config = serde_json::json!({"servers": {"basic": entry}});
    std::fs::write(&path, config.to_string()).unwrap();
    // As `agenvoy-mcp tui` runs: the panel renders no page and declares nothing; this
    // server names its page all the same.
    let options = ManagerOptions::default().with_allowlist_path(dir.path().join("allow_tool"));
    let manager = Manager::start(Config::load(&path).unwrap(), options);
    manager.register_all();
    let mut panel = agenvoy_mcp::tui::Panel::new(Control::new(manager, path)).open_browser(false);
    assert!(panel.settle(std::time::Duration::from_secs(60)).await);
    for key in [KeyCode::Enter, KeyCode::Char('t')] {
        panel.handle_key(KeyEvent::new(key, KeyModifiers::NONE));
    }
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 24)).unwrap();
    panel.tick();
    terminal
        .draw(|frame| panel.draw(frame, frame.area()))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let screen: String = (0..buffer.area.height)
        .map(|y| {
            let row: String = (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect();
            row + "\n"
        })
        .collect();
    let row = screen
        .lines()
        .find(|l| l.contains("mcp__basic__get-time"))
        .unwrap_or_else(|| panic!("no get-time row:\n{screen}"));
    assert!(
        row.contains("mcp__basic__get-time [ui ui://get-time/mcp-app.html] Returns the current"),
        "{screen}"
    );
    assert!(screen.contains("[ui URI]: its MCP"), "{screen}");
    panel.control().close().await;
}

#[test]
fn a_daemon_serves_the_example_servers_page_whole() {
    let Some(entry) = example_entry() else {
        return;
    };
    let config = serde_json::json!({"render_ui": true, "servers": {"basic": entry}});
    let daemon = common::daemon::Daemon::start(Some(config));
    let tools = daemon.api.get("/v1/mcp/tools");
    assert_eq!(
        tools["tools"][0]["ui"],
        serde_json::json!({"resourceUri": "ui://get-time/mcp-app.html", "visibility": ["model", "app"]}),
        "{tools}"
    );
    let page = daemon
        .api
        .get("/v1/mcp/ui?name=basic&uri=ui://get-time/mcp-app.html");
    let program = installed("node_modules/.bin/mcp-server-basic-vanillajs").unwrap();
    let on_disk = program
        .canonicalize()
        .unwrap()
        .with_file_name("mcp-app.html");
    assert_eq!(page["html"], std::fs::read_to_string(on_disk).unwrap());
    assert_eq!(page["mimeType"], UI_MIME_TYPE);
}
