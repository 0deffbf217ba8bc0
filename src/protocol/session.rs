//! The session: request ids and correlation, timeouts, cancellation, progress, and the
//! answers to what the server asks of the client.
//!
//! Many requests may be in flight at once. Each ends in its response, an error, or a timeout
//! (60 s unless the call says otherwise); a request that times out or that its caller drops
//! is cancelled through the transport (`notifications/cancelled`, or on stateless HTTP the
//! closing of its stream). When the connection ends, every request in flight fails at once
//! with the reason. In the stateless era every request carries the session's `_meta`
//! envelope, and results asking for input are answered and the request sent again.

use super::server_requests::{
    ElicitationAnswer, ElicitationFn, ElicitationRequest, SamplingAnswer, SamplingFn,
    SamplingRequest,
};
use super::trace::TraceContext;
use super::types::{Progress, Root};
use crate::error::{Error, ErrorKind, Result};
use crate::methods;
use crate::transport::{Inbound, Outbound, Transport};
use crate::wire::decode::{Decoded, ResultHead};
use crate::wire::jsonrpc::{self, ErrorObject, Id, Message, Notification, Response};
use crate::wire::render::{RenderError, Rendered};
use inbound::{handle_server_request, run_inbound};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{Notify, broadcast, mpsc};

mod inbound;
mod reply;

/// How long a request waits for its response unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest a request may run while progress keeps restarting its timeout, unless the
/// call says otherwise ([`RequestOptions::max_duration`]).
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

/// Most input requests one `input_required` result may carry (each is an embedder's handler
/// called: a form shown, a model asked).
pub const MAX_INPUT_REQUESTS: usize = 16;

/// Most rounds of `input_required` answered for one request.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// Most requests from the server answered at once. Past it a request is dropped, with one
/// warning: refusing it would need a write to a server that may not be reading.
pub const MAX_SERVER_REQUESTS: usize = 16;

/// Most JSON values (object keys included) in one request from the server. Its params are
/// parsed and kept while it waits for an answer (up to minutes, for a person), and a parsed
/// value costs tens of bytes whatever its text: `[0,0,...]` in a 4 MiB message would be about
/// 100 MiB. Past this a request is refused unparsed; a form or a conversation to sample holds
/// far fewer.
pub const MAX_REQUEST_VALUES: usize = 16_384;

/// Most bytes of the server's requests held at once while they wait for their answers (the
/// sizes of their messages): four of the largest message kept whole by default. Past it a
/// request is refused unparsed, so a server's questions cost at most about this much
/// whatever their number.
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// How long a cancellation or an answer to the server may take to write.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest excerpt of a message that is not JSON-RPC quoted in a warning.
const EXCERPT: usize = 200;

/// Receives the progress of one request.
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// What the embedder offers servers: roots, and the answers to their elicitation and
/// sampling requests. Capabilities announce exactly what is set here. Build it with
/// [`Handlers::default`] and the `with_*` setters:
///
/// ```
/// use agenvoy_mcp::{ElicitationAnswer, ElicitationRequest, Handlers};
/// use serde_json::json;
///
/// let handlers = Handlers::default().with_elicitation(|request: ElicitationRequest| async move {
///     println!("the server asks: {:?}", request.kind);
///     ElicitationAnswer::accept(json!({"name": "Ada"}))
/// });
/// assert_eq!(handlers.capabilities()["elicitation"], json!({"form": {}, "url": {}}));
/// ```
///
/// A handler gets its request typed (one that does not parse is the server's error, and the
/// handler never sees it); an elicitation's answer is checked against the form before it is
/// sent; an `Err` goes to the server as the client's JSON-RPC error.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Handlers {
    /// The roots to list at the start (changed later with
    /// [`Client::set_roots`](crate::Client::set_roots)); `None` announces no `roots`
    /// capability (`roots/list` still gets the roots set, or an empty list, as some servers
    /// ask regardless).
    pub roots: Option<Vec<Root>>,
    /// Answers `sampling/createMessage` ([`Handlers::with_sampling`]); `None` answers
    /// method-not-found.
    pub sampling: Option<SamplingFn>,
    /// Whether the sampling handler takes requests with `tools` (announced as
    /// `sampling.tools`).
    pub sampling_tools: bool,
    /// Answers `elicitation/create`, in form and URL mode ([`Handlers::with_elicitation`]);
    /// `None` answers method-not-found.
    pub elicitation: Option<ElicitationFn>,
    /// Whether the embedder uses skills ([`Handlers::with_skills`]): declares the skills
    /// extension (`io.modelcontextprotocol/skills`) in the client's capabilities.
    pub skills: bool,
    /// The MIME types of MCP Apps pages the embedder renders ([`Handlers::with_ui`]): when
    /// there are any, the UI extension (`io.modelcontextprotocol/ui`) is declared with them;
    /// when there are none, it is not, and servers fall back to text.
    pub ui_mime_types: Vec<String>,
}

impl Handlers {
    /// With the skills extension declared: the embedder lists and loads skills
    /// ([`Client::list_skills`](crate::Client::list_skills)).
    pub fn with_skills(mut self, skills: bool) -> Self {
        self.skills = skills;
        self
    }

    /// With the MCP Apps extension declared: the embedder renders pages of these MIME types
    /// ([`UI_MIME_TYPE`](crate::UI_MIME_TYPE) is the extension's), which servers may then
    /// name for their tools ([`Tool::ui`](crate::Tool::ui)). Only an embedder that renders
    /// them should: an empty list declares nothing.
    ///
    /// ```
    /// use agenvoy_mcp::{Handlers, UI_MIME_TYPE};
    /// use serde_json::json;
    ///
    /// let handlers = Handlers::default().with_ui([UI_MIME_TYPE]);
    /// assert_eq!(
    ///     handlers.capabilities()["extensions"]["io.modelcontextprotocol/ui"],
    ///     json!({"mimeTypes": ["text/html;profile=mcp-app"]})
    /// );
    /// ```
    pub fn with_ui<I, S>(mut self, mime_types: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.ui_mime_types = mime_types.into_iter().map(Into::into).collect();
        self
    }

    /// With `roots` listed at the start (announces the `roots` capability).
    pub fn with_roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// With `answer` answering the server's `elicitation/create` (a form to fill in, or a URL
    /// to visit): an async closure from the typed request to the answer, as
    /// `|request| async move { ElicitationAnswer::accept(json!({"name": "Ada"})) }`.
    pub fn with_elicitation<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitationAnswer, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |request| Box::pin(answer(request))));
        self
    }

    /// With `answer` answering the server's `sampling/createMessage`: an async closure from
    /// the typed request to the sampled message, as
    /// `|request| async move { Ok(SamplingAnswer::text("Hello", "my-model")) }`.
    pub fn with_sampling<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(SamplingRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<SamplingAnswer, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |request| Box::pin(answer(request))));
        self
    }

    /// Whether the sampling handler takes requests with `tools` (announced as
    /// `sampling.tools`; without it such a request is the server's error).
    pub fn with_sampling_tools(mut self, takes_tools: bool) -> Self {
        self.sampling_tools = takes_tools;
        self
    }

    /// The client capabilities these handlers support.
    pub fn capabilities(&self) -> Value {
        let mut caps = serde_json::Map::new();
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": true}));
        }
        if self.sampling.is_some() {
            let sampling = match self.sampling_tools {
                true => json!({"tools": {}}),
                false => json!({}),
            };
            caps.insert("sampling".into(), sampling);
        }
        if self.elicitation.is_some() {
            caps.insert("elicitation".into(), json!({"form": {}, "url": {}}));
        }
        let mut extensions = serde_json::Map::new();
        if self.skills {
            extensions.insert(super::skills::SKILLS_EXTENSION.into(), json!({}));
        }
        if !self.ui_mime_types.is_empty() {
            let declared = json!({"mimeTypes": self.ui_mime_types});
            extensions.insert(super::apps::UI_EXTENSION.into(), declared);
        }
        if !extensions.is_empty() {
            caps.insert("extensions".into(), Value::Object(extensions));
        }
        Value::Object(caps)
    }
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("roots", &self.roots)
            .field("sampling", &self.sampling.is_some())
            .field("sampling_tools", &self.sampling_tools)
            .field("elicitation", &self.elicitation.is_some())
            .field("skills", &self.skills)
            .field("ui_mime_types", &self.ui_mime_types)
            .finish()
    }
}

/// Options of one request. Build them with [`RequestOptions::default`] and the `with_*`
/// setters.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// How long to wait for the response; the session's default if `None`.
    pub timeout: Option<Duration>,
    /// Called for each progress notification; setting it asks the server for progress.
    pub on_progress: Option<ProgressCallback>,
    /// Whether each progress notification restarts the timeout.
    pub progress_resets_timeout: bool,
    /// The longest the request may run however much progress restarts its timeout;
    /// [`DEFAULT_MAX_DURATION`] (or the timeout, if longer) when `None`.
    pub max_duration: Option<Duration>,
    /// Extra headers for transports that have them (HTTP `Mcp-Param-*`).
    pub headers: Vec<(String, String)>,
    /// For a tool call: when to call the tool as a task (polled until it ends, its result
    /// fetched, cancelled when the call is dropped or times out).
    pub task: TaskMode,
    /// The caller's trace context, sent in the request's `_meta` (`traceparent`,
    /// `tracestate`, `baggage`; a member the request sets itself wins), in each round of it
    /// and, for a tool called as a task, in the task's polls too.
    pub trace: Option<TraceContext>,
}

impl RequestOptions {
    /// With the response waited for at most `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With each progress notification handed to `report` (which asks the server for
    /// progress).
    pub fn with_progress(mut self, report: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(report));
        self
    }

    /// With each progress notification restarting the timeout, or not.
    pub fn with_progress_resets_timeout(mut self, resets: bool) -> Self {
        self.progress_resets_timeout = resets;
        self
    }

    /// With the request running at most `max_duration`, however much progress restarts its
    /// timeout.
    pub fn with_max_duration(mut self, max_duration: Duration) -> Self {
        self.max_duration = Some(max_duration);
        self
    }

    /// With the extra header `name: value` (HTTP `Mcp-Param-*`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// With a tool call run as a task as `task` says.
    pub fn with_task(mut self, task: TaskMode) -> Self {
        self.task = task;
        self
    }

    /// With the trace context `trace` sent in the request's `_meta`.
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        self.trace = Some(trace);
        self
    }
}

/// When a tool call runs as a task ([`RequestOptions::task`]). In the initialize era
/// (2025-11-25) a tool is called as a task only when the server declares task-augmented
/// `tools/call` (`tasks.requests.tools.call`) and the tool allows it
/// (`execution.taskSupport`). In the 2026-07-28 revision's tasks extension the server
/// decides: any mode but `Never` declares the extension on the call, and `Never` leaves it
/// out (a server that must run the call as a task then refuses it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskMode {
    /// When the tool requires it (`taskSupport: "required"`).
    #[default]
    WhenRequired,
    /// Whenever the tool allows it (`"required"` or `"optional"`).
    WhenSupported,
    /// Never (a tool that requires a task then fails with the server's error).
    Never,
}

/// A response as it arrived.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// Its `result` or its `error`, parsed or only read on the way.
    outcome: Outcome,
    /// The message read as a tool result, rendered and capped while it arrived.
    pub rendered: Option<Result<Rendered, RenderError>>,
    /// Bytes of the message.
    pub len: u64,
}

/// A response's outcome as the session holds it.
#[derive(Debug, Clone)]
enum Outcome {
    /// The result or the error; `None` when the message was too large to keep whole (over
    /// [`Limits::max_message`](crate::transport::Limits::max_message)).
    Parsed(Option<Result<Value, ErrorObject>>),
    /// A result the decoder read on the way ([`Decoded::result`]): the message's bytes, parsed
    /// only when a caller wants the result as a value (a tool call never does); `None` when
    /// they were not kept (too large, or a tool result rendered past the cap).
    Read {
        raw: Option<Vec<u8>>,
        head: ResultHead,
    },
}

impl Reply {
    /// Whether the response carries a result (not an error).
    fn is_result(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Parsed(Some(Ok(_))) | Outcome::Read { .. }
        )
    }

    /// The result's `resultType`, when it is a string.
    pub(crate) fn result_type(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Parsed(Some(Ok(result))) => result.get("resultType")?.as_str(),
            Outcome::Read { head, .. } => head.result_type.as_deref(),
            _ => None,
        }
    }

    /// The server's `serverInfo` in the result's `_meta` (stateless servers send it there).
    fn server_info(&self) -> Option<&Value> {
        let meta = match &self.outcome {
            Outcome::Parsed(Some(Ok(result))) => result.get("_meta")?,
            Outcome::Read { head, .. } => head.meta.as_ref()?,
            _ => return None,
        };
        meta.get(SERVER_INFO_META)
    }

    /// The task a task-augmented request created (a `CreateTaskResult`), if the result is
    /// one: in 2025-11-25 the result's `task`; in the 2026-07-28 tasks extension the result
    /// itself, marked `resultType: "task"`. `None` for any other result (a server that
    /// carried the request out at once) or one too large to keep.
    pub fn created_task(&self) -> Option<super::items::Task> {
        use super::items::Task;
        #[derive(serde::Deserialize)]
        struct Created {
            task: Task,
        }
        #[derive(serde::Deserialize)]
        struct ResultOf<T> {
            result: T,
        }
        let flat = self.result_type() == Some("task");
        match &self.outcome {
            Outcome::Parsed(Some(Ok(result))) if flat => Task::deserialize(result).ok(),
            Outcome::Parsed(Some(Ok(result))) => Created::deserialize(result).ok().map(|c| c.task),
            Outcome::Read { raw: Some(raw), .. } if flat => {
                serde_json::from_slice::<ResultOf<Task>>(raw)
                    .ok()
                    .map(|r| r.result)
            }
            Outcome::Read { raw: Some(raw), .. } => {
                serde_json::from_slice::<ResultOf<Created>>(raw)
                    .ok()
                    .map(|r| r.result.task)
            }
            _ => None,
        }
    }
}

use serde::Deserialize as _;

impl Outcome {
    /// The result or the error (`None` when the message was too large to keep whole), the
    /// message parsed now if it was only read on the way; `Err` says why it is not a response.
    fn parse(self) -> std::result::Result<Option<Result<Value, ErrorObject>>, String> {
        match self {
            Outcome::Parsed(outcome) => Ok(outcome),
            Outcome::Read { raw: None, .. } => Ok(None),
            Outcome::Read { raw: Some(raw), .. } => match Message::parse(&raw) {
                Ok(Message::Response(r)) => Ok(Some(r.outcome)),
                Ok(_) => Err("the answer is not a response".into()),
                Err(e) => Err(e.to_string()),
            },
        }
    }
}

/// The member of a result's `_meta` where a stateless server puts its `serverInfo`.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

struct Pending {
    reply: reply::Filler,
    progress: Option<ProgressCallback>,
    activity: Option<Arc<Notify>>,
    /// Whether its progress is still wanted once it has its result (a task's progress goes
    /// on under the request's token): see [`ProgressWatch`].
    keep_progress: bool,
}

/// Where the progress of a request that has its result still goes (a task's), by token.
type Watcher = (Option<ProgressCallback>, Option<Arc<Notify>>);

struct Shared {
    server: String,
    transport: Arc<dyn Transport>,
    pending: Mutex<HashMap<i64, Pending>>,
    /// The progress of requests answered whose work goes on (tasks), while watched.
    watchers: Mutex<HashMap<i64, Watcher>>,
    next_id: AtomicI64,
    handlers: Handlers,
    /// The roots `roots/list` answers: the handlers', then what the embedder set.
    roots: Mutex<Option<Vec<Root>>>,
    notifications: broadcast::Sender<Notification>,
    closed: Mutex<Option<String>>,
    default_timeout: Duration,
    /// The `_meta` members every request carries in the stateless era.
    envelope: Mutex<Option<serde_json::Map<String, Value>>>,
    /// `notifications/tools/list_changed` received so far (cached lists compare it).
    tool_list_changes: AtomicU64,
    /// The `serverInfo` of the latest result that carried one.
    server_info: Mutex<Option<Value>>,
    /// Turns true when the connection ends: answers to the server still running stop.
    ending: tokio::sync::watch::Sender<bool>,
    /// One permit per server request being answered ([`MAX_SERVER_REQUESTS`]).
    answering: Arc<tokio::sync::Semaphore>,
    /// One permit per byte of the server requests being answered ([`MAX_REQUEST_BYTES`]).
    holding: Arc<tokio::sync::Semaphore>,
    /// Whether the warning about dropped server requests was given.
    warned_of_flood: std::sync::atomic::AtomicBool,
}

/// One session with one server over one transport. Cloning shares the session.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
}

impl Session {
    /// Starts a session over a transport and the channel it delivers on.
    pub(crate) fn new(
        server: &str,
        transport: Arc<dyn Transport>,
        inbound: mpsc::Receiver<Inbound>,
        handlers: Handlers,
        default_timeout: Duration,
    ) -> Session {
        let shared = Arc::new(Shared {
            server: server.to_string(),
            transport,
            pending: Mutex::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            roots: Mutex::new(handlers.roots.clone()),
            handlers,
            notifications: broadcast::channel(256).0,
            closed: Mutex::new(None),
            default_timeout,
            envelope: Mutex::new(None),
            tool_list_changes: AtomicU64::new(0),
            server_info: Mutex::new(None),
            ending: tokio::sync::watch::Sender::new(false),
            answering: Arc::new(tokio::sync::Semaphore::new(MAX_SERVER_REQUESTS)),
            holding: Arc::new(tokio::sync::Semaphore::new(MAX_REQUEST_BYTES)),
            warned_of_flood: std::sync::atomic::AtomicBool::new(false),
        });
        let shortcut = shared.transport.shortcut();
        if let Some(shortcut) = &shortcut {
            let weak = Arc::downgrade(&shared);
            shortcut.install(Box::new(move |messages| inbound::take(&weak, messages)));
        }
        tokio::spawn(run_inbound(Arc::downgrade(&shared), inbound, shortcut));
        Session { shared }
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.shared.server
    }

    /// The transport under the session.
    pub(crate) fn transport(&self) -> &Arc<dyn Transport> {
        &self.shared.transport
    }

    /// The handlers the embedder registered.
    pub(crate) fn handlers(&self) -> &Handlers {
        &self.shared.handlers
    }

    /// Replaces the roots `roots/list` answers from now on. The caller tells the server
    /// (`notifications/roots/list_changed`, initialize era).
    pub fn set_roots(&self, roots: Vec<Root>) {
        *self.shared.roots.lock().expect("roots lock") = Some(roots);
    }

    /// The roots `roots/list` answers now.
    pub fn roots(&self) -> Vec<Root> {
        let roots = self.shared.roots.lock().expect("roots lock");
        roots.clone().unwrap_or_default()
    }

    /// How long a request waits unless its options say otherwise.
    pub fn default_timeout(&self) -> Duration {
        self.shared.default_timeout
    }

    /// Reserves a request id whose progress is watched past its response: send the request
    /// with [`request_watched`](Self::request_watched); progress under its token then goes to
    /// `progress` (and wakes [`ProgressWatch::activity`]) until the watch is dropped.
    pub(crate) fn watch_progress(&self, progress: Option<ProgressCallback>) -> ProgressWatch {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        ProgressWatch {
            shared: Arc::downgrade(&self.shared),
            id,
            progress,
            activity: Arc::new(Notify::new()),
        }
    }

    /// Sends one request under a watch's id (one round: no `input_required` answered), its
    /// progress going to the watch, during the request and after its response.
    pub(crate) async fn request_watched(
        &self,
        method: &str,
        params: Option<&Value>,
        options: RequestOptions,
        watch: &ProgressWatch,
    ) -> Result<Reply> {
        let options = RequestOptions {
            on_progress: Some(watch.callback()),
            ..options
        };
        self.exchange(method, params, options, Some(watch.id), true)
            .await
    }

    /// Sends one request (one round: no `input_required` answered) whose answer the
    /// transport keeps whole up to `max_bytes`, past the render cap and the largest message
    /// otherwise kept (a UI resource's HTML, for a host to render), and returns its result.
    /// An answer past `max_bytes` is an error that gives its size.
    pub(crate) async fn request_whole(
        &self,
        method: &str,
        params: &Value,
        options: RequestOptions,
        max_bytes: usize,
    ) -> Result<Value> {
        let Some(whole) = self.shared.transport.whole_replies() else {
            let why = "this transport cannot keep an answer whole past its usual limits";
            return Err(self.error(ErrorKind::Usage(why.into())).during(method));
        };
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        // Registered before the request is sent, and for as long as it is awaited.
        let Some(_awaited) = whole.register(id, max_bytes) else {
            let why = format!(
                "{} answers are awaited whole from this server already; try again when one has come",
                crate::transport::MAX_WHOLE_REPLIES
            );
            return Err(self.error(ErrorKind::Limit(why)).during(method));
        };
        let reply = self
            .exchange(method, Some(params), options, Some(id), false)
            .await?;
        let Reply {
            outcome,
            rendered,
            len,
        } = reply;
        if let Outcome::Read { head, .. } = &outcome
            && !matches!(head.result_type.as_deref(), None | Some("complete"))
        {
            let why = format!(
                "the result has resultType {:?}, which this request does not take",
                head.result_type.as_deref().unwrap_or("")
            );
            return Err(self.error(ErrorKind::Protocol(why)).during(method));
        }
        let outcome = outcome.parse().map_err(|why| {
            let why = format!("the answer is not valid JSON-RPC: {why}");
            self.error(ErrorKind::Protocol(why)).during(method)
        })?;
        match outcome {
            Some(outcome) => {
                outcome.map_err(|e| self.error(ErrorKind::Rpc(Box::new(e))).during(method))
            }
            None => match rendered {
                Some(Err(RenderError::Rpc(e))) => {
                    Err(self.error(ErrorKind::Rpc(Box::new(e))).during(method))
                }
                _ => {
                    let why = format!(
                        "the answer is {len} bytes, more than the {max_bytes} this client reads of it (ask the server's maintainers for a smaller one)"
                    );
                    Err(self.error(ErrorKind::Protocol(why)).during(method))
                }
            },
        }
    }

    /// Notifications from the server (list changes, logs, ...), for anyone who subscribes.
    pub fn notifications(&self) -> broadcast::Receiver<Notification> {
        self.shared.notifications.subscribe()
    }

    /// Why the connection ended, once it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.shared.closed.lock().expect("closed lock").clone()
    }

    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(&self.shared.server, kind)
    }

    /// Sends a request and returns its result; a JSON-RPC error becomes [`ErrorKind::Rpc`].
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value> {
        let reply = self.request_reply(method, params.as_ref(), options).await?;
        let Reply {
            outcome,
            rendered,
            len,
        } = reply;
        let outcome = outcome.parse().map_err(|why| {
            let why = format!("the answer is not valid JSON-RPC: {why}");
            self.error(ErrorKind::Protocol(why)).during(method)
        })?;
        match outcome {
            Some(outcome) => {
                outcome.map_err(|e| self.error(ErrorKind::Rpc(Box::new(e))).during(method))
            }
            None => Err(self.unkept(method, rendered, len)),
        }
    }

    /// [`Session::request`] with the result read straight into `T` from the message's bytes,
    /// never built as a `Value` first (a page of a long list costs about its size), and the
    /// message's length in bytes.
    pub async fn request_as<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<(T, u64)> {
        #[derive(serde::Deserialize)]
        struct ResultOf<T> {
            result: T,
        }
        let reply = self.request_reply(method, params.as_ref(), options).await?;
        let invalid = |e: serde_json::Error| {
            self.error(ErrorKind::Protocol(format!("invalid result: {e}")))
                .during(method)
                .caused_by(e)
        };
        let Reply {
            outcome,
            rendered,
            len,
        } = reply;
        let result = match outcome {
            Outcome::Read { raw: Some(raw), .. } => serde_json::from_slice::<ResultOf<T>>(&raw)
                .map(|r| r.result)
                .map_err(invalid)?,
            Outcome::Parsed(Some(Ok(value))) => T::deserialize(value).map_err(invalid)?,
            Outcome::Parsed(Some(Err(e))) => {
                return Err(self.error(ErrorKind::Rpc(Box::new(e))).during(method));
            }
            Outcome::Parsed(None) | Outcome::Read { raw: None, .. } => {
                return Err(self.unkept(method, rendered, len));
            }
        };
        Ok((result, len))
    }

    /// The error of an answer this client did not keep whole: the server's JSON-RPC error if
    /// it was one, else that it was too large.
    fn unkept(
        &self,
        method: &str,
        rendered: Option<std::result::Result<Rendered, RenderError>>,
        len: u64,
    ) -> Error {
        match rendered {
            Some(Err(RenderError::Rpc(e))) => self.error(ErrorKind::Rpc(Box::new(e))).during(method),
            _ => self
                .error(ErrorKind::Protocol(format!(
                    "the answer is {len} bytes, more than this client keeps of one message: raise Limits::max_message, or Limits::output_cap for a result with content"
                )))
                .during(method),
        }
    }

    /// Sets the `_meta` members every request carries from now on (the stateless era's
    /// version, client info and capabilities); `None` sends requests as they are.
    pub(crate) fn set_envelope(&self, envelope: Option<serde_json::Map<String, Value>>) {
        *self.shared.envelope.lock().expect("envelope lock") = envelope;
    }

    /// Sets one `_meta` member every request carries from now on, in the stateless era
    /// (`None` removes it); in the initialize era, which has no envelope, it does nothing and
    /// says so with `false`.
    pub(crate) fn set_envelope_member(&self, key: &str, value: Option<Value>) -> bool {
        let mut envelope = self.shared.envelope.lock().expect("envelope lock");
        let Some(envelope) = envelope.as_mut() else {
            return false;
        };
        match value {
            Some(value) => envelope.insert(key.to_string(), value),
            None => envelope.remove(key),
        };
        true
    }

    /// How many `notifications/tools/list_changed` the server has sent.
    pub(crate) fn tool_list_changes(&self) -> u64 {
        self.shared.tool_list_changes.load(Ordering::Relaxed)
    }

    /// Sends a request and returns the whole reply, error or not. In the stateless era a
    /// result asking for input (`resultType: "input_required"`) is answered through the
    /// embedder's handlers and the request sent again, at most [`MAX_INPUT_ROUNDS`] times.
    pub(crate) async fn request_reply(
        &self,
        method: &str,
        params: Option<&Value>,
        options: RequestOptions,
    ) -> Result<Reply> {
        // The params of the next round, once a result asked for input.
        let mut next: Option<Value> = None;
        for _ in 0..MAX_INPUT_ROUNDS {
            let sent = next.as_ref().or(params);
            let reply = self
                .exchange(method, sent, options.clone(), None, false)
                .await?;
            if !reply.is_result() {
                return Ok(reply);
            }
            if let Some(info) = reply.server_info() {
                *self.shared.server_info.lock().expect("server info lock") = Some(info.clone());
            }
            match reply.result_type() {
                None | Some("complete") => return Ok(reply),
                // The tasks extension's `CreateTaskResult`: the caller polls the task.
                Some("task") if method == methods::TOOLS_CALL => return Ok(reply),
                Some("input_required") => {
                    // Its questions wait for answers (up to minutes): measured before they
                    // are parsed and kept, as a server's requests are (by their bytes when
                    // they were kept, else by the parsed tree).
                    let raw_values = match &reply.outcome {
                        Outcome::Read { raw: Some(raw), .. } => jsonrpc::count_values(raw),
                        _ => None,
                    };
                    let too_many = || {
                        let why = format!(
                            "the result asking for input holds more than {MAX_REQUEST_VALUES} JSON values, the most this client reads of a request"
                        );
                        Err(self.error(ErrorKind::Protocol(why)).during(method))
                    };
                    if raw_values.is_some_and(|n| n > MAX_REQUEST_VALUES) {
                        return too_many();
                    }
                    let mut result = match reply.outcome.parse() {
                        Ok(Some(Ok(Value::Object(result)))) => result,
                        _ => {
                            let why = "the result asking for input is not valid JSON-RPC";
                            return Err(self.error(ErrorKind::Protocol(why.into())).during(method));
                        }
                    };
                    if raw_values.is_none()
                        && result.get("inputRequests").map_or(0, jsonrpc::count_tree)
                            > MAX_REQUEST_VALUES
                    {
                        return too_many();
                    }
                    let mut round = match next.take().or_else(|| params.cloned()) {
                        Some(Value::Object(map)) => map,
                        _ => serde_json::Map::new(),
                    };
                    round.remove("inputResponses");
                    round.remove("requestState");
                    // Only the questions and the state are kept while the answers come.
                    let requests = result.remove("inputRequests");
                    if let Some(state) = result.remove("requestState") {
                        round.insert("requestState".into(), state);
                    }
                    drop(result);
                    if let Some(Value::Object(requests)) = requests {
                        let responses = self.answer_input_requests(method, &requests).await?;
                        round.insert("inputResponses".into(), Value::Object(responses));
                    }
                    next = Some(Value::Object(round));
                }
                Some(other) => {
                    let why = format!(
                        "the result has resultType {other:?}, which this client does not know"
                    );
                    return Err(self.error(ErrorKind::Protocol(why)).during(method));
                }
            }
        }
        let why = format!("the server still asked for input after {MAX_INPUT_ROUNDS} rounds");
        Err(self.error(ErrorKind::Protocol(why)).during(method))
    }

    /// Answers a result's `inputRequests` (elicitation, sampling, roots) with the embedder's
    /// handlers, key by key.
    pub(crate) async fn answer_input_requests(
        &self,
        method: &str,
        requests: &serde_json::Map<String, Value>,
    ) -> Result<serde_json::Map<String, Value>> {
        if requests.len() > MAX_INPUT_REQUESTS {
            let why = format!(
                "the server asked for {} inputs at once; this client answers at most {MAX_INPUT_REQUESTS}",
                requests.len()
            );
            return Err(self.error(ErrorKind::Protocol(why)).during(method));
        }
        let mut responses = serde_json::Map::new();
        for (key, request) in requests {
            let asked = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            let roots = self.roots();
            match handle_server_request(&self.shared.handlers, roots, asked, params).await {
                Ok(answer) => {
                    responses.insert(key.clone(), answer);
                }
                Err(e) => {
                    let why = format!(
                        "the server asked for {asked:?}, which this client cannot answer: {}",
                        e.message
                    );
                    return Err(self.error(ErrorKind::Protocol(why)).during(method));
                }
            }
        }
        Ok(responses)
    }

    /// One request and its response, under `id` if given (a new one if not);
    /// `watched`: `id` is a [`ProgressWatch`]'s, whose progress goes on past the response.
    async fn exchange(
        &self,
        method: &str,
        params: Option<&Value>,
        options: RequestOptions,
        id: Option<i64>,
        watched: bool,
    ) -> Result<Reply> {
        if let Some(reason) = self.closed_reason() {
            return Err(self.error(ErrorKind::Closed(reason)).during(method));
        }
        let id = id.unwrap_or_else(|| self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let envelope = self.shared.envelope.lock().expect("envelope lock").clone();
        // The params are copied only when `_meta` is added to them.
        let mut with_meta = None;
        if options.on_progress.is_some() || envelope.is_some() || options.trace.is_some() {
            let p = with_meta.insert(params.cloned().unwrap_or_else(|| json!({})));
            if let Some(obj) = p.as_object_mut() {
                let meta = obj.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    // A member the request sets itself (a call's own capabilities) wins.
                    for (key, value) in envelope.into_iter().flatten() {
                        meta.entry(key).or_insert(value);
                    }
                    for (key, value) in options.trace.iter().flat_map(|t| t.meta_members()) {
                        meta.entry(key).or_insert(value);
                    }
                    if options.on_progress.is_some() {
                        meta.insert("progressToken".into(), json!(id));
                    }
                }
            }
        }
        let activity = options
            .progress_resets_timeout
            .then(|| Arc::new(Notify::new()));
        let (tx, mut rx) = reply::slot();
        self.shared.pending.lock().expect("pending lock").insert(
            id,
            Pending {
                reply: tx,
                progress: options.on_progress.clone(),
                activity: activity.clone(),
                keep_progress: watched,
            },
        );
        let mut guard = CancelGuard {
            shared: Arc::downgrade(&self.shared),
            id,
            cancel: method != methods::INITIALIZE,
            reason: "the caller stopped waiting",
        };
        let sent = with_meta.as_ref().or(params);
        let headers = super::stateless::request_headers(method, sent, options.headers.clone());
        let outbound = Outbound::request(Id::Number(id), method, sent, headers);
        let timeout = options.timeout.unwrap_or(self.shared.default_timeout);
        let started = tokio::time::Instant::now();
        let mut deadline = started + timeout;
        let latest = started
            + options
                .max_duration
                .unwrap_or(DEFAULT_MAX_DURATION)
                .max(timeout);
        let timed_out = |guard: &mut CancelGuard, deadline: tokio::time::Instant| {
            guard.reason = "timed out";
            self.error(ErrorKind::Timeout(deadline - started))
                .during(method)
        };
        // The write is part of the request: a server that stops reading cannot hold it
        // past its deadline.
        let sent = self.shared.transport.send(outbound);
        match tokio::time::timeout_at(deadline, sent).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                guard.disarm();
                return Err(e.during(method));
            }
            Err(_) => return Err(timed_out(&mut guard, deadline)),
        }
        loop {
            let progressed = async {
                match &activity {
                    Some(n) => n.notified().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                reply = &mut rx => {
                    guard.disarm();
                    return match reply {
                        Ok(Ok(reply)) => Ok(reply),
                        Ok(Err(e)) => Err(e.during(method)),
                        // The request was written, then the connection ended. A handshake
                        // carries nothing out, so it may be sent again; any other request may
                        // have been.
                        Err(_) => {
                            let reason = self.closed_reason().unwrap_or_else(|| "the session ended".into());
                            let kind = if matches!(method, methods::INITIALIZE | methods::SERVER_DISCOVER) {
                                ErrorKind::Closed(reason)
                            } else {
                                ErrorKind::Interrupted(reason)
                            };
                            Err(self.error(kind).during(method))
                        }
                    };
                }
                _ = tokio::time::sleep_until(deadline) => return Err(timed_out(&mut guard, deadline)),
                _ = progressed => deadline = (tokio::time::Instant::now() + timeout).min(latest),
            }
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        let message = Message::Notification(Notification {
            method: method.to_string(),
            params,
        });
        self.shared
            .transport
            .send(Outbound::new(&message))
            .await
            .map_err(|e| e.during(method))
    }
}

/// The progress of one request followed past its response ([`Session::watch_progress`]):
/// a task's. Dropping it stops the following.
pub(crate) struct ProgressWatch {
    shared: Weak<Shared>,
    id: i64,
    progress: Option<ProgressCallback>,
    activity: Arc<Notify>,
}

impl ProgressWatch {
    /// Woken at each progress notification.
    pub fn activity(&self) -> &Arc<Notify> {
        &self.activity
    }

    /// Reports what is not a progress notification, a task's new status and its message,
    /// to the embedder's callback: no progress number, as none was sent.
    pub fn report(&self, status: &str, message: Option<&str>) {
        if let Some(progress) = &self.progress {
            progress(Progress {
                progress: None,
                total: None,
                status: Some(status.to_string()),
                message: message.map(str::to_string),
            });
        }
    }

    /// The callback the request's progress goes to: the embedder's, and a wake of
    /// [`activity`](Self::activity).
    pub(crate) fn callback(&self) -> ProgressCallback {
        let (progress, activity) = (self.progress.clone(), self.activity.clone());
        Arc::new(move |p| {
            activity.notify_one();
            if let Some(progress) = &progress {
                progress(p);
            }
        })
    }
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared
                .watchers
                .lock()
                .expect("watchers lock")
                .remove(&self.id);
        }
    }
}

/// Cancels a request that did not complete: forgets it and tells the server, unless disarmed.
struct CancelGuard {
    shared: Weak<Shared>,
    id: i64,
    cancel: bool,
    reason: &'static str,
}

impl CancelGuard {
    fn disarm(&mut self) {
        self.shared = Weak::new();
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let was_pending = shared
            .pending
            .lock()
            .expect("pending lock")
            .remove(&self.id)
            .is_some();
        let open = shared.closed.lock().expect("closed lock").is_none();
        if !(was_pending && open && self.cancel) {
            return;
        }
        let (id, reason) = (self.id, self.reason);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let notice = Outbound::new(&super::cancelled(id, reason));
                let cancel = shared.transport.cancel(id, notice);
                let _ = tokio::time::timeout(WRITE_TIMEOUT, cancel).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_announce_only_what_is_registered() {
        assert_eq!(Handlers::default().capabilities(), json!({}));
        let roots = Handlers::default().with_roots(vec![]);
        assert_eq!(
            roots.capabilities(),
            json!({"roots": {"listChanged": true}})
        );
        let all = Handlers::default()
            .with_roots(vec![])
            .with_sampling(|_| async { Ok(SamplingAnswer::text("hi", "m")) })
            .with_sampling_tools(true)
            .with_elicitation(|_| async { Ok(ElicitationAnswer::Decline) });
        assert_eq!(
            all.capabilities(),
            json!({"roots": {"listChanged": true}, "sampling": {"tools": {}},
                   "elicitation": {"form": {}, "url": {}}})
        );
        assert_eq!(
            Handlers::default().with_skills(true).capabilities(),
            json!({"extensions": {"io.modelcontextprotocol/skills": {}}})
        );
        assert_eq!(
            Handlers::default()
                .with_ui(Vec::<String>::new())
                .capabilities(),
            json!({}),
            "no MIME type rendered, nothing declared"
        );
        assert_eq!(
            Handlers::default()
                .with_skills(true)
                .with_ui(["text/html;profile=mcp-app"])
                .capabilities(),
            json!({"extensions": {
                "io.modelcontextprotocol/skills": {},
                "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
            }})
        );
    }
}
