//! Which configured servers were last found to be of the initialize era, so the next start
//! can send `initialize` at once instead of probing with `server/discover` first.
//!
//! The 2026-07-28 revision lets a client keep a server's era across restarts of the same
//! server configuration, re-probing when the remembered era fails ("Versioning and
//! Compatibility"). Only the initialize era is worth remembering: for a stateless server the
//! probe is the session's start, not an extra round trip. A remembered era is only a first
//! try ([`EraPreference::HandshakeFirst`]): a server that refuses `initialize` is probed
//! again, so a stale or planted file costs one round trip, never a wrong era.
//!
//! The file (`server-eras.json` beside `mcp.json` for the binary; off for embedders unless
//! [`super::ManagerOptions::eras`] names one) maps a server's name to a fingerprint of its
//! entry (program, arguments and variables, or URL): an entry that changed is probed again.
//! It holds hashes only, no value of the entry. It is read once, at the first use, and
//! written without waiting for the disk, the changes made while it is being written in one
//! write after it: with a thousand servers, reading it again for each and writing (and
//! syncing) it for each took seconds of the daemon's start.

use super::config::ServerConfig;
use crate::protocol::era::EraPreference;
use crate::protocol::types::Era;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The largest file read; anything larger is ignored (it is a cache: probing is always right).
const MAX_FILE: u64 = 64 * 1024;

/// The file of remembered eras.
#[derive(Debug)]
pub struct EraMemory {
    path: PathBuf,
    known: Mutex<Known>,
}

/// What this process knows of the file.
#[derive(Debug, Default)]
struct Known {
    /// The file's map, read at the first use.
    map: Option<BTreeMap<String, String>>,
    /// The map has changes the file does not have yet.
    dirty: bool,
    /// A call is writing the file; it writes again while `dirty`.
    writing: bool,
}

impl EraMemory {
    /// A memory kept in `path` (created when a server is first found of the initialize era).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        EraMemory {
            path: path.into(),
            known: Mutex::new(Known::default()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How to start server `name` with entry `config`: `initialize` first when it was found
    /// of that era with this same entry, else `fallback`.
    pub fn recall(
        &self,
        name: &str,
        config: &ServerConfig,
        fallback: EraPreference,
    ) -> EraPreference {
        if fallback != EraPreference::Auto {
            return fallback;
        }
        match self.known().map.as_ref().and_then(|known| known.get(name)) {
            Some(print) if *print == fingerprint(config) => EraPreference::HandshakeFirst,
            _ => fallback,
        }
    }

    /// What is known, the map read from the file at the first use (`Some` from then on).
    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.map.is_none() {
            known.map = Some(self.read());
        }
        known
    }

    /// Notes the era server `name` with entry `config` was found to speak, and writes the
    /// file, unless another call is writing it: that one writes this change too before it
    /// returns. A file that cannot be written is only logged: the next start probes, as it
    /// would without one.
    pub fn remember(&self, name: &str, config: &ServerConfig, era: Era) {
        let mut held = self.known();
        let known = held.map.get_or_insert_default();
        let changed = match era {
            Era::Handshake => {
                let print = fingerprint(config);
                known.insert(name.to_string(), print.clone()) != Some(print)
            }
            Era::Stateless => known.remove(name).is_some(),
        };
        if !changed {
            return;
        }
        held.dirty = true;
        if held.writing {
            return;
        }
        held.writing = true;
        drop(held);
        // Written outside the lock, as long as changes come meanwhile.
        loop {
            let text = {
                let mut held = self.known();
                if !held.dirty {
                    held.writing = false;
                    return;
                }
                held.dirty = false;
                serde_json::to_string_pretty(&held.map).expect("a map of strings serializes")
            };
            if let Err(e) = crate::secret_files::write_private_unsynced(&self.path, text.as_bytes())
            {
                tracing::debug!(
                    "cannot keep the servers' eras in {}: {e}",
                    self.path.display()
                );
            }
        }
    }

    fn read(&self) -> BTreeMap<String, String> {
        let Ok(meta) = std::fs::metadata(&self.path) else {
            return BTreeMap::new();
        };
        if meta.len() > MAX_FILE {
            return BTreeMap::new();
        }
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }
}

/// A hash of what makes a server the same server: its program, arguments and variables, or
/// its URL (FNV-1a, 64 bits: this is a cache key, not a secret or a defence).
fn fingerprint(config: &ServerConfig) -> String {
    let mut parts: Vec<&str> = Vec::new();
    match config {
        ServerConfig::Stdio(stdio) => {
            parts.push("stdio");
            parts.push(&stdio.command);
            parts.extend(stdio.args.iter().map(String::as_str));
            for (key, value) in &stdio.env {
                parts.extend([key.as_str(), value.as_str()]);
            }
            parts.push(if stdio.inherit_env { "inherit" } else { "" });
        }
        ServerConfig::Http(http) => parts.extend(["http", http.url.as_str()]),
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        // Each part ends with a 0 byte, so ["ab", "c"] and ["a", "bc"] differ.
        for &byte in part.as_bytes().iter().chain([&0u8]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::config::{HttpServer, StdioServer};

    fn stdio(args: &[&str]) -> ServerConfig {
        ServerConfig::Stdio(StdioServer::new("srv").args(args.iter().copied()))
    }

    #[test]
    fn only_the_same_entry_found_of_the_initialize_era_starts_with_initialize() {
        let dir = tempfile::tempdir().unwrap();
        let memory = EraMemory::new(dir.path().join("eras.json"));
        let auto = EraPreference::Auto;
        assert_eq!(
            memory.recall("a", &stdio(&["x"]), auto),
            auto,
            "nothing known"
        );
        memory.remember("a", &stdio(&["x"]), Era::Handshake);
        assert_eq!(
            memory.recall("a", &stdio(&["x"]), auto),
            EraPreference::HandshakeFirst
        );
        assert_eq!(
            memory.recall("a", &stdio(&["x", "y"]), auto),
            auto,
            "changed"
        );
        assert_eq!(memory.recall("a", &stdio(&["xy"]), auto), auto, "changed");
        assert_eq!(
            memory.recall("b", &stdio(&["x"]), auto),
            auto,
            "another name"
        );
        let http = ServerConfig::Http(HttpServer::new("http://127.0.0.1:1/mcp"));
        assert_eq!(memory.recall("a", &http, auto), auto, "another kind");
        // A chosen era wins; an upgraded server is forgotten.
        let chosen = EraPreference::Stateless;
        assert_eq!(memory.recall("a", &stdio(&["x"]), chosen), chosen);
        memory.remember("a", &stdio(&["x"]), Era::Stateless);
        assert_eq!(memory.recall("a", &stdio(&["x"]), auto), auto);
    }

    /// Changes made while another call writes the file go into that call's next write:
    /// none is lost, and each call has its change in the file when it returns.
    #[test]
    fn changes_from_many_threads_all_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eras.json");
        let memory = std::sync::Arc::new(EraMemory::new(&path));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let memory = memory.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        memory.remember(&format!("s{t}-{i}"), &stdio(&[]), Era::Handshake);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let next_start = EraMemory::new(&path);
        for t in 0..8 {
            for i in 0..50 {
                let name = format!("s{t}-{i}");
                let recalled = next_start.recall(&name, &stdio(&[]), EraPreference::Auto);
                assert_eq!(recalled, EraPreference::HandshakeFirst, "{name}");
            }
        }
    }

    #[test]
    fn a_broken_or_huge_file_means_probing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eras.json");
        let memory = EraMemory::new(&path);
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(
            memory.recall("a", &stdio(&[]), EraPreference::Auto),
            EraPreference::Auto
        );
        memory.remember("a", &stdio(&[]), Era::Handshake);
        let print = fingerprint(&stdio(&[]));
        let huge = format!(
            "{{\"a\": \"{print}\", \"pad\": \"{}\"}}",
            "x".repeat(70_000)
        );
        std::fs::write(&path, huge).unwrap();
        // The file is read at a memory's first use: a new one, as at the next start.
        let memory = EraMemory::new(&path);
        assert_eq!(
            memory.recall("a", &stdio(&[]), EraPreference::Auto),
            EraPreference::Auto
        );
    }
}
