//! What the model may call: the registry of the visible tools, whether servers' tools go into
//! it, and the tool-search index of it, kept for the registry's generation ([`Registered`]).

use crate::host::registry::{Collision, Registry, ToolDefinition, llm_tool_name};
use crate::host::status::STATUS_LOG;
use crate::host::tool_search::{
    Conversation, DEFAULT_SEARCH_LIMIT, ToolIndex, ToolMatch, ToolSearch, search_tool_definition,
};
use crate::protocol::types::{Tool, ToolOutput};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The registry and its search index.
pub(super) struct Registered {
    registry: RwLock<Registry>,
    /// Whether servers' tools are registered as they connect and change: not while
    /// [`crate::host::Manager::new`] connects (it registers all at the end).
    on: AtomicBool,
    /// Bumped at every change of the registry; the index below is of one generation.
    generation: AtomicU64,
    index: Mutex<Option<(u64, Arc<ToolIndex>)>>,
    /// When tool search is on (the options', else the config's).
    tool_search: Option<ToolSearch>,
}

impl Registered {
    pub(super) fn new(tool_search: Option<ToolSearch>) -> Registered {
        Registered {
            registry: RwLock::new(Registry::new()),
            on: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            index: Mutex::new(None),
            tool_search,
        }
    }

    pub(super) fn read(&self) -> RwLockReadGuard<'_, Registry> {
        self.registry.read().expect("registry lock")
    }

    /// The registry, to change: the search index is of the generation before.
    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Registry> {
        let guard = self.registry.write().expect("registry lock");
        self.generation.fetch_add(1, Ordering::SeqCst);
        guard
    }

    pub(super) fn is_on(&self) -> bool {
        self.on.load(Ordering::SeqCst)
    }

    pub(super) fn turn_on(&self) {
        self.on.store(true, Ordering::SeqCst);
    }

    /// Registers server `name`'s visible tools in place of its old ones (`None`: it is not
    /// connected, it has none) and returns the name collisions, each logged.
    pub(super) fn register(&self, name: &str, tools: Option<&[Tool]>) -> Vec<Collision> {
        let mut registry = self.write();
        let Some(tools) = tools else {
            registry.remove_server(name);
            return Vec::new();
        };
        let collisions = registry.register_server(name, tools);
        for c in &collisions {
            tracing::warn!(target: STATUS_LOG, server = %name, "{c}");
        }
        collisions
    }

    /// The search index of the registered tools now, built again from `registered` (see
    /// [`Registered::of`]) after each change of the registry.
    pub(super) fn index(&self, registered: impl FnOnce() -> Vec<(String, Tool)>) -> Arc<ToolIndex> {
        let generation = self.generation.load(Ordering::SeqCst);
        if let Some((g, index)) = &*self.index.lock().expect("index lock")
            && *g == generation
        {
            return index.clone();
        }
        // Copied under the locks (shared descriptions and schemas), indexed outside them.
        let tools = registered();
        let index = Arc::new(ToolIndex::new(tools.iter().map(|(s, t)| (s.as_str(), t))));
        *self.index.lock().expect("index lock") = Some((generation, index.clone()));
        index
    }

    /// Those of `listed` (each server's tools) that are registered, under their server.
    pub(super) fn of<'a>(
        &self,
        listed: impl IntoIterator<Item = (&'a String, &'a [Tool])>,
    ) -> Vec<(String, Tool)> {
        let registry = self.read();
        let registry = &registry;
        listed
            .into_iter()
            .flat_map(|(name, tools)| {
                tools.iter().filter_map(move |t| {
                    let registered = llm_tool_name(name, &t.name);
                    let here = registry
                        .get(&registered)
                        .is_some_and(|r| r.server == *name && r.tool == t.name);
                    here.then(|| (name.clone(), t.clone()))
                })
            })
            .collect()
    }

    /// Whether tool search is on and `index`'s definitions are over its budget.
    pub(super) fn search_active(&self, index: &ToolIndex) -> bool {
        self.tool_search
            .is_some_and(|s| index.definition_bytes() / 4 > s.above_tokens)
    }

    /// What a conversation is offered while tool search is active: the search tool, the host
    /// tools, and the tools the conversation found, first found first.
    pub(super) fn offered(
        &self,
        host_tools: Vec<ToolDefinition>,
        conversation: &Conversation,
    ) -> Vec<ToolDefinition> {
        let registry = self.read();
        let found = conversation.found();
        let found = found
            .iter()
            .filter_map(|name| registry.get(name).map(|t| t.definition.clone()));
        std::iter::once(search_tool_definition())
            .chain(host_tools)
            .chain(found)
            .collect()
    }
}

/// The search tool's arguments: the query, and how many tools at most (at least one).
pub(super) fn search_arguments(arguments: &Value) -> (&str, usize) {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_SEARCH_LIMIT, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    (query, limit.max(1))
}

/// A definition the search tool found, with its score.
#[derive(serde::Serialize)]
struct Found<'a> {
    #[serde(flatten)]
    definition: &'a ToolDefinition,
    score: f32,
    weak: bool,
}

/// What the search tool returns: the definitions found as JSON, each with its score and
/// whether it is weak (`{"tools": [{"name", "description", "input_schema", "score",
/// "weak"}]}`, and a `"note"` when every one is weak), or a note that none matches.
pub(super) fn search_output(query: &str, found: &[ToolMatch<'_>]) -> ToolOutput {
    let text = if found.is_empty() {
        format!(
            "No tool matches {:?}; try other words.",
            crate::safe_text::escape_controls(query)
        )
    } else {
        let tools: Vec<Found> = found
            .iter()
            .map(|m| Found {
                definition: &m.tool.definition,
                score: m.score,
                weak: m.is_weak(),
            })
            .collect();
        let mut answer = serde_json::json!({"tools": tools});
        if found.iter().all(ToolMatch::is_weak) {
            answer["note"] = serde_json::json!(
                "Every match is weak: no tool has much of what the query says. Try other words, or go on without a tool."
            );
        }
        answer.to_string()
    };
    ToolOutput {
        total_bytes: text.len() as u64,
        text,
        is_error: false,
    }
}
