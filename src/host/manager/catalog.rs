//! What a server offers besides tools, in the Manager: its resources, resource templates and
//! prompts, listed at connect and again on their `list_changed`; reading, prompting,
//! completing and subscribing by server name; and the two host tools that let the model list
//! and read resources.

use super::*;
use crate::host::events::Event;
use crate::protocol::items::{
    Completion, CompletionRef, Prompt, PromptContents, Resource, ResourceOutput, ResourceTemplate,
};
use crate::wire::truncate::Truncator;

/// The host tool that lists a server's resources and templates (no server's tool can take
/// the name: those are `mcp__<server>__<tool>`).
pub const LIST_RESOURCES_TOOL: &str = "mcp__list_resources";

/// The host tool that reads one resource of a server.
pub const READ_RESOURCE_TOOL: &str = "mcp__read_resource";

/// Most resources a server may be followed for at once.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// A server's resources, resource templates and prompts, as last listed.
#[derive(Debug, Clone, Default, Serialize)]
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

async fn list_of(name: &str, client: &Client, list: List) -> Catalog {
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

impl Manager {
    /// A server's resources, templates and prompts as last listed (empty while it is not
    /// connected); `None` when there is no server of this name.
    pub fn catalog(&self, server: &str) -> Option<Catalog> {
        self.slots().get(server).map(|slot| slot.catalog.clone())
    }

    /// The resources a server is followed for ([`Manager::subscribe`]).
    pub fn subscriptions(&self, server: &str) -> Vec<String> {
        self.slots()
            .get(server)
            .map(|slot| slot.subscriptions.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Lists a server's resources or prompts again and records them (what the watcher does
    /// on a `list_changed`), telling the event stream.
    pub(super) async fn refresh_list(&self, name: &str, client: &Arc<Client>, list: List) {
        let fresh = list_of(name, client, list).await;
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(name) else {
            return;
        };
        if !slot.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            return;
        }
        let (label, count) = match list {
            List::Resources => {
                slot.catalog.resources = fresh.resources;
                slot.catalog.templates = fresh.templates;
                let count = slot.catalog.resources.len() + slot.catalog.templates.len();
                ("resources", count)
            }
            List::Prompts => {
                slot.catalog.prompts = fresh.prompts;
                ("prompts", slot.catalog.prompts.len())
            }
        };
        drop(slots);
        tracing::info!(server = %name, count, "{label} list refreshed");
        self.inner.options.events.publish(Event::ListChanged {
            server: name.to_string(),
            list: label,
            count,
        });
    }

    /// The server's live client, reconnecting once if its session ended.
    async fn live_client(&self, server: &str, method: &str) -> Result<Arc<Client>> {
        if !self.slots().contains_key(server) {
            return Err(no_such_server(server).during(method));
        }
        match self.client(server) {
            Some(c) if !c.is_closed() => Ok(c),
            stale => self.reconnect_after(server, stale.as_ref()).await,
        }
    }

    /// Reads a resource of a server: what the model sees of it, rendered and capped as a
    /// tool result is (the client's output cap, the truncation marker).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ResourceOutput> {
        let client = self.live_client(server, methods::RESOURCES_READ).await?;
        client.read_resource(uri).await
    }

    /// Fills in a prompt of a server with its arguments (`prompts/get`).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: Value,
    ) -> Result<PromptContents> {
        let client = self.live_client(server, methods::PROMPTS_GET).await?;
        client.get_prompt(prompt, arguments).await
    }

    /// Asks a server for values of an argument of one of its prompts or resource templates
    /// (`completion/complete`): `value` is what is typed so far, `context` the arguments
    /// already chosen.
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<Completion> {
        let client = self
            .live_client(server, methods::COMPLETION_COMPLETE)
            .await?;
        client.complete(reference, argument, value, context).await
    }

    /// Follows a resource of a server: its changes come as [`Event::ResourceUpdated`] on
    /// [`Manager::events`] (once [`Manager::watch`] runs). Kept across reconnects; at most
    /// [`MAX_SUBSCRIPTIONS`] a server. A stateless (2026-07-28) server is followed on its
    /// `subscriptions/listen` stream, an initialize-era one with `resources/subscribe`.
    pub async fn subscribe(&self, server: &str, uri: &str) -> Result<()> {
        let method = methods::RESOURCES_SUBSCRIBE;
        let client = self.live_client(server, method).await?;
        // Followed before the server is asked: the update it may send at once is announced
        // (only followed resources are).
        let added = {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| no_such_server(server).during(method))?;
            if slot.subscriptions.len() >= MAX_SUBSCRIPTIONS && !slot.subscriptions.contains(uri) {
                let why = format!(
                    "{MAX_SUBSCRIPTIONS} resources of this server are followed already, the most at once; unsubscribe from one first"
                );
                return Err(Error::new(server, ErrorKind::Limit(why)).during(method));
            }
            let added = slot.subscriptions.insert(uri.to_string());
            slot.listening
                .send_replace(slot.subscriptions.iter().cloned().collect());
            added
        };
        if client.details().era != crate::protocol::types::Era::Stateless
            && let Err(e) = client.subscribe(uri).await
        {
            if added && let Some(slot) = self.slots().get_mut(server) {
                slot.subscriptions.remove(uri);
                slot.listening
                    .send_replace(slot.subscriptions.iter().cloned().collect());
            }
            return Err(e);
        }
        Ok(())
    }

    /// Stops following a resource ([`Manager::subscribe`]).
    pub async fn unsubscribe(&self, server: &str, uri: &str) -> Result<()> {
        let method = methods::RESOURCES_UNSUBSCRIBE;
        let client = self.live_client(server, method).await?;
        let followed = {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(server)
                .ok_or_else(|| no_such_server(server).during(method))?;
            let followed = slot.subscriptions.remove(uri);
            slot.listening
                .send_replace(slot.subscriptions.iter().cloned().collect());
            followed
        };
        if followed && client.details().era != crate::protocol::types::Era::Stateless {
            client.unsubscribe(uri).await?;
        }
        Ok(())
    }

    /// The host tools' definitions, when any connected server has resources or templates.
    pub(super) fn resource_tool_definitions(&self) -> Vec<ToolDefinition> {
        let servers: Vec<String> = self
            .slots()
            .iter()
            .filter(|(_, s)| {
                s.state == ServerState::Connected
                    && !(s.catalog.resources.is_empty() && s.catalog.templates.is_empty())
            })
            .map(|(name, _)| name.clone())
            .collect();
        if servers.is_empty() {
            return Vec::new();
        }
        let names = servers.join(", ");
        let server = serde_json::json!({"type": "string", "enum": servers, "description": "The MCP server."});
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

    /// Runs a host tool ([`LIST_RESOURCES_TOOL`], [`READ_RESOURCE_TOOL`]) through the gate;
    /// `None` when `name` is not one.
    pub(super) async fn call_resource_tool(
        &self,
        name: &str,
        arguments: &Value,
        mode: PermissionMode,
    ) -> Option<Result<ToolOutput, CallError>> {
        if name != LIST_RESOURCES_TOOL && name != READ_RESOURCE_TOOL {
            return None;
        }
        let text_argument = |key: &str| arguments.get(key).and_then(Value::as_str);
        let Some(server) = text_argument("server") else {
            return Some(Ok(error_output(format!(
                "{name} needs \"server\": one of the servers its description names"
            ))));
        };
        if let Err(denied) = self
            .inner
            .gate
            .check(name, Some(server), arguments, mode)
            .await
        {
            return Some(Err(CallError::Denied(denied)));
        }
        if name == LIST_RESOURCES_TOOL {
            let Some(catalog) = self.catalog(server) else {
                return Some(Ok(error_output(format!(
                    "there is no MCP server {:?}",
                    crate::text::escape_controls(server)
                ))));
            };
            return Some(Ok(listing(
                server,
                &catalog,
                self.inner.options.client.output_cap,
            )));
        }
        let Some(uri) = text_argument("uri") else {
            return Some(Ok(error_output(format!(
                "{name} needs \"uri\": a resource's URI from {LIST_RESOURCES_TOOL}"
            ))));
        };
        Some(match self.read_resource(server, uri).await {
            Ok(read) => Ok(ToolOutput {
                text: read.text,
                total_bytes: read.total_bytes,
                is_error: false,
            }),
            Err(e) => Err(CallError::Server(e)),
        })
    }
}

/// What the model sees of a server's resources: a heading, then one JSON object a line,
/// through the truncator.
fn listing(server: &str, catalog: &Catalog, cap: usize) -> ToolOutput {
    let mut out = Truncator::new(cap);
    let heading = format!(
        "{} resources and {} resource templates of {}:\n",
        catalog.resources.len(),
        catalog.templates.len(),
        crate::text::escape_controls(server)
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

fn error_output(text: String) -> ToolOutput {
    ToolOutput {
        total_bytes: text.len() as u64,
        text,
        is_error: true,
    }
}

fn no_such_server(name: &str) -> Error {
    Error::new(
        name,
        ErrorKind::Usage(
            "there is no server by this name; see `agenvoy-mcp tools` for the servers".into(),
        ),
    )
}
