//! The config file: `~/.config/agenvoy/mcp.json` (`$AGENVOY_CONFIG_DIR` overrides the folder).
//!
//! ```json
//! {"servers": {
//!   "time":   {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "$TZ"}},
//!   "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
//!   "linear": {"url": "https://mcp.linear.app/mcp", "auth": "oauth", "oauth_client_name": "agenvoy"}
//! }}
//! ```
//!
//! One file, no other layer. A server is either local (`command`, `args`, `env`, and
//! `inherit_env`: `true` passes it this process's whole environment instead of the small
//! default set, see [`crate::transport::stdio::DEFAULT_ENV`]) or remote
//! (`url`, `headers`, `auth`, `oauth_client_name`, and for a client registered by hand
//! `oauth_client_id`, `oauth_client_secret` or `oauth_client_private_key`,
//! `oauth_redirect_uri`; `oauth_client_metadata_url` names a Client ID Metadata Document;
//! `oauth_grant` and `oauth_workload_assertion` pick a machine grant: see [`HttpServer`]),
//! never both. Names match `[A-Za-z0-9_-]+`. Either kind may set `timeout` (seconds for each
//! request's answer) and `startup_timeout` (seconds to connect and finish the handshake): see
//! [`Timeouts`].
//! `$VAR` and `${VAR}` in `args`, `env`, `headers` and `oauth_client_secret` are expanded when the server is
//! connected (see [`super::expand`]), never when the file is read or saved, so secrets stay
//! references in the file.
//!
//! A broken file (not JSON, not an object, `servers` not an object) is an error with its line
//! and column; one bad server entry is an error of that server only, so the others still run.
//! The document is kept as read: members this crate does not know survive a save. Saves are
//! atomic (a temporary file renamed over the old one) and the file is mode 0600.

mod server_entry;

use super::config_error::ConfigError;
use super::filter::ToolFilter;
use super::start::Start;
use serde_json::{Map, Value};
pub(crate) use server_entry::start_member;
pub use server_entry::{HttpServer, MAX_TIMEOUT, ServerConfig, StdioServer, Timeouts};
use server_entry::{enabled_member, read_entry};
use std::fmt;
use std::path::{Path, PathBuf};

/// The config file's name inside the config folder.
pub const CONFIG_FILE: &str = "mcp.json";

/// The config folder: `$AGENVOY_CONFIG_DIR`, else `~/.config/agenvoy` (`~` is `HOME`; on
/// Windows, where it is seldom set, `USERPROFILE`).
pub fn config_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENVOY_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    #[cfg(windows)]
    let home = home.or_else(|| std::env::var_os("USERPROFILE").filter(|h| !h.is_empty()));
    let home = home.map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".config").join("agenvoy")
}

/// The default config file: `mcp.json` in [`config_dir`].
pub fn default_config_path() -> PathBuf {
    config_dir().join(CONFIG_FILE)
}

/// The longest server name: `mcp__<server>__` then leaves a tool name room within the 64
/// characters model APIs (OpenAI's, Anthropic's) accept for a tool's name.
pub const MAX_SERVER_NAME: usize = 32;

/// Whether `name` is a valid server name: `[A-Za-z0-9_-]{1,32}`.
pub fn is_valid_server_name(name: &str) -> bool {
    server_name_problem(name).is_none()
}

/// What is wrong with `name` as a server name, if anything, said so a user can fix it.
pub fn server_name_problem(name: &str) -> Option<String> {
    let shown: String = name.chars().take(40).collect();
    let shown = if shown.len() < name.len() {
        format!("{shown}…")
    } else {
        shown
    };
    if name.is_empty() {
        Some("the server name is empty; give it one of letters, digits, '_' or '-'".into())
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Some(format!(
            "server name {shown:?} is not valid: use letters, digits, '_' or '-' (it becomes part of tool names)"
        ))
    } else if name.len() > MAX_SERVER_NAME {
        Some(format!(
            "server name {shown:?} is {} characters; at most {MAX_SERVER_NAME}, so that its tools' names (mcp__<server>__<tool>) stay within the 64 characters model APIs accept",
            name.len()
        ))
    } else {
        None
    }
}

/// The whole config document. Members it does not know are kept as they are.
#[derive(Clone, PartialEq)]
pub struct Config {
    doc: Map<String, Value>,
    path: Option<PathBuf>,
    found: bool,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The document holds header values and secrets: the server names only.
        f.debug_struct("Config")
            .field("path", &self.path)
            .field("found", &self.found)
            .field("servers", &self.server_names())
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            doc: Map::new(),
            path: None,
            found: false,
        }
    }
}

impl Config {
    /// Reads a config file. A missing file is an empty config ([`Config::found`] is false);
    /// a broken one is an error with its line and column.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Config {
                    path: Some(path.to_path_buf()),
                    ..Config::default()
                });
            }
            Err(e) => {
                return Err(ConfigError::file(
                    Some(path),
                    format!("cannot read it: {e}"),
                ));
            }
        };
        let mut config = Config::parse(&text).map_err(|mut e| {
            e.path = Some(path.to_path_buf());
            e
        })?;
        config.path = Some(path.to_path_buf());
        config.found = true;
        Ok(config)
    }

    /// Reads a config from text (no file).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let what = e.to_string();
            let what = what
                .rsplit_once(" at line ")
                .map_or(what.as_str(), |(w, _)| w);
            ConfigError {
                // serde_json says column 0 at the end of a line (an empty file): 1-based here.
                position: Some((e.line(), e.column().max(1))),
                ..ConfigError::file(None, format!("not valid JSON ({what}); fix the file"))
            }
        })?;
        let Value::Object(doc) = value else {
            return Err(ConfigError {
                position: Some((1, 1)),
                ..ConfigError::file(
                    None,
                    "the file must be a JSON object like {\"servers\": {}}",
                )
            });
        };
        match doc.get("servers") {
            None | Some(Value::Object(_)) => {}
            Some(_) => {
                let position = position_of_key(text, "servers");
                return Err(ConfigError {
                    position,
                    ..ConfigError::file(None, "\"servers\" must be an object of name: entry")
                });
            }
        }
        Ok(Config {
            doc,
            path: None,
            found: true,
        })
    }

    /// The top-level `"tool_search"` (`{"above_tokens": N}`): when tool search is on. `None`
    /// when it is absent; a malformed one is an error.
    pub fn tool_search(&self) -> Result<Option<super::tool_search::ToolSearch>, ConfigError> {
        super::tool_search::ToolSearch::from_member(self.doc.get("tool_search"))
            .map_err(|why| ConfigError::file(self.path.as_deref(), why))
    }

    /// The top-level `"render_ui"`: whether the callers of the daemon's API render MCP Apps
    /// pages, so that `agenvoy-mcp serve` declares the UI extension
    /// (`io.modelcontextprotocol/ui`) to every server ([`Handlers::with_ui`](crate::Handlers::with_ui)).
    /// False when absent or `null`; anything but a boolean is an error.
    pub fn render_ui(&self) -> Result<bool, ConfigError> {
        match self.doc.get("render_ui") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ConfigError::file(
                self.path.as_deref(),
                "\"render_ui\" must be true or false (true: the API's callers render MCP Apps pages)",
            )),
        }
    }

    /// The config the binary uses when there is no file: one server, `fixture`, which is the
    /// binary itself (`program`) running `fixture-server`.
    pub fn embedded_default(program: &Path) -> Config {
        let mut config = Config::default();
        config
            .set_server(
                "fixture",
                &ServerConfig::Stdio(
                    StdioServer::new(program.display().to_string()).arg("fixture-server"),
                ),
            )
            .expect("a valid name");
        config
    }

    /// The file this config was read from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the config was read from an existing file (or parsed from text).
    pub fn found(&self) -> bool {
        self.found
    }

    fn servers_map(&self) -> Option<&Map<String, Value>> {
        self.doc.get("servers").and_then(Value::as_object)
    }

    /// Every server's name, sorted.
    pub fn server_names(&self) -> Vec<String> {
        self.servers_map()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Every server, sorted by name, each with its entry or what is wrong with it.
    pub fn servers(&self) -> Vec<(String, Result<ServerConfig, ConfigError>)> {
        let Some(map) = self.servers_map() else {
            return Vec::new();
        };
        let mut servers: Vec<_> = map
            .iter()
            .map(|(name, value)| {
                let entry = self.read_entry(name, value).map_err(|mut e| {
                    e.path = self.path.clone();
                    e
                });
                (name.clone(), entry)
            })
            .collect();
        servers.sort_by(|a, b| a.0.cmp(&b.0));
        servers
    }

    /// One server's entry as written, members this crate does not know included; `None`
    /// if there is no such server. It may hold literal secrets: never show it unredacted.
    pub fn server_value(&self, name: &str) -> Option<&Value> {
        self.servers_map()?.get(name)
    }

    /// One server's entry, or what is wrong with it; `None` if there is no such server.
    pub fn server(&self, name: &str) -> Option<Result<ServerConfig, ConfigError>> {
        let value = self.servers_map()?.get(name)?;
        Some(self.read_entry(name, value))
    }

    /// One entry read and checked: the server, with its `"enabled"`, tool filter and start.
    fn read_entry(&self, name: &str, value: &Value) -> Result<ServerConfig, ConfigError> {
        let server = read_entry(name, value)?;
        start_member(name, value, &self.doc)?;
        Ok(server)
    }

    /// Whether server `name` is enabled: its entry's `"enabled"` is not `false`. `None` if
    /// there is no such server; an `"enabled"` that is not true or false is an error.
    pub fn is_enabled(&self, name: &str) -> Option<Result<bool, ConfigError>> {
        let value = self.servers_map()?.get(name)?;
        Some(enabled_member(name, value))
    }

    /// Server `name`'s tool filter (`"enabled_tools"`, `"disabled_tools"`); `None` if there is
    /// no such server.
    pub fn tool_filter(&self, name: &str) -> Option<Result<ToolFilter, ConfigError>> {
        let value = self.servers_map()?.get(name)?;
        Some(ToolFilter::from_entry(name, value))
    }

    /// When server `name` runs ([`Start`]): its entry's `"start"` and `"idle_timeout"`, else
    /// the top level's, else from launch to close. `None` if there is no such server.
    pub fn start(&self, name: &str) -> Option<Result<Start, ConfigError>> {
        let value = self.servers_map()?.get(name)?;
        Some(start_member(name, value, &self.doc))
    }

    /// Sets when server `name` runs: its entry's `"start"` and `"idle_timeout"` (left out
    /// where they say the default). Only those members of that entry change.
    pub fn set_start(&mut self, name: &str, start: Start) -> Result<(), ConfigError> {
        start.write(self.entry_mut(name)?);
        Ok(())
    }

    fn entry_mut(&mut self, name: &str) -> Result<&mut Map<String, Value>, ConfigError> {
        self.doc
            .get_mut("servers")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.get_mut(name))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| ConfigError::server(name, "there is no such server in the config"))
    }

    /// Sets server `name`'s `"enabled"`: `false` is written, `true` removes the member. Only
    /// that member of that entry changes.
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> Result<(), ConfigError> {
        let entry = self.entry_mut(name)?;
        if enabled {
            entry.remove("enabled");
        } else {
            entry.insert("enabled".into(), Value::Bool(false));
        }
        Ok(())
    }

    /// Sets server `name`'s tool filter, after checking it ([`ToolFilter::problem`]). Only
    /// `"enabled_tools"` and `"disabled_tools"` of that entry change.
    pub fn set_tool_filter(&mut self, name: &str, filter: &ToolFilter) -> Result<(), ConfigError> {
        if let Some(why) = filter.problem(name) {
            return Err(ConfigError::server(name, why));
        }
        filter.write(self.entry_mut(name)?);
        Ok(())
    }

    /// Adds or replaces a server. Members of an existing entry this crate does not know are
    /// kept; the known ones are replaced.
    pub fn set_server(&mut self, name: &str, server: &ServerConfig) -> Result<(), ConfigError> {
        if let Some(problem) = server_name_problem(name) {
            return Err(ConfigError::server(name, format!("{problem}; rename it")));
        }
        let servers = self
            .doc
            .entry("servers")
            .or_insert_with(|| Value::Object(Map::new()));
        if !servers.is_object() {
            *servers = Value::Object(Map::new());
        }
        let servers = servers.as_object_mut().expect("an object");
        let mut entry = match servers.remove(name) {
            Some(Value::Object(old)) => old,
            _ => Map::new(),
        };
        for key in [
            "command",
            "args",
            "env",
            "inherit_env",
            "url",
            "headers",
            "auth",
            "oauth_client_name",
            "oauth_client_id",
            "oauth_client_secret",
            "oauth_redirect_uri",
            "oauth_client_metadata_url",
            "oauth_grant",
            "oauth_client_private_key",
            "oauth_workload_assertion",
            "timeout",
            "startup_timeout",
        ] {
            entry.remove(key);
        }
        if let Value::Object(known) = server.to_value() {
            entry.extend(known);
        }
        servers.insert(name.to_string(), Value::Object(entry));
        Ok(())
    }

    /// Removes a server; returns whether it was there.
    pub fn remove_server(&mut self, name: &str) -> bool {
        self.doc
            .get_mut("servers")
            .and_then(Value::as_object_mut)
            .is_some_and(|m| m.remove(name).is_some())
    }

    /// The document as JSON text (pretty, with a final newline).
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&Value::Object(self.doc.clone()))
            .expect("JSON serializes");
        text.push('\n');
        text
    }

    /// Writes the config to `path` atomically, mode 0600, creating the folder if needed.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        crate::secret_files::write_private(path, self.to_text().as_bytes())
            .map_err(|e| ConfigError::file(Some(path), format!("cannot save it: {e}")))
    }
}

/// The line and column of the first `"key"` in `text`, for errors about a member.
/// Where (line, column, from 1) the top-level object of `text`, a JSON document that parsed,
/// has the member `key`: its last one, which is the one a parse keeps. A `key` inside a string
/// or a nested object does not count.
fn position_of_key(text: &str, key: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let (mut depth, mut i, mut found) = (0usize, 0, None);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if i >= bytes.len() {
                    break;
                }
                let literal = text.get(start..=i);
                let is_key = text[i + 1..].trim_start().starts_with(':');
                if depth == 1
                    && is_key
                    && literal
                        .and_then(|l| serde_json::from_str::<String>(l).ok())
                        .as_deref()
                        == Some(key)
                {
                    found = Some(start);
                }
            }
            _ => {}
        }
        i += 1;
    }
    let at = found?;
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn one(entry: Value) -> Result<ServerConfig, ConfigError> {
        ServerConfig::from_value("s", &entry)
    }

    fn start(entry: Value, top: Value) -> Result<Start, ConfigError> {
        start_member("s", &entry, top.as_object().unwrap())
    }

    #[test]
    fn an_entry_says_how_it_starts_and_the_top_level_gives_the_default() {
        assert_eq!(start(json!({}), json!({})).unwrap(), Start::Launch);
        assert_eq!(
            start(json!({"start": "on_demand"}), json!({})).unwrap(),
            Start::on_demand()
        );
        assert_eq!(
            start(json!({}), json!({"start": "on_demand", "idle_timeout": 30})).unwrap(),
            Start::OnDemand {
                idle_timeout: Duration::from_secs(30)
            }
        );
        // The entry wins over the top level.
        assert_eq!(
            start(json!({"start": "launch"}), json!({"start": "on_demand"})).unwrap(),
            Start::Launch
        );
        let wrong = start(json!({"start": "lazy"}), json!({})).unwrap_err();
        assert!(wrong.to_string().contains("\"on_demand\""), "{wrong}");
        let wrong = start(json!({"start": "on_demand", "idle_timeout": -1}), json!({}));
        assert!(wrong.unwrap_err().to_string().contains("idle_timeout"));
    }

    #[test]
    fn server_entries_table() {
        let ok: &[(Value, ServerConfig)] = &[
            (
                json!({"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "$TZ"}}),
                ServerConfig::Stdio(
                    StdioServer::new("uvx")
                        .arg("mcp-server-time")
                        .env("TZ", "$TZ"),
                ),
            ),
            (
                json!({"command": "x", "inherit_env": true}),
                ServerConfig::Stdio(StdioServer::new("x").with_inherit_env(true)),
            ),
            (
                json!({"command": "x", "args": null}),
                ServerConfig::Stdio(StdioServer::new("x")),
            ),
            (
                json!({"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"}}),
                ServerConfig::Http(
                    HttpServer::new("https://h/mcp").header("Authorization", "Bearer ${T}"),
                ),
            ),
            (
                json!({"url": "http://127.0.0.1:9/mcp", "auth": "oauth", "oauth_client_name": "agenvoy"}),
                ServerConfig::Http(
                    HttpServer::new("http://127.0.0.1:9/mcp")
                        .with_auth("oauth")
                        .with_oauth_client_name("agenvoy"),
                ),
            ),
            (
                json!({"url": "https://h/mcp", "auth": "oauth", "oauth_client_id": "c1",
                       "oauth_client_secret": "${S}", "oauth_redirect_uri": "http://127.0.0.1:9/cb",
                       "oauth_client_metadata_url": "https://me.test/client.json"}),
                ServerConfig::Http(
                    HttpServer::new("https://h/mcp")
                        .with_auth("oauth")
                        .with_oauth_client_id("c1")
                        .with_oauth_client_secret("${S}")
                        .with_oauth_redirect_uri("http://127.0.0.1:9/cb")
                        .with_oauth_client_metadata_url("https://me.test/client.json"),
                ),
            ),
            (
                json!({"url": "https://h/mcp", "auth": "oauth", "oauth_grant": "client_credentials",
                       "oauth_client_id": "c1", "oauth_client_private_key": "/etc/agenvoy/key.pem"}),
                ServerConfig::Http(
                    HttpServer::new("https://h/mcp")
                        .with_auth("oauth")
                        .with_oauth_client_id("c1")
                        .with_oauth_grant("client_credentials")
                        .with_oauth_client_private_key("/etc/agenvoy/key.pem"),
                ),
            ),
            (
                json!({"url": "https://h/mcp", "auth": "oauth", "oauth_workload_assertion": "$K8S_TOKEN"}),
                ServerConfig::Http(
                    HttpServer::new("https://h/mcp")
                        .with_auth("oauth")
                        .with_oauth_workload_assertion("$K8S_TOKEN"),
                ),
            ),
        ];
        for (entry, want) in ok {
            assert_eq!(&one(entry.clone()).unwrap(), want, "{entry}");
        }
        let bad: &[(Value, &str)] = &[
            (
                json!({"command": "x", "url": "https://h"}),
                "has both \"command\" and \"url\"",
            ),
            (json!({}), "has neither \"command\" nor \"url\""),
            (json!("uvx"), "must be an object"),
            (
                json!({"command": ""}),
                "\"command\" must be a non-empty string",
            ),
            (
                json!({"command": 3}),
                "\"command\" must be a non-empty string",
            ),
            (
                json!({"command": "x", "args": "a b"}),
                "\"args\" must be an array of strings",
            ),
            (
                json!({"command": "x", "args": [1]}),
                "\"args\" must be an array of strings",
            ),
            (
                json!({"command": "x", "env": {"A": 1}}),
                "\"env\" must be an object",
            ),
            (
                json!({"command": "x", "inherit_env": "yes"}),
                "\"inherit_env\" must be true or false",
            ),
            (
                json!({"url": "ftp://h"}),
                "\"url\" must be a string starting with http",
            ),
            (
                json!({"url": "https://h", "headers": []}),
                "\"headers\" must be an object",
            ),
            (
                json!({"url": "https://h", "auth": "basic"}),
                "the only value is \"oauth\"",
            ),
            (
                json!({"url": "https://h", "oauth_grant": "password"}),
                "\"oauth_grant\" is \"password\"; it is \"authorization_code\"",
            ),
            (
                json!({"url": "https://h", "oauth_grant": "client_credentials", "oauth_client_id": "c"}),
                "needs \"oauth_client_id\" and \"oauth_client_secret\" or \"oauth_client_private_key\"",
            ),
            (
                json!({"url": "https://h", "oauth_grant": "client_credentials", "oauth_client_id": "c",
                       "oauth_client_secret": "s", "oauth_workload_assertion": "/t"}),
                "keep the one grant it uses",
            ),
            (
                json!({"url": "https://h", "oauth_client_private_key": "/k.pem"}),
                "set its \"oauth_client_id\" too",
            ),
            (
                json!({"url": "https://h", "oauth_client_id": "c",
                       "oauth_client_private_key": "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----"}),
                "holds a key; put the key in a file",
            ),
            (
                json!({"url": "https://h", "oauth_workload_assertion": "eyJhbGciOi.eyJzdWIi.c2ln"}),
                "holds a token; give the path",
            ),
        ];
        for (entry, want) in bad {
            let e = one(entry.clone()).unwrap_err();
            assert_eq!(e.server.as_deref(), Some("s"));
            let text = e.to_string();
            assert!(
                text.contains("server \"s\"") && text.contains(want),
                "{entry}: {text}"
            );
        }
    }

    #[test]
    fn server_names_table() {
        let longest = "n".repeat(MAX_SERVER_NAME);
        for name in ["a", "A-b_9", "github", "my__server", &longest] {
            assert!(is_valid_server_name(name), "{name}");
            // Every tool name of it fits what model APIs accept without being mapped.
            let tool = crate::host::registry::llm_tool_name(name, "get_it");
            assert!(tool.ends_with("__get_it") && tool.len() <= 64, "{tool}");
        }
        for name in ["", "a b", "a.b", "a/b", "é", "a:b"] {
            assert!(!is_valid_server_name(name), "{name}");
            let e = ServerConfig::from_value(name, &json!({"command": "x"})).unwrap_err();
            assert!(e.to_string().contains("rename it"), "{e}");
        }
        // A name of 100,000 characters is refused, and the error shows only its start.
        let huge = "x".repeat(100_000);
        let e = ServerConfig::from_value(&huge, &json!({"command": "x"}))
            .unwrap_err()
            .message;
        assert!(
            e.contains("is 100000 characters; at most 32, so that its tools' names")
                && e.len() < 400,
            "{e}"
        );
        assert!(
            Config::default()
                .set_server(&huge, &ServerConfig::Stdio(StdioServer::new("x")))
                .is_err()
        );
    }

    #[test]
    fn broken_files_say_where() {
        let table: &[(&str, (usize, usize))] = &[
            (
                "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}",
                (3, 26),
            ),
            ("{\"servers\": {}", (1, 14)),
            ("[]", (1, 1)),
            // Found by the config_expand fuzz target: serde_json says column 0 here.
            ("", (1, 1)),
            ("{\"servers\": {}\n", (2, 1)),
            ("{\n\"servers\": []}", (2, 1)),
            // The top-level member, the last one (the one a parse keeps): not the text in a
            // string, a nested member, or an earlier duplicate.
            (
                "{\"note\": \"see \\\"servers\\\": {}\",\n \"x\": {\"servers\": 1},\n \"servers\": {},\n \"serv\\u0065rs\": 2}",
                (4, 2),
            ),
        ];
        for (text, position) in table {
            let e = Config::parse(text).unwrap_err();
            assert_eq!(e.position, Some(*position), "{text}: {e}");
            assert!(
                e.to_string()
                    .contains(&format!("line {}, column {}", position.0, position.1))
            );
        }
    }

    #[test]
    fn one_bad_entry_leaves_the_others() {
        let config = Config::parse(
            r#"{"servers": {"good": {"command": "x"}, "bad": {"command": "x", "url": "https://h"}}}"#,
        )
        .unwrap();
        let servers = config.servers();
        assert_eq!(servers.len(), 2);
        assert!(servers[0].0 == "bad" && servers[0].1.is_err());
        assert!(servers[1].0 == "good" && servers[1].1.is_ok());
    }

    #[test]
    fn an_entry_proxy_is_read_checked_expanded_and_written_back() {
        let entry = |proxy: &str| {
            Config::parse(&format!(
                r#"{{"servers": {{"s": {{"url": "https://h/mcp"{proxy}}}}}}}"#
            ))
            .unwrap()
            .server("s")
            .unwrap()
        };
        let http = |server: ServerConfig| match server {
            ServerConfig::Http(h) => h,
            ServerConfig::Stdio(_) => unreachable!(),
        };
        assert_eq!(http(entry("").unwrap()).proxy, crate::Proxy::Environment);
        let none = entry(r#", "proxy": false"#).unwrap();
        assert_eq!(none.to_value()["proxy"], json!(false));
        assert_eq!(http(none).proxy, crate::Proxy::Direct);
        let given =
            entry(r#", "proxy": "http://u:${AGENVOY_TEST_PROXY_PASSWORD}@p:3128""#).unwrap();
        assert_eq!(
            given.to_value()["proxy"],
            json!("http://u:${AGENVOY_TEST_PROXY_PASSWORD}@p:3128"),
            "written back as it was, unexpanded"
        );
        let given = http(given);
        assert_eq!(
            given.expanded_proxy(),
            crate::Proxy::Url("http://u:@p:3128".into()),
            "an unset variable expands to nothing"
        );
        assert!(!format!("{given:?}").contains("u:"));
        for bad in [
            r#", "proxy": true"#,
            r#", "proxy": "socks5://p:1080""#,
            r#", "proxy": 3128"#,
        ] {
            let why = entry(bad).unwrap_err().to_string();
            assert!(
                why.contains("\"proxy\" must be an http:// URL") && why.contains("\"s\""),
                "{bad}: {why}"
            );
            assert!(!why.contains("p:1080"), "the value is not repeated: {why}");
        }
    }

    #[test]
    fn timeouts_are_read_checked_and_written_back() {
        let entry = |timeouts: &str| {
            Config::parse(&format!(
                r#"{{"servers": {{"s": {{"url": "https://h/mcp"{timeouts}}}}}}}"#
            ))
            .unwrap()
            .server("s")
            .unwrap()
        };
        let read = entry(r#", "timeout": 120, "startup_timeout": 2.5"#).unwrap();
        assert_eq!(
            read.timeouts(),
            Timeouts {
                request: Some(Duration::from_secs(120)),
                startup: Some(Duration::from_millis(2500)),
            }
        );
        assert_eq!(read.to_value()["timeout"], json!(120));
        assert_eq!(read.to_value()["startup_timeout"], json!(2.5));
        assert_eq!(entry("").unwrap().timeouts(), Timeouts::default());
        assert_eq!(
            entry(r#", "timeout": 86400"#).unwrap().timeouts().request,
            Some(MAX_TIMEOUT)
        );
        for (bad, key) in [
            (r#", "timeout": 0"#, "timeout"),
            (r#", "timeout": -5"#, "timeout"),
            (r#", "timeout": "120""#, "timeout"),
            (r#", "timeout": 86401"#, "timeout"),
            (r#", "startup_timeout": true"#, "startup_timeout"),
            (r#", "startup_timeout": 1e30"#, "startup_timeout"),
        ] {
            let error = entry(bad).unwrap_err().to_string();
            assert!(
                error.starts_with("config, server \"s\": ")
                    && error.contains(&format!("\"{key}\" is "))
                    && error.contains("at most 86400 (a day)"),
                "{bad}: {error}"
            );
        }
        // A stdio entry takes them the same way.
        let stdio = Config::parse(r#"{"servers": {"l": {"command": "x", "timeout": 5}}}"#)
            .unwrap()
            .server("l")
            .unwrap()
            .unwrap();
        assert_eq!(stdio.timeouts().request, Some(Duration::from_secs(5)));
    }

    /// Found by the config_expand fuzz target: without serde_json's `float_roundtrip`, a
    /// number such as 21e+300 read, saved and read again came back one unit in the last
    /// place off, so every save could change a member this crate does not know.
    #[test]
    fn numbers_survive_a_save() {
        let config =
            Config::parse(r#"{"kept": [21e+300, 1e+303, 0.1, 2.2250738585072014e-308]}"#).unwrap();
        assert_eq!(Config::parse(&config.to_text()).unwrap(), config);
    }

    #[test]
    fn missing_file_is_no_servers_and_saves_keep_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("mcp.json");
        let config = Config::load(&path).unwrap();
        assert!(!config.found() && config.servers().is_empty());

        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"theme": "dark", "servers": {"a": {"command": "x", "note": "keep me", "env": {"T": "${T}"}}}}"#,
        )
        .unwrap();
        let mut config = Config::load(&path).unwrap();
        assert!(config.found());
        config
            .set_server("a", &ServerConfig::Stdio(StdioServer::new("y")))
            .unwrap();
        config
            .set_server("b", &ServerConfig::Http(HttpServer::new("https://h")))
            .unwrap();
        config.save(&path).unwrap();
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            saved,
            json!({"theme": "dark", "servers": {
                "a": {"command": "y", "note": "keep me"},
                "b": {"url": "https://h"}}})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["mcp.json"], "no temporary file is left");
        assert!(config.remove_server("b") && !config.remove_server("b"));
    }

    #[test]
    fn expansion_happens_at_connect_time_only() {
        // SAFETY: this test's own variable; no other test reads it.
        unsafe { std::env::set_var("AGENVOY_TEST_EXPAND_TOKEN", "tok") };
        let server = StdioServer::new("$NOT_EXPANDED")
            .args(["--token=${AGENVOY_TEST_EXPAND_TOKEN}", "$$"])
            .env("T", "a-$AGENVOY_TEST_EXPAND_TOKEN")
            .with_inherit_env(true);
        #[cfg(feature = "stdio")]
        {
            let expanded = server.expanded();
            assert_eq!(expanded.command, "$NOT_EXPANDED");
            assert_eq!(expanded.args, ["--token=tok", ""]);
            assert_eq!(expanded.env["T"], "a-tok");
            assert!(expanded.inherit_env);
        }
        let http = HttpServer::new("https://h").header("X", "${AGENVOY_TEST_EXPAND_TOKEN}");
        assert_eq!(http.expanded_headers()["X"], "tok");
        let text = {
            let mut c = Config::default();
            c.set_server("s", &ServerConfig::Stdio(server)).unwrap();
            c.to_text()
        };
        assert!(text.contains("${AGENVOY_TEST_EXPAND_TOKEN}") && !text.contains("tok\""));
    }

    #[test]
    fn debug_shows_no_secret() {
        let config = Config::parse(
            r#"{"servers": {
                "local": {"command": "srv", "args": ["--key=canary-arg"], "env": {"TOKEN": "canary-env"}},
                "remote": {"url": "https://u:canary-pw@h.test/mcp?api_key=canary-query",
                           "headers": {"X-Api-Key": "canary-header"}, "auth": "oauth",
                           "oauth_client_id": "id", "oauth_client_secret": "canary-secret"}}}"#,
        )
        .unwrap();
        let mut shown = format!("{config:?}");
        for (_, entry) in config.servers() {
            let entry = entry.unwrap();
            shown.push_str(&format!("{entry:?} {entry:#?}"));
            #[cfg(feature = "stdio")]
            if let ServerConfig::Stdio(s) = &entry {
                shown.push_str(&format!("{:?}", s.expanded()));
            }
        }
        assert!(!shown.contains("canary"), "{shown}");
        for name in [
            "local",
            "remote",
            "TOKEN",
            "X-Api-Key",
            "api_key=***",
            "h.test",
        ] {
            assert!(shown.contains(name), "{name} missing from {shown}");
        }
    }
}
