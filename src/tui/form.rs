//! What servers ask of the user, shown over whatever screen is open: an elicitation's form
//! (one field per property of its schema), a URL to visit, or a sampling request to review
//! and decline (the panel has no model). [`Requests`] holds them; keys in,
//! [`Effect::Reply`] out; drawn by `view/ask.rs`.

use super::effect::{Effect, Notice};
use super::input::{Input, Mask, key_is};
use crate::host::{Asked, MAX_WAITING, Reply, ReplyError, WaitingRequest};
use crate::protocol::server_requests::{ElicitationKind, FieldKind, FormField, FormRequest};
use crossterm::event::{KeyCode, KeyEvent};
use serde_json::{Map, Value};
use std::collections::VecDeque;

/// A request a server waits on the user for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Asking {
    /// Its id on the board.
    pub(crate) id: String,
    pub(crate) server: String,
    pub(crate) what: Ask,
    /// Why the last answer was not taken.
    pub(crate) error: Option<String>,
}

/// What is asked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ask {
    Form(FormState),
    /// A page to visit; the browser opens only after `y`.
    Url {
        message: String,
        url: String,
        origin: String,
    },
    Sampling(Review),
}

/// A sampling request as the panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Review {
    pub(crate) system: Option<String>,
    /// Each message's role and what a model would see of it.
    pub(crate) messages: Vec<(String, String)>,
    pub(crate) max_tokens: Option<u64>,
}

/// A form being filled in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FormState {
    pub(crate) form: FormRequest,
    /// One value a field, in the form's order.
    pub(crate) values: Vec<FieldValue>,
    /// The field with the focus.
    pub(crate) field: usize,
}

/// One field's value as typed or chosen so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FieldValue {
    /// A string, number or integer, as typed.
    Text(Input),
    /// A boolean; `None`: not given.
    Flag(Option<bool>),
    /// One choice (an index into the field's choices); `None`: not given.
    Choice(Option<usize>),
    /// Several choices, and the one the cursor is on.
    Choices { chosen: Vec<bool>, at: usize },
}

impl Asking {
    /// A waiting request as the panel shows it.
    pub(crate) fn new(waiting: &WaitingRequest) -> Asking {
        let what = match &waiting.asked {
            Asked::Elicitation(request) => match &request.kind {
                ElicitationKind::Form(form) => Ask::Form(FormState::new(form.clone())),
                ElicitationKind::Url(url) => Ask::Url {
                    message: url.message.clone(),
                    url: url.url.clone(),
                    origin: url.origin.clone(),
                },
            },
            Asked::Sampling(request) => Ask::Sampling(Review {
                system: request.system_prompt.clone(),
                messages: request
                    .messages
                    .iter()
                    .map(|m| {
                        let blocks: Vec<String> = m.content.iter().map(rendered).collect();
                        (m.role.clone(), blocks.join("\n"))
                    })
                    .collect(),
                max_tokens: request.max_tokens,
            }),
        };
        Asking {
            id: waiting.id.clone(),
            server: waiting.server.clone(),
            what,
            error: None,
        }
    }

    /// A key: the answer to send, if the key gives one.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let reply = |reply, open| {
            vec![Effect::Reply {
                id: self.id.clone(),
                reply,
                open,
            }]
        };
        match &mut self.what {
            Ask::Form(_) | Ask::Url { .. } | Ask::Sampling(_) if key.code == KeyCode::Esc => {
                reply(Reply::Decline, None)
            }
            Ask::Sampling(_) if key.code == KeyCode::Enter => reply(Reply::Decline, None),
            Ask::Url { .. } if key_is(&key, 'n') => reply(Reply::Decline, None),
            Ask::Url { url, .. } if key_is(&key, 'y') => {
                let url = url.clone();
                reply(Reply::Accept(Value::Object(Map::new())), Some(url))
            }
            Ask::Form(form) if key.code == KeyCode::Enter => match form.answer() {
                Ok(content) => {
                    self.error = None;
                    reply(Reply::Accept(Value::Object(content)), None)
                }
                Err((field, why)) => {
                    form.field = field;
                    self.error = Some(why);
                    Vec::new()
                }
            },
            Ask::Form(form) => {
                form.handle_key(&key);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Pasted text: into the form's text field with the focus.
    pub(crate) fn handle_paste(&mut self, text: &str) {
        if let Ask::Form(form) = &mut self.what
            && let Some(FieldValue::Text(input)) = form.values.get_mut(form.field)
        {
            input.insert(text);
        }
    }
}

/// What servers ask, oldest first; the first is shown over the screen and takes the keys.
/// It holds what the board holds, which bounds it: [`MAX_WAITING`], and a slot for each
/// server with nothing waiting.
#[derive(Debug, Clone, Default)]
pub(crate) struct Requests {
    pub(crate) queue: VecDeque<Asking>,
}

impl Requests {
    /// The request shown over the screen.
    pub(crate) fn front(&self) -> Option<&Asking> {
        self.queue.front()
    }

    /// A key for the request shown: the answer to send, if the key gives one; `None` when
    /// nothing is asked (the screen takes the key).
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Option<Vec<Effect>> {
        self.queue.front_mut().map(|asking| asking.handle_key(key))
    }

    /// Pasted text for the request shown; whether one is shown (and took it).
    pub(crate) fn handle_paste(&mut self, text: &str) -> bool {
        let Some(asking) = self.queue.front_mut() else {
            return false;
        };
        asking.handle_paste(text);
        true
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.queue.iter().position(|a| a.id == id)
    }

    /// A request that came (once, however often it is told).
    pub(crate) fn asked(&mut self, asking: Asking) {
        if self.find(&asking.id).is_none() {
            self.queue.push_back(asking);
        }
    }

    /// Every request waiting now (after the panel fell behind the event stream): those
    /// still waiting keep what was typed into them.
    pub(crate) fn replace(&mut self, all: Vec<Asking>) {
        self.queue = all
            .into_iter()
            .take(MAX_WAITING)
            .map(|fresh| match self.find(&fresh.id) {
                Some(i) => self.queue[i].clone(),
                None => fresh,
            })
            .collect();
    }

    /// A request that ended unanswered: what to tell.
    pub(crate) fn ended(&mut self, id: &str, reason: &str) -> Option<Notice> {
        let gone = self.find(id).and_then(|i| self.queue.remove(i))?;
        Some(Notice::warn(format!(
            "{}'s request ended: {reason}",
            gone.server
        )))
    }

    /// An answer taken (the request closes) or refused (its form says why): what to tell.
    pub(crate) fn replied(&mut self, id: &str, outcome: Result<(), ReplyError>) -> Option<Notice> {
        let i = self.find(id)?;
        match outcome {
            Err(ReplyError::Invalid(why)) => {
                self.queue[i].error = Some(why);
                None
            }
            Err(e @ ReplyError::Unknown(_)) => {
                self.queue.remove(i);
                Some(Notice::warn(e.to_string()))
            }
            Ok(()) => {
                let done = self.queue.remove(i).expect("found");
                Some(Notice::tell(format!("answered {}'s request", done.server)))
            }
        }
    }
}

/// What a model would see of a content block (given as sent).
fn rendered(block: &Value) -> String {
    crate::wire::render::render_block_json(&block.to_string())
        .unwrap_or_else(|_| "[a content block that is not valid]".into())
}

/// The labels of a choice field's choices, in order: a `oneOf`/`anyOf` entry's `title`, or
/// the legacy `enumNames`, else the value itself.
pub(crate) fn choice_labels(field: &FormField) -> Vec<String> {
    let (values, schema) = match &field.kind {
        FieldKind::Choice(values) => (values, &field.schema),
        FieldKind::Choices(values) => (values, field.schema.get("items").unwrap_or(&Value::Null)),
        _ => return Vec::new(),
    };
    let titled = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array));
    let names = schema.get("enumNames").and_then(Value::as_array);
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let title = titled
                .and_then(|options| {
                    options
                        .iter()
                        .find(|o| o.get("const").and_then(Value::as_str) == Some(value))
                })
                .and_then(|o| o.get("title"))
                .or_else(|| names.and_then(|n| n.get(i)))
                .and_then(Value::as_str);
            title.unwrap_or(value).to_string()
        })
        .collect()
}

/// A field's label: its title, else its name.
pub(crate) fn label(field: &FormField) -> &str {
    field.title.as_deref().unwrap_or(&field.name)
}

impl FormState {
    fn new(form: FormRequest) -> FormState {
        let values = form.fields.iter().map(initial).collect();
        FormState {
            form,
            values,
            field: 0,
        }
    }

    fn handle_key(&mut self, key: &KeyEvent) {
        let count = self.values.len();
        if count == 0 {
            return;
        }
        match key.code {
            KeyCode::Tab | KeyCode::Down => self.field = (self.field + 1) % count,
            KeyCode::BackTab | KeyCode::Up => self.field = (self.field + count - 1) % count,
            _ => {}
        }
        let choices = match &self.form.fields[self.field].kind {
            FieldKind::Choice(c) | FieldKind::Choices(c) => c.len(),
            _ => 0,
        };
        let clear = matches!(key.code, KeyCode::Delete | KeyCode::Backspace);
        match &mut self.values[self.field] {
            FieldValue::Text(input) => {
                input.handle(key);
            }
            FieldValue::Flag(flag) if key_is(key, ' ') => *flag = Some(*flag != Some(true)),
            FieldValue::Flag(flag) if clear => *flag = None,
            FieldValue::Choice(choice) if choices > 0 => match key.code {
                KeyCode::Right | KeyCode::Char(' ') => {
                    *choice = Some(choice.map_or(0, |c| (c + 1) % choices))
                }
                KeyCode::Left => {
                    *choice = Some(choice.map_or(choices - 1, |c| (c + choices - 1) % choices))
                }
                _ if clear => *choice = None,
                _ => {}
            },
            FieldValue::Choices { chosen, at } if choices > 0 => match key.code {
                KeyCode::Right => *at = (*at + 1) % choices,
                KeyCode::Left => *at = (*at + choices - 1) % choices,
                KeyCode::Char(' ') => chosen[*at] = !chosen[*at],
                _ => {}
            },
            _ => {}
        }
    }

    /// The answer as typed, checked against the schema; else the first field that does not
    /// fit and why.
    pub(crate) fn answer(&self) -> Result<Map<String, Value>, (usize, String)> {
        let mut content = Map::new();
        for (i, (field, value)) in self.form.fields.iter().zip(&self.values).enumerate() {
            let fail = |why: String| (i, format!("{}: {why}", label(field)));
            match value_of(field, value).map_err(fail)? {
                Some(value) => {
                    content.insert(field.name.clone(), value);
                }
                None if field.required => return Err(fail("required".into())),
                None => {}
            }
        }
        // What the board checks too (types, choices, required), so a refusal is seen here.
        self.form.check(&content).map_err(|e| (self.field, e.0))?;
        Ok(content)
    }
}

/// A field's value before anything is typed: its default, if it fits.
fn initial(field: &FormField) -> FieldValue {
    let default = field.default.as_ref();
    match &field.kind {
        FieldKind::Boolean => FieldValue::Flag(default.and_then(Value::as_bool)),
        FieldKind::Choice(values) => FieldValue::Choice(
            default
                .and_then(Value::as_str)
                .and_then(|d| values.iter().position(|v| v == d)),
        ),
        FieldKind::Choices(values) => {
            let defaults: Vec<&str> = default
                .and_then(Value::as_array)
                .map(|d| d.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            FieldValue::Choices {
                chosen: values
                    .iter()
                    .map(|v| defaults.contains(&v.as_str()))
                    .collect(),
                at: 0,
            }
        }
        FieldKind::Text | FieldKind::Number | FieldKind::Integer => {
            let text = match default {
                Some(Value::String(s)) => s.clone(),
                Some(n @ Value::Number(_)) => n.to_string(),
                _ => String::new(),
            };
            FieldValue::Text(Input::with_text(&text, Mask::None))
        }
    }
}

/// One field's value for the answer (`None`: not given), or why it does not fit.
fn value_of(field: &FormField, value: &FieldValue) -> Result<Option<Value>, String> {
    let value = match (value, &field.kind) {
        (FieldValue::Text(input), _) if input.text().is_empty() => return Ok(None),
        (FieldValue::Text(input), FieldKind::Number | FieldKind::Integer) => {
            let text = input.text().trim();
            let parsed = if field.kind == FieldKind::Integer {
                text.parse::<i64>().ok().map(Value::from)
            } else {
                text.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
            };
            let Some(n) = parsed else {
                return Err(if field.kind == FieldKind::Integer {
                    "give a whole number".into()
                } else {
                    "give a number".into()
                });
            };
            n
        }
        (FieldValue::Text(input), _) => Value::String(input.text().to_string()),
        (FieldValue::Flag(flag), _) => return Ok(flag.map(Value::Bool)),
        (FieldValue::Choice(choice), FieldKind::Choice(values)) => {
            return Ok(choice
                .and_then(|i| values.get(i))
                .cloned()
                .map(Value::String));
        }
        (FieldValue::Choices { chosen, .. }, FieldKind::Choices(values)) => {
            let picked: Vec<Value> = values
                .iter()
                .zip(chosen)
                .filter(|(_, on)| **on)
                .map(|(v, _)| Value::String(v.clone()))
                .collect();
            if picked.is_empty() && !field.required {
                return Ok(None);
            }
            Value::Array(picked)
        }
        _ => return Err("the panel cannot fill in this field".into()),
    };
    // The library's check of the field, the one the board makes again: its constraints.
    field.unfit(&value)?;
    Ok(Some(value))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::protocol::server_requests::ElicitationRequest;
    use crossterm::event::KeyModifiers;
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    pub(crate) fn asking(params: Value) -> Asking {
        let request = ElicitationRequest::from_params(params).unwrap();
        Asking::new(&WaitingRequest {
            id: "7".into(),
            server: "fx".into(),
            asked: Asked::Elicitation(request),
        })
    }

    pub(crate) fn typed(asking: &mut Asking, text: &str) {
        for c in text.chars() {
            assert!(asking.handle_key(key(KeyCode::Char(c))).is_empty());
        }
    }

    fn form(asking: &Asking) -> &FormState {
        match &asking.what {
            Ask::Form(form) => form,
            other => panic!("not a form: {other:?}"),
        }
    }

    fn accepted(effects: Vec<Effect>) -> Value {
        match &effects[..] {
            [
                Effect::Reply {
                    reply: Reply::Accept(content),
                    open: None,
                    ..
                },
            ] => content.clone(),
            other => panic!("not an acceptance: {other:?}"),
        }
    }

    #[test]
    fn a_form_is_filled_field_by_field_and_sent_once_it_fits() {
        // Properties come in name order: age, color, email, name, ok, tags.
        let mut asking = asking(json!({"message": "Who?", "requestedSchema": {
            "type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
            "ok": {"type": "boolean"},
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}], "default": "g"},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["a", "b", "c"]}, "default": ["b"]}
        }}}));
        let names: Vec<&str> = form(&asking)
            .form
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["age", "color", "email", "name", "ok", "tags"]);
        assert_eq!(
            choice_labels(&form(&asking).form.fields[1]),
            ["Red", "Green"]
        );
        // Enter with the required name empty: refused, the focus on it.
        assert!(asking.handle_key(key(KeyCode::Enter)).is_empty());
        assert_eq!(asking.error.as_deref(), Some("Name: required"));
        assert_eq!(form(&asking).field, 3);
        typed(&mut asking, "A");
        asking.handle_key(key(KeyCode::Enter));
        assert_eq!(
            asking.error.as_deref(),
            Some("Name: needs at least 2 characters (minLength 2)")
        );
        typed(&mut asking, "da");
        // Shift-Tab to the email, a bad one, then a good one.
        asking.handle_key(key(KeyCode::BackTab));
        typed(&mut asking, "ada");
        asking.handle_key(key(KeyCode::Enter));
        assert!(
            asking
                .error
                .as_deref()
                .unwrap()
                .starts_with("email: must be an email")
        );
        assert_eq!(form(&asking).field, 2);
        typed(&mut asking, "@example.com");
        // Up to the color: Left goes back to Red; to the age: 200 is out of range.
        asking.handle_key(key(KeyCode::Up));
        asking.handle_key(key(KeyCode::Left));
        asking.handle_key(key(KeyCode::Up));
        asking.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut asking, "200");
        asking.handle_key(key(KeyCode::Enter));
        assert_eq!(
            asking.error.as_deref(),
            Some("age: takes at most 150 (maximum 150)")
        );
        asking.handle_key(key(KeyCode::Backspace));
        asking.handle_key(key(KeyCode::Backspace));
        typed(&mut asking, ".5");
        asking.handle_key(key(KeyCode::Enter));
        assert_eq!(asking.error.as_deref(), Some("age: give a whole number"));
        asking.handle_key(key(KeyCode::Backspace));
        asking.handle_key(key(KeyCode::Backspace));
        // Tab round to the boolean (Space: yes) and the tags (Right, Space: c too; the
        // default b kept).
        for _ in 0..4 {
            asking.handle_key(key(KeyCode::Tab));
        }
        asking.handle_key(key(KeyCode::Char(' ')));
        asking.handle_key(key(KeyCode::Tab));
        asking.handle_key(key(KeyCode::Right));
        asking.handle_key(key(KeyCode::Right));
        asking.handle_key(key(KeyCode::Char(' ')));
        let content = accepted(asking.handle_key(key(KeyCode::Enter)));
        assert_eq!(
            content,
            json!({"age": 2, "color": "r", "email": "ada@example.com", "name": "Ada", "ok": true, "tags": ["b", "c"]})
        );
        assert_eq!(asking.error, None);
        // Three tags are over maxItems; none at all is no answer for them (not required).
        let Ask::Form(state) = &mut asking.what else {
            unreachable!()
        };
        state.values[5] = FieldValue::Choices {
            chosen: vec![true; 3],
            at: 0,
        };
        asking.handle_key(key(KeyCode::Enter));
        assert_eq!(
            asking.error.as_deref(),
            Some("tags: takes at most 2 of its choices (maxItems 2)")
        );
        let Ask::Form(state) = &mut asking.what else {
            unreachable!()
        };
        state.values[5] = FieldValue::Choices {
            chosen: vec![false; 3],
            at: 0,
        };
        let content = accepted(asking.handle_key(key(KeyCode::Enter)));
        assert!(content.get("tags").is_none(), "{content}");
        // Tab wraps round to the first field.
        asking.handle_key(key(KeyCode::Tab));
        assert_eq!(form(&asking).field, 0);
    }

    #[test]
    fn esc_declines_and_a_url_opens_only_after_y() {
        let mut form = asking(json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"n": {"type": "number", "default": 1.5}}}}));
        assert_eq!(
            form.handle_key(key(KeyCode::Esc)),
            [Effect::Reply {
                id: "7".into(),
                reply: Reply::Decline,
                open: None
            }]
        );
        assert_eq!(
            accepted(form.handle_key(key(KeyCode::Enter))),
            json!({"n": 1.5})
        );
        let mut url = asking(
            json!({"mode": "url", "message": "Pay", "elicitationId": "e",
            "url": "https://pay.example.com/x?session=1"}),
        );
        assert!(
            matches!(&url.what, Ask::Url { origin, .. } if origin == "https://pay.example.com")
        );
        for nothing in [KeyCode::Enter, KeyCode::Char('o'), KeyCode::Char(' ')] {
            assert!(url.handle_key(key(nothing)).is_empty(), "{nothing:?}");
        }
        assert_eq!(
            url.handle_key(key(KeyCode::Char('y'))),
            [Effect::Reply {
                id: "7".into(),
                reply: Reply::Accept(json!({})),
                open: Some("https://pay.example.com/x?session=1".into())
            }]
        );
        assert!(matches!(
            &url.handle_key(key(KeyCode::Char('n')))[..],
            [Effect::Reply {
                reply: Reply::Decline,
                open: None,
                ..
            }]
        ));
    }

    #[test]
    fn sampling_is_shown_and_declined() {
        let request = crate::protocol::server_requests::SamplingRequest::from_params(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}},
                         {"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}],
            "systemPrompt": "Be brief.", "maxTokens": 10}))
        .unwrap();
        let mut asking = Asking::new(&WaitingRequest {
            id: "9".into(),
            server: "fx".into(),
            asked: Asked::Sampling(request),
        });
        let Ask::Sampling(review) = &asking.what else {
            panic!("{asking:?}")
        };
        assert_eq!(review.system.as_deref(), Some("Be brief."));
        assert_eq!(review.messages[0], ("user".into(), "hi".into()));
        assert_eq!(review.messages[1].1, "[image image/png, 3 bytes]");
        assert!(asking.handle_key(key(KeyCode::Char('y'))).is_empty());
        assert!(matches!(
            &asking.handle_key(key(KeyCode::Enter))[..],
            [Effect::Reply {
                reply: Reply::Decline,
                ..
            }]
        ));
    }
}
