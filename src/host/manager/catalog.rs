//! What a server offers besides tools: its resources, resource templates, prompts and skills,
//! listed at connect and again on their `list_changed` ([`ServerCatalog`] keeps them with the
//! resources followed), the two host tools that let the model list and read resources, and
//! the one that loads a skill.

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::host::registry::ToolDefinition;
use crate::protocol::items::{Prompt, Resource, ResourceTemplate};
use crate::protocol::skills::{SKILLS_EXTENSION, Skill, SkillFileContent};
use crate::protocol::types::ToolOutput;
use crate::wire::truncate::Truncator;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::watch;

/// The host tool that lists a server's resources and templates (no server's tool can take
/// the name: those are `mcp__<server>__<tool>`).
pub const LIST_RESOURCES_TOOL: &str = "mcp__list_resources";

/// The host tool that reads one resource of a server.
pub const READ_RESOURCE_TOOL: &str = "mcp__read_resource";

/// The host tool that loads a skill of a server (its `SKILL.md`, or one of its files).
pub const LOAD_SKILL_TOOL: &str = "mcp__load_skill";

/// Most skills [`LOAD_SKILL_TOOL`]'s description names, of all servers; the rest are loaded
/// by name all the same.
pub const MAX_SKILLS_DESCRIBED: usize = 64;

/// Most characters of a skill's description in [`LOAD_SKILL_TOOL`]'s description.
const MAX_SKILL_DESCRIPTION: usize = 200;

/// Most characters of a skill's name there (the Agent Skills format allows 64).
const MAX_SKILL_NAME: usize = 64;

/// Most resources a server may be followed for at once.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// A server's resources, resource templates and prompts, as last listed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Catalog {
    /// Its resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub templates: Vec<ResourceTemplate>,
    /// Its prompts.
    pub prompts: Vec<Prompt>,
    /// Its skills' entries (the skills extension), when the client declares the extension
    /// ([`Handlers::with_skills`](crate::Handlers::with_skills)) and the server serves it:
    /// no skill file is read until one is loaded.
    pub skills: Vec<Skill>,
}

/// Which lists a refresh reads again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum List {
    Resources,
    Prompts,
    Skills,
}

/// Lists a server's resources, templates, prompts and skills, as its capabilities announce
/// them, all at once. A list that fails stays empty, with a warning: the server still serves
/// its tools.
pub(super) async fn list_catalog(name: &str, client: &Client) -> Catalog {
    let (resources, prompts, skills) = tokio::join!(
        list_of(name, client, List::Resources),
        list_of(name, client, List::Prompts),
        list_of(name, client, List::Skills)
    );
    let mut catalog = resources;
    catalog.prompts = prompts.prompts;
    catalog.skills = skills.skills;
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
        List::Skills if serves_skills(client) => match client.list_skills().await {
            Ok(s) => catalog.skills = s,
            Err(e) => tracing::warn!(server = %name, "listing its skills failed: {e}"),
        },
        _ => {}
    }
    catalog
}

/// Whether both sides declared the skills extension.
pub(super) fn serves_skills(client: &Client) -> bool {
    let declared = client.details().capabilities.get("extensions");
    client.session().handlers().skills
        && declared
            .and_then(|e| e.get(SKILLS_EXTENSION))
            .is_some_and(Value::is_object)
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
            List::Skills => {
                self.lists.skills = fresh.skills;
                ("skills", self.lists.skills.len())
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

/// [`LOAD_SKILL_TOOL`]'s definition, naming the skills of `servers` (each server with its
/// skills) up to [`MAX_SKILLS_DESCRIBED`], each name cut to 64 characters and each
/// description to 200; none when no server has skills.
pub(super) fn skill_tool_definition(servers: &[(&str, &[Skill])]) -> Option<ToolDefinition> {
    let names: Vec<&str> = servers.iter().map(|(name, _)| *name).collect();
    if names.is_empty() {
        return None;
    }
    let all = servers
        .iter()
        .flat_map(|(server, skills)| skills.iter().map(move |s| (*server, s)));
    let total = servers.iter().map(|(_, s)| s.len()).sum::<usize>();
    let mut listed = String::new();
    for (server, skill) in all.take(MAX_SKILLS_DESCRIBED) {
        let cut = |text: &str, most: usize| text.chars().take(most).collect::<String>();
        listed.push_str(&format!(
            "\n- {}/{}: {}",
            crate::safe_text::escape_controls(server),
            crate::safe_text::escape_controls(&cut(skill.name(), MAX_SKILL_NAME)),
            crate::safe_text::escape_controls(
                cut(skill.description(), MAX_SKILL_DESCRIPTION).trim()
            )
        ));
    }
    if total > MAX_SKILLS_DESCRIBED {
        listed.push_str(&format!("\n(and {} more)", total - MAX_SKILLS_DESCRIBED));
    }
    let description = format!(
        "Loads an Agent Skill an MCP server offers: its SKILL.md instructions, verified, with the list of its other files; give \"file\" to read one of those. Load a skill when a task matches its description, then follow it. Skills (server/name: description):{listed}"
    );
    let schema = serde_json::json!({"type": "object", "properties": {
        "server": {"type": "string", "enum": names, "description": "The MCP server."},
        "skill": {"type": "string", "description": "The skill's name (or its SKILL.md URI)."},
        "file": {"type": "string", "description": "One of the skill's files, by the URI its SKILL.md load listed."}
    }, "required": ["server", "skill"]});
    Some(ToolDefinition {
        name: LOAD_SKILL_TOOL.into(),
        description: Arc::from(description),
        input_schema: serde_json::value::RawValue::from_string(schema.to_string())
            .expect("valid JSON")
            .into(),
    })
}

/// The skill of `skills` that `key` names, and the URI of the file to read: a skill's name
/// or `SKILL.md` URI gives its `SKILL.md`; a file's URI, the skill that lists it (or, for a
/// skill whose files are `"dynamic"`, the one whose folder holds it).
pub(super) fn find_skill(skills: &[Skill], key: &str) -> Option<(Skill, String)> {
    let named = skills.iter().find(|s| s.uri == key);
    let named = named.or_else(|| skills.iter().find(|s| s.name() == key));
    if let Some(skill) = named {
        return Some((skill.clone(), skill.uri.clone()));
    }
    let holds = |s: &&Skill| match &s.files {
        Some(files) => files.iter().any(|f| f.uri == key),
        None => key
            .strip_prefix(s.uri.trim_end_matches("SKILL.md"))
            .is_some_and(|rest| {
                !rest.is_empty() && !rest.split('/').any(|p| p == ".." || p == ".")
            }),
    };
    let skill = skills.iter().find(holds)?;
    Some((skill.clone(), key.to_string()))
}

/// What the model sees of a loaded skill file: the file, and after a `SKILL.md` the skill's
/// other files, through the truncator.
pub(super) fn loaded_skill(skill: &Skill, file: &SkillFileContent, cap: usize) -> ToolOutput {
    let mut out = Truncator::new(cap);
    match file.text() {
        Some(text) => out.push(crate::safe_text::escape_controls_keep_lines(text).as_bytes()),
        None => out.push(
            format!(
                "[{} is binary: {} bytes of {}]",
                file.uri,
                file.bytes.len(),
                file.mime_type.as_deref().unwrap_or("unknown type")
            )
            .as_bytes(),
        ),
    }
    let others: Vec<&str> = skill
        .files
        .iter()
        .flatten()
        .map(|f| f.uri.as_str())
        .filter(|uri| *uri != skill.uri)
        .collect();
    if file.uri == skill.uri && !others.is_empty() {
        let list = format!(
            "\n\n[files of the skill {}, read one with \"file\": {}]",
            skill.name(),
            others.join(", ")
        );
        out.push(list.as_bytes());
    }
    let total_bytes = out.total();
    ToolOutput {
        text: out.finish(),
        total_bytes,
        is_error: false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, description: &str) -> Skill {
        serde_json::from_value(serde_json::json!({
            "uri": format!("skill://{name}/SKILL.md"),
            "frontmatter": {"name": name, "description": description},
            "resources": []
        }))
        .unwrap()
    }

    #[test]
    fn the_skill_tool_names_a_bounded_number_of_skills_cut_and_escaped() {
        let long = "n".repeat(1000);
        let mut skills = vec![skill(&long, &format!("evil\u{1b}[2J{}", "d".repeat(1000)))];
        skills.extend((0..69).map(|i| skill(&format!("s{i}"), "does a thing")));
        let definition = skill_tool_definition(&[("kit", &skills)]).unwrap();
        let text = &definition.description;
        assert_eq!(text.matches("\n- kit/").count(), MAX_SKILLS_DESCRIBED);
        assert!(text.ends_with("\n(and 6 more)"), "{text}");
        assert!(text.contains(&format!("kit/{}: ", "n".repeat(64))));
        assert!(!text.contains(&"n".repeat(65)));
        assert!(!text.contains('\u{1b}') && text.contains("\\u{1b}[2J"));
        assert!(!text.contains(&"d".repeat(200)), "the description is cut");
        assert!(skill_tool_definition(&[]).is_none());
    }
}
