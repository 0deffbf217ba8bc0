//! JSON Schema for `check`: whether a tool's schema is one (each keyword's value of the type
//! and range the 2020-12 meta-schema gives, local `$ref`s that resolve), and whether a value
//! fits one (the assertions of the core, applicator and validation vocabularies; `format`
//! is an annotation, as 2020-12 has it by default).
//!
//! A `pattern` is an ECMA-262 regular expression; one the `regex` crate cannot read (a
//! look-around) is not called invalid, and a value is not judged by it.

use serde_json::{Map, Value};

/// How deep schemas and `$ref`s are followed: a deeper one is not judged further (a cycle of
/// `$ref`s ends here too).
const MAX_DEPTH: usize = 64;

const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// Keywords whose value is a schema.
const SCHEMA_KEYWORDS: [&str; 11] = [
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
];

/// Keywords whose value is an object of schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is a non-negative integer.
const COUNTS: [&str; 8] = [
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];

/// What makes `schema` no valid JSON Schema, with where in it, if anything.
pub fn schema_problem(schema: &Value) -> Option<String> {
    let older = schema
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            ["draft-04", "draft-06", "draft-07", "2019-09"]
                .iter()
                .any(|d| s.contains(d))
        });
    let walk = MetaWalk {
        root: schema,
        older,
    };
    walk.check(schema, "", 0).map(located)
}

/// A problem found at `at` (a JSON Pointer into the schema or the value), in words.
fn located((at, why): (String, String)) -> String {
    if at.is_empty() {
        why
    } else {
        format!("at {at}: {why}")
    }
}

struct MetaWalk<'a> {
    root: &'a Value,
    /// Declared as draft-04 to 2019-09: `items` may be an array and `exclusiveMinimum` a
    /// boolean.
    older: bool,
}

impl MetaWalk<'_> {
    fn check(&self, schema: &Value, at: &str, depth: usize) -> Option<(String, String)> {
        let object = match schema {
            Value::Bool(_) => return None,
            Value::Object(object) => object,
            _ => return Some((at.into(), "a schema must be an object or a boolean".into())),
        };
        if depth > MAX_DEPTH {
            return None;
        }
        let here = |why: String| Some((at.to_string(), why));
        for (key, value) in object {
            let sub = format!("{at}/{key}");
            let found = match key.as_str() {
                "type" => type_problem(value).and_then(here),
                "enum" if !value.is_array() => here("\"enum\" must be an array".into()),
                "required" => names_problem("required", value).and_then(here),
                // Draft-04 to 2019-09 take an array of schemas as `items`.
                "items" if self.older && value.is_array() => self.each(value, &sub, depth),
                "prefixItems" | "allOf" | "anyOf" | "oneOf" => match value.as_array() {
                    Some(list) if !list.is_empty() => self.each(value, &sub, depth),
                    _ => here(format!("\"{key}\" must be a non-empty array of schemas")),
                },
                k if k == "items" || SCHEMA_KEYWORDS.contains(&k) => {
                    self.check(value, &sub, depth + 1)
                }
                k if SCHEMA_MAPS.contains(&k) => match value.as_object() {
                    Some(map) => map.iter().find_map(|(name, inner)| {
                        self.check(inner, &format!("{sub}/{name}"), depth + 1)
                    }),
                    None => here(format!("\"{key}\" must be an object of schemas")),
                },
                k if COUNTS.contains(&k) && !is_count(value) => here(format!(
                    "\"{key}\" must be a non-negative integer, not {value}"
                )),
                "minimum" | "maximum" if !value.is_number() => {
                    here(format!("\"{key}\" must be a number, not {value}"))
                }
                "exclusiveMinimum" | "exclusiveMaximum"
                    if !(value.is_number() || self.older && value.is_boolean()) =>
                {
                    here(format!("\"{key}\" must be a number, not {value}"))
                }
                "multipleOf" if !value.as_f64().is_some_and(|n| n > 0.0) => here(format!(
                    "\"multipleOf\" must be a number above 0, not {value}"
                )),
                "uniqueItems" | "readOnly" | "writeOnly" | "deprecated" if !value.is_boolean() => {
                    here(format!("\"{key}\" must be a boolean, not {value}"))
                }
                "pattern" | "format" | "title" | "description" | "$ref" | "$id" | "$anchor"
                | "$schema" | "$comment" | "$dynamicRef" | "$dynamicAnchor"
                    if !value.is_string() =>
                {
                    here(format!("\"{key}\" must be a string, not {value}"))
                }
                "$ref" => self
                    .ref_problem(value.as_str().unwrap_or_default())
                    .and_then(here),
                "dependentRequired" => match value.as_object() {
                    Some(map) => map
                        .values()
                        .find_map(|v| names_problem(key, v))
                        .and_then(here),
                    None => here("\"dependentRequired\" must be an object".into()),
                },
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    fn each(&self, list: &Value, at: &str, depth: usize) -> Option<(String, String)> {
        let list = list.as_array()?;
        list.iter()
            .enumerate()
            .find_map(|(i, inner)| self.check(inner, &format!("{at}/{i}"), depth + 1))
    }

    /// A local `$ref` (`#...`) must point into the schema.
    fn ref_problem(&self, reference: &str) -> Option<String> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() || !pointer.starts_with('/') {
            // `#` is the root; `#name` an anchor, not judged here.
            return None;
        }
        resolve(self.root, pointer)
            .is_none()
            .then(|| format!("\"$ref\" {reference:?} points to nothing in the schema"))
    }
}

fn type_problem(value: &Value) -> Option<String> {
    let known = |v: &Value| v.as_str().is_some_and(|t| TYPES.contains(&t));
    let fine = match value {
        Value::String(_) => known(value),
        Value::Array(list) => {
            !list.is_empty()
                && list.iter().all(known)
                && list.iter().enumerate().all(|(i, v)| !list[..i].contains(v))
        }
        _ => false,
    };
    (!fine).then(|| {
        format!("\"type\" must be one of {TYPES:?} or a non-empty array of them, not {value}")
    })
}

fn names_problem(key: &str, value: &Value) -> Option<String> {
    let fine = value.as_array().is_some_and(|list| {
        list.iter().all(Value::is_string)
            && list.iter().enumerate().all(|(i, v)| !list[..i].contains(v))
    });
    (!fine).then(|| format!("\"{key}\" must be an array of distinct property names, not {value}"))
}

fn is_count(value: &Value) -> bool {
    value.as_u64().is_some() || value.as_f64().is_some_and(|n| n >= 0.0 && n.fract() == 0.0)
}

/// The schema a JSON Pointer (RFC 6901) names in `root`.
fn resolve<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    let decoded: String = percent_decode(pointer);
    root.pointer(&decoded)
}

/// `%XX` escapes of a URI fragment, decoded (a pointer in a `$ref` is a URI fragment).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(Some(h)), Some(Some(l))) = (
                bytes.get(i + 1).map(|b| hex(*b)),
                bytes.get(i + 2).map(|b| hex(*b)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where `value` does not fit `schema` (the first place found), if anywhere.
pub fn instance_problem(schema: &Value, value: &Value) -> Option<String> {
    Fit { root: schema }
        .problem(schema, value, "", 0)
        .map(located)
}

struct Fit<'a> {
    root: &'a Value,
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

/// Whether two JSON values are equal as JSON Schema counts (1 and 1.0 are).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn count(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_f64).map(|n| n as u64)
}

impl Fit<'_> {
    fn problem(
        &self,
        schema: &Value,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Option<(String, String)> {
        let schema = match schema {
            Value::Bool(true) => return None,
            Value::Bool(false) => {
                return Some((at.into(), "the schema allows nothing here".into()));
            }
            Value::Object(schema) if depth <= MAX_DEPTH => schema,
            _ => return None,
        };
        let here = |why: String| Some((at.to_string(), why));
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
            && let Some(pointer) = reference.strip_prefix('#')
        {
            let target = if pointer.is_empty() {
                Some(self.root)
            } else {
                resolve(self.root, pointer)
            };
            if let Some(target) = target
                && let Some(found) = self.problem(target, value, at, depth + 1)
            {
                return Some(found);
            }
        }
        if let Some(wanted) = schema.get("type") {
            let names: Vec<&str> = match wanted {
                Value::String(one) => vec![one.as_str()],
                Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !names.is_empty() && !names.iter().any(|n| has_type(value, n)) {
                return here(format!(
                    "{} is {}, not {}",
                    shown(value),
                    type_name(value),
                    names.join(" or ")
                ));
            }
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.iter().any(|o| same(o, value))
        {
            return here(format!(
                "{} is not one of {}",
                shown(value),
                shown(&Value::Array(options.clone()))
            ));
        }
        if let Some(constant) = schema.get("const")
            && !same(constant, value)
        {
            return here(format!("{} is not {}", shown(value), shown(constant)));
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            let Some(list) = schema.get(key).and_then(Value::as_array) else {
                continue;
            };
            let fitting = list
                .iter()
                .filter(|s| self.problem(s, value, at, depth + 1).is_none())
                .count();
            let fine = match key {
                "allOf" => fitting == list.len(),
                "anyOf" => fitting > 0,
                _ => fitting == 1,
            };
            if !fine {
                if key == "allOf"
                    && let Some(found) = list
                        .iter()
                        .find_map(|s| self.problem(s, value, at, depth + 1))
                {
                    return Some(found);
                }
                return here(format!(
                    "{} fits {fitting} of the {} schemas of {key}",
                    shown(value),
                    list.len()
                ));
            }
        }
        if let Some(not) = schema.get("not")
            && self.problem(not, value, at, depth + 1).is_none()
        {
            return here(format!("{} fits the schema of \"not\"", shown(value)));
        }
        if let Some(condition) = schema.get("if") {
            let branch = if self.problem(condition, value, at, depth + 1).is_none() {
                schema.get("then")
            } else {
                schema.get("else")
            };
            if let Some(found) = branch.and_then(|b| self.problem(b, value, at, depth + 1)) {
                return Some(found);
            }
        }
        match value {
            Value::Object(object) => self.object_problem(schema, object, at, depth),
            Value::Array(items) => self.array_problem(schema, items, at, depth),
            Value::String(text) => {
                let length = text.chars().count() as u64;
                if count(schema, "minLength").is_some_and(|min| length < min) {
                    return here(format!("{} is shorter than minLength", shown(value)));
                }
                if count(schema, "maxLength").is_some_and(|max| length > max) {
                    return here(format!("{} is longer than maxLength", shown(value)));
                }
                if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
                    && let Ok(regex) = regex::Regex::new(pattern)
                    && !regex.is_match(text)
                {
                    return here(format!(
                        "{} does not match the pattern {pattern:?}",
                        shown(value)
                    ));
                }
                None
            }
            Value::Number(number) => {
                let n = number.as_f64().unwrap_or_default();
                let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
                let broken = [
                    ("minimum", bound("minimum").is_some_and(|m| n < m)),
                    ("maximum", bound("maximum").is_some_and(|m| n > m)),
                    (
                        "exclusiveMinimum",
                        bound("exclusiveMinimum").is_some_and(|m| n <= m),
                    ),
                    (
                        "exclusiveMaximum",
                        bound("exclusiveMaximum").is_some_and(|m| n >= m),
                    ),
                    (
                        "multipleOf",
                        bound("multipleOf")
                            .is_some_and(|m| m > 0.0 && ((n / m) - (n / m).round()).abs() > 1e-9),
                    ),
                ];
                broken
                    .iter()
                    .find(|(_, broken)| *broken)
                    .and_then(|(key, _)| here(format!("{n} breaks {key} {}", schema[*key])))
            }
            _ => None,
        }
    }

    fn object_problem(
        &self,
        schema: &Map<String, Value>,
        object: &Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Option<(String, String)> {
        let here = |why: String| Some((at.to_string(), why));
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = name.as_str()
                && !object.contains_key(name)
            {
                return here(format!("{name:?} is required but missing"));
            }
        }
        let size = object.len() as u64;
        if count(schema, "minProperties").is_some_and(|min| size < min) {
            return here(format!("{size} properties, fewer than minProperties"));
        }
        if count(schema, "maxProperties").is_some_and(|max| size > max) {
            return here(format!("{size} properties, more than maxProperties"));
        }
        if let Some(map) = schema.get("dependentRequired").and_then(Value::as_object) {
            for (name, needs) in map {
                if !object.contains_key(name) {
                    continue;
                }
                for need in needs
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !object.contains_key(need) {
                        return here(format!("{name:?} is present, so {need:?} is required"));
                    }
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let patterns: Vec<(regex::Regex, &Value)> = schema
            .get("patternProperties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(p, s)| Some((regex::Regex::new(p).ok()?, s)))
            .collect();
        for (name, inner) in object {
            let sub = format!("{at}/{name}");
            if let Some(names) = schema.get("propertyNames")
                && let Some(found) =
                    self.problem(names, &Value::String(name.clone()), &sub, depth + 1)
            {
                return Some(found);
            }
            let mut matched = false;
            if let Some(property) = properties.and_then(|p| p.get(name)) {
                matched = true;
                if let Some(found) = self.problem(property, inner, &sub, depth + 1) {
                    return Some(found);
                }
            }
            for (regex, property) in &patterns {
                if regex.is_match(name) {
                    matched = true;
                    if let Some(found) = self.problem(property, inner, &sub, depth + 1) {
                        return Some(found);
                    }
                }
            }
            if !matched && let Some(additional) = schema.get("additionalProperties") {
                if additional == &Value::Bool(false) {
                    return here(format!("{name:?} is not a property the schema allows"));
                }
                if let Some(found) = self.problem(additional, inner, &sub, depth + 1) {
                    return Some(found);
                }
            }
        }
        None
    }

    fn array_problem(
        &self,
        schema: &Map<String, Value>,
        items: &[Value],
        at: &str,
        depth: usize,
    ) -> Option<(String, String)> {
        let here = |why: String| Some((at.to_string(), why));
        let size = items.len() as u64;
        if count(schema, "minItems").is_some_and(|min| size < min) {
            return here(format!("{size} items, fewer than minItems"));
        }
        if count(schema, "maxItems").is_some_and(|max| size > max) {
            return here(format!("{size} items, more than maxItems"));
        }
        if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, item) in items.iter().enumerate() {
                if items[..i].iter().any(|earlier| same(earlier, item)) {
                    return here(format!("item {i} repeats an earlier one (uniqueItems)"));
                }
            }
        }
        // 2020-12's prefixItems, or an older draft's array `items`; then the rest.
        let (prefix, rest) = match (schema.get("prefixItems"), schema.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (None, Some(Value::Array(prefix))) => {
                (prefix.as_slice(), schema.get("additionalItems"))
            }
            (_, rest) => (&[][..], rest),
        };
        for (i, item) in items.iter().enumerate() {
            let inner = prefix.get(i).or(rest);
            if let Some(found) =
                inner.and_then(|s| self.problem(s, item, &format!("{at}/{i}"), depth + 1))
            {
                return Some(found);
            }
        }
        if let Some(contains) = schema.get("contains") {
            let fitting = items
                .iter()
                .filter(|item| self.problem(contains, item, at, depth + 1).is_none())
                .count() as u64;
            let min = count(schema, "minContains").unwrap_or(1);
            if fitting < min || count(schema, "maxContains").is_some_and(|max| fitting > max) {
                return here(format!("{fitting} items fit \"contains\""));
            }
        }
        None
    }
}

/// A value as compact JSON, cut to 80 characters.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_that_break_the_meta_schema_are_named_with_where() {
        for (schema, words) in [
            (json!({"type": "strin"}), "\"type\""),
            (
                json!({"type": "object", "properties": {"a": {"type": 3}}}),
                "at /properties/a",
            ),
            (json!({"type": "object", "required": "a"}), "\"required\""),
            (
                json!({"type": "object", "required": ["a", "a"]}),
                "distinct",
            ),
            (
                json!({"properties": {"a": {"items": 4}}}),
                "/properties/a/items",
            ),
            (json!({"anyOf": []}), "non-empty"),
            (json!({"minLength": -1}), "non-negative"),
            (json!({"$ref": "#/$defs/missing"}), "points to nothing"),
            (
                json!({"items": [{"type": "string"}]}),
                "object or a boolean",
            ),
            (json!([1]), "object or a boolean"),
        ] {
            let why = schema_problem(&schema).unwrap_or_else(|| panic!("{schema} passed"));
            assert!(why.contains(words), "{schema}: {why}");
        }
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"]}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "exclusiveMinimum": 1}),
            json!({"$defs": {"x": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/x"}}}),
            json!(true),
            json!({"items": {"type": "string"}, "x-custom": 1, "minItems": 1.0}),
        ] {
            assert_eq!(schema_problem(&schema), None, "{schema}");
        }
    }

    #[test]
    fn values_are_judged_by_the_assertions() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "uniqueItems": true},
                "kind": {"enum": ["a", "b"]},
                "either": {"oneOf": [{"type": "string"}, {"type": "number"}]}
            },
            "required": ["n"],
            "additionalProperties": false,
            "$defs": {"tag": {"type": "string", "maxLength": 3}}
        });
        assert_eq!(
            instance_problem(
                &schema,
                &json!({"n": 2.0, "tags": ["x"], "kind": "a", "either": 1})
            ),
            None
        );
        for (value, words) in [
            (json!({}), "\"n\" is required"),
            (json!({"n": 0}), "minimum"),
            (json!({"n": 1.5}), "not integer"),
            (json!({"n": 1, "tags": ["long"]}), "at /tags/0"),
            (json!({"n": 1, "tags": ["a", "a"]}), "uniqueItems"),
            (json!({"n": 1, "kind": "c"}), "not one of"),
            (json!({"n": 1, "other": 1}), "\"other\" is not a property"),
            (json!({"n": 1, "either": true}), "fits 0 of the 2"),
        ] {
            let why = instance_problem(&schema, &value).unwrap_or_else(|| panic!("{value} fit"));
            assert!(why.contains(words), "{value}: {why}");
        }
    }

    #[test]
    fn a_cycle_of_refs_ends() {
        let schema = json!({"$ref": "#"});
        assert_eq!(instance_problem(&schema, &json!(1)), None);
        assert_eq!(schema_problem(&schema), None);
    }
}
