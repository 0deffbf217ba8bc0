//! Agenvoy's runtime around the client: what an agent host embeds.
//!
//! - The config file (`~/.config/agenvoy/mcp.json`, [`default_config_path`]): [`Config`],
//!   its entries ([`ServerConfig`]) and their validation ([`ConfigError`]); `$VAR` and
//!   `${VAR}` in env values, headers and args expand with Go's `os.Expand` semantics.
//! - [`Control`]: the management operations the API and the panel share (add and remove
//!   servers, the allowlist, OAuth clients, logins), each file change locked in this process
//!   and across processes.
//! - [`Manager`]: every configured server connected at once, live refresh, reconnect,
//!   status ([`ServerStatus`]), calls.
//! - [`ToolFilter`]: which of a server's tools the model sees (`"enabled_tools"`,
//!   `"disabled_tools"`); `"enabled": false` keeps a server in the file, unstarted.
//! - [`Registry`]: tools as definitions an LLM API accepts, `mcp__<server>__<tool>`.
//! - Tool search ([`ToolSearch`], [`Conversation`], [`ToolIndex`]): past a budget of
//!   definitions, the model is offered one search tool and the tools it found
//!   ([`Manager::offered_tools`], [`Manager::call_in`]).
//! - [`Gate`]: the confirm gate, permission modes ([`PermissionMode`]) and the
//!   [`Allowlist`] file.
//! - [`Manager::instructions`]: the servers' instructions as a block for the system prompt.
//! - With feature `oauth`: [`login`], [`login_note`] and [`token_store`], OAuth settings from an entry.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agenvoy_mcp::host::{Manager, ManagerOptions, PermissionMode, default_config_path};
//! let manager = Manager::load(&default_config_path(), ManagerOptions::default()).await?;
//! manager.watch();
//! let tools = manager.tool_definitions(); // give these to the model
//! let system_prompt_part = manager.instructions();
//! let out = manager
//!     .call("mcp__time__get_current_time", serde_json::json!({"timezone": "UTC"}), PermissionMode::Auto)
//!     .await?;
//! println!("{} tools; {}", tools.len(), out.text);
//! manager.close().await;
//! # Ok(()) }
//! ```

pub(crate) mod config;
pub(crate) mod config_error;
pub(crate) mod control;
pub(crate) mod era_memory;
pub(crate) mod events;
pub(crate) mod expand;
pub(crate) mod filter;
pub(crate) mod gate;
pub(crate) mod instructions;
pub(crate) mod manager;
pub mod model_api;
#[cfg(feature = "oauth")]
pub(crate) mod oauth;
pub(crate) mod pending_requests;
pub(crate) mod registry;
pub(crate) mod start;
pub(crate) mod status;
pub(crate) mod tool_search;

pub use config::{
    Config, HttpServer, MAX_TIMEOUT, ServerConfig, StdioServer, Timeouts, config_dir,
    default_config_path, is_valid_server_name,
};
pub use config_error::ConfigError;
pub use control::{
    AddingServer, CallOutcome, Control, ControlError, DEFAULT_MAX_CALLS_PER_SERVER, ToolCall,
};
#[cfg(feature = "oauth")]
pub use control::{Login, LoginEvent, LoginOptions, OAuthClient};
pub use era_memory::EraMemory;
pub use events::{EVENT_QUEUE, Event, EventBus, MAX_EVENT_BYTES};
pub use expand::expand;
pub use filter::{MAX_PATTERN, MAX_PATTERNS, ToolFilter};
pub use gate::{
    Allowlist, AllowlistError, Approval, ConfirmCallback, ConfirmRequest, Decision, Denied, Gate,
    PermissionMode,
};
#[cfg(feature = "oauth")]
pub use manager::connect_server_with_store;
pub use manager::{
    AddError, CallError, Catalog, CatalogStore, FileCatalogStore, KeptCatalog, LIST_RESOURCES_TOOL,
    LOAD_SKILL_TOOL, MAX_SKILLS_DESCRIBED, MAX_SUBSCRIPTIONS, Manager, ManagerOptions,
    READ_RESOURCE_TOOL, ServerTool, connect_server,
};
#[cfg(feature = "oauth")]
pub use oauth::{login, login_note, token_store};
pub use pending_requests::{
    Asked, DECLINED, DEFAULT_EXPIRY, ElicitationHandler, MAX_SERVER_WAITING_BYTES, MAX_WAITING,
    MAX_WAITING_BYTES, MAX_WAITING_PER_SERVER, PendingRequests, Reply, ReplyError, SamplingHandler,
    WaitingRequest,
};
pub use registry::{Collision, PREFIX, RegisteredTool, Registry, ToolDefinition, llm_tool_name};
pub use start::{DEFAULT_IDLE_TIMEOUT, Start};
pub use status::{ServerState, ServerStatus};
pub use tool_search::{
    Conversation, DEFAULT_SEARCH_LIMIT, MAX_FOUND, MAX_SEARCH_LIMIT, SEARCH_TOOL, ToolIndex,
    ToolMatch, ToolSearch, WEAK_SCORE, search_tool_definition,
};
