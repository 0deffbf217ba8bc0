//! What servers offer besides tools: resources, resource templates, prompts, completions, log
//! levels, and the notifications about them, typed.
//!
//! Each listed value keeps the members this client reads as fields and every other member as
//! the server's text ([`RawJson`]), in the server's order, so that a value costs about its
//! wire size and is written out again as the server sent it (`probe --json`).

use super::types::RawJson;
use crate::methods;
use crate::wire::jsonrpc::Notification;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;

/// The members of one JSON object as the server's text, in its order (a member given twice
/// keeps its last value, as serde_json's `Value` does).
#[derive(Debug, Clone, Default)]
struct Members(Vec<(String, RawJson)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(from: D) -> Result<Members, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members: Vec<(String, RawJson)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = RawJson::from(map.next_value::<Box<RawValue>>()?);
                    members.retain(|(k, _)| *k != key);
                    members.push((key, value));
                }
                Ok(Members(members))
            }
        }
        from.deserialize_map(MembersVisitor)
    }
}

impl Members {
    /// Takes out member `key`, read as `T`; `None` when absent or `null`.
    fn take<T: serde::de::DeserializeOwned, E: de::Error>(
        &mut self,
        key: &'static str,
    ) -> Result<Option<T>, E> {
        let Some(at) = self.0.iter().position(|(k, _)| k == key) else {
            return Ok(None);
        };
        let (_, raw) = self.0.remove(at);
        serde_json::from_str::<Option<T>>(raw.get())
            .map_err(|e| E::custom(format_args!("member {key:?}: {e}")))
    }

    /// Takes out member `key`, which must be there.
    fn need<T: serde::de::DeserializeOwned, E: de::Error>(
        &mut self,
        key: &'static str,
    ) -> Result<T, E> {
        self.take(key)?.ok_or_else(|| E::missing_field(key))
    }
}

fn find<'a>(extra: &'a [(String, RawJson)], key: &str) -> Option<&'a RawValue> {
    extra.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
}

fn write_extra<M: SerializeMap>(map: &mut M, extra: &[(String, RawJson)]) -> Result<(), M::Error> {
    extra
        .iter()
        .try_for_each(|(k, v)| map.serialize_entry(k, &**v))
}

/// Implements `Serialize`, `Deserialize`, `member` and `PartialEq` (by the members' text) of
/// a listed value from its known members.
macro_rules! listed {
    ($ty:ident { $($field:ident: $key:literal $(| $alt:literal)? => $how:ident,)* }) => {
        impl $ty {
            /// Another member, by name, as the server's text.
            pub fn member(&self, key: &str) -> Option<&RawValue> {
                find(&self.extra, key)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(from: D) -> Result<$ty, D::Error> {
                let mut members = Members::deserialize(from)?;
                $(
                    let $field = listed!(@read members, $key, $how);
                    // A later revision's name for the member, read when the first is absent.
                    $(let $field = match $field {
                        None => listed!(@read members, $alt, $how),
                        some => some,
                    };)?
                )*
                Ok($ty { $($field,)* extra: members.0 })
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
                let mut map = to.serialize_map(None)?;
                $(listed!(@write map, self.$field, $key, $how);)*
                write_extra(&mut map, &self.extra)?;
                map.end()
            }
        }
        impl PartialEq for $ty {
            fn eq(&self, other: &$ty) -> bool {
                serde_json::to_string(self).ok() == serde_json::to_string(other).ok()
            }
        }
    };
    (@read $m:ident, $key:literal, need) => { $m.need::<_, D::Error>($key)? };
    (@read $m:ident, $key:literal, opt) => { $m.take::<_, D::Error>($key)? };
    (@read $m:ident, $key:literal, shared) => { $m.take::<String, D::Error>($key)?.map(Arc::from) };
    (@read $m:ident, $key:literal, list) => { $m.take::<_, D::Error>($key)?.unwrap_or_default() };
    (@read $m:ident, $key:literal, flag) => { $m.take::<bool, D::Error>($key)?.unwrap_or(false) };
    (@write $map:ident, $v:expr, $key:literal, need) => { $map.serialize_entry($key, &$v)? };
    (@write $map:ident, $v:expr, $key:literal, opt) => {
        if let Some(v) = &$v { $map.serialize_entry($key, v)?; }
    };
    (@write $map:ident, $v:expr, $key:literal, shared) => {
        if let Some(v) = &$v { $map.serialize_entry($key, &**v)?; }
    };
    (@write $map:ident, $v:expr, $key:literal, list) => {
        if !$v.is_empty() { $map.serialize_entry($key, &$v)?; }
    };
    (@write $map:ident, $v:expr, $key:literal, flag) => {
        if $v { $map.serialize_entry($key, &true)?; }
    };
}

/// One resource a server lists (`resources/list`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Resource {
    /// Its URI, what [`Client::read_resource`](crate::Client::read_resource) takes.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is, for the model (shared by every copy).
    pub description: Option<Arc<str>>,
    /// Its MIME type, if the server knows it.
    pub mime_type: Option<String>,
    /// Every other member (title, size, annotations, icons, ...), as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(Resource {
    uri: "uri" => need,
    name: "name" => need,
    description: "description" => shared,
    mime_type: "mimeType" => opt,
});

/// One resource template a server lists (`resources/templates/list`): an RFC 6570 URI
/// template whose variables [`Client::complete`](crate::Client::complete) can complete.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template, e.g. `file:///{path}`.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// What it is, for the model.
    pub description: Option<Arc<str>>,
    /// The MIME type of every resource it names, if they share one.
    pub mime_type: Option<String>,
    /// Every other member, as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(ResourceTemplate {
    uri_template: "uriTemplate" => need,
    name: "name" => need,
    description: "description" => shared,
    mime_type: "mimeType" => opt,
});

/// One argument of a prompt.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name, the key in [`Client::get_prompt`](crate::Client::get_prompt)'s arguments.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
    /// Every other member, as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(PromptArgument {
    name: "name" => need,
    description: "description" => opt,
    required: "required" => flag,
});

/// One prompt a server lists (`prompts/list`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Prompt {
    /// Its name, what [`Client::get_prompt`](crate::Client::get_prompt) takes.
    pub name: String,
    /// What it is for (shared by every copy).
    pub description: Option<Arc<str>>,
    /// Its arguments.
    pub arguments: Vec<PromptArgument>,
    /// Every other member (title, icons, ...), as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(Prompt {
    name: "name" => need,
    description: "description" => shared,
    arguments: "arguments" => list,
});

/// One message of a prompt (`prompts/get`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptMessage {
    /// `user` or `assistant`, as the server said.
    pub role: String,
    /// The message's content block, as the server sent it;
    /// [`PromptMessage::text`] renders it.
    pub content: RawJson,
    /// Every other member, as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(PromptMessage {
    role: "role" => need,
    content: "content" => need,
});

impl PromptMessage {
    /// What a model sees of the content block, rendered as a block of a tool result is
    /// (text as it is; an image, audio or binary resource as one short line, never its
    /// payload); `None` when the block is not a valid content block.
    pub fn text(&self) -> Option<String> {
        crate::wire::render::render_block_json(self.content.get()).ok()
    }
}

/// A prompt filled in with its arguments (`prompts/get`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[non_exhaustive]
pub struct PromptContents {
    /// The server's description of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// What a server offers for the value of an argument (`completion/complete`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Completion {
    /// The values, best first (the protocol allows at most 100).
    pub values: Vec<String>,
    /// How many values there are in all, if the server knows.
    pub total: Option<u64>,
    /// Whether there are more values than these.
    pub has_more: bool,
    /// Every other member, as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(Completion {
    values: "values" => list,
    total: "total" => opt,
    has_more: "hasMore" => flag,
});

/// What [`Client::complete`](crate::Client::complete) completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of the prompt of this name.
    Prompt(String),
    /// A variable of the resource template with this URI template.
    ResourceTemplate(String),
}

impl CompletionRef {
    /// The `ref` member of the request.
    pub fn to_json(&self) -> Value {
        match self {
            CompletionRef::Prompt(name) => serde_json::json!({"type": "ref/prompt", "name": name}),
            CompletionRef::ResourceTemplate(uri) => {
                serde_json::json!({"type": "ref/resource", "uri": uri})
            }
        }
    }
}

/// What a model sees of a resource (`resources/read`): its contents rendered as a tool
/// result is, and capped the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceOutput {
    /// The text: each text content as it is, each binary one as `[blob <mime>, <n> bytes]`,
    /// joined with `"\n"`, cut at the client's output cap with the truncation marker.
    pub text: String,
    /// Bytes of the whole rendered text before any cut.
    pub total_bytes: u64,
}

/// The severity of a server's log message, as RFC 5424 names them (lowest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    /// Every level, lowest first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// Its name in the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl std::str::FromStr for LogLevel {
    type Err = crate::error::ParseError;
    fn from_str(s: &str) -> Result<LogLevel, crate::error::ParseError> {
        LogLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
                crate::error::ParseError::unknown("log level", s, &names)
            })
    }
}

impl Serialize for LogLevel {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One log message of a server (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogMessage {
    /// Its severity; `None` when the server sent a level this client does not know.
    pub level: Option<LogLevel>,
    /// The level as the server sent it.
    pub level_name: String,
    /// The logger's name, if given.
    pub logger: Option<String>,
    /// The message: any JSON value (often a string).
    pub data: Value,
}

/// The state of a task ([`Task::status`]), as the 2025-11-25 revision names them; a status
/// this client does not know is kept as the server's text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// The request is being carried out.
    Working,
    /// The server needs input (elicitation, sampling) to go on: `tasks/result` brings its
    /// requests.
    InputRequired,
    /// Done: the result is ready.
    Completed,
    /// Done, without success (for a tool, also a result with `isError`).
    Failed,
    /// Cancelled before it was done.
    Cancelled,
    /// A status this client does not know.
    Other(String),
}

impl TaskStatus {
    /// The status as the protocol spells it.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(s) => s,
        }
    }

    /// Whether the task has ended (completed, failed or cancelled): it changes no more.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl From<String> for TaskStatus {
    fn from(s: String) -> TaskStatus {
        match s.as_str() {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => TaskStatus::Other(s),
        }
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: Deserializer<'de>>(from: D) -> Result<TaskStatus, D::Error> {
        String::deserialize(from).map(TaskStatus::from)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task: the state of a request the server carries out in the background (a tool called
/// as a task, [`Client::get_task`](crate::Client::get_task)). Numbers are kept as the
/// server wrote them; [`Task::poll_interval`] and [`Task::ttl`] read them. Both revisions'
/// tasks read into it: 2025-11-25's `ttl` and `pollInterval`, and the 2026-07-28 tasks
/// extension's `ttlMs` and `pollIntervalMs` (whose `result`, `error` and `inputRequests`
/// stay among the other members, [`Task::member`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Task {
    /// The server's id of the task.
    pub task_id: String,
    /// Where the task is.
    pub status: TaskStatus,
    /// What the server says of that state, if anything (server text: escape it to show it).
    pub status_message: Option<String>,
    /// When the task was created (ISO 8601), as given.
    pub created_at: Option<String>,
    /// When its status last changed (ISO 8601), as given.
    pub last_updated_at: Option<String>,
    /// How long the server keeps the task from its creation, in milliseconds (`None`:
    /// unlimited or not said): `ttl`, or `ttlMs`.
    pub ttl_ms: Option<serde_json::Number>,
    /// How often the server suggests asking for the task's status, in milliseconds:
    /// `pollInterval`, or `pollIntervalMs`.
    pub poll_interval_ms: Option<serde_json::Number>,
    /// Every other member (`_meta`, ...), as given.
    pub extra: Vec<(String, RawJson)>,
}

listed!(Task {
    task_id: "taskId" => need,
    status: "status" => need,
    status_message: "statusMessage" => opt,
    created_at: "createdAt" => opt,
    last_updated_at: "lastUpdatedAt" => opt,
    ttl_ms: "ttl" | "ttlMs" => opt,
    poll_interval_ms: "pollInterval" | "pollIntervalMs" => opt,
});

impl Task {
    /// The suggested polling interval, when the server gave a usable one (a finite number
    /// of milliseconds, not negative).
    pub fn poll_interval(&self) -> Option<std::time::Duration> {
        millis(self.poll_interval_ms.as_ref())
    }

    /// How long the server keeps the task, when it said.
    pub fn ttl(&self) -> Option<std::time::Duration> {
        millis(self.ttl_ms.as_ref())
    }
}

fn millis(n: Option<&serde_json::Number>) -> Option<std::time::Duration> {
    let ms = n?.as_f64()?;
    (ms.is_finite() && ms >= 0.0).then(|| std::time::Duration::from_secs_f64(ms.min(1e12) / 1000.0))
}

/// A notification from the server, typed ([`Client::server_notifications`](crate::Client::server_notifications)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerNotification {
    /// A resource the client subscribed to changed (`notifications/resources/updated`).
    ResourceUpdated {
        /// Its URI.
        uri: String,
    },
    /// The resource list changed (`notifications/resources/list_changed`).
    ResourceListChanged,
    /// The tool list changed (`notifications/tools/list_changed`).
    ToolListChanged,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    PromptListChanged,
    /// A log message (`notifications/message`).
    Log(LogMessage),
    /// A task's status changed (`notifications/tasks/status`): the whole task.
    TaskStatus(Task),
    /// Any other notification, as it came.
    Other(Notification),
}

impl ServerNotification {
    /// Reads a notification; one whose params do not fit its method is [`Other`](Self::Other).
    pub fn from_notification(n: Notification) -> ServerNotification {
        let params = n.params.as_ref();
        let text = |key: &str| params?.get(key)?.as_str().map(str::to_string);
        match n.method.as_str() {
            methods::RESOURCES_UPDATED => match text("uri") {
                Some(uri) => ServerNotification::ResourceUpdated { uri },
                None => ServerNotification::Other(n),
            },
            methods::RESOURCES_LIST_CHANGED => ServerNotification::ResourceListChanged,
            methods::TOOLS_LIST_CHANGED => ServerNotification::ToolListChanged,
            methods::PROMPTS_LIST_CHANGED => ServerNotification::PromptListChanged,
            methods::LOG_MESSAGE => match text("level") {
                Some(level_name) => ServerNotification::Log(LogMessage {
                    level: level_name.parse().ok(),
                    logger: text("logger"),
                    data: params
                        .and_then(|p| p.get("data"))
                        .cloned()
                        .unwrap_or(Value::Null),
                    level_name,
                }),
                None => ServerNotification::Other(n),
            },
            methods::TASK_STATUS => match params.map(Task::deserialize) {
                Some(Ok(task)) => ServerNotification::TaskStatus(task),
                _ => ServerNotification::Other(n),
            },
            _ => ServerNotification::Other(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_values_keep_unknown_members_in_order() {
        let text =
            r#"{"name":"n","x-new":{"a":[1, 2]},"uri":"u://1","mimeType":"text/plain","size":3}"#;
        let r: Resource = serde_json::from_str(text).unwrap();
        assert_eq!((r.uri.as_str(), r.name.as_str()), ("u://1", "n"));
        assert_eq!(r.mime_type.as_deref(), Some("text/plain"));
        assert_eq!(r.member("x-new").unwrap().get(), r#"{"a":[1, 2]}"#);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"uri":"u://1","name":"n","mimeType":"text/plain","x-new":{"a":[1, 2]},"size":3}"#
        );
        assert!(serde_json::from_str::<Resource>(r#"{"name":"n"}"#).is_err());
        assert!(serde_json::from_str::<Resource>(r#"{"uri":1,"name":"n"}"#).is_err());
        let p: Prompt = serde_json::from_str(
            r#"{"name":"p","arguments":[{"name":"a","required":true,"x":1}],"icons":[]}"#,
        )
        .unwrap();
        assert!(p.arguments[0].required);
        assert_eq!(p.arguments[0].member("x").unwrap().get(), "1");
        assert_eq!(p.member("icons").unwrap().get(), "[]");
        let c: Completion =
            serde_json::from_str(r#"{"values":["a"],"hasMore":true,"total":9,"z":0}"#).unwrap();
        assert_eq!((c.values.len(), c.total, c.has_more), (1, Some(9), true));
    }

    #[test]
    fn tasks_keep_what_they_do_not_know() {
        let text = r#"{"taskId":"t1","status":"working","createdAt":"2025-11-25T10:30:00Z","ttl":null,"pollInterval":5000,"x":[1]}"#;
        let t: Task = serde_json::from_str(text).unwrap();
        assert_eq!(
            (t.task_id.as_str(), &t.status),
            ("t1", &TaskStatus::Working)
        );
        assert_eq!(t.poll_interval(), Some(std::time::Duration::from_secs(5)));
        assert_eq!(t.ttl(), None);
        assert_eq!(t.member("x").unwrap().get(), "[1]");
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"taskId":"t1","status":"working","createdAt":"2025-11-25T10:30:00Z","pollInterval":5000,"x":[1]}"#
        );
        let odd: Task =
            serde_json::from_str(r#"{"taskId":"t","status":"paused","pollInterval":-1}"#).unwrap();
        assert_eq!(odd.status, TaskStatus::Other("paused".into()));
        assert!(!odd.status.is_terminal() && odd.poll_interval().is_none());
        assert!(TaskStatus::from("cancelled".to_string()).is_terminal());
        assert!(serde_json::from_str::<Task>(r#"{"status":"working"}"#).is_err());
        // The 2026-07-28 tasks extension's names; its inlined result stays a member.
        let text = r#"{"taskId":"t2","status":"completed","ttlMs":60000,"pollIntervalMs":250,"result":{"content":[]}}"#;
        let t: Task = serde_json::from_str(text).unwrap();
        assert_eq!(
            t.poll_interval(),
            Some(std::time::Duration::from_millis(250))
        );
        assert_eq!(t.ttl(), Some(std::time::Duration::from_secs(60)));
        assert_eq!(t.member("result").unwrap().get(), r#"{"content":[]}"#);
    }

    #[test]
    fn notifications_are_typed() {
        let n = |method: &str, params: Value| Notification {
            method: method.into(),
            params: Some(params),
        };
        assert_eq!(
            ServerNotification::from_notification(n(
                "notifications/resources/updated",
                serde_json::json!({"uri": "u://1"})
            )),
            ServerNotification::ResourceUpdated {
                uri: "u://1".into()
            }
        );
        let ServerNotification::Log(log) = ServerNotification::from_notification(n(
            "notifications/message",
            serde_json::json!({"level": "warning", "logger": "l", "data": {"k": 1}}),
        )) else {
            panic!("a log message")
        };
        assert_eq!(log.level, Some(LogLevel::Warning));
        assert_eq!(log.data, serde_json::json!({"k": 1}));
        assert!(matches!(
            ServerNotification::from_notification(n("notifications/message", Value::Null)),
            ServerNotification::Other(_)
        ));
    }
}
