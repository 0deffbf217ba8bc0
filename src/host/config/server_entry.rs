//! One server's entry of the config file: what it is ([`ServerConfig`]: a local
//! [`StdioServer`] or a remote [`HttpServer`], with its [`Timeouts`]), read from and written
//! back to its JSON. The file as a whole is `super::Config`.

use super::super::config_error::ConfigError;
use super::super::expand::expand_env;
use super::super::filter::ToolFilter;
use super::super::start::{DEFAULT_IDLE_TIMEOUT, Start};
use super::server_name_problem;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One server's entry, as this crate understands it. Its `Debug` shows no value that may be a
/// secret (arguments, variable and header values, the client secret, URL query values).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
// An entry is made once per server and read in place: boxing the larger variant would
// save nothing that matters and break every `ServerConfig::Http(h)` pattern.
#[allow(clippy::large_enum_variant)]
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
    /// `"proxy"`: the HTTP proxy of its exchanges, OAuth's too (absent: the environment's;
    /// `false`: none; a URL, `$VAR` expanded at connect time).
    pub proxy: crate::Proxy,
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
            .field("proxy", &self.proxy)
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
            proxy: crate::Proxy::Environment,
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

    /// With its exchanges going through `proxy`.
    pub fn with_proxy(mut self, proxy: crate::Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// The proxy with `$VAR` expanded in its URL from the process environment. It may hold
    /// the proxy's credentials: never log it (its `Debug` hides them).
    pub fn expanded_proxy(&self) -> crate::Proxy {
        match &self.proxy {
            crate::Proxy::Url(url) => crate::Proxy::Url(expand_env(url)),
            other => other.clone(),
        }
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
                    proxy: proxy_member(name, entry)?,
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
                match &h.proxy {
                    crate::Proxy::Url(url) => {
                        entry.insert("proxy".into(), json!(url));
                    }
                    crate::Proxy::Direct => {
                        entry.insert("proxy".into(), json!(false));
                    }
                    _ => {}
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
        config.proxy = self.expanded_proxy();
        config
    }
}

/// Reads one entry of the file: the server, with its `"enabled"` and its tool filter checked.
pub(super) fn read_entry(name: &str, value: &Value) -> Result<ServerConfig, ConfigError> {
    let server = ServerConfig::from_value(name, value)?;
    enabled_member(name, value)?;
    ToolFilter::from_entry(name, value)?;
    Ok(server)
}

/// Reads the start of server `name` ([`Start`]): its entry's `"start"` and `"idle_timeout"`,
/// each falling back to the config's top-level member of the same name (`top`), then to the
/// default. A value of the wrong kind is an error naming the member.
pub(crate) fn start_member(
    name: &str,
    entry: &Value,
    top: &Map<String, Value>,
) -> Result<Start, ConfigError> {
    let member = |key: &str| {
        entry
            .get(key)
            .filter(|v| !v.is_null())
            .or_else(|| top.get(key).filter(|v| !v.is_null()))
    };
    let on_demand = match member("start") {
        None => false,
        Some(Value::String(s)) if s == "launch" => false,
        Some(Value::String(s)) if s == "on_demand" => true,
        Some(other) => {
            return Err(ConfigError::server(
                name,
                format!(
                    "\"start\" is {other}; it must be \"launch\" (started with the host, the default) or \"on_demand\" (started by its first use, stopped when idle)"
                ),
            ));
        }
    };
    let idle_timeout = match member("idle_timeout") {
        None => DEFAULT_IDLE_TIMEOUT,
        Some(value) => Timeouts::seconds("idle_timeout", value)
            .map_err(|why| ConfigError::server(name, why))?,
    };
    Ok(if on_demand {
        Start::OnDemand { idle_timeout }
    } else {
        Start::Launch
    })
}

/// An entry's `"enabled"`: true unless it is `false`.
pub(super) fn enabled_member(name: &str, value: &Value) -> Result<bool, ConfigError> {
    match value.get("enabled") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ConfigError::server(
            name,
            "\"enabled\" must be true or false",
        )),
    }
}

/// An entry's `"proxy"`: absent for the environment's, `false` for none, or a URL.
fn proxy_member(name: &str, entry: &Map<String, Value>) -> Result<crate::Proxy, ConfigError> {
    match entry.get("proxy") {
        None | Some(Value::Null) => Ok(crate::Proxy::Environment),
        Some(Value::Bool(false)) => Ok(crate::Proxy::Direct),
        // A `$VAR` is read at connect time; a written URL must say http:// (the one kind
        // of proxy spoken), so a SOCKS one fails here rather than at the first request.
        Some(Value::String(url))
            if url.contains('$') || url.to_ascii_lowercase().starts_with("http://") =>
        {
            Ok(crate::Proxy::Url(url.clone()))
        }
        Some(_) => Err(ConfigError::server(
            name,
            "\"proxy\" must be an http:// URL (http://user:password@host:port; SOCKS and https:// proxies are not supported) or false for none; leave it out to use HTTPS_PROXY and the other variables",
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
