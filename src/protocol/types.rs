//! MCP types the client reads and hands to its embedder.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;

/// A JSON value kept as the text the server sent: about its wire size in memory (a parsed
/// `Value` of a schema takes many times that), shared by every copy, and written out again
/// unchanged. [`RawValue::get`] gives the text; parse it where its contents are needed.
pub type RawJson = Arc<RawValue>;

/// `{"type":"object","properties":{}}`: the input schema of a tool that gives none.
pub fn empty_object_schema() -> RawJson {
    RawValue::from_string(r#"{"type":"object","properties":{}}"#.into())
        .expect("valid JSON")
        .into()
}

/// The protocol revision this client offers in `initialize`.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";

/// The stateless revision this client speaks.
pub const LATEST_STATELESS_VERSION: &str = "2026-07-28";

/// Every stateless-era revision this client speaks, newest first.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];

/// Every initialize-era revision this client accepts from a server, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// One tool as the server described it. Its JSON members are kept as the server's text
/// ([`RawJson`](crate::RawJson)), so a tool costs about its wire size, and a copy only its name and
/// description.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Tool {
    /// The tool's name on its server.
    pub name: String,
    /// What the tool does, for the model (shared by every copy: a description can be long).
    pub description: Option<Arc<str>>,
    /// JSON Schema of the arguments, exactly as the server gave it
    /// (`{"type":"object"}` when it gave none); [`Tool::input_schema_value`] parses it.
    pub input_schema: RawJson,
    /// Every other member of the tool object (title, annotations, outputSchema, ...), as
    /// given, in the server's order.
    pub extra: Vec<(String, RawJson)>,
}

impl Tool {
    /// A tool with `name` and nothing else (the empty object schema).
    pub fn named(name: &str) -> Tool {
        Tool {
            name: name.to_string(),
            description: None,
            input_schema: empty_object_schema(),
            extra: Vec::new(),
        }
    }

    /// The input schema parsed (`Value::Null` if the server's text is no JSON, which the
    /// decoder does not let through).
    pub fn input_schema_value(&self) -> Value {
        serde_json::from_str(self.input_schema.get()).unwrap_or(Value::Null)
    }

    /// Whether the input schema is a JSON object, as the protocol asks.
    pub fn has_object_schema(&self) -> bool {
        self.input_schema.get().trim_start().starts_with('{')
    }

    /// Another member of the tool object, by name, as the server's text.
    pub fn member(&self, key: &str) -> Option<&RawValue> {
        self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// The UI a host renders for the tool's results (MCP Apps: its `_meta.ui.resourceUri`, or
    /// the older `_meta["ui/resourceUri"]`), if it names a valid `ui://` URI; a hostile or
    /// malformed one is `None` (see [`ToolUi`](crate::ToolUi)). Read from the server's
    /// text each time.
    pub fn ui(&self) -> Option<super::apps::ToolUi> {
        super::apps::tool_ui(self.member("_meta")?)
    }

    /// Whether the tool is called as a task (`execution.taskSupport`; absent or unknown:
    /// [`TaskSupport::Forbidden`]).
    pub fn task_support(&self) -> TaskSupport {
        #[derive(Deserialize)]
        struct Execution {
            #[serde(rename = "taskSupport")]
            task_support: Option<Value>,
        }
        let execution = self
            .member("execution")
            .and_then(|raw| serde_json::from_str::<Execution>(raw.get()).ok());
        match execution.and_then(|e| e.task_support) {
            Some(Value::String(s)) if s == "required" => TaskSupport::Required,
            Some(Value::String(s)) if s == "optional" => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }
}

/// How a tool may be called as a task (its `execution.taskSupport`, 2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Only as a plain call (also when the tool says nothing).
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task: a plain call is refused.
    Required,
}

impl PartialEq for Tool {
    fn eq(&self, other: &Tool) -> bool {
        let texts = |t: &Tool| {
            t.extra
                .iter()
                .map(|(k, v)| (k.clone(), v.get().to_string()))
                .collect::<Vec<_>>()
        };
        self.name == other.name
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
            && texts(self) == texts(other)
    }
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        let mut map = to.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        if let Some(description) = &self.description {
            map.serialize_entry("description", &**description)?;
        }
        map.serialize_entry("inputSchema", &*self.input_schema)?;
        for (key, value) in &self.extra {
            map.serialize_entry(key, &**value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(from: D) -> Result<Tool, D::Error> {
        struct ToolVisitor;
        impl<'de> Visitor<'de> for ToolVisitor {
            type Value = Tool;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a tool object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Tool, A::Error> {
                let (mut name, mut description, mut input_schema) = (None, None, None);
                let mut extra = Vec::new();
                while let Some(key) = members.next_key::<String>()? {
                    // A member given twice keeps its last value, as serde_json's `Value` does.
                    match key.as_str() {
                        "name" => name = Some(members.next_value::<String>()?),
                        "description" => {
                            description = members.next_value::<Option<String>>()?.map(Arc::from)
                        }
                        "inputSchema" => {
                            input_schema =
                                Some(RawJson::from(members.next_value::<Box<RawValue>>()?))
                        }
                        _ => {
                            let value = RawJson::from(members.next_value::<Box<RawValue>>()?);
                            extra.retain(|(k, _): &(String, RawJson)| *k != key);
                            extra.push((key, value));
                        }
                    }
                }
                Ok(Tool {
                    name: name.ok_or_else(|| de::Error::missing_field("name"))?,
                    description,
                    input_schema: input_schema.unwrap_or_else(empty_object_schema),
                    extra,
                })
            }
        }
        from.deserialize_map(ToolVisitor)
    }
}

/// A root the embedder exposes to servers (`roots/list`): [`Root::new`], and
/// [`Root::with_name`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri` (a `file://` URI), with no name.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// With the display name `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// What a server told of a request in flight: a progress notification, or a task's new
/// status. Each part is there only if the server sent it (none is made up).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far; grows with each notification.
    pub progress: Option<f64>,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// The task's status as the server spells it (`working`, `completed`, ...), when this
    /// reports a task's new status.
    pub status: Option<String>,
    /// A human-readable message (a task's `statusMessage`), if any.
    pub message: Option<String>,
}

/// The outcome of `tools/call` as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The rendered text, capped with the truncation marker.
    pub text: String,
    /// The server flagged the result as a tool error (`isError: true`).
    pub is_error: bool,
    /// Bytes of the whole rendered text before any cut.
    pub total_bytes: u64,
}

/// Which protocol era a session runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Era {
    /// Revisions 2024-11-05 to 2025-11-25: a session starts with `initialize`.
    Handshake,
    /// Revision 2026-07-28: no handshake; every request carries the version and the client's
    /// capabilities in its `_meta`.
    Stateless,
}

impl Era {
    /// The name shown by `probe` and in status.
    pub fn name(self) -> &'static str {
        match self {
            Era::Handshake => "handshake",
            Era::Stateless => "stateless",
        }
    }
}

/// What the client learned about a server when its session started.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ServerDetails {
    /// The era the session runs in.
    pub era: Era,
    /// The negotiated protocol revision.
    pub protocol_version: String,
    /// The server's `serverInfo` (name, version, ...), as given.
    pub server_info: Value,
    /// The server's capabilities, as given.
    pub capabilities: Value,
    /// Instructions for the model, if the server gave any.
    pub instructions: Option<String>,
}

impl ServerDetails {
    /// Whether the server declared a capability (e.g. `tools`).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.get(name).is_some_and(|v| !v.is_null())
    }
}
