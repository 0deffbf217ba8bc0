//! Agenvoy's runtime around the client: what an agent host embeds.
//!
//! - [`config`]: the config file (`~/.config/agenvoy/mcp.json`), its schema and validation.
//! - [`control`]: [`Control`], the management operations the API and the panel share
//!   (add and remove servers, the allowlist, OAuth clients, logins), each file change locked
//!   in this process and across processes.
//! - [`expand`]: `$VAR` and `${VAR}` expansion with Go's `os.Expand` semantics.
//! - [`manager`]: [`Manager`], every configured server connected at once, live refresh,
//!   reconnect, status, calls.
//! - [`registry`]: tools as definitions an LLM API accepts, `mcp__<server>__<tool>`.
//! - [`gate`]: the confirm gate, permission modes and the allowlist file.
//! - [`instructions`]: the servers' instructions as a block for the system prompt.
//! - `oauth` (feature `oauth`): OAuth settings from an entry, the token store, login.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agenvoy_mcp::host::{Manager, ManagerOptions, PermissionMode, config};
//! let manager = Manager::load(&config::default_config_path(), ManagerOptions::default()).await?;
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

// The submodules are not part of the API (they serve the `agenvoy-mcp` binary and may change
// in any release): embedders use what is exported here.
#[doc(hidden)]
pub mod config;
#[doc(hidden)]
pub mod control;
#[doc(hidden)]
pub mod eras;
#[doc(hidden)]
pub mod expand;
mod filelock;
#[doc(hidden)]
pub mod gate;
#[doc(hidden)]
pub mod instructions;
#[doc(hidden)]
pub mod manager;
#[cfg(feature = "oauth")]
#[doc(hidden)]
pub mod oauth;
#[doc(hidden)]
pub mod registry;

pub use config::{Config, ConfigError, HttpServer, ServerConfig, StdioServer, default_config_path};
pub use control::{AddingServer, Control, ControlError};
#[cfg(feature = "oauth")]
pub use control::{Login, LoginEvent, LoginOptions, OAuthClient};
pub use eras::EraMemory;
pub use gate::{
    Allowlist, Approval, ConfirmCallback, ConfirmRequest, Denied, Gate, PermissionMode,
};
#[cfg(feature = "oauth")]
pub use manager::connect_server_with_store;
pub use manager::{
    AddError, CallError, Manager, ManagerOptions, ServerState, ServerStatus, connect_server,
};
#[cfg(feature = "oauth")]
pub use oauth::{login, token_store};
pub use registry::{Collision, Registry, ToolDefinition};
