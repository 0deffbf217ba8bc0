//! Which of a server's tools the model sees: an entry's `"enabled_tools"` (only these) and
//! `"disabled_tools"` (all but these), [`ToolFilter`].
//!
//! Each list holds the server's own tool names (`search_issues`, not
//! `mcp__github__search_issues`), a trailing `*` matching any rest (`get_*`, or `*` alone).
//! A tool is visible when `enabled_tools` is absent or one of its patterns matches, and no
//! pattern of `disabled_tools` matches. A hidden tool is not registered, so the model never
//! sees it and it cannot be called; whether a visible tool asks before it runs is the
//! allowlist's business, apart from this.
//!
//! A pattern is refused when it is empty, has a `*` anywhere but at its end or a control
//! character, is longer than [`MAX_PATTERN`], names a registered tool (`mcp__...`: that
//! reaches beyond the server's own names), or when the lists contradict: an exclude pattern
//! that covers an include pattern whole (include `get_issue`, exclude `get_*`), which would
//! make the include mean nothing. At most [`MAX_PATTERNS`] patterns a list.

use super::config_error::ConfigError;
use super::registry::PREFIX;
use serde_json::{Map, Value, json};

/// The longest pattern, in bytes.
pub const MAX_PATTERN: usize = 256;

/// The most patterns one list may hold.
pub const MAX_PATTERNS: usize = 1024;

/// One server's tool filter: what its entry's `"enabled_tools"` and `"disabled_tools"` say.
/// The default shows every tool; the `with_*` setters narrow it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFilter {
    /// `"enabled_tools"`: when set, only the tools one of these patterns matches are visible.
    pub enabled_tools: Option<Vec<String>>,
    /// `"disabled_tools"`: the tools one of these patterns matches are hidden.
    pub disabled_tools: Vec<String>,
}

/// Whether `pattern` (a name, or a prefix and a trailing `*`) matches `tool`.
fn matches(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => pattern == tool,
    }
}

/// Whether every name `inner` matches, `outer` matches too.
fn covers(outer: &str, inner: &str) -> bool {
    match outer.strip_suffix('*') {
        Some(prefix) => inner.starts_with(prefix),
        None => outer == inner,
    }
}

impl ToolFilter {
    /// A filter that shows every tool.
    pub fn all() -> ToolFilter {
        ToolFilter::default()
    }

    /// With only the tools one of `patterns` matches visible (`"enabled_tools"`).
    pub fn with_enabled_tools(
        mut self,
        patterns: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.enabled_tools = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// With the tools one of `patterns` matches hidden (`"disabled_tools"`).
    pub fn with_disabled_tools(
        mut self,
        patterns: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.disabled_tools = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the filter shows every tool (neither list set).
    pub fn shows_all(&self) -> bool {
        self.enabled_tools.is_none() && self.disabled_tools.is_empty()
    }

    /// Whether the tool named `tool` (its name on its server) is visible.
    pub fn allows(&self, tool: &str) -> bool {
        let included = self
            .enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|p| matches(p, tool)));
        included && !self.disabled_tools.iter().any(|p| matches(p, tool))
    }

    /// What is wrong with the filter of server `server`, said so a user can fix it.
    pub fn problem(&self, server: &str) -> Option<String> {
        let lists = [
            (
                "enabled_tools",
                self.enabled_tools.as_deref().unwrap_or(&[]),
            ),
            ("disabled_tools", self.disabled_tools.as_slice()),
        ];
        for (key, list) in lists {
            if list.len() > MAX_PATTERNS {
                return Some(format!(
                    "\"{key}\" has {} patterns; at most {MAX_PATTERNS}",
                    list.len()
                ));
            }
            for pattern in list {
                if let Some(why) = pattern_problem(server, pattern) {
                    return Some(format!("\"{key}\": {why}"));
                }
            }
        }
        for include in self.enabled_tools.iter().flatten() {
            if let Some(exclude) = self.disabled_tools.iter().find(|e| covers(e, include)) {
                return Some(format!(
                    "\"enabled_tools\" has {include:?} and \"disabled_tools\" has {exclude:?}, which hides every tool it names; remove one of them"
                ));
            }
        }
        None
    }

    /// Reads the filter of entry `entry` of server `server`; a wrong type or a bad pattern
    /// is an error naming the server and the key.
    pub fn from_entry(server: &str, entry: &Value) -> Result<ToolFilter, ConfigError> {
        let list = |key: &str| -> Result<Option<Vec<String>>, ConfigError> {
            let wrong = || {
                ConfigError::server(
                    server,
                    format!("\"{key}\" must be an array of tool names (a trailing * allowed)"),
                )
            };
            match entry.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string).ok_or_else(wrong))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(_) => Err(wrong()),
            }
        };
        let filter = ToolFilter {
            enabled_tools: list("enabled_tools")?,
            disabled_tools: list("disabled_tools")?.unwrap_or_default(),
        };
        match filter.problem(server) {
            Some(why) => Err(ConfigError::server(server, why)),
            None => Ok(filter),
        }
    }

    /// Writes the filter into `entry`: each list set, the ones not set removed.
    pub(crate) fn write(&self, entry: &mut Map<String, Value>) {
        match &self.enabled_tools {
            Some(list) => entry.insert("enabled_tools".into(), json!(list)),
            None => entry.remove("enabled_tools"),
        };
        if self.disabled_tools.is_empty() {
            entry.remove("disabled_tools");
        } else {
            entry.insert("disabled_tools".into(), json!(self.disabled_tools));
        }
    }

    /// The filter with `tool` made visible (`visible`) or hidden, changing as little as it
    /// can: an exact name is added or taken out; a pattern that hid the tool is replaced by
    /// the names of `others` (the server's other tools) it hid, so they stay hidden.
    pub fn with_tool(&self, tool: &str, visible: bool, others: &[&str]) -> ToolFilter {
        let mut next = self.clone();
        if self.allows(tool) == visible {
            return next;
        }
        if visible {
            let (hiding, mut kept): (Vec<String>, Vec<String>) = next
                .disabled_tools
                .into_iter()
                .partition(|p| matches(p, tool));
            for other in others.iter().filter(|o| **o != tool) {
                let was_hidden = hiding.iter().any(|p| matches(p, other));
                if was_hidden && !kept.iter().any(|p| matches(p, other)) {
                    kept.push(other.to_string());
                }
            }
            next.disabled_tools = kept;
            if let Some(list) = &mut next.enabled_tools
                && !list.iter().any(|p| matches(p, tool))
            {
                list.push(tool.to_string());
            }
        } else {
            if let Some(list) = &mut next.enabled_tools {
                list.retain(|p| p != tool);
            }
            if next.allows(tool) {
                next.disabled_tools.push(tool.to_string());
            }
        }
        next
    }
}

/// What is wrong with one pattern of server `server`'s lists.
fn pattern_problem(server: &str, pattern: &str) -> Option<String> {
    let shown =
        crate::safe_text::escape_controls(pattern.get(..64).unwrap_or(pattern)).into_owned();
    if pattern.is_empty() {
        return Some("a pattern is empty; give a tool name, or a prefix and *".into());
    }
    if pattern.len() > MAX_PATTERN {
        return Some(format!(
            "the pattern {shown:?}… is {} bytes; at most {MAX_PATTERN}",
            pattern.len()
        ));
    }
    if pattern.chars().any(char::is_control) {
        return Some(format!("the pattern {shown:?} has a control character"));
    }
    if pattern.trim_end_matches('*').contains('*') || pattern.ends_with("**") {
        return Some(format!(
            "the pattern {shown:?} has a * that is not its last character; only a trailing * is allowed"
        ));
    }
    if let Some(rest) = pattern.strip_prefix(PREFIX) {
        let other = rest.split("__").next().unwrap_or(rest);
        return Some(if other == server {
            format!(
                "the pattern {shown:?} is a registered name; use the tool's own name on server {server:?} ({:?})",
                &rest[other.len()..].trim_start_matches("__")
            )
        } else {
            format!(
                "the pattern {shown:?} reaches beyond server {server:?} (it names server {:?}); a server's lists hold only its own tool names",
                crate::safe_text::escape_controls(other)
            )
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(enabled: Option<&[&str]>, disabled: &[&str]) -> ToolFilter {
        ToolFilter {
            enabled_tools: enabled.map(|l| l.iter().map(|s| s.to_string()).collect()),
            disabled_tools: disabled.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn visibility_table() {
        #[allow(clippy::type_complexity)]
        let table: &[(Option<&[&str]>, &[&str], &str, bool)] = &[
            (None, &[], "anything", true),
            (Some(&[]), &[], "anything", false),
            (Some(&["get_*"]), &[], "get_issue", true),
            (Some(&["get_*"]), &[], "list_issues", false),
            (Some(&["get_*"]), &["get_secret"], "get_secret", false),
            (Some(&["*"]), &["delete_*"], "delete_repo", false),
            (None, &["delete_*"], "delete_repo", false),
            (None, &["delete_*"], "create_repo", true),
            (None, &["echo"], "echoes", true),
            (None, &["*"], "x", false),
        ];
        for (enabled, disabled, tool, want) in table {
            let f = filter(*enabled, disabled);
            assert_eq!(f.problem("s"), None, "{f:?}");
            assert_eq!(f.allows(tool), *want, "{f:?} {tool}");
        }
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        #[allow(clippy::type_complexity)]
        let table: &[(Option<&[&str]>, &[&str], &str)] = &[
            (None, &["mcp__other__x"], "reaches beyond server \"s\""),
            (None, &["mcp__s__x"], "use the tool's own name"),
            (
                Some(&["get_issue"]),
                &["get_*"],
                "hides every tool it names",
            ),
            (Some(&["a"]), &["a"], "hides every tool it names"),
            (Some(&["get_*"]), &["*"], "hides every tool it names"),
            (None, &["a*b"], "only a trailing * is allowed"),
            (None, &["a**"], "only a trailing * is allowed"),
            (None, &[""], "empty"),
            (None, &["a\u{1b}[2J"], "control character"),
        ];
        for (enabled, disabled, want) in table {
            let why = filter(*enabled, disabled).problem("s").expect("refused");
            assert!(why.contains(want), "{why}");
            assert!(!why.contains('\u{1b}'), "{why}");
        }
        let entry = serde_json::json!({"command": "x", "disabled_tools": "echo"});
        let e = ToolFilter::from_entry("s", &entry).unwrap_err();
        assert!(e.to_string().contains("must be an array"), "{e}");
    }

    #[test]
    fn toggling_one_tool_changes_as_little_as_it_can() {
        let all = ["get_a", "get_b", "put"];
        // Hide one tool: an exact exclude.
        let f = ToolFilter::all().with_tool("put", false, &all);
        assert_eq!(f, filter(None, &["put"]));
        // Show it again: the exclude goes.
        assert_eq!(f.with_tool("put", true, &all), ToolFilter::all());
        // A pattern that hid it is replaced by the others it hid.
        let f = filter(None, &["get_*"]).with_tool("get_a", true, &all);
        assert_eq!(f, filter(None, &["get_b"]));
        // With an include list: hiding takes the name out, or excludes it.
        let f = filter(Some(&["put", "get_*"]), &[]);
        assert_eq!(
            f.with_tool("put", false, &all),
            filter(Some(&["get_*"]), &[])
        );
        assert_eq!(
            f.with_tool("get_a", false, &all),
            filter(Some(&["put", "get_*"]), &["get_a"])
        );
        // Showing a tool the include list leaves out adds it.
        assert_eq!(
            filter(Some(&[]), &[]).with_tool("put", true, &all),
            filter(Some(&["put"]), &[])
        );
        for f in [filter(Some(&["get_*"]), &["get_a"])] {
            for tool in all {
                for visible in [true, false] {
                    let next = f.with_tool(tool, visible, &all);
                    assert_eq!(next.allows(tool), visible, "{f:?} {tool}");
                    assert_eq!(next.problem("s"), None, "{next:?}");
                    for other in all.iter().filter(|o| **o != tool) {
                        assert_eq!(next.allows(other), f.allows(other), "{next:?} {other}");
                    }
                }
            }
        }
    }
}
