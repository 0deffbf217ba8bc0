//! [`Client`]: one connected MCP server, the embedder's main handle.

use crate::error::{Error, ErrorKind, Result};
use crate::methods;
use crate::protocol::era::{self, ClientInfo, EraPreference};
use crate::protocol::items::{
    Completion, CompletionRef, LogLevel, Prompt, PromptContents, Resource, ResourceOutput,
    ResourceTemplate, ServerNotification, Task, TaskStatus,
};
use crate::protocol::session::{
    DEFAULT_MAX_DURATION, DEFAULT_TIMEOUT, Handlers, ProgressWatch, Reply, RequestOptions, Session,
    TaskMode,
};
use crate::protocol::skills::{self, MAX_SKILL_PAGES, SKILLS_EXTENSION, Skill, SkillFileContent};
use crate::protocol::stateless::{HeaderParam, header_params_of};
use crate::protocol::types::Era;
use crate::protocol::types::{ServerDetails, TaskSupport, Tool, ToolOutput};
use crate::transport::{DEFAULT_MAX_MESSAGE, Inbound, Limits, Transport};
use crate::wire::jsonrpc::{ErrorObject, Notification};
use crate::wire::render::{DEFAULT_CAP, RenderError};
use serde::Deserialize as _;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;
use tokio::sync::{broadcast, mpsc};

mod tasks;

/// How long one `subscriptions/listen` stays open before it is opened anew.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Most pages of one list (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`) read before giving up on a server that never stops paging.
pub const MAX_TOOL_PAGES: usize = 1000;

/// The bound on all that is kept of one server's lists: its tools, resources, resource
/// templates and prompts together (one budget, each list counted as it was last read),
/// however it pages them. A listing that would pass it is refused (nothing of it kept), so
/// that one server cannot exhaust the host's memory. The defaults are far above any real server's (a large one lists about a
/// hundred tools in under a megabyte). Build it with [`ListLimits::default`] and the `with_*`
/// setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListLimits {
    /// Most entries (tools, resources, templates and prompts together) kept of one server.
    pub max_items: usize,
    /// Most bytes of the list pages (their messages as sent) kept of one server.
    pub max_bytes: u64,
}

impl Default for ListLimits {
    fn default() -> Self {
        ListLimits {
            max_items: 10_000,
            max_bytes: 8 << 20,
        }
    }
}

/// How a client connects and behaves. Build it with [`ClientOptions::default`] and the
/// `with_*` setters:
///
/// ```
/// use agenvoy_mcp::{ClientOptions, EraPreference};
/// use std::time::Duration;
///
/// let options = ClientOptions::default()
///     .with_timeout(Duration::from_secs(20))
///     .with_era(EraPreference::Handshake);
/// assert_eq!(options.timeout, Duration::from_secs(20));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Who the client says it is.
    pub client_info: ClientInfo,
    /// What the embedder offers servers (roots, sampling, elicitation).
    pub handlers: Handlers,
    /// Default timeout of every request (a call's own [`RequestOptions::timeout`] wins), from
    /// its first byte to its last, over stdio and HTTP alike.
    pub timeout: Duration,
    /// Timeout of each request of the handshake (`server/discover`, `initialize`); `None`:
    /// [`timeout`](Self::timeout).
    pub startup_timeout: Option<Duration>,
    /// Cap on the rendered output of one tool call or resource read, in bytes.
    pub output_cap: usize,
    /// Largest message kept whole; larger ones are only rendered (tool results, resource
    /// reads) or refused. A result whose text passes `output_cap` is only rendered too.
    pub max_message: usize,
    /// Which protocol era to speak: found out by default.
    pub era: EraPreference,
    /// The bound on all that is kept of the server's lists.
    pub list_limits: ListLimits,
}

impl ListLimits {
    /// With at most `max_items` entries kept of one server.
    pub fn with_max_items(mut self, max_items: usize) -> Self {
        self.max_items = max_items;
        self
    }

    /// With at most `max_bytes` bytes of list pages kept of one server.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

impl ClientOptions {
    /// With the client saying it is `info`.
    pub fn with_client_info(mut self, info: ClientInfo) -> Self {
        self.client_info = info;
        self
    }

    /// With `handlers` offered to servers (roots, sampling, elicitation).
    pub fn with_handlers(mut self, handlers: Handlers) -> Self {
        self.handlers = handlers;
        self
    }

    /// With every request's default timeout `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// With each request of the handshake bounded by `timeout`.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// With the rendered output of one tool call or resource read capped at `cap` bytes.
    pub fn with_output_cap(mut self, cap: usize) -> Self {
        self.output_cap = cap;
        self
    }

    /// With messages of up to `max_message` bytes kept whole.
    pub fn with_max_message(mut self, max_message: usize) -> Self {
        self.max_message = max_message;
        self
    }

    /// With the protocol era chosen as `era` says.
    pub fn with_era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// With what is kept of the server's lists bounded by `limits`.
    pub fn with_list_limits(mut self, limits: ListLimits) -> Self {
        self.list_limits = limits;
        self
    }

    /// What the transport keeps of each incoming message.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            output_cap: self.output_cap,
            max_message: self.max_message,
            whole: Default::default(),
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: ClientInfo::default(),
            handlers: Handlers::default(),
            timeout: DEFAULT_TIMEOUT,
            startup_timeout: None,
            output_cap: DEFAULT_CAP,
            max_message: DEFAULT_MAX_MESSAGE,
            era: EraPreference::Auto,
            list_limits: ListLimits::default(),
        }
    }
}

/// A tool list kept while the server says it stays fresh.
struct ToolCache {
    tools: Vec<Tool>,
    fresh_until: Instant,
    /// The server's `ttlMs` for it (0: none).
    ttl: Duration,
    /// The session's count of list-changed notifications when the list was read.
    changes: u64,
    /// The authorization context it was read under, unless every page said
    /// `cacheScope: "public"` (`None`): a private list is reused only within it.
    private_to: Option<u64>,
}

/// How long a list may be reused, and by whom: what its pages' caching hints say together.
struct Freshness {
    /// The shortest `ttlMs` of the pages (absent, negative or not an integer: 0).
    ttl_ms: u64,
    /// Whether every page said `cacheScope: "public"` (absent counts as private).
    public: bool,
}

/// How long the tool list as last read may be kept beyond the session, as the server's
/// caching hints (`ttlMs`, `cacheScope`) say: what an on-demand server's kept catalog
/// follows ([`Client::tool_list_keeping`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListKeeping {
    /// It gave no `ttlMs`: until the server is connected again.
    Unbounded,
    /// For its `ttlMs`.
    For(Duration),
    /// Not at all: it was read under an access token and not marked `cacheScope: "public"`.
    PrivateToLogin,
}

/// One connected MCP server.
pub struct Client {
    session: Session,
    details: ServerDetails,
    tools: Mutex<Option<ToolCache>>,
    /// Per tool, its `x-mcp-header` names and the argument path each mirrors.
    header_params: Mutex<HashMap<String, Vec<HeaderParam>>>,
    list_limits: ListLimits,
    /// What each list took of [`ListLimits`] when it was last read: entries and bytes.
    list_usage: Mutex<HashMap<&'static str, (usize, u64)>>,
    /// Cap on the rendering of a result held whole (an ended task's inlined result).
    output_cap: usize,
}

/// One page of a list, read straight from the message's bytes.
trait Page: serde::de::DeserializeOwned {
    /// What the list holds.
    type Item;
    /// The method that lists it.
    const METHOD: &'static str;
    /// What an error calls its entries.
    const NOUN: &'static str;
    /// The entries, `nextCursor`, `ttlMs` and `cacheScope`.
    fn split(self) -> (Vec<Self::Item>, Option<Value>, Option<Value>, Option<Value>);
}

macro_rules! page {
    ($page:ident, $item:ty, $key:literal, $method:expr, $noun:literal) => {
        #[doc = concat!("One page of a list of ", $noun, ".")]
        #[derive(serde::Deserialize)]
        struct $page {
            #[serde(rename = $key)]
            items: Vec<$item>,
            #[serde(rename = "nextCursor", default)]
            next_cursor: Option<Value>,
            #[serde(rename = "ttlMs", default)]
            ttl_ms: Option<Value>,
            #[serde(rename = "cacheScope", default)]
            cache_scope: Option<Value>,
        }
        impl Page for $page {
            type Item = $item;
            const METHOD: &'static str = $method;
            const NOUN: &'static str = $noun;
            fn split(self) -> (Vec<$item>, Option<Value>, Option<Value>, Option<Value>) {
                (self.items, self.next_cursor, self.ttl_ms, self.cache_scope)
            }
        }
    };
}

page!(ToolsPage, Tool, "tools", methods::TOOLS_LIST, "tools");
page!(
    ResourcesPage,
    Resource,
    "resources",
    methods::RESOURCES_LIST,
    "resources"
);
page!(
    TemplatesPage,
    ResourceTemplate,
    "resourceTemplates",
    methods::RESOURCES_TEMPLATES_LIST,
    "resource templates"
);
page!(
    PromptsPage,
    Prompt,
    "prompts",
    methods::PROMPTS_LIST,
    "prompts"
);
page!(TasksPage, Task, "tasks", methods::TASKS_LIST, "tasks");
page!(SkillsPage, Skill, "skills", methods::SKILLS_LIST, "skills");

/// Typed notifications of one server ([`Client::server_notifications`]).
pub struct ServerNotifications(broadcast::Receiver<Notification>);

impl ServerNotifications {
    /// The next notification; `Err(Lagged(n))` when `n` were missed (the channel keeps the
    /// latest 256), `Err(Closed)` once the client is gone.
    pub async fn recv(
        &mut self,
    ) -> std::result::Result<ServerNotification, broadcast::error::RecvError> {
        self.0
            .recv()
            .await
            .map(ServerNotification::from_notification)
    }
}

impl Client {
    /// Starts a stdio server and connects to it.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(
        name: &str,
        config: &crate::transport::stdio::StdioConfig,
        options: ClientOptions,
    ) -> Result<Client> {
        let (transport, inbound) =
            crate::transport::stdio::StdioTransport::spawn(name, config, options.limits())?;
        Client::connect(name, Arc::new(transport), inbound, options).await
    }

    /// Connects to a streamable HTTP server (or a 2024-11-05 HTTP+SSE one, found by fallback).
    #[cfg(feature = "http")]
    pub async fn connect_http(
        name: &str,
        config: &crate::transport::http::HttpConfig,
        options: ClientOptions,
    ) -> Result<Client> {
        let (transport, inbound) =
            crate::transport::http::HttpTransport::new(name, config, options.limits())?;
        Client::connect(name, Arc::new(transport), inbound, options).await
    }

    /// Connects over any transport: starts the session, and closes the transport if that fails.
    pub(crate) async fn connect(
        name: &str,
        transport: Arc<dyn Transport>,
        inbound: mpsc::Receiver<Inbound>,
        options: ClientOptions,
    ) -> Result<Client> {
        let session = Session::new(
            name,
            transport.clone(),
            inbound,
            options.handlers,
            options.timeout,
        );
        let startup = options.startup_timeout.unwrap_or(options.timeout);
        match era::establish(&session, &options.client_info, startup, options.era).await {
            Ok(details) => Ok(Client {
                session,
                details,
                tools: Mutex::new(None),
                header_params: Mutex::new(HashMap::new()),
                list_limits: options.list_limits,
                list_usage: Mutex::new(HashMap::new()),
                output_cap: options.output_cap,
            }),
            Err(e) => {
                transport.close().await;
                Err(e)
            }
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        self.session.server()
    }

    /// What the server said about itself when the session started.
    pub fn details(&self) -> &ServerDetails {
        &self.details
    }

    /// The session, for requests this type has no method for.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Notifications from the server (e.g. `notifications/tools/list_changed`), as they came;
    /// [`server_notifications`](Self::server_notifications) gives them typed.
    pub fn notifications(&self) -> broadcast::Receiver<Notification> {
        self.session.notifications()
    }

    /// Notifications from the server, typed: resource updates, list changes, log messages.
    pub fn server_notifications(&self) -> ServerNotifications {
        ServerNotifications(self.session.notifications())
    }

    /// The transport's short name: `stdio`, `http`, or `http+sse` (the 2024-11-05 fallback).
    pub fn transport_kind(&self) -> &'static str {
        self.session.transport().kind()
    }

    /// The stdio server's process id (also its process group); `None` over HTTP.
    pub fn server_pid(&self) -> Option<u32> {
        self.session.transport().pid()
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.session.closed_reason().is_some()
    }

    fn error(&self, method: &str, kind: ErrorKind) -> Error {
        Error::new(self.name(), kind).during(method)
    }

    /// Lists every tool, following `nextCursor` to the end. A repeated or empty cursor stops
    /// the listing with a warning, as does reaching [`MAX_TOOL_PAGES`] pages. A list past
    /// what [`ClientOptions::list_limits`] leaves beside the server's other lists (resources,
    /// templates, prompts, as last read), whatever its pages, is an error, and nothing of it
    /// is kept.
    ///
    /// A list the server marked cacheable (`ttlMs`) is served from memory until it goes stale
    /// or the server says the list changed, and one it did not mark `cacheScope: "public"`
    /// on every page only within the authorization context it was read in (a new access
    /// token reads it again). Over HTTP in the stateless era, a tool whose
    /// `x-mcp-header` annotations are invalid is left out with a warning.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let changes = self.session.tool_list_changes();
        let context = self.session.transport().auth_context();
        if let Some(cache) = self.tools.lock().expect("tools lock").as_ref()
            && cache.changes == changes
            && Instant::now() < cache.fresh_until
            && cache.private_to.is_none_or(|c| c == context)
        {
            return Ok(cache.tools.clone());
        }
        let (mut tools, freshness) = self.list_all::<ToolsPage>().await?;
        let checks_headers =
            self.details.era == Era::Stateless && self.session.transport().kind() == "http";
        let mut header_params = HashMap::new();
        tools.retain(|tool| {
            if !checks_headers {
                return true;
            }
            match header_params_of(&tool.input_schema_value()) {
                Ok(params) => {
                    header_params.insert(tool.name.clone(), params);
                    true
                }
                Err(why) => {
                    tracing::warn!(server = %self.name(), tool = %tool.name, "leaving out the tool: its x-mcp-header annotation is invalid: {why}");
                    false
                }
            }
        });
        *self.header_params.lock().expect("header params lock") = header_params;
        let fresh_until = Instant::now() + Duration::from_millis(freshness.ttl_ms);
        // The context of the exchanges that read it (the last one's, as they ended).
        let context = self.session.transport().auth_context();
        *self.tools.lock().expect("tools lock") = Some(ToolCache {
            tools: tools.clone(),
            fresh_until,
            ttl: Duration::from_millis(freshness.ttl_ms),
            changes,
            private_to: (!freshness.public).then_some(context),
        });
        Ok(tools)
    }

    /// How the tool list as last read may be kept beyond the session (see [`ListKeeping`]);
    /// [`ListKeeping::Unbounded`] before the first [`list_tools`](Self::list_tools).
    pub fn tool_list_keeping(&self) -> ListKeeping {
        let tools = self.tools.lock().expect("tools lock");
        let Some(cache) = tools.as_ref() else {
            return ListKeeping::Unbounded;
        };
        // An exchange without credentials has context 0: private to no one.
        if cache.private_to.is_some_and(|context| context != 0) {
            return ListKeeping::PrivateToLogin;
        }
        match cache.ttl {
            Duration::ZERO => ListKeeping::Unbounded,
            ttl => ListKeeping::For(ttl),
        }
    }

    /// Reads every page of one list, following `nextCursor` to the end, within what
    /// [`ListLimits`] leaves beside the server's other lists; returns the entries and the
    /// pages' caching hints together.
    async fn list_all<P: Page>(&self) -> Result<(Vec<P::Item>, Freshness)> {
        let (others_items, others_bytes) = {
            let usage = self.list_usage.lock().expect("list usage lock");
            usage
                .iter()
                .filter(|(method, _)| **method != P::METHOD)
                .fold((0usize, 0u64), |(n, b), (_, (i, j))| (n + i, b + j))
        };
        let mut items = Vec::new();
        let mut freshness = Freshness {
            ttl_ms: u64::MAX,
            public: true,
        };
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let limits = self.list_limits;
        let mut bytes = 0u64;
        for page_number in 0..=MAX_TOOL_PAGES {
            if page_number == MAX_TOOL_PAGES {
                tracing::warn!(server = %self.name(), "{}: stopping after {MAX_TOOL_PAGES} pages", P::METHOD);
                break;
            }
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let (page, len) = self
                .session
                .request_as::<P>(P::METHOD, params, RequestOptions::default())
                .await?;
            let (page_items, next_cursor, ttl_ms, scope) = page.split();
            bytes += len;
            let count = items.len() + page_items.len();
            if others_items + count > limits.max_items || others_bytes + bytes > limits.max_bytes {
                // Nothing of the list is kept: a partial list would look whole to the model.
                let why = format!(
                    "the server lists more than this client keeps of one server ({} {noun}, {} bytes of list pages; it sent {count} {noun} in {bytes} bytes so far, beside {others_items} entries in {others_bytes} bytes of its other lists): ask its maintainers, or raise ClientOptions::list_limits for a server you trust",
                    limits.max_items,
                    limits.max_bytes,
                    noun = P::NOUN,
                );
                return Err(self.error(P::METHOD, ErrorKind::Protocol(why)));
            }
            items.extend(page_items);
            let page_ttl = ttl_ms.as_ref().and_then(Value::as_u64).unwrap_or(0);
            freshness.ttl_ms = freshness.ttl_ms.min(page_ttl);
            freshness.public &= scope.as_ref().and_then(Value::as_str) == Some("public");
            match next_cursor {
                None | Some(Value::Null) => break,
                Some(Value::String(next)) if !next.is_empty() && seen.insert(next.clone()) => {
                    cursor = Some(next)
                }
                Some(other) => {
                    tracing::warn!(server = %self.name(), "{}: stopping at cursor {other}, which is empty or was seen before", P::METHOD);
                    break;
                }
            }
        }
        self.list_usage
            .lock()
            .expect("list usage lock")
            .insert(P::METHOD, (items.len(), bytes));
        Ok((items, freshness))
    }

    /// Lists every resource (`resources/list`), paged and bounded as
    /// [`list_tools`](Self::list_tools) is: the loop guard, and [`ClientOptions::list_limits`]
    /// shared with the server's other lists.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        Ok(self.list_all::<ResourcesPage>().await?.0)
    }

    /// Lists every resource template (`resources/templates/list`), paged and bounded as
    /// [`list_resources`](Self::list_resources) is.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        Ok(self.list_all::<TemplatesPage>().await?.0)
    }

    /// Lists every prompt (`prompts/list`), paged and bounded as
    /// [`list_resources`](Self::list_resources) is.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        Ok(self.list_all::<PromptsPage>().await?.0)
    }

    /// Lists the server's skills (`skills/list`, the skills extension), paged and bounded as
    /// [`list_resources`](Self::list_resources) is. Only the entries are read: no skill
    /// file is fetched until [`read_skill_file`](Self::read_skill_file) asks for it. A server
    /// that does not declare the extension is an error that says so.
    pub async fn list_skills(&self) -> Result<Vec<Skill>> {
        self.skills_declared(methods::SKILLS_LIST)?;
        Ok(self.list_all::<SkillsPage>().await?.0)
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), listed or not.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill> {
        #[derive(serde::Deserialize)]
        struct GetSkill {
            skill: Skill,
        }
        let method = methods::SKILLS_GET;
        self.skills_declared(method)?;
        let params = json!({"uri": uri});
        let (got, _) = self
            .session
            .request_as::<GetSkill>(method, Some(params), RequestOptions::default())
            .await?;
        if got.skill.uri != uri {
            let why = format!(
                "asked for the skill at {uri}, the server answered with {}",
                got.skill.uri
            );
            return Err(self.error(method, ErrorKind::Protocol(why)));
        }
        Ok(got.skill)
    }

    /// Reads one file of `skill` through its `skill://` URI (`resources/read`) and checks it
    /// against the skill's entry: its size and SHA-256 digest. A file whose bytes do not
    /// match, or one the entry does not list, is an error, never content. The read is whole
    /// (a skill file is for the model to follow, not cut), bounded by
    /// [`ClientOptions::max_message`]. A skill whose files are `"dynamic"` has no digests:
    /// its files are read unchecked ([`SkillFileContent::verified`] is false). The skill's
    /// `SKILL.md` is also checked against the entry's frontmatter: its YAML frontmatter must
    /// be the entry's, field by field, or it is refused.
    pub async fn read_skill_file(&self, skill: &Skill, uri: &str) -> Result<SkillFileContent> {
        let method = methods::RESOURCES_READ;
        let listed = skill.file(uri);
        if skill.files.is_some() && listed.is_none() {
            let why = format!(
                "{uri} is not a file of the skill {} (its entry lists {}); read one of those",
                skill.name(),
                skill
                    .files
                    .iter()
                    .flatten()
                    .map(|f| f.uri.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(self.error(method, ErrorKind::Usage(why)));
        }
        let params = json!({"uri": uri});
        let result = self
            .session
            .request(method, Some(params), RequestOptions::default())
            .await?;
        let (bytes, mime_type) = skills::content_bytes(&result, uri)
            .map_err(|why| self.error(method, ErrorKind::Protocol(format!("{uri}: {why}"))))?;
        if let Some(file) = listed {
            skills::verify(file, &bytes).map_err(|why| {
                let why = format!("{why}: the file was refused (ask the server's maintainers)");
                self.error(method, ErrorKind::Protocol(why))
            })?;
        }
        if uri == skill.uri {
            skills::check_frontmatter(skill, &bytes).map_err(|why| {
                let why = format!("{why}: the skill was not loaded (ask the server's maintainers)");
                self.error(method, ErrorKind::Protocol(why))
            })?;
        }
        Ok(SkillFileContent {
            uri: uri.to_string(),
            mime_type,
            bytes,
            verified: listed.is_some(),
        })
    }

    /// The direct children of a directory resource (`resources/directory/read`), such as a
    /// skill's folder, following `nextCursor` for at most 100 pages. Only for a server that
    /// declares the skills extension with `directoryRead`.
    pub async fn read_skill_directory(&self, uri: &str) -> Result<Vec<Resource>> {
        #[derive(serde::Deserialize)]
        struct DirectoryPage {
            resources: Vec<Resource>,
            #[serde(rename = "nextCursor", default)]
            next_cursor: Option<String>,
        }
        let method = methods::RESOURCES_DIRECTORY_READ;
        let declared = self.skills_declared(method)?;
        if declared.get("directoryRead") != Some(&Value::Bool(true)) {
            let why = "the server does not declare directoryRead in its skills extension: list a skill's files from its entry instead".to_string();
            return Err(self.error(method, ErrorKind::Usage(why)));
        }
        let mut children = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_SKILL_PAGES {
            let mut params = json!({"uri": uri});
            if let Some(c) = cursor.take() {
                params["cursor"] = json!(c);
            }
            let (page, _) = self
                .session
                .request_as::<DirectoryPage>(method, Some(params), RequestOptions::default())
                .await?;
            children.extend(page.resources);
            if children.len() > self.list_limits.max_items {
                let why = format!(
                    "{uri} has more than {} children",
                    self.list_limits.max_items
                );
                return Err(self.error(method, ErrorKind::Limit(why)));
            }
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(children),
            }
        }
        tracing::warn!(server = %self.name(), "{method}: stopping after {MAX_SKILL_PAGES} pages of {uri}");
        Ok(children)
    }

    /// The server's declaration of the skills extension, or an error for `method` saying it
    /// has none.
    fn skills_declared(&self, method: &str) -> Result<&Value> {
        self.details
            .capabilities
            .get("extensions")
            .and_then(|e| e.get(SKILLS_EXTENSION))
            .filter(|d| d.is_object())
            .ok_or_else(|| {
                let why = format!("the server does not declare the skills extension ({SKILLS_EXTENSION}): it serves no skills");
                self.error(method, ErrorKind::Usage(why))
            })
    }

    /// Reads a resource and returns what a model sees of it: its contents rendered (text as
    /// it is, binary as `[blob <mime>, <n> bytes]`) and capped at [`ClientOptions::output_cap`]
    /// with the truncation marker, as a tool result is: rendered while it arrives, so a read
    /// of any size is capped, never held whole (nor refused for its size).
    pub async fn read_resource(&self, uri: &str) -> Result<ResourceOutput> {
        self.read_resource_with(uri, RequestOptions::default())
            .await
    }

    /// [`read_resource`](Self::read_resource) with per-request options (timeout, progress,
    /// trace context).
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> Result<ResourceOutput> {
        let params = json!({"uri": uri});
        // Rendered and capped by the decoder while it arrived, as a tool result is: a read of
        // any size is never held whole.
        let reply = self
            .session
            .request_reply(methods::RESOURCES_READ, Some(&params), options)
            .await?;
        let rendered = reply.rendered.unwrap_or_else(|| {
            Err(RenderError::Invalid(
                "the answer has neither result nor error".into(),
            ))
        });
        match rendered {
            Ok(r) => Ok(ResourceOutput {
                text: r.text,
                total_bytes: r.total,
            }),
            Err(RenderError::Rpc(e)) => {
                Err(self.error(methods::RESOURCES_READ, ErrorKind::Rpc(Box::new(e))))
            }
            Err(e @ RenderError::Invalid(_)) => {
                Err(self.error(methods::RESOURCES_READ, ErrorKind::Protocol(e.to_string())))
            }
        }
    }

    /// Reads the `ui://` resource at `uri` whole (`resources/read`), for a host that renders
    /// MCP Apps: the page's HTML, its MIME type, and what it asks of the host's sandbox
    /// (`_meta.ui`, checked). The page is for the host, not the model: the output cap does
    /// not cut it, [`MAX_UI_RESOURCE`](crate::MAX_UI_RESOURCE) (8 MiB of answer) bounds it,
    /// and an answer past it is an error that gives its size. A URI that is not `ui://` is
    /// refused unread; read it with [`read_resource`](Self::read_resource).
    pub async fn read_ui_resource(&self, uri: &str) -> Result<crate::UiResource> {
        let method = methods::RESOURCES_READ;
        if !crate::protocol::apps::is_ui_uri(uri) {
            let why = format!(
                "{uri:?} is not a ui:// URI (at most 2048 bytes, no spaces): read it with read_resource"
            );
            return Err(self.error(method, ErrorKind::Usage(why)));
        }
        let result = self
            .session
            .request_whole(
                method,
                &json!({"uri": uri}),
                RequestOptions::default(),
                crate::MAX_UI_RESOURCE,
            )
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::Protocol(why) => {
                    let why = format!("the UI resource {uri}: {why}");
                    self.error(method, ErrorKind::Protocol(why))
                }
                _ => e,
            })?;
        crate::protocol::apps::ui_resource(&result, uri).map_err(|why| {
            let why = format!("the UI resource {uri}: {why}");
            self.error(method, ErrorKind::Protocol(why))
        })
    }

    /// Asks to be told when a resource changes (`resources/subscribe`); the changes arrive
    /// as [`ServerNotification::ResourceUpdated`]. The 2026-07-28 revision has no such
    /// request (its changes come on `subscriptions/listen`): there it is an error.
    pub async fn subscribe(&self, uri: &str) -> Result<()> {
        self.subscription(methods::RESOURCES_SUBSCRIBE, uri).await
    }

    /// Stops the updates [`subscribe`](Self::subscribe) asked for (`resources/unsubscribe`).
    pub async fn unsubscribe(&self, uri: &str) -> Result<()> {
        self.subscription(methods::RESOURCES_UNSUBSCRIBE, uri).await
    }

    async fn subscription(&self, method: &str, uri: &str) -> Result<()> {
        if self.details.era == Era::Stateless {
            let why = format!(
                "{} has no {method}: a stateless server tells of a resource's changes on subscriptions/listen (Client::listen_for_changes with its URI)",
                self.details.protocol_version
            );
            return Err(self.error(method, ErrorKind::Protocol(why)));
        }
        self.session
            .request(method, Some(json!({"uri": uri})), RequestOptions::default())
            .await
            .map(drop)
    }

    /// Fills in a prompt with its arguments (`prompts/get`): its messages, each with its
    /// content block ([`PromptMessage::text`](crate::PromptMessage::text) renders one).
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<PromptContents> {
        self.get_prompt_with(name, arguments, RequestOptions::default())
            .await
    }

    /// [`get_prompt`](Self::get_prompt) with per-request options (timeout, progress, trace
    /// context).
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<PromptContents> {
        let mut params = serde_json::Map::new();
        params.insert("name".into(), Value::String(name.into()));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        let (prompt, _) = self
            .session
            .request_as::<PromptContents>(
                methods::PROMPTS_GET,
                Some(Value::Object(params)),
                options,
            )
            .await?;
        Ok(prompt)
    }

    /// Asks for values of one argument (`completion/complete`): of a prompt, or a variable of
    /// a resource template; `value` is what is typed so far, and `context` the arguments
    /// already chosen (name to value).
    pub async fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<Completion> {
        let options = RequestOptions::default();
        self.complete_with(reference, argument, value, context, options)
            .await
    }

    /// [`complete`](Self::complete) with per-request options (timeout, trace context).
    pub async fn complete_with(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &[(String, String)],
        options: RequestOptions,
    ) -> Result<Completion> {
        #[derive(serde::Deserialize)]
        struct Completed {
            completion: Completion,
        }
        let mut params = json!({
            "ref": reference.to_json(),
            "argument": {"name": argument, "value": value},
        });
        if !context.is_empty() {
            let arguments: serde_json::Map<String, Value> = context
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            params["context"] = json!({"arguments": arguments});
        }
        let (done, _) = self
            .session
            .request_as::<Completed>(methods::COMPLETION_COMPLETE, Some(params), options)
            .await?;
        Ok(done.completion)
    }

    /// Sets the lowest level of the log messages the server sends (which arrive as
    /// [`ServerNotification::Log`], and through `tracing`). In the initialize era this is
    /// `logging/setLevel`; in the stateless era, which has no such request, every later
    /// request carries the level in its `_meta`, as the revision asks.
    pub async fn set_log_level(&self, level: LogLevel) -> Result<()> {
        if self.details.era == Era::Stateless {
            let key = crate::protocol::META_LOG_LEVEL;
            self.session
                .set_envelope_member(key, Some(Value::String(level.as_str().into())));
            return Ok(());
        }
        self.session
            .request(
                methods::LOGGING_SET_LEVEL,
                Some(json!({"level": level.as_str()})),
                RequestOptions::default(),
            )
            .await
            .map(drop)
    }

    /// The `Mcp-Param-*` headers of a call, from the tool's `x-mcp-header` annotations.
    #[cfg(not(feature = "http"))]
    fn param_headers(&self, _: &str, _: &Value) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The `Mcp-Param-*` headers of a call, from the tool's `x-mcp-header` annotations.
    #[cfg(feature = "http")]
    fn param_headers(&self, tool: &str, arguments: &Value) -> Vec<(String, String)> {
        let params = self.header_params.lock().expect("header params lock");
        params.get(tool).map_or_else(Vec::new, |params| {
            crate::protocol::stateless::param_headers(params, arguments)
        })
    }

    /// Calls a tool with the client's default timeout and returns what the model sees: the
    /// rendered result, capped. A result with `isError: true` is an `Ok` output with
    /// `is_error` set. A stateless server's `HeaderMismatch` refreshes the tool list and sends
    /// the call once more. [`call_tool_with`](Self::call_tool_with) takes per-call options.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<ToolOutput> {
        self.call_tool_with(tool, arguments, RequestOptions::default())
            .await
    }

    /// [`call_tool`](Self::call_tool) with per-call options: a timeout, progress, headers,
    /// a trace context, and whether to call the tool as a task ([`RequestOptions::task`]).
    ///
    /// Tasks, as the revision the server speaks defines them:
    /// - 2025-11-25: a tool that requires a task (`execution.taskSupport: "required"`, on a
    ///   server that declares task-augmented `tools/call`) is called as one (`params.task`).
    ///   The server's `tasks/get` is polled until the task ends or asks for input; then its
    ///   result comes from `tasks/result` (input requests arrive there as server requests).
    /// - 2026-07-28, on a server that declares the `io.modelcontextprotocol/tasks` extension
    ///   in `server/discover`: every request declares the extension too, and the server
    ///   decides whether a call becomes a task (`resultType: "task"`; [`TaskMode::Never`]
    ///   leaves the extension out of that call's capabilities). The task is polled with
    ///   `tasks/get` until it ends; the input requests it carries while `input_required`
    ///   are answered through [`ClientOptions::handlers`] and sent with `tasks/update` (each
    ///   once, at most 64 in a task's life); the ended task carries the result (kept whole
    ///   up to [`ClientOptions::max_message`], then rendered and capped) or the error.
    ///
    /// In both, polls come at the task's suggested interval (`pollInterval`,
    /// `pollIntervalMs`; kept between 100 ms and 10 s), or sooner when the server tells of a
    /// new status. The timeout covers the whole; progress arrives through
    /// [`RequestOptions::on_progress`] all along, and so does each new status of the task
    /// (the latest progress value, no total, and `<status>: <status message>` as the
    /// message: server text, escape it to show it). A call that times out, or whose future
    /// is dropped, cancels its task (`tasks/cancel`).
    pub async fn call_tool_with(
        &self,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<ToolOutput> {
        if let Some(flow) = self.task_flow(tool, options.task).await {
            return self.call_as_task(tool, arguments, options, flow).await;
        }
        let headers = self.param_headers(tool, &arguments);
        // Built by hand: `json!` would copy the arguments through serialization.
        let mut params = serde_json::Map::new();
        params.insert("name".into(), Value::String(tool.into()));
        params.insert("arguments".into(), arguments);
        if options.task == TaskMode::Never && self.has_task_extension() {
            // This call's own capabilities, without the tasks extension: no task for it.
            let capabilities = self.session.handlers().capabilities();
            let meta = json!({crate::protocol::META_CLIENT_CAPABILITIES: capabilities});
            params.insert("_meta".into(), meta);
        }
        let params = Value::Object(params);
        let mut headed = RequestOptions {
            headers,
            ..options.clone()
        };
        let mut reply = self
            .session
            .request_reply(methods::TOOLS_CALL, Some(&params), headed)
            .await;
        if let Err(Error {
            kind: ErrorKind::Rpc(e),
            ..
        }) = &reply
            && e.code == crate::protocol::HEADER_MISMATCH
        {
            *self.tools.lock().expect("tools lock") = None;
            self.list_tools().await?;
            headed = RequestOptions {
                headers: self.param_headers(tool, &params["arguments"]),
                ..options
            };
            reply = self
                .session
                .request_reply(methods::TOOLS_CALL, Some(&params), headed)
                .await;
        }
        self.tool_output(reply?)
    }

    /// What the model sees of a tool result's reply.
    fn tool_output(&self, reply: Reply) -> Result<ToolOutput> {
        if reply.result_type() == Some("task") {
            let why = "the server answered with a task this call did not opt in to, or one it cannot read";
            return Err(self.error(methods::TOOLS_CALL, ErrorKind::Protocol(why.into())));
        }
        let rendered = reply.rendered.unwrap_or_else(|| {
            Err(RenderError::Invalid(
                "the answer has neither result nor error".into(),
            ))
        });
        match rendered {
            Ok(r) => Ok(ToolOutput {
                text: r.text,
                is_error: r.is_error,
                total_bytes: r.total,
            }),
            Err(RenderError::Rpc(e)) => {
                Err(self.error(methods::TOOLS_CALL, ErrorKind::Rpc(Box::new(e))))
            }
            Err(e @ RenderError::Invalid(_)) => {
                Err(self.error(methods::TOOLS_CALL, ErrorKind::Protocol(e.to_string())))
            }
        }
    }

    /// Stateless era: holds a `subscriptions/listen` request open so the server can say when
    /// its tool, prompt and resource lists change, and when any of the `resources` (URIs)
    /// is updated (the revision's `resources/subscribe`); those notifications arrive as any
    /// other ([`Client::server_notifications`]). Returns when the server or the connection
    /// ends it; dropping the future cancels it.
    pub async fn listen_for_changes(&self, resources: &[&str]) -> Result<Value> {
        let mut notifications = json!({
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true
        });
        if !resources.is_empty() {
            notifications["resourceSubscriptions"] = json!(resources);
        }
        let params = json!({ "notifications": notifications });
        let options = RequestOptions {
            timeout: Some(LISTEN_TIMEOUT),
            ..Default::default()
        };
        self.session
            .request(methods::SUBSCRIPTIONS_LISTEN, Some(params), options)
            .await
    }

    /// Replaces the roots the client offers (what `roots/list` answers from now on) and, in
    /// the initialize era when roots were offered at the start ([`Handlers::roots`]), tells
    /// the server with `notifications/roots/list_changed`. The 2026-07-28 revision has no such
    /// notification: its servers ask for the roots with each request that needs them.
    pub async fn set_roots(&self, roots: Vec<crate::protocol::types::Root>) -> Result<()> {
        self.session.set_roots(roots);
        let announced = self.session.handlers().roots.is_some();
        if self.details.era == Era::Handshake && announced {
            let notify = self.session.notify(methods::ROOTS_LIST_CHANGED, None);
            match tokio::time::timeout(self.session.default_timeout(), notify).await {
                Ok(sent) => sent?,
                Err(_) => {
                    let waited = self.session.default_timeout();
                    let method = methods::ROOTS_LIST_CHANGED;
                    return Err(self.error(method, ErrorKind::Timeout(waited)));
                }
            }
        }
        Ok(())
    }

    /// Sends `ping` and waits for the answer.
    pub async fn ping(&self) -> Result<()> {
        self.session
            .request(methods::PING, None, RequestOptions::default())
            .await
            .map(drop)
    }

    /// Closes the connection (for stdio: ends the server process and its group).
    pub async fn close(&self) {
        self.session.transport().close().await;
    }
}
