//! JSON-RPC 2.0 messages: requests, notifications, responses and errors.
//!
//! Parsing classifies one JSON object by the members it carries, so the order of keys on the
//! wire never matters (the TypeScript SDK writes `result` before `id`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// A request id: JSON-RPC allows numbers and strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id; ours are always numbers.
    Number(i64),
    /// A string id, as some servers use for their own requests.
    String(String),
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The error object of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The numeric code (see the constants in this module).
    pub code: i64,
    /// A short human-readable description.
    pub message: String,
    /// Optional extra detail from the peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;

/// A call that expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Correlates the response with this request.
    pub id: Id,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The parameters, usually an object.
    pub params: Option<Value>,
}

/// A one-way message: no response is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The parameters, usually an object.
    pub params: Option<Value>,
}

/// The answer to a request: a result or an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered; `None` when the peer could not read the request's id.
    pub id: Option<Id>,
    /// The `result` member, or the `error` member.
    pub outcome: Result<Value, ErrorObject>,
}

/// Any JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (result or error).
    Response(Response),
}

/// Why bytes could not be read as a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageError(pub String);

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MessageError {}

/// The members of a message as read, before it is classified.
#[derive(Deserialize)]
struct RawMessage {
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<String>,
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    error: Option<ErrorObject>,
}

/// Keeps `"result": null` apart from a missing `result`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Message {
    /// Reads one message from the bytes of a JSON object.
    pub fn parse(bytes: &[u8]) -> Result<Message, MessageError> {
        let raw: RawMessage = serde_json::from_slice(bytes)
            .map_err(|e| MessageError(format!("not a JSON-RPC message: {e}")))?;
        if raw.jsonrpc.as_deref() != Some("2.0") {
            return Err(MessageError("missing \"jsonrpc\": \"2.0\"".into()));
        }
        let id = match raw.id {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => {
                Some(Some(serde_json::from_value::<Id>(v).map_err(|_| {
                    MessageError("id must be a number or a string".into())
                })?))
            }
        };
        match (raw.method, id) {
            (Some(method), Some(Some(id))) => Ok(Message::Request(Request {
                id,
                method,
                params: raw.params,
            })),
            (Some(method), None) => Ok(Message::Notification(Notification {
                method,
                params: raw.params,
            })),
            (Some(_), Some(None)) => Err(MessageError("a request's id must not be null".into())),
            (None, id) => {
                let outcome = match (raw.result, raw.error) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(error),
                    (Some(_), Some(_)) => {
                        return Err(MessageError("a response has both result and error".into()));
                    }
                    (None, None) => {
                        return Err(MessageError("neither method, result nor error".into()));
                    }
                };
                Ok(Message::Response(Response {
                    id: id.flatten(),
                    outcome,
                }))
            }
        }
    }

    /// Serializes the message as compact JSON, without a trailing newline. The parts are
    /// borrowed, not copied into a new `Value` (a call's arguments can be large).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut wire = Wire::default();
        match self {
            Message::Request(r) => return request_bytes(&r.id, &r.method, r.params.as_ref()),
            Message::Notification(n) => {
                (wire.method, wire.params) = (Some(n.method.as_str()), n.params.as_ref())
            }
            Message::Response(r) => {
                wire.id = Some(r.id.as_ref());
                match &r.outcome {
                    Ok(result) => wire.result = Some(result),
                    Err(error) => wire.error = Some(error),
                }
            }
        }
        serde_json::to_vec(&wire).expect("a JSON-RPC message always serializes")
    }
}

/// How many JSON values (object keys included) `bytes` holds, counted without building them:
/// `None` when it is not JSON. A parsed value costs tens of bytes a value whatever its text
/// (`[0,0,...]` is two bytes a value on the wire and about 40 in memory), so this is what a
/// message is measured by before it is parsed and kept.
pub(crate) fn count_values(bytes: &[u8]) -> Option<usize> {
    serde_json::from_slice::<Counted>(bytes).ok().map(|c| c.0)
}

/// How many JSON values (object keys included) a parsed value holds, as [`count_values`]
/// counts them in text.
pub(crate) fn count_tree(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().fold(1, |n, v| n.saturating_add(count_tree(v))),
        Value::Object(map) => map
            .values()
            .fold(1, |n, v| n.saturating_add(count_tree(v)).saturating_add(1)),
        _ => 1,
    }
}

/// The number of values in what was read (see [`count_values`]).
struct Counted(usize);

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CountVisitor)
    }
}

struct CountVisitor;

impl<'de> serde::de::Visitor<'de> for CountVisitor {
    type Value = Counted;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Counted, E> {
        Ok(Counted(1))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Counted, E> {
        Ok(Counted(1))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Counted, E> {
        Ok(Counted(1))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Counted, E> {
        Ok(Counted(1))
    }
    fn visit_str<E>(self, _: &str) -> Result<Counted, E> {
        Ok(Counted(1))
    }
    fn visit_unit<E>(self) -> Result<Counted, E> {
        Ok(Counted(1))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Counted, A::Error> {
        let mut n = 1usize;
        while let Some(Counted(c)) = seq.next_element()? {
            n = n.saturating_add(c);
        }
        Ok(Counted(n))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Counted, A::Error> {
        let mut n = 1usize;
        while let Some((serde::de::IgnoredAny, Counted(c))) = map.next_entry()? {
            n = n.saturating_add(c).saturating_add(1);
        }
        Ok(Counted(n))
    }
}

/// A request as compact JSON, serialized from its borrowed parts (see [`Message::to_bytes`]):
/// the bytes serde_json writes, by a writer of its own because every call goes through it and
/// serde_json's costs a tenth of a small call's whole cost in the client.
pub(crate) fn request_bytes(id: &Id, method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    match id {
        Id::Number(n) => write_i64(&mut out, *n),
        Id::String(s) => write_str(&mut out, s),
    }
    out.extend_from_slice(br#","method":"#);
    write_str(&mut out, method);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        write_value(&mut out, params);
    }
    out.push(b'}');
    out
}

/// `value` as serde_json writes it compact.
fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => match n.as_i64() {
            Some(n) => write_i64(out, n),
            // Floats and integers past i64: serde_json's own formatting.
            None => serde_json::to_writer(&mut *out, n).expect("a number always serializes"),
        },
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

fn write_i64(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// `s` quoted, with serde_json's escapes: `\"`, `\\`, the short ones for controls that have
/// one, `\u00XX` (lower-case hex) for the other controls, everything else as it is.
fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let needs_escape = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
    // Most strings have nothing to escape: one quick pass says so.
    let Some(first) = bytes.iter().position(needs_escape) else {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    };
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate().skip(first) {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[from..i]);
        if short.is_empty() {
            let hex = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xF)]];
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(&hex);
        } else {
            out.extend_from_slice(short);
        }
        from = i + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}

/// A message as it goes out: the members it has, borrowed.
#[derive(Serialize)]
struct Wire<'a> {
    jsonrpc: &'static str,
    /// A response's id may be null (an unreadable request's).
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Option<&'a Id>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

impl Default for Wire<'_> {
    fn default() -> Self {
        Wire {
            jsonrpc: "2.0",
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_is_written_byte_for_byte_as_serde_json_writes_it() {
        let serde = |id: &Id, method: &str, params: Option<&Value>| {
            let wire = Wire {
                id: Some(Some(id)),
                method: Some(method),
                params,
                ..Wire::default()
            };
            serde_json::to_vec(&wire).unwrap()
        };
        let controls: String = (0u8..0x20).map(char::from).collect();
        let params = [
            None,
            Some(json!({})),
            Some(json!([])),
            Some(json!(null)),
            Some(json!({"name": "echo", "arguments": {"text": "hello"}})),
            Some(json!({"s": controls, "q": "\"\\/\u{7f}é😀\u{2028}", "": ""})),
            Some(json!({"n": [0, -1, i64::MIN, i64::MAX, u64::MAX, 1.5, -0.0, 1e300, 2.5e-8]})),
            Some(json!({"b": [true, false, null], "deep": [[[{"a": [{}]}]]]})),
        ];
        let ids = [
            Id::Number(0),
            Id::Number(-7),
            Id::Number(i64::MAX),
            Id::String("a\"\n".into()),
        ];
        for id in &ids {
            for p in &params {
                let ours = request_bytes(id, "tools/call", p.as_ref());
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    String::from_utf8(serde(id, "tools/call", p.as_ref())).unwrap()
                );
            }
        }
        let method = "odd\u{1}\"method";
        assert_eq!(
            request_bytes(&ids[0], method, None),
            serde(&ids[0], method, None)
        );
        // Random strings over an alphabet of every control, the quote, the backslash and
        // characters of each UTF-8 length, as keys and as values.
        let alphabet: Vec<char> = (0u8..0x20)
            .map(char::from)
            .chain(['"', '\\', '/', 'a', '\u{7f}', 'é', '\u{2028}', '😀'])
            .collect();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..500 {
            let mut text = || -> String {
                (0..next(12))
                    .map(|_| alphabet[next(alphabet.len())])
                    .collect()
            };
            let params = json!({ text(): text(), "n": [text(), {text(): null}] });
            let id = Id::String(text());
            assert_eq!(
                request_bytes(&id, "m", Some(&params)),
                serde(&id, "m", Some(&params)),
                "{params}"
            );
        }
    }

    fn parse(v: Value) -> Result<Message, MessageError> {
        Message::parse(&serde_json::to_vec(&v).unwrap())
    }

    #[test]
    fn classifies_each_kind() {
        let req = parse(json!({"jsonrpc":"2.0","id":0,"method":"roots/list"})).unwrap();
        assert_eq!(
            req,
            Message::Request(Request {
                id: Id::Number(0),
                method: "roots/list".into(),
                params: None
            })
        );
        let req = parse(json!({"jsonrpc":"2.0","id":"a-1","method":"ping","params":{}})).unwrap();
        assert!(matches!(req, Message::Request(Request { id: Id::String(s), .. }) if s == "a-1"));
        let n = parse(json!({"jsonrpc":"2.0","method":"notifications/initialized"})).unwrap();
        assert!(matches!(n, Message::Notification(_)));
        let ok = parse(json!({"result":{"x":1},"jsonrpc":"2.0","id":7})).unwrap();
        assert_eq!(
            ok,
            Message::Response(Response {
                id: Some(Id::Number(7)),
                outcome: Ok(json!({"x":1}))
            })
        );
        let null_result = parse(json!({"jsonrpc":"2.0","id":7,"result":null})).unwrap();
        assert_eq!(
            null_result,
            Message::Response(Response {
                id: Some(Id::Number(7)),
                outcome: Ok(Value::Null)
            })
        );
        let err = parse(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}))
            .unwrap();
        assert_eq!(
            err,
            Message::Response(Response {
                id: None,
                outcome: Err(ErrorObject::new(PARSE_ERROR, "bad"))
            })
        );
    }

    #[test]
    fn rejects_what_is_not_json_rpc() {
        assert!(Message::parse(b"hello").is_err());
        assert!(parse(json!({"id":1,"method":"x"})).is_err());
        assert!(parse(json!({"jsonrpc":"2.0","id":1})).is_err());
        assert!(parse(json!({"jsonrpc":"2.0","id":[1],"method":"x"})).is_err());
        assert!(
            parse(json!({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}))
                .is_err()
        );
    }

    #[test]
    fn round_trips() {
        let m = Message::Request(Request {
            id: Id::Number(3),
            method: "tools/list".into(),
            params: Some(json!({})),
        });
        assert_eq!(Message::parse(&m.to_bytes()).unwrap(), m);
        let m = Message::Response(Response {
            id: Some(Id::String("x".into())),
            outcome: Err(ErrorObject::new(-1, "no")),
        });
        assert_eq!(Message::parse(&m.to_bytes()).unwrap(), m);
    }

    #[test]
    fn each_kind_is_written_with_its_members_only() {
        let text = |m: Message| String::from_utf8(m.to_bytes()).unwrap();
        let request = Request {
            id: Id::Number(3),
            method: "tools/list".into(),
            params: None,
        };
        assert_eq!(
            text(Message::Request(request)),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#
        );
        let note = Notification {
            method: "notifications/initialized".into(),
            params: Some(json!({"a": [1]})),
        };
        assert_eq!(
            text(Message::Notification(note)),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"a":[1]}}"#
        );
        let answer = Response {
            id: Some(Id::String("x".into())),
            outcome: Ok(json!(null)),
        };
        assert_eq!(
            text(Message::Response(answer)),
            r#"{"jsonrpc":"2.0","id":"x","result":null}"#
        );
        let refusal = Response {
            id: None,
            outcome: Err(ErrorObject::new(-32700, "parse error")),
        };
        assert_eq!(
            text(Message::Response(refusal)),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
        );
    }
}
