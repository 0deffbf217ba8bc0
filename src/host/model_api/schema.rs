//! The rewriting of a schema for each target (see the parent module): the self-contained
//! form every target starts from, then the JSON Schema, OpenAI strict and Gemini forms.

use super::MAX_DEPTH;
use crate::protocol::server_requests::pattern_regex;
use serde_json::{Map, Value, json};

/// How many times one `$ref` is expanded along a path before it is cut (recursion).
pub const MAX_REF_DEPTH: usize = 2;

/// OpenAI strict mode's documented limits: properties in all, nesting, the characters of
/// names, enum values and consts, enum values in all.
const STRICT_MAX_PROPERTIES: usize = 5000;
const STRICT_MAX_NESTING: usize = 10;
const STRICT_MAX_CHARS: usize = 120_000;
const STRICT_MAX_ENUM_VALUES: usize = 1000;

/// What a local `$ref` points at in `root`: a JSON pointer (`#`, `#/$defs/Node`), or a plain
/// name (`#point`) of a schema's `$anchor` (or a draft-7 `$id` of `#point`).
pub(super) fn local_target<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() || fragment.starts_with('/') {
        return root.pointer(fragment);
    }
    fn find<'a>(schema: &'a Value, anchor: &str, depth: usize) -> Option<&'a Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match schema {
            Value::Object(map) => {
                let id = map.get("$id").and_then(Value::as_str);
                if map.get("$anchor").and_then(Value::as_str) == Some(anchor)
                    || id.and_then(|id| id.strip_prefix('#')) == Some(anchor)
                {
                    return Some(schema);
                }
                map.values().find_map(|v| find(v, anchor, depth + 1))
            }
            Value::Array(items) => items.iter().find_map(|v| find(v, anchor, depth + 1)),
            _ => None,
        }
    }
    find(root, fragment, 0)
}

/// `schema` self-contained (local `$ref`s inlined, the meta keywords dropped), an object at
/// the top.
pub(super) fn inlined(schema: &Value) -> Value {
    Inliner::new(schema).top()
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
        let target = local_target(self.root, reference);
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
pub(super) fn lenient(schema: &Value) -> Value {
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
pub(super) fn types_of(map: &Map<String, Value>) -> Vec<&str> {
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

/// The strict form of a self-contained schema (`inlined`, and its JSON Schema form from
/// [`lenient`]), or `None` when it cannot be made strict (an open object, a map, past the
/// size limits).
pub(super) fn strict(inlined: &Value, json_form: &Value) -> Option<Value> {
    if requires_undescribed(inlined, 0) {
        return None;
    }
    let mut budget = StrictBudget::default();
    let out = strict_node(json_form, 0, &mut budget)?;
    let within = budget.properties <= STRICT_MAX_PROPERTIES
        && budget.chars <= STRICT_MAX_CHARS
        && budget.enum_values <= STRICT_MAX_ENUM_VALUES;
    within.then_some(out)
}

/// Whether an object in `schema` that is not closed requires names it does not describe:
/// the JSON forms drop them from `required`, and a closed strict object could not take them.
fn requires_undescribed(schema: &Value, depth: usize) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    if depth > MAX_DEPTH {
        return false;
    }
    let described = |name: &str| {
        map.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(name))
    };
    let undescribed = map.get("additionalProperties") != Some(&json!(false))
        && map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|r| r.as_str().is_some_and(|r| !described(r)));
    undescribed
        || map.values().any(|v| match v {
            Value::Object(_) => requires_undescribed(v, depth + 1),
            Value::Array(items) => items.iter().any(|w| requires_undescribed(w, depth + 1)),
            _ => false,
        })
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
            "pattern" if value.as_str().and_then(pattern_regex).is_some() => {
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
            || map.get("additionalProperties") == Some(&json!(true))
            || map.contains_key("patternProperties");
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
    match map.get("items") {
        Some(items) => {
            out.insert("items".into(), strict_node(items, depth + 1, budget)?);
        }
        // An array of anything (or a tuple) cannot be said strictly.
        None if types.contains(&"array") => return None,
        None => {}
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
pub(super) fn gemini(schema: &Value) -> Value {
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
pub(super) fn short_json(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}
