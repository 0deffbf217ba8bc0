//! A model's arguments mapped back to what the server takes, and checked against the
//! server's own schema before they are sent.

use super::MAX_DEPTH;
use super::schema::{local_target, short_json, types_of};
use crate::protocol::server_requests::pattern_regex;
use serde_json::{Map, Value};

// ---- arguments back ---------------------------------------------------------------------

/// A model's arguments `sent` for the adapted schema, as the server's `schema` takes them:
/// the nulls strict mode forces on optional properties removed (where the original schema
/// does not take `null` there), then checked against the original schema. `Err` says, for
/// the model, why they cannot fit.
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
        format!(
            "the arguments do not fit the tool's input schema: {why}; send them again as it says"
        )
    })?;
    Ok(args)
}

/// Resolves a local `$ref` of `schema` (one step).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..MAX_DEPTH {
        match schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| local_target(root, r))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The one branch of `schema`'s `anyOf` or `oneOf` that describes an object's properties.
fn object_branch<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let mut branches = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .map(|b| resolve(root, b))
        .filter(|b| b.get("properties").is_some());
    match (branches.next(), branches.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn drop_forced_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let schema = resolve(root, schema);
    match value {
        Value::Object(args) => {
            // Only where the structure is known: an object schema of properties, or the one
            // branch of an `anyOf`/`oneOf` that is one.
            let schema = match schema.get("properties") {
                Some(_) => schema,
                None => match object_branch(root, schema) {
                    Some(branch) => branch,
                    None => return,
                },
            };
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
            let patterns = map.get("patternProperties").and_then(Value::as_object);
            for (name, v) in object {
                let here = format!("{at}/{name}");
                let matching: Vec<&Value> = patterns
                    .into_iter()
                    .flatten()
                    .filter(|(p, _)| pattern_regex(p).is_some_and(|r| r.is_match(name)))
                    .map(|(_, schema)| schema)
                    .collect();
                for schema in &matching {
                    check(root, schema, v, &here, depth + 1)?;
                }
                match (
                    properties.and_then(|p| p.get(name)),
                    map.get("additionalProperties"),
                ) {
                    (Some(p), _) => check(root, p, v, &here, depth + 1)?,
                    (None, _) if !matching.is_empty() => {}
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
                && pattern_regex(pattern).is_some_and(|r| !r.is_match(text))
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
