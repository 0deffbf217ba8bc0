//! What a server offers besides tools: its resources, resource templates and prompts,
//! listed at connect and again on their `list_changed` ([`ServerCatalog`] keeps them with the
//! resources followed), and the two host tools that let the model list and read resources.

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::host::registry::ToolDefinition;
use crate::protocol::items::{Prompt, Resource, ResourceTemplate};
use crate::protocol::types::ToolOutput;
use crate::wire::truncate::Truncator;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::watch;

/// The host tool that lists a server's resources and templates (no server's tool can take
/// the name: those are `mcp__<server>__<tool>`).
pub const LIST_RESOURCES_TOOL: &str = "mcp__list_resources";

/// The host tool that reads one resource of a server.
pub const READ_RESOURCE_TOOL: &str = "mcp__read_resource";

/// Most resources a server may be followed for at once.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// A server's resources, resource templates and prompts, as last listed.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Catalog {
    /// Its resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub templates: Vec<ResourceTemplate>,
    /// Its prompts.
    pub prompts: Vec<Prompt>,
}

/// Which lists a refresh reads again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum List {
    Resources,
    Prompts,
}

/// Lists a server's resources, templates and prompts, as its capabilities announce them,
/// all at once. A list that fails stays empty, with a warning: the server still serves its
/// tools.
pub(super) async fn list_catalog(name: &str, client: &Client) -> Catalog {
    let (resources, prompts) = tokio::join!(
        list_of(name, client, List::Resources),
        list_of(name, client, List::Prompts)
    );
    let mut catalog = resources;
    catalog.prompts = prompts.prompts;
    catalog
}

pub(super) async fn list_of(name: &str, client: &Client, list: List) -> Catalog {
    let mut catalog = Catalog::default();
    match list {
        List::Resources if client.details().has_capability("resources") => {
            let (resources, templates) =
                tokio::join!(client.list_resources(), client.list_resource_templates());
            match resources {
                Ok(r) => catalog.resources = r,
                Err(e) => tracing::warn!(server = %name, "listing its resources failed: {e}"),
            }
            // Templates are optional: a server without them answers "method not found".
            match templates {
                Ok(t) => catalog.templates = t,
                Err(e) => tracing::debug!(server = %name, "no resource templates: {e}"),
            }
        }
        List::Prompts if client.details().has_capability("prompts") => {
            match client.list_prompts().await {
                Ok(p) => catalog.prompts = p,
                Err(e) => tracing::warn!(server = %name, "listing its prompts failed: {e}"),
            }
        }
        _ => {}
    }
    catalog
}

/// A server's catalog as the manager keeps it: the lists as last read, and the resources it
/// is followed for ([`crate::host::Manager::subscribe`]).
pub(super) struct ServerCatalog {
    lists: Catalog,
    subscriptions: BTreeSet<String>,
    /// The same, for a stateless server's `subscriptions/listen` (opened anew on a change).
    listening: watch::Sender<Vec<String>>,
}

impl ServerCatalog {
    pub(super) fn new() -> ServerCatalog {
        ServerCatalog {
            lists: Catalog::default(),
            subscriptions: BTreeSet::new(),
            listening: watch::Sender::new(Vec::new()),
        }
    }

    pub(super) fn lists(&self) -> &Catalog {
        &self.lists
    }

    /// Puts fresh lists in place (empty ones when the server is gone); what is followed stays.
    pub(super) fn replace(&mut self, lists: Catalog) {
        self.lists = lists;
    }

    /// Records one list read again; returns its label and how many entries it has now.
    pub(super) fn refresh(&mut self, list: List, fresh: Catalog) -> (&'static str, usize) {
        match list {
            List::Resources => {
                self.lists.resources = fresh.resources;
                self.lists.templates = fresh.templates;
                let count = self.lists.resources.len() + self.lists.templates.len();
                ("resources", count)
            }
            List::Prompts => {
                self.lists.prompts = fresh.prompts;
                ("prompts", self.lists.prompts.len())
            }
        }
    }

    /// Whether it has resources or templates for the host tools to list and read.
    pub(super) fn has_resources(&self) -> bool {
        !(self.lists.resources.is_empty() && self.lists.templates.is_empty())
    }

    pub(super) fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.iter().cloned().collect()
    }

    /// The resources followed, as they change: what a watcher listens with.
    pub(super) fn listening(&self) -> watch::Receiver<Vec<String>> {
        self.listening.subscribe()
    }

    /// Follows `uri` of server `server`, at most [`MAX_SUBSCRIPTIONS`]; true if it was not
    /// followed yet.
    pub(super) fn follow(&mut self, server: &str, uri: &str) -> Result<bool> {
        if self.subscriptions.len() >= MAX_SUBSCRIPTIONS && !self.subscriptions.contains(uri) {
            let why = format!(
                "{MAX_SUBSCRIPTIONS} resources of this server are followed already, the most at once; unsubscribe from one first"
            );
            return Err(Error::new(server, ErrorKind::Limit(why)));
        }
        let added = self.subscriptions.insert(uri.to_string());
        self.listening.send_replace(self.subscriptions());
        Ok(added)
    }

    /// Stops following `uri`; true if it was followed.
    pub(super) fn unfollow(&mut self, uri: &str) -> bool {
        let followed = self.subscriptions.remove(uri);
        self.listening.send_replace(self.subscriptions());
        followed
    }
}

/// The host tools' definitions, for the servers (connected) that have resources; none when
/// there are no such servers.
pub(super) fn resource_tool_definitions(servers: Vec<String>) -> Vec<ToolDefinition> {
    if servers.is_empty() {
        return Vec::new();
    }
    let names = servers.join(", ");
    let server =
        serde_json::json!({"type": "string", "enum": servers, "description": "The MCP server."});
    let definition = |name: &str, description: String, schema: Value| ToolDefinition {
        name: name.into(),
        description: Arc::from(description),
        input_schema: serde_json::value::RawValue::from_string(schema.to_string())
            .expect("valid JSON")
            .into(),
    };
    vec![
        definition(
            LIST_RESOURCES_TOOL,
            format!(
                "Lists the resources (data such as files, records, documents) and resource templates an MCP server offers, one JSON object a line. Servers with resources: {names}."
            ),
            serde_json::json!({"type": "object", "properties": {"server": server}, "required": ["server"]}),
        ),
        definition(
            READ_RESOURCE_TOOL,
            format!(
                "Reads one resource of an MCP server by its URI (from {LIST_RESOURCES_TOOL}, or a template with its variables filled in). Servers with resources: {names}."
            ),
            serde_json::json!({"type": "object", "properties": {
                "server": server,
                "uri": {"type": "string", "description": "The resource's URI."}
            }, "required": ["server", "uri"]}),
        ),
    ]
}

/// A text argument of a host tool's call.
pub(super) fn text_argument<'a>(arguments: &'a Value, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str)
}

/// What the model sees of a server's resources: a heading, then one JSON object a line,
/// through the truncator.
pub(super) fn listing(server: &str, catalog: &Catalog, cap: usize) -> ToolOutput {
    let mut out = Truncator::new(cap);
    let heading = format!(
        "{} resources and {} resource templates of {}:\n",
        catalog.resources.len(),
        catalog.templates.len(),
        crate::safe_text::escape_controls(server)
    );
    out.push(heading.as_bytes());
    let lines = catalog
        .resources
        .iter()
        .map(serde_json::to_vec)
        .chain(catalog.templates.iter().map(serde_json::to_vec));
    for line in lines.flatten() {
        out.push(&line);
        out.push(b"\n");
    }
    let total_bytes = out.total();
    ToolOutput {
        text: out.finish(),
        total_bytes,
        is_error: false,
    }
}

pub(super) fn error_output(text: String) -> ToolOutput {
    ToolOutput {
        total_bytes: text.len() as u64,
        text,
        is_error: true,
    }
}

pub(super) fn no_such_server(name: &str) -> Error {
    Error::new(name, ErrorKind::UnknownServer)
}
