//! The server routes: list, add, remove, status, reconnect, tools, call; and the allowlist.

use super::{
    ApiError, Body, State, json_response, ok, only_members, optional_string, required_string,
};
use crate::error::ErrorKind;
use crate::host::CallError;
use crate::host::config::ServerConfig;
use crate::host::expand::is_pure_reference;
use crate::host::gate::PermissionMode;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

type Answer = Result<Response<Body>, ApiError>;

/// What stands in for a secret in `GET /v1/mcp`.
const REDACTED: &str = "[redacted]";

/// The members of a server entry that hold secrets: each value is shown only when it is a
/// pure `$VAR` / `${VAR}` reference.
const SECRET_MAPS: [&str; 2] = ["env", "headers"];
const SECRET_VALUES: [&str; 1] = ["oauth_client_secret"];

fn redact_value(value: &mut Value) {
    if !matches!(value, Value::String(s) if is_pure_reference(s)) {
        *value = json!(REDACTED);
    }
}

/// One entry as written, with every literal header, env value and client secret replaced,
/// and its URL's password and query values hidden (`redact_url`).
fn redact(entry: &Value) -> Value {
    let Value::Object(members) = entry else {
        // Not an entry at all (the file is broken there): show nothing of it.
        return json!(REDACTED);
    };
    let mut members = members.clone();
    for key in SECRET_MAPS {
        match members.get_mut(key) {
            Some(Value::Object(map)) => map.values_mut().for_each(redact_value),
            Some(other) => redact_value(other),
            None => {}
        }
    }
    for key in SECRET_VALUES {
        if let Some(value) = members.get_mut(key) {
            redact_value(value);
        }
    }
    if let Some(Value::String(url)) = members.get_mut("url") {
        *url = crate::text::redact_url(url).into_owned();
    }
    Value::Object(members)
}

/// `GET /v1/mcp`.
pub(super) fn list(state: &State) -> Answer {
    let config = state.control.config()?;
    let servers: serde_json::Map<String, Value> = config
        .server_names()
        .into_iter()
        .filter_map(|name| {
            let entry = redact(config.server_value(&name)?);
            Some((name, entry))
        })
        .collect();
    ok(json!({
        "path": state.control.config_path().display().to_string(),
        "servers": servers,
    }))
}

/// What `POST /v1/mcp` takes besides `name`.
const ENTRY_MEMBERS: [&str; 9] = [
    "name",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "auth",
    "timeout",
    "startup_timeout",
];

/// `POST /v1/mcp`'s body: the server's name and its entry.
pub(super) fn add_request(body: Value) -> Result<(String, ServerConfig), ApiError> {
    let name = required_string(&body, "name")?;
    only_members(&body, &ENTRY_MEMBERS)?;
    let mut entry = body;
    if let Some(members) = entry.as_object_mut() {
        members.remove("name");
    }
    let server = ServerConfig::from_value(&name, &entry)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((name, server))
}

/// `POST /v1/mcp`: checked, saved, then connected and registered.
pub(super) async fn add(state: &State, body: Value) -> Answer {
    let (name, server) = add_request(body)?;
    let control = &state.control;
    let status = control.add_server(&name, server).await?;
    let collisions: Vec<String> = control
        .manager()
        .registry()
        .collisions()
        .into_iter()
        .filter(|c| c.dropped.0 == name)
        .map(|c| c.to_string())
        .collect();
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"server": status, "collisions": collisions}),
    ))
}

/// `POST /v1/mcp/remove`: out of the file, then closed and unregistered; its OAuth tokens
/// and client secret are forgotten.
pub(super) async fn remove(state: &State, body: Value) -> Answer {
    let name = remove_request(&body)?;
    state.control.remove_server(&name).await?;
    ok(json!({"removed": name}))
}

/// `POST /v1/mcp/remove`'s body: the server's name.
pub(super) fn remove_request(body: &Value) -> Result<String, ApiError> {
    let name = required_string(body, "name")?;
    only_members(body, &["name"])?;
    Ok(name)
}

/// `GET /v1/mcp/status`.
pub(super) fn status(state: &State) -> Answer {
    ok(json!({"servers": state.control.manager().status()}))
}

/// `POST /v1/mcp/reconnect`'s body: one server's name, or none for every server.
pub(super) fn reconnect_request(body: &Value) -> Result<Option<String>, ApiError> {
    only_members(body, &["name"])?;
    match body.get("name") {
        None | Some(Value::Null) => Ok(None),
        Some(_) => Ok(Some(required_string(body, "name")?)),
    }
}

/// `POST /v1/mcp/reconnect`: every server, or `{"name"}`.
pub(super) async fn reconnect(state: &State, body: Value) -> Answer {
    let one = reconnect_request(&body)?;
    let manager = state.control.manager();
    let outcomes = match one {
        Some(name) => {
            if !manager.status().iter().any(|s| s.name == name) {
                return Err(ApiError::not_found(format!(
                    "no server named {name:?}; GET /v1/mcp/status lists them"
                )));
            }
            let outcome = manager.reconnect_server(&name).await;
            vec![(name, outcome)]
        }
        None => manager.reconnect().await,
    };
    let results: Vec<Value> = outcomes
        .into_iter()
        .map(|(name, outcome)| match outcome {
            Ok(()) => json!({"name": name, "ok": true}),
            Err(e) => json!({"name": name, "ok": false, "error": e.to_string()}),
        })
        .collect();
    ok(json!({"results": results}))
}

/// `GET /v1/mcp/tools`.
pub(super) fn tools(state: &State) -> Answer {
    /// One tool as the answer lists it: its schema written as the server's text, never parsed
    /// (a parsed schema takes many times its size).
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Listed<'a> {
        name: &'a str,
        server: &'a str,
        tool: &'a str,
        description: &'a str,
        input_schema: &'a serde_json::value::RawValue,
        auto_approve: bool,
    }
    let allowlist = state.control.allowlist()?;
    let registry = state.control.manager().registry();
    let tools: Vec<Listed> = registry
        .tools()
        .map(|t| Listed {
            name: &t.definition.name,
            server: &t.server,
            tool: &t.tool,
            description: &t.definition.description,
            input_schema: &t.definition.input_schema,
            auto_approve: allowlist.allows(&t.definition.name, Some(&t.server)),
        })
        .collect();
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        tools: Vec<Listed<'a>>,
    }
    Ok(super::json_response(StatusCode::OK, &Answer { tools }))
}

/// `POST /v1/mcp/call`'s body: the tool's name, its arguments and the permission mode.
pub(super) fn call_request(body: &Value) -> Result<(String, Value, PermissionMode), ApiError> {
    only_members(body, &["name", "arguments", "mode"])?;
    let name = required_string(body, "name")?;
    let arguments = match body.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(ApiError::bad_request("\"arguments\" must be a JSON object")),
    };
    let mode = match optional_string(body, "mode")? {
        None => PermissionMode::Confirm,
        Some(m) => m
            .parse()
            .map_err(|e: crate::error::ParseError| ApiError::bad_request(e.to_string()))?,
    };
    Ok((name, arguments, mode))
}

/// Tool calls in flight, by server: each holds a [`CallSlot`] while it runs.
#[derive(Default)]
pub(crate) struct CallSlots(std::sync::Mutex<std::collections::HashMap<String, usize>>);

/// One call's place among its server's calls in flight; given back when dropped.
struct CallSlot<'a> {
    slots: &'a CallSlots,
    server: String,
}

impl CallSlots {
    /// A place for one more call to `server`, unless it has `most` in flight already.
    fn take(&self, server: &str, most: usize) -> Option<CallSlot<'_>> {
        let mut in_flight = self.0.lock().expect("call slots lock");
        let count = in_flight.entry(server.to_string()).or_default();
        if *count >= most {
            return None;
        }
        *count += 1;
        Some(CallSlot {
            slots: self,
            server: server.to_string(),
        })
    }
}

impl Drop for CallSlot<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.slots.0.lock().expect("call slots lock");
        if let Some(count) = in_flight.get_mut(&self.server) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&self.server);
            }
        }
    }
}

/// `POST /v1/mcp/call`: through the gate; a call the gate refuses is 403 with the reason. A
/// server with [`super::Limits::max_calls_per_server`] calls in flight gets no more: 429.
pub(super) async fn call(state: &State, body: Value) -> Answer {
    let (name, arguments, mode) = call_request(&body)?;
    let manager = state.control.manager();
    let server = manager
        .registry()
        .resolve(&name)
        .map(|(s, _)| s.to_string());
    let most = state.options.limits.max_calls_per_server;
    let _slot = match &server {
        Some(server) => Some(state.calls.take(server, most).ok_or_else(|| {
            ApiError::busy(
                format!(
                    "server {server:?} has {most} calls in flight, the most this API runs at once for one server (it may be hung: see GET /v1/mcp/status); try again later"
                ),
                1,
            )
        })?),
        None => None,
    };
    match manager.call(&name, arguments, mode).await {
        Ok(output) => ok(json!({
            "text": output.text,
            "isError": output.is_error,
            "totalBytes": output.total_bytes,
        })),
        Err(e @ CallError::UnknownTool(_)) => Err(ApiError::not_found(e.to_string())),
        Err(CallError::Denied(denied)) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "denied",
            denied.to_string(),
        )),
        Err(CallError::Server(e)) => {
            let status = match e.kind {
                ErrorKind::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::BAD_GATEWAY,
            };
            Err(ApiError::new(status, "server_error", e.to_string()))
        }
    }
}

/// `GET /v1/allowlist`.
pub(super) fn allowlist(state: &State) -> Answer {
    ok(json!({"entries": state.control.allowlist()?.entries()}))
}

/// `POST /v1/allowlist`: `{"tool": {"prefix": "mcp__x__", "entries": [...]}}` replaces the
/// entries of that prefix only.
pub(super) async fn set_allowlist(state: &State, body: Value) -> Answer {
    let (prefix, entries) = set_allowlist_request(&body)?;
    let list = state.control.set_allowed(&prefix, &entries).await?;
    ok(json!({"entries": list.entries()}))
}

/// `POST /v1/allowlist`'s body: the prefix and its new entries.
pub(super) fn set_allowlist_request(body: &Value) -> Result<(String, Vec<String>), ApiError> {
    only_members(body, &["tool"])?;
    let shape =
        "the body must be {\"tool\": {\"prefix\": \"mcp__<server>__\", \"entries\": [...]}}";
    let tool = body
        .get("tool")
        .filter(|t| t.is_object())
        .ok_or_else(|| ApiError::bad_request(shape))?;
    only_members(tool, &["prefix", "entries"])?;
    let prefix = required_string(tool, "prefix")?;
    let entries: Vec<String> = match tool.get("entries") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| ApiError::bad_request("\"entries\" must be an array of strings"))?,
        _ => return Err(ApiError::bad_request(shape)),
    };
    Ok((prefix, entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_references_kept() {
        let entry = json!({
            "command": "x", "args": ["--token=abc"],
            "env": {"A": "literal", "B": "$B", "C": "${C}", "D": "pre-${D}", "E": 5},
            "headers": {"Authorization": "Bearer abc", "X-Key": "${KEY}"},
            "oauth_client_secret": "s3cret",
            "note": "kept"
        });
        assert_eq!(
            redact(&entry),
            json!({
                "command": "x", "args": ["--token=abc"],
                "env": {"A": REDACTED, "B": "$B", "C": "${C}", "D": REDACTED, "E": REDACTED},
                "headers": {"Authorization": REDACTED, "X-Key": "${KEY}"},
                "oauth_client_secret": REDACTED,
                "note": "kept"
            })
        );
        assert_eq!(redact(&json!({"env": "A=b"}))["env"], REDACTED);
        // A URL keeps where it points, not its password or query values.
        assert_eq!(
            redact(&json!({"url": "https://u:pw@h.test/mcp?api_key=k1&x=2"}))["url"],
            "https://u:***@h.test/mcp?api_key=***&x=***"
        );
        assert_eq!(redact(&json!({"url": "${URL}"}))["url"], "${URL}");
        assert_eq!(redact(&json!("Bearer abc")), REDACTED);
    }
}
