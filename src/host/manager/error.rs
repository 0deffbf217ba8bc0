//! Why a call or an add did not succeed: [`CallError`], [`AddError`].

use crate::error::Error;
use crate::host::config::server_name_problem;
use crate::host::gate::Denied;
use crate::host::status::ServerState;
use std::fmt;

/// Why a tool call ([`Manager::call`](crate::host::Manager::call),
/// [`Control::call`](crate::host::Control::call)) did not return an output.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CallError {
    /// No registered tool has this name.
    UnknownTool(String),
    /// No registered tool has this name, and it is one of a server that is not connected
    /// (it failed, needs a login, is connecting or disabled): its tools are registered once
    /// it connects. The error says why it is not.
    Unavailable {
        /// The registered name asked for, `mcp__<server>__<tool>`.
        tool: String,
        /// The server.
        server: String,
        /// Where it is.
        state: ServerState,
        /// Its last error, if any.
        error: Option<String>,
    },
    /// The gate refused the call.
    Denied(Denied),
    /// The server failed the call (after one reconnect and retry if the session died).
    Server(Error),
    /// The server has `most` calls in flight already ([`Control::call`](crate::host::Control::call)
    /// runs no more at once): it may be hung; try again later.
    Busy {
        /// The server.
        server: String,
        /// Its calls in flight, the most at once.
        most: usize,
    },
    /// Another call is running under this caller's id.
    IdInUse(String),
    /// The call under this caller's id was cancelled
    /// ([`Control::cancel_call`](crate::host::Control::cancel_call)); the server was told.
    Cancelled(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::UnknownTool(name) => write!(
                f,
                "no MCP tool named {name} is registered; list the tools and each server's state with `agenvoy-mcp tools`"
            ),
            CallError::Unavailable {
                tool,
                server,
                state,
                error,
            } => {
                let why = match state {
                    ServerState::NeedsLogin => "needs a login",
                    ServerState::Failed => "failed to connect",
                    ServerState::Connecting => "is still connecting",
                    ServerState::Disabled => "is disabled",
                    _ => "is not connected",
                };
                write!(f, "{tool} cannot be called: server {server:?} {why}")?;
                match error {
                    Some(error) => write!(f, ": {error}"),
                    None => Ok(()),
                }
            }
            CallError::Denied(d) => d.fmt(f),
            CallError::Server(e) => e.fmt(f),
            CallError::Busy { server, most } => write!(
                f,
                "server {server:?} has {most} calls in flight, the most run at once for one server (it may be hung: see its status); try again later"
            ),
            CallError::IdInUse(id) => write!(
                f,
                "a call with id {id:?} is running; give each call its own id"
            ),
            CallError::Cancelled(id) => {
                write!(f, "the call {id:?} was cancelled; the server was told")
            }
        }
    }
}

impl CallError {
    /// The server that needs an OAuth login before this call can succeed, if that is why it
    /// failed: no usable token, a lost login, or a scope the server asked for
    /// ([`Error::needs_login`]). Front ends add how to log in.
    pub fn needs_login(&self) -> Option<&str> {
        match self {
            CallError::Server(e) if e.needs_login() => Some(&e.server),
            CallError::Unavailable {
                server,
                state: ServerState::NeedsLogin,
                ..
            } => Some(server),
            _ => None,
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The server's error is shown as this one (it is transparent): its cause is ours.
        match self {
            CallError::Server(e) => e.source(),
            _ => None,
        }
    }
}

/// Why [`Manager::add`](crate::host::Manager::add) did not add a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddError {
    /// The name is not letters, digits, `_` or `-`.
    InvalidName(String),
    /// A server by this name is already there.
    Taken(String),
    /// A server of this name is still being removed or reconnected.
    Busy(String),
    /// The server was removed while it connected.
    Removed(String),
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::InvalidName(name) => f.write_str(
                &server_name_problem(name)
                    .unwrap_or_else(|| format!("server name {name:?} is not valid")),
            ),
            AddError::Taken(name) => write!(
                f,
                "a server named {name:?} is already configured; remove it first or pick another name"
            ),
            AddError::Busy(name) => write!(
                f,
                "server {name:?} is still being removed or reconnected; try again in a moment"
            ),
            AddError::Removed(name) => {
                write!(f, "server {name:?} was removed while it was connecting")
            }
        }
    }
}

impl std::error::Error for AddError {}
