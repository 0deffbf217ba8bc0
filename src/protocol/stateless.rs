//! The stateless revision's (2026-07-28) request metadata, built once here: the headers a
//! request repeats of its params (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and of a
//! tool's annotated arguments (`Mcp-Param-*`), with the spec's rule for header values. The
//! session hands the transport finished headers; the transport only sends them.

use super::META_PROTOCOL_VERSION;
use crate::methods;
use serde_json::Value;
use std::collections::HashSet;

/// One `x-mcp-header` annotation: the header name and the path of the argument it mirrors.
pub type HeaderParam = (String, Vec<String>);

/// The headers of a request whose `_meta` names its protocol version (a stateless one):
/// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (the tool's or prompt's `name`, the
/// resource's `uri`, or the task's `taskId`), then `extra` (`Mcp-Param-*`). `None` for a request of the initialize
/// era, which carries none of them.
pub fn request_headers(
    method: &str,
    params: Option<&Value>,
    extra: Vec<(String, String)>,
) -> Option<Vec<(String, String)>> {
    fn text(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str)
    }
    let version = text(
        params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_PROTOCOL_VERSION)),
    )?;
    let mut headers = vec![
        ("MCP-Protocol-Version".to_string(), version.to_string()),
        ("Mcp-Method".to_string(), method.to_string()),
    ];
    let name = match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => text(params.and_then(|p| p.get("name"))),
        methods::RESOURCES_READ => text(params.and_then(|p| p.get("uri"))),
        methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => {
            text(params.and_then(|p| p.get("taskId")))
        }
        _ => None,
    };
    // Only HTTP has headers to send; the list still marks the request stateless.
    #[cfg(feature = "http")]
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_string(), header_value(name)));
    }
    #[cfg(not(feature = "http"))]
    let _ = name;
    headers.extend(extra);
    Some(headers)
}

#[cfg(feature = "http")]
/// The `Mcp-Param-*` headers of a call with `arguments`, for a tool annotated with `params`;
/// an argument that is missing or not a string, boolean or integer gives none.
pub fn param_headers(params: &[HeaderParam], arguments: &Value) -> Vec<(String, String)> {
    params
        .iter()
        .filter_map(|(name, path)| {
            let pointer: String = path
                .iter()
                .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
                .collect();
            let value = match arguments.pointer(&pointer)? {
                Value::String(s) => header_value(s),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                _ => return None,
            };
            Some((format!("Mcp-Param-{name}"), value))
        })
        .collect()
}

/// The `x-mcp-header` annotations of an input schema: the header name and the path of the
/// property it mirrors. An annotation is valid on a property reached from the root through
/// `properties` alone, of type integer, string or boolean, named by a non-empty HTTP token
/// unique among the schema's (case-insensitively); any other annotation makes the tool invalid.
pub fn header_params_of(schema: &Value) -> std::result::Result<Vec<HeaderParam>, String> {
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| usize::from(k == "x-mcp-header") + count(v))
                .sum(),
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    type Found = (Option<String>, Vec<String>, Value);
    fn walk(schema: &Value, path: &mut Vec<String>, found: &mut Vec<Found>) {
        for (name, property) in schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            path.push(name.clone());
            if let Some(header) = property.get("x-mcp-header") {
                let kind = property.get("type").cloned().unwrap_or(Value::Null);
                found.push((header.as_str().map(str::to_string), path.clone(), kind));
            }
            walk(property, path, found);
            path.pop();
        }
    }
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), &mut found);
    if found.len() != count(schema) {
        return Err("an annotation sits where only properties lead to it is allowed".into());
    }
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let mut seen = HashSet::new();
    let mut params = Vec::new();
    for (name, path, kind) in found {
        let Some(name) = name.filter(|n| token(n)) else {
            return Err(format!(
                "the annotation on {} is not a header name",
                path.join(".")
            ));
        };
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(format!("{name:?} is used twice"));
        }
        if !matches!(kind.as_str(), Some("integer" | "string" | "boolean")) {
            return Err(format!(
                "{name:?} is on {}, whose type is not integer, string or boolean",
                path.join(".")
            ));
        }
        params.push((name, path));
    }
    Ok(params)
}

#[cfg(feature = "http")]
/// A value as an HTTP header carries it: as it is when it is printable ASCII without
/// whitespace at either end, else `=?base64?<base64 of its UTF-8>?=` (as is a value that
/// itself looks like that).
pub fn header_value(value: &str) -> String {
    use base64::Engine as _;
    let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded =
        value.starts_with("=?base64?") && value.ends_with("?=") && value.len() >= 11;
    if printable && !padded && !looks_encoded {
        value.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_annotations_are_checked() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            "plain": {"type": "number"}
        }});
        assert_eq!(
            header_params_of(&schema).unwrap(),
            vec![
                ("N".to_string(), vec!["nested".to_string(), "n".to_string()]),
                ("Region".into(), vec!["region".into()])
            ]
        );
        let bad = |property: serde_json::Value| {
            header_params_of(&json!({"properties": {"p": property}})).unwrap_err()
        };
        bad(json!({"type": "string", "x-mcp-header": ""}));
        bad(json!({"type": "string", "x-mcp-header": "My Region"}));
        bad(json!({"type": "string", "x-mcp-header": "Région"}));
        bad(json!({"type": "string", "x-mcp-header": "Region\t1"}));
        bad(json!({"type": "number", "x-mcp-header": "N"}));
        bad(json!({"type": "object", "x-mcp-header": "O"}));
        bad(json!({"type": ["string", "null"], "x-mcp-header": "S"}));
        bad(json!({"type": "string", "x-mcp-header": 5}));
        let dup = json!({"properties": {"a": {"type": "string", "x-mcp-header": "MyField"},
                                        "b": {"type": "string", "x-mcp-header": "myfield"}}});
        assert!(header_params_of(&dup).is_err());
        let hidden = json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}});
        assert!(header_params_of(&hidden).is_err());
    }
    #[test]
    fn header_values_are_plain_or_base64() {
        assert_eq!(header_value("us-west1"), "us-west1");
        assert_eq!(header_value("us west 1"), "us west 1");
        assert_eq!(header_value(""), "");
        assert_eq!(
            header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(
            header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn only_a_stateless_request_has_headers() {
        let params = json!({"name": "search", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        let extra = vec![("Mcp-Param-Region".to_string(), "eu".to_string())];
        assert_eq!(
            request_headers("tools/call", Some(&params), extra.clone()).unwrap(),
            vec![
                ("MCP-Protocol-Version".to_string(), "2026-07-28".to_string()),
                ("Mcp-Method".into(), "tools/call".into()),
                ("Mcp-Name".into(), "search".into()),
                ("Mcp-Param-Region".into(), "eu".into()),
            ]
        );
        assert_eq!(
            request_headers("tools/call", Some(&json!({"name": "x"})), extra),
            None
        );
        let read = json!({"uri": "file:///a b", "_meta": {META_PROTOCOL_VERSION: "v"}});
        let headers = request_headers("resources/read", Some(&read), Vec::new()).unwrap();
        assert_eq!(headers[2], ("Mcp-Name".into(), "file:///a b".into()));
        // The tasks extension routes a task's requests by its id.
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let task = json!({"taskId": "t-1", "_meta": {META_PROTOCOL_VERSION: "v"}});
            let headers = request_headers(method, Some(&task), Vec::new()).unwrap();
            assert_eq!(headers[2], ("Mcp-Name".into(), "t-1".into()), "{method}");
        }
    }
}
