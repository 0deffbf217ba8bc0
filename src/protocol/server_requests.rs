//! What a server asks of the embedder, typed: elicitation (a form, or a URL to visit) and
//! sampling (a message from the embedder's model).
//!
//! The embedder's typed handler
//! ([`Handlers::with_elicitation`](crate::Handlers::with_elicitation),
//! [`Handlers::with_sampling`](crate::Handlers::with_sampling)) answers them: the server's
//! params are read into a typed request (one that does not fit is the server's error, -32602,
//! and the embedder never sees it), and the answer is checked before it is sent: a form
//! answer must fit the requested schema
//! (its primitive properties: types, `required`, `enum`, and each property's constraints:
//! lengths, `pattern`, `format`, bounds, how many choices), else the server gets an error
//! (-32603) instead of a bad answer, and the embedder a warning in the log. The embedder can
//! check an answer first with [`FormRequest::check`]. Every request keeps the params as sent
//! (`raw`). Server text (messages, titles, URLs) is the server's: escape it to show it
//! ([`crate::safe_text::escape_controls`]); the library never opens a URL.

use super::types::Tool;
use crate::transport::BoxFuture;
use crate::wire::jsonrpc::{self, ErrorObject};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Most properties a form may ask for; a larger schema is refused.
pub const MAX_FORM_FIELDS: usize = 256;

/// The type of one form field, from its primitive schema.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Any string (`format`, `minLength`, `maxLength`, `pattern` are in the field's schema).
    Text,
    /// A number.
    Number,
    /// A whole number.
    Integer,
    /// True or false.
    Boolean,
    /// One of these strings (`enum`, or the `const` of each `oneOf`).
    Choice(Vec<String>),
    /// Any of these strings, as an array (`items.enum`, or the `const` of each `items.anyOf`).
    Choices(Vec<String>),
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FormField {
    /// The property's name: the key of its value in the answer.
    pub name: String,
    /// What it takes.
    pub kind: FieldKind,
    /// Whether the answer must have it.
    pub required: bool,
    /// Its title, if given (server text).
    pub title: Option<String>,
    /// Its description, if given (server text).
    pub description: Option<String>,
    /// Its default, if given.
    pub default: Option<Value>,
    /// Its schema, as given.
    pub schema: Value,
}

/// A form the server asks the user to fill in (`elicitation/create`, mode `form`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FormRequest {
    /// What the server says the form is for (server text).
    pub message: String,
    /// The fields, by name.
    pub fields: Vec<FormField>,
    /// The requested schema, as given.
    pub requested_schema: Value,
}

/// A page the server asks the user to visit (`elicitation/create`, mode `url`): for what
/// must not pass through the client (a login, a payment). The library never opens it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UrlRequest {
    /// Why (server text).
    pub message: String,
    /// The URL, as given (checked: `https`, or `http`; no control characters).
    pub url: String,
    /// Its origin (`scheme://host[:port]`), what a user should be shown before they go.
    pub origin: String,
    /// The server's id of the elicitation (2025-11-25), if given.
    pub elicitation_id: Option<String>,
}

/// What a server asks in an `elicitation/create`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Fill in a form.
    Form(FormRequest),
    /// Visit a URL.
    Url(UrlRequest),
}

/// An `elicitation/create` request, typed, with its params as sent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// What is asked.
    pub kind: ElicitationKind,
    /// The params as the server sent them.
    pub raw: Value,
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Accepted: for a form, the values (checked against its schema before they are sent);
    /// for a URL, an empty map (the user agreed to go).
    Accept(Map<String, Value>),
    /// Refused.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl ElicitationAnswer {
    /// Accepts with `content`, a JSON object of the form's values by name (`json!({"name":
    /// "Ada"})`; `json!({})` for a URL). Ready to return from an elicitation handler: anything
    /// but an object is an `Err` that says so, which goes to the server as the client's error
    /// (-32603) instead of an answer.
    pub fn accept(content: Value) -> Result<ElicitationAnswer, ErrorObject> {
        match content {
            Value::Object(values) => Ok(ElicitationAnswer::Accept(values)),
            other => Err(ErrorObject::new(
                jsonrpc::INTERNAL_ERROR,
                format!(
                    "the client's answer was not sent: an accepted elicitation's content must be a JSON object of the form's values by name, not {}",
                    json_kind(&other)
                ),
            )),
        }
    }

    /// The `elicitation/create` result.
    pub fn to_result(&self) -> Value {
        match self {
            ElicitationAnswer::Accept(content) if content.is_empty() => json!({"action": "accept"}),
            ElicitationAnswer::Accept(content) => json!({"action": "accept", "content": content}),
            ElicitationAnswer::Decline => json!({"action": "decline"}),
            ElicitationAnswer::Cancel => json!({"action": "cancel"}),
        }
    }
}

/// What kind of JSON value `value` is, as an error names it.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Why an answer does not fit a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError(pub String);

impl std::fmt::Display for FormError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the answer does not fit the form: {}", self.0)
    }
}

impl std::error::Error for FormError {}

impl FormRequest {
    /// Reads a form from its `requestedSchema`: an object schema of primitive properties.
    pub(crate) fn from_schema(message: String, schema: Value) -> Result<FormRequest, String> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("requestedSchema is not of type object".into());
        }
        let empty = Map::new();
        let properties = match schema.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err("requestedSchema's properties is not an object".into()),
        };
        if properties.len() > MAX_FORM_FIELDS {
            return Err(format!("the form has more than {MAX_FORM_FIELDS} fields"));
        }
        let required: Vec<&str> = match schema.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err("requestedSchema's required is not an array".into()),
        };
        let mut fields = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            let text = |key: &str| property.get(key).and_then(Value::as_str).map(String::from);
            fields.push(FormField {
                name: name.clone(),
                kind: field_kind(property).ok_or_else(|| {
                    format!("property {name:?} is not of a primitive type a form takes")
                })?,
                required: required.contains(&name.as_str()),
                title: text("title"),
                description: text("description"),
                default: property.get("default").cloned(),
                schema: property.clone(),
            });
        }
        Ok(FormRequest {
            message,
            fields,
            requested_schema: schema,
        })
    }

    /// Checks an answer against the form: every required field there, no field the form
    /// does not have, each value of its field's type (and among its choices), and within
    /// every constraint its schema sets: `minLength`, `maxLength`, `pattern` and `format`
    /// (`email`, `uri`, `date`, `date-time`) of a string, `minimum`, `maximum`,
    /// `exclusiveMinimum` and `exclusiveMaximum` of a number, `minItems` and `maxItems` of a
    /// choice of several. The error names the field and the rule it breaks.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), FormError> {
        for field in &self.fields {
            if field.required && !content.contains_key(&field.name) {
                return Err(FormError(format!("{:?} is required", field.name)));
            }
        }
        for (name, value) in content {
            let Some(field) = self.fields.iter().find(|f| f.name == *name) else {
                return Err(FormError(format!("the form has no field {name:?}")));
            };
            if let Err(why) = field.unfit(value) {
                return Err(FormError(format!("{name:?} {why}")));
            }
        }
        Ok(())
    }
}

impl FormField {
    /// Why `value` does not fit this field (its type, its choices, its constraints), in
    /// words that follow the field's name ("takes a number, not ...", "needs at least 2
    /// characters (minLength 2)"); `Ok` when it fits.
    pub(crate) fn unfit(&self, value: &Value) -> Result<(), String> {
        let fits = match (&self.kind, value) {
            (FieldKind::Text, Value::String(_)) | (FieldKind::Boolean, Value::Bool(_)) => true,
            (FieldKind::Number, Value::Number(_)) => true,
            (FieldKind::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            (FieldKind::Choice(choices), Value::String(s)) => choices.contains(s),
            (FieldKind::Choices(choices), Value::Array(items)) => items
                .iter()
                .all(|i| i.as_str().is_some_and(|s| choices.iter().any(|c| c == s))),
            _ => false,
        };
        if !fits {
            return Err(format!("takes {}, not {value}", describe(&self.kind)));
        }
        within_constraints(&self.schema, value)
    }
}

/// Longest `pattern` compiled; a longer one is left to the server.
const MAX_PATTERN: usize = 4096;

/// Whether `value` (already of its field's type) keeps every constraint of the field's
/// `schema`; else what it needs and the rule, as "needs at least 2 characters (minLength 2)".
fn within_constraints(schema: &Value, value: &Value) -> Result<(), String> {
    let limit = |key: &str| schema.get(key).and_then(Value::as_f64);
    let broken = |rule: &str, bound: &dyn std::fmt::Display, needs: String| {
        Err(format!("{needs} ({rule} {bound})"))
    };
    match value {
        Value::String(text) => {
            // Characters as JSON Schema counts them: code points.
            let chars = text.chars().count() as f64;
            if let Some(min) = limit("minLength").filter(|&m| chars < m) {
                return broken(
                    "minLength",
                    &min,
                    format!("needs at least {min} characters"),
                );
            }
            if let Some(max) = limit("maxLength").filter(|&m| chars > m) {
                return broken("maxLength", &max, format!("takes at most {max} characters"));
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
                && let Some(regex) = pattern_regex(pattern)
                && !regex.is_match(text)
            {
                let shown = crate::safe_text::escape_controls(pattern);
                return broken("pattern", &shown, "must match the pattern".into());
            }
            if let Some(format) = schema.get("format").and_then(Value::as_str)
                && let Some(example) = format_example(format)
                && !has_format(format, text)
            {
                return broken("format", &format, format!("must be {example}"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = limit("minimum").filter(|&m| x < m) {
                return broken("minimum", &min, format!("needs at least {min}"));
            }
            if let Some(max) = limit("maximum").filter(|&m| x > m) {
                return broken("maximum", &max, format!("takes at most {max}"));
            }
            if let Some(min) = limit("exclusiveMinimum").filter(|&m| x <= m) {
                return broken("exclusiveMinimum", &min, format!("needs more than {min}"));
            }
            if let Some(max) = limit("exclusiveMaximum").filter(|&m| x >= m) {
                return broken("exclusiveMaximum", &max, format!("takes less than {max}"));
            }
        }
        Value::Array(items) => {
            let count = items.len() as f64;
            if let Some(min) = limit("minItems").filter(|&m| count < m) {
                return broken(
                    "minItems",
                    &min,
                    format!("needs at least {min} of its choices"),
                );
            }
            if let Some(max) = limit("maxItems").filter(|&m| count > m) {
                return broken(
                    "maxItems",
                    &max,
                    format!("takes at most {max} of its choices"),
                );
            }
        }
        _ => {}
    }
    Ok(())
}

/// A schema's `pattern` (ECMA-262, as JSON Schema says) as this client can run it, in linear
/// time and bounded size; `None` for one it cannot (lookaround, backreferences, too large),
/// which is left to the server. It matches anywhere in the string unless anchored, as JSON
/// Schema's `pattern` does; `\d` and `\w` also take non-ASCII digits and letters here.
pub(crate) fn pattern_regex(pattern: &str) -> Option<regex::Regex> {
    if pattern.len() > MAX_PATTERN {
        return None;
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .nest_limit(64)
        .build()
        .ok()
}

/// Whether `text` is of the string `format` (`email`, `uri`, `date`, `date-time`, as a form
/// may ask for them); a format not among them is not checked.
pub(crate) fn has_format(format: &str, text: &str) -> bool {
    match format {
        "email" => is_email(text),
        "uri" => is_uri(text),
        "date" => is_date(text),
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(day, time)| is_date(day) && is_time(time)),
        _ => true,
    }
}

/// What a string of a checked format looks like, for a field's help and its error; `None`
/// for a format not checked.
pub(crate) fn format_example(format: &str) -> Option<&'static str> {
    Some(match format {
        "email" => "an email address, like ada@example.com",
        "uri" => "a URI, like https://example.com",
        "date" => "a date, like 2026-07-28",
        "date-time" => "a date and time, like 2026-07-28T10:30:00Z",
        _ => return None,
    })
}

/// `local@domain` (RFC 5321's addr-spec, without quoted local parts or address literals):
/// a local part of atoms, a domain of two or more labels.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let atom = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let label = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    !local.is_empty()
        && local
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(atom))
        && domain.split('.').count() >= 2
        && domain.split('.').all(label)
}

/// An absolute URI (RFC 3986): a scheme, `:`, then characters a URI may hold, each `%`
/// starting an escape of two hex digits.
fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c);
    let escapes_whole = text.match_indices('%').all(|(at, _)| {
        text.get(at + 1..at + 3)
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && rest.chars().all(allowed)
        && escapes_whole
}

/// RFC 3339's full-date: `YYYY-MM-DD`, a day that month has.
fn is_date(text: &str) -> bool {
    let number = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok())?
    };
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (number(y, 4), number(m, 2), number(d, 2)) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// RFC 3339's full-time: `hh:mm:ss`, an optional fraction, then `Z` or an offset `±hh:mm`.
fn is_time(text: &str) -> bool {
    let two = |s: &str, max: u32| {
        s.len() == 2
            && s.bytes().all(|b| b.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|n| n <= max)
    };
    let (time, offset) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => return false,
    };
    let offset_ok = matches!(offset, "Z" | "z")
        || offset[1..]
            .split_once(':')
            .is_some_and(|(h, m)| two(h, 23) && two(m, 59));
    let (clock, fraction) = match time.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (time, None),
    };
    let mut parts = clock.split(':');
    let clock_ok = matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(h), Some(m), Some(s), None) if two(h, 23) && two(m, 59) && two(s, 60)
    );
    clock_ok
        && offset_ok
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

fn describe(kind: &FieldKind) -> String {
    match kind {
        FieldKind::Text => "a string".into(),
        FieldKind::Number => "a number".into(),
        FieldKind::Integer => "an integer".into(),
        FieldKind::Boolean => "true or false".into(),
        FieldKind::Choice(c) => format!("one of {c:?}"),
        FieldKind::Choices(c) => format!("an array of {c:?}"),
    }
}

/// The strings of an `enum`, or the `const` of each entry of a `oneOf`/`anyOf`.
fn choices(schema: &Value, list: &str) -> Option<Vec<String>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(|v| v.as_str().map(String::from))
            .collect();
    }
    let options = schema.get(list)?.as_array()?;
    options
        .iter()
        .map(|o| o.get("const").and_then(Value::as_str).map(String::from))
        .collect()
}

fn field_kind(property: &Value) -> Option<FieldKind> {
    match property.get("type").and_then(Value::as_str)? {
        "string" => match choices(property, "oneOf") {
            Some(c) => Some(FieldKind::Choice(c)),
            None if property.get("enum").is_some() || property.get("oneOf").is_some() => None,
            None => Some(FieldKind::Text),
        },
        "number" => Some(FieldKind::Number),
        "integer" => Some(FieldKind::Integer),
        "boolean" => Some(FieldKind::Boolean),
        "array" => choices(property.get("items")?, "anyOf").map(FieldKind::Choices),
        _ => None,
    }
}

/// The origin (`scheme://host[:port]`) a browser loads for an `http` or `https` URL, as the
/// WHATWG URL standard computes it (non-ASCII hosts in their `xn--` form); `Err` says why the
/// URL is refused: another scheme, or a form that could be read as another host
/// ([`crate::web_url`]).
pub(crate) fn url_origin(url: &str) -> Result<String, String> {
    crate::web_url::Origin::of(url).map(|origin| origin.to_string())
}

impl ElicitationRequest {
    /// Reads `elicitation/create` params (no `mode`: a form, as before 2025-11-25).
    pub(crate) fn from_params(params: Value) -> Result<ElicitationRequest, String> {
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(String::from);
        let message = text("message").ok_or("the request has no message")?;
        let kind = match params.get("mode").and_then(Value::as_str) {
            None | Some("form") => {
                let schema = params
                    .get("requestedSchema")
                    .cloned()
                    .ok_or("a form request has no requestedSchema")?;
                ElicitationKind::Form(FormRequest::from_schema(message, schema)?)
            }
            Some("url") => {
                let url = text("url").ok_or("a URL request has no url")?;
                let origin = url_origin(&url)?;
                ElicitationKind::Url(UrlRequest {
                    message,
                    url,
                    origin,
                    elicitation_id: text("elicitationId"),
                })
            }
            Some(other) => return Err(format!("unknown elicitation mode {other:?}")),
        };
        Ok(ElicitationRequest { kind, raw: params })
    }

    /// Checks an answer: a form's values against its schema; a URL's acceptance carries none.
    pub fn check(&self, answer: &ElicitationAnswer) -> Result<(), FormError> {
        match (&self.kind, answer) {
            (ElicitationKind::Form(form), ElicitationAnswer::Accept(content)) => {
                form.check(content)
            }
            (ElicitationKind::Url(_), ElicitationAnswer::Accept(content))
                if !content.is_empty() =>
            {
                Err(FormError(
                    "a URL elicitation is accepted with no values".into(),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// One message of a sampling request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// `user` or `assistant` (server text).
    pub role: String,
    /// Its content blocks, as given (one block is a list of one).
    pub content: Vec<Value>,
}

impl SamplingMessage {
    /// Its text blocks, joined with newlines (other blocks left out).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }
}

/// A `sampling/createMessage` request, typed, with its params as sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation to continue.
    pub messages: Vec<SamplingMessage>,
    /// The server's system prompt, if any (the embedder may change or drop it).
    pub system_prompt: Option<String>,
    /// The most tokens to sample.
    pub max_tokens: Option<u64>,
    /// The temperature asked for.
    pub temperature: Option<f64>,
    /// Where to stop.
    pub stop_sequences: Vec<String>,
    /// Tools the model may use (2025-11-25; only when the embedder declared
    /// [`Handlers::sampling_tools`](super::session::Handlers::sampling_tools)).
    pub tools: Vec<Tool>,
    /// How the model may use them (`auto`, `required`, `none`), if said.
    pub tool_choice: Option<String>,
    /// The params as the server sent them (model preferences, include context, metadata).
    pub raw: Value,
}

impl SamplingRequest {
    /// Reads `sampling/createMessage` params.
    pub(crate) fn from_params(params: Value) -> Result<SamplingRequest, String> {
        let messages = params
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("the request has no messages")?
            .iter()
            .map(|m| {
                let role = m
                    .get("role")
                    .and_then(Value::as_str)
                    .ok_or("a message has no role")?;
                let content = match m.get("content") {
                    Some(Value::Array(blocks)) => blocks.clone(),
                    Some(block @ Value::Object(_)) => vec![block.clone()],
                    _ => return Err("a message has no content"),
                };
                Ok(SamplingMessage {
                    role: role.to_string(),
                    content,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tools = match params.get("tools") {
            None | Some(Value::Null) => Vec::new(),
            // A tool keeps its members as text: read from text, not from a `Value`.
            Some(tools) => serde_json::from_str::<Vec<Tool>>(&tools.to_string())
                .map_err(|e| format!("the request's tools: {e}"))?,
        };
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(String::from);
        Ok(SamplingRequest {
            messages,
            system_prompt: text("systemPrompt"),
            max_tokens: params.get("maxTokens").and_then(Value::as_u64),
            temperature: params.get("temperature").and_then(Value::as_f64),
            stop_sequences: params
                .get("stopSequences")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            tool_choice: params
                .pointer("/toolChoice/mode")
                .and_then(Value::as_str)
                .map(String::from),
            tools,
            raw: params,
        })
    }
}

/// The embedder's sampled message: [`SamplingAnswer::text`], or [`SamplingAnswer::new`] for
/// other content.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingAnswer {
    /// Its content blocks (a text block: `{"type": "text", "text": ...}`).
    pub content: Vec<Value>,
    /// The model that wrote it.
    pub model: String,
    /// Why sampling stopped (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`), if known.
    pub stop_reason: Option<String>,
}

impl SamplingAnswer {
    /// An answer of `content` blocks written by `model`, with no stop reason.
    pub fn new(content: Vec<Value>, model: impl Into<String>) -> SamplingAnswer {
        SamplingAnswer {
            content,
            model: model.into(),
            stop_reason: None,
        }
    }

    /// With the stop reason `reason` (`endTurn`, `stopSequence`, `maxTokens`, `toolUse`).
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> SamplingAnswer {
        self.stop_reason = Some(reason.into());
        self
    }

    /// A text answer (stop reason `endTurn`).
    pub fn text(text: &str, model: &str) -> SamplingAnswer {
        SamplingAnswer::new(vec![json!({"type": "text", "text": text})], model)
            .with_stop_reason("endTurn")
    }

    /// The `sampling/createMessage` result (one block as itself, several as an array).
    pub fn to_result(&self) -> Value {
        let content = match self.content.as_slice() {
            [one] => one.clone(),
            many => Value::Array(many.to_vec()),
        };
        let mut result = json!({"role": "assistant", "content": content, "model": self.model});
        if let Some(reason) = &self.stop_reason {
            result["stopReason"] = json!(reason);
        }
        result
    }
}

/// A typed elicitation handler, as [`Handlers`](super::session::Handlers) keeps it: set it
/// with [`Handlers::with_elicitation`](super::session::Handlers::with_elicitation). An `Err`
/// goes to the server as its JSON-RPC error.
pub type ElicitationFn = Arc<
    dyn Fn(ElicitationRequest) -> BoxFuture<'static, Result<ElicitationAnswer, ErrorObject>>
        + Send
        + Sync,
>;

/// A typed sampling handler, as [`Handlers`](super::session::Handlers) keeps it: set it with
/// [`Handlers::with_sampling`](super::session::Handlers::with_sampling). An `Err` goes to the
/// server as its JSON-RPC error.
pub type SamplingFn = Arc<
    dyn Fn(SamplingRequest) -> BoxFuture<'static, Result<SamplingAnswer, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers `elicitation/create` with the embedder's typed handler: the request read (a bad
/// one is the server's -32602, and the handler never sees it), the answer checked (one that
/// does not fit the form is -32603 to the server and a warning here).
pub(crate) async fn answer_elicitation(
    handler: &ElicitationFn,
    params: Value,
) -> Result<Value, ErrorObject> {
    let request = ElicitationRequest::from_params(params)
        .map_err(|why| ErrorObject::new(jsonrpc::INVALID_PARAMS, why))?;
    // The form alone is kept to check the answer: the params may be large.
    let checked = ElicitationRequest {
        kind: request.kind.clone(),
        raw: Value::Null,
    };
    let answer = handler(request).await?;
    if let Err(e) = checked.check(&answer) {
        tracing::warn!("not sending the elicitation answer: {e}");
        return Err(ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            format!("the client's answer was not sent: {e}"),
        ));
    }
    Ok(answer.to_result())
}

/// Answers `sampling/createMessage` with the embedder's typed handler: the request read (a
/// bad one, or one with tools when `tools` is false, is the server's -32602).
pub(crate) async fn answer_sampling(
    handler: &SamplingFn,
    tools: bool,
    params: Value,
) -> Result<Value, ErrorObject> {
    let request = SamplingRequest::from_params(params)
        .map_err(|why| ErrorObject::new(jsonrpc::INVALID_PARAMS, why))?;
    let asks_tools = !request.tools.is_empty() || request.raw.get("toolChoice").is_some();
    if asks_tools && !tools {
        let why = "this client did not declare sampling.tools";
        return Err(ErrorObject::new(jsonrpc::INVALID_PARAMS, why));
    }
    Ok(handler(request).await?.to_result())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Handlers;

    fn form() -> FormRequest {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer", "minimum": 0},
            "ok": {"type": "boolean", "default": true},
            "color": {"type": "string", "enum": ["red", "green"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
        }, "required": ["name"]});
        FormRequest::from_schema("Who?".into(), schema).unwrap()
    }

    #[test]
    fn a_form_answer_is_checked_against_its_schema() {
        let form = form();
        assert_eq!(form.fields.len(), 6);
        let field = |name: &str| form.fields.iter().find(|f| f.name == name).unwrap();
        assert!(field("name").required && !field("age").required);
        let answer = |v: Value| v.as_object().unwrap().clone();
        assert!(form.check(&answer(json!({"name": "Ada", "age": 36, "ok": false, "color": "red", "size": "l", "tags": ["a"]}))).is_ok());
        for bad in [
            json!({}),
            json!({"name": 1}),
            json!({"name": "x", "age": 1.5}),
            json!({"name": "x", "color": "blue"}),
            json!({"name": "x", "size": "Small"}),
            json!({"name": "x", "tags": ["c"]}),
            json!({"name": "x", "other": 1}),
        ] {
            assert!(form.check(&answer(bad.clone())).is_err(), "{bad}");
        }
        let nested = json!({"type": "object", "properties": {"o": {"type": "object"}}});
        assert!(FormRequest::from_schema("m".into(), nested).is_err());
    }

    #[test]
    fn every_constraint_of_a_field_is_checked_and_named() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5},
            "code": {"type": "string", "pattern": "^[a-z]+-[0-9]{2}$"},
            "mail": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "tags": {"type": "array", "minItems": 1, "maxItems": 2,
                     "items": {"type": "string", "enum": ["a", "b", "c"]}},
            "lookahead": {"type": "string", "pattern": "^(?=.*[A-Z]).{8,}$"}
        }});
        let form = FormRequest::from_schema("m".into(), schema).unwrap();
        let answer = |v: Value| v.as_object().unwrap().clone();
        let good = json!({"name": "Ada", "code": "ab-12", "mail": "ada@example.com",
            "site": "https://example.com/a?b=%20", "day": "2024-02-29",
            "at": "2026-07-28T10:30:00.5+02:00", "age": 150, "ratio": 0.5, "tags": ["a", "c"],
            "lookahead": "no capitals: left to the server"});
        assert_eq!(form.check(&answer(good)), Ok(()));
        for (bad, field, rule) in [
            (json!({"name": "A"}), "name", "minLength 2"),
            (json!({"name": "Adaline"}), "name", "maxLength 5"),
            (json!({"name": "Ad\u{301}a\u{301}"}), "name", ""),
            (
                json!({"code": "AB-12"}),
                "code",
                "pattern ^[a-z]+-[0-9]{2}$",
            ),
            (json!({"code": "ab-123"}), "code", "pattern"),
            (json!({"mail": "ada@localhost"}), "mail", "format email"),
            (json!({"mail": "a b@example.com"}), "mail", "format email"),
            (json!({"site": "example.com"}), "site", "format uri"),
            (json!({"site": "https://a b"}), "site", "format uri"),
            (json!({"site": "https://a/%zz"}), "site", "format uri"),
            (json!({"day": "2023-02-29"}), "day", "format date"),
            (json!({"day": "2026-7-28"}), "day", "format date"),
            (
                json!({"at": "2026-07-28T25:00:00Z"}),
                "at",
                "format date-time",
            ),
            (json!({"at": "2026-07-28T10:30"}), "at", "format date-time"),
            (json!({"at": "2026-07-28"}), "at", "format date-time"),
            (json!({"age": -1}), "age", "minimum 0"),
            (json!({"age": 151}), "age", "maximum 150"),
            (json!({"ratio": 0}), "ratio", "exclusiveMinimum 0"),
            (json!({"ratio": 1}), "ratio", "exclusiveMaximum 1"),
            (json!({"tags": []}), "tags", "minItems 1"),
            (json!({"tags": ["a", "b", "c"]}), "tags", "maxItems 2"),
        ] {
            let result = form.check(&answer(bad.clone()));
            if rule.is_empty() {
                // Five code points, though three letters show: JSON Schema counts code points.
                assert_eq!(result, Ok(()), "{bad}");
                continue;
            }
            let why = result.expect_err(&bad.to_string()).0;
            assert!(
                why.starts_with(&format!("{field:?} ")) && why.contains(&format!("({rule}")),
                "{bad}: {why}"
            );
        }
    }

    #[test]
    fn url_requests_carry_their_origin() {
        let params = json!({"mode": "url", "message": "Log in", "elicitationId": "e1",
                            "url": "https://Example.COM:8443/path?q=1"});
        let request = ElicitationRequest::from_params(params).unwrap();
        let ElicitationKind::Url(url) = &request.kind else {
            panic!("a URL request")
        };
        assert_eq!(url.origin, "https://example.com:8443");
        assert_eq!(url.elicitation_id.as_deref(), Some("e1"));
        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://a\u{1b}b/",
            "https:///x",
            "https://evil.example\\@good.example/login",
            "https://user@example.com/",
        ] {
            assert!(url_origin(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_bad_answer_is_an_error_to_the_server() {
        let handlers = Handlers::default()
            .with_elicitation(|_| async { ElicitationAnswer::accept(json!({"name": 5})) });
        let handler = handlers.elicitation.as_ref().unwrap();
        let params = json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}}});
        let e = answer_elicitation(handler, params).await.unwrap_err();
        assert_eq!(e.code, jsonrpc::INTERNAL_ERROR);
        let url = json!({"mode": "url", "message": "m", "url": "ftp://x"});
        let e = answer_elicitation(handler, url).await.unwrap_err();
        assert_eq!(e.code, jsonrpc::INVALID_PARAMS);
    }

    #[test]
    fn accept_takes_an_object_and_refuses_anything_else_by_name() {
        assert_eq!(
            ElicitationAnswer::accept(json!({"name": "Ada"})),
            Ok(ElicitationAnswer::Accept(
                json!({"name": "Ada"}).as_object().unwrap().clone()
            ))
        );
        let e = ElicitationAnswer::accept(json!("Ada")).unwrap_err();
        assert_eq!(e.code, jsonrpc::INTERNAL_ERROR);
        assert!(e.message.contains("must be a JSON object"), "{}", e.message);
        assert!(e.message.ends_with("not a string"), "{}", e.message);
    }

    #[tokio::test]
    async fn sampling_reads_messages_and_refuses_tools_it_did_not_declare() {
        let handlers = Handlers::default().with_sampling(|request: SamplingRequest| async move {
            let last = request
                .messages
                .last()
                .map(SamplingMessage::text)
                .unwrap_or_default();
            Ok(SamplingAnswer::text(&format!("re: {last}"), "test-model"))
        });
        let typed = handlers.sampling.as_ref().unwrap();
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                            "maxTokens": 10});
        let answer = answer_sampling(typed, false, params.clone()).await.unwrap();
        assert_eq!(
            answer,
            json!({"role": "assistant", "content": {"type": "text", "text": "re: hi"},
                                  "model": "test-model", "stopReason": "endTurn"})
        );
        let mut with_tools = params;
        with_tools["tools"] = json!([{"name": "t", "inputSchema": {"type": "object"}}]);
        let e = answer_sampling(typed, false, with_tools.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code, jsonrpc::INVALID_PARAMS);
        assert!(answer_sampling(typed, true, with_tools).await.is_ok());
    }
}
