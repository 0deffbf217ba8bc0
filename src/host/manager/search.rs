//! Tool search in the Manager: the index of the visible tools, kept for the registry's
//! generation, and what a conversation is offered and may call.

use super::*;

impl Manager {
    /// The search index of the visible (registered) tools now, built again after each
    /// change of the registry.
    pub fn tool_index(&self) -> Arc<ToolIndex> {
        let generation = self.inner.generation.load(Ordering::SeqCst);
        if let Some((g, index)) = &*self.inner.index.lock().expect("index lock")
            && *g == generation
        {
            return index.clone();
        }
        // Copied under the locks (shared descriptions and schemas), indexed outside them.
        let tools: Vec<(String, Tool)> = {
            let slots = self.slots();
            let registry = self.inner.registry.read().expect("registry lock");
            slots
                .iter()
                .flat_map(|(name, slot)| {
                    let registry = &registry;
                    slot.tools.iter().filter_map(move |t| {
                        let registered = crate::host::registry::llm_tool_name(name, &t.name);
                        let here = registry
                            .get(&registered)
                            .is_some_and(|r| r.server == *name && r.tool == t.name);
                        here.then(|| (name.clone(), t.clone()))
                    })
                })
                .collect()
        };
        let index = Arc::new(ToolIndex::new(tools.iter().map(|(s, t)| (s.as_str(), t))));
        *self.inner.index.lock().expect("index lock") = Some((generation, index.clone()));
        index
    }

    /// The registered tools that best match `query`, best first (at most `limit`, and
    /// [`MAX_SEARCH_LIMIT`](crate::host::MAX_SEARCH_LIMIT)): what the search tool returns, and `GET
    /// /v1/mcp/tools/search`.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<RegisteredTool> {
        self.tool_index()
            .search(query, limit)
            .into_iter()
            .cloned()
            .collect()
    }

    /// Whether tool search is on and the visible tools' definitions are over its budget:
    /// then [`Manager::offered_tools`] offers the search tool.
    pub fn tool_search_active(&self) -> bool {
        self.inner
            .tool_search
            .is_some_and(|s| self.tool_index().definition_bytes() / 4 > s.above_tokens)
    }

    /// The definitions to offer the model in `conversation`: every visible tool's while
    /// tool search is off or under its budget; else the search tool ([`SEARCH_TOOL`]) and
    /// the tools the conversation found, first found first.
    pub fn offered_tools(&self, conversation: &Conversation) -> Vec<ToolDefinition> {
        if !self.tool_search_active() {
            return self.tool_definitions();
        }
        let host_tools = self.resource_tool_definitions();
        let registry = self.inner.registry.read().expect("registry lock");
        std::iter::once(search_tool_definition())
            .chain(host_tools)
            .chain(
                conversation
                    .found()
                    .iter()
                    .filter_map(|name| registry.get(name).map(|t| t.definition.clone())),
            )
            .collect()
    }

    /// [`Manager::call`] within a conversation: [`SEARCH_TOOL`] runs the search (arguments
    /// `query` and `limit`), records the tools it found in `conversation` and returns their
    /// definitions as JSON (`{"tools": [...]}`); any other name is called as
    /// [`Manager::call`] does, found or not.
    pub async fn call_in(
        &self,
        conversation: &Conversation,
        name: &str,
        arguments: Value,
        mode: PermissionMode,
    ) -> Result<ToolOutput, CallError> {
        if name != SEARCH_TOOL {
            return self.call(name, arguments, mode).await;
        }
        let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_SEARCH_LIMIT, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            });
        let found = self.search_tools(query, limit.max(1));
        conversation.add_found(found.iter().map(|t| t.definition.name.as_str()));
        let definitions: Vec<&ToolDefinition> = found.iter().map(|t| &t.definition).collect();
        let text = if definitions.is_empty() {
            format!(
                "No tool matches {:?}; try other words.",
                crate::text::escape_controls(query)
            )
        } else {
            serde_json::json!({"tools": definitions}).to_string()
        };
        Ok(ToolOutput {
            total_bytes: text.len() as u64,
            text,
            is_error: false,
        })
    }
}
