//! What an on-demand server offers, kept from its last connection ([`KeptCatalog`]), so that
//! its tools, resources, templates, prompts, skills and instructions are registered at
//! launch without starting it ([`Start::OnDemand`](crate::host::Start::OnDemand)).
//!
//! A catalog is kept under a key of what would make the server another server
//! (`catalog_key`: its program, arguments and environment, or its URL, headers and login
//! settings, with `$VAR` expanded): an entry that changed is started again to fill a new one.
//! [`FileCatalogStore`] keeps them as private files in the config folder; an embedder may
//! keep them elsewhere ([`CatalogStore`],
//! [`ManagerOptions::with_catalog_store`](crate::host::ManagerOptions::with_catalog_store)).

use super::catalog::Catalog;
use crate::host::config::{ServerConfig, config_dir, is_valid_server_name};
use crate::host::expand::expand_env;
use crate::protocol::types::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest catalog file read; a larger one is ignored, as a missing one is (the server
/// is started to list again). The client keeps at most 8 MiB of a server's list pages.
const MAX_FILE: u64 = 32 << 20;

/// One server's lists as its last connection found them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct KeptCatalog {
    /// Its tools (hidden ones included: the filter applies when they are registered).
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Its resources, templates, prompts and skills.
    #[serde(default)]
    pub lists: Catalog,
    /// Its instructions.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Until when it may be used, in milliseconds since the Unix epoch, where the server
    /// gave its tool list a `ttlMs`; `None`: until the entry changes or the server is
    /// connected again.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
}

impl KeptCatalog {
    /// A catalog of these lists, never expiring.
    pub fn new(tools: Vec<Tool>, lists: Catalog, instructions: Option<String>) -> Self {
        KeptCatalog {
            tools,
            lists,
            instructions,
            expires_at_ms: None,
        }
    }

    /// With it expiring `ttl` from now (a `ttl` past what the clock counts: never).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.expires_at_ms = SystemTime::now()
            .checked_add(ttl)
            .and_then(|ends| ends.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_millis()).ok());
        self
    }

    /// Whether its server's `ttlMs` has run out.
    pub fn is_expired(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        self.expires_at_ms
            .is_some_and(|ends| u128::from(ends) <= now)
    }
}

/// Where on-demand servers' catalogs are kept. Calls come from the manager's tasks, never
/// under one of its locks; a store that cannot keep a catalog only logs it (the server is
/// then started at the next launch to list again).
pub trait CatalogStore: Send + Sync {
    /// The catalog kept for server `name` under `key` (a hash of its entry: what makes it
    /// this server);
    /// `None` if there is none, or it was kept under another key.
    fn load(&self, name: &str, key: &str) -> Option<KeptCatalog>;
    /// Keeps `catalog` for server `name` under `key`, replacing what was kept.
    fn save(&self, name: &str, key: &str, catalog: &KeptCatalog);
    /// Forgets what is kept for server `name` (it was removed).
    fn forget(&self, name: &str);
}

/// The key of a server's catalog: a SHA-256 of what makes it this server (its entry without
/// the members that do not change what it offers: timeouts, proxy, start), each string with
/// `$VAR` expanded, so that a variable's new value is a new key. A hash only: no value of
/// the entry can be read back from it.
pub(super) fn catalog_key(config: &ServerConfig) -> String {
    let mut entry = config.to_value();
    if let Some(members) = entry.as_object_mut() {
        for key in ["timeout", "startup_timeout", "proxy"] {
            members.remove(key);
        }
    }
    expand_strings(&mut entry);
    let digest = Sha256::digest(entry.to_string().as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn expand_strings(value: &mut Value) {
    match value {
        Value::String(text) => *text = expand_env(text),
        Value::Array(items) => items.iter_mut().for_each(expand_strings),
        Value::Object(members) => members.values_mut().for_each(expand_strings),
        _ => {}
    }
}

/// A catalog as its file holds it: the key it was kept under beside it. (Not flattened:
/// serde's flatten buffers values, which the raw JSON of the lists' entries cannot pass.)
#[derive(Serialize, Deserialize)]
struct CatalogFile {
    key: String,
    catalog: KeptCatalog,
}

/// Catalogs kept as files, one a server (`<name>.json`, mode 0600) in a private folder: by
/// default `catalogs/` in the config folder.
#[derive(Debug, Clone)]
pub struct FileCatalogStore {
    dir: PathBuf,
}

impl FileCatalogStore {
    /// A store in folder `dir` (created, private, when the first catalog is kept).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileCatalogStore { dir: dir.into() }
    }

    /// The store of the config folder: `catalogs/` in [`config_dir`].
    pub fn in_config_dir() -> Self {
        FileCatalogStore::new(config_dir().join("catalogs"))
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str) -> PathBuf {
        // Server names are `[A-Za-z0-9_-]+`: a name is a file name, never a path.
        self.dir.join(format!("{name}.json"))
    }
}

impl CatalogStore for FileCatalogStore {
    fn load(&self, name: &str, key: &str) -> Option<KeptCatalog> {
        if !is_valid_server_name(name) {
            return None;
        }
        let path = self.path(name);
        // A regular file of a bounded size only (a link or a device is not a catalog).
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE {
            return None;
        }
        let text = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<CatalogFile>(&text) {
            Ok(file) if file.key == key => Some(file.catalog),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(server = %name, "ignoring the kept catalog {}: {e}", path.display());
                None
            }
        }
    }

    fn save(&self, name: &str, key: &str, catalog: &KeptCatalog) {
        if !is_valid_server_name(name) {
            return;
        }
        let file = CatalogFile {
            key: key.to_string(),
            catalog: catalog.clone(),
        };
        let text = match serde_json::to_vec(&file) {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(server = %name, "cannot keep its catalog: {e}");
                return;
            }
        };
        let path = self.path(name);
        if let Err(e) = crate::secret_files::write_private_unsynced(&path, &text) {
            tracing::warn!(server = %name, "cannot keep its catalog in {}: {e}", path.display());
        }
    }

    fn forget(&self, name: &str) {
        if is_valid_server_name(name) {
            let _ = std::fs::remove_file(self.path(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::config::{HttpServer, StdioServer};

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": {"type": "object"}}))
            .unwrap()
    }

    #[test]
    fn a_catalog_is_read_back_under_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileCatalogStore::new(dir.path().join("catalogs"));
        let kept = KeptCatalog::new(
            vec![tool("echo")],
            Catalog::default(),
            Some("Be kind".into()),
        );
        store.save("s", "k1", &kept);
        let back = store.load("s", "k1").expect("kept");
        assert_eq!(back.tools[0].name, "echo");
        assert_eq!(back.instructions.as_deref(), Some("Be kind"));
        assert!(!back.is_expired());
        assert!(
            store.load("s", "k2").is_none(),
            "another key is another server"
        );
        assert!(store.load("../s", "k1").is_none());
        store.forget("s");
        assert!(store.load("s", "k1").is_none());
    }

    #[test]
    fn a_catalog_expires_with_its_ttl() {
        let kept = KeptCatalog::default().with_ttl(Duration::ZERO);
        assert!(kept.is_expired());
        let kept = KeptCatalog::default().with_ttl(Duration::from_secs(60));
        assert!(!kept.is_expired());
    }

    #[test]
    fn the_key_changes_with_what_changes_the_server_only() {
        let base = StdioServer::new("srv").arg("--db").env("TOKEN", "a");
        let key = catalog_key(&ServerConfig::Stdio(base.clone()));
        assert_eq!(key, catalog_key(&ServerConfig::Stdio(base.clone())));
        let other_env = base.clone().env("TOKEN", "b");
        assert_ne!(key, catalog_key(&ServerConfig::Stdio(other_env)));
        let other_arg = base.clone().arg("x");
        assert_ne!(key, catalog_key(&ServerConfig::Stdio(other_arg)));
        let timeouts = crate::host::Timeouts::default().with_request(Duration::from_secs(9));
        let slower = base.with_timeouts(timeouts);
        assert_eq!(key, catalog_key(&ServerConfig::Stdio(slower)));
        let http = HttpServer::new("http://127.0.0.1:1/mcp");
        let with_header = http.clone().header("X-Tenant", "t1");
        assert_ne!(
            catalog_key(&ServerConfig::Http(http)),
            catalog_key(&ServerConfig::Http(with_header))
        );
        assert!(!key.contains("srv") && key.len() == 32);
    }
}
