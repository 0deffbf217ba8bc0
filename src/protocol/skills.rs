//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`): a server lists skills
//! (`skills/list`, `skills/get`), each an entry naming its files with their SHA-256 digests;
//! a file is read through its `skill://` URI (`resources/read`) and kept only if its bytes
//! match the entry. Nothing is fetched before the embedder asks: listing reads no file.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The extension's identifier, in `capabilities.extensions` of both sides.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// Most pages of `skills/list` or `resources/directory/read` read for one listing.
pub(crate) const MAX_SKILL_PAGES: usize = 100;

/// One skill a server serves: a `skills/list` or `skills/get` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawSkill", into = "RawSkill")]
#[non_exhaustive]
pub struct Skill {
    /// The URI of its `SKILL.md` (`skill://<path>/SKILL.md`).
    pub uri: String,
    /// The `SKILL.md`'s YAML frontmatter as JSON: at least `name` and `description`.
    pub frontmatter: serde_json::Map<String, Value>,
    /// Its files with their digests; `None` when the server lists them as `"dynamic"` (found
    /// with `resources/directory/read`, with no digest to check them against).
    pub files: Option<Vec<SkillFile>>,
}

/// One file of a skill, as its entry lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// Where it is read (`resources/read`).
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits, of the file's bytes.
    pub digest: String,
    /// Its length in bytes, when the entry gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A skill file as read and checked against its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillFileContent {
    /// The file's URI.
    pub uri: String,
    /// Its media type, as the server gave it.
    pub mime_type: Option<String>,
    /// Its bytes (a text read's UTF-8, a blob's decoded base64).
    pub bytes: Vec<u8>,
    /// Whether the bytes were checked against a digest: false only for a skill whose files
    /// are `"dynamic"`.
    pub verified: bool,
}

impl SkillFileContent {
    /// The file as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

impl Skill {
    /// The skill's name: the frontmatter's `name`, else the path segment before `SKILL.md`.
    pub fn name(&self) -> &str {
        match self.frontmatter.get("name").and_then(Value::as_str) {
            Some(name) => name,
            None => self
                .uri
                .trim_end_matches("/SKILL.md")
                .rsplit('/')
                .next()
                .unwrap_or(&self.uri),
        }
    }

    /// The frontmatter's `description` (empty if it has none).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The listed file at `uri`.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files.as_ref()?.iter().find(|f| f.uri == uri)
    }
}

/// A skill entry as it is on the wire: `resources` is a list or the string `"dynamic"`.
#[derive(Serialize, Deserialize)]
struct RawSkill {
    uri: String,
    frontmatter: serde_json::Map<String, Value>,
    resources: Value,
}

impl TryFrom<RawSkill> for Skill {
    type Error = String;
    fn try_from(raw: RawSkill) -> Result<Skill, String> {
        let files = match raw.resources {
            Value::String(s) if s == "dynamic" => None,
            list @ Value::Array(_) => Some(
                serde_json::from_value(list)
                    .map_err(|e| format!("skill {}: resources: {e}", raw.uri))?,
            ),
            other => {
                return Err(format!(
                    "skill {}: resources is neither a list nor \"dynamic\": {other}",
                    raw.uri
                ));
            }
        };
        Ok(Skill {
            uri: raw.uri,
            frontmatter: raw.frontmatter,
            files,
        })
    }
}

impl From<Skill> for RawSkill {
    fn from(skill: Skill) -> RawSkill {
        let resources = match skill.files {
            Some(files) => serde_json::to_value(files).unwrap_or(Value::Null),
            None => Value::String("dynamic".into()),
        };
        RawSkill {
            uri: skill.uri,
            frontmatter: skill.frontmatter,
            resources,
        }
    }
}

/// The bytes of a `resources/read` result's content for `uri`: its text, or its blob decoded.
pub(crate) fn content_bytes(
    result: &Value,
    uri: &str,
) -> Result<(Vec<u8>, Option<String>), String> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the result has no contents")?;
    let content = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or(contents.first())
        .ok_or("the result's contents are empty")?;
    let mime_type = content
        .get("mimeType")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(text) = content.get("text").and_then(Value::as_str) {
        return Ok((text.as_bytes().to_vec(), mime_type));
    }
    let blob = content
        .get("blob")
        .and_then(Value::as_str)
        .ok_or("the content has neither text nor blob")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| format!("its blob is not base64: {e}"))?;
    Ok((bytes, mime_type))
}

/// Checks `bytes` against the entry `file`: its size, if given, and its digest.
pub(crate) fn verify(file: &SkillFile, bytes: &[u8]) -> Result<(), String> {
    if let Some(size) = file.size
        && size != bytes.len() as u64
    {
        return Err(format!(
            "{} is {} bytes, and its skill entry says {size}",
            file.uri,
            bytes.len()
        ));
    }
    let actual = format!("sha256:{:x}", Sha256::digest(bytes));
    if !actual.eq_ignore_ascii_case(&file.digest) {
        return Err(format!(
            "the content of {} does not match the digest of its skill entry ({actual}, not {})",
            file.uri, file.digest
        ));
    }
    Ok(())
}

/// Checks that `bytes`, the skill's `SKILL.md`, has the entry's frontmatter (SEP-2640: a
/// host does not load a skill whose file says other than its entry).
pub(crate) fn check_frontmatter(skill: &Skill, bytes: &[u8]) -> Result<(), String> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", skill.uri))?;
    let file = super::frontmatter::parse(text).map_err(|why| format!("{}: {why}", skill.uri))?;
    let differences = super::frontmatter::differences(&file, &skill.frontmatter);
    if differences.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the frontmatter of {} is not its skill entry's ({})",
        skill.uri,
        differences.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_parse_listed_and_dynamic_files() {
        let listed: Skill = serde_json::from_value(json!({
            "uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "d"},
            "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 2}]
        }))
        .unwrap();
        assert_eq!((listed.name(), listed.description()), ("a", "d"));
        assert_eq!(listed.file("skill://a/SKILL.md").unwrap().size, Some(2));
        let dynamic: Skill = serde_json::from_value(json!({
            "uri": "skill://x/b/SKILL.md", "frontmatter": {}, "resources": "dynamic"
        }))
        .unwrap();
        assert_eq!((dynamic.name(), dynamic.files.is_none()), ("b", true));
        let bad = serde_json::from_value::<Skill>(
            json!({"uri": "skill://c/SKILL.md", "frontmatter": {}, "resources": 3}),
        );
        assert!(bad.unwrap_err().to_string().contains("neither a list"));
    }

    #[test]
    fn verify_checks_size_and_digest() {
        // SHA-256 of "abc", from FIPS 180-2's example.
        let file = SkillFile {
            uri: "skill://a/SKILL.md".into(),
            digest: "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
                .into(),
            size: Some(3),
        };
        assert_eq!(verify(&file, b"abc"), Ok(()));
        assert!(
            verify(&file, b"abd")
                .unwrap_err()
                .contains("does not match")
        );
        assert!(verify(&file, b"abcd").unwrap_err().contains("4 bytes"));
    }
}
