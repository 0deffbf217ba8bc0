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
