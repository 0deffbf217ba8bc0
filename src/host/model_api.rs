//! Tools in the shape each model API takes: definitions, arguments back, results out.
//!
//! A server's `inputSchema` is handed to the model's API as a tool's parameters, and model
//! APIs refuse many real schemas (one refused definition fails the whole request). For each
//! target ([`ModelApi`]) a schema is rewritten into what that API accepts, with nothing
//! silently lost: what a target cannot express is dropped and its meaning moved into the
//! `description` the model reads ("pattern: ^[a-z]+$", "one of: ...").
//!
//! Every target: local `$ref`s (into `$defs`, `definitions`, or the root) are inlined, a
//! recursive one cut after [`MAX_REF_DEPTH`] expansions with a description that says so;
//! `$schema`, `$id`, `$comment`, `$anchor` are dropped; `oneOf` becomes `anyOf`, `allOf` is
//! merged, `not` and `if`/`then`/`else` go into the description; `properties` and `required`
//! stay on objects only, `required` names that are not properties are dropped; the top level
//! is always an object (a missing or empty schema becomes `{"type": "object", "properties":
//! {}}`).
//!
//! - [`ModelApi::JsonSchema`], [`ModelApi::Anthropic`] and OpenAI without strict mode: JSON
//!   Schema as above, `type` lists and the validation keywords kept.
//! - [`ModelApi::OpenAi`], [`ModelApi::OpenAiResponses`]: strict mode when the schema can be
//!   made strict (every object closed with `additionalProperties: false`, each optional
//!   property made required and nullable, only the keywords strict mode supports, within its
//!   size and depth limits); otherwise `strict: false` with the JSON Schema form. Never a
//!   strict tool the API would refuse.
//! - [`ModelApi::Gemini`]: the OpenAPI subset of Gemini's `Schema` (upper-case `type`,
//!   `nullable`, string `enum`s, `format` only where it is allowed, `anyOf`).
//!
//! What a model sends back is mapped before the call ([`map_back`]): the nulls
//! strict mode forced on optional parameters removed, then the arguments checked against the
//! original schema; ones that cannot fit are refused with an error the model can read.
//! A result is shaped as the target's tool-result item ([`result_item`]).
//!
//! With a [`Manager`](crate::host::Manager), adapt [`Manager::tool_definitions`](crate::host::Manager::tool_definitions) (or, with tool
//! search, [`Manager::offered_tools`](crate::host::Manager::offered_tools)); map a call back with the original schema of
//! [`Manager::tool_definition`](crate::host::Manager::tool_definition). The request body each API takes, from one tool (no network
//! here):
//!
//! ```
//! use agenvoy_mcp::host::ToolDefinition;
//! use agenvoy_mcp::host::model_api::{ModelApi, adapt_tool, map_back};
//! use serde_json::{json, value::RawValue};
//!
//! let schema = r#"{"type":"object","properties":{"zone":{"type":"string"}}}"#;
//! let input_schema = RawValue::from_string(schema.into()).unwrap().into();
//! let tool = ToolDefinition::new("mcp__time__now", "The time in a zone.", input_schema);
//! let tools = |api| vec![adapt_tool(api, &tool).item];
//! let ask = "What time is it in Paris?";
//! // POST https://api.openai.com/v1/chat/completions
//! let openai = json!({"model": "gpt-5", "tools": tools(ModelApi::OpenAi),
//!     "messages": [{"role": "user", "content": ask}]});
//! // POST https://api.openai.com/v1/responses
//! let responses = json!({"model": "gpt-5", "tools": tools(ModelApi::OpenAiResponses), "input": ask});
//! // POST https://api.anthropic.com/v1/messages
//! let anthropic = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
//!     "tools": tools(ModelApi::Anthropic), "messages": [{"role": "user", "content": ask}]});
//! // POST https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent
//! let gemini = json!({"tools": [{"functionDeclarations": tools(ModelApi::Gemini)}],
//!     "contents": [{"role": "user", "parts": [{"text": ask}]}]});
//! // An OpenAI-compatible endpoint without strict mode (OpenRouter, DeepSeek, ...).
//! let compatible = json!({"model": "deepseek-chat", "tools": tools(ModelApi::JsonSchema),
//!     "messages": [{"role": "user", "content": ask}]});
//!
//! // Strict mode: the optional `zone` is required and nullable, every object closed.
//! let parameters = &openai["tools"][0]["function"]["parameters"];
//! assert_eq!(parameters["properties"]["zone"]["type"], json!(["string", "null"]));
//! assert_eq!(gemini["tools"][0]["functionDeclarations"][0]["parameters"]["type"], "OBJECT");
//! assert!(compatible["tools"][0]["function"].get("strict").is_none());
//! # let _ = (responses, anthropic);
//! // What the model sends back, as the server takes it: the forced null removed.
//! let sent = json!({"zone": null});
//! assert_eq!(map_back(&serde_json::from_str(schema).unwrap(), sent), Ok(json!({})));
//! ```

use super::registry::ToolDefinition;
use crate::protocol::types::ToolOutput;
use serde_json::{Value, json};
use std::fmt;
use std::str::FromStr;

mod arguments;
mod schema;

pub use arguments::map_back;
pub use schema::MAX_REF_DEPTH;
use schema::{gemini, inlined, lenient, strict};

/// Deepest a schema or the arguments are followed; deeper parts become `{}` with a
/// description, and are not checked (a bound on hostile input, far past what APIs take).
const MAX_DEPTH: usize = 32;

/// A model API, the target a tool is shaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelApi {
    /// OpenAI Chat Completions: `{"type": "function", "function": {name, description,
    /// parameters, strict}}`.
    OpenAi,
    /// OpenAI Responses: `{"type": "function", name, description, parameters, strict}`.
    OpenAiResponses,
    /// Anthropic Messages: `{name, description, input_schema}`.
    Anthropic,
    /// Google Gemini: a `FunctionDeclaration`, `{name, description, parameters}`.
    Gemini,
    /// OpenAI-compatible endpoints without strict mode: as [`ModelApi::OpenAi`], `strict`
    /// absent.
    JsonSchema,
}

impl ModelApi {
    /// Every target, by its name.
    pub const ALL: [ModelApi; 5] = [
        ModelApi::OpenAi,
        ModelApi::OpenAiResponses,
        ModelApi::Anthropic,
        ModelApi::Gemini,
        ModelApi::JsonSchema,
    ];

    /// Its name: `openai`, `openai-responses`, `anthropic`, `gemini`, `json-schema`.
    pub fn name(self) -> &'static str {
        match self {
            ModelApi::OpenAi => "openai",
            ModelApi::OpenAiResponses => "openai-responses",
            ModelApi::Anthropic => "anthropic",
            ModelApi::Gemini => "gemini",
            ModelApi::JsonSchema => "json-schema",
        }
    }

    /// Whether `name` is a tool name this API takes: OpenAI and Anthropic
    /// `^[a-zA-Z0-9_-]{1,64}$`; Gemini a letter or `_` first, then at most 64 of
    /// `[a-zA-Z0-9_.:-]`.
    pub fn takes_name(self, name: &str) -> bool {
        let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        (1..=64).contains(&name.len())
            && match self {
                ModelApi::Gemini => {
                    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && name.bytes().all(|b| plain(b) || b == b'.' || b == b':')
                }
                _ => name.bytes().all(plain),
            }
    }
}

impl fmt::Display for ModelApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of [`ModelApi::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownModelApi(pub String);

impl fmt::Display for UnknownModelApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = ModelApi::ALL.iter().map(|t| t.name()).collect();
        write!(
            f,
            "unknown format {:?}; the formats are {}",
            crate::safe_text::escape_controls(&self.0),
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownModelApi {}

impl FromStr for ModelApi {
    type Err = UnknownModelApi;

    fn from_str(s: &str) -> Result<ModelApi, UnknownModelApi> {
        ModelApi::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownModelApi(s.to_string()))
    }
}

/// One tool shaped for a model API.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AdaptedTool {
    /// The item of the request's tool list (for Gemini, one of the `functionDeclarations`).
    pub item: Value,
    /// Whether it is an OpenAI strict tool.
    pub strict: bool,
}

/// Shapes a tool definition for `api`.
pub fn adapt_tool(api: ModelApi, tool: &ToolDefinition) -> AdaptedTool {
    let schema: Value = serde_json::from_str(tool.input_schema.get()).unwrap_or(Value::Null);
    let (parameters, strict) = adapt_schema(api, &schema);
    let (name, description) = (tool.name.as_str(), &*tool.description);
    let item = match api {
        ModelApi::OpenAi => json!({"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters, "strict": strict}}),
        ModelApi::OpenAiResponses => json!({"type": "function", "name": name,
            "description": description, "parameters": parameters, "strict": strict}),
        ModelApi::JsonSchema => json!({"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters}}),
        ModelApi::Anthropic => {
            json!({"name": name, "description": description, "input_schema": parameters})
        }
        ModelApi::Gemini => {
            json!({"name": name, "description": description, "parameters": parameters})
        }
    };
    AdaptedTool { item, strict }
}

/// Definitions as `api`'s tool list: what a request's `tools` holds (for Gemini, what one
/// tool's `functionDeclarations` holds). Give it [`Manager::tool_definitions`] or
/// [`Manager::offered_tools`](crate::host::Manager::offered_tools).
///
/// [`Manager::tool_definitions`]: crate::host::Manager::tool_definitions
pub fn tool_list(api: ModelApi, definitions: &[ToolDefinition]) -> Vec<Value> {
    definitions
        .iter()
        .map(|d| adapt_tool(api, d).item)
        .collect()
}

/// An `inputSchema` as `api`'s parameters, and whether they are OpenAI strict.
pub fn adapt_schema(api: ModelApi, schema: &Value) -> (Value, bool) {
    let inlined = inlined(schema);
    match api {
        ModelApi::Gemini => (gemini(&inlined), false),
        ModelApi::OpenAi | ModelApi::OpenAiResponses => {
            let json = lenient(&inlined);
            match strict(&inlined, &json) {
                Some(strict) => (strict, true),
                None => (json, false),
            }
        }
        ModelApi::Anthropic | ModelApi::JsonSchema => (lenient(&inlined), false),
    }
}

// ---- results out ------------------------------------------------------------------------

/// A call's result as `api`'s tool-result item for the call `call_id` of the tool `name`: the
/// text the model sees (capped, with the truncation marker), an error flagged where the
/// target has a place for it. Images and other blocks are described in that text (the
/// streaming renderer keeps no payloads).
pub fn result_item(api: ModelApi, call_id: &str, name: &str, output: &ToolOutput) -> Value {
    let text = output.text.as_str();
    match api {
        ModelApi::OpenAi | ModelApi::JsonSchema => {
            json!({"role": "tool", "tool_call_id": call_id, "content": text})
        }
        ModelApi::OpenAiResponses => {
            json!({"type": "function_call_output", "call_id": call_id, "output": text})
        }
        ModelApi::Anthropic => json!({"type": "tool_result", "tool_use_id": call_id,
            "content": [{"type": "text", "text": text}], "is_error": output.is_error}),
        ModelApi::Gemini => {
            let key = if output.is_error { "error" } else { "output" };
            json!({"functionResponse": {"id": call_id, "name": name, "response": {key: text}}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameters(api: ModelApi, schema: Value) -> (Value, bool) {
        adapt_schema(api, &schema)
    }

    #[test]
    fn refs_are_inlined_and_recursion_is_cut_with_a_note() {
        let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}});
        for api in ModelApi::ALL {
            let (p, _) = parameters(api, schema.clone());
            let text = p.to_string();
            assert!(
                !text.contains("$ref") && !text.contains("$defs") && !text.contains("$schema"),
                "{api}: {text}"
            );
            assert!(
                text.contains("a Node again (recursive), not expanded further here"),
                "{api}: {text}"
            );
        }
    }

    #[test]
    fn a_missing_or_non_object_schema_becomes_an_object() {
        for schema in [
            json!(null),
            json!({}),
            json!({"type": "string"}),
            json!(true),
        ] {
            for api in ModelApi::ALL {
                let (p, _) = parameters(api, schema.clone());
                let object = if api == ModelApi::Gemini {
                    "OBJECT"
                } else {
                    "object"
                };
                assert_eq!(p["type"], object, "{api} {schema}: {p}");
                assert!(p["properties"].is_object(), "{api} {schema}: {p}");
            }
        }
        let (p, _) = parameters(ModelApi::Anthropic, json!({"type": "string"}));
        assert!(
            p["description"].as_str().unwrap().contains("not an object"),
            "{p}"
        );
    }

    #[test]
    fn combinators_are_rewritten_and_their_meaning_kept() {
        let schema = json!({"type": "object", "properties": {
            "id": {"type": ["string", "null"]},
            "n": {"type": ["string", "number"]},
            "pet": {"oneOf": [{"type": "object", "properties": {"cat": {"type": "string"}}},
                              {"type": "object", "properties": {"dog": {"type": "string"}}}]},
            "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                               {"properties": {"b": {"type": "integer"}}}]},
            "odd": {"type": "string", "not": {"const": "x"}, "pattern": "^[a-z]+$", "format": "uri"},
            "mixed": {"enum": [1, "a", null, true]}
        }, "required": ["id", "ghost"]});
        let (p, _) = parameters(ModelApi::JsonSchema, schema.clone());
        let props = &p["properties"];
        assert_eq!(props["pet"]["anyOf"].as_array().unwrap().len(), 2, "{p}");
        assert_eq!(props["both"]["required"], json!(["a"]), "{p}");
        assert_eq!(props["both"]["properties"]["b"]["type"], "integer", "{p}");
        assert!(
            props["odd"]["description"]
                .as_str()
                .unwrap()
                .contains("not: {\"const\":\"x\"}"),
            "{p}"
        );
        assert_eq!(p["required"], json!(["id"]), "the ghost is dropped: {p}");

        let (g, _) = parameters(ModelApi::Gemini, schema);
        let props = &g["properties"];
        assert_eq!(
            (&props["id"]["type"], &props["id"]["nullable"]),
            (&json!("STRING"), &json!(true)),
            "{g}"
        );
        assert_eq!(props["n"]["anyOf"][1]["type"], "NUMBER", "{g}");
        let odd = props["odd"]["description"].as_str().unwrap();
        assert!(
            odd.contains("pattern: ^[a-z]+$") && odd.contains("format: uri"),
            "{g}"
        );
        assert!(props["odd"].get("pattern").is_none() && props["odd"].get("format").is_none());
        assert!(props["mixed"].get("enum").is_none(), "{g}");
        assert!(
            props["mixed"]["description"]
                .as_str()
                .unwrap()
                .contains("one of: 1, \"a\", null, true")
        );
    }

    #[test]
    fn strict_mode_closes_objects_and_makes_optional_properties_nullable() {
        let schema = json!({"type": "object", "properties": {
            "q": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "default": 10},
            "filter": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}
        }, "required": ["q"]});
        let (p, strict) = parameters(ModelApi::OpenAi, schema.clone());
        assert!(strict, "{p}");
        assert_eq!(p["additionalProperties"], false);
        assert_eq!(p["required"], json!(["filter", "limit", "q"]));
        assert_eq!(p["properties"]["limit"]["type"], json!(["integer", "null"]));
        assert_eq!(p["properties"]["q"]["type"], "string");
        assert!(
            p["properties"]["q"]["description"]
                .as_str()
                .unwrap()
                .contains("minLength: 1")
        );
        assert_eq!(p["properties"]["filter"]["additionalProperties"], false);
        // The nulls it forced come off again, and the arguments are checked.
        let back = map_back(&schema, json!({"q": "x", "limit": null, "filter": null}));
        assert_eq!(back, Ok(json!({"q": "x"})));
        let refused = map_back(&schema, json!({"q": 3})).unwrap_err();
        assert!(refused.contains("\"/q\" must be string"), "{refused}");
        let refused = map_back(&schema, json!({"limit": 1})).unwrap_err();
        assert!(refused.contains("needs the property \"q\""), "{refused}");

        // A map or a free-form object cannot be strict: the lenient form, strict false.
        for open in [
            json!({"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"any": {"type": "object"}}}),
            json!({"type": "object", "properties": {"x": {}}}),
        ] {
            let (p, strict) = parameters(ModelApi::OpenAiResponses, open.clone());
            assert!(!strict, "{open}: {p}");
            assert!(p.get("additionalProperties").is_none(), "{p}");
        }
    }

    #[test]
    fn a_null_the_original_takes_is_kept() {
        let schema = json!({"type": "object", "properties": {"x": {"type": ["string", "null"]}}});
        assert_eq!(
            map_back(&schema, json!({"x": null})),
            Ok(json!({"x": null}))
        );
    }

    #[test]
    fn names_and_formats() {
        assert_eq!("gemini".parse::<ModelApi>(), Ok(ModelApi::Gemini));
        let unknown = "claude".parse::<ModelApi>().unwrap_err().to_string();
        assert!(
            unknown.contains("openai, openai-responses, anthropic, gemini, json-schema"),
            "{unknown}"
        );
        for api in ModelApi::ALL {
            assert!(api.takes_name("mcp__github__create_issue"));
            assert!(!api.takes_name(&"a".repeat(65)));
            assert!(!api.takes_name("a b"));
        }
        assert!(ModelApi::Gemini.takes_name("a.b:c") && !ModelApi::OpenAi.takes_name("a.b"));
        assert!(!ModelApi::Gemini.takes_name("1abc") && ModelApi::OpenAi.takes_name("1abc"));
    }

    #[test]
    fn results_in_each_shape() {
        let out = ToolOutput {
            text: "done".into(),
            is_error: true,
            total_bytes: 4,
        };
        let item = |api| result_item(api, "c1", "mcp__s__t", &out);
        assert_eq!(
            item(ModelApi::OpenAi),
            json!({"role": "tool", "tool_call_id": "c1", "content": "done"})
        );
        assert_eq!(
            item(ModelApi::OpenAiResponses)["type"],
            "function_call_output"
        );
        assert_eq!(item(ModelApi::Anthropic)["is_error"], true);
        assert_eq!(item(ModelApi::Anthropic)["content"][0]["text"], "done");
        assert_eq!(
            item(ModelApi::Gemini)["functionResponse"]["response"]["error"],
            "done"
        );
    }
}
