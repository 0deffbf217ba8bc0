//! The add wizard: one field a step, each checked as it is accepted, the entry saved from
//! the summary. State and keys only; App starts the save, the view draws it.

use super::input::{Input, Mask, down, parse_env, parse_header, split_args, up};
use crate::host::config::{ServerConfig, Timeouts, server_name_problem};
use crossterm::event::{KeyCode, KeyEvent};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The steps of the add wizard, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Name,
    Transport,
    Command,
    Args,
    Env,
    Url,
    Headers,
    Auth,
    Timeouts,
    Summary,
}

/// The transports the wizard offers, in order.
pub(crate) const TRANSPORTS: [&str; 2] = ["Local stdio", "Remote HTTP"];
/// The auth choices the wizard offers, in order.
pub(crate) const AUTHS: [&str; 2] = ["none", "oauth"];

/// The add wizard.
#[derive(Debug, Clone)]
pub(crate) struct Wizard {
    pub(crate) step: Step,
    pub(crate) name: String,
    /// Index into [`TRANSPORTS`].
    pub(crate) transport: usize,
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    /// Index into [`AUTHS`].
    pub(crate) auth: usize,
    /// `timeout` and `startup_timeout` as typed, each checked (none: the defaults).
    pub(crate) timeouts: Vec<Value>,
    /// The text last typed on each one-line step, shown again when the wizard comes back
    /// to it.
    typed: BTreeMap<Step, String>,
    pub(crate) input: Input,
    pub(crate) error: Option<String>,
    /// Enter was pressed on the summary; the save is running.
    pub(crate) saving: bool,
}

impl Wizard {
    pub(crate) fn new() -> Wizard {
        Wizard {
            step: Step::Name,
            name: String::new(),
            transport: 0,
            command: String::new(),
            args: Vec::new(),
            env: Vec::new(),
            url: String::new(),
            headers: Vec::new(),
            auth: 0,
            timeouts: Vec::new(),
            typed: BTreeMap::new(),
            input: Input::new(Mask::None),
            error: None,
            saving: false,
        }
    }

    pub(crate) fn is_stdio(&self) -> bool {
        self.transport == 0
    }

    /// A key (App takes Esc): the server to save, once Enter accepts the summary. Keys wait
    /// while a save runs.
    pub(crate) fn handle_key(
        &mut self,
        key: &KeyEvent,
        taken: &dyn Fn(&str) -> bool,
    ) -> Option<ServerConfig> {
        if self.saving {
            return None;
        }
        let choosing = matches!(self.step, Step::Transport | Step::Auth | Step::Summary);
        let empty = choosing || self.input.text().is_empty();
        match (self.step, key.code) {
            (_, KeyCode::BackTab) => self.back(),
            (_, KeyCode::Backspace) if empty => self.back(),
            (Step::Transport, _) if up(key) => self.transport = 0,
            (Step::Transport, _) if down(key) => self.transport = 1,
            (Step::Auth, _) if up(key) => self.auth = 0,
            (Step::Auth, _) if down(key) => self.auth = 1,
            (_, KeyCode::Enter) => return self.accept(taken),
            (Step::Transport | Step::Auth | Step::Summary, _) => {}
            _ => {
                self.input.handle(key);
            }
        }
        None
    }

    /// The entry as the config file would hold it.
    fn entry(&self) -> Value {
        let mut entry = Map::new();
        if self.is_stdio() {
            entry.insert("command".into(), json!(self.command));
            if !self.args.is_empty() {
                entry.insert("args".into(), json!(self.args));
            }
            if !self.env.is_empty() {
                let env: Map<String, Value> = self
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                entry.insert("env".into(), Value::Object(env));
            }
        } else {
            entry.insert("url".into(), json!(self.url));
            if !self.headers.is_empty() {
                let headers: Map<String, Value> = self
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect();
                entry.insert("headers".into(), Value::Object(headers));
            }
            if AUTHS[self.auth] == "oauth" {
                entry.insert("auth".into(), json!("oauth"));
            }
        }
        for (key, value) in ["timeout", "startup_timeout"].iter().zip(&self.timeouts) {
            entry.insert(key.to_string(), value.clone());
        }
        Value::Object(entry)
    }

    /// Moves to `step`, its field masked as that step's values are: a one-line step's with
    /// what was typed there before, the others' empty.
    fn go(&mut self, step: Step) {
        let one_line = |step| {
            matches!(
                step,
                Step::Name | Step::Command | Step::Args | Step::Url | Step::Timeouts
            )
        };
        if one_line(self.step) {
            self.typed.insert(self.step, self.input.text().to_string());
        }
        self.step = step;
        self.error = None;
        let mask = match step {
            Step::Env => Mask::After('='),
            Step::Headers => Mask::After(':'),
            Step::Url => Mask::Url,
            _ => Mask::None,
        };
        self.input = Input::new(mask);
        if one_line(step)
            && let Some(text) = self.typed.get(&step)
        {
            self.input.insert(text);
        }
    }

    /// Back one step (Shift-Tab, or Backspace on an empty field), keeping what was typed.
    fn back(&mut self) {
        let previous = match self.step {
            Step::Name => return,
            Step::Transport => Step::Name,
            Step::Command | Step::Url => Step::Transport,
            Step::Args => Step::Command,
            Step::Env => Step::Args,
            Step::Headers => Step::Url,
            Step::Auth => Step::Headers,
            Step::Timeouts if self.is_stdio() => Step::Env,
            Step::Timeouts => Step::Auth,
            Step::Summary => Step::Timeouts,
        };
        self.go(previous);
    }

    /// Enter on the current step: the next step, an error on this one, or the server to
    /// save.
    fn accept(&mut self, taken: &dyn Fn(&str) -> bool) -> Option<ServerConfig> {
        let text = self.input.text().trim().to_string();
        let next = match self.step {
            Step::Name => {
                if text.is_empty() {
                    Err("give the server a name".to_string())
                } else if let Some(problem) = server_name_problem(&text) {
                    Err(problem)
                } else if taken(&text) {
                    Err(format!(
                        "a server named {text:?} is already configured; pick another name"
                    ))
                } else {
                    self.name = text;
                    Ok(Step::Transport)
                }
            }
            Step::Transport => Ok(if self.is_stdio() {
                Step::Command
            } else {
                Step::Url
            }),
            Step::Command if text.is_empty() => {
                Err("give the command that starts the server".to_string())
            }
            Step::Command => {
                self.command = text;
                Ok(Step::Args)
            }
            Step::Args => split_args(self.input.text()).map(|args| {
                self.args = args;
                Step::Env
            }),
            Step::Env | Step::Headers if text.is_empty() => Ok(if self.step == Step::Env {
                Step::Timeouts
            } else {
                Step::Auth
            }),
            Step::Env => parse_env(self.input.text()).map(|pair| {
                self.env.retain(|(k, _)| *k != pair.0);
                self.env.push(pair);
                Step::Env
            }),
            Step::Headers => parse_header(self.input.text()).map(|pair| {
                self.headers
                    .retain(|(k, _)| !k.eq_ignore_ascii_case(&pair.0));
                self.headers.push(pair);
                Step::Headers
            }),
            Step::Url if !(text.starts_with("http://") || text.starts_with("https://")) => {
                Err("the URL must start with http:// or https://".to_string())
            }
            Step::Url => {
                self.url = text;
                Ok(Step::Headers)
            }
            Step::Auth => Ok(Step::Timeouts),
            Step::Timeouts => parse_timeouts(&text).map(|timeouts| {
                self.timeouts = timeouts;
                Step::Summary
            }),
            Step::Summary => {
                return match ServerConfig::from_value(&self.name, &self.entry()) {
                    Ok(server) => Some(server),
                    Err(e) => {
                        self.error = Some(e.message);
                        None
                    }
                };
            }
        };
        match next {
            Ok(step) => self.go(step),
            Err(e) => self.error = Some(e),
        }
        None
    }
}

/// The timeouts step's text: nothing (the defaults), `TIMEOUT`, or `TIMEOUT STARTUP`, each a
/// number of seconds as the config file takes it.
fn parse_timeouts(text: &str) -> Result<Vec<Value>, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() > 2 {
        return Err("give at most two numbers: the request timeout, then the startup one".into());
    }
    words
        .iter()
        .zip(["timeout", "startup_timeout"])
        .map(|(word, key)| {
            // As the file would hold it: a number as written, anything else as text.
            let value = serde_json::from_str::<serde_json::Number>(word)
                .map_or_else(|_| json!(word), Value::Number);
            Timeouts::seconds(key, &value)?;
            Ok(value)
        })
        .collect()
}
