//! Tool search: when the visible tools' definitions are too many for the model's context,
//! the model is offered one search tool ([`SEARCH_TOOL`]) and the tools it found so far in
//! its conversation ([`Conversation`]), instead of every definition.
//!
//! The ranking ([`ToolIndex`]) is lexical and local. A tool's words come from six fields, each
//! with a BM25F weight: its name split on `_`, `-`, `.` and case (3), its title (2), its
//! parameters' names and `enum` values (1.5), its server's name (1), its description (1), its
//! parameters' descriptions (0.5). Words are lower-cased and stemmed (plurals, `-ing`, `-ed`,
//! `-ion`, a final `e` or `y`: `creating`, `creation`, `create` are one word), and stop words
//! (articles, pronouns, question words, fillers such as `please`) are dropped. A query's
//! values (`owner/repo`, `/tmp/a.txt`, `PROJ-42`) are dropped too; each other word matches
//! itself, its synonyms from a small table of verb families and everyday names (`delete`,
//! `remove`, `drop`; `folder`, `directory`), and, when no tool has it, the words it begins
//! (`repo` → `repository`); two or three query words also match the word they make
//! together (`who am I` → `whoami`). The score ([`ToolMatch::score`]) is mostly the share of
//! the query's words, weighed by `idf`, that the tool has, and partly the share of the tool's
//! name that the query has; BM25F breaks its ties, then the smaller registered name, so a
//! query always gives the same order. A match under [`WEAK_SCORE`] is weak.
//!
//! Building reads at most [`MAX_INDEXED_TEXT`] of each text and [`MAX_INDEXED_PARAMS`]
//! parameters of a tool; a search costs the postings of its words, no scan of every tool.

use super::registry::{RegisteredTool, ToolDefinition};
use crate::protocol::types::Tool;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, OnceLock};

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
            "Searches the MCP tools available in this conversation and returns the best matches' full definitions, which you can then call by name, each with a score from 0 to 1 and whether the match is weak. Use it whenever you need a tool you do not see.",
        ),
        input_schema: serde_json::value::RawValue::from_string(schema.to_string())
            .expect("valid JSON")
            .into(),
    }
}

/// Words that say little about what a tool does (articles, pronouns, question words,
/// fillers): dropped from tools' texts and from queries. Sorted, for `binary_search`.
const STOP_WORDS: &[&str] = &[
    "a", "about", "across", "all", "also", "am", "an", "and", "another", "any", "are", "as", "at",
    "be", "been", "between", "but", "by", "can", "could", "do", "does", "each", "every", "for",
    "from", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "just", "many", "me",
    "mine", "more", "most", "my", "myself", "need", "not", "of", "on", "onto", "or", "other",
    "our", "out", "over", "own", "please", "same", "several", "should", "so", "some", "such",
    "than", "that", "the", "their", "them", "then", "there", "these", "this", "those", "to", "up",
    "us", "using", "very", "via", "want", "was", "we", "were", "what", "when", "where", "which",
    "who", "whose", "why", "will", "with", "within", "without", "would", "you", "your",
];

/// Words people use for the same action or thing: a query word also matches the other words
/// of its groups, at [`SYNONYM_WEIGHT`]. Small and general on purpose: the families of verbs
/// tools are named with, and a few everyday names of what they work on.
const SYNONYMS: &[&[&str]] = &[
    &["create", "add", "new", "make", "insert", "generate"],
    &[
        "delete", "remove", "drop", "erase", "destroy", "discard", "forget", "trash", "clear",
    ],
    &["list", "show", "enumerate"],
    &[
        "get", "fetch", "retrieve", "read", "view", "show", "see", "display", "inspect",
    ],
    &["search", "find", "query", "lookup", "look", "locate"],
    &[
        "update", "edit", "modify", "change", "set", "alter", "patch",
    ],
    &["run", "execute", "trigger", "start", "launch", "invoke"],
    &["stop", "cancel", "abort", "halt", "terminate", "kill"],
    &["send", "post", "publish", "share"],
    &["download", "export", "save"],
    &["upload", "attach"],
    &["copy", "duplicate", "clone"],
    &["move", "rename", "relocate"],
    &["folder", "directory", "dir"],
    &["repo", "repository"],
    &["pr", "pull"],
    &["issue", "ticket", "bug"],
    &["image", "picture", "photo", "screenshot", "capture"],
    &["website", "site", "webpage", "page", "url"],
    &["web", "internet", "online"],
    &["user", "account", "member", "person", "people", "profile"],
    &["email", "mail"],
    &["database", "db"],
    &["javascript", "js", "script"],
    &["typescript", "ts"],
    &["environment", "env"],
    &[
        "configuration",
        "config",
        "settings",
        "setting",
        "preferences",
    ],
    &["documentation", "docs", "doc"],
    &["error", "exception", "crash", "failure"],
    &["log", "history"],
    &["star", "favorite", "bookmark"],
    &["watch", "subscribe", "follow"],
    &["unwatch", "unsubscribe", "unfollow", "mute"],
    &["comment", "reply"],
    &["message", "msg", "chat"],
    &[
        "place",
        "location",
        "venue",
        "business",
        "restaurant",
        "shop",
        "cafe",
    ],
    &["price", "cost", "pricing"],
    &["pay", "payment", "charge"],
    &["bill", "invoice"],
    &["customer", "client"],
    &["money", "balance", "funds"],
    &["type", "enter", "input", "fill"],
    &["click", "tap", "press"],
    &["dropdown", "select", "option", "choose", "pick"],
    &["dialog", "popup", "modal"],
    &["navigate", "go", "visit", "open", "browse"],
    &["back", "previous"],
    &["team", "group"],
    &["organization", "org", "company"],
    &["permission", "access", "role", "restriction"],
    &["meeting", "event", "appointment"],
    &["calendar", "schedule", "agenda"],
    &["video", "recording", "movie"],
    &["status", "state"],
    &["latest", "newest", "recent", "last"],
    &["sum", "add", "plus", "total"],
    &["whoami", "authenticated", "self"],
];

/// How much a match through a synonym counts, beside the query's own word.
const SYNONYM_WEIGHT: f32 = 0.6;

/// How much a match through a longer word the query word begins (`repo` → `repository`)
/// counts.
const PREFIX_WEIGHT: f32 = 0.5;

/// The score under which a match is weak (see [`ToolMatch::score`]): the tool has well under
/// half of what the query says. A query that fits no tool (`bake a chocolate cake` among
/// developer tools) finds nothing or only weak matches.
pub const WEAK_SCORE: f32 = 0.4;

/// Each stem's synonyms' stems, built once.
fn synonyms(stem_of_word: &str) -> &'static [String] {
    static TABLE: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table: HashMap<String, Vec<String>> = HashMap::new();
        for group in SYNONYMS {
            for word in *group {
                let others = table.entry(stem(word).to_string()).or_default();
                for other in *group {
                    let other = stem(other);
                    if other != stem(word) && !others.iter().any(|o| o == other) {
                        others.push(other.to_string());
                    }
                }
            }
        }
        table
    });
    table.get(stem_of_word).map_or(&[], Vec::as_slice)
}

fn has_vowel(text: &str) -> bool {
    text.bytes().any(|b| b"aeiouy".contains(&b))
}

/// Folds a lower-case word to its stem, a little like Porter's: plurals, `-ing` and `-ed`
/// (then a doubled last consonant: `logged`, `running` → `log`, `run`), `-ion` after `t` or
/// `s` (`creation` → `creat`), then a final `e`, and a final `y` or `i` (`create`, `entry`,
/// `cookie` → `creat`, `entr`, `cook`).
/// Only ASCII suffixes are cut, so the stem is always a prefix of the word.
fn stem(word: &str) -> &str {
    let mut w = word;
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        w = &w[..n - 2]; // "entries", "cookies" → "entri", "cooki", as "entry", "cookie"
    } else if n > 4
        && ["sses", "shes", "ches", "xes", "zes", "ses"]
            .iter()
            .any(|s| w.ends_with(s))
    {
        w = &w[..n - 2]; // "branches" → "branch", "releases" → "releas" (as "release")
    } else if n > 3 && w.ends_with('s') && !["ss", "us", "is"].iter().any(|s| w.ends_with(s)) {
        w = &w[..n - 1];
    }
    let n = w.len();
    let cut = if n > 5 && w.ends_with("ing") {
        3
    } else if n > 4 && w.ends_with("ed") {
        2 // "applied" → "appli", whose "i" goes as a final "y" does
    } else {
        0
    };
    if cut > 0 && has_vowel(&w[..n - cut]) {
        w = &w[..n - cut];
        let b = w.as_bytes();
        let m = b.len();
        let doubled = m >= 4 && b[m - 1] == b[m - 2] && b[m - 1].is_ascii_lowercase();
        if doubled && !b"aeiouylsz".contains(&b[m - 1]) {
            w = &w[..m - 1];
        }
    } else if n > 5 && w.ends_with("ion") && matches!(w.as_bytes()[n - 4], b't' | b's') {
        w = &w[..n - 3];
    }
    if w.len() >= 4 && w.ends_with('e') {
        w = &w[..w.len() - 1];
    }
    if w.len() >= 4 && (w.ends_with('y') || w.ends_with('i')) {
        w = &w[..w.len() - 1];
    }
    w
}

/// How [`split_words`] splits a run of letters.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Split {
    /// Not at all: a query's words (`GitHub` stays `github`).
    Plain,
    /// At case changes (`listIssues`, `HTTPServer`): names.
    Case,
    /// At case changes, and the whole run too (`GitHub` → `git`, `hub`, `github`): the other
    /// texts of a tool, which a query's `github` then matches.
    CaseAndWhole,
}

/// Calls `each` with the lower-cased words of `text` (at most [`MAX_INDEXED_TEXT`] of it):
/// its runs of letters and of digits, each split as `split` says.
fn split_words(text: &str, split: Split, mut each: impl FnMut(&str)) {
    let text = cut(text, MAX_INDEXED_TEXT);
    let mut word = String::new();
    let mut start = None;
    let mut last_alphabetic = false;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        if let Some(s) = start
            && (!c.is_alphanumeric() || c.is_alphabetic() != last_alphabetic)
        {
            split_run(&text[s..i], split, &mut word, &mut each);
            start = None;
        }
        if c.is_alphanumeric() && start.is_none() {
            start = Some(i);
        }
        last_alphabetic = c.is_alphabetic();
    }
}

/// Calls `each` with the lower-cased words of one run of letters or digits; `word` is
/// scratch space.
fn split_run(run: &str, split: Split, word: &mut String, each: &mut impl FnMut(&str)) {
    let mut parts = 0;
    let mut prev: Option<char> = None;
    let mut chars = run.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(p) = prev
            && split != Split::Plain
        {
            let next_lower = chars.peek().is_some_and(|n| n.is_lowercase());
            if (p.is_lowercase() && c.is_uppercase())
                || (p.is_uppercase() && c.is_uppercase() && next_lower)
            {
                each(word);
                word.clear();
                parts += 1;
            }
        }
        word.extend(c.to_lowercase());
        prev = Some(c);
    }
    each(word);
    word.clear();
    if split == Split::CaseAndWhole && parts > 0 {
        word.extend(run.chars().flat_map(char::to_lowercase));
        each(word);
        word.clear();
    }
}

/// Whether a lower-cased word says something about a tool: not a stop word, a number or a
/// single character.
fn meaningful(word: &str) -> bool {
    word.chars().nth(1).is_some()
        && !word.chars().all(|c| c.is_ascii_digit())
        && STOP_WORDS.binary_search(&word).is_err()
}

/// Whether a query's chunk between spaces is a value to act on, not a word for what to do:
/// a path, URL, address, file name or id (`/tmp/a.txt`, `owner/repo`, `#general`,
/// `cus_123`, `PROJ-42`), which no tool's text has. A short word with digits (`s3`, `ec2`)
/// is a word.
fn is_value(chunk: &str) -> bool {
    let chunk = chunk.trim_matches(|c: char| ",.;:!?'\"()[]{}".contains(c));
    let short_word = chunk.len() <= 4 && chunk.chars().all(|c| c.is_ascii_alphanumeric());
    chunk.contains(|c: char| "/\\.:#@=()[]{}<>*$%&|~`".contains(c))
        || (chunk.contains(|c: char| c.is_ascii_digit()) && !short_word)
}

/// The words of `text` as they are indexed: split (see [`split_words`]), meaningful ones
/// only, stemmed.
fn words(text: &str, split: Split, out: &mut Vec<String>) {
    split_words(text, split, |w| {
        if meaningful(w) {
            out.push(stem(w).to_string());
        }
    });
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

/// BM25's saturation of a weighted term frequency: from 0 towards 1.
fn saturate(tf: f32) -> f32 {
    tf / (K1 + tf)
}

/// The most enum values of one parameter that are indexed.
const MAX_INDEXED_ENUM: usize = 32;

/// The words of each field of `tool` of `server`: name, title, parameter names (and the
/// values a parameter's `enum` allows, such as an operation's name), server, description,
/// parameter descriptions.
fn fields(server: &str, tool: &Tool) -> [Vec<String>; FIELDS] {
    let mut f: [Vec<String>; FIELDS] = Default::default();
    words(&tool.name, Split::Case, &mut f[0]);
    let title = tool
        .member("title")
        .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
        .or_else(|| {
            let annotations: Value =
                serde_json::from_str(tool.member("annotations")?.get()).ok()?;
            annotations.get("title")?.as_str().map(str::to_string)
        });
    if let Some(title) = title {
        words(&title, Split::CaseAndWhole, &mut f[1]);
    }
    // Only a schema of a sensible size is read for its parameters.
    if tool.input_schema.get().len() <= 256 * 1024 {
        let schema = tool.input_schema_value();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props.iter().take(MAX_INDEXED_PARAMS) {
                words(name, Split::Case, &mut f[2]);
                let values = prop.get("enum").and_then(Value::as_array);
                for value in values.into_iter().flatten().take(MAX_INDEXED_ENUM) {
                    if let Some(value) = value.as_str() {
                        words(value, Split::Case, &mut f[2]);
                    }
                }
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    words(d, Split::CaseAndWhole, &mut f[5]);
                }
            }
        }
    }
    words(server, Split::CaseAndWhole, &mut f[3]);
    if let Some(d) = &tool.description {
        words(d, Split::CaseAndWhole, &mut f[4]);
    }
    f
}

/// One indexed word: how informative it is, and the tools that have it.
#[derive(Debug)]
struct Posting {
    /// BM25's inverse document frequency: high for a word few tools have.
    idf: f32,
    /// The tools that have the word.
    tools: Vec<Posted>,
}

/// A tool that has an indexed word.
#[derive(Debug, Clone, Copy)]
struct Posted {
    /// The tool's place in the index.
    tool: u32,
    /// The word's BM25F weight in the tool, saturated (from 0 towards 1).
    saturated: f32,
    /// Whether the word is in the tool's name.
    in_name: bool,
}

/// How well one tool fits a query, summed over the query's words.
#[derive(Debug, Default, Clone, Copy)]
struct Fit {
    /// The query's weight the tool has (see [`ToolMatch::score`]).
    query: f32,
    /// How many of the words of the tool's name the query has.
    name: f32,
    /// BM25F, to break ties.
    bm25: f32,
}

/// The part of a score that is the share of the tool's name the query has; the rest is the
/// share of the query the tool has.
const NAME_SHARE: f32 = 0.25;

/// The least a query word weighs, as a part of the weight of a word no tool has: a word most
/// tools have (`get`, `list`) still tells one tool of a family from the others.
const MIN_WEIGHT: f32 = 0.3;

/// One word of a query, and the indexed words that stand for it.
struct QueryWord<'a> {
    /// Its share of the query: its `idf`, or the highest `idf` there is when no tool has it.
    weight: f32,
    /// The indexed words it matches, each with how much a match counts (1 for the word
    /// itself, less for a synonym or a longer word it begins).
    matches: Vec<(&'a Posting, f32)>,
}

/// A tool a search found, and how well it fits the query.
#[derive(Debug, Clone, Copy)]
pub struct ToolMatch<'a> {
    /// The tool.
    pub tool: &'a RegisteredTool,
    /// How well the tool fits the query, from 0 to 1 (to 3 decimals), comparable across
    /// queries: three quarters the share of the query the tool has, one quarter the share of
    /// the tool's name the query has. The share of the query weighs each of its words by
    /// how informative it is (BM25's `idf`, at least 0.3 of the `idf` of a word no tool has;
    /// a word no tool has, or a server's name, weighs as much as that) and counts how well
    /// the tool has it: 1 for the word once in its name, less when it is only in its
    /// description or parameters, 0.6 of that through a synonym, 0.5 through a longer word
    /// it begins. A tool whose name says all the query says scores 1; under [`WEAK_SCORE`]
    /// the match is weak.
    pub score: f32,
}

impl ToolMatch<'_> {
    /// Whether the match is weak: its score is under [`WEAK_SCORE`].
    pub fn is_weak(&self) -> bool {
        self.score < WEAK_SCORE
    }
}

/// The visible tools, ready to be searched. Built once per registry change.
#[derive(Debug, Default)]
pub struct ToolIndex {
    tools: Vec<RegisteredTool>,
    /// How many different words each tool's name has.
    name_words: Vec<u16>,
    postings: BTreeMap<String, Posting>,
    /// The `idf` of a word no tool has.
    unseen_idf: f32,
    /// The words of the servers' names, sorted.
    server_words: Vec<String>,
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
        let mut postings: HashMap<String, Vec<Posted>> = HashMap::new();
        let mut name_words = Vec::with_capacity(sorted.len());
        let mut server_words: Vec<String> =
            sorted_fields.iter().flat_map(|f| f[3].clone()).collect();
        server_words.sort_unstable();
        server_words.dedup();
        for (tool, f) in sorted_fields.iter().enumerate() {
            let mut weighted: HashMap<&str, f32> = HashMap::new();
            for (k, words) in f.iter().enumerate() {
                let norm = 1.0 - B[k] + B[k] * words.len() as f32 / avg[k];
                for w in words {
                    *weighted.entry(w.as_str()).or_default() += WEIGHTS[k] / norm;
                }
            }
            let mut in_name = f[0].clone();
            in_name.sort_unstable();
            in_name.dedup();
            name_words.push(u16::try_from(in_name.len()).unwrap_or(u16::MAX));
            for (w, tf) in weighted {
                postings.entry(w.to_string()).or_default().push(Posted {
                    tool: tool as u32,
                    saturated: saturate(tf),
                    in_name: in_name.binary_search_by(|n| n.as_str().cmp(w)).is_ok(),
                });
            }
        }
        let idf = |df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let postings = postings
            .into_iter()
            .map(|(w, tools)| {
                let idf = idf(tools.len() as f32);
                (w, Posting { idf, tools })
            })
            .collect();
        let definition_bytes = sorted
            .iter()
            .map(|t| serde_json::to_vec(&t.definition).map_or(0, |v| v.len()))
            .sum();
        ToolIndex {
            tools: sorted,
            name_words,
            postings,
            unseen_idf: idf(0.0),
            server_words,
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

    /// The tools of [`ToolIndex::matches`], best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&RegisteredTool> {
        self.matches(query, limit)
            .into_iter()
            .map(|m| m.tool)
            .collect()
    }

    /// The tools that best match `query`, best first, each with its score, at most `limit`
    /// (and [`MAX_SEARCH_LIMIT`]); tools that match no word of it are never returned.
    pub fn matches(&self, query: &str, limit: usize) -> Vec<ToolMatch<'_>> {
        let limit = limit.min(MAX_SEARCH_LIMIT);
        let query = self.query_words(query);
        let total: f32 = query.iter().map(|w| w.weight).sum();
        // Dense per tool, indexed by its place: cheaper than hashing each posting.
        let mut fits = vec![Fit::default(); self.tools.len()];
        let mut found: Vec<u32> = Vec::new();
        // Per tool, the best of the indexed words that stand for one query word.
        let mut best = vec![Fit::default(); self.tools.len()];
        let mut touched: Vec<u32> = Vec::new();
        for word in &query {
            for (posting, counts) in &word.matches {
                for p in &posting.tools {
                    let b = &mut best[p.tool as usize];
                    // Every match has some BM25F: none yet means the tool is new to the word.
                    if b.bm25 == 0.0 {
                        touched.push(p.tool);
                    }
                    // 1 for the word once in a name of the usual length; at most 1.
                    let has = (p.saturated / saturate(WEIGHTS[0])).min(1.0);
                    b.query = b.query.max(counts * has);
                    b.name = b.name.max(if p.in_name { *counts } else { 0.0 });
                    b.bm25 = b.bm25.max(counts * posting.idf * p.saturated);
                }
            }
            for tool in touched.drain(..) {
                let b = std::mem::take(&mut best[tool as usize]);
                let fit = &mut fits[tool as usize];
                if fit.bm25 == 0.0 {
                    found.push(tool);
                }
                fit.query += word.weight * b.query;
                fit.name += b.name;
                fit.bm25 += b.bm25;
            }
        }
        let mut ranked: Vec<(u32, f32, f32)> = found
            .into_iter()
            .map(|tool| {
                let fit = fits[tool as usize];
                let names = f32::from(self.name_words[tool as usize].max(1));
                let name = (fit.name / names).min(1.0);
                let score = fit.query / total * (1.0 - NAME_SHARE + NAME_SHARE * name);
                (tool, score, fit.bm25)
            })
            .collect();
        let order = |a: &(u32, f32, f32), b: &(u32, f32, f32)| {
            b.1.total_cmp(&a.1)
                .then(b.2.total_cmp(&a.2))
                .then(a.0.cmp(&b.0))
        };
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
        ranked.truncate(limit);
        ranked
            .into_iter()
            .map(|(tool, score, _)| ToolMatch {
                tool: &self.tools[tool as usize],
                score: (score * 1000.0).round() / 1000.0,
            })
            .collect()
    }

    /// The meaningful words of `query` (at most 32), each with the indexed words it matches:
    /// itself, its synonyms, the words it begins when it is no word of its own, and the
    /// indexed word that two or three query words make together (`who am I` → `whoami`,
    /// `local storage` → `localstorage`).
    fn query_words(&self, query: &str) -> Vec<QueryWord<'_>> {
        let mut raw: Vec<String> = Vec::new();
        for chunk in cut(query, 1024).split_whitespace().filter(|c| !is_value(c)) {
            split_words(chunk, Split::Plain, |w| raw.push(w.to_string()));
        }
        let mut stems: Vec<&str> = Vec::new();
        for w in raw.iter().filter(|w| meaningful(w)) {
            if !stems.contains(&stem(w)) && stems.len() < 32 {
                stems.push(stem(w));
            }
        }
        let mut query: Vec<QueryWord<'_>> = stems
            .iter()
            .map(|s| {
                // A word no tool has says much, as does a server's name: its tools are wanted.
                let names_server = self.server_words.binary_search_by(|w| w.as_str().cmp(s));
                let weight = match self.postings.get(*s) {
                    Some(p) if names_server.is_err() => p.idf.max(MIN_WEIGHT * self.unseen_idf),
                    _ => self.unseen_idf,
                };
                QueryWord {
                    weight,
                    matches: self.matching(s),
                }
            })
            .collect();
        for i in 0..raw.len() {
            for parts in [raw.get(i..i + 2), raw.get(i..i + 3)].into_iter().flatten() {
                let joined = parts.concat();
                let Some(p) = self.postings.get(stem(&joined)) else {
                    continue;
                };
                let matches = self.matching(stem(&joined));
                let mut attached = false;
                for part in parts.iter().filter(|w| meaningful(w)) {
                    if let Some(k) = stems.iter().position(|s| *s == stem(part)) {
                        query[k].matches.extend(matches.iter().copied());
                        attached = true;
                    }
                }
                if !attached && query.len() < 32 {
                    query.push(QueryWord {
                        weight: p.idf,
                        matches,
                    });
                }
            }
        }
        query
    }

    /// The indexed words that stand for the query word `s` (stemmed), each with how much a
    /// match counts: itself, its synonyms, and the words it begins when it is no indexed word.
    fn matching(&self, s: &str) -> Vec<(&Posting, f32)> {
        let own = self.postings.get(s);
        let mut matches: Vec<(&Posting, f32)> = own.iter().map(|p| (*p, 1.0)).collect();
        for synonym in synonyms(s) {
            if let Some(p) = self.postings.get(synonym) {
                matches.push((p, SYNONYM_WEIGHT));
            }
        }
        if own.is_none() && s.len() >= 3 {
            let longer = self
                .postings
                .range::<str, _>((Bound::Excluded(s), Bound::Unbounded))
                .take_while(|(w, _)| w.starts_with(s))
                .take(16);
            matches.extend(longer.map(|(_, p)| (p, PREFIX_WEIGHT)));
        }
        matches
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

    fn words_of(text: &str, split: Split) -> Vec<String> {
        let mut out = Vec::new();
        words(text, split, &mut out);
        out
    }

    #[test]
    fn words_split_on_case_and_separators_and_drop_stop_words_and_numbers() {
        assert_eq!(
            words_of(
                "listIssues get_pull-request HTTPServer v2Beta the 42",
                Split::Case
            ),
            [
                "list", "issu", "get", "pull", "request", "http", "server", "beta"
            ]
        );
        // A tool's texts keep a brand's whole name beside its parts; a query does not split it.
        assert_eq!(
            words_of("GitHub users", Split::CaseAndWhole),
            ["git", "hub", "github", "user"]
        );
        assert_eq!(words_of("GitHub users", Split::Plain), ["github", "user"]);
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "sorted");
    }

    #[test]
    fn stems_fold_a_word_family_into_one() {
        let families: [&[&str]; 8] = [
            &["create", "created", "creating", "creates", "creation"],
            &["delete", "deleted", "deleting", "deletion"],
            &["entry", "entries"],
            &["cookie", "cookies"],
            &["log", "logs", "logged", "logging"],
            &["apply", "applied", "applies"],
            &["branch", "branches"],
            &["release", "releases", "released"],
        ];
        for family in families {
            let stems: Vec<&str> = family.iter().map(|w| stem(w)).collect();
            assert!(
                stems.iter().all(|s| *s == stems[0]),
                "{family:?}: {stems:?}"
            );
        }
        for kept in ["string", "status", "add", "analysis"] {
            assert_eq!(stem(kept), kept);
        }
        // Only ASCII suffixes are cut: any other text is kept whole, never split in a char.
        for word in [
            "日本語ing",
            "cafés",
            "ñññed",
            "a\u{1000}ed",
            "aa\u{1000}ing",
        ] {
            assert!(word.starts_with(stem(word)));
        }
    }

    #[test]
    fn values_in_a_query_are_not_words() {
        for value in [
            "/tmp/a.txt",
            "owner/repo,",
            "#general",
            "cus_123",
            "PROJ-42",
            "v1.2",
        ] {
            assert!(is_value(value), "{value}");
        }
        for word in ["issue", "pull-request", "s3", "(optional)", "list_issues"] {
            assert!(!is_value(word), "{word}");
        }
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
                json!({"name": "twin_a", "description": "identical", "inputSchema": {"type": "object"}}),
            ),
            tool(
                json!({"name": "twin_b", "description": "identical", "inputSchema": {"type": "object"}}),
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
            .search("identical", 5)
            .iter()
            .map(|t| t.tool.clone())
            .collect();
        assert_eq!(twins, ["twin_a", "twin_b"]);
        assert!(index.search("zebra", 5).is_empty());
        assert!(index.search("", 5).is_empty());
        assert_eq!(index.search("identical", 1).len(), 1);
        assert!(index.get("mcp__gh__read_file").is_some());
    }

    #[test]
    fn scores_say_how_much_of_the_query_a_tool_has() {
        let tools = [
            tool(
                json!({"name": "merge_pull_request", "description": "Merge a pull request.",
                "inputSchema": {"type": "object"}}),
            ),
            tool(
                json!({"name": "request_copilot_review", "description": "Request a review.",
                "inputSchema": {"type": "object"}}),
            ),
            tool(
                json!({"name": "create_branch", "description": "Create a new branch.",
                "inputSchema": {"type": "object"}}),
            ),
            tool(
                json!({"name": "whoami", "description": "The signed-in user.",
                "inputSchema": {"type": "object"}}),
            ),
        ];
        let index = ToolIndex::new(tools.iter().map(|t| ("gh", t)));
        let found = |q: &str| -> Vec<(String, f32, bool)> {
            index
                .matches(q, 5)
                .iter()
                .map(|m| (m.tool.tool.clone(), m.score, m.is_weak()))
                .collect()
        };
        let merge = found("merge a pull request");
        assert_eq!(merge[0], ("merge_pull_request".into(), 1.0, false));
        assert!(merge[1].1 < 0.5, "{merge:?}");
        // Values are not words: the same query with a repository and a number in it.
        assert_eq!(found("merge pull request 12 in owner/repo"), merge);
        assert!(found("bake a chocolate cake").is_empty());
        let cake = found("make a cake");
        assert_eq!(cake[0].0, "create_branch", "make is create");
        assert!(cake.iter().all(|m| m.2), "{cake:?}");
        assert_eq!(found("who am I")[0].0, "whoami", "three words make one");
        assert_eq!(
            found("remove a branch")[0].0,
            "create_branch",
            "only through a synonym"
        );
        assert!(found("remove a branch")[0].1 < 1.0);
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
