//! What the fixture server offers besides tools: resources, a resource template, prompts,
//! completions and logging, in both eras.
//!
//! - Resources: `fixture://readme` (text), `fixture://logo` (a PNG blob of 8 bytes), paged by
//!   the server's page size; in `endless-pages` mode `resources/list` pages without end.
//!   `resources/subscribe` answers, then sends `notifications/resources/updated` for the URI;
//!   `subscriptions/listen` (2026-07-28) sends `notifications/subscriptions/acknowledged`,
//!   then that update for each URI of its `resourceSubscriptions`, and is never answered.
//! - Template: `fixture://big/{bytes}`: that many bytes of `a`. A read of `fixture://hang` is
//!   never answered. A read that asks for progress gets one notification of it first.
//! - Prompts: `greet` (arguments `name`, required, and `style`: a text message and an image)
//!   and `summarize` (an embedded text resource).
//! - Completions: `greet`'s `style` (casual, formal, friendly) and `name` (Ada, Alan, Grace;
//!   with `Dr. ` before each match when the context's `style` is `formal`), and the template's
//!   `bytes` (1024, 1048576, 2097152), each filtered by the value typed so far.
//! - Logging: `logging/setLevel` answers, then sends a `warning` and a `debug` message, each
//!   when the level lets it through; in `modern` mode (the 2026-07-28 revision) a request
//!   whose `_meta` names a log level gets an `info` message `handling <method>` first.
//!
//! - Tasks (initialize era, `tasks` mode): `research` must be called as a task, `survey` may be (both
//!   take `seconds`, `steps`, `poll_ms`, the `pollInterval` to suggest, `notify`, to send
//!   `notifications/tasks/status` at its end, and `fail`, to end with `isError`); they
//!   report progress under the call's token, and end `completed` with `researched in <n>
//!   steps`. `tasks/get`, `tasks/result` (waits for the end), `tasks/cancel` (recorded
//!   with the `cancellations` tool's list as `{"taskId": ...}`) and `tasks/list` (paged).
//!
//! - Tasks (2026-07-28, `modern` mode): the `io.modelcontextprotocol/tasks` extension,
//!   declared in `server/discover`. For a call that declares the extension too, `research`
//!   always becomes a task and `survey` when it runs a second or more; without it `research`
//!   is refused (-32021) and `survey` runs at once. The task tells its progress in its
//!   `statusMessage` (`step <i> of <n>`), suggests `pollIntervalMs`, and inlines its `result`
//!   when completed. With `ask`, it first goes `input_required` with one elicitation in its
//!   `inputRequests` (key `confirm`), waits for `tasks/update` to answer it, and ends with
//!   `researched in <n> steps, answered <content>`. `tasks/get`, `tasks/update`,
//!   `tasks/cancel` (an empty acknowledgement; recorded as above) need the extension in the
//!   request's capabilities (-32021); `tasks/result` and `tasks/list` are not found.
//!
//! In `hang` mode `resources/read` and `prompts/get` are never answered. In `hostile` mode
//! every name, description and text carries [`HOSTILE`].

use super::fixture_server::{HOSTILE, Mode, Output, Server, repeat_units, reply, send};
use agenvoy_mcp::wire::jsonrpc::{self, ErrorObject, Id, Message, Notification};
use serde_json::{Value, json};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One task of the fixture.
struct FixtureTask {
    id: String,
    status: &'static str,
    poll_ms: u64,
    result: Option<Result<Value, ErrorObject>>,
    /// A task of the 2026-07-28 extension: its wire names, its outcome inlined.
    extension: bool,
    status_message: Option<String>,
    /// The input requests outstanding (extension), and the answers `tasks/update` brought.
    input_requests: Option<Value>,
    responses: serde_json::Map<String, Value>,
}

impl FixtureTask {
    fn new(id: String, poll_ms: u64, extension: bool) -> FixtureTask {
        FixtureTask {
            id,
            status: "working",
            poll_ms,
            result: None,
            extension,
            status_message: None,
            input_requests: None,
            responses: serde_json::Map::new(),
        }
    }

    fn to_json(&self) -> Value {
        if !self.extension {
            return json!({"taskId": self.id, "status": self.status, "createdAt": "2025-11-25T10:30:00Z",
                   "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": self.poll_ms});
        }
        let mut task = json!({"taskId": self.id, "status": self.status,
            "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:30:00Z",
            "ttlMs": 60000, "pollIntervalMs": self.poll_ms});
        if let Some(message) = &self.status_message {
            task["statusMessage"] = json!(message);
        }
        match (self.status, &self.result, &self.input_requests) {
            ("completed", Some(Ok(result)), _) => task["result"] = result.clone(),
            ("failed", Some(Err(e)), _) => task["error"] = json!(e),
            ("input_required", _, Some(requests)) => task["inputRequests"] = requests.clone(),
            _ => {}
        }
        task
    }
}

/// The fixture's tasks, in the order they were created.
#[derive(Default)]
pub struct Tasks {
    all: Mutex<Vec<FixtureTask>>,
    changed: Condvar,
}

impl Tasks {
    /// Records a new task (of the 2026-07-28 extension when `extension`): its id and its
    /// state as the call's answer shows it.
    fn create(&self, poll_ms: u64, extension: bool) -> (String, Value) {
        let mut all = self.all.lock().unwrap();
        let task_id = format!("task-{}", all.len() + 1);
        all.push(FixtureTask::new(task_id.clone(), poll_ms, extension));
        (task_id, all.last().expect("pushed").to_json())
    }
}

/// How a fixture tool may be called as a task: `Some("required")`, `Some("optional")`.
pub fn task_support(tool: &str) -> Option<&'static str> {
    match tool {
        "research" => Some("required"),
        "survey" => Some("optional"),
        _ => None,
    }
}

/// The definitions of the tools that run as tasks.
pub fn task_tools() -> Vec<Value> {
    let schema = json!({"type": "object", "properties": {
        "seconds": {"type": "number"}, "steps": {"type": "integer"}, "poll_ms": {"type": "integer"},
        "notify": {"type": "boolean"}, "fail": {"type": "boolean"}}});
    vec![
        json!({"name": "research", "description": "Researches for a while, as a task.",
               "inputSchema": schema, "execution": {"taskSupport": "required"}}),
        json!({"name": "survey", "description": "Surveys for a while, as a task if asked.",
               "inputSchema": schema, "execution": {"taskSupport": "optional"}}),
    ]
}

/// The work of `research` and `survey`: its progress under `token`, then its result; `None`
/// when the task was cancelled meanwhile.
fn research(
    args: &Value,
    token: Option<&Value>,
    out: &dyn Output,
    cancelled: &dyn Fn() -> bool,
    status: &dyn Fn(String),
) -> Option<Result<Value, ErrorObject>> {
    let seconds = args
        .get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(0.5)
        .max(0.0);
    let steps = args
        .get("steps")
        .and_then(Value::as_u64)
        .unwrap_or(3)
        .clamp(1, 1000);
    for step in 1..=steps {
        std::thread::sleep(Duration::from_secs_f64(seconds / steps as f64));
        if cancelled() {
            return None;
        }
        status(format!("step {step} of {steps}"));
        if let Some(token) = token {
            let progress = json!({"progressToken": token, "progress": step, "total": steps,
                                  "message": format!("step {step} of {steps}")});
            send(
                out,
                Message::Notification(Notification {
                    method: "notifications/progress".into(),
                    params: Some(progress),
                }),
            );
        }
    }
    let fail = args.get("fail").and_then(Value::as_bool) == Some(true);
    Some(Ok(
        json!({"content": [{"type": "text", "text": format!("researched in {steps} steps")}],
                   "isError": fail}),
    ))
}

/// A call of `research` or `survey` (on a thread of its own): as a task when `params` has
/// `task`, else at once, or refused when the tool requires a task.
pub fn call_task_tool(server: &Server, id: Id, name: &str, params: &Value, out: &dyn Output) {
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    let token = params.pointer("/_meta/progressToken").cloned();
    if params.get("task").is_none() {
        if task_support(name) == Some("required") {
            let e = ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!("tool {name} requires task augmentation"),
            );
            return reply(out, id, Err(e));
        }
        let result = research(&args, token.as_ref(), out, &|| false, &|_| {});
        return reply(out, id, result.expect("never cancelled"));
    }
    let tasks = server.tasks();
    let poll_ms = args.get("poll_ms").and_then(Value::as_u64).unwrap_or(100);
    let (task_id, created) = tasks.create(poll_ms, false);
    reply(out, id, Ok(json!({"task": created})));
    let status = |all: &[FixtureTask]| -> &'static str {
        all.iter()
            .find(|t| t.id == task_id)
            .map_or("cancelled", |t| t.status)
    };
    let cancelled = || status(&tasks.all.lock().unwrap()) == "cancelled";
    let result = research(&args, token.as_ref(), out, &cancelled, &|_| {});
    let mut all = tasks.all.lock().unwrap();
    let Some(task) = all.iter_mut().find(|t| t.id == task_id) else {
        return;
    };
    if task.status == "cancelled" {
        return;
    }
    let failed = result
        .as_ref()
        .and_then(|r| r.as_ref().ok())
        .and_then(|r| r.get("isError"))
        == Some(&json!(true));
    task.status = if failed { "failed" } else { "completed" };
    task.result = result;
    let told = task.to_json();
    drop(all);
    tasks.changed.notify_all();
    if args.get("notify").and_then(Value::as_bool) == Some(true) {
        send(
            out,
            Message::Notification(Notification {
                method: "notifications/tasks/status".into(),
                params: Some(told),
            }),
        );
    }
}

/// Whether a request's capabilities declare the 2026-07-28 tasks extension.
fn opted_in(params: &Value) -> bool {
    params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// The error for a request that needs the tasks extension and did not declare it.
fn needs_extension(what: &str) -> ErrorObject {
    let mut e = ErrorObject::new(
        -32021,
        format!("{what} needs the {TASKS_EXTENSION} extension in the request's capabilities"),
    );
    e.data = Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}));
    e
}

/// The 2026-07-28 tasks extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A call of `research` or `survey` in `modern` mode (on a thread of its own): a task of the
/// tasks extension when the call declared it and the server so decides (see the module docs).
pub fn call_extension_task_tool(
    server: &Server,
    id: Id,
    name: &str,
    params: &Value,
    out: &dyn Output,
) {
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.5);
    let as_task = opted_in(params) && (task_support(name) == Some("required") || seconds >= 1.0);
    if !as_task {
        if task_support(name) == Some("required") {
            return reply(out, id, Err(needs_extension(&format!("tool {name}"))));
        }
        let result = research(&args, None, out, &|| false, &|_| {});
        return reply(out, id, result.expect("never cancelled"));
    }
    let tasks = server.tasks();
    let poll_ms = args.get("poll_ms").and_then(Value::as_u64).unwrap_or(100);
    let (task_id, mut created) = tasks.create(poll_ms, true);
    created["resultType"] = json!("task");
    reply(out, id, Ok(created));
    let with_task = |f: &mut dyn FnMut(&mut FixtureTask)| {
        let mut all = tasks.all.lock().unwrap();
        if let Some(t) = all.iter_mut().find(|t| t.id == task_id) {
            f(t);
        }
        drop(all);
        tasks.changed.notify_all();
    };
    let cancelled = || {
        let all = tasks.all.lock().unwrap();
        all.iter()
            .find(|t| t.id == task_id)
            .is_none_or(|t| t.status == "cancelled")
    };
    let mut answer = None;
    if args.get("ask").and_then(Value::as_bool) == Some(true) {
        let asked = json!({"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Go on with the research?",
            "requestedSchema": {"type": "object", "properties": {"go": {"type": "boolean"}}}}}});
        with_task(&mut |t| {
            t.status = "input_required";
            t.input_requests = Some(asked.clone());
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut all = tasks.all.lock().unwrap();
        loop {
            let Some(t) = all.iter_mut().find(|t| t.id == task_id) else {
                return;
            };
            if t.status == "cancelled" {
                return;
            }
            if let Some(a) = t.responses.get("confirm") {
                answer = Some(a.get("content").cloned().unwrap_or(Value::Null));
                t.status = "working";
                t.input_requests = None;
                break;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            all = tasks.changed.wait_timeout(all, left).unwrap().0;
        }
    }
    let status = |message: String| with_task(&mut |t| t.status_message = Some(message.clone()));
    let Some(mut result) = research(&args, None, out, &cancelled, &status) else {
        return;
    };
    if let (Some(answer), Ok(result)) = (answer, result.as_mut()) {
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string();
        result["content"][0]["text"] = json!(format!("{text}, answered {answer}"));
    }
    with_task(&mut |t| {
        if t.status != "cancelled" {
            t.status = if result.is_ok() {
                "completed"
            } else {
                "failed"
            };
            t.result = Some(result.clone());
        }
    });
}

/// The tasks extension's `tasks/get`, `tasks/update`, `tasks/cancel` (`modern` mode).
fn handle_extension_tasks(
    server: &Server,
    method: &str,
    params: &Value,
) -> Result<Value, ErrorObject> {
    if !opted_in(params) {
        return Err(needs_extension(method));
    }
    let tasks = server.tasks();
    let task_id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
    let mut all = tasks.all.lock().unwrap();
    let Some(task) = all.iter_mut().find(|t| t.id == task_id) else {
        return Err(ErrorObject::new(
            jsonrpc::INVALID_PARAMS,
            format!("no task {task_id:?}"),
        ));
    };
    let outcome = match method {
        "tasks/get" => task.to_json(),
        "tasks/update" => {
            if let Some(responses) = params.get("inputResponses").and_then(Value::as_object) {
                task.responses.extend(responses.clone());
            }
            json!({})
        }
        _ => {
            if !matches!(task.status, "completed" | "failed" | "cancelled") {
                task.status = "cancelled";
                task.status_message = Some("cancelled by the client".into());
                server.record_cancellation(json!({"taskId": task_id}));
            }
            json!({})
        }
    };
    drop(all);
    tasks.changed.notify_all();
    let mut outcome = outcome;
    outcome["resultType"] = json!("complete");
    Ok(outcome)
}

/// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/list`, and in `modern` mode the tasks
/// extension's `tasks/get`, `tasks/update`, `tasks/cancel`; `false` for any other method.
/// `tasks/result` waits on the calling thread: call it on a thread of its own.
pub fn handle_tasks(
    server: &Server,
    method: &str,
    id: Id,
    params: &Value,
    out: &dyn Output,
) -> bool {
    if *server.mode() == Mode::Modern {
        let outcome = match method {
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                handle_extension_tasks(server, method, params)
            }
            _ => return false,
        };
        reply(out, id, outcome);
        return true;
    }
    let tasks = server.tasks();
    let task_id = params
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let unknown = || ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("no task {task_id:?}"));
    let mut all = tasks.all.lock().unwrap();
    let outcome = match method {
        "tasks/list" => {
            let listed = all.iter().map(FixtureTask::to_json).collect();
            drop(all);
            paged(server, "tasks", listed, params)
        }
        "tasks/get" => all
            .iter()
            .find(|t| t.id == task_id)
            .map(FixtureTask::to_json)
            .ok_or_else(unknown),
        "tasks/cancel" => match all.iter_mut().find(|t| t.id == task_id) {
            None => Err(unknown()),
            Some(t) if matches!(t.status, "completed" | "failed" | "cancelled") => Err(
                ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("task {task_id} has ended")),
            ),
            Some(t) => {
                t.status = "cancelled";
                t.result = Some(Err(ErrorObject::new(
                    jsonrpc::INTERNAL_ERROR,
                    "the task was cancelled",
                )));
                let done = t.to_json();
                server.record_cancellation(json!({"taskId": task_id}));
                tasks.changed.notify_all();
                Ok(done)
            }
        },
        "tasks/result" => loop {
            match all.iter().find(|t| t.id == task_id) {
                None => break Err(unknown()),
                Some(FixtureTask {
                    result: Some(result),
                    ..
                }) => {
                    break result.clone().map(|mut r| {
                        r["_meta"] =
                            json!({"io.modelcontextprotocol/related-task": {"taskId": task_id}});
                        r
                    });
                }
                Some(_) => all = tasks.changed.wait(all).unwrap(),
            }
        },
        _ => return false,
    };
    reply(out, id, outcome);
    true
}

/// Shares the tasks between the fixture's threads.
pub fn new_tasks() -> Arc<Tasks> {
    Arc::new(Tasks::default())
}

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

fn rank(level: &str) -> Option<usize> {
    LEVELS.iter().position(|l| *l == level)
}

/// The capabilities the fixture declares besides tools.
pub fn capabilities() -> Value {
    json!({"resources": {"subscribe": true, "listChanged": true},
           "prompts": {"listChanged": false}, "completions": {}, "logging": {}})
}

/// The tasks capability of `tasks` mode.
pub fn tasks_capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

fn hostile(server: &Server, text: &str) -> String {
    match server.mode() {
        Mode::Hostile => format!("{text}{HOSTILE}"),
        _ => text.to_string(),
    }
}

fn log(out: &dyn Output, level: &str, data: Value) {
    send(
        out,
        Message::Notification(Notification {
            method: "notifications/message".into(),
            params: Some(json!({"level": level, "logger": "fixture", "data": data})),
        }),
    );
}

/// Before a request is handled: in `modern` mode, the log message its `_meta` asks for.
pub fn before(server: &Server, method: &str, params: &Value, out: &dyn Output) {
    if *server.mode() != Mode::Modern {
        return;
    }
    let asked = params
        .pointer("/_meta/io.modelcontextprotocol~1logLevel")
        .and_then(Value::as_str)
        .and_then(rank);
    if asked.is_some_and(|a| a <= 1) {
        log(out, "info", json!(format!("handling {method}")));
    }
}

/// Paged as tools are: `cursor` is the index of the first entry.
fn paged(
    server: &Server,
    key: &str,
    all: Vec<Value>,
    params: &Value,
) -> Result<Value, ErrorObject> {
    let start = match params.get("cursor").and_then(Value::as_str) {
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|n| *n < all.len())
            .ok_or_else(|| {
                ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("invalid cursor {c:?}"))
            })?,
        None => 0,
    };
    let end = server
        .page_size()
        .map_or(all.len(), |n| (start + n.max(1)).min(all.len()));
    let mut result = json!({key: all[start..end]});
    if end < all.len() {
        result["nextCursor"] = json!(end.to_string());
    }
    Ok(result)
}

fn completion(values: Vec<String>, typed: &str) -> Value {
    let values: Vec<String> = values
        .into_iter()
        .filter(|v| v.starts_with(typed))
        .collect();
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}

/// Handles a request of these features; `false` when the method is none of theirs.
pub fn handle(server: &Server, method: &str, id: Id, params: &Value, out: &dyn Output) -> bool {
    let outcome = match method {
        "resources/read" | "prompts/get" if *server.mode() == Mode::Hang => return true,
        "resources/read" if params.get("uri") == Some(&json!("fixture://hang")) => return true,
        "resources/list" if *server.mode() == Mode::EndlessPages => {
            let n: u64 = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let resource = json!({"uri": format!("fixture://r{n}"), "name": format!("r{n}")});
            Ok(json!({"resources": [resource], "nextCursor": (n + 1).to_string()}))
        }
        "resources/list" => {
            let all = vec![
                json!({"uri": "fixture://readme", "name": hostile(server, "readme"),
                       "description": hostile(server, "What the fixture server is."),
                       "mimeType": "text/plain", "x-fixture": {"kept": true}}),
                json!({"uri": "fixture://logo", "name": "logo", "mimeType": "image/png"}),
            ];
            let all = all.into_iter().chain(server.added_resources()).collect();
            paged(server, "resources", all, params)
        }
        "resources/templates/list" => Ok(json!({"resourceTemplates": [
            {"uriTemplate": "fixture://big/{bytes}", "name": hostile(server, "big"),
             "description": "That many bytes of text.", "mimeType": "text/plain"}
        ]})),
        "resources/read" => {
            if let Some(token) = params.pointer("/_meta/progressToken") {
                let progress = json!({"progressToken": token, "progress": 1, "total": 1,
                                      "message": "read"});
                send(
                    out,
                    Message::Notification(Notification {
                        method: "notifications/progress".into(),
                        params: Some(progress),
                    }),
                );
            }
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
            let bytes = uri
                .strip_prefix("fixture://big/")
                .and_then(|n| n.parse::<u64>().ok());
            match (uri, bytes) {
                ("fixture://readme", _) => {
                    Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain",
                    "text": hostile(server, "The agenvoy fixture server's readme.")}]}))
                }
                ("fixture://logo", _) => {
                    Ok(json!({"contents": [{"uri": uri, "mimeType": "image/png",
                    "blob": "iVBORw0KGgo="}]}))
                }
                (_, Some(n)) => {
                    // Written piece by piece, as the `big` tool's answer is: a huge resource is
                    // never held whole here either.
                    let head = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[{{"uri":{},"mimeType":"text/plain","text":""#,
                        json!(uri)
                    );
                    let units = vec![(1, b"a".to_vec())];
                    let tail = br#""}]}}"#.to_vec();
                    let mut pieces = repeat_units(head.into_bytes(), units, n, tail);
                    out.message(&mut pieces, Some(&id));
                    return true;
                }
                _ => Err(ErrorObject::new(
                    jsonrpc::INVALID_PARAMS,
                    format!("unknown resource {uri:?}"),
                )),
            }
        }
        // 2026-07-28: a listen acknowledges what it asked for and tells of an update to each
        // resource it names at once; it is never answered (the client's cancel ends it).
        "subscriptions/listen" => {
            let asked = params.get("notifications").cloned().unwrap_or(json!({}));
            let meta = json!({"io.modelcontextprotocol/subscriptionId": id.to_string()});
            send(
                out,
                Message::Notification(Notification {
                    method: "notifications/subscriptions/acknowledged".into(),
                    params: Some(json!({"_meta": meta, "notifications": asked})),
                }),
            );
            for uri in asked
                .get("resourceSubscriptions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(16)
            {
                send(
                    out,
                    Message::Notification(Notification {
                        method: "notifications/resources/updated".into(),
                        params: Some(json!({"_meta": meta, "uri": uri})),
                    }),
                );
            }
            return true;
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = params
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            reply(out, id, Ok(json!({})));
            if method == "resources/subscribe" {
                send(
                    out,
                    Message::Notification(Notification {
                        method: "notifications/resources/updated".into(),
                        params: Some(json!({"uri": uri})),
                    }),
                );
            }
            return true;
        }
        "prompts/list" => {
            let all = vec![
                json!({"name": "greet", "description": hostile(server, "Greets someone."),
                       "arguments": [{"name": "name", "description": "Who", "required": true},
                                     {"name": "style", "description": "How"}]}),
                json!({"name": "summarize", "description": "Summarizes the readme."}),
            ];
            paged(server, "prompts", all, params)
        }
        "prompts/get" => {
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
            match params.get("name").and_then(Value::as_str) {
                Some("greet") => match arg("name") {
                    Some(name) => {
                        let style = arg("style").unwrap_or_else(|| "casual".into());
                        let text = hostile(server, &format!("Greet {name} in a {style} way."));
                        Ok(json!({"description": "A greeting", "messages": [
                            {"role": "user", "content": {"type": "text", "text": text}},
                            {"role": "assistant", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}
                        ]}))
                    }
                    None => Err(ErrorObject::new(
                        jsonrpc::INVALID_PARAMS,
                        "greet needs the argument name",
                    )),
                },
                Some("summarize") => Ok(json!({"messages": [
                    {"role": "user", "content": {"type": "resource", "resource":
                        {"uri": "fixture://readme", "mimeType": "text/plain", "text": "The agenvoy fixture server's readme."}}}
                ]})),
                other => Err(ErrorObject::new(
                    jsonrpc::INVALID_PARAMS,
                    format!("unknown prompt {other:?}"),
                )),
            }
        }
        "completion/complete" => {
            let typed = params
                .pointer("/argument/value")
                .and_then(Value::as_str)
                .unwrap_or("");
            let argument = params.pointer("/argument/name").and_then(Value::as_str);
            let kind = params.pointer("/ref/type").and_then(Value::as_str);
            let formal = params
                .pointer("/context/arguments/style")
                .and_then(Value::as_str)
                == Some("formal");
            let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            match (kind, argument) {
                (Some("ref/prompt"), Some("style")) => Ok(completion(
                    strings(&["casual", "formal", "friendly"]),
                    typed,
                )),
                (Some("ref/prompt"), Some("name")) => {
                    let mut done = completion(strings(&["Ada", "Alan", "Grace"]), typed);
                    if formal && let Some(values) = done.pointer_mut("/completion/values") {
                        for v in values.as_array_mut().into_iter().flatten() {
                            *v = json!(format!("Dr. {}", v.as_str().unwrap_or("")));
                        }
                    }
                    Ok(done)
                }
                (Some("ref/resource"), Some("bytes")) => {
                    Ok(completion(strings(&["1024", "1048576", "2097152"]), typed))
                }
                _ => Ok(completion(Vec::new(), typed)),
            }
        }
        "logging/setLevel" => {
            let level = params.get("level").and_then(Value::as_str).unwrap_or("");
            let Some(asked) = rank(level) else {
                let e =
                    ErrorObject::new(jsonrpc::INVALID_PARAMS, format!("unknown level {level:?}"));
                reply(out, id, Err(e));
                return true;
            };
            reply(out, id, Ok(json!({})));
            if asked <= 3 {
                log(
                    out,
                    "warning",
                    json!(hostile(server, &format!("log level set to {level}"))),
                );
            }
            if asked == 0 {
                log(out, "debug", json!({"detail": "debug messages are on"}));
            }
            return true;
        }
        _ => return false,
    };
    reply(out, id, outcome);
    true
}
