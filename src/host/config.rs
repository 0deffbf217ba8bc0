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

use super::config_error::ConfigError;
use super::expand::expand_env;
use super::filter::ToolFilter;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// One server's entry, as this crate understands it. Its `Debug` shows no value that may be a
/// secret (arguments, variable and header values, the client secret, URL query values).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerConfig {
    /// A local server: a command started as a child process, spoken to over stdio.
    Stdio(StdioServer),
    /// A remote server spoken to over HTTP.
    Http(HttpServer),
}

/// The timeouts an entry sets, each `None` where it sets none (the host's default then
/// applies: [`crate::ClientOptions::timeout`], 60 s in the binary, or `--timeout`). Build
/// them with [`Timeouts::default`] and the `with_*` setters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// `"timeout"`: how long each request may wait for its answer, from its first byte to its
    /// last, over stdio and HTTP alike (a call's own timeout, such as `call --timeout`, wins).
    pub request: Option<Duration>,
    /// `"startup_timeout"`: how long the connection and its handshake may take.
    pub startup: Option<Duration>,
}

/// The longest timeout an entry may set: a day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

impl Timeouts {
    /// With each request waiting at most `timeout` for its answer.
    pub fn with_request(mut self, timeout: Duration) -> Self {
        self.request = Some(timeout);
        self
    }

    /// With the connection and its handshake taking at most `timeout`.
    pub fn with_startup(mut self, timeout: Duration) -> Self {
        self.startup = Some(timeout);
        self
    }

    /// The keys, as the file names them.
    const KEYS: [&'static str; 2] = ["timeout", "startup_timeout"];

    /// Reads both keys of `entry`; a value that is not a positive number of seconds up to a
    /// day is an error naming the server and the key.
    fn read(name: &str, entry: &Map<String, Value>) -> Result<Timeouts, ConfigError> {
        let read = |key: &str| match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => Timeouts::seconds(key, value)
                .map(Some)
                .map_err(|why| ConfigError::server(name, why)),
        };
        Ok(Timeouts {
            request: read(Self::KEYS[0])?,
            startup: read(Self::KEYS[1])?,
        })
    }

    /// The value of `key` as a timeout: a number of seconds above 0 and at most a day, else
    /// what is wrong with it, naming the key.
    pub(crate) fn seconds(key: &str, value: &Value) -> Result<Duration, String> {
        value
            .as_f64()
            .filter(|s| *s > 0.0 && *s <= MAX_TIMEOUT.as_secs_f64())
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                format!(
                    "\"{key}\" is {value}; it must be a number of seconds above 0 and at most 86400 (a day)"
                )
            })
    }

    /// Writes the keys that are set into `entry`, as seconds.
    fn write(&self, entry: &mut Map<String, Value>) {
        for (key, value) in Self::KEYS.into_iter().zip([self.request, self.startup]) {
            if let Some(value) = value {
                entry.insert(key.into(), seconds_value(value));
            }
        }
    }
}

/// `value` in seconds as JSON: a whole number when it is one (`120`, not `120.0`).
fn seconds_value(value: Duration) -> Value {
    if value.subsec_nanos() == 0 {
        json!(value.as_secs())
    } else {
        json!(value.as_secs_f64())
    }
}

/// A local (stdio) server's entry: [`StdioServer::new`] with the program, then the setters
/// for the rest (or [`ServerConfig::from_value`] from the file's JSON).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioServer {
    /// The program.
    pub command: String,
    /// Its arguments (`$VAR` expanded at connect time).
    pub args: Vec<String>,
    /// Variables set for it (values expanded at connect time), over the small default set
    /// it inherits.
    pub env: BTreeMap<String, String>,
    /// `"inherit_env": true`: it inherits this process's whole environment.
    pub inherit_env: bool,
    /// `"timeout"` and `"startup_timeout"`.
    pub timeouts: Timeouts,
}

impl fmt::Debug for StdioServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioServer")
            .field("command", &self.command)
            .field("args", &format_args!("[{} hidden]", self.args.len()))
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("inherit_env", &self.inherit_env)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// A remote (HTTP) server's entry: [`HttpServer::new`] with the endpoint, then the setters
/// for the rest (or [`ServerConfig::from_value`] from the file's JSON).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpServer {
    /// The endpoint, `http://` or `https://`.
    pub url: String,
    /// Headers sent with every request (values expanded at connect time).
    pub headers: BTreeMap<String, String>,
    /// `Some("oauth")` to log in with OAuth.
    pub auth: Option<String>,
    /// The client name to register with the authorization server.
    pub oauth_client_name: Option<String>,
    /// A client registered by hand with the authorization server: its id.
    pub oauth_client_id: Option<String>,
    /// That client's secret (`$VAR` expanded at connect time).
    pub oauth_client_secret: Option<String>,
    /// That client's exact redirect URI (default `http://localhost:17988/callback`).
    pub oauth_redirect_uri: Option<String>,
    /// The URL of this client's Client ID Metadata Document, used where the authorization
    /// server supports them.
    pub oauth_client_metadata_url: Option<String>,
    /// `authorization_code` (the default: a person logs in) or `client_credentials` (the
    /// client itself, with `oauth_client_id` and its secret or private key).
    pub oauth_grant: Option<String>,
    /// The ES256 private key of the client registered by hand, for `private_key_jwt`: a
    /// reference, `$VAR` (the variable holds the PEM) or a file path (PEM or DER, PKCS#8 or
    /// SEC1, `$VAR` expanded in it).
    pub oauth_client_private_key: Option<String>,
    /// Workload identity (RFC 7523 JWT bearer grant): where the workload's JWT is, `$VAR` or
    /// a file path (read at each grant, so a rotated token file is followed).
    pub oauth_workload_assertion: Option<String>,
    /// `"timeout"` and `"startup_timeout"`.
    pub timeouts: Timeouts,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| crate::safe_text::REDACTED);
        f.debug_struct("HttpServer")
            .field("url", &crate::safe_text::redact_url(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("auth", &self.auth)
            .field("oauth_client_name", &self.oauth_client_name)
            .field("oauth_client_id", &self.oauth_client_id)
            .field("oauth_client_secret", &hidden(&self.oauth_client_secret))
            .field("oauth_redirect_uri", &self.oauth_redirect_uri)
            .field("oauth_client_metadata_url", &self.oauth_client_metadata_url)
            .field("oauth_grant", &self.oauth_grant)
            .field("oauth_client_private_key", &self.oauth_client_private_key)
            .field("oauth_workload_assertion", &self.oauth_workload_assertion)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl StdioServer {
    /// The entry that runs `command` with no arguments.
    pub fn new(command: impl Into<String>) -> Self {
        StdioServer {
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            inherit_env: false,
            timeouts: Timeouts::default(),
        }
    }

    /// With the argument `arg` after those given so far.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// With the arguments `args` after those given so far.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// With the variable `name` set to `value` for the server.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// With this process's whole environment inherited, or only the small default set.
    pub fn with_inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }

    /// With the timeouts `timeouts`.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }
}

impl HttpServer {
    /// The entry for the endpoint `url`, with no headers and no login.
    pub fn new(url: impl Into<String>) -> Self {
        HttpServer {
            url: url.into(),
            headers: BTreeMap::new(),
            auth: None,
            oauth_client_name: None,
            oauth_client_id: None,
            oauth_client_secret: None,
            oauth_redirect_uri: None,
            oauth_client_metadata_url: None,
            oauth_grant: None,
            oauth_client_private_key: None,
            oauth_workload_assertion: None,
            timeouts: Timeouts::default(),
        }
    }

    /// With the header `name: value` sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// With the login `auth` (`"oauth"`).
    pub fn with_auth(mut self, auth: impl Into<String>) -> Self {
        self.auth = Some(auth.into());
        self
    }

    /// With `name` as the client name registered with the authorization server.
    pub fn with_oauth_client_name(mut self, name: impl Into<String>) -> Self {
        self.oauth_client_name = Some(name.into());
        self
    }

    /// With the client registered by hand, `id`.
    pub fn with_oauth_client_id(mut self, id: impl Into<String>) -> Self {
        self.oauth_client_id = Some(id.into());
        self
    }

    /// With that client's secret, `secret` (`$VAR` expanded at connect time).
    pub fn with_oauth_client_secret(mut self, secret: impl Into<String>) -> Self {
        self.oauth_client_secret = Some(secret.into());
        self
    }

    /// With that client's exact redirect URI, `uri`.
    pub fn with_oauth_redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.oauth_redirect_uri = Some(uri.into());
        self
    }

    /// With `url` as this client's Client ID Metadata Document.
    pub fn with_oauth_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.oauth_client_metadata_url = Some(url.into());
        self
    }

    /// With the grant `grant` (`authorization_code` or `client_credentials`).
    pub fn with_oauth_grant(mut self, grant: impl Into<String>) -> Self {
        self.oauth_grant = Some(grant.into());
        self
    }

    /// With the hand-registered client's ES256 private key at `reference` (`$VAR` or a file
    /// path).
    pub fn with_oauth_client_private_key(mut self, reference: impl Into<String>) -> Self {
        self.oauth_client_private_key = Some(reference.into());
        self
    }

    /// With the workload's JWT at `reference` (`$VAR` or a file path).
    pub fn with_oauth_workload_assertion(mut self, reference: impl Into<String>) -> Self {
        self.oauth_workload_assertion = Some(reference.into());
        self
    }

    /// With the timeouts `timeouts`.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// What is wrong with the entry's choice of grant, if anything.
    fn grant_problem(&self) -> Option<String> {
        let client_credentials = match self.oauth_grant.as_deref() {
            None | Some("authorization_code") => false,
            Some("client_credentials") => true,
            Some(other) => {
                return Some(format!(
                    "\"oauth_grant\" is {other:?}; it is \"authorization_code\" (the default) or \"client_credentials\" (for workload identity set \"oauth_workload_assertion\" instead)"
                ));
            }
        };
        if client_credentials && self.oauth_workload_assertion.is_some() {
            return Some(
                "has both \"oauth_grant\": \"client_credentials\" and \"oauth_workload_assertion\"; keep the one grant it uses".into(),
            );
        }
        let no_client_credential =
            self.oauth_client_secret.is_none() && self.oauth_client_private_key.is_none();
        if client_credentials && (self.oauth_client_id.is_none() || no_client_credential) {
            return Some(
                "\"oauth_grant\": \"client_credentials\" needs \"oauth_client_id\" and \"oauth_client_secret\" or \"oauth_client_private_key\"".into(),
            );
        }
        // References only: a key or a token written into the file would be shown wherever the
        // entry is (the API lists entries), and a path made of it would land in errors.
        if self
            .oauth_client_private_key
            .as_deref()
            .is_some_and(|k| k.contains("-----BEGIN") || k.contains('\n'))
        {
            return Some(
                "\"oauth_client_private_key\" holds a key; put the key in a file (mode 0600) or a variable and give its path or $VAR".into(),
            );
        }
        if self
            .oauth_workload_assertion
            .as_deref()
            .is_some_and(|a| a.starts_with("eyJ"))
        {
            return Some(
                "\"oauth_workload_assertion\" holds a token; give the path of the file your platform keeps it in, or $VAR".into(),
            );
        }
        if self.oauth_client_private_key.is_some() && self.oauth_client_id.is_none() {
            return Some(
                "\"oauth_client_private_key\" belongs to a client registered by hand; set its \"oauth_client_id\" too".into(),
            );
        }
        None
    }
}

impl ServerConfig {
    /// The transport's short name: `stdio` or `http`.
    pub fn transport(&self) -> &'static str {
        match self {
            ServerConfig::Stdio(_) => "stdio",
            ServerConfig::Http(_) => "http",
        }
    }

    /// The timeouts the entry sets.
    pub fn timeouts(&self) -> Timeouts {
        match self {
            ServerConfig::Stdio(s) => s.timeouts,
            ServerConfig::Http(h) => h.timeouts,
        }
    }

    /// Reads one entry; the error names the server.
    pub fn from_value(name: &str, value: &Value) -> Result<ServerConfig, ConfigError> {
        let bad = |message: String| Err(ConfigError::server(name, message));
        if let Some(problem) = server_name_problem(name) {
            return bad(format!("{problem}; rename it"));
        }
        let Some(entry) = value.as_object() else {
            return bad("the entry must be an object with \"command\" or \"url\"".into());
        };
        match (entry.get("command"), entry.get("url")) {
            (Some(_), Some(_)) => bad(
                "has both \"command\" and \"url\"; keep one: \"command\" for a local server, \"url\" for a remote one".into(),
            ),
            (None, None) => bad(
                "has neither \"command\" nor \"url\"; add \"command\" for a local server or \"url\" for a remote one".into(),
            ),
            (Some(command), None) => {
                let command = match command.as_str() {
                    Some(c) if !c.trim().is_empty() => c.to_string(),
                    _ => return bad("\"command\" must be a non-empty string".into()),
                };
                let inherit_env = match entry.get("inherit_env") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return bad("\"inherit_env\" must be true or false".into()),
                };
                Ok(ServerConfig::Stdio(StdioServer {
                    command,
                    args: string_list(name, entry, "args")?,
                    env: string_map(name, entry, "env")?,
                    inherit_env,
                    timeouts: Timeouts::read(name, entry)?,
                }))
            }
            (None, Some(url)) => {
                let url = match url.as_str() {
                    Some(u) if u.starts_with("http://") || u.starts_with("https://") => u.to_string(),
                    _ => return bad("\"url\" must be a string starting with http:// or https://".into()),
                };
                let auth = optional_string(name, entry, "auth")?;
                if let Some(a) = auth.as_deref().filter(|a| *a != "oauth") {
                    return bad(format!(
                        "\"auth\" is {a:?}; the only value is \"oauth\" (or leave it out)"
                    ));
                }
                let http = HttpServer {
                    url,
                    headers: string_map(name, entry, "headers")?,
                    auth,
                    oauth_client_name: optional_string(name, entry, "oauth_client_name")?,
                    oauth_client_id: optional_string(name, entry, "oauth_client_id")?,
                    oauth_client_secret: optional_string(name, entry, "oauth_client_secret")?,
                    oauth_redirect_uri: optional_string(name, entry, "oauth_redirect_uri")?,
                    oauth_client_metadata_url: optional_string(
                        name,
                        entry,
                        "oauth_client_metadata_url",
                    )?,
                    oauth_grant: optional_string(name, entry, "oauth_grant")?,
                    oauth_client_private_key: optional_string(
                        name,
                        entry,
                        "oauth_client_private_key",
                    )?,
                    oauth_workload_assertion: optional_string(
                        name,
                        entry,
                        "oauth_workload_assertion",
                    )?,
                    timeouts: Timeouts::read(name, entry)?,
                };
                match http.grant_problem() {
                    Some(why) => bad(why),
                    None => Ok(ServerConfig::Http(http)),
                }
            }
        }
    }

    /// The entry as JSON, with only the members this crate knows.
    pub fn to_value(&self) -> Value {
        let mut entry = Map::new();
        match self {
            ServerConfig::Stdio(s) => {
                entry.insert("command".into(), json!(s.command));
                if !s.args.is_empty() {
                    entry.insert("args".into(), json!(s.args));
                }
                if !s.env.is_empty() {
                    entry.insert("env".into(), json!(s.env));
                }
                if s.inherit_env {
                    entry.insert("inherit_env".into(), json!(true));
                }
            }
            ServerConfig::Http(h) => {
                entry.insert("url".into(), json!(h.url));
                if !h.headers.is_empty() {
                    entry.insert("headers".into(), json!(h.headers));
                }
                if let Some(a) = &h.auth {
                    entry.insert("auth".into(), json!(a));
                }
                for (key, value) in [
                    ("oauth_client_name", &h.oauth_client_name),
                    ("oauth_client_id", &h.oauth_client_id),
                    ("oauth_client_secret", &h.oauth_client_secret),
                    ("oauth_redirect_uri", &h.oauth_redirect_uri),
                    ("oauth_client_metadata_url", &h.oauth_client_metadata_url),
                    ("oauth_grant", &h.oauth_grant),
                    ("oauth_client_private_key", &h.oauth_client_private_key),
                    ("oauth_workload_assertion", &h.oauth_workload_assertion),
                ] {
                    if let Some(v) = value {
                        entry.insert(key.into(), json!(v));
                    }
                }
            }
        }
        self.timeouts().write(&mut entry);
        Value::Object(entry)
    }
}

impl StdioServer {
    /// How to start it, with `$VAR` expanded in `args` and `env` from the process environment.
    /// The result holds secrets: never log it.
    #[cfg(feature = "stdio")]
    pub fn expanded(&self) -> crate::StdioConfig {
        let mut config = crate::StdioConfig::new(self.command.clone())
            .args(self.args.iter().map(|a| expand_env(a)))
            .with_inherit_env(self.inherit_env);
        config.env = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), expand_env(v)))
            .collect();
        config
    }
}

impl HttpServer {
    /// The headers with `$VAR` expanded from the process environment. They hold secrets:
    /// never log them.
    pub fn expanded_headers(&self) -> BTreeMap<String, String> {
        self.headers
            .iter()
            .map(|(k, v)| (k.clone(), expand_env(v)))
            .collect()
    }

    /// The transport's settings for this entry: its URL and expanded headers (no
    /// authorizer: an `"auth": "oauth"` entry gets its own from the host).
    #[cfg(feature = "http")]
    pub fn http_config(&self) -> crate::HttpConfig {
        let mut config = crate::HttpConfig::new(&self.url);
        config.headers = self.expanded_headers().into_iter().collect();
        config
    }
}

/// Reads one entry of the file: the server, with its `"enabled"` and its tool filter checked.
fn read_entry(name: &str, value: &Value) -> Result<ServerConfig, ConfigError> {
    let server = ServerConfig::from_value(name, value)?;
    enabled_member(name, value)?;
    ToolFilter::from_entry(name, value)?;
    Ok(server)
}

/// An entry's `"enabled"`: true unless it is `false`.
fn enabled_member(name: &str, value: &Value) -> Result<bool, ConfigError> {
    match value.get("enabled") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ConfigError::server(
            name,
            "\"enabled\" must be true or false",
        )),
    }
}

fn optional_string(
    name: &str,
    entry: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, ConfigError> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ConfigError::server(
            name,
            format!("\"{key}\" must be a string"),
        )),
    }
}

fn string_list(
    name: &str,
    entry: &Map<String, Value>,
    key: &str,
) -> Result<Vec<String>, ConfigError> {
    let wrong = || ConfigError::server(name, format!("\"{key}\" must be an array of strings"));
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string).ok_or_else(wrong))
            .collect(),
        Some(_) => Err(wrong()),
    }
}

fn string_map(
    name: &str,
    entry: &Map<String, Value>,
    key: &str,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let wrong = || {
        ConfigError::server(
            name,
            format!("\"{key}\" must be an object whose values are strings"),
        )
    };
    match entry.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(items)) => items
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or_else(wrong)?.to_string())))
            .collect(),
        Some(_) => Err(wrong()),
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
                let entry = read_entry(name, value).map_err(|mut e| {
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
        Some(read_entry(name, value))
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

    fn one(entry: Value) -> Result<ServerConfig, ConfigError> {
        ServerConfig::from_value("s", &entry)
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
