//! When to try again: back-off, `Retry-After`, stale pooled connections, and what an error
//! answer's body says.

use super::*;

/// 0.5 s, 1 s, 2 s, ... at most 30 s.
pub(super) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.min(6))).min(MAX_WAIT)
}

/// `Retry-After` as seconds or as an HTTP date.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate_to_unix(value)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(Duration::from_secs(when.saturating_sub(now)))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) to seconds since the epoch.
pub(super) fn httpdate_to_unix(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months.iter().position(|m| m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, sec] = hms.as_slice() else {
        return None;
    };
    // Days from civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    u64::try_from(days * 86400 + h * 3600 + m * 60 + sec).ok()
}

/// Whether a request failed because its pooled connection was already closed by the server
/// before any answer came: the request is safe to send again on a new connection.
pub(super) fn stale_connection(error: &hyper_util::client::legacy::Error, method: &Method) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            // Canceled: never written. A connection closed before the answer may have carried
            // a POST the server acted on (it crashed mid-call): not sent again.
            return h.is_canceled() || (h.is_incomplete_message() && method != Method::POST);
        }
        source = s.source();
    }
    false
}

/// Whether a POST was written and its connection then closed before any answer: the server
/// may have carried it out (it crashed mid-call), so its caller must be told so.
pub(super) fn cut_after_written(
    error: &hyper_util::client::legacy::Error,
    method: &Method,
) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message() && method == Method::POST;
        }
        source = s.source();
    }
    false
}

/// A JSON-RPC error object in an error status's body (servers answer 4xx with one).
pub(super) fn jsonrpc_error(body: &str) -> Option<crate::wire::jsonrpc::ErrorObject> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get("jsonrpc")?;
    serde_json::from_value(value.get("error")?.clone()).ok()
}

/// Whether an error body is a JSON-RPC error object (an MCP server's answer).
pub(super) fn is_jsonrpc_error(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body).is_ok_and(|v| {
        v.get("jsonrpc").is_some() && v.get("error").is_some_and(|e| e.get("code").is_some())
    })
}

/// Whether a failed request means the server no longer knows our session.
pub(super) fn session_gone(status: StatusCode, body: &str) -> bool {
    status == StatusCode::NOT_FOUND
        || (status == StatusCode::BAD_REQUEST && body.to_ascii_lowercase().contains("session"))
}

pub(super) async fn body_excerpt(response: Response<Incoming>) -> String {
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while bytes.len() < EXCERPT {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(chunk) = frame.into_data() {
                    bytes.extend_from_slice(&chunk);
                }
            }
            _ => break,
        }
    }
    bytes.truncate(EXCERPT);
    String::from_utf8_lossy(&bytes).trim().to_string()
}
