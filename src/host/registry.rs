//! The tool registry: every connected server's tools as definitions an LLM API accepts.
//!
//! A tool `echo` of server `github` is registered as `mcp__github__echo`. LLM APIs accept
//! names matching `^[a-zA-Z0-9_-]{1,64}$`; a name outside that rule is mapped by
//! [`llm_tool_name`]: each other character becomes `_`, the name is cut to 55 bytes and
//! `_` plus 8 hex digits of a hash of the unmapped name is appended. The mapping is
//! deterministic (the same tool always gets the same name) and the registry maps each name
//! back to its server and tool ([`Registry::resolve`]).
//!
//! Two tools that end up with one name (server `a` with tool `b__c`, and server `a__b` with
//! tool `c`) are a collision: the tool registered first keeps the name, the other is left out
//! and the collision is reported, never silently overwritten. Each server's tools are tracked
//! by server, never by name prefix, so refreshing server `a` never touches server `a__b`.

use crate::protocol::types::{RawJson, Tool, empty_object_schema};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Longest tool name LLM APIs accept.
pub const MAX_NAME_LEN: usize = 64;

/// What every registered tool name starts with.
pub const PREFIX: &str = "mcp__";

/// Whether an LLM API accepts `name`: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_llm_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// FNV-1a, 64 bits: a hash that is the same in every build and on every machine.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The registered name of `tool` of `server`: `mcp__<server>__<tool>`, mapped as the module
/// docs say when an LLM API would reject it.
pub fn llm_tool_name(server: &str, tool: &str) -> String {
    let name = format!("{PREFIX}{server}__{tool}");
    if is_valid_llm_name(&name) {
        return name;
    }
    let mut mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    mapped.truncate(MAX_NAME_LEN - 9);
    format!("{mapped}_{:08x}", fnv1a(name.as_bytes()) as u32)
}

/// A tool as an LLM API takes it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The registered name, `mcp__<server>__<tool>` (mapped if needed).
    pub name: String,
    /// The server's description (trimmed; shared with the server's tool when it needs no
    /// trimming), or `MCP tool "<tool>" from server "<server>".`
    pub description: Arc<str>,
    /// The server's input schema, as its text (shared with the server's tool, not copied),
    /// or `{"type":"object","properties":{}}`; serialized as the JSON it is.
    #[serde(rename = "input_schema")]
    pub input_schema: RawJson,
}

impl ToolDefinition {
    /// The definition of the tool `name`, described by `description`, taking arguments of
    /// `input_schema` (a JSON Schema's text): for a tool of the embedder's own, to shape with
    /// [`model_api::adapt_tool`](crate::host::model_api::adapt_tool) beside the servers'.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<Arc<str>>,
        input_schema: RawJson,
    ) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

impl PartialEq for ToolDefinition {
    fn eq(&self, other: &ToolDefinition) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
    }
}

/// One registered tool: its definition and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RegisteredTool {
    /// What the LLM API is given.
    pub definition: ToolDefinition,
    /// The server's name.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The UI a host renders for its results (MCP Apps), if the server names a valid one
    /// ([`Tool::ui`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ui: Option<crate::ToolUi>,
}

impl RegisteredTool {
    /// Builds the registered form of one of `server`'s tools.
    pub fn new(server: &str, tool: &Tool) -> RegisteredTool {
        let description = match &tool.description {
            Some(d) if d.trim().len() == d.len() && !d.is_empty() => d.clone(),
            Some(d) if !d.trim().is_empty() => Arc::from(d.trim()),
            _ => Arc::from(format!(
                "MCP tool \"{}\" from server \"{server}\".",
                tool.name
            )),
        };
        let input_schema = if tool.has_object_schema() {
            tool.input_schema.clone()
        } else {
            empty_object_schema()
        };
        RegisteredTool {
            definition: ToolDefinition {
                name: llm_tool_name(server, &tool.name),
                description,
                input_schema,
            },
            server: server.to_string(),
            tool: tool.name.clone(),
            ui: tool.ui(),
        }
    }
}

/// Two tools that would have the same registered name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Collision {
    /// The registered name both would have.
    pub name: String,
    /// The server and tool that have the name.
    pub kept: (String, String),
    /// The server and tool left out.
    pub dropped: (String, String),
}

impl fmt::Display for Collision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The tool names are the servers' own text.
        let tool = |t: &str| crate::safe_text::escape_controls(t).into_owned();
        write!(
            f,
            "tool name collision: {} is tool \"{}\" of server \"{}\"; tool \"{}\" of server \"{}\" would have the same name and is left out (rename one of the servers)",
            self.name,
            tool(&self.kept.1),
            self.kept.0,
            tool(&self.dropped.1),
            self.dropped.0
        )
    }
}

/// The registered tools of every server.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, RegisteredTool>,
    collisions: BTreeMap<String, Vec<Collision>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Replaces every tool of `server` with `tools` and returns the collisions found (also
    /// kept until the server is registered again, see [`Registry::collisions`]). Other
    /// servers' tools are untouched.
    pub fn register_server(&mut self, server: &str, tools: &[Tool]) -> Vec<Collision> {
        self.remove_server(server);
        let mut found = Vec::new();
        for tool in tools {
            let registered = RegisteredTool::new(server, tool);
            let name = registered.definition.name.clone();
            if let Some(existing) = self.tools.get(&name) {
                found.push(Collision {
                    name,
                    kept: (existing.server.clone(), existing.tool.clone()),
                    dropped: (server.to_string(), tool.name.clone()),
                });
                continue;
            }
            self.tools.insert(name, registered);
        }
        if !found.is_empty() {
            self.collisions.insert(server.to_string(), found.clone());
        }
        found
    }

    /// Removes every tool of `server` (and its recorded collisions).
    pub fn remove_server(&mut self, server: &str) {
        self.tools.retain(|_, t| t.server != server);
        self.collisions.remove(server);
    }

    /// The tool registered as `name`.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    /// The server and tool behind a registered name.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.tools
            .get(name)
            .map(|t| (t.server.as_str(), t.tool.as_str()))
    }

    /// Every registered tool, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values()
    }

    /// The registered tools of one server, sorted by name.
    pub fn server_tools(&self, server: &str) -> Vec<&RegisteredTool> {
        self.tools.values().filter(|t| t.server == server).collect()
    }

    /// Every definition, sorted by name: what to give the LLM API.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.values().map(|t| t.definition.clone()).collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every collision found when the servers were last registered.
    pub fn collisions(&self) -> Vec<Collision> {
        self.collisions.values().flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    #[test]
    fn names_table() {
        let table: &[(&str, &str, &str)] = &[
            ("github", "search", "mcp__github__search"),
            ("a-b", "c_d-e", "mcp__a-b__c_d-e"),
            ("s", "get.weather", "mcp__s__get_weather_"),
            ("s", "näme", "mcp__s__n_me_"),
            (
                "s",
                &"x".repeat(60),
                "mcp__s__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_",
            ),
        ];
        for (server, tool, want) in table {
            let name = llm_tool_name(server, tool);
            assert!(name.starts_with(want), "{server}/{tool}: {name}");
            assert!(is_valid_llm_name(&name), "{name}");
            assert_eq!(name, llm_tool_name(server, tool), "deterministic");
        }
        // Mapped names of different tools differ, even when their characters map alike.
        assert_ne!(llm_tool_name("s", "a.b"), llm_tool_name("s", "a/b"));
        assert_ne!(llm_tool_name("s", "a.b"), llm_tool_name("s", "a_b"));
        assert_eq!(llm_tool_name("s", &"x".repeat(60)).len(), MAX_NAME_LEN);
    }

    #[test]
    fn defaults_and_reverse_lookup() {
        let mut registry = Registry::new();
        let bare: Tool = serde_json::from_value(json!({"name": "get.it"})).unwrap();
        let mut null_schema = tool("n");
        null_schema.input_schema = serde_json::value::RawValue::from_string("null".into())
            .unwrap()
            .into();
        null_schema.description = Some("  ".into());
        registry.register_server("srv", &[bare, null_schema]);
        let name = llm_tool_name("srv", "get.it");
        let t = registry.get(&name).unwrap();
        assert_eq!(
            &*t.definition.description,
            "MCP tool \"get.it\" from server \"srv\"."
        );
        let schema = |t: &RegisteredTool| {
            serde_json::from_str::<Value>(t.definition.input_schema.get()).unwrap()
        };
        assert_eq!(schema(t), json!({"type": "object", "properties": {}}));
        assert_eq!(registry.resolve(&name), Some(("srv", "get.it")));
        let n = registry.get("mcp__srv__n").unwrap();
        assert_eq!(
            &*n.definition.description,
            "MCP tool \"n\" from server \"srv\"."
        );
        assert_eq!(schema(n), json!({"type": "object", "properties": {}}));
        assert_eq!(
            serde_json::to_value(&n.definition).unwrap(),
            json!({"name": "mcp__srv__n", "description": "MCP tool \"n\" from server \"srv\".",
                   "input_schema": {"type": "object", "properties": {}}})
        );
    }

    #[test]
    fn collisions_are_reported_not_overwritten() {
        let mut registry = Registry::new();
        assert!(
            registry
                .register_server("a", &[tool("b__c"), tool("x")])
                .is_empty()
        );
        let found = registry.register_server("a__b", &[tool("c"), tool("y")]);
        assert_eq!(
            found,
            [Collision {
                name: "mcp__a__b__c".into(),
                kept: ("a".into(), "b__c".into()),
                dropped: ("a__b".into(), "c".into()),
            }]
        );
        assert!(found[0].to_string().contains("rename one of the servers"));
        assert_eq!(registry.resolve("mcp__a__b__c"), Some(("a", "b__c")));
        assert_eq!(registry.collisions().len(), 1);
        // A duplicate within one server is a collision too.
        let dup = registry.register_server("d", &[tool("t"), tool("t")]);
        assert_eq!(dup.len(), 1);
        assert_eq!(registry.len(), 2 + 1 + 1);
    }

    #[test]
    fn refreshing_a_server_never_touches_another_with_a_longer_name() {
        let mut registry = Registry::new();
        registry.register_server("a", &[tool("one")]);
        registry.register_server("a__b", &[tool("two")]);
        registry.register_server("a", &[tool("three")]);
        let names: Vec<&str> = registry
            .tools()
            .map(|t| t.definition.name.as_str())
            .collect();
        assert_eq!(names, ["mcp__a__b__two", "mcp__a__three"]);
        registry.remove_server("a");
        let names: Vec<&str> = registry
            .tools()
            .map(|t| t.definition.name.as_str())
            .collect();
        assert_eq!(names, ["mcp__a__b__two"]);
        assert_eq!(registry.server_tools("a__b").len(), 1);
    }
}
