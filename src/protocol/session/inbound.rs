//! The session's inbound side: the task that reads what the transport delivers, matches
//! responses to their requests, hands notifications on (within a budget a second) and answers
//! the server's own requests through the embedder's handlers.

use super::*;
use crate::protocol::server_requests::{answer_elicitation, answer_sampling};
use crate::wire::jsonrpc::Request;

/// Notifications a server may send in one second; past it the session reads it more slowly
/// (the transport's reader waits, and so, through the pipe or the socket, does the server),
/// so a server that floods its client costs it a bounded share of a core.
const NOTIFICATIONS_PER_SECOND: u32 = 200;

/// Counts a server's notifications in the current second.
struct NotificationBudget {
    second_ends: tokio::time::Instant,
    left: u32,
    /// Whether the server was told of in the log already.
    warned: bool,
}

impl NotificationBudget {
    fn new() -> Self {
        NotificationBudget {
            second_ends: tokio::time::Instant::now() + Duration::from_secs(1),
            left: NOTIFICATIONS_PER_SECOND,
            warned: false,
        }
    }

    /// Takes `count` notifications; when the second's budget is spent, when to go on.
    fn take(&mut self, count: u32) -> Option<tokio::time::Instant> {
        let now = tokio::time::Instant::now();
        if now >= self.second_ends {
            self.second_ends = now + Duration::from_secs(1);
            self.left = NOTIFICATIONS_PER_SECOND;
        }
        self.left = self.left.saturating_sub(count);
        (self.left == 0).then_some(self.second_ends)
    }
}

/// Takes the responses at the front of `messages` from the transport's reader
/// ([`Shortcut`](crate::transport::Shortcut)): fills their replies, then wakes their callers.
pub(super) fn take(shared: &Weak<Shared>, messages: &mut Vec<Decoded>) {
    let responses = messages
        .iter()
        .take_while(|d| d.id.is_some() && d.method.is_none())
        .count();
    let Some(shared) = shared.upgrade().filter(|_| responses > 0) else {
        return;
    };
    receive_all(&shared, messages.drain(..responses));
}

/// Routes `messages` in order, every reply filled before any caller is woken (see `reply`).
fn receive_all(shared: &Arc<Shared>, messages: impl Iterator<Item = Decoded>) {
    let filled: Vec<reply::Filled> = messages.filter_map(|d| receive(shared, d)).collect();
    reply::wake(filled);
}

pub(super) async fn run_inbound(
    shared: Weak<Shared>,
    mut inbound: mpsc::Receiver<Inbound>,
    shortcut: Option<Arc<crate::transport::Shortcut>>,
) {
    // Each item counted as handled once it is, whatever the path out of the loop's body.
    struct Handled<'a>(Option<&'a crate::transport::Shortcut>);
    impl Drop for Handled<'_> {
        fn drop(&mut self) {
            if let Some(shortcut) = self.0 {
                shortcut.handled();
            }
        }
    }
    let mut budget = NotificationBudget::new();
    let is_notification = |d: &Decoded| d.id.is_none() && d.method.is_some();
    while let Some(item) = inbound.recv().await {
        let _handled = Handled(shortcut.as_deref());
        let notifications = match &item {
            Inbound::Message(d) => u32::from(is_notification(d)),
            Inbound::Batch(messages) => {
                messages.iter().filter(|d| is_notification(d)).count() as u32
            }
            _ => 0,
        };
        let resume = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            match item {
                Inbound::Message(decoded) => reply::wake(receive(&shared, decoded)),
                Inbound::Batch(messages) => receive_all(&shared, messages.into_iter()),
                Inbound::Failed(Id::Number(id), error) => {
                    let pending = shared.pending.lock().expect("pending lock").remove(&id);
                    reply::wake(pending.map(|p| p.reply.fill(Err(error))));
                }
                Inbound::Failed(Id::String(_), error) => {
                    tracing::debug!(server = %shared.server, "a failure for no pending request: {error}");
                }
                Inbound::Closed(reason) => {
                    *shared.closed.lock().expect("closed lock") = Some(reason);
                    // Dropping the senders fails every waiting request with the reason.
                    shared.pending.lock().expect("pending lock").clear();
                    shared.ending.send_replace(true);
                    return;
                }
            }
            let resume = budget.take(notifications);
            if resume.is_some() && !std::mem::replace(&mut budget.warned, true) {
                tracing::warn!(server = %shared.server, "the server sends more than {NOTIFICATIONS_PER_SECOND} notifications a second; reading it more slowly");
            }
            resume
        };
        // Without the session held, so that it can end meanwhile.
        if let Some(resume) = resume {
            tokio::time::sleep_until(resume).await;
        }
    }
}

/// Routes one decoded message: responses to their requests, requests to their answers,
/// notifications to their subscribers. Returns the reply it filled, whose caller is for the
/// caller of this to wake ([`reply::wake`]).
fn receive(shared: &Arc<Shared>, mut decoded: Decoded) -> Option<reply::Filled> {
    // A result read on the way is handed on as it is: a tool call needs nothing more of it.
    if let (Some(head), Some(Id::Number(_))) = (decoded.result.take(), &decoded.id) {
        let outcome = Outcome::Read {
            raw: decoded.raw.take(),
            head,
        };
        return complete(
            shared,
            decoded.id.as_ref(),
            outcome,
            decoded.render,
            decoded.len,
        );
    }
    // A request of the server is measured before it is parsed: it is kept (parsed) until
    // it is answered, which can take minutes.
    let mut held = None;
    if let (Some(id), Some(method), Some(raw)) = (&decoded.id, &decoded.method, &decoded.raw) {
        let values = jsonrpc::count_values(raw).unwrap_or(0);
        let bytes = u32::try_from(raw.len()).unwrap_or(u32::MAX);
        let refusal = if values > MAX_REQUEST_VALUES {
            Some(format!(
                "the request holds {values} JSON values; this client reads at most {MAX_REQUEST_VALUES} of a request"
            ))
        } else {
            match shared.holding.clone().try_acquire_many_owned(bytes) {
                Ok(permit) => {
                    held = Some(permit);
                    None
                }
                Err(_) => Some(format!(
                    "the request is {} bytes, and with the server's requests waiting for answers that passes the {} MiB this client holds of them; answer or cancel those first",
                    raw.len(),
                    MAX_REQUEST_BYTES >> 20
                )),
            }
        };
        if let Some(why) = refusal {
            tracing::warn!(server = %shared.server, "refused its {method} request unread: {why}");
            let error = ErrorObject::new(jsonrpc::INVALID_REQUEST, format!("{method}: {why}"));
            answer_in_background(shared, id.clone(), method.clone(), async { Err(error) });
            return None;
        }
    }
    let message = match decoded.raw.as_deref().map(Message::parse) {
        Some(Ok(message)) => message,
        Some(Err(e)) => {
            let raw = decoded.raw.as_deref().unwrap_or_default();
            let excerpt = String::from_utf8_lossy(&raw[..raw.len().min(EXCERPT)]);
            let excerpt = crate::safe_text::escape_controls(&excerpt);
            tracing::warn!(server = %shared.server, "skipping a message that is not JSON-RPC ({e}): {excerpt}");
            return None;
        }
        // Too large to keep whole: a response is still complete as a rendered tool result.
        None if decoded.render.is_some() => {
            return complete(
                shared,
                decoded.id.as_ref(),
                Outcome::Parsed(None),
                decoded.render,
                decoded.len,
            );
        }
        None => {
            let method = decoded.method.as_deref().unwrap_or("a message");
            tracing::warn!(server = %shared.server, "dropped {method} of {} bytes: more than this client keeps of one message", decoded.len);
            if let (Some(id), Some(method)) = (decoded.id, decoded.method) {
                let error = ErrorObject::new(
                    jsonrpc::INVALID_REQUEST,
                    format!("{method}: the request is too large for this client"),
                );
                answer_in_background(shared, id, method, async { Err(error) });
            }
            return None;
        }
    };
    match message {
        Message::Request(request) if sent_back(shared, &request) => {
            our_request_back(shared, request)
        }
        Message::Response(r) => complete(
            shared,
            r.id.as_ref(),
            Outcome::Parsed(Some(r.outcome)),
            decoded.render,
            decoded.len,
        ),
        Message::Request(request) => {
            let handlers = shared.handlers.clone();
            let roots = shared
                .roots
                .lock()
                .expect("roots lock")
                .clone()
                .unwrap_or_default();
            let method = request.method.clone();
            let params = request.params.unwrap_or(Value::Null);
            let work = async move {
                let _held = held;
                handle_server_request(&handlers, roots, &method, params).await
            };
            answer_in_background(shared, request.id, request.method, work);
            None
        }
        Message::Notification(n) => {
            on_notification(shared, n);
            None
        }
    }
}

/// Whether `request` is one of ours sent back to us: under the id of a request of ours that
/// waits, a method this client answers none of. A program that echoes what it reads (`cat`)
/// does that; answering it would only have our answer echoed as the server's.
fn sent_back(shared: &Shared, request: &Request) -> bool {
    let Id::Number(id) = &request.id else {
        return false;
    };
    !ANSWERED.contains(&request.method.as_str())
        && shared
            .pending
            .lock()
            .expect("pending lock")
            .contains_key(id)
}

/// Fails the request of ours that `request` sent back (see [`sent_back`]), saying why.
fn our_request_back(shared: &Shared, request: Request) -> Option<reply::Filled> {
    let Id::Number(id) = request.id else {
        return None;
    };
    let pending = shared.pending.lock().expect("pending lock").remove(&id)?;
    let why = format!(
        "the server sent our own {} request back instead of answering it: it does not speak MCP (it echoes what it reads, as `cat` does); check the server's command or URL",
        request.method
    );
    let error = Error::new(&shared.server, ErrorKind::Protocol(why));
    Some(pending.reply.fill(Err(error)))
}

/// Fills the reply of the request `id` answers, without waking its caller.
fn complete(
    shared: &Shared,
    id: Option<&Id>,
    outcome: Outcome,
    rendered: Option<Result<Rendered, RenderError>>,
    len: u64,
) -> Option<reply::Filled> {
    let pending = match id {
        Some(Id::Number(id)) => shared.pending.lock().expect("pending lock").remove(id),
        _ => None,
    };
    match (pending, outcome) {
        (Some(p), outcome) => {
            if p.keep_progress
                && matches!(outcome, Outcome::Read { .. } | Outcome::Parsed(Some(Ok(_))))
                && let Some(Id::Number(id)) = id
            {
                // Before the next message is read: no progress of the task is missed.
                let watcher = (p.progress.clone(), None);
                shared
                    .watchers
                    .lock()
                    .expect("watchers lock")
                    .insert(*id, watcher);
            }
            Some(p.reply.fill(Ok(Reply {
                outcome,
                rendered,
                len,
            })))
        }
        (None, Outcome::Parsed(Some(Err(e)))) => {
            tracing::warn!(server = %shared.server, "the server reported an error: {e}");
            None
        }
        (None, _) => {
            tracing::debug!(server = %shared.server, "a response to no pending request was dropped");
            None
        }
    }
}

fn on_notification(shared: &Shared, n: Notification) {
    match n.method.as_str() {
        methods::PROGRESS => {
            let params = n.params.clone().unwrap_or(Value::Null);
            let token = params.get("progressToken").and_then(Value::as_i64);
            // Taken out of the lock: the embedder's callback never runs under it.
            let (activity, callback) = {
                let pending = shared.pending.lock().expect("pending lock");
                match token.and_then(|t| pending.get(&t)) {
                    Some(p) => (p.activity.clone(), p.progress.clone()),
                    None => {
                        drop(pending);
                        let watchers = shared.watchers.lock().expect("watchers lock");
                        match token.and_then(|t| watchers.get(&t)) {
                            Some((progress, activity)) => (activity.clone(), progress.clone()),
                            None => (None, None),
                        }
                    }
                }
            };
            if let Some(activity) = &activity {
                activity.notify_one();
            }
            if let Some(callback) = &callback {
                callback(Progress {
                    progress: params.get("progress").and_then(Value::as_f64),
                    total: params.get("total").and_then(Value::as_f64),
                    status: None,
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                });
            }
        }
        methods::TOOLS_LIST_CHANGED => {
            shared.tool_list_changes.fetch_add(1, Ordering::Relaxed);
        }
        methods::LOG_MESSAGE => {
            let params = n.params.clone().unwrap_or(Value::Null);
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .unwrap_or("info");
            let data = params.get("data").map(Value::to_string).unwrap_or_default();
            // JSON leaves DEL and C1 characters raw; the level is the server's text too.
            let (level, data) = (
                crate::safe_text::escape_controls(level),
                crate::safe_text::escape_controls(&data),
            );
            // At the matching level: debug; info and notice; warning; error and above.
            match &*level {
                "debug" => {
                    tracing::debug!(target: "agenvoy_mcp::server", server = %shared.server, level = %level, "log: {data}")
                }
                "warning" => {
                    tracing::warn!(target: "agenvoy_mcp::server", server = %shared.server, level = %level, "log: {data}")
                }
                "error" | "critical" | "alert" | "emergency" => {
                    tracing::error!(target: "agenvoy_mcp::server", server = %shared.server, level = %level, "log: {data}")
                }
                _ => {
                    tracing::info!(target: "agenvoy_mcp::server", server = %shared.server, level = %level, "log: {data}")
                }
            }
        }
        _ => {}
    }
    let _ = shared.notifications.send(n);
}

/// Answers one request of the server on a task of its own: at most [`MAX_SERVER_REQUESTS`]
/// at once (past it the request is dropped, with one warning), each ending when the
/// connection does, its write bounded by [`WRITE_TIMEOUT`].
fn answer_in_background(
    shared: &Arc<Shared>,
    id: Id,
    method: String,
    work: impl Future<Output = Result<Value, ErrorObject>> + Send + 'static,
) {
    let Ok(permit) = shared.answering.clone().try_acquire_owned() else {
        if !shared.warned_of_flood.swap(true, Ordering::Relaxed) {
            tracing::warn!(server = %shared.server, "the server has more than {MAX_SERVER_REQUESTS} requests to the client unanswered; dropping {method} and any other past that limit");
        }
        return;
    };
    let mut ending = shared.ending.subscribe();
    let shared = shared.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let reply = async {
            let response = Message::Response(Response {
                id: Some(id),
                outcome: work.await,
            });
            let sent = shared.transport.send(Outbound::new(&response));
            match tokio::time::timeout(WRITE_TIMEOUT, sent).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::debug!(server = %shared.server, "could not answer {method}: {e}")
                }
                Err(_) => {
                    tracing::debug!(server = %shared.server, "could not answer {method}: the server is not reading")
                }
            }
        };
        tokio::select! {
            () = reply => {}
            _ = ending.wait_for(|ended| *ended) => {}
        }
    });
}

/// The requests of a server this client answers (all in [`handle_server_request`]).
const ANSWERED: [&str; 4] = [
    methods::PING,
    methods::ROOTS_LIST,
    methods::SAMPLING_CREATE_MESSAGE,
    methods::ELICITATION_CREATE,
];

/// What the client answers to a server's request, whether it came as a JSON-RPC request or
/// as one of a result's `inputRequests`.
pub(super) async fn handle_server_request(
    handlers: &Handlers,
    roots: Vec<Root>,
    method: &str,
    params: Value,
) -> Result<Value, ErrorObject> {
    let not_found = || {
        Err(ErrorObject::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        ))
    };
    match method {
        methods::PING => Ok(json!({})),
        methods::ROOTS_LIST => Ok(json!({"roots": roots})),
        methods::SAMPLING_CREATE_MESSAGE => match &handlers.sampling {
            Some(handler) => answer_sampling(handler, handlers.sampling_tools, params).await,
            None => Err(unoffered(method, "sampling")),
        },
        methods::ELICITATION_CREATE => match &handlers.elicitation {
            Some(handler) => answer_elicitation(handler, params).await,
            None => Err(unoffered(method, "elicitation")),
        },
        _ => not_found(),
    }
}

/// The answer to a question the client did not offer to take.
fn unoffered(method: &str, capability: &str) -> ErrorObject {
    ErrorObject::new(
        jsonrpc::METHOD_NOT_FOUND,
        format!(
            "method not found: {method}: this client did not declare {capability} (its host has no {capability} handler), so no one can answer it"
        ),
    )
}
