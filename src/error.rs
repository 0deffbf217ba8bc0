//! The error type of every fallible call in this crate.
//!
//! Each error names the server and, where there is one, the method, and says what to do next.
//! Its text is safe to show and to log: what the server sent is shown with its control
//! characters escaped, and URLs without their query values or password
//! (see [`crate::safe_text`]).

use crate::wire::jsonrpc::ErrorObject;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The underlying failure an [`Error`] keeps: an I/O, HTTP or JSON error.
pub(crate) type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A failure talking to one MCP server. Its `Display` and `Debug` are safe to show (see the
/// module docs); [`Error::server`], [`Error::method`] and [`Error::kind`] give the parts as
/// they came.
#[derive(Clone)]
pub struct Error {
    pub(crate) server: String,
    pub(crate) method: Option<String>,
    pub(crate) kind: ErrorKind,
    /// The I/O, HTTP or JSON error behind it, if any: [`std::error::Error::source`].
    cause: Option<Cause>,
}

/// What went wrong, with the details a caller may act on. New kinds may come in a minor
/// release: match with a `_` arm.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server process could not be started.
    Spawn(String),
    /// The connection ended (the process exited, or the client was closed) before the
    /// request reached the server: sending it again on a new connection is safe.
    Closed(String),
    /// The connection ended after the request was sent and before its answer: the server
    /// may or may not have acted on it, so it is not sent again on its own.
    Interrupted(String),
    /// No response within the time allowed.
    Timeout(Duration),
    /// The server answered with a JSON-RPC error (boxed: it keeps the error small).
    Rpc(Box<ErrorObject>),
    /// An HTTP exchange failed: a status other than success (`status`), or no answer at all.
    Http {
        /// The HTTP status, when the server answered.
        status: Option<u16>,
        /// What happened, with a bounded excerpt of the body.
        detail: String,
    },
    /// The server broke the protocol: a bad response, an unsupported version, a bad result.
    Protocol(String),
    /// The caller gave something unusable (bad arguments, bad configuration).
    Usage(String),
    /// A bound of this client was reached (as many resources followed as it follows at once):
    /// the request may succeed once something is let go.
    Limit(String),
    /// There is no server by this name (in the manager, or in the config).
    UnknownServer,
    /// The server's entry says `"enabled": false`: it must be enabled before it is used.
    Disabled,
    /// This build leaves out the feature that is needed (`"stdio"`, `"http"`, `"oauth"`).
    FeatureMissing(&'static str),
    /// The server needs an OAuth login (no usable token, and no way to get one here). The
    /// text says only that: how to log in depends on where it is read (`agenvoy-mcp login
    /// NAME`, `GET /v1/mcp/oauth?name=NAME`, the panel's `l`, or [`crate::auth::OAuth::login`]).
    LoginRequired,
    /// OAuth failed: discovery, registration, the authorization or token request.
    Auth(String),
}

impl Error {
    /// An error for `server`, not tied to a method.
    pub fn new(server: &str, kind: ErrorKind) -> Self {
        Error {
            server: server.to_string(),
            method: None,
            kind,
            cause: None,
        }
    }

    /// The same error, keeping `cause` as its [`source`](std::error::Error::source).
    pub(crate) fn caused_by(
        mut self,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.cause = Some(Arc::new(cause));
        self
    }

    /// What caused it, if anything did (its [`source`](std::error::Error::source)).
    #[cfg(feature = "oauth")]
    pub(crate) fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.cause.as_deref()
    }

    /// The same error, keeping a cause already shared.
    #[cfg(feature = "http")]
    pub(crate) fn with_cause(mut self, cause: Option<Cause>) -> Self {
        self.cause = cause;
        self
    }

    /// The server's name as configured (or as given to `probe`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The MCP method that failed, if the failure belongs to one.
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The same error, tied to `method`.
    pub fn during(mut self, method: &str) -> Self {
        self.method = Some(method.to_string());
        self
    }

    /// The text of the error kind alone, without the server and method, made safe to show
    /// like the whole error's.
    pub fn kind_text(&self) -> String {
        safe(&KindText(self).to_string())
    }

    /// Whether the server needs an OAuth login before it can be used: no usable token is
    /// stored, the stored login was lost (its refresh token refused), or the server asked
    /// for a scope the tokens lack (a 403 `insufficient_scope`; the next login asks for it).
    /// The error's text says which; how to log in is the front end's to say.
    pub fn needs_login(&self) -> bool {
        match self.kind {
            ErrorKind::LoginRequired => true,
            #[cfg(feature = "oauth")]
            ErrorKind::Auth(_) => self
                .auth_error()
                .is_some_and(crate::auth::AuthError::needs_login),
            _ => false,
        }
    }

    /// Whether the server or its authorization server refused or failed an OAuth step
    /// (a login is needed, or discovery, registration or a token request failed).
    pub fn is_auth(&self) -> bool {
        matches!(self.kind, ErrorKind::LoginRequired | ErrorKind::Auth(_))
    }

    /// Whether no answer came within the time allowed (the request was cancelled).
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, ErrorKind::Timeout(_))
    }

    /// The HTTP status the server answered with, when the failure is one.
    pub fn http_status(&self) -> Option<u16> {
        match self.kind {
            ErrorKind::Http { status, .. } => status,
            _ => None,
        }
    }

    /// The JSON-RPC error the server answered with, when the failure is one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match &self.kind {
            ErrorKind::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the connection is gone, so a reconnect is the only way on.
    pub fn is_closed(&self) -> bool {
        matches!(self.kind, ErrorKind::Closed(_) | ErrorKind::Interrupted(_))
    }

    /// Whether the request may have reached the server before it failed (the connection
    /// ended while it was in flight): such a request is never sent again on its own.
    pub fn may_have_run(&self) -> bool {
        matches!(self.kind, ErrorKind::Interrupted(_))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Server text and URLs reach here from many places: made safe once, here.
        f.write_str(&safe(&Unsafe(self).to_string()))
    }
}

/// `text` with its control characters escaped and the secrets of its URLs hidden.
fn safe(text: &str) -> String {
    crate::safe_text::escape_controls(&crate::safe_text::redact_urls(text)).into_owned()
}

/// The text of `error` and of each of its sources, joined by `": "`: for a library error
/// (hyper's, for one) whose own text leaves out the reason below it.
#[cfg(feature = "http")]
pub(crate) fn chain_text(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Debug escapes control characters already; URLs still need their secrets hidden.
        let kind = format!("{:?}", self.kind);
        f.debug_struct("Error")
            .field("server", &self.server)
            .field("method", &self.method)
            .field(
                "kind",
                &format_args!("{}", crate::safe_text::redact_urls(&kind)),
            )
            .field(
                "cause",
                &self
                    .cause
                    .as_ref()
                    .map(|c| safe(&c.to_string()))
                    .unwrap_or_default(),
            )
            .finish()
    }
}

/// The error's text as it was put together, before it is made safe to show.
struct Unsafe<'a>(&'a Error);

impl fmt::Display for Unsafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = self.0;
        write!(f, "mcp server \"{}\"", error.server)?;
        if let Some(m) = &error.method {
            write!(f, ", {m}")?;
        }
        write!(f, ": {}", KindText(error))
    }
}

/// The text of an error's kind, before it is made safe to show.
struct KindText<'a>(&'a Error);

impl fmt::Display for KindText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = self.0;
        match &error.kind {
            ErrorKind::Spawn(why) => {
                write!(
                    f,
                    "could not start the server: {why}; check its command and args"
                )
            }
            ErrorKind::Closed(why) => write!(
                f,
                "connection closed: {why}; check the server's command or URL (and what it wrote to stderr), then try again"
            ),
            ErrorKind::Interrupted(why) => write!(
                f,
                "the connection ended during the request ({why}); the server may or may not have carried it out, so check before sending it again"
            ),
            ErrorKind::Timeout(d) => write!(
                f,
                "no response after {:.1} s; the request was cancelled (raise the timeout if the tool is slow)",
                d.as_secs_f64()
            ),
            ErrorKind::Rpc(e) => write!(f, "server returned an error: {e}"),
            ErrorKind::Http {
                status: Some(s),
                detail,
            } => write!(f, "HTTP {s}: {detail}"),
            ErrorKind::Http {
                status: None,
                detail,
            } => write!(f, "HTTP request failed: {detail}"),
            ErrorKind::Protocol(why) => write!(f, "protocol error: {why}"),
            ErrorKind::Usage(why) | ErrorKind::Limit(why) => write!(f, "{why}"),
            ErrorKind::UnknownServer => write!(
                f,
                "there is no server by this name; see `agenvoy-mcp tools` for the servers"
            ),
            ErrorKind::Disabled => write!(
                f,
                "the server is disabled; enable it first (POST /v1/mcp/enable, or the panel's `e`)"
            ),
            ErrorKind::FeatureMissing(feature) => write!(
                f,
                "this build has no {feature:?} feature, which this needs; build with it"
            ),
            ErrorKind::LoginRequired => write!(f, "oauth login required"),
            ErrorKind::Auth(why) => write!(f, "oauth: {why}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A name that is none of the values it could be (a log level, a permission mode), its text
/// listing them; or a value without its format (a trace context), its text saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    message: String,
}

impl ParseError {
    /// `given` is no `what`: it must be one of `expected`.
    pub(crate) fn unknown(what: &str, given: &str, expected: &[&str]) -> Self {
        ParseError {
            message: format!("{given:?} is no {what}: one of {}", expected.join(", ")),
        }
    }

    /// A value of `what` that does not have its format: `why` says how (without quoting it).
    pub(crate) fn invalid(what: &str, why: impl std::fmt::Display) -> Self {
        ParseError {
            message: format!("invalid {what}: {why}"),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::safe_text::escape_controls(&self.message))
    }
}

impl std::error::Error for ParseError {}
