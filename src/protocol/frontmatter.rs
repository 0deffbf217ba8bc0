//! The YAML frontmatter of a skill's `SKILL.md`, read to compare it with the skill's entry
//! (SEP-2640: a host parses it and loads the skill only if it is the entry's, field by field).
//!
//! A subset of YAML 1.2 with the core schema, the one frontmatter is written in: block
//! mappings and sequences (a sequence's items may be compact mappings), plain, single- and
//! double-quoted scalars (plain ones may continue on more-indented lines), literal (`|`) and
//! folded (`>`) block scalars, one-line flow sequences and mappings, comments. Anchors,
//! aliases, tags, directives and multi-line quoted or flow values are refused by name: what
//! cannot be read cannot be checked, and an unchecked skill is not loaded.

use serde_json::{Map, Number, Value};

/// Deepest nesting read (a hostile file cannot recurse without bound).
const MAX_DEPTH: usize = 32;

/// The frontmatter of `text` (a `SKILL.md`): the mapping between its leading `---` lines.
pub(crate) fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("it does not begin with a frontmatter block (a line ---)".into());
    }
    let mut body = Vec::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            return match Parser::new(&body).document()? {
                Value::Object(map) => Ok(map),
                Value::Null => Ok(Map::new()),
                _ => Err("its frontmatter is not a mapping of fields".into()),
            };
        }
        body.push(line);
    }
    Err("its frontmatter block has no closing line ---".into())
}

/// Where the frontmatter `file` differs from the entry's `entry`, one line a field (a field
/// missing on one side counts as null there); empty when they are the same.
pub(crate) fn differences(file: &Map<String, Value>, entry: &Map<String, Value>) -> Vec<String> {
    let mut keys: Vec<&String> = file.keys().chain(entry.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let (a, b) = (file.get(key), entry.get(key));
            let a = a.unwrap_or(&Value::Null);
            let b = b.unwrap_or(&Value::Null);
            (!same(a, b)).then(|| format!("{key}: the file has {a}, the entry {b}"))
        })
        .collect()
}

/// Equal as JSON values, numbers by value (`1` is `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// One line of the block: its indentation and what follows it (`None` for a blank or
/// comment-only line).
struct Line<'a> {
    raw: &'a str,
    indent: usize,
    content: Option<&'a str>,
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(raw: &[&'a str]) -> Parser<'a> {
        let lines = raw
            .iter()
            .map(|raw| {
                let content = raw.trim_start_matches(' ');
                let indent = raw.len() - content.len();
                let content = content.trim_end();
                let blank = content.is_empty() || content.starts_with('#');
                Line {
                    raw,
                    indent,
                    content: (!blank).then_some(content),
                }
            })
            .collect();
        Parser { lines, at: 0 }
    }

    fn document(&mut self) -> Result<Value, String> {
        let Some((indent, _)) = self.next_content() else {
            return Ok(Value::Null);
        };
        let value = self.block(indent, 0)?;
        match self.next_content() {
            None => Ok(value),
            Some(_) => Err(self.error("a line indented less than the ones before it")),
        }
    }

    /// The next line with content, from `at` on (skipping blank ones): its indent and text.
    fn next_content(&mut self) -> Option<(usize, &'a str)> {
        while let Some(line) = self.lines.get(self.at) {
            if let Some(content) = line.content {
                return Some((line.indent, content));
            }
            self.at += 1;
        }
        None
    }

    fn error(&self, what: &str) -> String {
        format!("its frontmatter's line {}: {what}", self.at + 2)
    }

    /// The mapping or sequence whose lines start at column `indent`.
    fn block(&mut self, indent: usize, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested deeper than 32 levels"));
        }
        match self.next_content() {
            Some((_, content)) if is_item(content) => self.sequence(indent, depth),
            Some(_) => self.mapping(indent, depth),
            None => Ok(Value::Null),
        }
    }

    fn sequence(&mut self, indent: usize, depth: usize) -> Result<Value, String> {
        let mut items = Vec::new();
        while let Some((at, content)) = self.next_content() {
            if at < indent || (at == indent && !is_item(content)) {
                break;
            }
            if at > indent {
                return Err(self.error("a line indented more than its sequence's items"));
            }
            let rest = strip_comment(content[1..].trim_start_matches(' '));
            if rest.is_empty() {
                self.at += 1;
                items.push(self.nested(indent, depth)?);
            } else if is_item(rest) || key_of(rest).is_some() {
                // A compact block (`- name: x` or `- - x`): its lines start after the dash.
                let column = indent + (content.len() - content[1..].trim_start_matches(' ').len());
                let line = &mut self.lines[self.at];
                line.indent = column;
                line.content = Some(rest);
                items.push(self.block(column, depth + 1)?);
            } else {
                self.at += 1;
                items.push(self.scalar_value(rest, indent, depth)?);
            }
        }
        Ok(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize, depth: usize) -> Result<Value, String> {
        let mut map = Map::new();
        while let Some((at, content)) = self.next_content() {
            if at < indent || (at == indent && is_item(content)) {
                break;
            }
            if at > indent {
                return Err(self.error("a line indented more than its mapping's keys"));
            }
            if content.starts_with('\t') {
                return Err(self.error("a tab in its indentation (YAML indents with spaces)"));
            }
            let (key, rest) = key_of(content)
                .ok_or_else(|| self.error("a line that is neither `key: value` nor `- item`"))?;
            let key = scalar(key).map_err(|e| self.error(&e))?;
            let key = match key {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.at += 1;
            let value = if rest.is_empty() {
                match self.next_content() {
                    // YAML lets a mapping's sequence start at the key's own column.
                    Some((next, c)) if next == indent && is_item(c) => {
                        self.sequence(indent, depth + 1)?
                    }
                    _ => self.nested(indent, depth)?,
                }
            } else {
                self.scalar_value(rest, indent, depth)?
            };
            if map.insert(key.clone(), value).is_some() {
                return Err(self.error(&format!("the key {key:?} appears twice")));
            }
        }
        Ok(Value::Object(map))
    }

    /// The block under a line ending in `key:` or `-`: more indented than `indent`, or null.
    fn nested(&mut self, indent: usize, depth: usize) -> Result<Value, String> {
        match self.next_content() {
            Some((next, _)) if next > indent => self.block(next, depth + 1),
            _ => Ok(Value::Null),
        }
    }

    /// The value after `key: ` or `- ` (the line already consumed): a block scalar, a flow
    /// value, or a plain scalar that may continue on the lines indented more than `indent`.
    fn scalar_value(&mut self, text: &str, indent: usize, depth: usize) -> Result<Value, String> {
        let text = strip_comment(text);
        if text.starts_with('|') || text.starts_with('>') {
            return self.block_scalar(text, indent);
        }
        if text.starts_with(['"', '\'', '[', '{']) {
            return flow(text, depth).map_err(|e| self.error(&e));
        }
        let mut words = text.to_string();
        while let Some((next, more)) = self.next_content() {
            if next <= indent {
                break;
            }
            words.push(' ');
            words.push_str(strip_comment(more));
            self.at += 1;
        }
        if words.len() == text.len() {
            scalar(text).map_err(|e| self.error(&e))
        } else {
            Ok(Value::String(words))
        }
    }

    /// A `|` (literal) or `>` (folded) block scalar: the header `header`, its lines after.
    fn block_scalar(&mut self, header: &str, indent: usize) -> Result<Value, String> {
        let literal = header.starts_with('|');
        let mut chomp = ' ';
        let mut explicit = None;
        for c in header[1..].chars() {
            match c {
                '-' | '+' => chomp = c,
                '1'..='9' => explicit = c.to_digit(10).map(|d| indent + d as usize),
                _ => {
                    return Err(
                        self.error(&format!("an unreadable block scalar header {header:?}"))
                    );
                }
            }
        }
        let start = self.at;
        let mut end = start;
        let mut column = explicit;
        while let Some(line) = self.lines.get(end) {
            let blank = line.raw.trim().is_empty();
            if !blank {
                let own = *column.get_or_insert(line.indent);
                if line.indent < own || line.indent <= indent {
                    break;
                }
            }
            end += 1;
        }
        let column = column.unwrap_or(indent + 1);
        let mut body: Vec<&str> = self.lines[start..end]
            .iter()
            .map(|l| l.raw.get(column..).unwrap_or(""))
            .collect();
        self.at = end;
        let trailing = body.iter().rev().take_while(|l| l.is_empty()).count();
        body.truncate(body.len() - trailing);
        let mut text = String::new();
        for (i, line) in body.iter().enumerate() {
            if i > 0 {
                let previous = body[i - 1];
                let folds = !literal
                    && !line.is_empty()
                    && !previous.is_empty()
                    && !line.starts_with(' ')
                    && !previous.starts_with(' ');
                text.push(if folds { ' ' } else { '\n' });
            }
            text.push_str(line);
        }
        if !literal {
            // Folding: a blank line between two lines is their one line break.
            text = text.replace("\n\n", "\n");
        }
        match chomp {
            '-' => {}
            '+' => text.push_str(&"\n".repeat(trailing + usize::from(!body.is_empty()))),
            _ if !body.is_empty() => text.push('\n'),
            _ => {}
        }
        Ok(Value::String(text))
    }
}

fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// `key` and the rest of a `key: value` line (the rest empty for `key:`, a comment dropped);
/// the key may be quoted.
fn key_of(content: &str) -> Option<(&str, &str)> {
    let mut from = match content.as_bytes().first()? {
        q @ (b'"' | b'\'') => content[1..].find(*q as char)? + 2,
        b'[' | b'{' | b'#' => return None,
        _ if is_item(content) => return None,
        _ => 0,
    };
    // The first colon followed by a space or the line's end (`a:b` is a plain scalar).
    loop {
        let colon = from + content[from..].find(':')?;
        let rest = &content[colon + 1..];
        if rest.is_empty() || rest.starts_with(' ') {
            return Some((
                content[..colon].trim_end(),
                strip_comment(rest.trim_start()),
            ));
        }
        from = colon + 1;
    }
}

/// `text` without a trailing comment (` #` outside quotes).
fn strip_comment(text: &str) -> &str {
    let mut quote = None;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (None, b'"' | b'\'') if i == 0 || bytes[i - 1] == b' ' => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'#') if i == 0 || bytes[i - 1] == b' ' => return text[..i].trim_end(),
            _ => {}
        }
    }
    text.trim_end()
}

/// A one-line value: quoted, a flow sequence or mapping, or a plain scalar.
fn flow(text: &str, depth: usize) -> Result<Value, String> {
    let (value, rest) = flow_value(text, depth)?;
    if rest.trim().is_empty() {
        Ok(value)
    } else {
        Err(format!("{:?} follows a value", rest.trim()))
    }
}

/// The flow value at the start of `text`, and what follows it.
fn flow_value(text: &str, depth: usize) -> Result<(Value, &str), String> {
    if depth > MAX_DEPTH {
        return Err("nested deeper than 32 levels".into());
    }
    let text = text.trim_start();
    match text.as_bytes().first() {
        Some(b'"') => double_quoted(text),
        Some(b'\'') => {
            let mut out = String::new();
            let mut rest = &text[1..];
            loop {
                let end = rest
                    .find('\'')
                    .ok_or("a single-quoted value that does not end on its line")?;
                out.push_str(&rest[..end]);
                rest = &rest[end + 1..];
                match rest.strip_prefix('\'') {
                    Some(more) => {
                        out.push('\'');
                        rest = more;
                    }
                    None => return Ok((Value::String(out), rest)),
                }
            }
        }
        Some(open @ (b'[' | b'{')) => {
            let close = if *open == b'[' { ']' } else { '}' };
            let mut rest = text[1..].trim_start();
            let mut items = Vec::new();
            let mut map = Map::new();
            loop {
                if let Some(after) = rest.strip_prefix(close) {
                    let value = match open {
                        b'[' => Value::Array(items),
                        _ => Value::Object(map),
                    };
                    return Ok((value, after));
                }
                if *open == b'{' {
                    let colon = rest.find(':').ok_or("a flow mapping entry without `:`")?;
                    let key = match flow_value(&rest[..colon], depth + 1)? {
                        (Value::String(s), _) => s,
                        (other, _) => other.to_string(),
                    };
                    let (value, after) = flow_value(&rest[colon + 1..], depth + 1)?;
                    map.insert(key, value);
                    rest = after.trim_start();
                } else {
                    let (value, after) = flow_value(rest, depth + 1)?;
                    items.push(value);
                    rest = after.trim_start();
                }
                if let Some(after) = rest.strip_prefix(',') {
                    rest = after.trim_start();
                } else if !rest.starts_with(close) {
                    return Err(format!(
                        "a flow value that does not end on its line with {close}"
                    ));
                }
            }
        }
        _ => {
            let end = text.find([',', ']', '}']).unwrap_or(text.len());
            Ok((scalar(text[..end].trim())?, &text[end..]))
        }
    }
}

fn double_quoted(text: &str) -> Result<(Value, &str), String> {
    let mut out = String::new();
    let mut chars = text[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((Value::String(out), &text[i + 2..])),
            '\\' => {
                let (_, e) = chars.next().ok_or("a double-quoted value ends in \\")?;
                let hex = |n: usize, chars: &mut std::str::CharIndices| {
                    let digits: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                    u32::from_str_radix(&digits, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or(format!("an unreadable escape \\{e}{digits}"))
                };
                out.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    '"' | '\\' | '/' | ' ' => e,
                    'x' => hex(2, &mut chars)?,
                    'u' => hex(4, &mut chars)?,
                    'U' => hex(8, &mut chars)?,
                    other => return Err(format!("an unknown escape \\{other}")),
                });
            }
            _ => out.push(c),
        }
    }
    Err("a double-quoted value that does not end on its line".into())
}

/// A plain scalar by the core schema: null, a boolean, a number, else a string.
fn scalar(text: &str) -> Result<Value, String> {
    let text = text.trim();
    if text.starts_with(['"', '\'', '[', '{']) {
        return flow(text, 0);
    }
    if let Some(c) = text.chars().next().filter(|c| "&*!%@`|>".contains(*c)) {
        return Err(format!(
            "{text:?} starts with {c}, YAML (an anchor, alias, tag or directive) this client does not read"
        ));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => number(text).unwrap_or_else(|| Value::String(text.to_string())),
    })
}

fn number(text: &str) -> Option<Value> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok().map(Value::from);
    }
    if let Some(octal) = text.strip_prefix("0o") {
        return i64::from_str_radix(octal, 8).ok().map(Value::from);
    }
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<i64>().ok().map(Value::from);
    }
    let numeric = digits
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b));
    numeric
        .then(|| text.parse::<f64>().ok())
        .flatten()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn front(yaml: &str) -> Value {
        Value::Object(parse(&format!("---\n{yaml}---\n# Body\n")).unwrap())
    }

    #[test]
    fn the_frontmatter_of_real_skills_reads_as_json() {
        let yaml = "name: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n\
            license: Apache-2.0 # the code's\nallowed-tools: [Read, \"Bash(git:*)\"]\n\
            metadata:\n  author: example-org\n  version: \"1.0\"\n  tags:\n  - pdf\n  - forms\n\
            compatibility: 'needs ''qpdf'''\n";
        assert_eq!(
            front(yaml),
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "allowed-tools": ["Read", "Bash(git:*)"],
                "metadata": {"author": "example-org", "version": "1.0", "tags": ["pdf", "forms"]},
                "compatibility": "needs 'qpdf'"
            })
        );
    }

    #[test]
    fn block_and_continued_scalars() {
        let yaml = "a: |\n  one\n  two\n\nb: >-\n  folded\n  line\n\n  next\nc: a long\n  plain value\nd:\n  - x: 1\n    y: 2.5\n  - true\n  - ~\n";
        assert_eq!(
            front(yaml),
            json!({
                "a": "one\ntwo\n",
                "b": "folded line\nnext",
                "c": "a long plain value",
                "d": [{"x": 1, "y": 2.5}, true, null]
            })
        );
    }

    #[test]
    fn what_it_cannot_read_is_refused_by_name() {
        let refused = |yaml: &str| parse(&format!("---\n{yaml}---\n")).unwrap_err();
        assert!(
            refused("a: &x 1\n").contains("anchor"),
            "{}",
            refused("a: &x 1\n")
        );
        assert!(refused("a: 1\na: 2\n").contains("twice"));
        assert!(refused("a: \"open\n").contains("does not end"));
        assert!(refused("just text\n").contains("neither"));
        assert!(
            parse("no frontmatter\n")
                .unwrap_err()
                .contains("does not begin")
        );
        assert!(parse("---\na: 1\n").unwrap_err().contains("no closing"));
        let deep = (0..40)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect::<String>();
        assert!(refused(&deep).contains("deeper"));
    }

    #[test]
    fn differences_name_each_field() {
        let file = front("name: a\ndescription: Exfiltrate credentials\nn: 1\n");
        let entry = json!({"name": "a", "description": "Fill forms", "n": 1.0, "extra": true});
        let diff = differences(file.as_object().unwrap(), entry.as_object().unwrap());
        assert_eq!(
            diff,
            [
                "description: the file has \"Exfiltrate credentials\", the entry \"Fill forms\"",
                "extra: the file has null, the entry true"
            ]
        );
        let entry = json!({"name": "a"});
        let same = front("name: a\n");
        assert!(differences(same.as_object().unwrap(), entry.as_object().unwrap()).is_empty());
    }
}
