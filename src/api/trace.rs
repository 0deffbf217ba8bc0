//! The caller's trace context on the routes that reach a server (`POST /v1/mcp/call`,
//! `GET /v1/mcp/resource`, `POST /v1/mcp/prompt`): its `traceparent`, `tracestate` and
//! `baggage` headers, checked as [`TraceContext::received`] does (what is not W3C is dropped
//! with a warning, never forwarded), go to the server in the request's `_meta`. With
//! [`ApiOptions::start_traces`](super::ApiOptions::start_traces), a request that brought no
//! valid `traceparent` gets a new trace of its own (random ids, sampled); without it, none.

use crate::protocol::trace::{BAGGAGE, TRACEPARENT, TRACESTATE, TraceContext};
use hyper::HeaderMap;
use ring::rand::{SecureRandom, SystemRandom};

/// The trace context to send for a request with `headers` to `route`.
pub(super) fn caller_trace(headers: &HeaderMap, start: bool, route: &str) -> Option<TraceContext> {
    // A list header's lines are one list (RFC 9110, section 5.3); a line that is not text,
    // or a `traceparent` sent twice, is no value at all.
    let lines = |name: &str| -> Option<String> {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().ok())
            .collect::<Option<_>>()
            .or_else(|| {
                tracing::warn!("{route}: dropping the caller's {name} header: it is not text");
                None
            })?;
        if name == TRACEPARENT && values.len() > 1 {
            tracing::warn!("{route}: dropping the caller's traceparent headers: there are several");
            return None;
        }
        (!values.is_empty()).then(|| values.join(","))
    };
    let (parent, state, baggage) = (lines(TRACEPARENT), lines(TRACESTATE), lines(BAGGAGE));
    let received = TraceContext::received(
        parent.as_deref(),
        state.as_deref(),
        baggage.as_deref(),
        route,
    );
    if received.is_some() {
        return received;
    }
    if !start {
        if parent.is_none() && (state.is_some() || baggage.is_some()) {
            tracing::debug!(
                "{route}: no traceparent: the caller's tracestate and baggage are not sent"
            );
        }
        return None;
    }
    let (mut trace_id, mut parent_id) = ([0u8; 16], [0u8; 8]);
    let random = SystemRandom::new();
    if random.fill(&mut trace_id).is_err() || random.fill(&mut parent_id).is_err() {
        tracing::warn!("{route}: no random bytes to start a trace with: the server gets none");
        return None;
    }
    // A new trace carries the caller's baggage, if it is valid.
    let started = TraceContext::started(trace_id, parent_id, baggage.as_deref(), route);
    Some(started)
}
