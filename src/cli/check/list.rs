//! Every check `check` runs: its ID, what it holds the server to, the spec's section that
//! says so, the official conformance suite's matching server scenario, and whether the spec
//! says MUST (a failure) or SHOULD (a warning). docs/CHECK.md lists them.

/// How strongly the spec asks what a check holds the server to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// MUST: breaking it is a failure.
    Must,
    /// SHOULD: breaking it is a warning, which leaves the exit status 0.
    Should,
}

/// One check.
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    /// The section of the 2025-11-25 revision (a path under its URL), or of another
    /// revision when it begins with that revision's date.
    pub section: &'static str,
    pub scenario: Option<&'static str>,
    pub level: Level,
}

const fn must(
    id: &'static str,
    title: &'static str,
    section: &'static str,
    scenario: Option<&'static str>,
) -> Check {
    Check {
        id,
        title,
        section,
        scenario,
        level: Level::Must,
    }
}

const fn should(id: &'static str, title: &'static str, section: &'static str) -> Check {
    Check {
        id,
        title,
        section,
        scenario: None,
        level: Level::Should,
    }
}

/// The checks, in the order they run: the protocol first, then the transport's rules on
/// connections of their own, and last what was seen over the whole run.
pub const CHECKS: &[Check] = &[
    must(
        "initialize",
        "the handshake (or server/discover) gives a supported revision and the server's name and version",
        "basic/lifecycle",
        Some("server-initialize"),
    ),
    must(
        "ping",
        "ping is answered with an empty result",
        "basic/utilities/ping",
        Some("ping"),
    ),
    must(
        "unknown-method",
        "a method the server does not have is refused with -32601 (method not found)",
        "basic",
        None,
    ),
    must(
        "malformed-params",
        "a request whose params lack a required member (tools/call or prompts/get without a name) is refused with a JSON-RPC error",
        "basic#requests",
        None,
    ),
    must(
        "undeclared-capability",
        "the list of a capability not declared is refused with -32601",
        "basic/lifecycle#capability-negotiation",
        None,
    ),
    must(
        "tools-list",
        "tools/list answers; each tool has a name, unique, and an inputSchema that is a valid JSON Schema object (of type object before 2026-07-28)",
        "server/tools#listing-tools",
        Some("tools-list"),
    ),
    must(
        "tools-output-schema",
        "a tool's outputSchema, when given, is a valid JSON Schema of type object",
        "server/tools#output-schema",
        None,
    ),
    must(
        "tools-call-unknown",
        "calling a tool the server does not list is a JSON-RPC error, not a result",
        "server/tools#error-handling",
        None,
    ),
    must(
        "tools-call",
        "the tools called (read-only ones that need no argument, those named by --call, all that need none with --allow-writes) answer with valid content blocks, and with structuredContent that fits their outputSchema",
        "server/tools#tool-result",
        Some("tools-call-simple-text"),
    ),
    must(
        "progress",
        "progress notifications for a request carry its progressToken and a progress that increases",
        "basic/utilities/progress",
        None,
    ),
    should(
        "tools-list-changed",
        "where tools.listChanged is declared and a tool called changes the tool list, the server sends notifications/tools/list_changed",
        "server/tools#list-changed-notification",
    ),
    must(
        "cancellation",
        "after a request is cancelled (notifications/cancelled, or its stream closed), the server goes on answering",
        "basic/utilities/cancellation",
        None,
    ),
    must(
        "pagination",
        "every list declared answers page by page to its end: each nextCursor a string not seen before",
        "server/utilities/pagination",
        None,
    ),
    should(
        "pagination-invalid-cursor",
        "a list asked with a cursor the server never gave is refused with -32602",
        "server/utilities/pagination#error-handling",
    ),
    must(
        "resources-list",
        "resources/list answers; each resource has a uri and a name",
        "server/resources#listing-resources",
        Some("resources-list"),
    ),
    must(
        "resources-templates-list",
        "resources/templates/list answers; each template has a uriTemplate and a name",
        "server/resources#resource-templates",
        Some("resources-templates-read"),
    ),
    must(
        "resources-read",
        "reading the first resource gives its contents, each with a uri and text or blob",
        "server/resources#reading-resources",
        Some("resources-read-text"),
    ),
    should(
        "resources-read-unknown",
        "reading a resource that does not exist is refused with the not-found code (-32002; -32602 from 2026-07-28)",
        "server/resources#error-handling",
    ),
    must(
        "resources-subscribe",
        "where subscribe is declared, resources/subscribe and resources/unsubscribe of a listed resource answer with an empty result",
        "server/resources#subscriptions",
        Some("resources-subscribe"),
    ),
    must(
        "prompts-list",
        "prompts/list answers; each prompt has a name",
        "server/prompts#listing-prompts",
        Some("prompts-list"),
    ),
    must(
        "prompts-get",
        "getting each prompt, its required arguments given, answers with messages of a role and a valid content block",
        "server/prompts#getting-a-prompt",
        Some("prompts-get-simple"),
    ),
    should(
        "prompts-get-missing-argument",
        "getting a prompt without one of its required arguments is refused with -32602",
        "server/prompts#error-handling",
    ),
    must(
        "completion",
        "where completions are declared, completion/complete for a prompt argument or a template variable answers with at most 100 values",
        "server/utilities/completion",
        Some("completion-complete"),
    ),
    must(
        "logging-set-level",
        "logging/setLevel is answered with an empty result",
        "server/utilities/logging",
        Some("logging-set-level"),
    ),
    should(
        "logging-invalid-level",
        "logging/setLevel with a level that does not exist is refused with -32602",
        "server/utilities/logging#error-handling",
    ),
    must(
        "result-type",
        "2026-07-28: every result (of the lists declared and the tools called) carries a resultType",
        "2026-07-28/schema#result",
        None,
    ),
    must(
        "unsupported-version",
        "2026-07-28 over stdio: a request of a version the server does not speak is refused with -32022, data.supported listing the ones it does",
        "2026-07-28/basic/versioning#protocol-version-negotiation",
        None,
    ),
    must(
        "stdio-framing",
        "over stdio, every line on stdout is one JSON-RPC 2.0 message, each response's id one of a request sent",
        "basic/transports#stdio",
        None,
    ),
    must(
        "http-response-type",
        "a POSTed request is answered 200 with Content-Type application/json or text/event-stream, holding its response",
        "basic/transports#sending-messages-to-the-server",
        None,
    ),
    must(
        "http-notification",
        "a POSTed notification is answered 202 Accepted with no body",
        "basic/transports#sending-messages-to-the-server",
        None,
    ),
    must(
        "http-origin",
        "a request with an Origin the server does not serve is refused with 403 Forbidden (DNS rebinding)",
        "basic/transports#security-warning",
        Some("dns-rebinding-protection"),
    ),
    must(
        "http-protocol-version",
        "a request with an MCP-Protocol-Version the server does not support is refused with 400 (in 2026-07-28 with -32022 listing the versions it supports)",
        "basic/transports#protocol-version-header",
        None,
    ),
    must(
        "http-session",
        "a request with a session ID the server never gave is answered 404 Not Found",
        "basic/transports#session-management",
        None,
    ),
    should(
        "http-session-missing",
        "a request without the session ID the server gave is answered 400 Bad Request",
        "basic/transports#session-management",
    ),
    must(
        "http-get",
        "a GET of the endpoint opens an event stream (text/event-stream) or is answered 405 Method Not Allowed",
        "basic/transports#listening-for-messages-from-the-server",
        None,
    ),
    must(
        "http-sse-ids",
        "the event IDs of the event streams the server answered with are unique across all streams of the session",
        "basic/transports#resumability-and-redelivery",
        None,
    ),
    must(
        "http-headers",
        "2026-07-28: an unknown method is answered 404 with -32601, and a request whose Mcp-Method or Mcp-Name header is missing or differs from its body 400 with -32020, each error naming the request's id",
        "2026-07-28/basic/transports/streamable-http#request-metadata",
        None,
    ),
    must(
        "oauth-discovery",
        "a server that requires authorization answers 401 with a WWW-Authenticate challenge, serves protected resource metadata for its URL, and names an authorization server whose metadata offers PKCE S256",
        "basic/authorization#authorization-server-discovery",
        None,
    ),
    must(
        "notifications-declared",
        "every notification the server sent over the run belongs to a capability it declared (list changes, resource updates, log messages)",
        "basic/lifecycle#capability-negotiation",
        None,
    ),
];
