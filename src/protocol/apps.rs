//! The MCP Apps extension (SEP-1865, `io.modelcontextprotocol/ui`): a tool names a `ui://`
//! resource (its `_meta.ui.resourceUri`) that a host renders as HTML beside the tool's
//! results, and the resource's read carries what its page asks of the host's sandbox: the
//! origins its Content Security Policy should allow, and browser permissions (`_meta.ui`).
//! The client reads and checks them; rendering is the host's.
//!
//! What a server sends here ends up in a host's iframe and in its CSP header, so every value
//! is checked and bounded, and one that fails is left out, which only makes the page's
//! sandbox stricter:
//! - a tool has a UI only with a `ui://` URI of at most [`MAX_UI_URI`] bytes, with no space or
//!   control character (else [`Tool::ui`](crate::Tool::ui) is `None`);
//! - each CSP list keeps at most [`MAX_CSP_ENTRIES`] origins, each at most [`MAX_CSP_ENTRY`]
//!   bytes, `http`, `https`, `ws` or `wss` with a host (a `*.` prefix allowed), in printable
//!   ASCII without `;`, `,` or quotes (which could end a directive, add one, or add a keyword
//!   such as `'unsafe-eval'`);
//! - only the four permissions the extension defines are kept;
//! - `domain` is kept under the same rules as an origin's characters, at most 253 bytes.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The extension's identifier, in `capabilities.extensions` of the client that renders.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an MCP Apps page (HTML), the one the extension defines: what a host that
/// renders declares ([`Handlers::with_ui`](crate::Handlers::with_ui)) and a `ui://`
/// resource's read gives.
pub const UI_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// Most bytes of the answer to one read of a `ui://` resource
/// ([`Client::read_ui_resource`](crate::Client::read_ui_resource)): 8 MiB. The page is read
/// whole, for a host to render, so the cap on what a model sees (1 MiB) does not cut it;
/// this bound does, and an answer past it is an error.
pub const MAX_UI_RESOURCE: usize = 8 << 20;

/// The longest `ui://` URI a tool may name, in bytes.
pub(crate) const MAX_UI_URI: usize = 2048;

/// Most origins kept of one CSP list of a UI resource.
pub(crate) const MAX_CSP_ENTRIES: usize = 32;

/// The longest origin kept in a CSP list, in bytes.
pub(crate) const MAX_CSP_ENTRY: usize = 256;

/// The longest `domain` kept, in bytes (a DNS name's).
const MAX_DOMAIN: usize = 253;

/// The permissions the extension defines, as the server spells them.
const PERMISSIONS: [&str; 4] = ["camera", "microphone", "geolocation", "clipboardWrite"];

/// The UI a tool names (its `_meta.ui`, or the older flat `_meta["ui/resourceUri"]`):
/// [`Tool::ui`](crate::Tool::ui), only for a `ui://` URI of at most 2,048 bytes with no space
/// or control character. Serialized as `{"resourceUri", "visibility"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolUi {
    /// The `ui://` resource a host renders for the tool's results
    /// ([`Client::read_ui_resource`](crate::Client::read_ui_resource) reads it).
    pub resource_uri: String,
    /// Who may call the tool, `"model"` and `"app"` (the page), as the server says; both when
    /// it says nothing. Other values are left out.
    pub visibility: Vec<String>,
}

impl ToolUi {
    /// Whether the model may see and call the tool (a tool only for its page says `["app"]`).
    pub fn visible_to_model(&self) -> bool {
        self.visibility.iter().any(|v| v == "model")
    }
}

/// A `ui://` resource read whole ([`Client::read_ui_resource`](crate::Client::read_ui_resource)):
/// its HTML and what its page asks of the host's sandbox. Serialized as `{"uri", "mimeType",
/// "html", "ui"}`, `ui` in the extension's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type as the server gave it ([`UI_MIME_TYPE`] for a page of the extension).
    pub mime_type: Option<String>,
    /// The page (a `text` read as it is, a `blob` decoded, which must be UTF-8).
    pub html: String,
    /// Its `_meta.ui`, checked (empty when the server gave none).
    pub ui: UiResourceMeta,
}

/// What a UI resource's page asks of the host (its read's `_meta.ui`), checked: a host
/// builds the page's CSP from [`csp`](Self::csp) (nothing beyond its defaults when the lists
/// are empty) and may grant [`permissions`](Self::permissions). What could loosen a policy it
/// was not meant to is left out: each CSP list keeps at most 32 origins of at most 256 bytes,
/// each `http`, `https`, `ws` or `wss` with a host (`*.` allowed before a name), in printable
/// ASCII without `;`, `,` or quotes; `domain` follows the same character rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiResourceMeta {
    /// The origins the page may reach.
    pub csp: UiCsp,
    /// The browser permissions it asks for, of `camera`, `microphone`, `geolocation` and
    /// `clipboardWrite` (serialized as the extension's object, `{"camera": {}}`).
    #[serde(serialize_with = "permissions_object")]
    pub permissions: Vec<String>,
    /// The dedicated origin it asks for, in a form each host defines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether it wants a border and background from the host; `None`: the host decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// The origins a UI resource's page may reach, each list for a CSP directive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UiCsp {
    /// For its requests (`connect-src`).
    pub connect_domains: Vec<String>,
    /// For its scripts, styles, images, fonts and media (`script-src`, `style-src`, ...).
    pub resource_domains: Vec<String>,
    /// For frames inside it (`frame-src`).
    pub frame_domains: Vec<String>,
    /// For its `<base>` (`base-uri`).
    pub base_uri_domains: Vec<String>,
}

fn permissions_object<S: Serializer>(names: &[String], to: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = to.serialize_map(Some(names.len()))?;
    for name in names {
        map.serialize_entry(name, &serde_json::Map::new())?;
    }
    map.end()
}

/// The UI of a tool whose `_meta` is `meta` (the server's text), if it names a valid one.
pub(crate) fn tool_ui(meta: &RawValue) -> Option<ToolUi> {
    // Only the two members are read; whatever else `_meta` holds is skipped unparsed.
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(borrow, default)]
        ui: Option<&'a RawValue>,
        #[serde(rename = "ui/resourceUri", borrow, default)]
        flat: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct UiMeta<'a> {
        #[serde(rename = "resourceUri", borrow, default)]
        resource_uri: Option<&'a RawValue>,
        #[serde(borrow, default)]
        visibility: Option<&'a RawValue>,
    }
    let meta: Meta = serde_json::from_str(meta.get()).ok()?;
    let ui = meta
        .ui
        .and_then(|ui| serde_json::from_str::<UiMeta>(ui.get()).ok());
    let uri = ui
        .as_ref()
        .and_then(|ui| ui.resource_uri)
        .or(meta.flat)
        .and_then(ui_uri)?;
    let visibility = match ui.and_then(|ui| ui.visibility).and_then(bounded_strings) {
        Some(given) => PERMITTED_CALLERS
            .into_iter()
            .filter(|caller| given.iter().any(|g| g == caller))
            .map(str::to_string)
            .collect(),
        None => PERMITTED_CALLERS.map(str::to_string).to_vec(),
    };
    Some(ToolUi {
        resource_uri: uri,
        visibility,
    })
}

/// The callers a tool's `visibility` may name.
const PERMITTED_CALLERS: [&str; 2] = ["model", "app"];

/// A JSON string that is a valid `ui://` URI.
fn ui_uri(raw: &RawValue) -> Option<String> {
    // A longer text cannot hold a URI of at most the bound, whatever its escapes.
    if raw.get().len() > MAX_UI_URI * 6 + 2 {
        return None;
    }
    let uri: String = serde_json::from_str(raw.get()).ok()?;
    is_ui_uri(&uri).then_some(uri)
}

/// Whether `uri` is a `ui://` URI this client takes: at most [`MAX_UI_URI`] bytes, with no
/// space or control character.
pub(crate) fn is_ui_uri(uri: &str) -> bool {
    uri.len() <= MAX_UI_URI
        && uri.len() > "ui://".len()
        && uri.starts_with("ui://")
        && !uri.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A short JSON array of strings (`visibility`), else `None`.
fn bounded_strings(raw: &RawValue) -> Option<Vec<String>> {
    (raw.get().len() <= 1024)
        .then(|| serde_json::from_str(raw.get()).ok())
        .flatten()
}

/// The UI resource `uri` from a `resources/read` result: the content for `uri` (or the only
/// one), its HTML and its checked `_meta.ui`.
pub(crate) fn ui_resource(result: &Value, uri: &str) -> Result<UiResource, String> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the result has no contents")?;
    let content = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or(match contents.as_slice() {
            [only] => Some(only),
            _ => None,
        })
        .ok_or("the result has no content for this URI")?;
    let mime_type = content
        .get("mimeType")
        .and_then(Value::as_str)
        .map(str::to_string);
    let html = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), _) => text.clone(),
        (_, Some(Value::String(blob))) => {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| format!("its blob is not base64: {e}"))?;
            String::from_utf8(bytes).map_err(|_| "its blob is not UTF-8 text (HTML)")?
        }
        _ => return Err("the content has neither text nor blob".into()),
    };
    let ui = content
        .get("_meta")
        .and_then(|m| m.get("ui"))
        .map(resource_meta)
        .unwrap_or_default();
    Ok(UiResource {
        uri: uri.to_string(),
        mime_type,
        html,
        ui,
    })
}

/// A UI resource's `_meta.ui`, checked as the module says.
fn resource_meta(ui: &Value) -> UiResourceMeta {
    let csp = ui.get("csp");
    let origins = |key: &str| -> Vec<String> {
        let list = csp.and_then(|c| c.get(key)).and_then(Value::as_array);
        list.into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|origin| is_csp_origin(origin))
            .take(MAX_CSP_ENTRIES)
            .map(str::to_string)
            .collect()
    };
    let asked = ui.get("permissions").and_then(Value::as_object);
    let permissions = PERMISSIONS
        .into_iter()
        .filter(|p| asked.is_some_and(|a| a.get(*p).is_some_and(Value::is_object)))
        .map(str::to_string)
        .collect();
    let domain = ui
        .get("domain")
        .and_then(Value::as_str)
        .filter(|d| d.len() <= MAX_DOMAIN && csp_characters(d))
        .map(str::to_string);
    UiResourceMeta {
        csp: UiCsp {
            connect_domains: origins("connectDomains"),
            resource_domains: origins("resourceDomains"),
            frame_domains: origins("frameDomains"),
            base_uri_domains: origins("baseUriDomains"),
        },
        permissions,
        domain,
        prefers_border: ui.get("prefersBorder").and_then(Value::as_bool),
    }
}

/// Printable ASCII that cannot end a CSP directive, start another or quote a keyword.
fn csp_characters(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b';' | b',' | b'\'' | b'"'))
}

/// An origin a CSP list may hold: `http`, `https`, `ws` or `wss`, then a host (`*.` allowed
/// before a name, not alone), within [`MAX_CSP_ENTRY`] bytes of [`csp_characters`].
fn is_csp_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let host = rest.split(['/', ':']).next().unwrap_or("");
    let name = host.strip_prefix("*.").unwrap_or(host);
    origin.len() <= MAX_CSP_ENTRY
        && csp_characters(origin)
        && matches!(scheme, "http" | "https" | "ws" | "wss")
        && !name.is_empty()
        && !name.contains('*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ui_of(meta: Value) -> Option<ToolUi> {
        let raw = RawValue::from_string(meta.to_string()).unwrap();
        tool_ui(&raw)
    }

    #[test]
    fn a_tool_ui_needs_a_ui_uri_and_keeps_known_callers() {
        let ui = ui_of(json!({"ui": {"resourceUri": "ui://a/b.html"}, "other": [1, 2]})).unwrap();
        assert_eq!(ui.resource_uri, "ui://a/b.html");
        assert_eq!(ui.visibility, ["model", "app"], "both when it says nothing");
        assert!(ui.visible_to_model());
        let app_only = ui_of(json!({"ui": {"resourceUri": "ui://a", "visibility": ["app", "x"]}}));
        assert_eq!(app_only.as_ref().unwrap().visibility, ["app"]);
        assert!(!app_only.unwrap().visible_to_model());
        let flat = ui_of(json!({"ui/resourceUri": "ui://flat/page"})).unwrap();
        assert_eq!(flat.resource_uri, "ui://flat/page", "the older flat key");
        for bad in [
            json!({"ui": {"resourceUri": "https://example.com/page"}}),
            json!({"ui": {"resourceUri": "ui://a\u{1b}[2J"}}),
            json!({"ui": {"resourceUri": "ui://a b"}}),
            json!({"ui": {"resourceUri": "ui://"}}),
            json!({"ui": {"resourceUri": 7}}),
            json!({"ui": {"resourceUri": format!("ui://{}", "a".repeat(MAX_UI_URI))}}),
            json!({"ui": "ui://a"}),
            json!({"ui": {}}),
            json!([1]),
        ] {
            assert_eq!(ui_of(bad.clone()), None, "{bad}");
        }
        let longest = format!("ui://{}", "a".repeat(MAX_UI_URI - 5));
        assert!(ui_of(json!({"ui": {"resourceUri": longest}})).is_some());
    }

    #[test]
    fn a_resource_meta_keeps_only_safe_origins_and_known_permissions() {
        let many: Vec<String> = (0..100).map(|i| format!("https://h{i}.example")).collect();
        let result = json!({"contents": [{
            "uri": "ui://a", "mimeType": UI_MIME_TYPE, "text": "<p>hi</p>",
            "_meta": {"ui": {
                "csp": {
                    "connectDomains": ["https://api.example.com", "https://x.example; script-src *",
                                       "'unsafe-eval'", "*", "https://*", "https://*.cdn.example",
                                       "javascript://x", "wss://rt.example:8443", 7, "https://a b"],
                    "resourceDomains": many,
                    "frameDomains": "https://not-a-list.example",
                },
                "permissions": {"camera": {}, "microphone": true, "usb": {}, "clipboardWrite": {}},
                "domain": "abc.example; frame-ancestors *",
                "prefersBorder": true,
            }}
        }]});
        let read = ui_resource(&result, "ui://a").unwrap();
        assert_eq!(read.html, "<p>hi</p>");
        assert_eq!(read.mime_type.as_deref(), Some(UI_MIME_TYPE));
        let ui = &read.ui;
        assert_eq!(
            ui.csp.connect_domains,
            [
                "https://api.example.com",
                "https://*.cdn.example",
                "wss://rt.example:8443"
            ]
        );
        assert_eq!(ui.csp.resource_domains.len(), MAX_CSP_ENTRIES);
        assert!(ui.csp.frame_domains.is_empty() && ui.csp.base_uri_domains.is_empty());
        assert_eq!(ui.permissions, ["camera", "clipboardWrite"]);
        assert_eq!(ui.domain, None);
        assert_eq!(ui.prefers_border, Some(true));
        let shown = serde_json::to_value(&read).unwrap();
        assert_eq!(
            shown["ui"]["permissions"],
            json!({"camera": {}, "clipboardWrite": {}})
        );
        assert_eq!(shown["mimeType"], UI_MIME_TYPE);
    }

    #[test]
    fn a_blob_page_is_decoded_and_must_be_utf8() {
        let blob = |bytes: &[u8]| {
            use base64::Engine as _;
            let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
            json!({"contents": [{"uri": "ui://b", "blob": blob}]})
        };
        let read = ui_resource(&blob(b"<p>\xc3\xa9</p>"), "ui://b").unwrap();
        assert_eq!(read.html, "<p>é</p>");
        assert_eq!(read.ui, UiResourceMeta::default());
        assert!(
            ui_resource(&blob(b"\xff"), "ui://b")
                .unwrap_err()
                .contains("UTF-8")
        );
        let two =
            json!({"contents": [{"uri": "ui://x", "text": "a"}, {"uri": "ui://y", "text": "b"}]});
        assert!(
            ui_resource(&two, "ui://z")
                .unwrap_err()
                .contains("no content")
        );
        assert_eq!(ui_resource(&two, "ui://y").unwrap().html, "b");
    }
}
