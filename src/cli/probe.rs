//! `agenvoy-mcp probe`: connect one server with no config (a URL, or a command after `--`),
//! print what it is, optionally call one tool, read one resource, get one prompt or complete
//! one argument.
//!
//! What it prints (text, the members of `--json`, the lines on stderr) and its exit codes
//! are documented for users in docs/PROBE.md; `tests/probe.rs` holds that page to this
//! code. On failure nothing goes to stdout and one line on stderr names the step that
//! failed; a closed stdout ends it as [`super::output`] says.

use agenvoy_mcp::safe_text::{escape_controls, escape_controls_keep_lines};
use agenvoy_mcp::unstable::transport::{self, HttpTransport, StdioTransport, Transport};
use agenvoy_mcp::{
    Client, ClientOptions, Completion, CompletionRef, Error, Handlers, ListKeeping, LogLevel,
    Progress, Prompt, PromptContents, RequestOptions, Resource, ResourceOutput, ResourceTemplate,
    Root, ServerNotification, ServerNotifications, Tool, ToolOutput, UiResource,
};
use agenvoy_mcp::{
    ElicitationAnswer, ElicitationKind, ElicitationRequest, SamplingAnswer, SamplingRequest,
};
use agenvoy_mcp::{HttpConfig, Proxy, SKILLS_EXTENSION, Skill, SkillFileContent, StdioConfig};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;

/// What `probe` was asked to do.
pub struct ProbeArgs {
    /// Print JSON instead of text.
    pub json: bool,
    /// The tool to call, if any.
    pub call: Option<String>,
    /// The resource to read, if any.
    pub read: Option<String>,
    /// The prompt to get, if any.
    pub prompt: Option<String>,
    /// The skill to load (a name or `SKILL.md` URI, or a file's URI), if any.
    pub skill: Option<String>,
    /// What to complete: the reference (`prompt/NAME` or `resource/URI_TEMPLATE`) and
    /// `ARG[=VALUE]`.
    pub complete: Option<Vec<String>>,
    /// The log level to set, if any.
    pub log_level: Option<String>,
    /// The arguments of the call or the prompt, or the completion's context, as JSON text.
    pub args: Option<String>,
    /// How to answer elicitations: `accept=JSON`, `accept`, `decline` or `cancel`.
    pub elicit: Option<String>,
    /// The text to answer sampling requests with.
    pub sample: Option<String>,
    /// Folders to offer as roots.
    pub roots: Vec<std::path::PathBuf>,
    /// Declare the MCP Apps extension (render its pages); `--read` of a `ui://` URI then
    /// reads the page whole.
    pub ui: bool,
    /// The server URL (HTTP), if given instead of a command.
    pub url: Option<String>,
    /// The server command and its arguments.
    pub command: Vec<String>,
    /// Pass the whole environment to the command (else the small default set).
    pub inherit_env: bool,
    /// Timeout of each request.
    pub timeout: std::time::Duration,
    /// The HTTP server's proxy: a URL, or `none` (default: the environment's).
    pub proxy: Option<String>,
}

fn step_failed(step: &str, error: impl std::fmt::Display) -> ExitCode {
    eprintln!(
        "probe failed at {step}: {}",
        escape_controls(&error.to_string())
    );
    ExitCode::from(1)
}

fn step_of(error: &Error) -> String {
    match error.kind() {
        agenvoy_mcp::ErrorKind::Spawn(_) => "start".into(),
        _ => error.method().unwrap_or("initialize").to_string(),
    }
}

/// Runs the probe.
pub async fn run(args: ProbeArgs) -> ExitCode {
    let arguments: Value = match args.args.as_deref().map(serde_json::from_str).transpose() {
        Ok(v) => v.unwrap_or_else(|| json!({})),
        Err(e) => return step_failed("arguments", format!("--args is not valid JSON: {e}")),
    };
    let log_level = match args
        .log_level
        .as_deref()
        .map(str::parse::<LogLevel>)
        .transpose()
    {
        Ok(level) => level,
        Err(why) => return step_failed("arguments", format!("--log-level: {why}")),
    };
    let completing = match args.complete.as_deref().map(completion_request).transpose() {
        Ok(c) => c,
        Err(why) => return step_failed("arguments", format!("--complete: {why}")),
    };
    let handlers = match handlers(&args) {
        Ok(h) => h,
        Err(why) => return step_failed("arguments", why),
    };
    let options = ClientOptions::default()
        .with_timeout(args.timeout)
        .with_handlers(handlers);
    // Taken before the server starts: its process group does not get the terminal's Ctrl-C.
    let mut signals = match super::Signals::listen() {
        Ok(s) => s,
        Err(e) => return step_failed("start", format!("cannot handle signals: {e}")),
    };
    let limits = transport::limits(&options);
    // What an HTTP server's exchanges go through, for the report.
    let mut route = None;
    let (name, opened) = match (&args.url, args.command.split_first()) {
        (Some(url), None) => {
            let name = url_name(url);
            let proxy = match args.proxy.as_deref() {
                None => Proxy::Environment,
                Some("none") => Proxy::Direct,
                Some(url) => Proxy::Url(url.to_string()),
            };
            route = Some(proxy.route_for(url));
            let config = HttpConfig::new(url)
                .with_header_timeout(args.timeout)
                .with_proxy(proxy);
            let opened = HttpTransport::new(&name, &config, limits)
                .map(|(t, inbound)| (Arc::new(t) as Arc<dyn Transport>, inbound));
            (name, opened)
        }
        (None, Some((program, rest))) => {
            let name = std::path::Path::new(program)
                .file_name()
                .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned());
            let config = StdioConfig::new(program)
                .args(rest)
                .with_inherit_env(args.inherit_env);
            let opened = StdioTransport::spawn(&name, &config, limits)
                .map(|(t, inbound)| (Arc::new(t) as Arc<dyn Transport>, inbound));
            (name, opened)
        }
        _ => {
            return step_failed(
                "arguments",
                "give either a server URL, or the server command after --",
            );
        }
    };
    let (transport, inbound) = match opened {
        Ok(opened) => opened,
        Err(e) => return step_failed(&step_of(&e), e),
    };
    let probed = async {
        let client = match transport::connect(&name, transport.clone(), inbound, options).await {
            Ok(c) => c,
            Err(e) => return step_failed(&step_of(&e), e),
        };
        let printer = log_level
            .is_some()
            .then(|| tokio::spawn(print_logs(client.server_notifications())));
        let code = probe(
            &client,
            &args,
            arguments,
            log_level,
            completing,
            route.as_deref(),
        )
        .await;
        client.close().await;
        drop(client);
        // The client gone, the printer reads what is left and ends.
        if let Some(printer) = printer {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), printer).await;
        }
        code
    };
    tokio::select! {
        code = probed => code,
        code = signals.next() => {
            transport.close().await;
            code
        }
    }
}

/// The handlers `--elicit`, `--sample` and `--root` ask for; each request shown on stderr,
/// escaped.
fn handlers(args: &ProbeArgs) -> Result<Handlers, String> {
    // Skills are listed (never read ahead) wherever the server serves them.
    let mut handlers = Handlers::default().with_skills(true);
    if let Some(given) = &args.elicit {
        let answer = elicit_answer(given)?;
        handlers = handlers.with_elicitation(move |request: ElicitationRequest| {
            let mut answer = answer.clone();
            match &request.kind {
                ElicitationKind::Form(form) => {
                    let fields: Vec<String> = form
                        .fields
                        .iter()
                        .map(|f| format!("{}{}", f.name, if f.required { "*" } else { "" }))
                        .collect();
                    eprintln!(
                        "elicitation (form): {} [fields: {}]",
                        escape_controls(&form.message),
                        escape_controls(&fields.join(", "))
                    );
                }
                ElicitationKind::Url(url) => {
                    eprintln!(
                        "elicitation (url, not opened): {} <{}> at {}",
                        escape_controls(&url.message),
                        escape_controls(&url.url),
                        escape_controls(&url.origin)
                    );
                    // Accepting a URL carries no values.
                    if let ElicitationAnswer::Accept(values) = &mut answer {
                        values.clear();
                    }
                }
                other => eprintln!("elicitation of a kind this probe does not know: {other:?}"),
            }
            if let Err(e) = request.check(&answer) {
                eprintln!(
                    "elicitation: not answered: {}",
                    escape_controls(&e.to_string())
                );
            }
            async move { Ok(answer) }
        });
    }
    if let Some(text) = args.sample.clone() {
        handlers = handlers.with_sampling(move |request: SamplingRequest| {
            let last = request
                .messages
                .last()
                .map(|m| m.text())
                .unwrap_or_default();
            eprintln!("sampling: {}", escape_controls(&last));
            let answer = SamplingAnswer::text(&text, "agenvoy-probe");
            async move { Ok(answer) }
        });
    }
    if !args.roots.is_empty() {
        let roots = args
            .roots
            .iter()
            .map(|path| root_of(path))
            .collect::<Result<Vec<_>, _>>()?;
        handlers.roots = Some(roots);
    }
    if args.ui {
        handlers = handlers.with_ui([agenvoy_mcp::UI_MIME_TYPE]);
    }
    Ok(handlers)
}

/// Reads `--elicit`: `accept=JSON`, `accept`, `decline` or `cancel`.
fn elicit_answer(given: &str) -> Result<ElicitationAnswer, String> {
    match given.split_once('=') {
        None if given == "accept" => Ok(ElicitationAnswer::Accept(Default::default())),
        None if given == "decline" => Ok(ElicitationAnswer::Decline),
        None if given == "cancel" => Ok(ElicitationAnswer::Cancel),
        Some(("accept", text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(values)) => Ok(ElicitationAnswer::Accept(values)),
            Ok(_) => Err("--elicit accept=JSON takes a JSON object".into()),
            Err(e) => Err(format!("--elicit accept=JSON: not JSON: {e}")),
        },
        _ => Err(format!(
            "--elicit {given:?}: give accept=JSON, accept, decline or cancel"
        )),
    }
}

/// A folder as a root: its absolute path as a `file://` URI (bytes outside the unreserved
/// set and `/` percent-encoded), named by its last component.
fn root_of(path: &std::path::Path) -> Result<Root, String> {
    let absolute =
        std::path::absolute(path).map_err(|e| format!("--root {}: {e}", path.display()))?;
    // The path's bytes as they are on Unix (a name need not be UTF-8); `\\` is a separator
    // only on Windows.
    #[cfg(unix)]
    let text = std::os::unix::ffi::OsStrExt::as_bytes(absolute.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let text = absolute.to_string_lossy().replace('\\', "/").into_bytes();
    let mut uri = String::from("file://");
    if !text.starts_with(b"/") {
        uri.push('/');
    }
    for byte in text {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    let root = Root::new(uri);
    Ok(match absolute.file_name() {
        Some(name) => root.with_name(name.to_string_lossy()),
        None => root,
    })
}

/// What `--complete` asks: the reference, the argument and what is typed so far.
type Completing = (CompletionRef, String, String);

/// Reads `--complete REF ARG[=VALUE]`.
fn completion_request(given: &[String]) -> Result<Completing, String> {
    let [reference, argument] = given else {
        return Err("give REF and ARG[=VALUE]".into());
    };
    let reference = match reference.split_once('/') {
        Some(("prompt", name)) if !name.is_empty() => CompletionRef::Prompt(name.into()),
        Some(("resource", uri)) if !uri.is_empty() => CompletionRef::ResourceTemplate(uri.into()),
        _ => {
            return Err(format!(
                "{reference:?} is neither prompt/NAME nor resource/URI_TEMPLATE"
            ));
        }
    };
    let (name, value) = argument.split_once('=').unwrap_or((argument, ""));
    Ok((reference, name.to_string(), value.to_string()))
}

/// Prints each log message of the server to stderr, escaped, until the client is gone.
async fn print_logs(mut notifications: ServerNotifications) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match notifications.recv().await {
            Ok(ServerNotification::Log(log)) => {
                let data = match &log.data {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let logger = log
                    .logger
                    .as_deref()
                    .map(|l| format!(" [{}]", escape_controls(l)));
                eprintln!(
                    "log {}{}: {}",
                    escape_controls(&log.level_name),
                    logger.unwrap_or_default(),
                    escape_controls(&data)
                );
            }
            Ok(_) => {}
            Err(RecvError::Lagged(n)) => eprintln!("log: {n} messages missed"),
            Err(RecvError::Closed) => return,
        }
    }
}

/// What the probe learned and did, for the report.
#[derive(Default)]
struct Found {
    tools: Vec<Tool>,
    /// Resources and templates, when the server declares `resources`.
    resources: Option<(Vec<Resource>, Vec<ResourceTemplate>)>,
    /// Prompts, when the server declares `prompts`.
    prompts: Option<Vec<Prompt>>,
    /// Skills, when the server declares the skills extension.
    skills: Option<Vec<Skill>>,
    call: Option<(String, ToolOutput)>,
    skill: Option<(Skill, SkillFileContent)>,
    read: Option<(String, ResourceOutput)>,
    /// A `ui://` page read whole (`--ui --read ui://...`).
    page: Option<UiResource>,
    prompt: Option<(String, PromptContents)>,
    completion: Option<(Completing, Completion)>,
}

async fn probe(
    client: &Client,
    args: &ProbeArgs,
    arguments: Value,
    log_level: Option<LogLevel>,
    completing: Option<Completing>,
    route: Option<&str>,
) -> ExitCode {
    let details = client.details();
    if let Some(level) = log_level
        && let Err(e) = client.set_log_level(level).await
    {
        return step_failed("logging/setLevel", e);
    }
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) if !details.has_capability("tools") => {
            tracing::debug!("tools/list failed on a server without the tools capability: {e}");
            Vec::new()
        }
        Err(e) => return step_failed("tools/list", e),
    };
    let mut found = Found {
        tools,
        ..Found::default()
    };
    if details.has_capability("resources") {
        let resources = match client.list_resources().await {
            Ok(r) => r,
            Err(e) => return step_failed("resources/list", e),
        };
        let templates = match client.list_resource_templates().await {
            Ok(t) => t,
            Err(e) if e.rpc_error().is_some_and(|r| r.code == -32601) => Vec::new(),
            Err(e) => return step_failed("resources/templates/list", e),
        };
        found.resources = Some((resources, templates));
    }
    if details.has_capability("prompts") {
        found.prompts = match client.list_prompts().await {
            Ok(p) => Some(p),
            Err(e) => return step_failed("prompts/list", e),
        };
    }
    if details
        .capabilities
        .get("extensions")
        .and_then(|e| e.get(SKILLS_EXTENSION))
        .is_some()
    {
        found.skills = match client.list_skills().await {
            Ok(s) => Some(s),
            Err(e) => return step_failed("skills/list", e),
        };
    }
    if let Some(key) = &args.skill {
        let skills = found.skills.as_deref().unwrap_or_default();
        let Some((skill, uri)) = skill_file(skills, key) else {
            let why = format!(
                "the server lists no skill or skill file {:?}",
                escape_controls(key)
            );
            return step_failed("skills/list", why);
        };
        match client.read_skill_file(&skill, &uri).await {
            Ok(file) => found.skill = Some((skill, file)),
            Err(e) => return step_failed("resources/read", e),
        }
    }
    if let Some(tool) = &args.call {
        // Progress (a task's too) goes to stderr, escaped.
        let options = RequestOptions::default().with_progress(|p: Progress| {
            eprintln!("progress {}", super::output::progress(&p));
        });
        match client
            .call_tool_with(tool, arguments.clone(), options)
            .await
        {
            Ok(output) => found.call = Some((tool.clone(), output)),
            Err(e) => return step_failed("tools/call", e),
        }
    }
    if let Some(uri) = args
        .read
        .as_ref()
        .filter(|u| args.ui && u.starts_with("ui://"))
    {
        match client.read_ui_resource(uri).await {
            Ok(page) => found.page = Some(page),
            Err(e) => return step_failed("resources/read", e),
        }
    } else if let Some(uri) = &args.read {
        match client.read_resource(uri).await {
            Ok(output) => found.read = Some((uri.clone(), output)),
            Err(e) => return step_failed("resources/read", e),
        }
    }
    if let Some(name) = &args.prompt {
        let prompt_args = if args.args.is_some() {
            arguments.clone()
        } else {
            Value::Null
        };
        match client.get_prompt(name, prompt_args).await {
            Ok(contents) => found.prompt = Some((name.clone(), contents)),
            Err(e) => return step_failed("prompts/get", e),
        }
    }
    if let Some(completing) = completing {
        let context: Vec<(String, String)> = arguments
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                )
            })
            .collect();
        let (reference, argument, value) = &completing;
        match client.complete(reference, argument, value, &context).await {
            Ok(completion) => found.completion = Some((completing, completion)),
            Err(e) => return step_failed("completion/complete", e),
        }
    }
    let code = match &found.call {
        Some((_, output)) if output.is_error => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    };
    let written = report(client, args.json, &found, route).map(|()| code);
    super::output::exit_code("probe", written)
}

/// The skill of `skills` that `key` names (its name or `SKILL.md` URI: its `SKILL.md`; a
/// listed file's URI: that file), and the URI to read.
fn skill_file(skills: &[Skill], key: &str) -> Option<(Skill, String)> {
    if let Some(skill) = skills.iter().find(|s| s.uri == key || s.name() == key) {
        return Some((skill.clone(), skill.uri.clone()));
    }
    let skill = skills.iter().find(|s| s.file(key).is_some())?;
    Some((skill.clone(), key.to_string()))
}

/// The first line of a description, escaped.
fn first_line(description: Option<&str>) -> String {
    let line = description.unwrap_or("").lines().next().unwrap_or("");
    escape_controls(line).into_owned()
}

/// Prints rows of columns, indented, under a heading.
fn table(heading: &str, rows: &[Vec<String>]) -> std::io::Result<()> {
    out!("{heading} ({}):", rows.len())?;
    for line in super::output::columns(rows) {
        out!("  {line}")?;
    }
    Ok(())
}

/// How an on-demand start (`"start": "on_demand"`) would keep this server's lists between
/// launches, as its tool list's caching hints say: `--json`'s `catalog`.
fn catalog_json(keeping: ListKeeping) -> Value {
    match keeping {
        ListKeeping::For(ttl) => json!({"kept": true, "ttlMs": ttl.as_millis() as u64}),
        ListKeeping::PrivateToLogin => json!({"kept": false, "ttlMs": null}),
        _ => json!({"kept": true, "ttlMs": null}),
    }
}

/// [`catalog_json`] as a line of text.
fn catalog_text(keeping: ListKeeping) -> String {
    match keeping {
        ListKeeping::For(ttl) => format!(
            "kept on demand for {} s (its ttlMs), then listed again",
            ttl.as_secs_f64()
        ),
        ListKeeping::PrivateToLogin => {
            "not kept on demand: the list is private to the login it was read with".to_string()
        }
        _ => "kept on demand until its entry changes or it is reconnected".to_string(),
    }
}

/// Prints what the server is (and the call's output), as text or (`json`) one JSON
/// document; stops at the first failed write.
/// `route`: what an HTTP server's exchanges go through (`direct` or the proxy).
fn report(client: &Client, json: bool, found: &Found, route: Option<&str>) -> std::io::Result<()> {
    let details = client.details();
    if json {
        let mut report = json!({
            "server": client.name(),
            "transport": client.transport_kind(),
            "proxy": route,
            "era": details.era.name(),
            "protocolVersion": details.protocol_version,
            "serverInfo": details.server_info,
            "capabilities": details.capabilities,
            "instructions": details.instructions,
            "tools": found.tools.iter().map(tool_json).collect::<Vec<_>>(),
            "catalog": catalog_json(client.tool_list_keeping()),
        });
        if let Some((resources, templates)) = &found.resources {
            report["resources"] = json!(resources);
            report["resourceTemplates"] = json!(templates);
        }
        if let Some(prompts) = &found.prompts {
            report["prompts"] = json!(prompts);
        }
        if let Some(skills) = &found.skills {
            report["skills"] = json!(skills);
        }
        if let Some((skill, file)) = &found.skill {
            report["skill"] = json!({"name": skill.name(), "uri": file.uri,
                "mimeType": file.mime_type, "verified": file.verified,
                "text": String::from_utf8_lossy(&file.bytes)});
        }
        if let Some((tool, output)) = &found.call {
            report["call"] = json!({"tool": tool, "text": output.text,
                                    "isError": output.is_error, "totalBytes": output.total_bytes});
        }
        if let Some((uri, output)) = &found.read {
            report["read"] =
                json!({"uri": uri, "text": output.text, "totalBytes": output.total_bytes});
        }
        if let Some(page) = &found.page {
            report["page"] = json!(page);
        }
        if let Some((name, contents)) = &found.prompt {
            let messages: Vec<Value> = contents
                .messages
                .iter()
                .map(|m| json!({"role": m.role, "text": m.text()}))
                .collect();
            report["prompt"] = json!({"name": name, "description": contents.description,
                                      "messages": messages});
        }
        if let Some(((reference, argument, _), completion)) = &found.completion {
            report["completion"] = json!({"ref": reference.to_json(), "argument": argument,
                "values": completion.values, "total": completion.total,
                "hasMore": completion.has_more});
        }
        super::output::json(&report)?;
    } else {
        let info = &details.server_info;
        let field = |k: &str| {
            let text = info.get(k).and_then(Value::as_str).unwrap_or("?");
            escape_controls(text).into_owned()
        };
        out!("server:       {} {}", field("name"), field("version"))?;
        out!("transport:    {}", client.transport_kind())?;
        if let Some(route) = route {
            out!("proxy:        {}", escape_controls(route))?;
        }
        out!("era:          {}", details.era.name())?;
        out!(
            "protocol:     {}",
            escape_controls(&details.protocol_version)
        )?;
        out!(
            "capabilities: {}",
            escape_controls(&details.capabilities.to_string())
        )?;
        match &details.instructions {
            Some(text) => out!(
                "instructions:\n{}",
                indent(&escape_controls_keep_lines(text))
            )?,
            None => out!("instructions: (none)")?,
        }
        let rows: Vec<Vec<String>> = found
            .tools
            .iter()
            .map(|tool| {
                let ui = tool.ui();
                let mut description = first_line(tool.description.as_deref());
                if let Some(ui) = &ui {
                    let uri = escape_controls(&ui.resource_uri);
                    let only = if ui.visible_to_model() {
                        ""
                    } else {
                        ", app only"
                    };
                    description = format!("[ui {uri}{only}] {description}");
                }
                vec![escape_controls(&tool.name).into_owned(), description]
            })
            .collect();
        table("tools", &rows)?;
        out!("catalog:      {}", catalog_text(client.tool_list_keeping()))?;
        if let Some((resources, templates)) = &found.resources {
            let rows: Vec<Vec<String>> = resources
                .iter()
                .map(|r| {
                    vec![
                        escape_controls(&r.uri).into_owned(),
                        escape_controls(&r.name).into_owned(),
                        first_line(r.description.as_deref()),
                    ]
                })
                .collect();
            table("resources", &rows)?;
            let rows: Vec<Vec<String>> = templates
                .iter()
                .map(|t| {
                    vec![
                        escape_controls(&t.uri_template).into_owned(),
                        escape_controls(&t.name).into_owned(),
                        first_line(t.description.as_deref()),
                    ]
                })
                .collect();
            table("resource templates", &rows)?;
        }
        if let Some(prompts) = &found.prompts {
            let rows: Vec<Vec<String>> = prompts
                .iter()
                .map(|p| {
                    let arguments: Vec<String> = p
                        .arguments
                        .iter()
                        .map(|a| format!("{}{}", a.name, if a.required { "*" } else { "" }))
                        .collect();
                    vec![
                        escape_controls(&p.name).into_owned(),
                        escape_controls(&format!("({})", arguments.join(", "))).into_owned(),
                        first_line(p.description.as_deref()),
                    ]
                })
                .collect();
            table("prompts", &rows)?;
        }
        if let Some(skills) = &found.skills {
            let rows: Vec<Vec<String>> = skills
                .iter()
                .map(|s| {
                    let files = s.files.as_ref().map_or("dynamic".into(), |f| {
                        format!("{} file{}", f.len(), if f.len() == 1 { "" } else { "s" })
                    });
                    vec![
                        escape_controls(s.name()).into_owned(),
                        escape_controls(&s.uri).into_owned(),
                        files,
                        first_line(Some(s.description())),
                    ]
                })
                .collect();
            table("skills", &rows)?;
        }
        if let Some((skill, file)) = &found.skill {
            let checked = if file.verified {
                "verified"
            } else {
                "dynamic: no digest to check"
            };
            out!(
                "skill {} ({}, {checked}):",
                escape_controls(skill.name()),
                escape_controls(&file.uri)
            )?;
            out!(
                "{}",
                escape_controls_keep_lines(&String::from_utf8_lossy(&file.bytes))
            )?;
        }
        if let Some((tool, output)) = &found.call {
            let flag = if output.is_error { " (tool error)" } else { "" };
            out!("call {}{flag}:", escape_controls(tool))?;
            out!("{}", escape_controls_keep_lines(&output.text))?;
        }
        if let Some((uri, output)) = &found.read {
            out!("read {}:", escape_controls(uri))?;
            out!("{}", escape_controls_keep_lines(&output.text))?;
        }
        if let Some(page) = &found.page {
            print_page(page)?;
        }
        if let Some((name, contents)) = &found.prompt {
            out!("prompt {}:", escape_controls(name))?;
            if let Some(description) = &contents.description {
                out!("  {}", first_line(Some(description)))?;
            }
            for message in &contents.messages {
                out!("[{}]", escape_controls(&message.role))?;
                match message.text() {
                    Some(text) => out!("{}", escape_controls_keep_lines(&text))?,
                    None => out!("(not a valid content block)")?,
                }
            }
        }
        if let Some(((_, argument, value), completion)) = &found.completion {
            let more = match (completion.total, completion.has_more) {
                (Some(total), true) => format!(", {total} in all, more"),
                (Some(total), false) => format!(", {total} in all"),
                (None, true) => ", more".into(),
                (None, false) => String::new(),
            };
            out!(
                "complete {}={} ({} values{more}):",
                escape_controls(argument),
                escape_controls(value),
                completion.values.len()
            )?;
            for v in &completion.values {
                out!("  {}", escape_controls(v))?;
            }
        }
    }
    Ok(())
}

/// A tool as `--json` shows it: as the server sent it, plus `ui` when it names a valid page
/// ([`Tool::ui`]).
fn tool_json(tool: &Tool) -> Value {
    let mut shown = json!(tool);
    if let (Some(ui), Some(members)) = (tool.ui(), shown.as_object_mut()) {
        members.insert("ui".into(), json!(ui));
    }
    shown
}

/// A `ui://` page read whole: a heading with its size and MIME type, what it asks of the
/// host's sandbox, then its HTML (escaped).
fn print_page(page: &UiResource) -> std::io::Result<()> {
    let mime = page.mime_type.as_deref().unwrap_or("no MIME type");
    out!(
        "page {} ({} bytes, {}):",
        escape_controls(&page.uri),
        page.html.len(),
        escape_controls(mime)
    )?;
    let csp = &page.ui.csp;
    for (directive, origins) in [
        ("connect", &csp.connect_domains),
        ("resource", &csp.resource_domains),
        ("frame", &csp.frame_domains),
        ("base-uri", &csp.base_uri_domains),
    ] {
        if !origins.is_empty() {
            out!("  csp {directive}: {}", origins.join(" "))?;
        }
    }
    if !page.ui.permissions.is_empty() {
        out!("  permissions: {}", page.ui.permissions.join(", "))?;
    }
    out!("{}", escape_controls_keep_lines(&page.html))
}

/// A short name for an HTTP server in logs and errors: its host and port (never the
/// userinfo, which may hold a password).
fn url_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority
        .rsplit('@')
        .next()
        .unwrap_or(authority)
        .to_string()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
