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
//! What a model sends back is mapped before the call ([`Arguments::map_back`]): the nulls
//! strict mode forced on optional parameters removed, then the arguments checked against the
//! original schema; ones that cannot fit are refused with an error the model can read.
//! A result is shaped as the target's tool-result item ([`result_item`]).

use super::registry::ToolDefinition;
use crate::protocol::types::ToolOutput;
use serde_json::{Map, Value, json};
use std::fmt;
use std::str::FromStr;

/// How many times one `$ref` is expanded along a path before it is cut (recursion).
pub const MAX_REF_DEPTH: usize = 2;

/// Deepest a schema is followed; deeper parts become `{}` with a description (a bound on
/// hostile input, far past what APIs take).
const MAX_DEPTH: usize = 32;

/// OpenAI strict mode's documented limits: properties in all, nesting, the characters of
/// names, enum values and consts, enum values in all.
const STRICT_MAX_PROPERTIES: usize = 5000;
const STRICT_MAX_NESTING: usize = 10;
const STRICT_MAX_CHARS: usize = 120_000;
const STRICT_MAX_ENUM_VALUES: usize = 1000;

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
            crate::text::escape_controls(&self.0),
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

/// An `inputSchema` as `api`'s parameters, and whether they are OpenAI strict.
pub fn adapt_schema(api: ModelApi, schema: &Value) -> (Value, bool) {
    let inlined = Inliner::new(schema).top();
    match api {
        ModelApi::Gemini => (gemini(&inlined), false),
        ModelApi::OpenAi | ModelApi::OpenAiResponses => match strict(&inlined) {
            Some(strict) => (strict, true),
            None => (lenient(&inlined), false),
        },
        ModelApi::Anthropic | ModelApi::JsonSchema => (lenient(&inlined), false),
    }
}

// ---- the common form: self-contained, top level an object -------------------------------

/// Inlines local `$ref`s, drops the meta keywords and `$defs`, and makes the top an object.
struct Inliner<'a> {
    root: &'a Value,
    /// The `$ref`s being expanded on the current path.
    path: Vec<String>,
}

impl<'a> Inliner<'a> {
    fn new(root: &'a Value) -> Self {
        Inliner {
            root,
            path: Vec::new(),
        }
    }

    /// The whole schema, self-contained, an object at the top.
    fn top(mut self) -> Value {
        let mut out = match self.root {
            Value::Object(_) => self.node(self.root, 0),
            _ => Value::Object(Map::new()),
        };
        let map = out.as_object_mut().expect("an object");
        let is_object = |m: &Map<String, Value>| {
            m.get("type").and_then(Value::as_str) == Some("object") || m.contains_key("properties")
        };
        if !is_object(map) {
            let mut note = Vec::new();
            if !map.is_empty() {
                note.push(format!(
                    "the server's schema is not an object: {}",
                    short_json(&Value::Object(map.clone()))
                ));
            }
            let mut object = Map::new();
            object.insert("type".into(), json!("object"));
            object.insert("properties".into(), json!({}));
            describe(&mut object, note);
            *map = object;
        }
        map.insert("type".into(), json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
        out
    }

    fn node(&mut self, schema: &Value, depth: usize) -> Value {
        let Value::Object(map) = schema else {
            // `true` or `false` as a schema, or junk: anything goes.
            return json!({});
        };
        if depth > MAX_DEPTH {
            return json!({"description": "(nested too deep to show)"});
        }
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(reference, map, depth);
        }
        let mut out = Map::new();
        for (key, value) in map {
            let value = match key.as_str() {
                "$schema" | "$id" | "$comment" | "$anchor" | "$defs" | "definitions" => continue,
                "properties" | "patternProperties" | "dependentSchemas" => match value {
                    Value::Object(props) => Value::Object(
                        props
                            .iter()
                            .map(|(k, v)| (k.clone(), self.node(v, depth + 1)))
                            .collect(),
                    ),
                    _ => continue,
                },
                "items"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "additionalItems" => match value {
                    Value::Object(_) => self.node(value, depth + 1),
                    Value::Array(items) if key == "items" => {
                        // A tuple (draft 7): each place any of the schemas.
                        let each: Vec<Value> =
                            items.iter().map(|v| self.node(v, depth + 1)).collect();
                        json!({"anyOf": each})
                    }
                    other => other.clone(),
                },
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => match value {
                    Value::Array(items) => {
                        Value::Array(items.iter().map(|v| self.node(v, depth + 1)).collect())
                    }
                    _ => continue,
                },
                _ => value.clone(),
            };
            out.insert(key.clone(), value);
        }
        Value::Object(out)
    }

    /// A `$ref` inlined (its siblings kept over it), or cut when it recurs.
    fn reference(&mut self, reference: &str, map: &Map<String, Value>, depth: usize) -> Value {
        let name = reference
            .rsplit('/')
            .next()
            .unwrap_or(reference)
            .to_string();
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        let mut siblings = map.clone();
        siblings.remove("$ref");
        let recurs = self.path.iter().filter(|r| *r == reference).count() >= MAX_REF_DEPTH;
        let mut inlined = match target {
            Some(target) if !recurs => {
                self.path.push(reference.to_string());
                let inlined = self.node(target, depth + 1);
                self.path.pop();
                inlined
            }
            Some(_) => {
                let mut cut = Map::new();
                cut.insert("type".into(), json!("object"));
                describe(
                    &mut cut,
                    vec![format!(
                        "a {name} again (recursive), not expanded further here"
                    )],
                );
                Value::Object(cut)
            }
            None => {
                let mut unknown = Map::new();
                describe(
                    &mut unknown,
                    vec![format!("a schema this client cannot resolve: {reference}")],
                );
                Value::Object(unknown)
            }
        };
        let siblings = self.node(&Value::Object(siblings), depth);
        if let (Value::Object(inlined), Value::Object(siblings)) = (&mut inlined, siblings) {
            for (key, value) in siblings {
                inlined.insert(key, value);
            }
        }
        inlined
    }
}

// ---- JSON Schema targets (Anthropic, OpenAI without strict, json-schema) ------------------

/// The self-contained schema with the combinators every target shares rewritten: `oneOf`
/// as `anyOf`, `allOf` merged, `not` and `if`/`then`/`else` into the description;
/// `properties`/`required` only on objects, `required` only of properties.
fn lenient(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return json!({});
    };
    let mut map = merge_all_of(map);
    let mut notes = Vec::new();
    if let Some(one_of) = map.remove("oneOf") {
        let mut any = match map.remove("anyOf") {
            Some(Value::Array(any)) => any,
            _ => Vec::new(),
        };
        any.extend(one_of.as_array().cloned().unwrap_or_default());
        notes.push("exactly one of the forms below".to_string());
        map.insert("anyOf".into(), Value::Array(any));
    }
    for key in ["not", "if", "then", "else"] {
        if let Some(value) = map.remove(key) {
            notes.push(format!("{key}: {}", short_json(&value)));
        }
    }
    tidy_object_keywords(&mut map);
    let mut out = Map::new();
    for (key, value) in map {
        let value = match key.as_str() {
            "properties" => Value::Object(
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), lenient(v)))
                    .collect(),
            ),
            "items" | "additionalProperties" | "contains" | "propertyNames"
                if value.is_object() =>
            {
                lenient(&value)
            }
            "anyOf" | "prefixItems" => Value::Array(
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(lenient)
                    .collect(),
            ),
            _ => value,
        };
        out.insert(key, value);
    }
    describe(&mut out, notes);
    Value::Object(out)
}

/// `allOf` merged into its schema: properties and required united, other keywords taken
/// from the first that sets them.
fn merge_all_of(map: &Map<String, Value>) -> Map<String, Value> {
    let mut map = map.clone();
    let Some(Value::Array(parts)) = map.remove("allOf") else {
        return map;
    };
    for part in parts {
        let Value::Object(part) = part else { continue };
        let part = merge_all_of(&part);
        for (key, value) in part {
            match (key.as_str(), map.get_mut(&key)) {
                ("properties", Some(Value::Object(mine))) => {
                    for (k, v) in value.as_object().into_iter().flatten() {
                        mine.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                ("required", Some(Value::Array(mine))) => {
                    for name in value.as_array().into_iter().flatten() {
                        if !mine.contains(name) {
                            mine.push(name.clone());
                        }
                    }
                }
                ("description", Some(Value::String(mine))) => {
                    if let Some(more) = value.as_str() {
                        mine.push_str(". ");
                        mine.push_str(more);
                    }
                }
                (_, Some(_)) => {}
                (_, None) => {
                    map.insert(key, value);
                }
            }
        }
    }
    map
}

/// `properties` and `required` only where the schema is an object, `required` only of
/// properties it has, and an object typed as one.
fn tidy_object_keywords(map: &mut Map<String, Value>) {
    let types = types_of(map);
    let object = types.is_empty() && map.contains_key("properties") || types.contains(&"object");
    if !object {
        map.remove("properties");
        map.remove("required");
        return;
    }
    if types.is_empty() {
        map.insert("type".into(), json!("object"));
    }
    if !map.get("properties").is_some_and(Value::is_object) {
        map.remove("properties");
    }
    let names: Vec<String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    match map.get("required") {
        Some(Value::Array(required)) => {
            let kept: Vec<Value> = required
                .iter()
                .filter(|r| r.as_str().is_some_and(|r| names.iter().any(|n| n == r)))
                .cloned()
                .collect();
            if kept.is_empty() {
                map.remove("required");
            } else {
                map.insert("required".into(), Value::Array(kept));
            }
        }
        Some(_) => {
            map.remove("required");
        }
        None => {}
    }
}

/// The schema's `type`, as a list of names.
fn types_of(map: &Map<String, Value>) -> Vec<&str> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

// ---- OpenAI strict mode -----------------------------------------------------------------

/// Keywords strict mode takes beside the structural ones.
const STRICT_KEYWORDS: &[&str] = &[
    "description",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// String formats strict mode takes.
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The strict form of a self-contained schema, or `None` when it cannot be made strict (an
/// open object, a map, past the size limits).
fn strict(schema: &Value) -> Option<Value> {
    let mut budget = StrictBudget::default();
    let out = strict_node(&lenient(schema), 0, &mut budget)?;
    let within = budget.properties <= STRICT_MAX_PROPERTIES
        && budget.chars <= STRICT_MAX_CHARS
        && budget.enum_values <= STRICT_MAX_ENUM_VALUES;
    within.then_some(out)
}

#[derive(Default)]
struct StrictBudget {
    properties: usize,
    chars: usize,
    enum_values: usize,
}

fn strict_node(schema: &Value, depth: usize, budget: &mut StrictBudget) -> Option<Value> {
    let map = schema.as_object()?;
    if depth > STRICT_MAX_NESTING {
        return None;
    }
    let mut out = Map::new();
    let mut notes = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "type" | "properties" | "required" | "additionalProperties" | "items" | "anyOf" => {}
            "enum" => {
                let values = value.as_array()?;
                budget.enum_values += values.len();
                budget.chars += values.iter().map(|v| v.to_string().len()).sum::<usize>();
                out.insert(key.clone(), value.clone());
            }
            "const" => {
                budget.chars += value.to_string().len();
                out.insert("enum".into(), json!([value]));
            }
            "format" if value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            "pattern" if value.as_str().is_some_and(|p| regex::Regex::new(p).is_ok()) => {
                out.insert(key.clone(), value.clone());
            }
            k if STRICT_KEYWORDS.contains(&k) && k != "format" && k != "pattern" => {
                out.insert(key.clone(), value.clone());
            }
            _ => notes.push(format!("{key}: {}", short_json(value))),
        }
    }
    let types = types_of(map);
    if types.contains(&"object") {
        let properties = map.get("properties").and_then(Value::as_object);
        // A map (`additionalProperties` a schema or true) or a free-form object (no
        // properties) cannot be closed without losing what it takes: not strict.
        let closed = map.get("additionalProperties") == Some(&json!(false));
        let open = map
            .get("additionalProperties")
            .is_some_and(|a| !a.is_boolean())
            || map.get("additionalProperties") == Some(&json!(true));
        if open || (!closed && properties.is_none_or(Map::is_empty)) {
            return None;
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut props = Map::new();
        for (name, property) in properties.into_iter().flatten() {
            budget.properties += 1;
            budget.chars += name.len();
            let mut property = strict_node(property, depth + 1, budget)?;
            if !required.contains(&name.as_str()) {
                property = nullable(property);
            }
            props.insert(name.clone(), property);
        }
        out.insert("type".into(), json!("object"));
        out.insert(
            "required".into(),
            Value::Array(props.keys().map(|k| json!(k)).collect()),
        );
        out.insert("properties".into(), Value::Object(props));
        out.insert("additionalProperties".into(), json!(false));
    } else if let Some(kind) = map.get("type") {
        out.insert("type".into(), kind.clone());
    }
    if let Some(items) = map.get("items") {
        out.insert("items".into(), strict_node(items, depth + 1, budget)?);
    }
    if let Some(Value::Array(any)) = map.get("anyOf") {
        let branches: Option<Vec<Value>> = any
            .iter()
            .map(|b| strict_node(b, depth + 1, budget))
            .collect();
        out.insert("anyOf".into(), Value::Array(branches?));
    }
    // A schema with no type and no branches takes anything: strict mode cannot say that.
    if !out.contains_key("type") && !out.contains_key("anyOf") && !out.contains_key("enum") {
        return None;
    }
    describe(&mut out, notes);
    Some(Value::Object(out))
}

/// The schema, also taking `null` (strict mode's way to say a property may be left out).
fn nullable(mut schema: Value) -> Value {
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) if !ts.contains(&json!("null")) => ts.push(json!("null")),
        Some(_) => {}
        None => {
            if let Some(Value::Array(any)) = map.get_mut("anyOf")
                && !any.iter().any(|b| b.get("type") == Some(&json!("null")))
            {
                any.push(json!({"type": "null"}));
            }
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    schema
}

// ---- Gemini -----------------------------------------------------------------------------

/// Gemini's `Schema` keywords beside the structural ones.
const GEMINI_KEYWORDS: &[&str] = &[
    "description",
    "title",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
];

/// The self-contained schema as Gemini's `Schema`.
fn gemini(schema: &Value) -> Value {
    gemini_node(&lenient(schema))
}

fn gemini_node(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    let mut notes = Vec::new();
    let types = types_of(map);
    let nullable = types.contains(&"null");
    let real: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
    match real.as_slice() {
        [] => {}
        [one] => {
            out.insert("type".into(), json!(one.to_ascii_uppercase()));
        }
        several => {
            // Several types: one branch each.
            let branches: Vec<Value> = several
                .iter()
                .map(|t| {
                    let mut branch = map.clone();
                    branch.insert("type".into(), json!(t));
                    if *t != "object" {
                        branch.remove("properties");
                        branch.remove("required");
                    }
                    if *t != "array" {
                        branch.remove("items");
                    }
                    gemini_node(&Value::Object(branch))
                })
                .collect();
            let mut any = Map::new();
            any.insert("anyOf".into(), Value::Array(branches));
            if nullable {
                any.insert("nullable".into(), json!(true));
            }
            if let Some(d) = map.get("description") {
                any.insert("description".into(), d.clone());
            }
            return Value::Object(any);
        }
    }
    if nullable || map.get("nullable") == Some(&json!(true)) {
        out.insert("nullable".into(), json!(true));
    }
    for (key, value) in map {
        match key.as_str() {
            "type" | "nullable" => {}
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), gemini_node(v)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "required" => {
                out.insert(key.clone(), value.clone());
            }
            "items" if value.is_object() => {
                out.insert(key.clone(), gemini_node(value));
            }
            "anyOf" => {
                let branches: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(gemini_node)
                    .collect();
                out.insert("anyOf".into(), Value::Array(branches));
            }
            "enum" | "const" => {
                let values = match value {
                    Value::Array(values) => values.clone(),
                    one => vec![one.clone()],
                };
                if values.iter().all(Value::is_string) && real.as_slice() == ["string"] {
                    out.insert("enum".into(), Value::Array(values));
                    out.insert("format".into(), json!("enum"));
                } else {
                    let shown: Vec<String> = values.iter().map(|v| v.to_string()).collect();
                    notes.push(format!("one of: {}", shown.join(", ")));
                }
            }
            "format" => {
                let allowed = matches!(
                    (real.as_slice(), value.as_str()),
                    (["string"], Some("date-time"))
                        | (["number"], Some("float" | "double"))
                        | (["integer"], Some("int32" | "int64"))
                );
                if allowed {
                    out.insert(key.clone(), value.clone());
                } else {
                    notes.push(format!("format: {}", short_json(value)));
                }
            }
            "pattern" => notes.push(format!("pattern: {}", short_json(value))),
            "additionalProperties" if value.is_object() => {
                notes.push(format!(
                    "any other keys, each {}",
                    short_json(&strip_descriptions(value))
                ));
            }
            "additionalProperties" => {}
            k if GEMINI_KEYWORDS.contains(&k) && value_fits_gemini(k, value) => {
                out.insert(key.clone(), value.clone());
            }
            _ => notes.push(format!("{key}: {}", short_json(value))),
        }
    }
    // `enum` without a string type: Gemini takes enums of strings only.
    if out.contains_key("enum") && out.get("type") != Some(&json!("STRING")) {
        out.remove("enum");
        out.remove("format");
    }
    describe(&mut out, notes);
    Value::Object(out)
}

/// Whether `value` has the type Gemini's model wants for `key`.
fn value_fits_gemini(key: &str, value: &Value) -> bool {
    match key {
        "description" | "title" => value.is_string(),
        "minimum" | "maximum" => value.is_number(),
        _ => value.as_u64().is_some(),
    }
}

fn strip_descriptions(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "description" && *k != "title")
                .map(|(k, v)| (k.clone(), strip_descriptions(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

// ---- descriptions -----------------------------------------------------------------------

/// Appends what a target could not take to the schema's description, so the model still
/// reads it.
fn describe(map: &mut Map<String, Value>, notes: Vec<String>) {
    if notes.is_empty() {
        return;
    }
    let added = format!("({})", notes.join("; "));
    let description = match map.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} {added}"),
        _ => added,
    };
    map.insert("description".into(), Value::String(description));
}

/// Compact JSON of `value`, at most 200 characters.
fn short_json(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

// ---- arguments back ---------------------------------------------------------------------

/// A model's arguments for one tool, mapped back to what its server takes.
#[derive(Debug)]
pub struct Arguments;

impl Arguments {
    /// `sent` (what the model sent for the adapted schema) as the server's `schema` takes
    /// it: the nulls strict mode forces on optional properties removed (where the original
    /// schema does not take `null` there), then checked against the original schema. `Err`
    /// says, for the model, why they cannot fit.
    pub fn map_back(schema: &Value, sent: Value) -> Result<Value, String> {
        let root = schema;
        let mut args = match sent {
            Value::Object(map) => Value::Object(map),
            Value::Null => Value::Object(Map::new()),
            other => {
                return Err(format!(
                    "the arguments must be a JSON object, not {}",
                    short_json(&other)
                ));
            }
        };
        drop_forced_nulls(root, schema, &mut args, 0);
        check(root, schema, &args, "", 0).map_err(|why| {
            format!("the arguments do not fit the tool's input schema: {why}; send them again as it says")
        })?;
        Ok(args)
    }
}

/// Resolves a local `$ref` of `schema` (one step).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..MAX_DEPTH {
        match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

fn drop_forced_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(root, schema);
    match value {
        Value::Object(args) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            // A null stays where the original requires the property or takes null there.
            let takes_null = |name: &str| {
                required.contains(&name)
                    || properties
                        .and_then(|p| p.get(name))
                        .is_some_and(|p| check(root, p, &Value::Null, "", depth + 1).is_ok())
            };
            args.retain(|name, v| !v.is_null() || takes_null(name));
            for (name, v) in args.iter_mut() {
                if let Some(p) = properties.and_then(|p| p.get(name)) {
                    drop_forced_nulls(root, p, v, depth + 1);
                }
            }
            for part in schema
                .get("allOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut whole = Value::Object(std::mem::take(args));
                drop_forced_nulls(root, part, &mut whole, depth + 1);
                *args = match whole {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items").filter(|i| i.is_object()) {
                for v in items {
                    drop_forced_nulls(root, item, v, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Checks `value` against `schema` (the JSON Schema keywords tools use: types, `enum`,
/// `const`, objects, arrays, the combinators, bounds, lengths, `pattern`); `Err` names the
/// place and the rule.
fn check(
    root: &Value,
    schema: &Value,
    value: &Value,
    at: &str,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let schema = resolve(root, schema);
    let Some(map) = schema.as_object() else {
        return match schema {
            Value::Bool(false) => Err(format!("{} takes nothing", place(at))),
            _ => Ok(()),
        };
    };
    let fail = |rule: String| Err(format!("{} {rule}", place(at)));
    let types = types_of(map);
    if !types.is_empty() && !types.iter().any(|t| is_type(value, t)) {
        return fail(format!(
            "must be {}, not {}",
            types.join(" or "),
            short_json(value)
        ));
    }
    if let Some(Value::Array(values)) = map.get("enum")
        && !values.contains(value)
    {
        return fail(format!(
            "must be one of {}",
            short_json(&Value::Array(values.clone()))
        ));
    }
    if let Some(constant) = map.get("const")
        && constant != value
    {
        return fail(format!("must be {}", short_json(constant)));
    }
    for part in map
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check(root, part, value, at, depth + 1)?;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let fits = branches
                .iter()
                .filter(|b| check(root, b, value, at, depth + 1).is_ok())
                .count();
            if fits == 0 || (key == "oneOf" && fits > 1) {
                return fail(format!(
                    "must fit {} of its forms ({key})",
                    if key == "oneOf" { "exactly one" } else { "one" }
                ));
            }
        }
    }
    if let Some(not) = map.get("not")
        && check(root, not, value, at, depth + 1).is_ok()
    {
        return fail(format!("must not be {}", short_json(not)));
    }
    match value {
        Value::Object(object) => {
            let properties = map.get("properties").and_then(Value::as_object);
            for name in map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = name.as_str()
                    && !object.contains_key(name)
                {
                    return fail(format!("needs the property {name:?}"));
                }
            }
            for (name, v) in object {
                let here = format!("{at}/{name}");
                match (
                    properties.and_then(|p| p.get(name)),
                    map.get("additionalProperties"),
                ) {
                    (Some(p), _) => check(root, p, v, &here, depth + 1)?,
                    (None, Some(Value::Bool(false))) => {
                        return fail(format!("has no property {name:?}"));
                    }
                    (None, Some(extra)) => check(root, extra, v, &here, depth + 1)?,
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = map.get("items").filter(|i| i.is_object()) {
                for (i, v) in items.iter().enumerate() {
                    check(root, item, v, &format!("{at}/{i}"), depth + 1)?;
                }
            }
            let n = items.len() as f64;
            if map
                .get("minItems")
                .and_then(Value::as_f64)
                .is_some_and(|m| n < m)
            {
                return fail("has too few items (minItems)".into());
            }
            if map
                .get("maxItems")
                .and_then(Value::as_f64)
                .is_some_and(|m| n > m)
            {
                return fail("has too many items (maxItems)".into());
            }
        }
        Value::String(text) => {
            let n = text.chars().count() as f64;
            if map
                .get("minLength")
                .and_then(Value::as_f64)
                .is_some_and(|m| n < m)
            {
                return fail("is too short (minLength)".into());
            }
            if map
                .get("maxLength")
                .and_then(Value::as_f64)
                .is_some_and(|m| n > m)
            {
                return fail("is too long (maxLength)".into());
            }
            if let Some(pattern) = map.get("pattern").and_then(Value::as_str)
                && regex::Regex::new(pattern).is_ok_and(|r| !r.is_match(text))
            {
                return fail(format!("must match the pattern {pattern}"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let bound = |k: &str| map.get(k).and_then(Value::as_f64);
            if bound("minimum").is_some_and(|m| x < m)
                || bound("maximum").is_some_and(|m| x > m)
                || bound("exclusiveMinimum").is_some_and(|m| x <= m)
                || bound("exclusiveMaximum").is_some_and(|m| x >= m)
            {
                return fail(format!("is out of its bounds: {x}"));
            }
        }
        _ => {}
    }
    Ok(())
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn place(at: &str) -> String {
    if at.is_empty() {
        "the arguments".into()
    } else {
        format!("{at:?}")
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
        let back = Arguments::map_back(&schema, json!({"q": "x", "limit": null, "filter": null}));
        assert_eq!(back, Ok(json!({"q": "x"})));
        let refused = Arguments::map_back(&schema, json!({"q": 3})).unwrap_err();
        assert!(refused.contains("\"/q\" must be string"), "{refused}");
        let refused = Arguments::map_back(&schema, json!({"limit": 1})).unwrap_err();
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
            Arguments::map_back(&schema, json!({"x": null})),
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
