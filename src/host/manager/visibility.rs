//! Which of a server's tools the model sees: its tools as last listed, hidden ones included,
//! with its tool filter ([`ToolList`]), and each as [`crate::host::Manager::server_tools`] shows it.

use crate::host::filter::ToolFilter;
use crate::host::registry::llm_tool_name;
use crate::protocol::types::Tool;
use serde::Serialize;
use std::borrow::Cow;

/// One of a server's tools as [`Manager::server_tools`](crate::host::Manager::server_tools)
/// lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerTool {
    /// Its registered name, `mcp__<server>__<tool>` (what it is or would be registered as).
    pub name: String,
    /// Its name on its server.
    pub tool: String,
    /// Its description (trimmed; empty when it has none), the server's text.
    pub description: String,
    /// Whether the model sees it (registered, callable): the server's filter shows it, and
    /// it is not only for its MCP Apps page (`visibility: ["app"]`).
    pub visible: bool,
    /// The UI a host renders for its results (MCP Apps), if the server names a valid one
    /// ([`Tool::ui`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ui: Option<crate::ToolUi>,
}

/// A server's tools as it last listed them, and the filter that says which the model sees.
pub(super) struct ToolList {
    tools: Vec<Tool>,
    filter: ToolFilter,
}

impl ToolList {
    pub(super) fn new() -> ToolList {
        ToolList {
            tools: Vec::new(),
            filter: ToolFilter::all(),
        }
    }

    /// Every tool, hidden ones included.
    pub(super) fn all(&self) -> &[Tool] {
        &self.tools
    }

    pub(super) fn set(&mut self, tools: Vec<Tool>) {
        self.tools = tools;
    }

    pub(super) fn filter(&self) -> &ToolFilter {
        &self.filter
    }

    pub(super) fn set_filter(&mut self, filter: ToolFilter) {
        self.filter = filter;
    }

    /// Whether the model sees `tool`: the filter shows it, and it is not only for an MCP Apps
    /// page (`_meta.ui.visibility` without `"model"`, which a host must not offer the model).
    fn shown(&self, tool: &Tool) -> bool {
        self.filter.allows(&tool.name) && tool.ui().is_none_or(|ui| ui.visible_to_model())
    }

    /// The tools the model sees ([`Self::shown`]; no copy when it sees all).
    pub(super) fn visible(&self) -> Cow<'_, [Tool]> {
        if self.tools.iter().all(|t| self.shown(t)) {
            return Cow::Borrowed(&self.tools);
        }
        let shown = self.tools.iter().filter(|t| self.shown(t));
        Cow::Owned(shown.cloned().collect())
    }

    /// How many tools the model does not see.
    pub(super) fn hidden(&self) -> usize {
        self.tools.iter().filter(|t| !self.shown(t)).count()
    }

    /// Every tool of server `server` with its registered name and whether the model sees it.
    pub(super) fn server_tools(&self, server: &str) -> Vec<ServerTool> {
        self.tools
            .iter()
            .map(|t| ServerTool {
                name: llm_tool_name(server, &t.name),
                tool: t.name.clone(),
                description: t.description.as_deref().unwrap_or("").trim().to_string(),
                visible: self.shown(t),
                ui: t.ui(),
            })
            .collect()
    }
}
