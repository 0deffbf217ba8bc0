//! The pages of what a server offers besides its tools' marks: its resources and templates
//! (`R`), its prompts (`P`), the arguments form of a prompt or template (with the server's
//! completions), a tool's call (Enter on the tools screen), and the output of each, as the
//! model would see it. [`Fetches`] takes their keys and hands App a [`Turn`]: the page to
//! show, what to run, what to tell. State and keys only; drawn by `view/catalog.rs`.

use super::effect::{Effect, MAX_JOBS, Notice, TOO_MUCH};
use super::input::{Input, Mask, down, up};
use super::template::{expand_template, template_variables};
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
    back: Back,
}

/// The list an output or a form goes back to, with its selected row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Back {
    Resources(usize),
    Prompts(usize),
    Skills(usize),
    Tools(usize),
}

/// A page of the catalog.
#[derive(Debug, Clone)]
pub(crate) enum Page {
    Resources {
        server: String,
        selected: usize,
    },
    Prompts {
        server: String,
        selected: usize,
    },
    /// Each skill, its files under it.
    Skills {
        server: String,
        selected: usize,
    },
    Arguments(Box<ArgsForm>),
    Call(Box<CallForm>),
    Output(Box<Output>),
}

/// Where a key on a page leads.
#[derive(Debug, Clone)]
pub(crate) enum Next {
    /// Nowhere: the page stays as it was.
    Stay,
    /// A page: the same one changed, or another.
    Page(Page),
    /// The server's screen.
    Server(String),
    /// The tools screen, a row selected.
    Tools { server: String, selected: usize },
}

/// What a key on a page gives App: where to go, what to run, what to tell.
#[derive(Debug)]
pub(crate) struct Turn {
    pub(crate) next: Next,
    pub(crate) effects: Vec<Effect>,
    pub(crate) notice: Option<Notice>,
}

impl Turn {
    fn to(next: Next) -> Turn {
        Turn {
            next,
            effects: Vec::new(),
            notice: None,
        }
    }

    fn page(page: Page, effects: Vec<Effect>) -> Turn {
        Turn {
            effects,
            ..Turn::to(Next::Page(page))
        }
    }
}

/// The reads, prompts, calls and completions the pages started: their tickets and bounds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fetches {
    /// The last ticket given to a read, prompt, call or completion.
    pub(crate) ticket: u64,
    /// Reads, prompts and calls running.
    pub(crate) fetching: usize,
    /// A completion request is out.
    pub(crate) completing: bool,
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

    /// The list it was opened from.
    fn back(&self) -> Back {
        match self.target {
            Target::Prompt(_) => Back::Prompts(self.selected),
            Target::Template(_) => Back::Resources(self.selected),
        }
    }
}

impl CallForm {
    /// The call form of `tool`, the tools screen's row `selected`.
    pub(crate) fn new(server: String, tool: String, selected: usize) -> CallForm {
        CallForm {
            server,
            tool,
            // Empty, not `{}`: what is typed is the whole object (an empty field is `{}`).
            input: Input::new(Mask::None),
            error: None,
            selected,
        }
    }
}

/// A call's arguments as typed: a JSON object, or nothing for `{}`.
fn call_arguments(text: &str) -> serde_json::Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(text)
}

impl Back {
    /// The screen it names, on `server`.
    fn to(self, server: String) -> Next {
        match self {
            Back::Resources(selected) => Next::Page(Page::Resources { server, selected }),
            Back::Prompts(selected) => Next::Page(Page::Prompts { server, selected }),
            Back::Skills(selected) => Next::Page(Page::Skills { server, selected }),
            Back::Tools(selected) => Next::Tools { server, selected },
        }
    }
}

impl Page {
    /// The server whose catalog the page needs (a call's and an output's need none).
    pub(crate) fn catalog_server(&self) -> Option<&str> {
        match self {
            Page::Resources { server, .. }
            | Page::Prompts { server, .. }
            | Page::Skills { server, .. } => Some(server),
            Page::Arguments(form) => Some(&form.server),
            Page::Call(_) | Page::Output(_) => None,
        }
    }

    /// Pasted text: into the field being edited, if any.
    pub(crate) fn handle_paste(&mut self, text: &str) {
        match self {
            Page::Arguments(form) => form.args[form.field].input.insert(text),
            Page::Call(form) => form.input.insert(text),
            _ => {}
        }
    }
}

/// The row after ↑ or ↓ in a list of `count`.
fn moved(key: &KeyEvent, selected: usize, count: usize) -> usize {
    if up(key) {
        selected.saturating_sub(1)
    } else if down(key) {
        (selected + 1).min(count.saturating_sub(1))
    } else {
        selected
    }
}

impl Fetches {
    /// A key on `page`, with the catalog the snapshot holds.
    pub(crate) fn handle_key(
        &mut self,
        page: Page,
        key: KeyEvent,
        catalog: Option<&CatalogView>,
    ) -> Turn {
        match page {
            Page::Resources { server, selected } => {
                let catalog = catalog.filter(|c| c.server == server);
                self.on_resources(key, server, selected, catalog.cloned().unwrap_or_default())
            }
            Page::Prompts { server, selected } => {
                let catalog = catalog.filter(|c| c.server == server);
                self.on_prompts(key, server, selected, catalog.cloned().unwrap_or_default())
            }
            Page::Skills { server, selected } => {
                let catalog = catalog.filter(|c| c.server == server);
                self.on_skills(key, server, selected, catalog.cloned().unwrap_or_default())
            }
            Page::Arguments(form) => self.on_arguments(key, form),
            Page::Call(form) => self.on_call(key, form),
            Page::Output(output) => Turn::to(on_output(key, output)),
        }
    }

    /// Starts a read, a prompt or a call (`effect`, given its ticket and server) and shows
    /// its output, unless too many run: then the page stays, with a warning.
    fn fetch(
        &mut self,
        server: String,
        title: String,
        back: Back,
        effect: impl FnOnce(u64, String) -> Effect,
    ) -> Turn {
        if self.fetching >= MAX_JOBS {
            return Turn {
                notice: Some(Notice::warn(TOO_MUCH)),
                ..Turn::to(Next::Stay)
            };
        }
        self.fetching += 1;
        self.ticket += 1;
        let output = Output {
            server: server.clone(),
            title,
            ticket: self.ticket,
            text: None,
            scroll: 0,
            back,
        };
        let effect = effect(self.ticket, server);
        Turn::page(Page::Output(Box::new(output)), vec![effect])
    }

    /// Reads `uri`: a resource, or a template filled in.
    fn read(&mut self, server: String, uri: String, back: Back) -> Turn {
        self.fetch(server, uri.clone(), back, |ticket, server| {
            Effect::ReadResource {
                ticket,
                server,
                uri,
            }
        })
    }

    fn on_resources(
        &mut self,
        key: KeyEvent,
        server: String,
        selected: usize,
        catalog: CatalogView,
    ) -> Turn {
        let resources = &catalog.catalog.resources;
        let templates = &catalog.catalog.templates;
        let count = resources.len() + templates.len();
        let selected = selected.min(count.saturating_sub(1));
        match key.code {
            KeyCode::Esc => Turn::to(Next::Server(server)),
            KeyCode::Enter if selected < resources.len() => {
                let uri = resources[selected].uri.clone();
                self.read(server, uri, Back::Resources(selected))
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
                self.open_form(server, target, args, catalog.completions, selected)
            }
            _ => {
                let selected = moved(&key, selected, count);
                Turn::page(Page::Resources { server, selected }, Vec::new())
            }
        }
    }

    fn on_prompts(
        &mut self,
        key: KeyEvent,
        server: String,
        selected: usize,
        catalog: CatalogView,
    ) -> Turn {
        let prompts = &catalog.catalog.prompts;
        let selected = selected.min(prompts.len().saturating_sub(1));
        match key.code {
            KeyCode::Esc => Turn::to(Next::Server(server)),
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
                self.open_form(server, target, args, catalog.completions, selected)
            }
            _ => {
                let selected = moved(&key, selected, prompts.len());
                Turn::page(Page::Prompts { server, selected }, Vec::new())
            }
        }
    }

    fn on_skills(
        &mut self,
        key: KeyEvent,
        server: String,
        selected: usize,
        catalog: CatalogView,
    ) -> Turn {
        let rows = skill_rows(&catalog.catalog);
        let selected = selected.min(rows.len().saturating_sub(1));
        match key.code {
            KeyCode::Esc => Turn::to(Next::Server(server)),
            KeyCode::Enter if selected < rows.len() => {
                let uri = rows[selected].uri.clone();
                let back = Back::Skills(selected);
                self.fetch(server, uri.clone(), back, |ticket, server| {
                    Effect::LoadSkill {
                        ticket,
                        server,
                        uri,
                    }
                })
            }
            _ => {
                let selected = moved(&key, selected, rows.len());
                Turn::page(Page::Skills { server, selected }, Vec::new())
            }
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
    ) -> Turn {
        let mut form = Box::new(ArgsForm {
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
        });
        if form.args.is_empty() {
            return self.submit(form);
        }
        let effects = self.complete(&mut form);
        Turn::page(Page::Arguments(form), effects)
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

    fn on_arguments(&mut self, key: KeyEvent, mut form: Box<ArgsForm>) -> Turn {
        let count = form.args.len();
        let mut effects = Vec::new();
        match key.code {
            KeyCode::Esc => return Turn::to(form.back().to(form.server)),
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
        Turn::page(Page::Arguments(form), effects)
    }

    /// Reads the template's resource or gets the prompt, once every required argument is
    /// given.
    fn submit(&mut self, mut form: Box<ArgsForm>) -> Turn {
        if let Some(i) = form
            .args
            .iter()
            .position(|a| a.required && a.input.text().is_empty())
        {
            form.error = Some(format!("give {}: it is required", form.args[i].name));
            form.field = i;
            return Turn::page(Page::Arguments(form), Vec::new());
        }
        let values = form.values();
        let back = form.back();
        let server = form.server;
        match form.target {
            Target::Template(template) => {
                self.read(server, expand_template(&template, &values), back)
            }
            Target::Prompt(prompt) => {
                let arguments: Map<String, Value> = values
                    .into_iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                self.fetch(server, prompt.clone(), back, |ticket, server| {
                    Effect::GetPrompt {
                        ticket,
                        server,
                        prompt,
                        arguments: Value::Object(arguments),
                    }
                })
            }
        }
    }

    fn on_call(&mut self, key: KeyEvent, mut form: Box<CallForm>) -> Turn {
        let back = Back::Tools(form.selected);
        match key.code {
            KeyCode::Esc => return Turn::to(back.to(form.server)),
            KeyCode::Enter => match call_arguments(form.input.text()) {
                Ok(arguments @ Value::Object(_)) => {
                    let CallForm { server, tool, .. } = *form;
                    return self.fetch(server, format!("call {tool}"), back, |ticket, _| {
                        Effect::CallTool {
                            ticket,
                            name: tool,
                            arguments,
                        }
                    });
                }
                Ok(_) => form.error = Some("the arguments must be a JSON object".into()),
                Err(e) => form.error = Some(format!("not JSON: {e}")),
            },
            _ => {
                form.input.handle(&key);
                form.error = None;
            }
        }
        Turn::page(Page::Call(form), Vec::new())
    }

    /// A read, prompt or call ended: shown if `page` is its output.
    pub(crate) fn output(
        &mut self,
        page: Option<&mut Page>,
        ticket: u64,
        outcome: Result<String, String>,
    ) {
        self.fetching = self.fetching.saturating_sub(1);
        if let Some(Page::Output(output)) = page
            && output.ticket == ticket
        {
            output.text = Some(outcome.map(kept).map_err(kept));
        }
    }

    /// Values came for a field: shown if `page` is the form that asked and the field did not
    /// change since; else asked again.
    pub(crate) fn completed(
        &mut self,
        page: Option<&mut Page>,
        ticket: u64,
        outcome: Result<Vec<String>, String>,
    ) -> Vec<Effect> {
        self.completing = false;
        let Some(Page::Arguments(form)) = page else {
            return Vec::new();
        };
        if form.asked == Some(ticket) && !form.stale {
            // A server that cannot complete is only quiet.
            form.completions = outcome.unwrap_or_default();
            form.completions.truncate(100);
            form.asked = None;
            return Vec::new();
        }
        self.complete(form)
    }
}

/// A row of the skills page: a skill (its `SKILL.md`) or one of its files.
pub(crate) struct SkillRow<'a> {
    /// The skill it belongs to.
    pub(crate) skill: &'a crate::Skill,
    /// What Enter loads.
    pub(crate) uri: String,
    /// Whether it is the skill's own row (else one of its files).
    pub(crate) is_skill: bool,
}

/// The rows of the skills page: each skill, then its files other than its `SKILL.md`.
pub(crate) fn skill_rows(catalog: &Catalog) -> Vec<SkillRow<'_>> {
    let mut rows = Vec::new();
    for skill in &catalog.skills {
        rows.push(SkillRow {
            skill,
            uri: skill.uri.clone(),
            is_skill: true,
        });
        for file in skill.files.iter().flatten().filter(|f| f.uri != skill.uri) {
            rows.push(SkillRow {
                skill,
                uri: file.uri.clone(),
                is_skill: false,
            });
        }
    }
    rows
}

/// An output scrolled, or left for the list it came from.
fn on_output(key: KeyEvent, mut output: Box<Output>) -> Next {
    output.scroll = match key.code {
        KeyCode::Esc => return output.back.to(output.server),
        KeyCode::PageDown => output.scroll.saturating_add(10),
        KeyCode::PageUp => output.scroll.saturating_sub(10),
        _ if down(&key) => output.scroll.saturating_add(1),
        _ if up(&key) => output.scroll.saturating_sub(1),
        _ => output.scroll,
    };
    Next::Page(Page::Output(output))
}
