//! `agenvoy-mcp fixture-server`: the bundled stdio MCP server for tests and the demo.
//!
//! Tools: `echo`, `add`, `big` (`bytes` bytes of text, generated while it is written, with
//! optional multi-byte characters and characters JSON escapes, or of one `class` of text: see
//! [`BigClass`]), `slow` (sleeps, sends
//! progress), `fail` (`isError`), `cancellations` (the `notifications/cancelled` received so
//! far), `client_request` (sends a request to the client and returns its answer), `add_tool`
//! (adds a tool `name` to the list, which answers `called <name>`, then sends
//! `notifications/tools/list_changed`; its text says how many tools/list requests were answered
//! so far; with `resource`, adds a resource of that URI instead and sends
//! `notifications/resources/list_changed`) and `env` (the value of the variable `name`; without `name`, the names of every
//! variable the server has, sorted, one a line).
//!
//! Fault modes (`--mode`): `crash-mid-call` (exits halfway through a tools/call response),
//! `hang` (never answers tools/call), `junk-stdout` (a non-JSON line before every message),
//! `no-init-response` (never answers initialize), `version=<v>` (answers initialize with
//! `<v>`), `spawn-grandchild` (starts a `sleep` child that outlives it unless killed),
//! `ignore-sigterm` (ignores SIGTERM and the end of stdin: only SIGKILL stops it);
//! tools/list paging faults `cursor-repeat`, `cursor-empty` and `endless-pages`;
//! `list-flood=<pages>x<tools>` (tools/list in `<pages>` pages of about 3.8 MB, each of
//! `<tools>` tools whose descriptions fill the page: a server that lists more than any host
//! should keep, each page under the message cap);
//! `crash-at-start` (prints a line to stderr and exits with status 3 before reading anything), `slow-start=<secs>`
//! (sleeps before reading anything), `no-list-changed` (declares no `tools.listChanged` and
//! `add_tool` sends no notification), `stop-reading` (never reads stdin again once it has
//! answered tools/list), `flood` (once initialized, never reads stdin again and sends `ping`
//! requests without end), `batch` (reads 2 ms after it last had nothing to read, calls tools
//! one after another, and writes what it answers to the lines it read together in one write,
//! as a busy server with a buffered stdout does); `tasks` (declares task-augmented
//! `tools/call` and lists `research` and `survey`, see [`super::fixture_features`]); `hostile` ([`HOSTILE`], terminal control
//! sequences, in its server info, instructions, tool descriptions, tool results, progress
//! messages, log notifications and stderr lines, plus a tool `trap<HOSTILE>` listed twice,
//! whose calls fail with an error that names it).
//!
//! `modern` speaks the stateless 2026-07-28 revision (`server/discover`; `initialize` is
//! refused). Resources, a resource template, prompts, completions and logging are in
//! [`super::fixture_features`].
//!
//! With `FIXTURE_CALL_LOG` set to a file, every tools/call appends the tool's name to it
//! first (so a test can count how often a call reached the server); with
//! `FIXTURE_METHOD_LOG`, every request appends its method.

use agenvoy_mcp::wire::jsonrpc::{self, ErrorObject, Id, Message, Notification, Request, Response};
use agenvoy_mcp::{HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, STATELESS_VERSIONS};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The instructions the fixture server declares.
pub const INSTRUCTIONS: &str =
    "The agenvoy fixture server: use echo to repeat text, add to sum two numbers.";

/// What `--mode hostile` adds to the text it sends: clear the screen, set the window title,
/// ring the bell, return to the line's start, backspace, a C1 CSI, a C1 next-line and a
/// right-to-left override, then a fake "logged in".
pub const HOSTILE: &str = "\x1b[2J\x1b[H\x1b]0;pwned\x07\r\x08\u{9b}31m\u{85}\u{202e}logged in";

/// A fault mode of the fixture server.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Behaves.
    Normal,
    /// Exits halfway through writing a tools/call response.
    CrashMidCall,
    /// Never answers tools/call.
    Hang,
    /// Writes a non-JSON line before every message.
    JunkStdout,
    /// Never answers initialize.
    NoInitResponse,
    /// Answers initialize with this version.
    Version(String),
    /// Starts a long-lived grandchild.
    SpawnGrandchild,
    /// Ignores SIGTERM and the end of stdin.
    IgnoreSigterm,
    /// tools/list: a page's `nextCursor` repeats the cursor that asked for it.
    CursorRepeat,
    /// tools/list: the first page's `nextCursor` is empty.
    CursorEmpty,
    /// tools/list: pages of one tool each, never ending.
    EndlessPages,
    /// tools/list: this many pages of about 3.8 MB, each of this many tools.
    ListFlood(u64, usize),
    /// Exits with status 1 before reading anything.
    CrashAtStart,
    /// Sleeps this many seconds before reading anything.
    SlowStart(f64),
    /// Declares no `tools.listChanged`; `add_tool` sends no notification.
    NoListChanged,
    /// Stops reading stdin once it has answered tools/list.
    StopReading,
    /// Once initialized, stops reading stdin and sends pings without end.
    Flood,
    /// Puts [`HOSTILE`] in every text it sends.
    Hostile,
    /// Speaks the stateless 2026-07-28 revision: answers `server/discover`, refuses
    /// `initialize`.
    Modern,
    /// Reads 2 ms after it last had nothing to read, calls tools in turn, and flushes stdout
    /// only when it has no more lines read and waiting: answers to requests that came together
    /// go out together.
    Batch,
    /// Declares task-augmented `tools/call` and lists the tools that run as tasks.
    Tasks,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        Ok(match s {
            "normal" => Mode::Normal,
            "crash-mid-call" => Mode::CrashMidCall,
            "hang" => Mode::Hang,
            "junk-stdout" => Mode::JunkStdout,
            "no-init-response" => Mode::NoInitResponse,
            "spawn-grandchild" => Mode::SpawnGrandchild,
            "ignore-sigterm" => Mode::IgnoreSigterm,
            "cursor-repeat" => Mode::CursorRepeat,
            "cursor-empty" => Mode::CursorEmpty,
            "endless-pages" => Mode::EndlessPages,
            "crash-at-start" => Mode::CrashAtStart,
            "no-list-changed" => Mode::NoListChanged,
            "stop-reading" => Mode::StopReading,
            "flood" => Mode::Flood,
            "hostile" => Mode::Hostile,
            "batch" => Mode::Batch,
            "modern" => Mode::Modern,
            "tasks" => Mode::Tasks,
            _ => {
                if let Some(v) = s.strip_prefix("version=") {
                    Mode::Version(v.to_string())
                } else if let Some(flood) = s.strip_prefix("list-flood=") {
                    let parsed = flood
                        .split_once('x')
                        .and_then(|(p, t)| Some((p.parse().ok()?, t.parse().ok()?)));
                    match parsed {
                        Some((pages, tools)) if tools > 0 => Mode::ListFlood(pages, tools),
                        _ => {
                            return Err(format!("list-flood needs <pages>x<tools>, not {flood:?}"));
                        }
                    }
                } else if let Some(secs) = s.strip_prefix("slow-start=") {
                    match secs.parse::<f64>() {
                        Ok(n) if n >= 0.0 && n.is_finite() => Mode::SlowStart(n),
                        _ => return Err(format!("slow-start needs seconds, not {secs:?}")),
                    }
                } else {
                    return Err(format!("unknown mode {s:?}"));
                }
            }
        })
    }
}

/// Where the fixture's messages go: stdout, or an HTTP response or stream.
pub trait Output: Send + Sync {
    /// Writes one message, as the pieces `pieces` yields; `answers` is the id of the request
    /// the message answers, if it is a response.
    fn message(&self, pieces: &mut dyn Iterator<Item = Vec<u8>>, answers: Option<&Id>);
}

/// Writes a message that answers nothing.
pub fn send(out: &dyn Output, message: Message) {
    out.message(&mut std::iter::once(message.to_bytes()), None);
}

/// Answers request `id`.
pub fn reply(out: &dyn Output, id: Id, outcome: Result<Value, ErrorObject>) {
    let message = Message::Response(Response {
        id: Some(id.clone()),
        outcome,
    });
    out.message(&mut std::iter::once(message.to_bytes()), Some(&id));
}

/// Newline-delimited messages on stdout.
struct Stdout {
    junk: bool,
    /// Stdout's descriptor without std's line buffering, which scans every piece for a newline
    /// (a third of the fixture's time on a 256 MiB result); flushed after each message unless
    /// held.
    out: Mutex<Held>,
}

struct Held {
    out: std::io::BufWriter<std::fs::File>,
    /// In `batch` mode, while more lines read are waiting: messages are flushed after them.
    hold: bool,
}

impl Output for Stdout {
    fn message(&self, pieces: &mut dyn Iterator<Item = Vec<u8>>, _: Option<&Id>) {
        let mut held = self.out.lock().unwrap();
        let out = &mut held.out;
        if self.junk {
            let _ = out.write_all(b"this line is not JSON\n");
        }
        for piece in pieces {
            if out.write_all(&piece).is_err() {
                return;
            }
        }
        let _ = out.write_all(b"\n");
        if !held.hold {
            let _ = held.out.flush();
        }
    }
}

/// The state of one fixture server, whatever carries its messages.
pub struct Server {
    mode: Mode,
    page_size: Option<usize>,
    cancelled: Mutex<Vec<Value>>,
    /// Answers to our own requests to the client, by id.
    answers: Mutex<HashMap<String, Value>>,
    answered: Condvar,
    /// The number of our next request to the client: unique across the clients an HTTP
    /// fixture serves at once, whose own request ids collide.
    next_ask: std::sync::atomic::AtomicU64,
    /// Tools added by `add_tool`.
    added: Mutex<Vec<String>>,
    /// Resources added by `add_resource`.
    added_resources: Mutex<Vec<Value>>,
    /// tools/list requests answered.
    lists: std::sync::atomic::AtomicUsize,
    /// Tools called as tasks.
    tasks: Arc<super::fixture_features::Tasks>,
}

impl Server {
    /// A server in `mode`, paging tools/list by `page_size`.
    pub fn new(mode: Mode, page_size: Option<usize>) -> Arc<Server> {
        Arc::new(Server {
            mode,
            page_size,
            cancelled: Mutex::new(Vec::new()),
            answers: Mutex::new(HashMap::new()),
            answered: Condvar::new(),
            next_ask: std::sync::atomic::AtomicU64::new(1),
            added: Mutex::new(Vec::new()),
            added_resources: Mutex::new(Vec::new()),
            lists: std::sync::atomic::AtomicUsize::new(0),
            tasks: super::fixture_features::new_tasks(),
        })
    }

    /// The tasks of tools called as tasks.
    pub fn tasks(&self) -> &super::fixture_features::Tasks {
        &self.tasks
    }

    /// Records a cancellation, as the `cancellations` tool lists them.
    pub fn record_cancellation(&self, what: Value) {
        self.cancelled.lock().unwrap().push(what);
    }

    /// The resources `add_resource` added, listed after the fixture's own.
    pub fn added_resources(&self) -> Vec<Value> {
        self.added_resources.lock().unwrap().clone()
    }

    /// The server's mode.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// How many entries a page of a list holds, if lists are paged.
    pub fn page_size(&self) -> Option<usize> {
        self.page_size
    }

    /// Handles one message from the client; what it sends back goes to `out`.
    pub fn receive(self: &Arc<Self>, message: Message, out: Arc<dyn Output>) {
        match message {
            Message::Request(request) => handle(self, request, out),
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                self.cancelled
                    .lock()
                    .unwrap()
                    .push(n.params.unwrap_or(Value::Null));
            }
            Message::Notification(_) => {}
            Message::Response(r) => {
                let answer = match r.outcome {
                    Ok(result) => json!({"result": result}),
                    Err(error) => json!({"error": error}),
                };
                let key = r.id.map(|id| id.to_string()).unwrap_or_default();
                self.answers.lock().unwrap().insert(key, answer);
                self.answered.notify_all();
            }
        }
    }
}

/// A standard stream of this process (stdin, stdout) as a `File` of its own, read and
/// written without std's lock and buffer.
#[cfg(unix)]
fn own(stream: &impl std::os::fd::AsFd) -> std::io::Result<std::fs::File> {
    Ok(stream.as_fd().try_clone_to_owned()?.into())
}

/// A standard stream of this process (stdin, stdout) as a `File` of its own, read and
/// written without std's lock and buffer.
#[cfg(windows)]
fn own(stream: &impl std::os::windows::io::AsHandle) -> std::io::Result<std::fs::File> {
    Ok(stream.as_handle().try_clone_to_owned()?.into())
}

/// Runs the server on stdin and stdout until stdin ends.
pub fn run(mode: Mode, page_size: Option<usize>) -> std::process::ExitCode {
    match mode {
        Mode::CrashAtStart => {
            eprintln!("fixture-server: crashing at start, as asked");
            return std::process::ExitCode::from(3);
        }
        Mode::SlowStart(secs) => std::thread::sleep(Duration::from_secs_f64(secs)),
        _ => {}
    }
    #[cfg(unix)]
    if mode == Mode::IgnoreSigterm {
        // SAFETY: setting a signal's disposition to "ignore" installs no handler code.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
    }
    let _grandchild = (mode == Mode::SpawnGrandchild).then(|| {
        std::process::Command::new("sleep")
            .arg("600")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn the grandchild")
    });
    let stdout = Arc::new(Stdout {
        junk: mode == Mode::JunkStdout,
        out: Mutex::new(Held {
            out: std::io::BufWriter::with_capacity(
                1 << 16,
                own(&std::io::stdout()).expect("stdout can be duplicated"),
            ),
            hold: false,
        }),
    });
    let out: Arc<dyn Output> = stdout.clone();
    let server = Server::new(mode, page_size);
    let mut stdin =
        std::io::BufReader::new(own(&std::io::stdin()).expect("stdin can be duplicated"));
    let mut line = String::new();
    loop {
        if server.mode == Mode::Batch && !stdin.buffer().contains(&b'\n') {
            // As a busy server would: requests sent meanwhile are read together.
            std::thread::sleep(Duration::from_millis(2));
        }
        line.clear();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        // In batch mode answers wait while another whole line does: the last line's answer
        // goes out with them (and after it, whatever it was, they are flushed).
        let hold = server.mode == Mode::Batch && stdin.buffer().contains(&b'\n');
        stdout.out.lock().unwrap().hold = hold;
        if line.trim().is_empty() {
            continue;
        }
        let initialized = line.contains("\"notifications/initialized\"");
        match Message::parse(line.as_bytes()) {
            Ok(message) => server.receive(message, out.clone()),
            Err(e) => eprintln!("fixture-server: ignoring a bad line: {e}"),
        }
        if !hold {
            let _ = stdout.out.lock().unwrap().out.flush();
        }
        let listed = server.lists.load(std::sync::atomic::Ordering::SeqCst) > 0;
        if server.mode == Mode::StopReading && listed {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if server.mode == Mode::Flood && initialized {
            for n in 0u64.. {
                let ping = Request {
                    id: Id::Number(n as i64),
                    method: "ping".into(),
                    params: None,
                };
                send(&*out, Message::Request(ping));
            }
        }
    }
    if server.mode == Mode::IgnoreSigterm {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    std::process::ExitCode::SUCCESS
}

/// Appends `line` to the file named by variable `var`, when it is set.
fn append_to_log(var: &str, line: &str) {
    if let Some(log) = std::env::var_os(var) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("open {var}: {e}"));
        let _ = writeln!(file, "{line}");
    }
}

fn handle(server: &Arc<Server>, request: Request, out: Arc<dyn Output>) {
    append_to_log("FIXTURE_METHOD_LOG", &request.method);
    let params = request.params.clone().unwrap_or(Value::Null);
    super::fixture_features::before(server, &request.method, &params, &*out);
    if super::fixture_features::handle(server, &request.method, request.id.clone(), &params, &*out)
    {
        return;
    }
    match request.method.as_str() {
        "server/discover" if server.mode == Mode::Modern => {
            let mut capabilities = super::fixture_features::capabilities();
            capabilities["tools"] = json!({"listChanged": true});
            capabilities["extensions"] = json!({super::fixture_features::TASKS_EXTENSION: {}});
            let result = json!({
                "resultType": "complete",
                "supportedVersions": STATELESS_VERSIONS,
                "capabilities": capabilities,
                "serverInfo": {"name": "agenvoy-fixture", "version": env!("CARGO_PKG_VERSION")},
                "instructions": INSTRUCTIONS,
            });
            reply(&*out, request.id, Ok(result));
        }
        "initialize" if server.mode == Mode::Modern => {
            let mut e = ErrorObject::new(-32022, "this server speaks only the 2026-07-28 revision");
            e.data = Some(json!({"supported": STATELESS_VERSIONS}));
            reply(&*out, request.id, Err(e));
        }
        "initialize" => {
            if server.mode == Mode::NoInitResponse {
                return;
            }
            let offered = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let version = match &server.mode {
                Mode::Version(v) => v.clone(),
                _ if HANDSHAKE_VERSIONS.contains(&offered) => offered.to_string(),
                _ => LATEST_HANDSHAKE_VERSION.to_string(),
            };
            let mut capabilities = super::fixture_features::capabilities();
            capabilities["tools"] = json!({"listChanged": server.mode != Mode::NoListChanged});
            if server.mode == Mode::Tasks {
                capabilities["tasks"] = super::fixture_features::tasks_capability();
            }
            let mut result = json!({
                "protocolVersion": version,
                "capabilities": capabilities,
                "serverInfo": {"name": "agenvoy-fixture", "version": env!("CARGO_PKG_VERSION")},
                "instructions": INSTRUCTIONS,
            });
            if server.mode == Mode::Hostile {
                for pointer in ["/serverInfo/name", "/serverInfo/version", "/instructions"] {
                    let text = result.pointer_mut(pointer).expect("a member");
                    *text = json!(format!(
                        "{}{}",
                        text.as_str().unwrap_or(""),
                        hostile(server)
                    ));
                }
            }
            reply(&*out, request.id, Ok(result));
        }
        "ping" => reply(&*out, request.id, Ok(json!({}))),
        "tools/list" if matches!(server.mode, Mode::ListFlood(..)) => {
            let Mode::ListFlood(pages, per_page) = server.mode else {
                unreachable!("matched above")
            };
            let n: u64 = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            // Each tool is about 75 bytes of JSON besides its description, which fills the page.
            let filler = "d".repeat((3_800_000 / per_page).saturating_sub(75));
            let tools: Vec<Value> = (0..per_page)
                .map(|i| {
                    json!({"name": format!("t{n}_{i}"), "description": filler,
                           "inputSchema": {"type": "object"}})
                })
                .collect();
            let mut result = json!({"tools": tools});
            if n + 1 < pages {
                result["nextCursor"] = json!((n + 1).to_string());
            }
            reply(&*out, request.id, Ok(result));
        }
        "tools/list" if server.mode == Mode::EndlessPages => {
            let n: u64 = params
                .get("cursor")
                .and_then(Value::as_str)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let tool = json!({"name": format!("tool_{n}"), "inputSchema": {"type": "object"}});
            reply(
                &*out,
                request.id,
                Ok(json!({"tools": [tool], "nextCursor": (n + 1).to_string()})),
            );
        }
        "tools/list" => {
            server
                .lists
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let all = tool_definitions(server);
            let start = match params.get("cursor").and_then(Value::as_str) {
                Some(c) => match c.parse::<usize>() {
                    Ok(n) if n < all.len() => n,
                    _ => {
                        let e = ErrorObject::new(
                            jsonrpc::INVALID_PARAMS,
                            format!("invalid cursor {c:?}"),
                        );
                        return reply(&*out, request.id, Err(e));
                    }
                },
                None => 0,
            };
            let end = server
                .page_size
                .map_or(all.len(), |n| (start + n.max(1)).min(all.len()));
            let mut result = json!({"tools": all[start..end]});
            if end < all.len() {
                result["nextCursor"] = json!(end.to_string());
            }
            match (&server.mode, params.get("cursor")) {
                (Mode::CursorRepeat, Some(cursor)) => result["nextCursor"] = cursor.clone(),
                (Mode::CursorEmpty, _) => result["nextCursor"] = json!(""),
                _ => {}
            }
            reply(&*out, request.id, Ok(result));
        }
        "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" | "tasks/update" => {
            let server = server.clone();
            std::thread::spawn(move || {
                let id = request.id.clone();
                let method = &request.method;
                if !super::fixture_features::handle_tasks(&server, method, id, &params, &*out) {
                    let e = ErrorObject::new(
                        jsonrpc::METHOD_NOT_FOUND,
                        format!("method not found: {method}"),
                    );
                    reply(&*out, request.id, Err(e));
                }
            });
        }
        "tools/call" => {
            if server.mode == Mode::Hang {
                return;
            }
            if server.mode == Mode::Batch {
                // Answered in turn, so that answers to requests read together go out together.
                return call_tool(server, request.id, &params, &*out);
            }
            let server = server.clone();
            std::thread::spawn(move || call_tool(&server, request.id, &params, &*out));
        }
        other => {
            let e = ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            );
            reply(&*out, request.id, Err(e));
        }
    }
}

fn tool_definitions(server: &Server) -> Vec<Value> {
    let schema = |props: Value, required: &[&str]| json!({"type": "object", "properties": props, "required": required});
    let added = server.added.lock().unwrap().iter().map(|name| {
        json!({"name": name, "description": "A tool added by add_tool.", "inputSchema": schema(json!({}), &[])})
    }).collect::<Vec<_>>();
    let mut all = vec![
        json!({"name": "echo", "description": "Returns the text it is given (and writes it to stderr if asked).",
               "inputSchema": schema(json!({"text": {"type": "string"}, "stderr": {"type": "boolean"}}), &["text"])}),
        json!({"name": "add", "description": "Adds two numbers.",
               "inputSchema": schema(json!({"a": {"type": "number"}, "b": {"type": "number"}}), &["a", "b"])}),
        json!({"name": "big", "description": "Returns `bytes` bytes of generated text.",
               "inputSchema": schema(json!({"bytes": {"type": "integer", "minimum": 0},
                   "multibyte": {"type": "boolean"}, "escapes": {"type": "boolean"},
                   "class": {"type": "string", "enum": BigClass::NAMES}}), &["bytes"])}),
        json!({"name": "slow", "description": "Sleeps, reporting progress.",
               "inputSchema": schema(json!({"seconds": {"type": "number"}, "steps": {"type": "integer"}}), &["seconds"])}),
        json!({"name": "fail", "description": "Always fails with isError.",
               "inputSchema": schema(json!({"message": {"type": "string"}}), &[])}),
        json!({"name": "cancellations", "description": "Lists the cancellations received so far.",
               "inputSchema": schema(json!({}), &[])}),
        json!({"name": "client_request", "description": "Sends a request to the client and returns its answer (`notification`: sends it as a notification; `pad_zeros`, `pad_text`: pads its `_meta`).",
               "inputSchema": schema(json!({"method": {"type": "string"}, "params": {"type": "object"}}), &["method"])}),
        json!({"name": "add_tool", "description": "Adds a tool to the list and notifies the client.",
               "inputSchema": schema(json!({"name": {"type": "string"}, "resource": {"type": "string"}}), &["name"])}),
        json!({"name": "env", "description": "Returns the value of an environment variable, or without a name the names of all.",
               "inputSchema": schema(json!({"name": {"type": "string"}}), &[])}),
    ];
    all.extend(added);
    if matches!(server.mode, Mode::Tasks | Mode::Modern) {
        all.extend(super::fixture_features::task_tools());
    }
    if server.mode == Mode::Hostile {
        for tool in &mut all {
            tool["description"] = json!(format!(
                "{HOSTILE} {}",
                tool["description"].as_str().unwrap_or("")
            ));
        }
        let trap = json!({"name": format!("trap{HOSTILE}"), "description": HOSTILE,
                          "inputSchema": schema(json!({}), &[])});
        all.extend([trap.clone(), trap]);
    }
    all
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn call_tool(server: &Server, id: Id, params: &Value, out: &dyn Output) {
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    append_to_log("FIXTURE_CALL_LOG", name);
    if server.mode == Mode::CrashMidCall {
        let partial = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"partial"#
        );
        out.message(&mut std::iter::once(partial.into_bytes()), None);
        std::process::exit(3);
    }
    if server.mode == Mode::Hostile {
        eprintln!("stderr {HOSTILE}");
        let log = json!({"level": format!("warning{HOSTILE}"), "data": format!("log {HOSTILE}")});
        send(
            out,
            Message::Notification(Notification {
                method: "notifications/message".into(),
                params: Some(log),
            }),
        );
    }
    if server.mode == Mode::Modern && super::fixture_features::task_support(name).is_some() {
        return super::fixture_features::call_extension_task_tool(server, id, name, params, out);
    }
    if server.mode == Mode::Tasks && super::fixture_features::task_support(name).is_some() {
        return super::fixture_features::call_task_tool(server, id, name, params, out);
    }
    let result = match name {
        "echo" => {
            let text = args.get("text").and_then(Value::as_str).unwrap_or("");
            if args.get("stderr").and_then(Value::as_bool) == Some(true) {
                eprintln!("{text}");
            }
            Ok(text_result(text))
        }
        "add" => {
            let sum = args.get("a").and_then(Value::as_f64).unwrap_or(0.0)
                + args.get("b").and_then(Value::as_f64).unwrap_or(0.0);
            let mut r = text_result(&sum.to_string());
            r["structuredContent"] = json!({"sum": sum});
            Ok(r)
        }
        "big" => {
            let bytes = args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            let multibyte = args
                .get("multibyte")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let escapes = args
                .get("escapes")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let class = match args.get("class").and_then(Value::as_str) {
                None => BigClass::Ascii { multibyte, escapes },
                Some(name) => match BigClass::named(name) {
                    Some(class) => class,
                    None => {
                        let why = format!("unknown class {name:?}: one of {:?}", BigClass::NAMES);
                        return reply(out, id, Err(ErrorObject::new(jsonrpc::INVALID_PARAMS, why)));
                    }
                },
            };
            return out.message(&mut big_message(&id, bytes, class), Some(&id));
        }
        "slow" => {
            let seconds = args
                .get("seconds")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .max(0.0);
            let steps = args
                .get("steps")
                .and_then(Value::as_u64)
                .unwrap_or(5)
                .max(1);
            let token = params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .cloned();
            for step in 1..=steps {
                std::thread::sleep(Duration::from_secs_f64(seconds / steps as f64));
                if let Some(token) = &token {
                    send(
                        out,
                        Message::Notification(Notification {
                            method: "notifications/progress".into(),
                            params: Some(
                                json!({"progressToken": token, "progress": step, "total": steps,
                                            "message": format!("step {step} of {steps}{}", hostile(server))}),
                            ),
                        }),
                    );
                }
            }
            Ok(text_result(&format!("slept {seconds} s")))
        }
        "fail" => {
            let message = args
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the fail tool failed, as asked");
            let mut r = text_result(message);
            r["isError"] = json!(true);
            Ok(r)
        }
        "cancellations" => Ok(text_result(
            &Value::Array(server.cancelled.lock().unwrap().clone()).to_string(),
        )),
        // 2026-07-28 has no server requests: the question is the result's input request,
        // and the call comes again with its answer.
        "client_request" if server.mode == Mode::Modern => {
            match params.get("inputResponses").and_then(|r| r.get("ask")) {
                Some(answer) => Ok(text_result(&json!({"result": answer}).to_string())),
                None => {
                    // `copies`: the same question under that many keys (`ask`, `ask1`, ...).
                    let question = json!({
                        "method": args.get("method").and_then(Value::as_str).unwrap_or("ping"),
                        "params": args.get("params").cloned().unwrap_or(json!({})),
                    });
                    let copies = args.get("copies").and_then(Value::as_u64).unwrap_or(1);
                    let requests: serde_json::Map<String, Value> = (0..copies.min(1000))
                        .map(|i| {
                            let key = if i == 0 {
                                "ask".into()
                            } else {
                                format!("ask{i}")
                            };
                            (key, question.clone())
                        })
                        .collect();
                    Ok(json!({"resultType": "input_required", "inputRequests": requests}))
                }
            }
        }
        "client_request" => {
            let method = args
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("ping")
                .to_string();
            // A hostile server's padding, made here so the caller does not send it:
            // `pad_zeros` zeros (two bytes a value) or `pad_text` bytes in `_meta.pad`.
            let mut params = args.get("params").cloned();
            let pad = match (args.get("pad_zeros"), args.get("pad_text")) {
                (Some(n), _) => Some(Value::Array(vec![
                    json!(0);
                    n.as_u64().unwrap_or(0) as usize
                ])),
                (None, Some(n)) => {
                    Some(Value::String("x".repeat(n.as_u64().unwrap_or(0) as usize)))
                }
                _ => None,
            };
            if let (Some(pad), Some(Value::Object(p))) = (pad, &mut params) {
                p.insert("_meta".into(), json!({"pad": pad}));
            }
            // `notification`: sent as a notification, answered by nothing.
            if args.get("notification") == Some(&Value::Bool(true)) {
                send(out, Message::Notification(Notification { method, params }));
                Ok(text_result("sent"))
            } else {
                let ask = server
                    .next_ask
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let ask_id = Id::String(format!("fixture-{ask}"));
                let key = ask_id.to_string();
                send(
                    out,
                    Message::Request(Request {
                        id: ask_id,
                        method,
                        params,
                    }),
                );
                let mut answers = server.answers.lock().unwrap();
                let answer = loop {
                    if let Some(a) = answers.remove(&key) {
                        break a;
                    }
                    answers = server.answered.wait(answers).unwrap();
                };
                drop(answers);
                Ok(text_result(&answer.to_string()))
            }
        }
        "add_tool" if args.get("resource").is_some() => {
            let uri = args
                .get("resource")
                .and_then(Value::as_str)
                .unwrap_or("fixture://added");
            let name = args.get("name").and_then(Value::as_str).unwrap_or("added");
            server
                .added_resources
                .lock()
                .unwrap()
                .push(json!({"uri": uri, "name": name}));
            send(
                out,
                Message::Notification(Notification {
                    method: "notifications/resources/list_changed".into(),
                    params: None,
                }),
            );
            Ok(text_result(&format!("added {uri}")))
        }
        "add_tool" => {
            let added = args
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("added")
                .to_string();
            server.added.lock().unwrap().push(added.clone());
            if server.mode != Mode::NoListChanged {
                send(
                    out,
                    Message::Notification(Notification {
                        method: "notifications/tools/list_changed".into(),
                        params: None,
                    }),
                );
            }
            let lists = server.lists.load(std::sync::atomic::Ordering::SeqCst);
            Ok(text_result(&format!(
                "added {added}; tools/list answered {lists} times so far"
            )))
        }
        "env" => Ok(text_result(
            &match args.get("name").and_then(Value::as_str) {
                Some(name) => std::env::var(name).unwrap_or_default(),
                None => {
                    let mut names: Vec<String> = std::env::vars_os()
                        .map(|(k, _)| k.to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    names.join("\n")
                }
            },
        )),
        other if server.added.lock().unwrap().iter().any(|t| t == other) => {
            Ok(text_result(&format!("called {other}")))
        }
        other => Err(ErrorObject::new(
            jsonrpc::INVALID_PARAMS,
            format!("unknown tool: {other}"),
        )),
    };
    let result = result.map(|mut r| {
        if let Some(text) = r["content"][0]["text"].as_str() {
            r["content"][0]["text"] = json!(format!("{text}{}", hostile(server)));
        }
        r
    });
    reply(out, id, result);
}

/// [`HOSTILE`] on its own line in `hostile` mode, else nothing.
fn hostile(server: &Server) -> String {
    match server.mode {
        Mode::Hostile => format!("\n{HOSTILE}"),
        _ => String::new(),
    }
}

/// What `big` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BigClass {
    /// `ascii` (the default): letters and digits, with `multibyte` also `é€😀` and an escaped
    /// `ü`, with `escapes` also `"`, `\`, a newline, a tab and U+0001 (escaped).
    Ascii { multibyte: bool, escapes: bool },
    /// `prose`: English sentences, one a line (an escaped newline every 45 bytes).
    Prose,
    /// `json`: serialized JSON objects, one a line (an escape every few bytes).
    Json,
    /// `cjk`: Japanese with an emoji, raw UTF-8, a line at a time.
    Cjk,
    /// `control`: terminal output with ANSI colours and control characters (`\u00XX` escapes).
    Control,
    /// `image`: an image block whose base64 `data` decodes to `bytes` bytes.
    Image,
    /// `resource`: an embedded resource whose base64 `blob` decodes to `bytes` bytes.
    Resource,
}

impl BigClass {
    const NAMES: [&str; 7] = [
        "ascii", "prose", "json", "cjk", "control", "image", "resource",
    ];

    fn named(name: &str) -> Option<BigClass> {
        Some(match name {
            "ascii" => BigClass::Ascii {
                multibyte: false,
                escapes: false,
            },
            "prose" => BigClass::Prose,
            "json" => BigClass::Json,
            "cjk" => BigClass::Cjk,
            "control" => BigClass::Control,
            "image" => BigClass::Image,
            "resource" => BigClass::Resource,
            _ => return None,
        })
    }

    /// The repeating units of the text: what each unit reads as, and as JSON.
    fn units(self) -> Vec<(&'static str, &'static str)> {
        let mut units = vec![(
            "abcdefghijklmnopqrstuvwxyz0123456789 ",
            "abcdefghijklmnopqrstuvwxyz0123456789 ",
        )];
        match self {
            BigClass::Ascii { multibyte, escapes } => {
                if multibyte {
                    units.extend([("é", "é"), ("€", "€"), ("😀", "😀"), ("ü", "\\u00fc")]);
                }
                if escapes {
                    units.extend([
                        ("\"", "\\\""),
                        ("\\", "\\\\"),
                        ("\n", "\\n"),
                        ("\t", "\\t"),
                        ("\u{1}", "\\u0001"),
                    ]);
                }
                units
            }
            BigClass::Prose => vec![(
                "The quick brown fox jumps over the lazy dog.\n",
                "The quick brown fox jumps over the lazy dog.\\n",
            )],
            BigClass::Json => vec![(
                "{\"id\":17,\"name\":\"widget\",\"tags\":[\"a\",\"b\"],\"ok\":true}\n",
                r#"{\"id\":17,\"name\":\"widget\",\"tags\":[\"a\",\"b\"],\"ok\":true}\n"#,
            )],
            BigClass::Cjk => vec![(
                "東京の天気は晴れです。明日は雨😀\n",
                "東京の天気は晴れです。明日は雨😀\\n",
            )],
            BigClass::Control => vec![(
                "\u{1b}[32mok\u{1b}[0m \u{0}\u{1}\u{2}\u{7}\n",
                r"\u001b[32mok\u001b[0m \u0000\u0001\u0002\u0007\n",
            )],
            BigClass::Image | BigClass::Resource => unreachable!("not text"),
        }
    }
}

/// A tools/call response whose text (or base64 payload) is exactly `bytes` bytes, generated
/// piece by piece as it is written (about 64 KiB a piece), so no piece of memory ever holds the
/// whole.
fn big_message(id: &Id, bytes: u64, class: BigClass) -> impl Iterator<Item = Vec<u8>> + use<> {
    let block = |kind: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":{kind}"#).into_bytes()
    };
    match class {
        BigClass::Image | BigClass::Resource => {
            // 48 bytes of a pattern are 64 base64 characters; the rest is encoded (and padded)
            // after the whole ones.
            use base64::Engine;
            let pattern: Vec<u8> = (0..48u8)
                .map(|k| k.wrapping_mul(37).wrapping_add(11))
                .collect();
            let encode = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
            let (head, end) = if class == BigClass::Image {
                (
                    block(r#""image","mimeType":"image/png","data":""#),
                    r#""}]}}"#,
                )
            } else {
                let resource = r#""resource","resource":{"uri":"file:///big.bin","mimeType":"application/octet-stream","blob":""#;
                (block(resource), r#""}}]}}"#)
            };
            let rest = encode(&pattern[..(bytes % 48) as usize]) + end;
            let unit = (64, encode(&pattern).into_bytes());
            repeat_units(head, vec![unit], bytes / 48 * 64, rest.into_bytes())
        }
        _ => {
            let units = class
                .units()
                .into_iter()
                .map(|(text, json)| (text.len() as u64, json.as_bytes().to_vec()));
            repeat_units(
                block(r#""text","text":""#),
                units.collect(),
                bytes,
                br#""}]}}"#.to_vec(),
            )
        }
    }
}

/// `head`, then the units' JSON in turn (each unit: how many bytes it counts for, and its
/// bytes) until they count for `size` (the last ones made up with `x`), then `tail`; in pieces
/// of about 64 KiB.
pub(super) fn repeat_units(
    head: Vec<u8>,
    units: Vec<(u64, Vec<u8>)>,
    size: u64,
    tail: Vec<u8>,
) -> impl Iterator<Item = Vec<u8>> + use<> {
    // Whole cycles of the units, about 4 KiB of JSON, copied at once while a cycle starts and
    // the block's text fits: the same bytes as unit by unit, at memcpy speed.
    let cycle: Vec<u8> = units.iter().flat_map(|u| u.1.iter().copied()).collect();
    let reps = (4096 / cycle.len()).max(1);
    let block = cycle.repeat(reps);
    let block_size = reps as u64 * units.iter().map(|u| u.0).sum::<u64>();
    let mut head = Some(head);
    let mut left = size;
    let mut next_unit = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut buf = head.take().unwrap_or_default();
        while buf.len() < 1 << 16 {
            if left == 0 {
                buf.extend_from_slice(&tail);
                done = true;
                break;
            }
            if next_unit % units.len() == 0 && left >= block_size {
                buf.extend_from_slice(&block);
                left -= block_size;
                next_unit += reps * units.len();
                continue;
            }
            let (counts, json) = &units[next_unit % units.len()];
            if *counts > left {
                // Fill the tail with one-byte characters so the total is exact.
                buf.resize(buf.len() + left as usize, b'x');
                left = 0;
                continue;
            }
            buf.extend_from_slice(json);
            left -= counts;
            next_unit += 1;
        }
        Some(buf)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agenvoy_mcp::unstable::render_reference;

    /// What the client renders of `big`'s answer for `bytes` and `class`.
    fn rendered(bytes: u64, class: BigClass) -> String {
        let message: Vec<u8> = big_message(&Id::Number(7), bytes, class)
            .flatten()
            .collect();
        let rendered = render_reference(&message, usize::MAX).expect("a tool result");
        assert_eq!(rendered.total, rendered.text.len() as u64);
        rendered.text
    }

    #[test]
    fn big_writes_exactly_bytes_of_each_class() {
        for name in BigClass::NAMES {
            let class = BigClass::named(name).expect("a class");
            for bytes in [0, 1, 47, 48, 49, 100, 4095, 70_000] {
                let text = rendered(bytes, class);
                match class {
                    BigClass::Image => {
                        assert_eq!(text, format!("[image image/png, {bytes} bytes]"))
                    }
                    BigClass::Resource => assert_eq!(
                        text,
                        format!(
                            "[resource file:///big.bin application/octet-stream, {bytes} bytes]"
                        )
                    ),
                    _ => {
                        assert_eq!(text.len() as u64, bytes, "{name}");
                        // The units in turn, then `x`s.
                        let cycle: String = class.units().iter().map(|u| u.0).collect();
                        let whole = text.trim_end_matches('x');
                        assert!(
                            cycle
                                .repeat(whole.len() / cycle.len() + 1)
                                .starts_with(whole)
                        );
                    }
                }
            }
        }
    }
}
