//! The streamable HTTP transport's rules, and OAuth discovery: checked on exchanges of
//! `check`'s own, written as no transport of the library would write them (a stranger's
//! `Origin`, a session never given, a protocol version that does not exist), each answer
//! read as it came.

use super::{
    Ctx, Target, Verdict, cut, failed, initialize_request, not_applicable, stateless_meta,
};
use agenvoy_mcp::unstable::raw_http::{HttpsClient, RawAnswer, https_client, raw_exchange};
use agenvoy_mcp::{Era, Proxy};
use serde_json::{Value, json};
use std::time::Duration;

/// How long a POST's body is read: a response stream that stays open after its response is
/// cut there.
const BODY_WAIT: Duration = Duration::from_secs(5);

/// How long a GET's event stream is read once open.
const STREAM_WAIT: Duration = Duration::from_millis(300);

/// An `Origin` no server serves: a web page's, as in a DNS rebinding attack.
const FOREIGN_ORIGIN: &str = "http://dns-rebinding.agenvoy-check.invalid";

/// Headers to send, as name and value.
type Headers<'a> = Vec<(&'a str, &'a str)>;

/// The connection the HTTP checks share: a session of `check`'s own, opened once.
pub(super) struct Opened {
    /// Why the HTTP checks do not apply, if they do not.
    blocked: Option<String>,
    /// The 401 answer, when the server requires authorization.
    unauthorized: Option<RawAnswer>,
    http: Option<HttpsClient>,
    url: String,
    era: Era,
    version: String,
    session: Option<String>,
    /// The answer to the first request (`initialize` or `server/discover`).
    first: Option<RawAnswer>,
    /// The answer to `notifications/initialized` (handshake era).
    notification: Option<RawAnswer>,
    /// The event IDs of each event stream a POST was answered with, in order.
    streams: std::sync::Mutex<Vec<Vec<String>>>,
}

/// A connection not opened, for `why`; `None` for one about to be.
fn unopened(why: Option<String>) -> Opened {
    Opened {
        blocked: why,
        unauthorized: None,
        http: None,
        url: String::new(),
        era: Era::Handshake,
        version: String::new(),
        session: None,
        first: None,
        notification: None,
        streams: Default::default(),
    }
}

impl Opened {
    /// POSTs `message` with the headers a client sends (the session, the protocol version,
    /// in 2026-07-28 `Mcp-Method`), `extra` after them and `drop` left out.
    async fn post(
        &self,
        ctx: &Ctx,
        message: &Value,
        extra: &[(&str, &str)],
        drop: &[&str],
    ) -> Result<RawAnswer, String> {
        let method = message["method"].as_str().unwrap_or_default().to_string();
        let mut headers: Vec<(&str, &str)> = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", &self.version),
        ];
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id", session));
        }
        if self.era == Era::Stateless {
            headers.push(("mcp-method", &method));
        }
        headers.retain(|(name, _)| !drop.contains(name) && !extra.iter().any(|(n, _)| n == name));
        headers.extend_from_slice(extra);
        let user: Vec<(&str, &str)> = ctx
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        headers.extend(user);
        let http = self.http.as_ref().ok_or("no connection")?;
        let body = message.to_string().into_bytes();
        let answer = raw_exchange(
            http,
            "POST",
            &self.url,
            &headers,
            body,
            ctx.timeout,
            BODY_WAIT,
        )
        .await?;
        if is_event_stream(&answer) {
            let mut streams = self.streams.lock().expect("streams lock");
            streams.push(event_ids(&answer));
        }
        Ok(answer)
    }

    /// A request the server must answer in its era: `ping`, or `server/discover`.
    fn any_request(&self, id: i64) -> Value {
        match self.era {
            Era::Stateless => json!({"jsonrpc": "2.0", "id": id, "method": "server/discover",
                "params": {"_meta": stateless_meta(&self.version)}}),
            _ => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        }
    }
}

async fn open(ctx: &Ctx) -> Opened {
    let Target::Url(url) = &ctx.target else {
        return unopened(Some("the server is reached over stdio".into()));
    };
    let (era, version) = match &ctx.client {
        Some(client) => (
            client.details().era,
            client.details().protocol_version.clone(),
        ),
        None => (Era::Handshake, "2025-11-25".to_string()),
    };
    let mut opened = Opened {
        http: Some(https_client("server", ctx.timeout, &Proxy::Environment)),
        url: url.clone(),
        era,
        version: version.clone(),
        ..unopened(None)
    };
    let first = match era {
        Era::Stateless => opened.any_request(1),
        _ => initialize_request(&version),
    };
    // No protocol version header before one is agreed.
    let drop: &[&str] = if era == Era::Handshake {
        &["mcp-protocol-version"]
    } else {
        &[]
    };
    let answer = match opened.post(ctx, &first, &[], drop).await {
        Ok(answer) => answer,
        Err(why) => return unopened(Some(format!("the server could not be reached: {why}"))),
    };
    if answer.status == 401 {
        opened.unauthorized = Some(answer);
        return opened;
    }
    opened.session = answer.header("mcp-session-id").map(str::to_string);
    opened.first = Some(answer);
    if era == Era::Handshake {
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        opened.notification = opened.post(ctx, &initialized, &[], &[]).await.ok();
    }
    opened
}

/// The shared connection, opened at the first HTTP check.
async fn opened(ctx: &Ctx) -> &Opened {
    ctx.http.get_or_init(|| open(ctx)).await
}

/// Whether the server answered `check`'s first request 401.
pub(super) async fn needs_authorization(ctx: &Ctx) -> bool {
    opened(ctx).await.unauthorized.is_some()
}

/// The JSON-RPC messages of a body: one JSON document, or the `data` of each SSE event.
fn messages(answer: &RawAnswer) -> Vec<Value> {
    let text = String::from_utf8_lossy(&answer.body);
    if !is_event_stream(answer) {
        return serde_json::from_str(&text).into_iter().collect();
    }
    let mut found = Vec::new();
    let mut data = String::new();
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.is_empty() {
            if let Ok(message) = serde_json::from_str(&data) {
                found.push(message);
            }
            data.clear();
        } else if let Some(value) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    if let Ok(message) = serde_json::from_str(&data) {
        found.push(message);
    }
    found
}

/// The `id` of each event of an event stream, in order.
fn event_ids(answer: &RawAnswer) -> Vec<String> {
    String::from_utf8_lossy(&answer.body)
        .split('\n')
        .filter_map(|line| line.strip_suffix('\r').unwrap_or(line).strip_prefix("id:"))
        .map(|id| id.strip_prefix(' ').unwrap_or(id).to_string())
        .collect()
}

fn content_type(answer: &RawAnswer) -> String {
    answer
        .header("content-type")
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn is_event_stream(answer: &RawAnswer) -> bool {
    content_type(answer) == "text/event-stream"
}

/// An answer as a finding shows it: its status, content type and body.
fn described(answer: &RawAnswer) -> String {
    let content = answer.header("content-type").unwrap_or("none");
    cut(&format!(
        "HTTP {} (Content-Type: {content}) {}",
        answer.status,
        String::from_utf8_lossy(&answer.body)
    ))
}

/// The error code of the JSON-RPC error in an answer's body, if it holds one.
fn error_code(answer: &RawAnswer) -> Option<i64> {
    messages(answer)
        .iter()
        .find_map(|m| m["error"]["code"].as_i64())
}

/// Whether an answer's JSON-RPC error names the request it answers, as 2026-07-28 asks of
/// every error whose request's id could be read.
fn names_request(answer: &RawAnswer, request: &Value) -> bool {
    messages(answer)
        .iter()
        .any(|m| m.get("error").is_some() && m["id"] == request["id"])
}

pub(super) async fn judge(ctx: &Ctx, id: &str) -> Verdict {
    let opened = opened(ctx).await;
    if let Some(why) = &opened.blocked {
        return not_applicable(why.clone());
    }
    if let Some(answer) = &opened.unauthorized {
        return not_applicable(format!(
            "the server requires authorization (HTTP {}); give a token with --header 'Authorization: Bearer ...'",
            answer.status
        ));
    }
    let handshake = opened.era == Era::Handshake;
    match id {
        "http-response-type" => response_type(opened),
        "http-notification" if handshake => notification(opened),
        "http-notification" => {
            not_applicable("2026-07-28 defines no client notification over HTTP")
        }
        "http-origin" => origin(ctx, opened).await,
        "http-protocol-version" => protocol_version(ctx, opened).await,
        "http-session" | "http-session-missing" if !handshake => {
            not_applicable("2026-07-28 has no sessions")
        }
        "http-session" | "http-session-missing" if opened.session.is_none() => {
            not_applicable("the server gave no session ID")
        }
        "http-session" => {
            session(ctx, opened, Some("agenvoy-check-session-never-given"), 404).await
        }
        "http-session-missing" => session(ctx, opened, None, 400).await,
        "http-get" if handshake => get(ctx, opened).await,
        "http-get" => not_applicable("2026-07-28 has no GET stream"),
        "http-sse-ids" if !handshake => not_applicable("2026-07-28 streams are not resumed"),
        "http-sse-ids" => sse_ids(opened),
        "http-headers" if handshake => {
            not_applicable("the request metadata headers are 2026-07-28's")
        }
        "http-headers" => headers(ctx, opened).await,
        other => unreachable!("an HTTP check without a body: {other}"),
    }
}

fn response_type(opened: &Opened) -> Verdict {
    let Some(answer) = &opened.first else {
        return not_applicable("the first request was not answered");
    };
    let kind = content_type(answer);
    if answer.status != 200 || !matches!(kind.as_str(), "application/json" | "text/event-stream") {
        return failed(
            "a request must be answered 200 with Content-Type application/json or text/event-stream",
            Some(described(answer)),
        );
    }
    if !messages(answer).iter().any(|m| m["id"] == json!(1)) {
        return failed(
            "the answer holds no JSON-RPC response to the request (id 1)",
            Some(described(answer)),
        );
    }
    Verdict::Passed
}

fn notification(opened: &Opened) -> Verdict {
    let Some(answer) = &opened.notification else {
        return failed("notifications/initialized was not answered", None);
    };
    if answer.status != 202 || !answer.body.is_empty() {
        return failed(
            "a notification the server accepts must be answered 202 Accepted with no body",
            Some(described(answer)),
        );
    }
    Verdict::Passed
}

/// `expected` of a request, or the failure `why`.
async fn expect_status(
    ctx: &Ctx,
    opened: &Opened,
    request: &Value,
    extra: &[(&str, &str)],
    drop: &[&str],
    expected: u16,
    why: &str,
) -> Verdict {
    match opened.post(ctx, request, extra, drop).await {
        Ok(answer) if answer.status == expected => Verdict::Passed,
        Ok(answer) => failed(
            format!("{why}; it was answered {}", answer.status),
            Some(described(&answer)),
        ),
        Err(e) => failed(format!("the request was not answered: {e}"), None),
    }
}

/// `scheme://authority` of the endpoint: the origin of the server's own pages.
fn own_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    Some(format!("{scheme}://{authority}"))
}

async fn origin(ctx: &Ctx, opened: &Opened) -> Verdict {
    let request = opened.any_request(2);
    let why =
        format!("a request with the Origin {FOREIGN_ORIGIN} must be refused with 403 Forbidden");
    let foreign = expect_status(
        ctx,
        opened,
        &request,
        &[("origin", FOREIGN_ORIGIN)],
        &[],
        403,
        &why,
    )
    .await;
    if !matches!(foreign, Verdict::Passed) {
        return foreign;
    }
    // Refusing every Origin is no validation either: the server's own must be served.
    let Some(own) = own_origin(&opened.url) else {
        return foreign;
    };
    match opened
        .post(ctx, &opened.any_request(7), &[("origin", &own)], &[])
        .await
    {
        Ok(answer) if answer.status == 403 => failed(
            format!(
                "a request with the server's own Origin {own} was refused with 403: the Origin must be validated, not every one refused"
            ),
            Some(described(&answer)),
        ),
        Ok(_) => Verdict::Passed,
        Err(e) => failed(format!("the request was not answered: {e}"), None),
    }
}

async fn protocol_version(ctx: &Ctx, opened: &Opened) -> Verdict {
    // The header came with 2025-06-18.
    if opened.era == Era::Handshake && opened.version.as_str() < "2025-06-18" {
        return not_applicable(format!(
            "the header came after {}, the revision agreed",
            opened.version
        ));
    }
    let mut request = opened.any_request(3);
    if opened.era == Era::Stateless {
        request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    }
    let extra = [("mcp-protocol-version", "1999-01-01")];
    let why = "a request with MCP-Protocol-Version 1999-01-01 must be refused with 400 Bad Request";
    if opened.era != Era::Stateless {
        return expect_status(ctx, opened, &request, &extra, &[], 400, why).await;
    }
    // 2026-07-28 also says which versions the server speaks.
    match opened.post(ctx, &request, &extra, &[]).await {
        Ok(answer) if answer.status == 400 && lists_supported(&answer) => Verdict::Passed,
        Ok(answer) => failed(
            format!(
                "{why}, with an UnsupportedProtocolVersionError (-32022) whose data lists the supported versions"
            ),
            Some(described(&answer)),
        ),
        Err(e) => failed(format!("the request was not answered: {e}"), None),
    }
}

/// Whether an answer holds 2026-07-28's UnsupportedProtocolVersionError: -32022, and the
/// versions the server speaks in `data.supported`.
fn lists_supported(answer: &RawAnswer) -> bool {
    messages(answer).iter().any(|m| {
        m["error"]["code"] == json!(-32022)
            && m["error"]["data"]["supported"]
                .as_array()
                .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string))
    })
}

async fn session(ctx: &Ctx, opened: &Opened, session: Option<&str>, expected: u16) -> Verdict {
    let request = opened.any_request(4);
    let (extra, drop, why): (Vec<(&str, &str)>, &[&str], &str) = match session {
        Some(id) => (
            vec![("mcp-session-id", id)],
            &[],
            "a request with a session ID the server never gave must be answered 404 Not Found",
        ),
        None => (
            Vec::new(),
            &["mcp-session-id"],
            "a request without the session ID must be answered 400 Bad Request",
        ),
    };
    expect_status(ctx, opened, &request, &extra, drop, expected, why).await
}

async fn get(ctx: &Ctx, opened: &Opened) -> Verdict {
    let mut headers: Vec<(&str, &str)> = vec![
        ("accept", "text/event-stream"),
        ("mcp-protocol-version", &opened.version),
    ];
    if let Some(session) = &opened.session {
        headers.push(("mcp-session-id", session));
    }
    headers.extend(ctx.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let Some(http) = &opened.http else {
        return not_applicable("no connection");
    };
    match raw_exchange(
        http,
        "GET",
        &opened.url,
        &headers,
        Vec::new(),
        ctx.timeout,
        STREAM_WAIT,
    )
    .await
    {
        Ok(answer) if answer.status == 405 => Verdict::Passed,
        Ok(answer) if answer.status == 200 && is_event_stream(&answer) => Verdict::Passed,
        Ok(answer) => failed(
            "a GET must be answered with an event stream (200, text/event-stream) or 405",
            Some(described(&answer)),
        ),
        Err(e) => failed(format!("the GET was not answered: {e}"), None),
    }
}

/// Event IDs, where a stream gives them, are unique across every stream of the session: the
/// one a client resumes from must name one event.
fn sse_ids(opened: &Opened) -> Verdict {
    let streams = opened.streams.lock().expect("streams lock");
    if streams.is_empty() {
        return not_applicable("no request was answered with an event stream");
    }
    let mut seen = std::collections::HashMap::new();
    for (stream, ids) in streams.iter().enumerate() {
        for id in ids.iter().filter(|id| !id.is_empty()) {
            if let Some(first) = seen.insert(id.clone(), stream) {
                let where_ = if first == stream {
                    "twice in one stream".to_string()
                } else {
                    format!("in streams {} and {}", first + 1, stream + 1)
                };
                return failed(
                    format!(
                        "the event ID {id:?} was given {where_}: an ID must be unique across all streams of a session"
                    ),
                    Some(format!("event IDs of each stream: {:?}", *streams)),
                );
            }
        }
    }
    Verdict::Passed
}

/// A request `http-headers` sends: the headers added and left out, the status and JSON-RPC
/// error code it must get, and what the spec asks, said when it does not.
struct HeaderCase<'a> {
    why: String,
    request: Value,
    extra: Headers<'a>,
    drop: &'a [&'a str],
    status: u16,
    code: i64,
}

async fn headers(ctx: &Ctx, opened: &Opened) -> Verdict {
    let unknown = json!({"jsonrpc": "2.0", "id": 5, "method": "agenvoy/no-such-method",
        "params": {"_meta": stateless_meta(&opened.version)}});
    let call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "agenvoy-check-no-such-tool", "arguments": {},
        "_meta": stateless_meta(&opened.version)}});
    // Requests whose headers do not say what their bodies do: refused 400 with -32020.
    let mismatch = |what: &str, request: Value, extra, drop| HeaderCase {
        why: format!(
            "a request with {what} must be answered 400 with a JSON-RPC error -32020 (HeaderMismatch) that names the request's id"
        ),
        request,
        extra,
        drop,
        status: 400,
        code: -32020,
    };
    let cases = [
        HeaderCase {
            why: "an unknown method must be answered 404 with a JSON-RPC error -32601 that names the request's id".into(),
            request: unknown,
            extra: Vec::new(),
            drop: &[],
            status: 404,
            code: -32601,
        },
        mismatch(
            "an Mcp-Method header that is not its method",
            opened.any_request(6),
            vec![("mcp-method", "tools/list")],
            &[],
        ),
        mismatch("no Mcp-Method header", opened.any_request(7), Vec::new(), &["mcp-method"]),
        mismatch(
            "an Mcp-Name header that is not the tool it calls",
            call,
            vec![("mcp-name", "another-tool")],
            &[],
        ),
    ];
    for case in cases {
        match opened
            .post(ctx, &case.request, &case.extra, case.drop)
            .await
        {
            Ok(answer)
                if answer.status == case.status
                    && error_code(&answer) == Some(case.code)
                    && names_request(&answer, &case.request) => {}
            Ok(answer) => return failed(case.why, Some(described(&answer))),
            Err(e) => return failed(format!("the request was not answered: {e}"), None),
        }
    }
    Verdict::Passed
}

pub(super) async fn oauth_discovery(ctx: &Ctx) -> Verdict {
    use agenvoy_mcp::unstable::raw_http::{Challenge, discover};
    let opened = opened(ctx).await;
    if let Some(why) = &opened.blocked {
        return not_applicable(why.clone());
    }
    let Some(answer) = &opened.unauthorized else {
        return not_applicable("the server did not ask for authorization");
    };
    let Some(header) = answer.header("www-authenticate") else {
        return failed(
            "a 401 must carry a WWW-Authenticate challenge that points to the protected resource metadata",
            Some(described(answer)),
        );
    };
    if !header
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("bearer")
    {
        return failed("the 401's challenge is not a Bearer one", Some(cut(header)));
    }
    let challenge = Challenge::parse(header);
    let Some(http) = &opened.http else {
        return not_applicable("no connection");
    };
    match discover(http, &opened.url, Some(&challenge)).await {
        Ok(found) if found.legacy => failed(
            "the server serves no protected resource metadata (RFC 9728), which MCP servers must",
            Some(cut(header)),
        ),
        Ok(found) if !found.server.offers_pkce_s256() => failed(
            format!(
                "the authorization server {} does not list S256 in code_challenge_methods_supported, so clients must refuse it",
                found.server.issuer
            ),
            None,
        ),
        Ok(_) => Verdict::Passed,
        Err(e) => failed(format!("discovery failed: {e}"), Some(cut(header))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(content_type: &str, body: &str) -> RawAnswer {
        RawAnswer {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn messages_are_read_from_json_and_from_events() {
        let json_body = answer(
            "application/json; charset=utf-8",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        );
        assert_eq!(messages(&json_body)[0]["id"], 1);
        let events = answer(
            "text/event-stream",
            "id: 7\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"error\":{\"code\":-32601}}\r\n\r\n: ping\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
        );
        let found = messages(&events);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(error_code(&events), Some(-32601));
    }
}
