//! The panel's state machine: keys in, [`Effect`]s out, [`Update`]s from the background in;
//! no I/O and no drawing, so every screen and key can be tested plainly.

use super::catalog::{ArgsForm, CallForm, CatalogView, Output};
use super::form::Asking;
use super::input::{Input, Mask, parse_env, parse_header, split_args};
use crate::auth::callback::DEFAULT_REDIRECT_URI;
use crate::host::config::{ServerConfig, Timeouts, server_name_problem};
use crate::host::control::OAuthClient;
use crate::host::gate::Allowlist;
use crate::host::manager::{ServerState, ServerStatus};
use crate::host::{Reply, ReplyError};
use crate::protocol::items::CompletionRef;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// How many background jobs (connects, reconnects, removals, logins) run at once at most.
pub(crate) const MAX_JOBS: usize = 16;

/// One registered tool, as the tools screen lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolRow {
    /// `mcp__<server>__<tool>`.
    pub(crate) name: String,
    pub(crate) server: String,
    /// Its name on its server.
    pub(crate) tool: String,
    pub(crate) description: String,
    /// Whether the server's filter shows it to the model.
    pub(crate) visible: bool,
}

/// An `"auth": "oauth"` server's client settings (never its secret).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OAuthInfo {
    pub(crate) client_id: Option<String>,
    pub(crate) redirect_uri: Option<String>,
}

/// What the panel shows, read from the manager and the files.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Every server the manager runs, by name.
    pub(crate) servers: Vec<ServerStatus>,
    /// Every registered tool, by name.
    pub(crate) tools: Vec<ToolRow>,
    pub(crate) allowlist: Allowlist,
    /// The servers of the config file.
    pub(crate) configured: BTreeSet<String>,
    /// The OAuth servers of the config file.
    pub(crate) oauth: BTreeMap<String, OAuthInfo>,
    /// Each connected server's instructions.
    pub(crate) instructions: BTreeMap<String, String>,
    /// The catalog of the server whose screen is open.
    pub(crate) catalog: Option<CatalogView>,
    /// A file that could not be read.
    pub(crate) problem: Option<String>,
}

/// What the panel asks the background to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    Quit,
    Add {
        name: String,
        // Boxed: an entry is larger than every other effect.
        server: Box<ServerConfig>,
    },
    Remove(String),
    Reconnect(String),
    /// A registered tool's name.
    ToggleTool(String),
    /// A server's name.
    ToggleServer(String),
    /// Shows or hides one tool of a server (its name on the server).
    SetVisible {
        server: String,
        tool: Option<String>,
        visible: bool,
    },
    /// Enables or disables a server.
    SetEnabled(String, bool),
    SetClient {
        name: String,
        client: OAuthClient,
    },
    Login(String),
    CancelLogin(String),
    Paste {
        name: String,
        url: String,
    },
    /// Reads a resource; its output comes back under `ticket`.
    ReadResource {
        ticket: u64,
        server: String,
        uri: String,
    },
    /// Gets a prompt filled in.
    GetPrompt {
        ticket: u64,
        server: String,
        prompt: String,
        arguments: Value,
    },
    /// Calls a registered tool.
    CallTool {
        ticket: u64,
        name: String,
        arguments: Value,
    },
    /// Asks for values of an argument (what is typed so far, the other arguments given).
    Complete {
        ticket: u64,
        server: String,
        reference: CompletionRef,
        argument: String,
        value: String,
        context: Vec<(String, String)>,
    },
    /// Answers a server's request; once taken, opens `open` in the browser.
    Reply {
        id: String,
        reply: Reply,
        open: Option<String>,
    },
}

/// A background job on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Job {
    Saving,
    Connecting,
    Reconnecting,
    Removing,
    LoggingIn,
}

impl Job {
    /// What the job is doing, as the panel says it.
    pub(crate) fn doing(self) -> &'static str {
        match self {
            Job::Saving => "saving",
            Job::Connecting => "connecting",
            Job::Reconnecting => "reconnecting",
            Job::Removing => "removing",
            Job::LoggingIn => "logging in",
        }
    }
}

/// What the background tells the panel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Update {
    /// A job ended: `Ok` with what to tell, `Err` with why it failed.
    Finished {
        server: String,
        job: Job,
        outcome: Result<String, String>,
    },
    /// An allowlist change was saved (the list as it is now) or refused.
    Allowlist(Result<Allowlist, String>),
    /// A visibility change was saved (what to tell) or refused.
    Visibility(Result<String, String>),
    /// A client was saved (the redirect URI in force) or refused.
    ClientSaved(String, Result<String, String>),
    LoginUrl(String, String),
    LoginDone(String, Result<(), String>),
    /// A pasted URL was refused (the login goes on).
    PasteRefused(String, String),
    /// A read, prompt or call ended: the text to show, or why it failed.
    Output {
        ticket: u64,
        outcome: Result<String, String>,
    },
    /// Values for the argument being typed (a server that cannot complete: an error).
    Completed {
        ticket: u64,
        outcome: Result<Vec<String>, String>,
    },
    /// A server asks the user something.
    Asked(Box<Asking>),
    /// Every request waiting now (after the panel fell behind the event stream).
    Waiting(Vec<Asking>),
    /// A request ended unanswered (it expired, or the server stopped waiting).
    RequestEnded {
        id: String,
        reason: String,
    },
    /// An answer was taken, or refused.
    Replied {
        id: String,
        outcome: Result<(), ReplyError>,
    },
    /// Something to tell on the status line.
    Told(String),
}

/// A line under the screen: what just happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice {
    pub(crate) text: String,
    pub(crate) error: bool,
}

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
    fn new() -> Wizard {
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

/// The fields of the client form, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientField {
    Id,
    Secret,
    Redirect,
}

/// The pre-registered client form.
#[derive(Debug, Clone)]
pub(crate) struct ClientForm {
    pub(crate) field: ClientField,
    pub(crate) client_id: String,
    pub(crate) secret: Option<String>,
    pub(crate) input: Input,
    pub(crate) error: Option<String>,
    pub(crate) saving: bool,
}

/// Where a login is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoginState {
    Waiting,
    Done(Result<(), String>),
}

/// A screen.
#[derive(Debug, Clone)]
pub(crate) enum Screen {
    List,
    Server(String),
    Tools {
        server: String,
        selected: usize,
    },
    Instructions {
        server: String,
        scroll: u16,
    },
    Resources {
        server: String,
        selected: usize,
    },
    Prompts {
        server: String,
        selected: usize,
    },
    Arguments(Box<ArgsForm>),
    Call(Box<CallForm>),
    Output(Box<Output>),
    Add(Box<Wizard>),
    Client {
        server: String,
        form: Box<ClientForm>,
    },
    Login {
        server: String,
        url: Option<String>,
        state: LoginState,
        /// The paste field, while the user pastes.
        paste: Option<Input>,
        error: Option<String>,
    },
}

/// The panel's state.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) screen: Screen,
    pub(crate) data: Snapshot,
    /// The selected row of the list.
    pub(crate) selected: usize,
    /// A server to select in the list once the manager shows it (one just added).
    pub(crate) follow: Option<String>,
    /// The server `d` asked to delete, waiting for `y`.
    pub(crate) confirm_delete: Option<String>,
    pub(crate) jobs: BTreeMap<String, Job>,
    pub(crate) notice: Option<Notice>,
    /// Redraws so far (the spinner's frame).
    pub(crate) frame: usize,
    pub(crate) quit: bool,
    /// What servers ask, oldest first; the first is shown over the screen.
    pub(crate) asked: VecDeque<Asking>,
    /// The last ticket given to a read, prompt, call or completion.
    pub(crate) ticket: u64,
    /// Reads, prompts and calls running.
    pub(crate) fetching: usize,
    /// A completion request is out.
    pub(crate) completing: bool,
}

fn key_is(key: &KeyEvent, c: char) -> bool {
    key.code == KeyCode::Char(c) && !key.modifiers.contains(KeyModifiers::CONTROL)
}

fn up(key: &KeyEvent) -> bool {
    key.code == KeyCode::Up || key_is(key, 'k')
}

fn down(key: &KeyEvent) -> bool {
    key.code == KeyCode::Down || key_is(key, 'j')
}

impl App {
    pub(crate) fn new(data: Snapshot) -> App {
        App {
            screen: Screen::List,
            data,
            selected: 0,
            follow: None,
            confirm_delete: None,
            jobs: BTreeMap::new(),
            notice: None,
            frame: 0,
            quit: false,
            asked: VecDeque::new(),
            ticket: 0,
            fetching: 0,
            completing: false,
        }
    }

    /// The server selected in the list.
    pub(crate) fn selected_server(&self) -> Option<&ServerStatus> {
        self.data.servers.get(self.selected)
    }

    pub(crate) fn status(&self, name: &str) -> Option<&ServerStatus> {
        self.data.servers.iter().find(|s| s.name == name)
    }

    pub(crate) fn tools_of(&self, server: &str) -> Vec<&ToolRow> {
        self.data
            .tools
            .iter()
            .filter(|t| t.server == server)
            .collect()
    }

    /// Takes fresh data; the list keeps its selected server where it can.
    pub(crate) fn refresh(&mut self, data: Snapshot) {
        let selected = self.selected_server().map(|s| s.name.clone());
        self.data = data;
        let follow = self
            .follow
            .take_if(|name| self.data.servers.iter().any(|s| s.name == *name));
        self.select(follow.or(selected).as_deref());
    }

    fn select(&mut self, name: Option<&str>) {
        if let Some(i) = name.and_then(|n| self.data.servers.iter().position(|s| s.name == n)) {
            self.selected = i;
        }
        self.selected = self.selected.min(self.data.servers.len().saturating_sub(1));
    }

    pub(crate) fn tell(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            error: false,
        });
    }

    pub(crate) fn warn(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            error: true,
        });
    }

    /// Starts a job on `server` unless one is running there (or too many are).
    fn start_job(&mut self, server: &str, job: Job) -> bool {
        if let Some(running) = self.jobs.get(server) {
            self.warn(format!(
                "{server} is busy ({}); wait for it",
                running.doing()
            ));
            return false;
        }
        if self.jobs.len() >= MAX_JOBS {
            self.warn("too much is in progress; wait a moment");
            return false;
        }
        self.jobs.insert(server.to_string(), job);
        true
    }

    /// A name the wizard cannot take: in the file or in the manager.
    fn is_taken(&self, name: &str) -> bool {
        self.data.configured.contains(name) || self.status(name).is_some()
    }

    /// A key: what changes on screen, and what to do in the background.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return vec![Effect::Quit];
        }
        self.notice = None;
        // A server's question is over the screen and takes the keys first.
        if let Some(asking) = self.asked.front_mut() {
            return asking.handle_key(key);
        }
        match self.screen.clone() {
            Screen::List => self.on_list(key),
            Screen::Server(name) => self.on_server(key, name),
            Screen::Tools { server, selected } => self.on_tools(key, server, selected),
            Screen::Instructions { server, scroll } => {
                let scroll = match key.code {
                    KeyCode::Esc => {
                        self.screen = Screen::Server(server);
                        return Vec::new();
                    }
                    KeyCode::PageDown => scroll.saturating_add(10),
                    KeyCode::PageUp => scroll.saturating_sub(10),
                    _ if down(&key) => scroll.saturating_add(1),
                    _ if up(&key) => scroll.saturating_sub(1),
                    _ => scroll,
                };
                self.screen = Screen::Instructions { server, scroll };
                Vec::new()
            }
            Screen::Resources { server, selected } => self.on_resources(key, server, selected),
            Screen::Prompts { server, selected } => self.on_prompts(key, server, selected),
            Screen::Arguments(form) => self.on_arguments(key, *form),
            Screen::Call(form) => self.on_call(key, *form),
            Screen::Output(output) => {
                self.on_output(key, *output);
                Vec::new()
            }
            Screen::Add(wizard) => self.on_wizard(key, *wizard),
            Screen::Client { server, form } => self.on_client(key, server, *form),
            Screen::Login { .. } => self.on_login(key),
        }
    }

    /// Pasted text (bracketed paste): into the field being edited, if any.
    pub(crate) fn handle_paste(&mut self, text: &str) {
        if let Some(asking) = self.asked.front_mut() {
            return asking.handle_paste(text);
        }
        match &mut self.screen {
            Screen::Arguments(form) => form.args[form.field].input.insert(text),
            Screen::Call(form) => form.input.insert(text),
            Screen::Add(wizard) if !wizard.saving => wizard.input.insert(text),
            Screen::Client { form, .. } if !form.saving => form.input.insert(text),
            Screen::Login {
                paste: Some(input), ..
            } => input.insert(text),
            _ => {}
        }
    }

    fn on_list(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(name) = self.confirm_delete.take() {
            if key_is(&key, 'y') && self.start_job(&name, Job::Removing) {
                self.tell(format!("removing {name}…"));
                return vec![Effect::Remove(name)];
            }
            self.tell(format!("{name} is kept"));
            return Vec::new();
        }
        let count = self.data.servers.len();
        match key.code {
            _ if up(&key) => self.selected = self.selected.saturating_sub(1),
            _ if down(&key) => {
                self.selected = (self.selected + 1).min(count.saturating_sub(1));
            }
            KeyCode::Enter => {
                if let Some(s) = self.selected_server() {
                    self.screen = Screen::Server(s.name.clone());
                }
            }
            KeyCode::Char('a') => self.screen = Screen::Add(Box::new(Wizard::new())),
            KeyCode::Char('d') => match self.selected_server() {
                Some(s) => self.confirm_delete = Some(s.name.clone()),
                None => self.warn("no server to delete"),
            },
            KeyCode::Char('q') => {
                self.quit = true;
                return vec![Effect::Quit];
            }
            _ => {}
        }
        Vec::new()
    }

    fn on_server(&mut self, key: KeyEvent, name: String) -> Vec<Effect> {
        let oauth = self.data.oauth.get(&name).cloned();
        let not_oauth = |name: &str| {
            format!("{name} does not log in: set \"auth\": \"oauth\" in its entry to use OAuth")
        };
        match key.code {
            KeyCode::Esc => self.screen = Screen::List,
            KeyCode::Char('t') => {
                self.screen = Screen::Tools {
                    server: name,
                    selected: 0,
                }
            }
            KeyCode::Char('i') => {
                self.screen = Screen::Instructions {
                    server: name,
                    scroll: 0,
                }
            }
            KeyCode::Char('R') => {
                self.screen = Screen::Resources {
                    server: name,
                    selected: 0,
                }
            }
            KeyCode::Char('P') => {
                self.screen = Screen::Prompts {
                    server: name,
                    selected: 0,
                }
            }
            KeyCode::Char('e') => {
                let enable = self
                    .status(&name)
                    .is_some_and(|s| s.state == ServerState::Disabled);
                return vec![Effect::SetEnabled(name, enable)];
            }
            KeyCode::Char('r') if self.start_job(&name, Job::Reconnecting) => {
                return vec![Effect::Reconnect(name)];
            }
            KeyCode::Char('l') if oauth.is_none() => self.warn(not_oauth(&name)),
            KeyCode::Char('l') if self.start_job(&name, Job::LoggingIn) => {
                self.screen = Screen::Login {
                    server: name.clone(),
                    url: None,
                    state: LoginState::Waiting,
                    paste: None,
                    error: None,
                };
                return vec![Effect::Login(name)];
            }
            KeyCode::Char('c') => match oauth {
                None => self.warn(not_oauth(&name)),
                Some(info) => {
                    self.screen = Screen::Client {
                        server: name,
                        form: Box::new(ClientForm {
                            field: ClientField::Id,
                            client_id: String::new(),
                            secret: None,
                            input: Input::with_text(
                                info.client_id.as_deref().unwrap_or(""),
                                Mask::None,
                            ),
                            error: None,
                            saving: false,
                        }),
                    }
                }
            },
            _ => {}
        }
        Vec::new()
    }

    fn on_tools(&mut self, key: KeyEvent, server: String, selected: usize) -> Vec<Effect> {
        let tools = self.tools_of(&server);
        let count = tools.len();
        let chosen = tools.get(selected).map(|t| t.name.clone());
        let shown = tools.get(selected).map(|t| (t.tool.clone(), t.visible));
        let any_visible = tools.iter().any(|t| t.visible);
        let selected = match key.code {
            KeyCode::Esc => {
                self.screen = Screen::Server(server);
                return Vec::new();
            }
            KeyCode::Char(' ') => {
                return chosen.map(Effect::ToggleTool).into_iter().collect();
            }
            KeyCode::Char('A') => return vec![Effect::ToggleServer(server)],
            KeyCode::Enter => {
                self.open_call(server, selected);
                return Vec::new();
            }
            KeyCode::Char('v') => {
                return shown
                    .map(|(tool, visible)| Effect::SetVisible {
                        server,
                        tool: Some(tool),
                        visible: !visible,
                    })
                    .into_iter()
                    .collect();
            }
            KeyCode::Char('V') => {
                return vec![Effect::SetVisible {
                    server,
                    tool: None,
                    visible: !any_visible,
                }];
            }
            _ if up(&key) => selected.saturating_sub(1),
            _ if down(&key) => (selected + 1).min(count.saturating_sub(1)),
            _ => selected,
        };
        self.screen = Screen::Tools { server, selected };
        Vec::new()
    }

    fn on_wizard(&mut self, key: KeyEvent, mut wizard: Wizard) -> Vec<Effect> {
        if key.code == KeyCode::Esc {
            self.screen = Screen::List;
            self.tell("nothing was added");
            return Vec::new();
        }
        if wizard.saving {
            self.screen = Screen::Add(Box::new(wizard));
            return Vec::new();
        }
        let mut effects = Vec::new();
        let choosing = matches!(wizard.step, Step::Transport | Step::Auth | Step::Summary);
        let empty = choosing || wizard.input.text().is_empty();
        match (wizard.step, key.code) {
            (_, KeyCode::BackTab) => wizard.back(),
            (_, KeyCode::Backspace) if empty => wizard.back(),
            (Step::Transport, _) if up(&key) => wizard.transport = 0,
            (Step::Transport, _) if down(&key) => wizard.transport = 1,
            (Step::Auth, _) if up(&key) => wizard.auth = 0,
            (Step::Auth, _) if down(&key) => wizard.auth = 1,
            (_, KeyCode::Enter) => {
                let taken = |name: &str| self.is_taken(name);
                if let Some(server) = wizard.accept(&taken) {
                    if self.start_job(&wizard.name, Job::Saving) {
                        wizard.saving = true;
                        effects.push(Effect::Add {
                            name: wizard.name.clone(),
                            server: Box::new(server),
                        });
                    } else {
                        wizard.error = self.notice.take().map(|n| n.text);
                    }
                }
            }
            (Step::Transport | Step::Auth | Step::Summary, _) => {}
            _ => {
                wizard.input.handle(&key);
            }
        }
        self.screen = Screen::Add(Box::new(wizard));
        effects
    }

    fn on_client(&mut self, key: KeyEvent, server: String, mut form: ClientForm) -> Vec<Effect> {
        if key.code == KeyCode::Esc {
            self.screen = Screen::Server(server);
            self.tell("the client was not changed");
            return Vec::new();
        }
        if form.saving {
            self.screen = Screen::Client {
                server,
                form: Box::new(form),
            };
            return Vec::new();
        }
        let mut effects = Vec::new();
        if key.code == KeyCode::Enter {
            let text = form.input.text().trim().to_string();
            form.error = None;
            match form.field {
                ClientField::Id if text.is_empty() => {
                    form.error = Some("give the client id the authorization server issued".into());
                }
                ClientField::Id => {
                    form.client_id = text;
                    form.field = ClientField::Secret;
                    form.input = Input::new(Mask::All);
                }
                ClientField::Secret => {
                    form.secret = Some(form.input.text().to_string()).filter(|s| !s.is_empty());
                    form.field = ClientField::Redirect;
                    let redirect = self
                        .data
                        .oauth
                        .get(&server)
                        .and_then(|o| o.redirect_uri.clone())
                        .unwrap_or_else(|| DEFAULT_REDIRECT_URI.to_string());
                    form.input = Input::with_text(&redirect, Mask::None);
                }
                ClientField::Redirect => {
                    form.saving = true;
                    effects.push(Effect::SetClient {
                        name: server.clone(),
                        client: OAuthClient {
                            client_id: form.client_id.clone(),
                            client_secret: form.secret.clone().map(Into::into),
                            redirect_uri: Some(text).filter(|t| t != DEFAULT_REDIRECT_URI),
                        },
                    });
                }
            }
        } else {
            form.input.handle(&key);
        }
        self.screen = Screen::Client {
            server,
            form: Box::new(form),
        };
        effects
    }

    fn on_login(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Screen::Login {
            server,
            state,
            paste,
            error,
            ..
        } = &mut self.screen
        else {
            return Vec::new();
        };
        let server = server.clone();
        if let Some(input) = paste {
            match key.code {
                KeyCode::Esc => *paste = None,
                KeyCode::Enter => {
                    let url = input.text().trim().to_string();
                    *paste = None;
                    *error = None;
                    return vec![Effect::Paste { name: server, url }];
                }
                _ => {
                    input.handle(&key);
                }
            }
            return Vec::new();
        }
        let waiting = *state == LoginState::Waiting;
        match key.code {
            KeyCode::Char('p') if waiting => *paste = Some(Input::new(Mask::None)),
            KeyCode::Esc | KeyCode::Enter if !waiting => self.screen = Screen::Server(server),
            KeyCode::Esc => {
                self.screen = Screen::Server(server.clone());
                self.tell(format!("the login to {server} was cancelled"));
                return vec![Effect::CancelLogin(server)];
            }
            _ => {}
        }
        Vec::new()
    }

    /// News from the background; what to do about it.
    pub(crate) fn apply(&mut self, update: Update) -> Vec<Effect> {
        match update {
            Update::Output { .. } | Update::Completed { .. } => return self.apply_catalog(update),
            Update::Asked(_)
            | Update::Waiting(_)
            | Update::RequestEnded { .. }
            | Update::Replied { .. } => self.apply_request(update),
            Update::Told(text) => self.tell(text),
            Update::Finished {
                server,
                job,
                outcome,
            } => self.finished(server, job, outcome),
            Update::Allowlist(Ok(list)) => self.data.allowlist = list,
            Update::Allowlist(Err(e)) => self.warn(e),
            Update::Visibility(Ok(told)) => self.tell(told),
            Update::Visibility(Err(e)) => self.warn(e),
            Update::ClientSaved(name, outcome) => {
                let Screen::Client { server, form } = &mut self.screen else {
                    match outcome {
                        Ok(_) => self.tell(format!("the OAuth client of {name} is saved")),
                        Err(e) => self.warn(e),
                    }
                    return Vec::new();
                };
                if *server != name {
                    return Vec::new();
                }
                match outcome {
                    Ok(redirect) => {
                        self.screen = Screen::Server(name.clone());
                        self.tell(format!(
                            "the OAuth client of {name} is saved (redirect URI {redirect}); log in with l"
                        ));
                    }
                    Err(e) => {
                        form.saving = false;
                        form.error = Some(e);
                    }
                }
            }
            Update::LoginUrl(name, new_url) => {
                if let Screen::Login { server, url, .. } = &mut self.screen
                    && *server == name
                {
                    *url = Some(new_url);
                }
            }
            Update::LoginDone(name, outcome) => {
                self.jobs.remove(&name);
                match &mut self.screen {
                    Screen::Login { server, state, .. } if *server == name => {
                        *state = LoginState::Done(outcome);
                    }
                    _ => match outcome {
                        Ok(()) => self.tell(format!("logged in to {name}")),
                        Err(e) => self.warn(format!("the login to {name} failed: {e}")),
                    },
                }
            }
            Update::PasteRefused(name, why) => match &mut self.screen {
                Screen::Login { server, error, .. } if *server == name => *error = Some(why),
                _ => self.warn(why),
            },
        }
        Vec::new()
    }

    fn finished(&mut self, server: String, job: Job, outcome: Result<String, String>) {
        self.jobs.remove(&server);
        if job == Job::Saving {
            if let Screen::Add(wizard) = &mut self.screen
                && wizard.name == server
            {
                match outcome {
                    Ok(_) => {
                        self.screen = Screen::List;
                        self.data.configured.insert(server.clone());
                    }
                    Err(e) => {
                        wizard.saving = false;
                        wizard.error = Some(e);
                        return;
                    }
                }
            }
            if outcome.is_ok() {
                self.jobs.insert(server.clone(), Job::Connecting);
            }
        }
        match outcome {
            Ok(text) => {
                if job == Job::Saving {
                    self.follow = Some(server);
                }
                self.tell(text);
            }
            Err(e) => self.warn(e),
        }
    }

    /// Whether a server shows a spinner: it is connecting or a job runs on it.
    pub(crate) fn is_busy(&self, status: &ServerStatus) -> bool {
        status.state == ServerState::Connecting || self.jobs.contains_key(&status.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            assert!(app.handle_key(key(KeyCode::Char(c))).is_empty());
        }
    }

    fn status(name: &str, state: ServerState) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            transport: "stdio".into(),
            era: None,
            protocol_version: None,
            state,
            last_error: None,
            tool_count: 0,
            hidden_tools: 0,
            resource_count: 0,
            template_count: 0,
            prompt_count: 0,
            has_instructions: false,
            timeout: std::time::Duration::from_secs(60),
            startup_timeout: std::time::Duration::from_secs(60),
        }
    }

    fn app_with(names: &[&str]) -> App {
        App::new(Snapshot {
            servers: names
                .iter()
                .map(|n| status(n, ServerState::Connected))
                .collect(),
            configured: names.iter().map(|n| n.to_string()).collect(),
            ..Snapshot::default()
        })
    }

    #[test]
    fn visibility_and_enable_keys() {
        let mut app = app_with(&["fx"]);
        app.data.tools = ["echo", "env"]
            .iter()
            .map(|t| ToolRow {
                name: format!("mcp__fx__{t}"),
                server: "fx".into(),
                tool: t.to_string(),
                description: String::new(),
                visible: *t == "echo",
            })
            .collect();
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            app.handle_key(key(KeyCode::Char('e'))),
            [Effect::SetEnabled("fx".into(), false)]
        );
        app.data.servers[0].state = ServerState::Disabled;
        assert_eq!(
            app.handle_key(key(KeyCode::Char('e'))),
            [Effect::SetEnabled("fx".into(), true)]
        );
        app.handle_key(key(KeyCode::Char('t')));
        let hide = Effect::SetVisible {
            server: "fx".into(),
            tool: Some("echo".into()),
            visible: false,
        };
        assert_eq!(app.handle_key(key(KeyCode::Char('v'))), [hide]);
        app.handle_key(key(KeyCode::Down));
        let show = Effect::SetVisible {
            server: "fx".into(),
            tool: Some("env".into()),
            visible: true,
        };
        assert_eq!(app.handle_key(key(KeyCode::Char('v'))), [show]);
        let all = Effect::SetVisible {
            server: "fx".into(),
            tool: None,
            visible: false,
        };
        assert_eq!(app.handle_key(key(KeyCode::Char('V'))), [all]);
    }

    fn wizard(app: &App) -> &Wizard {
        match &app.screen {
            Screen::Add(w) => w,
            other => panic!("not the wizard: {other:?}"),
        }
    }

    #[test]
    fn the_wizard_refuses_bad_input_on_its_step() {
        let mut app = app_with(&["fx"]);
        app.handle_key(key(KeyCode::Char('a')));
        for (name, why) in [
            ("", "give the server a name"),
            ("fx", "already configured"),
            ("a b", "is not valid: use letters"),
        ] {
            app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
            typed(&mut app, name);
            app.handle_key(key(KeyCode::Enter));
            let w = wizard(&app);
            assert_eq!(w.step, Step::Name);
            assert!(w.error.as_deref().unwrap().contains(why), "{:?}", w.error);
        }
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "web");
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Down));
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Url);
        typed(&mut app, "ftp://x");
        app.handle_key(key(KeyCode::Enter));
        assert!(wizard(&app).error.as_deref().unwrap().contains("http://"));
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "https://h.test/mcp");
        app.handle_key(key(KeyCode::Enter));
        typed(&mut app, "no colon");
        app.handle_key(key(KeyCode::Enter));
        assert!(
            wizard(&app)
                .error
                .as_deref()
                .unwrap()
                .contains("Name: value")
        );
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "X-Key: s3cret");
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Auth);
        app.handle_key(key(KeyCode::Down));
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Timeouts);
        for (bad, why) in [
            (
                "0",
                "\"timeout\" is 0; it must be a number of seconds above 0",
            ),
            ("soon", "\"timeout\" is \"soon\""),
            ("30 90000", "\"startup_timeout\" is 90000;"),
            ("1 2 3", "at most two numbers"),
        ] {
            app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
            typed(&mut app, bad);
            app.handle_key(key(KeyCode::Enter));
            let w = wizard(&app);
            assert_eq!(w.step, Step::Timeouts, "{bad}");
            assert!(
                w.error.as_deref().unwrap().contains(why),
                "{bad}: {:?}",
                w.error
            );
        }
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(&mut app, "120 2.5");
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(wizard(&app).step, Step::Summary);
        let effects = app.handle_key(key(KeyCode::Enter));
        let Effect::Add { name, server } = &effects[0] else {
            panic!("{effects:?}")
        };
        assert_eq!(name, "web");
        assert_eq!(
            server.to_value(),
            json!({"url": "https://h.test/mcp", "headers": {"X-Key": "s3cret"}, "auth": "oauth",
                   "timeout": 120, "startup_timeout": 2.5})
        );
        // A refusal from the save is shown on the summary; nothing more is sent.
        app.apply(Update::Finished {
            server: "web".into(),
            job: Job::Saving,
            outcome: Err("a server named \"web\" is already in the config".into()),
        });
        let w = wizard(&app);
        assert!(!w.saving && w.error.as_deref().unwrap().contains("already"));
        assert!(app.jobs.is_empty());
    }

    #[test]
    fn one_job_per_server_and_a_bound_on_all() {
        let mut app = app_with(&["fx"]);
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            app.handle_key(key(KeyCode::Char('r'))),
            [Effect::Reconnect("fx".into())]
        );
        assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
        assert!(app.notice.as_ref().unwrap().text.contains("busy"));
        for i in 0..MAX_JOBS {
            app.jobs.insert(format!("s{i}"), Job::Connecting);
        }
        app.jobs.remove("fx");
        assert!(app.handle_key(key(KeyCode::Char('r'))).is_empty());
        assert!(app.notice.as_ref().unwrap().text.contains("too much"));
    }

    #[test]
    fn login_screen_keys() {
        let mut app = app_with(&["py"]);
        app.data.oauth.insert("py".into(), OAuthInfo::default());
        app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            app.handle_key(key(KeyCode::Char('l'))),
            [Effect::Login("py".into())]
        );
        app.apply(Update::LoginUrl(
            "py".into(),
            "http://as.test/authorize?x=1".into(),
        ));
        assert!(matches!(&app.screen, Screen::Login { url: Some(u), .. } if u.contains("as.test")));
        // p opens the paste field; Esc closes it, the login goes on.
        app.handle_key(key(KeyCode::Char('p')));
        typed(&mut app, "half");
        app.handle_key(key(KeyCode::Esc));
        assert!(matches!(
            &app.screen,
            Screen::Login {
                paste: None,
                state: LoginState::Waiting,
                ..
            }
        ));
        app.handle_key(key(KeyCode::Char('p')));
        app.handle_paste("http://localhost:17988/callback?code=c&state=s");
        assert_eq!(
            app.handle_key(key(KeyCode::Enter)),
            [Effect::Paste {
                name: "py".into(),
                url: "http://localhost:17988/callback?code=c&state=s".into()
            }]
        );
        app.apply(Update::PasteRefused("py".into(), "no code=".into()));
        assert!(matches!(&app.screen, Screen::Login { error: Some(e), .. } if e == "no code="));
        // Esc while waiting cancels; the job ends with it.
        assert_eq!(
            app.handle_key(key(KeyCode::Esc)),
            [Effect::CancelLogin("py".into())]
        );
        assert!(matches!(&app.screen, Screen::Server(n) if n == "py"));
        // A login that ends: Enter goes back; a release of a key does nothing.
        app.jobs.clear();
        app.handle_key(key(KeyCode::Char('l')));
        app.apply(Update::LoginDone("py".into(), Ok(())));
        assert!(app.jobs.is_empty());
        let mut release = key(KeyCode::Enter);
        release.kind = KeyEventKind::Release;
        assert!(app.handle_key(release).is_empty());
        assert!(matches!(
            &app.screen,
            Screen::Login {
                state: LoginState::Done(Ok(())),
                ..
            }
        ));
        app.handle_key(key(KeyCode::Enter));
        assert!(matches!(&app.screen, Screen::Server(n) if n == "py"));
    }

    #[test]
    fn instructions_scroll_and_the_client_form_sends_what_was_typed() {
        let mut app = app_with(&["py"]);
        app.data.oauth.insert("py".into(), OAuthInfo::default());
        app.handle_key(key(KeyCode::Enter));
        app.handle_key(key(KeyCode::Char('i')));
        for (code, scroll) in [
            (KeyCode::Down, 1),
            (KeyCode::Char('j'), 2),
            (KeyCode::PageDown, 12),
            (KeyCode::PageUp, 2),
            (KeyCode::Char('k'), 1),
            (KeyCode::Up, 0),
            (KeyCode::Up, 0),
        ] {
            app.handle_key(key(code));
            assert!(
                matches!(app.screen, Screen::Instructions { scroll: s, .. } if s == scroll),
                "{code:?}"
            );
        }
        app.handle_key(key(KeyCode::Esc));
        app.handle_key(key(KeyCode::Char('c')));
        typed(&mut app, "id-1");
        app.handle_key(key(KeyCode::Enter));
        app.handle_paste("s3cret");
        app.handle_key(key(KeyCode::Enter));
        let effects = app.handle_key(key(KeyCode::Enter));
        assert_eq!(
            effects,
            [Effect::SetClient {
                name: "py".into(),
                client: OAuthClient {
                    client_id: "id-1".into(),
                    client_secret: Some("s3cret".into()),
                    redirect_uri: None,
                },
            }]
        );
        // Keys wait while it saves; a refusal shows on the form.
        assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
        app.apply(Update::ClientSaved("py".into(), Err("bad uri".into())));
        assert!(
            matches!(&app.screen, Screen::Client { form, .. } if form.error.as_deref() == Some("bad uri") && !form.saving)
        );
    }
}
