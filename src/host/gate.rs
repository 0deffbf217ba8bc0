//! The confirm gate and the allowlist.
//!
//! Every tool call, MCP or built in, passes one gate, decided by the permission mode the
//! request carries:
//! - [`PermissionMode::Auto`]: the call runs.
//! - [`PermissionMode::Confirm`]: the call runs only if the tool is allowlisted or the
//!   embedder's [`ConfirmCallback`] approves it. With no callback it is refused.
//!
//! Trust is per tool: there is no per-server read-only switch. The allowlist is the file
//! `~/.config/agenvoy/allow_tool` ([`default_allowlist_path`]), one entry a line: a tool name
//! (`mcp__github__search_issues`), or `mcp__<server>__*` for every tool of one server
//! (`mcp__github__*`). Blank lines are skipped; lines starting with `#` are comments, kept on
//! save. The file is read at every check, so edits take effect at once.
//!
//! A server's name may hold `_` (`gh_`, `gh__x`), so a registered name cannot be split into
//! server and tool by reading it: `mcp__gh__x__t` may be tool `x__t` of `gh` or tool `t` of
//! `gh__x`. The gate is therefore told the server the registry resolved the call to, and a
//! `*` entry approves exactly one server, the text between `mcp__` and the final `__*`:
//! `mcp__gh__*` approves `gh`'s tools, never those of `gh_` or `gh__x`. Other `*` entries
//! (`mcp__gh__get_*`, `mcp__*`) could name more than one server and are refused; a `*` entry
//! that does not start with `mcp__` (`read_*`) approves built-in tools only.

use super::config::is_valid_server_name;
use super::registry::PREFIX;
use crate::transport::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The allowlist's file name inside the config folder.
pub const ALLOWLIST_FILE: &str = "allow_tool";

/// The default allowlist: `allow_tool` in [`super::config::config_dir`].
pub fn default_allowlist_path() -> PathBuf {
    super::config::config_dir().join(ALLOWLIST_FILE)
}

/// How a request's tool calls are let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PermissionMode {
    /// Ask: run only allowlisted tools, or what the confirm callback approves.
    #[default]
    Confirm,
    /// Run every call.
    Auto,
}

impl std::str::FromStr for PermissionMode {
    type Err = crate::error::ParseError;
    fn from_str(s: &str) -> Result<Self, crate::error::ParseError> {
        match s {
            "confirm" => Ok(PermissionMode::Confirm),
            "auto" => Ok(PermissionMode::Auto),
            _ => Err(crate::error::ParseError::unknown(
                "permission mode",
                s,
                &["confirm", "auto"],
            )),
        }
    }
}

/// A call waiting for the user's approval.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConfirmRequest {
    /// The registered tool name (`mcp__server__tool`, or a built-in tool's name).
    pub name: String,
    /// The call's arguments.
    pub arguments: Value,
}

/// The user's answer to a [`ConfirmRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call.
    Approve,
    /// Refuse it; the text says why (the model is told, in the call's [`Denied`]).
    Refuse(String),
}

/// Asks the user about one call.
pub type ConfirmCallback =
    Arc<dyn Fn(ConfirmRequest) -> BoxFuture<'static, Decision> + Send + Sync>;

/// Why the gate let a call through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// The request's mode is `auto`.
    AutoMode,
    /// The tool is on the allowlist.
    Allowlisted,
    /// The confirm callback approved it.
    Confirmed,
}

/// The gate refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Denied {
    /// The tool's registered name.
    pub name: String,
    /// Why, and what to do.
    pub reason: String,
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool call {} refused: {}", self.name, self.reason)
    }
}

impl std::error::Error for Denied {}

/// An entry the allowlist does not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowlistError(pub String);

impl fmt::Display for AllowlistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "allowlist: {}", self.0)
    }
}

impl std::error::Error for AllowlistError {}

/// The allowlist's entries, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    lines: Vec<String>,
}

/// Checks one entry: no whitespace, not empty, `*` only as its last character, and an MCP
/// `*` entry names one whole server (`mcp__<server>__*`).
pub fn check_entry(entry: &str) -> Result<(), AllowlistError> {
    let body = entry.strip_suffix('*').unwrap_or(entry);
    if body.is_empty() {
        return Err(AllowlistError(format!(
            "entry {entry:?} is empty or allows everything; name a tool or a whole server such as mcp__github__*"
        )));
    }
    if body.contains('*') || entry.chars().any(char::is_whitespace) || entry.starts_with('#') {
        return Err(AllowlistError(format!(
            "entry {entry:?} is not a tool name or a prefix ending in *"
        )));
    }
    if body.len() < entry.len() && body.starts_with(PREFIX) && whole_server(entry).is_none() {
        return Err(AllowlistError(format!(
            "entry {entry:?} could approve tools of more than one server; allow a whole server as mcp__<server>__*, or name each tool"
        )));
    }
    Ok(())
}

/// The server a whole-server entry `mcp__<server>__*` approves.
pub fn whole_server(entry: &str) -> Option<&str> {
    entry
        .strip_prefix(PREFIX)?
        .strip_suffix("__*")
        .filter(|server| is_valid_server_name(server))
}

/// Whether `entry` is one of `prefix`'s (`mcp__<server>__`): it starts with the prefix and, if
/// it approves a whole server, that server is the prefix's (`mcp__gh___*` starts with
/// `mcp__gh__` but is server `gh_`'s). An exact entry that starts with the prefix counts as the
/// prefix's: `mcp__gh__x__t` may be a tool of `gh` or of `gh__x`, which only the registry knows.
pub fn belongs_to(entry: &str, prefix: &str) -> bool {
    entry.starts_with(prefix)
        && whole_server(entry).is_none_or(|server| {
            prefix
                .strip_prefix(PREFIX)
                .and_then(|p| p.strip_suffix("__"))
                == Some(server)
        })
}

/// Whether one entry approves a call of `name`, a tool of `server` (`None`: a built-in tool).
fn entry_allows(entry: &str, name: &str, server: Option<&str>) -> bool {
    let Some(prefix) = entry.strip_suffix('*') else {
        return entry == name;
    };
    match (whole_server(entry), server) {
        (Some(approved), Some(server)) => approved == server,
        // Built-in prefixes approve built-in tools only; other MCP prefixes nothing.
        (None, None) => {
            !prefix.is_empty() && !prefix.starts_with(PREFIX) && name.starts_with(prefix)
        }
        _ => false,
    }
}

impl Allowlist {
    /// Reads the file; a missing file is an empty allowlist.
    pub fn load(path: &Path) -> std::io::Result<Allowlist> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Allowlist::parse(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Allowlist::default()),
            Err(e) => Err(e),
        }
    }

    /// Reads entries from text, one a line.
    pub fn parse(text: &str) -> Allowlist {
        Allowlist {
            lines: text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }

    /// Every entry (comments excluded), in file order.
    pub fn entries(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| !l.starts_with('#'))
            .map(String::as_str)
            .collect()
    }

    /// Whether a call of `name` is allowed. `server` is the MCP server the registry resolved
    /// `name` to (`None` for a built-in tool). It is allowed by an entry equal to `name`, by
    /// `mcp__<server>__*` for exactly that server, or, for a built-in tool, by a `prefix*`
    /// entry it starts with (see the module docs).
    pub fn allows(&self, name: &str, server: Option<&str>) -> bool {
        self.entries()
            .into_iter()
            .any(|e| entry_allows(e, name, server))
    }

    /// Adds an entry unless it is there already.
    pub fn add(&mut self, entry: &str) -> Result<(), AllowlistError> {
        check_entry(entry)?;
        if !self.lines.iter().any(|l| l == entry) {
            self.lines.push(entry.to_string());
        }
        Ok(())
    }

    /// Removes an entry; returns whether it was there.
    pub fn remove(&mut self, entry: &str) -> bool {
        let before = self.lines.len();
        self.lines.retain(|l| l != entry);
        self.lines.len() != before
    }

    /// Replaces the entries of `prefix` (say `mcp__github__`; see `belongs_to`) with
    /// `entries`; every other entry stays as it is. Each new entry must be one of `prefix`'s:
    /// `mcp__github___*` starts with `mcp__github__` but approves server `github_`, so it is
    /// refused here (it could not be taken back through this prefix either).
    pub fn replace_prefix(
        &mut self,
        prefix: &str,
        entries: &[String],
    ) -> Result<(), AllowlistError> {
        if prefix.is_empty() {
            return Err(AllowlistError(
                "the prefix is empty; give one such as mcp__github__".into(),
            ));
        }
        for entry in entries {
            check_entry(entry)?;
            if !entry.starts_with(prefix) {
                return Err(AllowlistError(format!(
                    "entry {entry:?} does not start with {prefix:?}; only entries of that prefix can be set here"
                )));
            }
            if let Some(other) = whole_server(entry).filter(|_| !belongs_to(entry, prefix)) {
                return Err(AllowlistError(format!(
                    "entry {entry:?} approves every tool of server {other:?}, not of {prefix:?}'s; set it through the prefix mcp__{other}__"
                )));
            }
        }
        self.lines
            .retain(|l| l.starts_with('#') || !belongs_to(l, prefix));
        for entry in entries {
            if !self.lines.contains(entry) {
                self.lines.push(entry.clone());
            }
        }
        Ok(())
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Writes the file atomically, mode 0600.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::secret_files::write_private(path, self.to_text().as_bytes())
    }
}

/// The gate: the allowlist file and the embedder's confirm callback.
#[derive(Clone)]
pub struct Gate {
    allowlist_path: PathBuf,
    confirm: Option<ConfirmCallback>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("allowlist_path", &self.allowlist_path)
            .field("confirm", &self.confirm.is_some())
            .finish()
    }
}

impl Gate {
    /// A gate reading the allowlist at `allowlist_path`, asking `confirm` (if any).
    pub fn new(allowlist_path: PathBuf, confirm: Option<ConfirmCallback>) -> Gate {
        Gate {
            allowlist_path,
            confirm,
        }
    }

    /// The allowlist file.
    pub fn allowlist_path(&self) -> &Path {
        &self.allowlist_path
    }

    /// The allowlist as it is in the file now (empty if the file cannot be read: a warning
    /// is logged, and calls then need confirmation).
    pub fn allowlist(&self) -> Allowlist {
        Allowlist::load(&self.allowlist_path).unwrap_or_else(|e| {
            tracing::warn!(
                "cannot read the allowlist {}: {e}; every call needs confirmation",
                self.allowlist_path.display()
            );
            Allowlist::default()
        })
    }

    /// Replaces the allowlist entries of one prefix in the file and saves it (atomically,
    /// 0600); every other entry stays (see [`Allowlist::replace_prefix`]).
    pub fn replace_allowlist_prefix(
        &self,
        prefix: &str,
        entries: &[String],
    ) -> Result<(), AllowlistError> {
        let path = self.allowlist_path.display();
        let mut list = Allowlist::load(&self.allowlist_path)
            .map_err(|e| AllowlistError(format!("cannot read {path}: {e}")))?;
        list.replace_prefix(prefix, entries)?;
        list.save(&self.allowlist_path)
            .map_err(|e| AllowlistError(format!("cannot save {path}: {e}")))
    }

    /// Decides one call of `name`: for an MCP tool, `server` is the server the registry
    /// resolved the name to; `None` for a built-in tool.
    pub async fn check(
        &self,
        name: &str,
        server: Option<&str>,
        arguments: &Value,
        mode: PermissionMode,
    ) -> Result<Approval, Denied> {
        if mode == PermissionMode::Auto {
            return Ok(Approval::AutoMode);
        }
        if self.allowlist().allows(name, server) {
            return Ok(Approval::Allowlisted);
        }
        let Some(confirm) = &self.confirm else {
            return Err(Denied {
                name: name.to_string(),
                reason: format!(
                    "it needs confirmation and nothing can ask; add it to {} or use auto mode",
                    self.allowlist_path.display()
                ),
            });
        };
        let request = ConfirmRequest {
            name: name.to_string(),
            arguments: arguments.clone(),
        };
        match confirm(request).await {
            Decision::Approve => Ok(Approval::Confirmed),
            Decision::Refuse(reason) => Err(Denied {
                name: name.to_string(),
                reason,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn allowlist_rules() {
        let list = Allowlist::parse(
            "# trusted\nmcp__github__*\n\n  mcp__time__get_current_time  \nmcp__fs__read\nread_*\n",
        );
        let table: &[(&str, Option<&str>, bool)] = &[
            ("mcp__github__search", Some("github"), true),
            ("mcp__githubx__search", Some("githubx"), false),
            ("mcp__time__get_current_time", Some("time"), true),
            ("mcp__time__get_current_timezone", Some("time"), false),
            ("mcp__time__convert_time", Some("time"), false),
            ("mcp__fs__read", Some("fs"), true),
            ("mcp__fs__read_all", Some("fs"), false),
            ("# trusted", None, false),
            ("bash", None, false),
            ("read_file", None, true),
            // A built-in prefix never approves an MCP tool, whatever its name.
            ("read_x", Some("s"), false),
        ];
        for (name, server, allowed) in table {
            assert_eq!(list.allows(name, *server), *allowed, "{name}");
        }
        assert_eq!(
            list.entries(),
            [
                "mcp__github__*",
                "mcp__time__get_current_time",
                "mcp__fs__read",
                "read_*"
            ]
        );
        assert!(!Allowlist::parse("*\n").allows("anything", None));
    }

    #[test]
    fn a_server_entry_approves_that_server_only() {
        // Servers gh, gh_ and gh__x: their tools' names all start with mcp__gh__.
        let tools = [
            ("mcp__gh__issues", "gh"),
            ("mcp__gh__x__t", "gh"), // tool x__t of gh
            ("mcp__gh___t", "gh_"),
            ("mcp__gh__x__t", "gh__x"), // tool t of gh__x
            ("mcp__gh__x___t", "gh__x_"),
        ];
        let approved = |entry: &str| -> Vec<(&str, &str)> {
            let list = Allowlist::parse(entry);
            tools
                .iter()
                .copied()
                .filter(|(name, server)| list.allows(name, Some(server)))
                .collect()
        };
        assert_eq!(
            approved("mcp__gh__*"),
            [("mcp__gh__issues", "gh"), ("mcp__gh__x__t", "gh")]
        );
        assert_eq!(approved("mcp__gh___*"), [("mcp__gh___t", "gh_")]);
        assert_eq!(approved("mcp__gh__x__*"), [("mcp__gh__x__t", "gh__x")]);
        // Prefixes that could span servers approve nothing, and cannot be added.
        for entry in ["mcp__*", "mcp__gh*", "mcp__gh_*", "mcp__gh__x*", "mcp____*"] {
            assert_eq!(approved(entry), [], "{entry}");
            let e = check_entry(entry).unwrap_err();
            assert!(e.to_string().contains("more than one server"), "{e}");
        }
        assert_eq!(whole_server("mcp__gh__x__*"), Some("gh__x"));
        assert_eq!(whole_server("mcp__g h__*"), None);
    }

    #[test]
    fn entries_are_checked() {
        for bad in [
            "",
            "*",
            "a b",
            "mcp__*__x",
            "#x",
            "a\tb",
            "mcp__github__get_*",
        ] {
            assert!(check_entry(bad).is_err(), "{bad:?}");
        }
        for good in [
            "bash",
            "mcp__github__*",
            "mcp__a__b-c",
            "read_*",
            "mcp__a__b__*",
        ] {
            assert!(check_entry(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn replacing_one_prefix_leaves_every_other_rule() {
        let mut list = Allowlist::parse(
            "# keep\nbash\nmcp__github__*\nmcp__time__now\nmcp__github__search\nmcp__githubx__a\nmcp__github___*\n",
        );
        list.replace_prefix("mcp__github__", &["mcp__github__list".into()])
            .unwrap();
        assert_eq!(
            list.to_text(),
            "# keep\nbash\nmcp__time__now\nmcp__githubx__a\nmcp__github___*\nmcp__github__list\n"
        );
        let err = list
            .replace_prefix("mcp__github__", &["mcp__time__now".into()])
            .unwrap_err();
        assert!(err.to_string().contains("does not start with"), "{err}");
        // An entry of another server's, though it starts with the prefix.
        let err = list
            .replace_prefix("mcp__github__", &["mcp__github___*".into()])
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("approves every tool of server \"github_\""),
            "{err}"
        );
        assert!(list.replace_prefix("", &[]).is_err());
        // Nothing changed on error; an empty list removes the prefix's entries.
        assert!(list.allows("mcp__github__list", Some("github")));
        list.replace_prefix("mcp__github__", &[]).unwrap();
        assert_eq!(
            list.to_text(),
            "# keep\nbash\nmcp__time__now\nmcp__githubx__a\nmcp__github___*\n"
        );
        list.remove("mcp__github___*");
        list.add("mcp__time__*").unwrap();
        list.add("mcp__time__*").unwrap();
        assert!(list.add("a b").is_err());
        assert!(list.remove("bash") && !list.remove("bash"));
        assert_eq!(
            list.entries(),
            ["mcp__time__now", "mcp__githubx__a", "mcp__time__*"]
        );
    }

    #[test]
    fn saves_are_atomic_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("allow_tool");
        assert_eq!(Allowlist::load(&path).unwrap(), Allowlist::default());
        let mut list = Allowlist::default();
        list.add("mcp__a__*").unwrap();
        list.save(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mcp__a__*\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }

    fn answering(
        answer: Decision,
    ) -> (ConfirmCallback, Arc<std::sync::Mutex<Vec<ConfirmRequest>>>) {
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let callback: ConfirmCallback = Arc::new(move |request| {
            seen.lock().unwrap().push(request);
            let answer = answer.clone();
            Box::pin(async move { answer })
        });
        (callback, asked)
    }

    #[tokio::test]
    async fn every_gate_rule() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("allow_tool");
        std::fs::write(&path, "mcp__ok__*\nbash\n").unwrap();
        let args = json!({"x": 1});
        let confirm = PermissionMode::Confirm;

        // Auto: everything runs, nobody is asked.
        let (yes, asked) = answering(Decision::Approve);
        let gate = Gate::new(path.clone(), Some(yes));
        assert_eq!(
            gate.check("mcp__other__t", Some("other"), &args, PermissionMode::Auto)
                .await,
            Ok(Approval::AutoMode)
        );
        // Confirm: allowlisted runs without asking (MCP and built-in names alike).
        assert_eq!(
            gate.check("mcp__ok__t", Some("ok"), &args, confirm).await,
            Ok(Approval::Allowlisted)
        );
        assert_eq!(
            gate.check("bash", None, &args, confirm).await,
            Ok(Approval::Allowlisted)
        );
        assert!(asked.lock().unwrap().is_empty());
        // Confirm: otherwise the callback decides, and sees the name and arguments.
        assert_eq!(
            gate.check("mcp__other__t", Some("other"), &args, confirm)
                .await,
            Ok(Approval::Confirmed)
        );
        assert_eq!(
            asked.lock().unwrap()[0],
            ConfirmRequest {
                name: "mcp__other__t".into(),
                arguments: args.clone()
            }
        );
        let (no, _) = answering(Decision::Refuse("the user said no".into()));
        let gate = Gate::new(path.clone(), Some(no));
        let denied = gate
            .check("mcp__other__t", Some("other"), &args, confirm)
            .await
            .unwrap_err();
        assert_eq!(
            denied.to_string(),
            "tool call mcp__other__t refused: the user said no"
        );
        // Confirm with no callback: refused, saying what to do.
        let gate = Gate::new(path.clone(), None);
        let denied = gate
            .check("mcp__other__t", Some("other"), &args, confirm)
            .await
            .unwrap_err();
        assert!(
            denied.reason.contains("allow_tool") && denied.reason.contains("auto"),
            "{denied}"
        );
        // The file is read at every check.
        std::fs::write(&path, "mcp__other__t\n").unwrap();
        assert_eq!(
            gate.check("mcp__other__t", Some("other"), &args, confirm)
                .await,
            Ok(Approval::Allowlisted)
        );
        assert!(gate.check("bash", None, &args, confirm).await.is_err());
        // Replacing one prefix through the gate keeps the other entries in the file.
        gate.replace_allowlist_prefix("mcp__fs__", &["mcp__fs__*".into()])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "mcp__other__t\nmcp__fs__*\n"
        );
        assert!(
            gate.replace_allowlist_prefix("mcp__fs__", &["bash".into()])
                .is_err()
        );
        assert_eq!("auto".parse(), Ok(PermissionMode::Auto));
        assert!("yolo".parse::<PermissionMode>().is_err());
    }
}
