//! What the model sees of a tool result or a resource read, and the cap on it.
//!
//! One definition, used everywhere:
//! - text blocks, and the text of embedded text resources, joined with `"\n"`;
//! - other blocks as one short line each, never their payload: `[image <mime>, <n> bytes]`,
//!   `[audio <mime>, <n> bytes]`, `[resource_link <uri>]`, `[resource <uri> <mime>, <n> bytes]`
//!   (binary), `[<type>]` for a block type this client does not know;
//! - the resources of a `resources/read` result (its `contents`) the same way: a text one as
//!   its text, a binary one as `[blob <mime>, <n> bytes]`, one with neither as
//!   `[resource <uri>]`. A result is rendered whatever it answers: `content` blocks and
//!   `contents` resources (a result that has both: in the order they come) are its lines;
//! - no lines at all but `structuredContent`: its compact JSON (whitespace outside
//!   strings removed, everything else as the server wrote it);
//! - `isError: true`: the same text, flagged as a tool error.
//!
//! `<n>` is the decoded size of the base64 payload (its length without `=` padding, times 3/4).
//! A missing `mimeType` reads `unknown`. Fields may be `null` (same as missing); a field of the
//! wrong type, or a known field given twice, makes the result invalid.
//!
//! Text longer than the cap is cut on a UTF-8 character boundary and the marker
//! `\n\n[mcp output truncated: <total> bytes total, <kept> kept]` is appended.
//!
//! A JSON-RPC error is bounded too, so that it can be read while streaming: its `message` is cut
//! like a result at [`ERROR_MESSAGE_LIMIT`] bytes (same marker), and its `data` is kept only when
//! its JSON text (as the server wrote it) is at most [`ERROR_DATA_LIMIT`] bytes; longer `data`
//! becomes the string `[error data omitted: <n> bytes]`.
//!
//! A message whose arrays and objects nest deeper than [`MAX_DEPTH`] (the message object counts
//! as one) is invalid, wherever the nesting is (serde_json alone only limits the parts it parses
//! into structs and values, not the parts it skips).

use super::jsonrpc::ErrorObject;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;

/// The default cap on what the model sees of one tool result: 1 MiB.
pub const DEFAULT_CAP: usize = 1_048_576;

/// The most bytes kept of a JSON-RPC error's `message`; longer ones are cut with the marker.
pub const ERROR_MESSAGE_LIMIT: usize = 65_536;

/// The longest JSON text of a JSON-RPC error's `data` that is kept; longer `data` is replaced by
/// the string `[error data omitted: <n> bytes]`.
pub const ERROR_DATA_LIMIT: usize = 65_536;

/// What replaces an error's `data` whose JSON text is `len` bytes, over [`ERROR_DATA_LIMIT`].
pub fn error_data_omitted(len: u64) -> serde_json::Value {
    serde_json::Value::String(format!("[error data omitted: {len} bytes]"))
}

/// The deepest nesting of arrays and objects accepted in a message (the message counts as one).
pub const MAX_DEPTH: usize = 128;

/// The deepest nesting of arrays and objects in JSON text (strings skipped); meaningful only for
/// valid JSON.
pub fn nesting_depth(json: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    max = max.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    max
}

/// A rendered tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text the model sees, cut and marked if it was longer than the cap.
    pub text: String,
    /// The server flagged the result with `isError: true`.
    pub is_error: bool,
    /// Byte length of the whole rendered text, before any cut.
    pub total: u64,
}

/// Why a message could not be rendered as a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum RenderError {
    /// The response carried a JSON-RPC error instead of a result.
    Rpc(ErrorObject),
    /// The bytes are not a valid tool-call response.
    Invalid(String),
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::Rpc(e) => write!(f, "server returned an error: {e}"),
            RenderError::Invalid(why) => write!(f, "invalid tool result: {why}"),
        }
    }
}

impl std::error::Error for RenderError {}

/// The truncation marker appended after a cut.
pub fn marker(total: u64, kept: usize) -> String {
    format!("\n\n[mcp output truncated: {total} bytes total, {kept} kept]")
}

/// Cuts `text` to at most `cap` bytes on a character boundary and appends the marker; text at
/// or under the cap comes back unchanged.
pub fn truncate(mut text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let total = text.len() as u64;
    let mut kept = cap;
    while !text.is_char_boundary(kept) {
        kept -= 1;
    }
    text.truncate(kept);
    text.push_str(&marker(total, kept));
    text
}

/// Accepts a value only when it is a JSON object (serde's derive would also take an array).
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData)).map(Obj)
    }
}

#[derive(Deserialize)]
struct WholeMessage<'a> {
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<WireError<'a>>,
}

/// A JSON-RPC error as read, before it is bounded into an [`ErrorObject`].
#[derive(Deserialize)]
struct WireError<'a> {
    code: i64,
    message: String,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

impl WireError<'_> {
    fn bounded(self) -> Result<ErrorObject, RenderError> {
        let data = match self.data {
            None => None,
            Some(raw) if raw.get().len() <= ERROR_DATA_LIMIT => Some(
                serde_json::from_str(raw.get()).map_err(|e| RenderError::Invalid(e.to_string()))?,
            ),
            Some(raw) => Some(error_data_omitted(raw.get().len() as u64)),
        };
        Ok(ErrorObject {
            code: self.code,
            message: truncate(self.message, ERROR_MESSAGE_LIMIT),
            data,
        })
    }
}

/// A result as rendered: a tool result's `content` and a read's `contents` are kept as their
/// JSON text, read in a second pass in the order they come in the message.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    contents: Option<&'a RawValue>,
    #[serde(borrow, default)]
    structured_content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    resource: Option<Obj<Resource>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resource {
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    blob: Option<String>,
}

/// The decoded size of a base64 payload.
pub fn base64_decoded_len(data: &str) -> u64 {
    let chars = data.bytes().filter(|&b| b != b'=').count() as u64;
    chars * 3 / 4
}

fn render_block(block: &Block) -> String {
    let mime = |m: &Option<String>| m.clone().unwrap_or_else(|| "unknown".into());
    let payload = |d: &Option<String>| d.as_deref().map_or(0, base64_decoded_len);
    match block.kind.as_str() {
        "text" => block.text.clone().unwrap_or_default(),
        "image" | "audio" => {
            format!(
                "[{} {}, {} bytes]",
                block.kind,
                mime(&block.mime_type),
                payload(&block.data)
            )
        }
        "resource_link" => format!("[resource_link {}]", block.uri.as_deref().unwrap_or("")),
        "resource" => {
            let Some(Obj(r)) = &block.resource else {
                return "[resource ]".into();
            };
            let uri = r.uri.as_deref().unwrap_or("");
            match (&r.text, &r.blob) {
                (Some(text), _) => text.clone(),
                (None, Some(blob)) => format!(
                    "[resource {uri} {}, {} bytes]",
                    mime(&r.mime_type),
                    base64_decoded_len(blob)
                ),
                (None, None) => format!("[resource {uri}]"),
            }
        }
        other => format!("[{other}]"),
    }
}

/// What the model sees of one content block given as JSON text (a prompt message's
/// content): the line a block of a tool result renders to.
pub fn render_block_json(block: &str) -> Result<String, RenderError> {
    let Obj::<Block>(block) =
        serde_json::from_str(block).map_err(|e| RenderError::Invalid(e.to_string()))?;
    Ok(render_block(&block))
}

/// The line of one resource of a `resources/read` result: its text, `[blob <mime>, <n> bytes]`
/// for a binary one (never its payload), `[resource <uri>]` for one with neither.
fn render_contents(r: &Resource) -> String {
    match (&r.text, &r.blob) {
        (Some(text), _) => text.clone(),
        (None, Some(blob)) => format!(
            "[blob {}, {} bytes]",
            r.mime_type.as_deref().unwrap_or("unknown"),
            base64_decoded_len(blob)
        ),
        (None, None) => format!("[resource {}]", r.uri.as_deref().unwrap_or("")),
    }
}

/// Removes the whitespace outside strings from valid JSON text.
pub fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Renders a response's `result` (of `tools/call`, `resources/read`, or anything else), given
/// as JSON text, uncut.
pub fn render_result_json(result: &str) -> Result<(String, bool), RenderError> {
    let invalid = |e: serde_json::Error| RenderError::Invalid(e.to_string());
    let Obj::<ToolResult<'_>>(result) = serde_json::from_str(result).map_err(invalid)?;
    // Each list's lines, by where the list starts in the message.
    let mut lists: Vec<(usize, Vec<String>)> = Vec::new();
    let at = |raw: &RawValue| raw.get().as_ptr() as usize;
    if let Some(raw) = result.content {
        let blocks: Option<Vec<Obj<Block>>> = serde_json::from_str(raw.get()).map_err(invalid)?;
        let lines = blocks.unwrap_or_default();
        lists.push((
            at(raw),
            lines.iter().map(|Obj(b)| render_block(b)).collect(),
        ));
    }
    if let Some(raw) = result.contents {
        let contents: Option<Vec<Obj<Resource>>> =
            serde_json::from_str(raw.get()).map_err(invalid)?;
        let lines = contents.unwrap_or_default();
        lists.push((
            at(raw),
            lines.iter().map(|Obj(r)| render_contents(r)).collect(),
        ));
    }
    lists.sort_by_key(|(at, _)| *at);
    let lines: Vec<String> = lists.into_iter().flat_map(|(_, lines)| lines).collect();
    let text = match (lines.is_empty(), result.structured_content) {
        (true, Some(structured)) => compact_json(structured.get()),
        _ => lines.join("\n"),
    };
    Ok((text, result.is_error == Some(true)))
}

/// The plain whole-message path: parses one JSON-RPC response (to `tools/call`,
/// `resources/read`, ...) with serde_json,
/// renders its result and cuts it at `cap` (an error is bounded as the module docs say). The
/// streaming path must equal it byte for byte.
pub fn render_reference(message: &[u8], cap: usize) -> Result<Rendered, RenderError> {
    if nesting_depth(message) > MAX_DEPTH {
        return Err(RenderError::Invalid(format!(
            "nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let Obj::<WholeMessage<'_>>(whole) =
        serde_json::from_slice(message).map_err(|e| RenderError::Invalid(e.to_string()))?;
    match (whole.result, whole.error) {
        (_, Some(error)) => Err(RenderError::Rpc(error.bounded()?)),
        (Some(result), None) => {
            let (text, is_error) = render_result_json(result.get())?;
            let total = text.len() as u64;
            Ok(Rendered {
                text: truncate(text, cap),
                is_error,
                total,
            })
        }
        (None, None) => Err(RenderError::Invalid(
            "the response has neither result nor error".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(result: &str) -> String {
        render_result_json(result).unwrap().0
    }

    #[test]
    fn joins_text_and_placeholders() {
        let r = r#"{"content":[
            {"type":"text","text":"hello"},
            {"type":"image","data":"aGVsbG8=","mimeType":"image/png"},
            {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
            {"type":"resource_link","uri":"file:///a","name":"a"},
            {"type":"resource","resource":{"uri":"file:///t","text":"inner"}},
            {"type":"resource","resource":{"uri":"file:///b","mimeType":"application/pdf","blob":"AAECAw=="}},
            {"type":"hologram"}
        ]}"#;
        assert_eq!(
            render(r),
            "hello\n[image image/png, 5 bytes]\n[audio audio/wav, 3 bytes]\n[resource_link file:///a]\ninner\n[resource file:///b application/pdf, 4 bytes]\n[hologram]"
        );
    }

    #[test]
    fn structured_content_only_when_there_are_no_blocks() {
        assert_eq!(
            render(r#"{"content":[],"structuredContent":{ "a" : [1, 2.50, "x y"] }}"#),
            r#"{"a":[1,2.50,"x y"]}"#
        );
        assert_eq!(
            render(r#"{"structuredContent":{"a":"\" }"}}"#),
            r#"{"a":"\" }"}"#
        );
        assert_eq!(
            render(r#"{"content":[{"type":"text","text":"t"}],"structuredContent":{"a":1}}"#),
            "t"
        );
        assert_eq!(render(r#"{"content":[],"structuredContent":null}"#), "");
    }

    #[test]
    fn is_error_is_kept() {
        assert_eq!(
            render_result_json(r#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#)
                .unwrap(),
            ("boom".into(), true)
        );
    }

    #[test]
    fn wrong_types_and_duplicates_are_invalid() {
        assert!(render_result_json(r#"{"content":{}}"#).is_err());
        assert!(render_result_json(r#"{"content":[{"type":"text","text":1}]}"#).is_err());
        assert!(
            render_result_json(r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#).is_err()
        );
        assert!(render_result_json(r#"[]"#).is_err());
        assert!(render_result_json(r#"{"content":[["text","x"]]}"#).is_err());
        assert!(render_reference(b"[]", 3).is_err());
    }

    #[test]
    fn resource_contents_render_text_and_blob_lines() {
        assert_eq!(
            render(
                r#"{"contents":[{"uri":"a://t","text":"hello"},
                                {"uri":"a://b","mimeType":"image/png","blob":"aGVsbG8="},
                                {"uri":"a://n"},{"blob":"AA=="}]}"#
            ),
            "hello\n[blob image/png, 5 bytes]\n[resource a://n]\n[blob unknown, 1 bytes]"
        );
        // Both lists, in the order they come; structuredContent only without lines.
        assert_eq!(
            render(
                r#"{"contents":[{"text":"r"}],"content":[{"type":"text","text":"c"}],
                    "structuredContent":{"a":1}}"#
            ),
            "r\nc"
        );
        assert_eq!(
            render(r#"{"contents":[],"structuredContent":{"a":1}}"#),
            r#"{"a":1}"#
        );
        assert_eq!(render(r#"{"contents":null}"#), "");
        assert!(render_result_json(r#"{"contents":[{"text":1}]}"#).is_err());
        assert!(render_result_json(r#"{"contents":["a"]}"#).is_err());
        assert!(render_result_json(r#"{"contents":[],"contents":[]}"#).is_err());
        assert!(render_result_json(r#"{"contents":[{"text":"a","text":"b"}]}"#).is_err());
        assert_eq!(
            render_block_json(r#"{"type":"image","data":"AAAA","mimeType":"image/gif"}"#).unwrap(),
            "[image image/gif, 3 bytes]"
        );
        assert!(render_block_json(r#"{"type":"text","text":1}"#).is_err());
    }

    #[test]
    fn cuts_on_a_character_boundary_with_the_marker() {
        assert_eq!(truncate("abc".into(), 3), "abc");
        assert_eq!(
            truncate("abcd".into(), 3),
            "abc\n\n[mcp output truncated: 4 bytes total, 3 kept]"
        );
        // "é" is two bytes: a cap of 2 after "a" would split it.
        assert_eq!(
            truncate("aéb".into(), 2),
            "a\n\n[mcp output truncated: 4 bytes total, 1 kept]"
        );
    }

    #[test]
    fn reference_reads_a_whole_response() {
        let msg =
            br#"{"result":{"content":[{"type":"text","text":"12345"}]},"jsonrpc":"2.0","id":1}"#;
        let r = render_reference(msg, 3).unwrap();
        assert_eq!(
            r.text,
            "123\n\n[mcp output truncated: 5 bytes total, 3 kept]"
        );
        assert_eq!(r.total, 5);
        let err = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}"#;
        assert!(matches!(render_reference(err, 3), Err(RenderError::Rpc(e)) if e.code == -32602));
    }

    #[test]
    fn errors_are_bounded_and_nesting_is_limited() {
        let msg = format!(
            r#"{{"id":1,"error":{{"code":7,"message":"{}","data":"{}"}}}}"#,
            "m".repeat(ERROR_MESSAGE_LIMIT + 1),
            "d".repeat(ERROR_DATA_LIMIT)
        );
        let Err(RenderError::Rpc(e)) = render_reference(msg.as_bytes(), 10) else {
            panic!("an Rpc error");
        };
        assert_eq!(
            e.message,
            truncate("m".repeat(ERROR_MESSAGE_LIMIT + 1), ERROR_MESSAGE_LIMIT)
        );
        assert_eq!(
            e.data,
            Some(error_data_omitted(ERROR_DATA_LIMIT as u64 + 2))
        );
        let small = br#"{"error":{"code":7,"message":"m","data":{"k":[1]}}}"#;
        let Err(RenderError::Rpc(e)) = render_reference(small, 10) else {
            panic!("an Rpc error");
        };
        assert_eq!(e.data, Some(serde_json::json!({"k":[1]})));
        let nest = |n: usize| {
            format!(
                r#"{{"result":{{"content":[]}},"x":{}{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        assert!(render_reference(nest(MAX_DEPTH - 1).as_bytes(), 10).is_ok());
        assert!(render_reference(nest(MAX_DEPTH).as_bytes(), 10).is_err());
        assert_eq!(nesting_depth(br#"{"a":"[[{{","b":[{}]}"#), 3);
    }
}
