//! Tool search: when the visible tools' definitions are too many for the model's context,
//! the model is offered one search tool ([`SEARCH_TOOL`]) and the tools it found so far in
//! its conversation ([`Conversation`]), instead of every definition.
//!
//! The ranking ([`ToolIndex`]) is lexical and local: BM25F over a tool's fields, each with a
//! weight (its name split on `_`, `-`, `.` and case, 3; its title, 2; its parameters' names,
//! 1.5; its server's name, 1; its description, 1; its parameters' descriptions, 0.5), with
//! English plurals and `-ing`/`-ed` folded and a few stop words dropped. A query word that is
//! no indexed word also matches the words it begins (`repo` → `repository`), at half weight.
//! Ties go to the smaller registered name, so a query always gives the same order. Building
//! reads at most [`MAX_INDEXED_TEXT`] of each text and [`MAX_INDEXED_PARAMS`] parameters of a
//! tool; a search costs the postings of its words, no scan of every tool.

use super::registry::{RegisteredTool, ToolDefinition};
use crate::protocol::types::Tool;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// The registered name of the search tool. It cannot be any server's tool: those are
/// `mcp__<server>__<tool>`, and this name has no second `__`.
pub const SEARCH_TOOL: &str = "mcp__tool_search";

/// The most results one search returns.
pub const MAX_SEARCH_LIMIT: usize = 50;

/// The results a search returns when it names no limit.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The most tools a [`Conversation`] keeps found; past it the first found are dropped.
pub const MAX_FOUND: usize = 256;

/// The most bytes of one text (a description, a title) that are indexed.
pub const MAX_INDEXED_TEXT: usize = 8 * 1024;

/// The most parameters of one tool that are indexed.
pub const MAX_INDEXED_PARAMS: usize = 64;

/// When tool search is on: `"tool_search": {"above_tokens": N}` at the top of `mcp.json`, or
/// [`super::ManagerOptions::tool_search`]: [`ToolSearch::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolSearch {
    /// Search replaces the definitions once the visible tools' definitions are estimated at
    /// more than this many tokens (their JSON's bytes / 4).
    pub above_tokens: usize,
}

impl ToolSearch {
    /// Search once the visible tools' definitions are estimated at more than `above_tokens`.
    pub fn new(above_tokens: usize) -> ToolSearch {
        ToolSearch { above_tokens }
    }

    /// Reads `"tool_search"` of a config document: `None` when it is absent or `null`.
    pub(crate) fn from_member(value: Option<&Value>) -> Result<Option<ToolSearch>, String> {
        let wrong = || {
            "\"tool_search\" must be {\"above_tokens\": N} with N a whole number of tokens"
                .to_string()
        };
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => {
                if let Some(k) = m.keys().find(|k| *k != "above_tokens") {
                    return Err(format!(
                        "\"tool_search\" has {k:?}; its one member is \"above_tokens\""
                    ));
                }
                let n = m
                    .get("above_tokens")
                    .and_then(Value::as_u64)
                    .ok_or_else(wrong)?;
                Ok(Some(ToolSearch {
                    above_tokens: usize::try_from(n).unwrap_or(usize::MAX),
                }))
            }
            Some(_) => Err(wrong()),
        }
    }
}

/// One conversation's tool search state: the tools the model found in it, which it is then
/// offered (see [`super::Manager::offered_tools`]). The embedder keeps one per conversation;
/// sharing it between threads is fine.
#[derive(Debug, Default)]
pub struct Conversation {
    found: Mutex<VecDeque<String>>,
}

impl Conversation {
    /// A conversation that found nothing yet.
    pub fn new() -> Conversation {
        Conversation::default()
    }

    /// The registered names found so far, first found first.
    pub fn found(&self) -> Vec<String> {
        self.found
            .lock()
            .expect("found lock")
            .iter()
            .cloned()
            .collect()
    }

    /// Records `names` as found (each once; at most [`MAX_FOUND`], the oldest dropped).
    pub fn add_found<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut found = self.found.lock().expect("found lock");
        for name in names {
            if !found.iter().any(|f| f == name) {
                if found.len() == MAX_FOUND {
                    found.pop_front();
                }
                found.push_back(name.to_string());
            }
        }
    }
}

/// The search tool's definition, as the model is offered it.
pub fn search_tool_definition() -> ToolDefinition {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words (for example: create a GitHub issue)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": "How many tools to return (default 5)."}
        },
        "required": ["query"]
    });
    ToolDefinition {
        name: SEARCH_TOOL.into(),
        description: Arc::from(
            "Searches the MCP tools available in this conversation and returns the best matches' full definitions, which you can then call by name. Use it whenever you need a tool you do not see.",
        ),
        input_schema: serde_json::value::RawValue::from_string(schema.to_string())
            .expect("valid JSON")
            .into(),
    }
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "me", "my", "of", "on", "or", "that", "the", "this", "to", "with", "you", "your",
];

/// Folds a lower-case word to its stem: plurals, `-ing`, `-ed`.
fn stem(word: &str) -> &str {
    let n = word.len();
    if n > 4 && word.ends_with("ies") {
        return &word[..n - 3]; // "entries" and "entry" both give "entr"
    }
    if n > 3 && word.ends_with('y') {
        return &word[..n - 1];
    }
    if n > 4 && (word.ends_with("ses") || word.ends_with("xes") || word.ends_with("ches")) {
        return &word[..n - 2];
    }
    if n > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        return &word[..n - 1];
    }
    if n > 5 && word.ends_with("ing") {
        return &word[..n - 3];
    }
    if n > 4 && word.ends_with("ed") {
        return &word[..n - 2];
    }
    word
}

/// The words of `text`: split on anything but letters and digits and at case changes
/// (`listIssues`, `HTTPServer`), lower-cased, stemmed, stop words dropped.
pub(crate) fn words(text: &str, out: &mut Vec<String>) {
    let text = cut(text, MAX_INDEXED_TEXT);
    let mut current = String::new();
    let mut push = |current: &mut String| {
        if !current.is_empty() {
            let lower = current.to_lowercase();
            if !STOP_WORDS.contains(&lower.as_str()) {
                out.push(stem(&lower).to_string());
            }
            current.clear();
        }
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            push(&mut current);
            continue;
        }
        if let Some(&prev) = chars.get(i.wrapping_sub(1)).filter(|_| i > 0) {
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_alphabetic() != c.is_alphabetic() && prev.is_alphanumeric());
            if boundary {
                push(&mut current);
            }
        }
        current.push(c);
    }
    push(&mut current);
}

/// `text` cut to at most `most` bytes on a character boundary.
fn cut(text: &str, most: usize) -> &str {
    if text.len() <= most {
        return text;
    }
    let mut end = most;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The fields of a tool, with their weights and BM25 length normalization.
const FIELDS: usize = 6;
const WEIGHTS: [f32; FIELDS] = [3.0, 2.0, 1.5, 1.0, 1.0, 0.5];
const B: [f32; FIELDS] = [0.3, 0.5, 0.5, 0.0, 0.75, 0.75];
const K1: f32 = 1.2;

/// The words of each field of `tool` of `server`: name, title, parameter names, server,
/// description, parameter descriptions.
fn fields(server: &str, tool: &Tool) -> [Vec<String>; FIELDS] {
    let mut f: [Vec<String>; FIELDS] = Default::default();
    words(&tool.name, &mut f[0]);
    let title = tool
        .member("title")
        .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
        .or_else(|| {
            let annotations: Value =
                serde_json::from_str(tool.member("annotations")?.get()).ok()?;
            annotations.get("title")?.as_str().map(str::to_string)
        });
    if let Some(title) = title {
        words(&title, &mut f[1]);
    }
    // Only a schema of a sensible size is read for its parameters.
    if tool.input_schema.get().len() <= 256 * 1024 {
        let schema = tool.input_schema_value();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props.iter().take(MAX_INDEXED_PARAMS) {
                words(name, &mut f[2]);
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    words(d, &mut f[5]);
                }
            }
        }
    }
    words(server, &mut f[3]);
    if let Some(d) = &tool.description {
        words(d, &mut f[4]);
    }
    f
}

/// The visible tools, ready to be searched. Built once per registry change.
#[derive(Debug, Default)]
pub struct ToolIndex {
    tools: Vec<RegisteredTool>,
    /// Each word's postings: (tool, its BM25F weight of the word, before `idf`) and the
    /// word's `idf`.
    postings: BTreeMap<String, (f32, Vec<(u32, f32)>)>,
    definition_bytes: usize,
}

impl ToolIndex {
    /// Indexes `tools`, each with its server's name. A tool an LLM API would reject the name
    /// of is registered under its mapped name, as [`super::Registry`] does.
    pub fn new<'a>(tools: impl IntoIterator<Item = (&'a str, &'a Tool)>) -> ToolIndex {
        let mut registered = Vec::new();
        let mut per_tool: Vec<[Vec<String>; FIELDS]> = Vec::new();
        for (server, tool) in tools {
            registered.push(RegisteredTool::new(server, tool));
            per_tool.push(fields(server, tool));
        }
        ToolIndex::from_fields(registered, per_tool)
    }

    fn from_fields(mut tools: Vec<RegisteredTool>, per_tool: Vec<[Vec<String>; FIELDS]>) -> Self {
        // Sorted by name: ties then go to the smaller name, as the index is in name order.
        let mut order: Vec<usize> = (0..tools.len()).collect();
        order.sort_by(|a, b| tools[*a].definition.name.cmp(&tools[*b].definition.name));
        let mut per_tool: Vec<Option<[Vec<String>; FIELDS]>> =
            per_tool.into_iter().map(Some).collect();
        let mut sorted_fields = Vec::with_capacity(order.len());
        let mut slots: Vec<Option<RegisteredTool>> = tools.drain(..).map(Some).collect();
        let mut sorted = Vec::with_capacity(order.len());
        for i in order {
            sorted.push(slots[i].take().expect("each once"));
            sorted_fields.push(per_tool[i].take().expect("each once"));
        }
        let n = sorted.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for f in &sorted_fields {
            for (k, words) in f.iter().enumerate() {
                avg[k] += words.len() as f32;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        for (doc, f) in sorted_fields.iter().enumerate() {
            let mut weighted: HashMap<&str, f32> = HashMap::new();
            for (k, words) in f.iter().enumerate() {
                let norm = 1.0 - B[k] + B[k] * words.len() as f32 / avg[k];
                for w in words {
                    *weighted.entry(w.as_str()).or_default() += WEIGHTS[k] / norm;
                }
            }
            for (w, tf) in weighted {
                postings
                    .entry(w.to_string())
                    .or_default()
                    .push((doc as u32, tf / (K1 + tf)));
            }
        }
        let postings = postings
            .into_iter()
            .map(|(w, list)| {
                let df = list.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                (w, (idf, list))
            })
            .collect();
        let definition_bytes = sorted
            .iter()
            .map(|t| serde_json::to_vec(&t.definition).map_or(0, |v| v.len()))
            .sum();
        ToolIndex {
            tools: sorted,
            postings,
            definition_bytes,
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The bytes of every indexed tool's definition as JSON: what the model is sent without
    /// search.
    pub fn definition_bytes(&self) -> usize {
        self.definition_bytes
    }

    /// The tools that best match `query`, best first, at most `limit` (and
    /// [`MAX_SEARCH_LIMIT`]); tools that match no word of it are never returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&RegisteredTool> {
        let limit = limit.min(MAX_SEARCH_LIMIT);
        let mut terms = Vec::new();
        words(cut(query, 1024), &mut terms);
        terms.sort();
        terms.dedup();
        terms.truncate(32);
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for term in &terms {
            let mut add = |(idf, list): &(f32, Vec<(u32, f32)>), weight: f32| {
                for (doc, tf) in list {
                    *scores.entry(*doc).or_default() += weight * idf * tf;
                }
            };
            match self.postings.get(term) {
                Some(p) => add(p, 1.0),
                None if term.len() >= 3 => {
                    for (_, p) in self
                        .postings
                        .range::<str, _>((
                            std::ops::Bound::Included(term.as_str()),
                            std::ops::Bound::Unbounded,
                        ))
                        .take_while(|(w, _)| w.starts_with(term.as_str()))
                        .take(16)
                    {
                        add(p, 0.5);
                    }
                }
                None => {}
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().collect();
        let by_score = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, by_score);
            ranked.truncate(limit);
        }
        ranked.sort_by(by_score);
        ranked.truncate(limit);
        ranked
            .into_iter()
            .map(|(doc, _)| &self.tools[doc as usize])
            .collect()
    }

    /// The indexed tool registered as `name`.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .binary_search_by(|t| t.definition.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.tools[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn words_split_on_case_and_separators() {
        let mut out = Vec::new();
        words(
            "listIssues get_pull-request HTTPServer v2Beta the",
            &mut out,
        );
        assert_eq!(
            out,
            [
                "list", "issue", "get", "pull", "request", "http", "server", "v", "2", "beta"
            ]
        );
        let mut out = Vec::new();
        words("entries entry searching created", &mut out);
        assert_eq!(out, ["entr", "entr", "search", "creat"]);
    }

    #[test]
    fn ranking_finds_by_name_description_and_parameters_with_stable_ties() {
        let tools = [
            tool(
                json!({"name": "create_issue", "description": "Open a new issue in a repository.",
                "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}),
            ),
            tool(
                json!({"name": "list_commits", "description": "Commits of a branch.",
                "inputSchema": {"type": "object", "properties": {"sha": {"type": "string", "description": "branch name or SHA"}}}}),
            ),
            tool(
                json!({"name": "read_file", "title": "Read a file", "inputSchema": {"type": "object"}}),
            ),
            tool(
                json!({"name": "twin_a", "description": "same", "inputSchema": {"type": "object"}}),
            ),
            tool(
                json!({"name": "twin_b", "description": "same", "inputSchema": {"type": "object"}}),
            ),
        ];
        let index = ToolIndex::new(tools.iter().map(|t| ("gh", t)));
        let top = |q: &str| {
            index
                .search(q, 5)
                .first()
                .map(|t| t.tool.clone())
                .unwrap_or_default()
        };
        assert_eq!(top("open an issue"), "create_issue");
        assert_eq!(top("repo"), "create_issue", "prefix of repository");
        assert_eq!(top("commit history of a branch"), "list_commits");
        assert_eq!(top("read file contents"), "read_file");
        let twins: Vec<_> = index
            .search("same", 5)
            .iter()
            .map(|t| t.tool.clone())
            .collect();
        assert_eq!(twins, ["twin_a", "twin_b"]);
        assert!(index.search("zebra", 5).is_empty());
        assert!(index.search("", 5).is_empty());
        assert_eq!(index.search("same", 1).len(), 1);
        assert!(index.get("mcp__gh__read_file").is_some());
    }

    #[test]
    fn the_config_member_and_the_conversation_are_bounded() {
        assert_eq!(ToolSearch::from_member(None), Ok(None));
        assert_eq!(
            ToolSearch::from_member(Some(&json!({"above_tokens": 8000}))),
            Ok(Some(ToolSearch { above_tokens: 8000 }))
        );
        for bad in [json!(5), json!({"above_tokens": -1}), json!({"above": 1})] {
            assert!(ToolSearch::from_member(Some(&bad)).is_err(), "{bad}");
        }
        let c = Conversation::new();
        let names: Vec<String> = (0..MAX_FOUND + 10).map(|i| format!("t{i}")).collect();
        c.add_found(names.iter().map(String::as_str));
        c.add_found(["t265"]);
        let found = c.found();
        assert_eq!(found.len(), MAX_FOUND);
        assert_eq!(found[0], "t10");
    }
}
