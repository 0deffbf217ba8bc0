//! Invariants of the management API's reading of a request (route, query, JSON body and the
//! route's members), for any route, method, query and body: it never panics, and every
//! refusal is a 4xx with a `type` and a message that says what to send instead; a body that is
//! not a JSON object is refused on every POST route.
//!
//! Input: byte 0 picks the route (every one, and an unknown path, equally often) and byte 1 the method; the rest is the body, or for the
//! login and logout routes the query.
#![no_main]
use agenvoy_mcp::unstable::fuzz::api_request;
use libfuzzer_sys::fuzz_target;

const PATHS: [&str; 23] = [
    "/v1/mcp",
    "/v1/mcp/remove",
    "/v1/mcp/status",
    "/v1/mcp/reconnect",
    "/v1/mcp/tools",
    "/v1/mcp/call",
    "/v1/allowlist",
    "/v1/mcp/oauth",
    "/v1/mcp/oauth/client",
    "/v1/mcp/oauth/callback",
    "/v1/mcp/call/cancel",
    "/v1/mcp/resources",
    "/v1/mcp/resource",
    "/v1/mcp/prompts",
    "/v1/mcp/prompt",
    "/v1/mcp/complete",
    "/v1/mcp/subscribe",
    "/v1/mcp/unsubscribe",
    "/v1/mcp/events",
    "/v1/mcp/requests/7",
    "/v1/mcp/enable",
    "/v1/mcp/tools/search",
    "/v1/nothing",
];
const METHODS: [&str; 4] = ["POST", "GET", "DELETE", "PUT"];

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    // Every route (and one unknown path) as often as any other.
    let path = PATHS[input[0] as usize % PATHS.len()];
    let method = METHODS[input[1] as usize % METHODS.len()];
    let rest = &input[2..];
    let query = String::from_utf8_lossy(rest);
    match api_request(method, path, &query, rest) {
        Ok(()) => {
            let body = serde_json::from_slice::<serde_json::Value>(rest);
            let empty = rest.iter().all(u8::is_ascii_whitespace);
            if method == "POST" && path != "/v1/mcp/oauth" {
                assert!(
                    empty || body.is_ok_and(|b| b.is_object()),
                    "{path} took {query:?}"
                );
            }
        }
        Err((status, kind, message)) => {
            assert!((400..500).contains(&status), "{status} for {method} {path}");
            assert!(!kind.is_empty() && !message.is_empty());
            assert!(message.len() <= 10 * rest.len() + 500, "{message}");
        }
    }
});
