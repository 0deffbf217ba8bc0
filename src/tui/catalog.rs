//! The screens of what a server offers besides its tools' marks: its resources and templates
//! (`R`), its prompts (`P`), the arguments form of a prompt or template (with the server's
//! completions), a tool's call (Enter on the tools screen), and the output of each, as the
//! model would see it. State and keys only; drawn by `view_catalog.rs`.

use super::app::{App, Effect, MAX_JOBS, Screen, Update};
use super::input::{Input, Mask};
use crate::host::Catalog;
use crate::protocol::items::CompletionRef;
use crossterm::event::{KeyCode, KeyEvent};
use serde_json::{Map, Value};

/// The most of an output the panel keeps to show (the model may see up to the output cap).
pub(crate) const SHOWN_BYTES: usize = 64 * 1024;

/// The catalog of the server whose screen is open.
#[derive(Debug, Clone, Default)]
pub(crate) struct CatalogView {
    pub(crate) server: String,
    pub(crate) catalog: Catalog,
    /// Whether the server offers completions.
    pub(crate) completions: bool,
}

/// What an arguments form fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A prompt, by name.
    Prompt(String),
    /// A resource template, by its URI template.
    Template(String),
}

/// One argument of a form.
#[derive(Debug, Clone)]
pub(crate) struct Argument {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
    pub(crate) input: Input,
}

/// The arguments of a prompt or the variables of a template, one field each.
#[derive(Debug, Clone)]
pub(crate) struct ArgsForm {
    pub(crate) server: String,
    pub(crate) target: Target,
    pub(crate) args: Vec<Argument>,
    /// The field with the focus.
    pub(crate) field: usize,
    /// The server's values for the field with the focus, and the one chosen with ↑/↓.
    pub(crate) completions: Vec<String>,
    pub(crate) chosen: Option<usize>,
    /// Whether the server offers completions.
    pub(crate) completes: bool,
    /// The completion request this form waits for, and whether the field changed since.
    asked: Option<u64>,
    stale: bool,
    pub(crate) error: Option<String>,
    /// The row of the list it was opened from.
    selected: usize,
}

/// A tool's arguments, as a JSON object.
#[derive(Debug, Clone)]
pub(crate) struct CallForm {
    pub(crate) server: String,
    /// The registered name.
    pub(crate) tool: String,
    pub(crate) input: Input,
    pub(crate) error: Option<String>,
    /// The row of the tools screen.
    selected: usize,
}

/// What a read, a prompt or a call gave.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub(crate) server: String,
    /// What was asked: a URI, a prompt's or a tool's name.
    pub(crate) title: String,
    pub(crate) ticket: u64,
    /// `None` while it runs.
    pub(crate) text: Option<Result<String, String>>,
    pub(crate) scroll: u16,
    pub(crate) back: Screen,
}

/// The variables of an RFC 6570 URI template, in order (`{a,b}`, `{+path}`, `{?q*}`), each
/// with whether the URI needs it: those of the path do, query and fragment ones
/// (`{?q}`, `{&q}`, `{#f}`, `{;p}`) may be left out.
pub(crate) fn template_variables(template: &str) -> Vec<(String, bool)> {
    let mut names: Vec<(String, bool)> = Vec::new();
    for expression in expressions(template) {
        let (op, list) = operator(expression);
        let needed = !matches!(op, Some('?' | '&' | '#' | ';'));
        for name in list.split(',').map(variable_name) {
            match names.iter_mut().find(|(n, _)| n == name) {
                Some((_, required)) => *required |= needed,
                None if !name.is_empty() => names.push((name.to_string(), needed)),
                None => {}
            }
        }
    }
    names
}

/// The text inside each `{...}` of a template.
fn expressions(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(e, _)| e))
}

fn operator(expression: &str) -> (Option<char>, &str) {
    match expression.chars().next() {
        Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &expression[1..]),
        _ => (None, expression),
    }
}

/// A variable's name without its modifier (`*`, `:3`).
fn variable_name(spec: &str) -> &str {
    spec.trim_end_matches('*')
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
}

/// `value` percent-encoded: all but the unreserved characters, and with `reserved` the
/// reserved ones and existing `%XX` kept too.
fn encode(value: &str, reserved: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        let keep = c.is_ascii_alphanumeric()
            || "-._~".contains(c)
            || (reserved && ":/?#[]@!$&'()*+,;=%".contains(c));
        if keep {
            out.push(c);
        } else {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A URI template filled in with `values` (RFC 6570 levels 1 to 3; an empty value counts as
/// undefined, a `:n` prefix is applied).
pub(crate) fn expand_template(template: &str, values: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        let (op, list) = operator(&rest[open + 1..close]);
        // First character, separator, named, reserved kept (RFC 6570 appendix A).
        let (first, sep, named, reserved) = match op {
            None => ("", ",", false, false),
            Some('+') => ("", ",", false, true),
            Some('#') => ("#", ",", false, true),
            Some('.') => (".", ".", false, false),
            Some('/') => ("/", "/", false, false),
            Some(';') => (";", ";", true, false),
            Some('?') => ("?", "&", true, false),
            _ => ("&", "&", true, false),
        };
        let parts: Vec<String> = list
            .split(',')
            .filter_map(|spec| {
                let name = variable_name(spec);
                let value = values.iter().find(|(n, _)| n == name)?.1.as_str();
                if value.is_empty() {
                    return None;
                }
                let prefix = spec
                    .split_once(':')
                    .and_then(|(_, n)| n.trim().parse::<usize>().ok());
                let value: String = match prefix {
                    Some(n) => value.chars().take(n).collect(),
                    None => value.to_string(),
                };
                let value = encode(&value, reserved);
                Some(if named {
                    format!("{name}={value}")
                } else {
                    value
                })
            })
            .collect();
        if !parts.is_empty() {
            out.push_str(first);
            out.push_str(&parts.join(sep));
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// A blob of output as the panel keeps it: at most [`SHOWN_BYTES`], cut on a character.
pub(crate) fn kept(mut text: String) -> String {
    if text.len() > SHOWN_BYTES {
        let mut end = SHOWN_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let total = text.len();
        text.truncate(end);
        text.push_str(&format!(
            "\n\n[the panel shows the first {end} of {total} bytes]"
        ));
    }
    text
}

impl ArgsForm {
    /// The values typed, by argument name (empty ones too).
    fn values(&self) -> Vec<(String, String)> {
        self.args
            .iter()
            .map(|a| (a.name.clone(), a.input.text().to_string()))
            .collect()
    }

    fn reference(&self) -> CompletionRef {
        match &self.target {
            Target::Prompt(name) => CompletionRef::Prompt(name.clone()),
            Target::Template(uri) => CompletionRef::ResourceTemplate(uri.clone()),
        }
    }
}

impl App {
    /// The catalog of `server`, if it is the one the snapshot holds.
    pub(crate) fn catalog(&self, server: &str) -> Option<&CatalogView> {
        self.data.catalog.as_ref().filter(|c| c.server == server)
    }

    /// The server whose catalog the open screen shows, for the next snapshot.
    pub(crate) fn catalog_server(&self) -> Option<&str> {
        match &self.screen {
            Screen::Server(server)
            | Screen::Resources { server, .. }
            | Screen::Prompts { server, .. } => Some(server),
            Screen::Arguments(form) => Some(&form.server),
            _ => None,
        }
    }

    /// Starts a read, a prompt or a call whose output the screen shows, unless too many
    /// run; the ticket its output comes back with.
    fn start_output(&mut self, server: &str, title: String, back: Screen) -> Option<u64> {
        if self.fetching >= MAX_JOBS {
            self.warn("too much is in progress; wait a moment");
            return None;
        }
        self.fetching += 1;
        self.ticket += 1;
        self.screen = Screen::Output(Box::new(Output {
            server: server.to_string(),
            title,
            ticket: self.ticket,
            text: None,
            scroll: 0,
            back,
        }));
        Some(self.ticket)
    }

    pub(super) fn on_resources(
        &mut self,
        key: KeyEvent,
        server: String,
        selected: usize,
    ) -> Vec<Effect> {
        let catalog = self.catalog(&server).cloned().unwrap_or_default();
        let resources = &catalog.catalog.resources;
        let templates = &catalog.catalog.templates;
        let count = resources.len() + templates.len();
        let selected = selected.min(count.saturating_sub(1));
        let back = Screen::Resources {
            server: server.clone(),
            selected,
        };
        match key.code {
            KeyCode::Esc => self.screen = Screen::Server(server),
            KeyCode::Enter if selected < resources.len() => {
                let uri = resources[selected].uri.clone();
                if let Some(ticket) = self.start_output(&server, uri.clone(), back) {
                    return vec![Effect::ReadResource {
                        ticket,
                        server,
                        uri,
                    }];
                }
            }
            KeyCode::Enter if selected < count => {
                let template = &templates[selected - resources.len()].uri_template;
                let args = template_variables(template)
                    .into_iter()
                    .map(|(name, required)| Argument {
                        name,
                        description: None,
                        required,
                        input: Input::new(Mask::None),
                    })
                    .collect();
                let target = Target::Template(template.clone());
                return self.open_form(server, target, args, catalog.completions, selected);
            }
            _ => {
                let selected = self.moved(&key, selected, count);
                self.screen = Screen::Resources { server, selected };
            }
        }
        Vec::new()
    }

    pub(super) fn on_prompts(
        &mut self,
        key: KeyEvent,
        server: String,
        selected: usize,
    ) -> Vec<Effect> {
        let catalog = self.catalog(&server).cloned().unwrap_or_default();
        let prompts = &catalog.catalog.prompts;
        let selected = selected.min(prompts.len().saturating_sub(1));
        match key.code {
            KeyCode::Esc => self.screen = Screen::Server(server),
            KeyCode::Enter if selected < prompts.len() => {
                let prompt = &prompts[selected];
                let args: Vec<Argument> = prompt
                    .arguments
                    .iter()
                    .map(|a| Argument {
                        name: a.name.clone(),
                        description: a.description.clone(),
                        required: a.required,
                        input: Input::new(Mask::None),
                    })
                    .collect();
                let target = Target::Prompt(prompt.name.clone());
                return self.open_form(server, target, args, catalog.completions, selected);
            }
            _ => {
                let selected = self.moved(&key, selected, prompts.len());
                self.screen = Screen::Prompts { server, selected };
            }
        }
        Vec::new()
    }

    fn moved(&self, key: &KeyEvent, selected: usize, count: usize) -> usize {
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => (selected + 1).min(count.saturating_sub(1)),
            _ => selected,
        }
    }

    /// The arguments form; a prompt without arguments is asked for at once.
    fn open_form(
        &mut self,
        server: String,
        target: Target,
        args: Vec<Argument>,
        completes: bool,
        selected: usize,
    ) -> Vec<Effect> {
        let mut form = ArgsForm {
            server,
            target,
            args,
            field: 0,
            completions: Vec::new(),
            chosen: None,
            completes,
            asked: None,
            stale: false,
            error: None,
            selected,
        };
        if form.args.is_empty() {
            return self.submit(form);
        }
        let effects = self.complete(&mut form);
        self.screen = Screen::Arguments(Box::new(form));
        effects
    }

    /// Asks the server for values of the field with the focus (one request at a time: a
    /// change while one is out asks again when it is answered).
    fn complete(&mut self, form: &mut ArgsForm) -> Vec<Effect> {
        form.chosen = None;
        if !form.completes {
            return Vec::new();
        }
        if self.completing {
            form.stale = true;
            return Vec::new();
        }
        self.completing = true;
        self.ticket += 1;
        form.asked = Some(self.ticket);
        form.stale = false;
        let argument = &form.args[form.field];
        let context = form
            .values()
            .into_iter()
            .filter(|(name, value)| *name != argument.name && !value.is_empty())
            .collect();
        vec![Effect::Complete {
            ticket: self.ticket,
            server: form.server.clone(),
            reference: form.reference(),
            argument: argument.name.clone(),
            value: argument.input.text().to_string(),
            context,
        }]
    }

    pub(super) fn on_arguments(&mut self, key: KeyEvent, mut form: ArgsForm) -> Vec<Effect> {
        let count = form.args.len();
        let mut effects = Vec::new();
        match key.code {
            KeyCode::Esc => {
                let (server, selected) = (form.server, form.selected);
                self.screen = match form.target {
                    Target::Prompt(_) => Screen::Prompts { server, selected },
                    Target::Template(_) => Screen::Resources { server, selected },
                };
                return Vec::new();
            }
            KeyCode::Tab | KeyCode::BackTab => {
                form.field = if key.code == KeyCode::Tab {
                    (form.field + 1) % count
                } else {
                    (form.field + count - 1) % count
                };
                form.completions.clear();
                effects = self.complete(&mut form);
            }
            KeyCode::Down if !form.completions.is_empty() => {
                let last = form.completions.len() - 1;
                form.chosen = Some(form.chosen.map_or(0, |c| (c + 1).min(last)));
            }
            KeyCode::Up => form.chosen = form.chosen.and_then(|c| c.checked_sub(1)),
            KeyCode::Enter => {
                if let Some(value) = form.chosen.and_then(|c| form.completions.get(c)).cloned() {
                    let input = &mut form.args[form.field].input;
                    input.clear();
                    input.insert(&value);
                    effects = self.complete(&mut form);
                } else {
                    return self.submit(form);
                }
            }
            _ => {
                let before = form.args[form.field].input.clone();
                form.args[form.field].input.handle(&key);
                if form.args[form.field].input != before {
                    effects = self.complete(&mut form);
                }
            }
        }
        self.screen = Screen::Arguments(Box::new(form));
        effects
    }

    /// Reads the template's resource or gets the prompt, once every required argument is
    /// given.
    fn submit(&mut self, mut form: ArgsForm) -> Vec<Effect> {
        if let Some(i) = form
            .args
            .iter()
            .position(|a| a.required && a.input.text().is_empty())
        {
            form.error = Some(format!("give {}: it is required", form.args[i].name));
            form.field = i;
            self.screen = Screen::Arguments(Box::new(form));
            return Vec::new();
        }
        let values = form.values();
        let server = form.server.clone();
        let back = match &form.target {
            Target::Prompt(_) => Screen::Prompts {
                server: server.clone(),
                selected: form.selected,
            },
            Target::Template(_) => Screen::Resources {
                server: server.clone(),
                selected: form.selected,
            },
        };
        match form.target {
            Target::Template(template) => {
                let uri = expand_template(&template, &values);
                match self.start_output(&server, uri.clone(), back) {
                    Some(ticket) => vec![Effect::ReadResource {
                        ticket,
                        server,
                        uri,
                    }],
                    None => Vec::new(),
                }
            }
            Target::Prompt(prompt) => {
                let arguments: Map<String, Value> = values
                    .into_iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                match self.start_output(&server, prompt.clone(), back) {
                    Some(ticket) => vec![Effect::GetPrompt {
                        ticket,
                        server,
                        prompt,
                        arguments: Value::Object(arguments),
                    }],
                    None => Vec::new(),
                }
            }
        }
    }

    /// Enter on the tools screen: the call form of the selected tool.
    pub(super) fn open_call(&mut self, server: String, selected: usize) {
        let Some(tool) = self.tools_of(&server).get(selected).map(|t| t.name.clone()) else {
            return;
        };
        self.screen = Screen::Call(Box::new(CallForm {
            server,
            tool,
            input: Input::with_text("{}", Mask::None),
            error: None,
            selected,
        }));
    }

    pub(super) fn on_call(&mut self, key: KeyEvent, mut form: CallForm) -> Vec<Effect> {
        let back = Screen::Tools {
            server: form.server.clone(),
            selected: form.selected,
        };
        match key.code {
            KeyCode::Esc => {
                self.screen = back;
                return Vec::new();
            }
            KeyCode::Enter => match serde_json::from_str::<Value>(form.input.text()) {
                Ok(arguments @ Value::Object(_)) => {
                    let title = format!("call {}", form.tool);
                    let Some(ticket) = self.start_output(&form.server, title, back) else {
                        return Vec::new();
                    };
                    return vec![Effect::CallTool {
                        ticket,
                        name: form.tool,
                        arguments,
                    }];
                }
                Ok(_) => form.error = Some("the arguments must be a JSON object".into()),
                Err(e) => form.error = Some(format!("not JSON: {e}")),
            },
            _ => {
                form.input.handle(&key);
                form.error = None;
            }
        }
        self.screen = Screen::Call(Box::new(form));
        Vec::new()
    }

    pub(super) fn on_output(&mut self, key: KeyEvent, mut output: Output) {
        output.scroll = match key.code {
            KeyCode::Esc => {
                self.screen = output.back;
                return;
            }
            KeyCode::PageDown => output.scroll.saturating_add(10),
            KeyCode::PageUp => output.scroll.saturating_sub(10),
            KeyCode::Down | KeyCode::Char('j') => output.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => output.scroll.saturating_sub(1),
            _ => output.scroll,
        };
        self.screen = Screen::Output(Box::new(output));
    }

    /// A read, prompt or call that ended, or completions that came.
    pub(super) fn apply_catalog(&mut self, update: Update) -> Vec<Effect> {
        match update {
            Update::Output { ticket, outcome } => {
                self.fetching = self.fetching.saturating_sub(1);
                if let Screen::Output(output) = &mut self.screen
                    && output.ticket == ticket
                {
                    output.text = Some(outcome.map(kept).map_err(kept));
                }
            }
            Update::Completed { ticket, outcome } => {
                self.completing = false;
                let Screen::Arguments(form) = &mut self.screen else {
                    return Vec::new();
                };
                let mut form = form.clone();
                if form.asked == Some(ticket) && !form.stale {
                    // A server that cannot complete is only quiet.
                    form.completions = outcome.unwrap_or_default();
                    form.completions.truncate(100);
                    form.asked = None;
                    self.screen = Screen::Arguments(form);
                    return Vec::new();
                }
                let effects = self.complete(&mut form);
                self.screen = Screen::Arguments(form);
                return effects;
            }
            _ => {}
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::items::{Prompt, Resource, ResourceTemplate};
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn templates_are_expanded_as_rfc_6570_says() {
        let names = template_variables("fixture://big/{bytes}{?q,lang*}{+path:3}{#q}{bytes}");
        let want = [
            ("bytes", true),
            ("q", false),
            ("lang", false),
            ("path", true),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(n, r)| (n.to_string(), *r)).collect();
        assert_eq!(names, want);
        let values = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let v = values(&[
            ("var", "value"),
            ("hello", "Hello World!"),
            ("path", "/foo/bar"),
            ("x", "1024"),
            ("y", "768"),
            ("empty", ""),
        ]);
        for (template, want) in [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("{#path}", "#/foo/bar"),
            ("X{.var}", "X.value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y,empty}", ";x=1024;y=768"),
            ("{?x,y}", "?x=1024&y=768"),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{var:3}", "val"),
            ("note://topics/{empty}", "note://topics/"),
            ("a{unclosed", "a{unclosed"),
            ("{x}é{y}", "1024é768"),
        ] {
            assert_eq!(expand_template(template, &v), want, "{template}");
        }
    }

    fn app_with_catalog() -> App {
        let mut app = App::new(super::super::app::Snapshot::default());
        // Read from text, as from a server (their members are kept as text).
        let resource: Resource =
            serde_json::from_str(r#"{"uri": "fixture://readme", "name": "readme"}"#).unwrap();
        let template: ResourceTemplate =
            serde_json::from_str(r#"{"uriTemplate": "fixture://big/{bytes}", "name": "big"}"#)
                .unwrap();
        let greet: Prompt = serde_json::from_str(
            r#"{"name": "greet", "arguments": [{"name": "name", "required": true}, {"name": "style"}]}"#,
        )
        .unwrap();
        app.data.catalog = Some(CatalogView {
            server: "fx".into(),
            catalog: Catalog {
                resources: vec![resource],
                templates: vec![template],
                prompts: vec![greet],
            },
            completions: true,
        });
        app.screen = Screen::Server("fx".into());
        app
    }

    fn typed(app: &mut App, text: &str) -> Vec<Effect> {
        let mut effects = Vec::new();
        for c in text.chars() {
            effects = app.handle_key(key(KeyCode::Char(c)));
        }
        effects
    }

    #[test]
    fn a_resource_is_read_and_a_template_asks_for_its_variables() {
        let mut app = app_with_catalog();
        app.handle_key(key(KeyCode::Char('R')));
        let effects = app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            effects,
            [Effect::ReadResource {
                ticket: 1,
                server: "fx".into(),
                uri: "fixture://readme".into()
            }]
        );
        // An output that is not the screen's is dropped; the screen's is shown.
        app.apply(Update::Output {
            ticket: 9,
            outcome: Ok("stale".into()),
        });
        app.apply(Update::Output {
            ticket: 1,
            outcome: Ok("The readme.".into()),
        });
        assert!(matches!(&app.screen, Screen::Output(o)
            if o.text == Some(Ok("The readme.".into())) && o.title == "fixture://readme"));
        assert_eq!(app.fetching, 0);
        app.handle_key(key(KeyCode::Esc));
        app.handle_key(key(KeyCode::Down));
        // The template: its one variable, completed as typed; ↓ and Enter take a value.
        let effects = app.handle_key(key(KeyCode::Enter));
        assert!(
            matches!(&effects[..], [Effect::Complete { argument, value, .. }]
            if argument == "bytes" && value.is_empty())
        );
        // Typed while that request is out: asked again once it is answered.
        assert!(typed(&mut app, "1").is_empty());
        let effects = app.apply_catalog(Update::Completed {
            ticket: 2,
            outcome: Ok(vec!["1024".into(), "2048".into()]),
        });
        let Effect::Complete { ticket, value, .. } = &effects[0] else {
            panic!("{effects:?}")
        };
        assert_eq!(value, "1");
        app.apply(Update::Completed {
            ticket: *ticket,
            outcome: Ok(vec!["1024".into(), "1048576".into()]),
        });
        app.handle_key(key(KeyCode::Down));
        app.handle_key(key(KeyCode::Down));
        app.handle_key(key(KeyCode::Down));
        let Screen::Arguments(form) = &app.screen else {
            panic!("{:?}", app.screen)
        };
        assert_eq!(form.chosen, Some(1));
        app.handle_key(key(KeyCode::Enter));
        let Screen::Arguments(form) = &app.screen else {
            panic!("{:?}", app.screen)
        };
        assert_eq!(form.args[0].input.text(), "1048576");
        app.completing = false;
        let effects = app.handle_key(key(KeyCode::Enter));
        assert!(matches!(&effects[..], [Effect::ReadResource { uri, .. }]
            if uri == "fixture://big/1048576"));
    }

    #[test]
    fn a_prompt_asks_for_its_required_arguments() {
        let mut app = app_with_catalog();
        app.handle_key(key(KeyCode::Char('P')));
        app.handle_key(key(KeyCode::Enter));
        app.completing = false;
        // Tab to style, typed; Enter: the name is required, the focus goes back to it.
        app.handle_key(key(KeyCode::Tab));
        app.completing = false;
        typed(&mut app, "formal");
        app.completing = false;
        assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
        let Screen::Arguments(form) = &app.screen else {
            panic!("{:?}", app.screen)
        };
        assert_eq!(form.field, 0);
        assert_eq!(form.error.as_deref(), Some("give name: it is required"));
        // The name's completions carry the style as context.
        let effects = typed(&mut app, "A");
        assert!(
            matches!(&effects[..], [Effect::Complete { context, reference, .. }]
            if context == &[("style".to_string(), "formal".to_string())]
                && *reference == CompletionRef::Prompt("greet".into()))
        );
        app.completing = false;
        assert_eq!(
            app.handle_key(key(KeyCode::Enter)),
            [Effect::GetPrompt {
                ticket: app.ticket,
                server: "fx".into(),
                prompt: "greet".into(),
                arguments: serde_json::json!({"name": "A", "style": "formal"}),
            }]
        );
        // Esc on the output goes back to the prompts.
        app.handle_key(key(KeyCode::Esc));
        assert!(matches!(&app.screen, Screen::Prompts { selected: 0, .. }));
    }

    #[test]
    fn a_call_takes_a_json_object() {
        let mut app = app_with_catalog();
        app.data.tools = vec![super::super::app::ToolRow {
            name: "mcp__fx__echo".into(),
            server: "fx".into(),
            tool: "echo".into(),
            description: String::new(),
            visible: true,
        }];
        app.handle_key(key(KeyCode::Char('t')));
        app.handle_key(key(KeyCode::Enter));
        assert!(matches!(&app.screen, Screen::Call(f) if f.input.text() == "{}"));
        app.handle_key(key(KeyCode::Backspace));
        app.handle_key(key(KeyCode::Backspace));
        typed(&mut app, "[1]");
        assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
        assert!(matches!(&app.screen, Screen::Call(f)
            if f.error.as_deref() == Some("the arguments must be a JSON object")));
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, r#"{"text": "hi"}"#);
        let effects = app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            effects,
            [Effect::CallTool {
                ticket: 1,
                name: "mcp__fx__echo".into(),
                arguments: serde_json::json!({"text": "hi"}),
            }]
        );
        // At most MAX_JOBS outputs run at once.
        app.fetching = MAX_JOBS;
        app.handle_key(key(KeyCode::Esc));
        app.handle_key(key(KeyCode::Enter));
        assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
        assert!(app.notice.as_ref().unwrap().text.contains("too much"));
    }
}
