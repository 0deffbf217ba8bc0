//! What the panel's state hands out: the [`Effect`]s the background runs, the [`Job`]s it
//! runs on a server, and the [`Notice`] under the screen. The lowest of the state files, so
//! each screen's state can return these without knowing the `App` that composes them.

use crate::host::Reply;
use crate::host::config::ServerConfig;
use crate::host::control::OAuthClient;
use crate::protocol::items::CompletionRef;
use serde_json::Value;

/// How many background jobs (connects, reconnects, removals, logins) run at once at most;
/// reads, prompts and calls have a bound of their own as large.
pub(crate) const MAX_JOBS: usize = 16;

/// What the panel tells when [`MAX_JOBS`] run.
pub(crate) const TOO_MUCH: &str = "too much is in progress; wait a moment";

/// What the panel asks the background to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    Quit,
    Add {
        name: String,
        // Boxed: an entry is larger than every other effect.
        server: Box<ServerConfig>,
    },
    Remove(String),
    Reconnect(String),
    /// A registered tool's name.
    ToggleTool(String),
    /// A server's name.
    ToggleServer(String),
    /// Shows or hides one tool of a server (its name on the server).
    SetVisible {
        server: String,
        tool: Option<String>,
        visible: bool,
    },
    /// Enables or disables a server.
    SetEnabled(String, bool),
    /// Makes a server run on demand or from launch.
    SetStart(String, crate::host::Start),
    SetClient {
        name: String,
        client: OAuthClient,
    },
    Login(String),
    CancelLogin(String),
    Paste {
        name: String,
        url: String,
    },
    /// Reads a resource; its output comes back under `ticket`.
    ReadResource {
        ticket: u64,
        server: String,
        uri: String,
    },
    /// Loads a skill's `SKILL.md` or one of its files, verified.
    LoadSkill {
        ticket: u64,
        server: String,
        uri: String,
    },
    /// Gets a prompt filled in.
    GetPrompt {
        ticket: u64,
        server: String,
        prompt: String,
        arguments: Value,
    },
    /// Calls a registered tool.
    CallTool {
        ticket: u64,
        name: String,
        arguments: Value,
    },
    /// Asks for values of an argument (what is typed so far, the other arguments given).
    Complete {
        ticket: u64,
        server: String,
        reference: CompletionRef,
        argument: String,
        value: String,
        context: Vec<(String, String)>,
    },
    /// Answers a server's request; once taken, opens `open` in the browser.
    Reply {
        id: String,
        reply: Reply,
        open: Option<String>,
    },
}

/// A background job on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Job {
    Saving,
    Connecting,
    Reconnecting,
    Removing,
    LoggingIn,
}

impl Job {
    /// What the job is doing, as the panel says it.
    pub(crate) fn doing(self) -> &'static str {
        match self {
            Job::Saving => "saving",
            Job::Connecting => "connecting",
            Job::Reconnecting => "reconnecting",
            Job::Removing => "removing",
            Job::LoggingIn => "logging in",
        }
    }
}

/// A line under the screen: what just happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub(crate) text: String,
    pub(crate) error: bool,
}

impl Notice {
    /// News.
    pub(crate) fn tell(text: impl Into<String>) -> Notice {
        Notice {
            text: text.into(),
            error: false,
        }
    }

    /// Something that went wrong.
    pub(crate) fn warn(text: impl Into<String>) -> Notice {
        Notice {
            text: text.into(),
            error: true,
        }
    }
}
