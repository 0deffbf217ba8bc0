//! The rules of a tool call, one set for every front end (the management API, the panel, the
//! `call` command, an embedder's own), so that the same call behaves the same everywhere:
//!
//! - at most [`DEFAULT_MAX_CALLS_PER_SERVER`] calls in flight to one server
//!   ([`Control::set_max_calls_per_server`](super::Control::set_max_calls_per_server)): past
//!   it a call is refused at once ([`CallError::Busy`]), so a server that never answers holds
//!   only its own calls;
//! - a call made under a caller's id can be cancelled by it
//!   ([`Control::cancel_call`](super::Control::cancel_call)); the server is told, as for any
//!   dropped request;
//! - while anyone listens on the event bus, the call's progress is published as
//!   [`Event::Progress`], besides going to the caller's own callback;
//! - a call written for a model API ([`ToolCall::from_model`]) has its arguments mapped back
//!   to the server's schema; arguments that cannot fit are the model's to mend, so they come
//!   back as a tool error and are never sent.

use crate::host::events::{Event, EventBus};
use crate::host::gate::PermissionMode;
use crate::host::manager::{CallError, Manager};
use crate::host::model_api::{ModelApi, map_back, result_item};
use crate::host::tool_search::{Conversation, SEARCH_TOOL};
use crate::protocol::session::RequestOptions;
use crate::protocol::types::{Progress, ToolOutput};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Calls in flight to one server at once unless set otherwise: as many as a gateway's busiest
/// caller runs to one server; a hung server still holds only these.
pub const DEFAULT_MAX_CALLS_PER_SERVER: usize = 64;

/// One tool call as a front end asks for it: the tool's registered name
/// (`mcp__<server>__<tool>`), its arguments and the permission mode, and optionally an id to
/// cancel it by, the model API it comes from, the conversation it is made in, and request
/// options (timeout, progress).
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolCall {
    /// The registered name (or, with [`ToolCall::from_model`], the model API's name for it).
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
    /// How the confirm gate treats the call.
    pub mode: PermissionMode,
    /// The caller's id for the call: [`Control::cancel_call`](super::Control::cancel_call)
    /// stops it, and its progress events carry it.
    pub id: Option<String>,
    /// The model API the name and arguments come from, and the call's id there.
    pub model: Option<(ModelApi, String)>,
    /// The conversation the call is made in: the search tool's finds are remembered there.
    pub conversation: Option<Arc<Conversation>>,
    /// Timeout and progress callback for the request.
    pub request: RequestOptions,
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The arguments may hold what the user typed: not shown.
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .field("id", &self.id)
            .field("model", &self.model.as_ref().map(|(api, _)| api.name()))
            .finish_non_exhaustive()
    }
}

impl ToolCall {
    /// A call of `name` with `arguments`, through the gate in [`PermissionMode::Confirm`].
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments,
            mode: PermissionMode::Confirm,
            id: None,
            model: None,
            conversation: None,
            request: RequestOptions::default(),
        }
    }

    /// A call as model API `api` wrote it, `call_id` being its id there: the arguments are
    /// mapped back to the server's schema, and the outcome carries the API's result item.
    pub fn from_model(
        api: ModelApi,
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> ToolCall {
        ToolCall {
            model: Some((api, call_id.into())),
            ..ToolCall::new(name, arguments)
        }
    }

    /// With permission mode `mode`.
    pub fn with_mode(mut self, mode: PermissionMode) -> ToolCall {
        self.mode = mode;
        self
    }

    /// Under the caller's id `id` (see [`ToolCall::id`]).
    pub fn with_id(mut self, id: impl Into<String>) -> ToolCall {
        self.id = Some(id.into());
        self
    }

    /// Made in `conversation`.
    pub fn with_conversation(mut self, conversation: Arc<Conversation>) -> ToolCall {
        self.conversation = Some(conversation);
        self
    }

    /// With request options `request` (timeout, progress).
    pub fn with_request(mut self, request: RequestOptions) -> ToolCall {
        self.request = request;
        self
    }
}

/// What a call gave: the output the model sees, and with [`ToolCall::from_model`] the model
/// API's result item carrying it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallOutcome {
    /// The rendered, capped result.
    pub output: ToolOutput,
    /// The result as the model API's request takes it back (see
    /// [`model_api::result_item`](crate::host::model_api::result_item)).
    pub item: Option<Value>,
}

/// The state behind the rules: calls in flight by server, and the calls running under a
/// caller's id with what cancels each.
pub(super) struct CallRules {
    most_per_server: AtomicUsize,
    in_flight: Mutex<HashMap<String, usize>>,
    running: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Default for CallRules {
    fn default() -> Self {
        CallRules {
            most_per_server: AtomicUsize::new(DEFAULT_MAX_CALLS_PER_SERVER),
            in_flight: Mutex::default(),
            running: Mutex::default(),
        }
    }
}

impl CallRules {
    pub(super) fn set_most_per_server(&self, most: usize) {
        self.most_per_server.store(most.max(1), Ordering::Relaxed);
    }

    /// Makes `call` on `manager` under the rules.
    pub(super) async fn call(
        &self,
        manager: &Manager,
        call: ToolCall,
    ) -> Result<CallOutcome, CallError> {
        let ToolCall {
            name,
            arguments,
            mode,
            id,
            model,
            conversation,
            mut request,
        } = call;
        // Only a model's call looks its definition up (a copy of the schema).
        let definition = model.as_ref().and_then(|_| manager.tool_definition(&name));
        let arguments = match (&model, definition) {
            (Some((api, call_id)), Some(definition)) => {
                let schema: Value =
                    serde_json::from_str(definition.input_schema.get()).unwrap_or(Value::Null);
                match map_back(&schema, arguments) {
                    Ok(arguments) => arguments,
                    Err(why) => {
                        let output = ToolOutput {
                            total_bytes: why.len() as u64,
                            text: why,
                            is_error: true,
                        };
                        let item = Some(result_item(*api, call_id, &name, &output));
                        return Ok(CallOutcome { output, item });
                    }
                }
            }
            _ => arguments,
        };
        let server = manager.resolve(&name).map(|(server, _)| server);
        let _slot = match &server {
            Some(server) => Some(self.take_slot(server)?),
            None => None,
        };
        let running = id.as_deref().map(|id| self.start(id)).transpose()?;
        if let Some(server) = server {
            request.on_progress =
                progress_to_events(manager.event_bus(), server, &name, &id, request.on_progress);
        }
        // On the heap: the manager's call is a large future, and every front end awaits this
        // one through a layer or two; each layer would copy it whole.
        let work = Box::pin(async {
            match conversation {
                Some(c) if name == SEARCH_TOOL => manager.call_in(&c, &name, arguments, mode).await,
                _ => manager.call_with(&name, arguments, mode, request).await,
            }
        });
        let output = match &running {
            None => work.await?,
            Some(running) => tokio::select! {
                outcome = work => outcome?,
                () = running.cancelled.notified() => {
                    return Err(CallError::Cancelled(running.id.clone()));
                }
            },
        };
        let item = model.map(|(api, call_id)| result_item(api, &call_id, &name, &output));
        Ok(CallOutcome { output, item })
    }

    /// Cancels the call running under `id`; false if there is none.
    pub(super) fn cancel(&self, id: &str) -> bool {
        let running = self.running.lock().expect("running calls lock");
        match running.get(id) {
            Some(cancelled) => {
                cancelled.notify_one();
                true
            }
            None => false,
        }
    }

    /// A place for one more call to `server`, unless it has the most in flight already.
    fn take_slot(&self, server: &str) -> Result<Slot<'_>, CallError> {
        let most = self.most_per_server.load(Ordering::Relaxed);
        let mut in_flight = self.in_flight.lock().expect("call slots lock");
        let count = in_flight.entry(server.to_string()).or_default();
        if *count >= most {
            return Err(CallError::Busy {
                server: server.to_string(),
                most,
            });
        }
        *count += 1;
        Ok(Slot {
            rules: self,
            server: server.to_string(),
        })
    }

    /// Takes `id` for a call, unless another call runs under it.
    fn start(&self, id: &str) -> Result<Running<'_>, CallError> {
        let mut running = self.running.lock().expect("running calls lock");
        if running.contains_key(id) {
            return Err(CallError::IdInUse(id.to_string()));
        }
        let cancelled = Arc::new(Notify::new());
        running.insert(id.to_string(), cancelled.clone());
        Ok(Running {
            rules: self,
            id: id.to_string(),
            cancelled,
        })
    }
}

/// The caller's progress callback, and while anyone listens on `events`, the progress
/// published there too (checked once: a listener that comes later misses this call's).
fn progress_to_events(
    events: &EventBus,
    server: String,
    tool: &str,
    id: &Option<String>,
    own: Option<crate::protocol::session::ProgressCallback>,
) -> Option<crate::protocol::session::ProgressCallback> {
    if events.listeners() == 0 {
        return own;
    }
    let (events, tool, id) = (events.clone(), tool.to_string(), id.clone());
    Some(Arc::new(move |p: Progress| {
        if let Some(own) = &own {
            own(p.clone());
        }
        events.publish(Event::Progress {
            server: server.clone(),
            id: id.clone(),
            tool: tool.clone(),
            progress: p.progress,
            total: p.total,
            status: p.status,
            message: p.message,
        });
    }))
}

/// One call's place among its server's calls in flight; given back when dropped.
struct Slot<'a> {
    rules: &'a CallRules,
    server: String,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.rules.in_flight.lock().expect("call slots lock");
        if let Some(count) = in_flight.get_mut(&self.server) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&self.server);
            }
        }
    }
}

/// One call's hold on its caller's id; given back when dropped.
struct Running<'a> {
    rules: &'a CallRules,
    id: String,
    cancelled: Arc<Notify>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut running = self.rules.running.lock().expect("running calls lock");
        running.remove(&self.id);
    }
}
