//! Where tokens and client credentials live: the [`TokenStore`] trait (embedders bring their
//! own), [`MemoryStore`] for tests, [`FileStore`] (one JSON file, mode 0600, written
//! atomically) and, with the `keychain` feature, `KeychainStore` (the OS keychain, service
//! `agenvoy`: the macOS Keychain, the Windows Credential Manager, the Secret Service on Linux
//! and the BSDs). [`default_store`] picks the keychain when one answers and the file
//! otherwise, at its first use, and warns about the file once, when a token or client secret
//! is actually kept in it or read from it.
//!
//! Values are JSON text under string keys: `tokens:<server>` for a server's tokens,
//! `client:<issuer>` for the client registered with an authorization server (used only with
//! the endpoints it was registered with: `StoredClient::registered_with`).

use super::discovery::AuthServerMetadata;
use crate::secret::Secret;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The keychain service name.
#[cfg(feature = "keychain")]
pub const SERVICE: &str = "agenvoy";
/// The fallback file's name inside the config folder.
pub const TOKEN_FILE: &str = "oauth-tokens.json";

/// Why a [`TokenStore`] could not load, save or delete: a kind a program can match on, a
/// message safe to show (it never holds the secret), and the failure behind it, if any, as
/// its [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// What kind of failure a [`StoreError`] is. New kinds may come in a minor release: match
/// with a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The keychain is locked: the user unlocks it, then tries again (it is never unlocked,
    /// nor traded for a file, for them).
    Locked,
    /// The keychain is there but did not answer in time: try again later.
    Unanswered,
    /// The store cannot be used (no keychain, a file or folder that cannot be read or written).
    Unavailable,
    /// What is stored is not what it should be (a token file that is not JSON, an entry that
    /// is not text): the message says how to clear it.
    Corrupt,
    /// Anything else, an embedder's own store's failure among them (see [`StoreError::other`]).
    Other,
}

impl StoreError {
    /// An error of `kind` saying `message` (never a secret).
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// An embedder's store's own failure, kept as the source.
    pub fn other(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError {
            kind: StoreErrorKind::Other,
            message: source.to_string(),
            source: Some(Arc::new(source)),
        }
    }

    /// The same error, keeping `source` as its [`source`](std::error::Error::source).
    pub fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Secret storage by key. Implementations must keep values out of logs and errors.
///
/// The methods are called from async code, on the runtime's threads: a store that may wait
/// (a keychain, a network) should do so through [`tokio::task::block_in_place`] where the
/// runtime allows, as [`default_store`]'s does, so that other servers' I/O goes on meanwhile.
pub trait TokenStore: Send + Sync {
    /// The value under `key`, if any.
    fn load(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// Stores `value` under `key`, replacing any old value.
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError>;
    /// Removes `key` (no error if it was not there).
    fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// A short name for messages: `memory`, `keychain`, or the file's path.
    fn describe(&self) -> String;
    /// The folder where the processes sharing this store take the lock of a server's
    /// refresh (`oauth-refresh-<server>.lock`), so that one of them at a time refreshes and
    /// the others take its tokens; `None` (the default): this store is not shared between
    /// processes, and only the refreshes within one `OAuth` are coordinated.
    fn lock_folder(&self) -> Option<PathBuf> {
        None
    }
}

/// Keeps everything in memory; for tests and for embedders that persist nothing.
#[derive(Default)]
pub struct MemoryStore {
    values: Mutex<BTreeMap<String, String>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// The keys held, for tests.
    pub fn keys(&self) -> Vec<String> {
        self.values
            .lock()
            .expect("store lock")
            .keys()
            .cloned()
            .collect()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.values.lock().expect("store lock").get(key).cloned())
    }
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.values
            .lock()
            .expect("store lock")
            .insert(key.to_string(), value.to_string());
        Ok(())
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.values.lock().expect("store lock").remove(key);
        Ok(())
    }
    fn describe(&self) -> String {
        "memory".into()
    }
}

/// One JSON object in a file, mode 0600, replaced atomically on every change.
pub struct FileStore {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileStore {
    /// A store in `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<BTreeMap<String, String>, StoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                let message = format!(
                    "{} is not a token file ({e}); move it away and log in again",
                    self.path.display()
                );
                StoreError::new(StoreErrorKind::Corrupt, message).caused_by(e)
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(StoreError::new(
                StoreErrorKind::Unavailable,
                format!("reading {}: {e}", self.path.display()),
            )
            .caused_by(e)),
        }
    }

    fn write(&self, map: &BTreeMap<String, String>) -> Result<(), StoreError> {
        let text = serde_json::to_vec_pretty(map).expect("a map of strings serializes");
        crate::secret_files::write_private(&self.path, &text).map_err(|e| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("writing {}: {e}", self.path.display()),
            )
            .caused_by(e)
        })
    }
}

impl TokenStore for FileStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        let _g = self.lock.lock().expect("store lock");
        Ok(self.read()?.get(key).cloned())
    }
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let _g = self.lock.lock().expect("store lock");
        let mut map = self.read()?;
        map.insert(key.to_string(), value.to_string());
        self.write(&map)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let _g = self.lock.lock().expect("store lock");
        let mut map = self.read()?;
        if map.remove(key).is_some() {
            self.write(&map)?;
        }
        Ok(())
    }
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
    /// The file's folder.
    fn lock_folder(&self) -> Option<PathBuf> {
        let folder = self.path.parent().unwrap_or(Path::new(""));
        Some(if folder.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            folder.to_path_buf()
        })
    }
}

/// The OS keychain, service `agenvoy`, the key naming the entry: the macOS Keychain and the
/// Windows Credential Manager through the `keyring` crate; the Secret Service (GNOME
/// Keyring, KWallet) on Linux and the BSDs, over the session bus with a deadline on every
/// call. (The Linux kernel keyring is no store: it is emptied at every reboot.)
#[cfg(feature = "keychain")]
#[derive(Default)]
pub struct KeychainStore;

#[cfg(feature = "keychain")]
impl KeychainStore {
    /// Whether a keychain answers here.
    pub fn available() -> bool {
        os_keychain::probe().is_ok()
    }
}

/// Why the keychain probe did not reach a keychain.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Unreachable {
    /// There is none here (no session bus, no Secret Service, an unsupported OS): the 0600
    /// file stands in for it.
    Absent(String),
    /// One is there but did not answer within its deadline: nothing stands in for it (tokens
    /// kept in the file now would be missed once it answers again); the use fails saying so,
    /// and the next one asks again.
    // Only the Secret Service can be there and silent.
    #[cfg_attr(
        not(all(
            feature = "keychain",
            unix,
            not(any(target_os = "macos", target_os = "ios"))
        )),
        allow(dead_code)
    )]
    Silent(String),
}

impl Unreachable {
    fn why(&self) -> &str {
        match self {
            Unreachable::Absent(why) | Unreachable::Silent(why) => why,
        }
    }
}

#[cfg(feature = "keychain")]
impl TokenStore for KeychainStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        os_keychain::load(key)
    }
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        os_keychain::save(key, value)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        os_keychain::delete(key)
    }
    fn describe(&self) -> String {
        os_keychain::NAME.into()
    }
}

// The OS keychain of this build, one module under one name: the Secret Service on Linux and
// the BSDs, `keyring`'s native stores on macOS and Windows, none elsewhere.
#[cfg(all(
    feature = "keychain",
    unix,
    not(any(target_os = "macos", target_os = "ios"))
))]
#[path = "store/secret_service.rs"]
mod os_keychain;
/// The D-Bus client's message reader and writer, for the fuzz targets (`crate::unstable::fuzz`).
#[cfg(all(
    feature = "keychain",
    unix,
    not(any(target_os = "macos", target_os = "ios"))
))]
#[cfg(fuzzing)]
pub(crate) use os_keychain::dbus;
#[cfg(all(
    feature = "keychain",
    any(target_os = "macos", target_os = "ios", windows)
))]
#[path = "store/native.rs"]
mod os_keychain;

/// Elsewhere: no keychain.
#[cfg(all(feature = "keychain", not(any(unix, windows))))]
mod os_keychain {
    pub(super) const NAME: &str = "keychain";
    use super::{StoreError, StoreErrorKind};
    const NONE: &str = "this system has no keychain this crate can use";
    fn none() -> StoreError {
        StoreError::new(StoreErrorKind::Unavailable, NONE)
    }
    pub(super) fn probe() -> Result<(), super::Unreachable> {
        Err(super::Unreachable::Absent(NONE.into()))
    }
    pub(super) fn load(_: &str) -> Result<Option<String>, StoreError> {
        Err(none())
    }
    pub(super) fn save(_: &str, _: &str) -> Result<(), StoreError> {
        Err(none())
    }
    pub(super) fn delete(_: &str) -> Result<(), StoreError> {
        Err(none())
    }
}

/// The keychains [`default_store`] knows.
#[cfg(feature = "keychain")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keychain {
    /// The macOS (or iOS) Keychain.
    Apple,
    /// The Windows Credential Manager.
    Windows,
    /// The freedesktop.org Secret Service.
    SecretService,
}

/// The keychain [`default_store`] uses on `os` (a value of `std::env::consts::OS`), when
/// `probe` reaches it; else why the file is used instead.
#[cfg(feature = "keychain")]
fn pick(
    os: &str,
    probe: impl FnOnce() -> Result<(), Unreachable>,
) -> Result<Keychain, Unreachable> {
    let keychain = match os {
        "macos" | "ios" => Keychain::Apple,
        "windows" => Keychain::Windows,
        "linux" | "freebsd" | "openbsd" | "netbsd" | "dragonfly" => Keychain::SecretService,
        _ => {
            return Err(Unreachable::Absent(format!(
                "no keychain is supported on {os}"
            )));
        }
    };
    probe().map(|()| keychain)
}

/// The OS keychain when it answers here, else why not.
#[cfg(feature = "keychain")]
fn reachable_keychain() -> Result<Arc<dyn TokenStore>, Unreachable> {
    pick(std::env::consts::OS, os_keychain::probe).map(|_| Arc::new(KeychainStore) as _)
}

/// Without the `keychain` feature there is none.
#[cfg(not(feature = "keychain"))]
fn reachable_keychain() -> Result<Arc<dyn TokenStore>, Unreachable> {
    Err(Unreachable::Absent(
        "built without the `keychain` feature".into(),
    ))
}

/// The store the host uses: the OS keychain when one answers (feature `keychain`: see
/// `KeychainStore`), else `oauth-tokens.json` in the config folder (mode 0600). Nothing is probed
/// until the store is first used, and the warning that no keychain is reachable comes once,
/// when a token or client secret is actually stored in the file or read from it: a process
/// with no OAuth server says nothing.
pub fn default_store(config_dir: &Path) -> Arc<dyn TokenStore> {
    Arc::new(DefaultStore {
        dir: config_dir.to_path_buf(),
        chosen: OnceLock::new(),
        warned: AtomicBool::new(false),
    })
}

/// [`default_store`]: the keychain or the file, chosen at first use.
struct DefaultStore {
    dir: PathBuf,
    chosen: OnceLock<Chosen>,
    warned: AtomicBool,
}

struct Chosen {
    store: Arc<dyn TokenStore>,
    /// Why the file is used, for want of a keychain.
    fallback: Option<String>,
}

impl DefaultStore {
    /// The store, chosen at the first use that got an answer; a keychain that is there but
    /// did not answer is no choice: that use fails saying so, and the next one asks again.
    fn chosen(&self) -> Result<&Chosen, StoreError> {
        if let Some(chosen) = self.chosen.get() {
            return Ok(chosen);
        }
        let chosen = match reachable_keychain() {
            Ok(store) => Chosen {
                store,
                fallback: None,
            },
            Err(Unreachable::Absent(why)) => Chosen {
                store: Arc::new(FileStore::new(self.dir.join(TOKEN_FILE))),
                fallback: Some(why),
            },
            Err(silent @ Unreachable::Silent(_)) => {
                return Err(StoreError::new(
                    StoreErrorKind::Unanswered,
                    format!(
                        "{}; tokens are not kept elsewhere meanwhile: try again once it answers",
                        silent.why()
                    ),
                ));
            }
        };
        Ok(self.chosen.get_or_init(|| chosen))
    }

    /// A secret was just kept or read: say once where, when it is the fallback file.
    fn note_secret(&self) {
        let Ok(chosen) = self.chosen() else { return };
        if let Some(why) = &chosen.fallback
            && !self.warned.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(
                "no OS keychain is reachable ({why}); OAuth tokens and client secrets are kept in {} (mode 0600)",
                chosen.store.describe()
            );
        }
    }
}

/// Runs `f`, which may wait on a keychain (a D-Bus peer may take up to its 10 s deadline), so
/// that the runtime's other tasks move to other threads meanwhile. `block_in_place` needs a
/// multi-thread runtime; elsewhere (a current-thread runtime, no runtime) `f` simply runs.
fn may_wait<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

impl TokenStore for DefaultStore {
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value = may_wait(|| self.chosen()?.store.load(key))?;
        if value.is_some() {
            self.note_secret();
        }
        Ok(value)
    }
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        may_wait(|| self.chosen()?.store.save(key, value))?;
        self.note_secret();
        Ok(())
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        may_wait(|| self.chosen()?.store.delete(key))
    }
    fn describe(&self) -> String {
        may_wait(|| match self.chosen() {
            Ok(chosen) => chosen.store.describe(),
            Err(why) => format!("the OS keychain ({why})"),
        })
    }
    /// The config folder, for the keychain and the file alike.
    fn lock_folder(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}

/// Tokens of one server, as stored under `tokens:<server>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The server URL they were issued for; tokens for another URL are not used.
    pub server_url: String,
    /// The access token.
    #[serde(serialize_with = "crate::secret::serialize")]
    pub access_token: Secret,
    /// The refresh token, if one was issued.
    #[serde(default, serialize_with = "crate::secret::serialize_option")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, seconds since the Unix epoch.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// The access token's lifetime in seconds as issued (`expires_in`): a short-lived token
    /// is refreshed when half of it is left, not a fixed minute before its expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<u64>,
    /// The granted scope (or, when the server did not say, the requested one).
    #[serde(default)]
    pub scope: Option<String>,
    /// The authorization server's issuer.
    pub issuer: String,
    /// Its token endpoint (to refresh without discovery).
    pub token_endpoint: String,
    /// The RFC 8707 resource the tokens were issued for.
    pub resource: String,
    /// Scopes the server asked for on a 403 `insufficient_scope` that these tokens lack
    /// (space-separated): the next login, from any process sharing the store, asks for them
    /// with the granted ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_up_scope: Option<String>,
}

impl StoredTokens {
    /// What the person who logged in should know of these tokens, if anything: with no
    /// refresh token (the authorization server did not grant `offline_access`, or issues
    /// none), the login lasts only as long as its access token.
    pub fn login_note(&self) -> Option<String> {
        if self.refresh_token.is_some() {
            return None;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let lasts = match self.expires_at.map(|at| at.saturating_sub(now)) {
            Some(s) if s >= 120 => format!("until its access token expires in {} minutes", s / 60),
            Some(s) => format!("until its access token expires in {s} seconds"),
            None => "as long as its access token".to_string(),
        };
        Some(format!(
            "no refresh token was issued, so this login lasts only {lasts}; then log in again"
        ))
    }
}

/// A client registered with an authorization server, as stored under `client:<issuer>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredClient {
    /// The issuer it was registered with.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, serialize_with = "crate::secret::serialize_option")]
    pub client_secret: Option<Secret>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub token_endpoint_auth_method: String,
    /// The redirect URIs it was registered with.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// The token endpoint it was registered (or configured) for: its credentials are sent
    /// nowhere else.
    #[serde(default)]
    pub token_endpoint: String,
    /// The registration endpoint that issued it (dynamic registration only).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
}

impl StoredClient {
    /// Whether this registration belongs to the authorization server `meta` describes: the
    /// same issuer, token endpoint and registration endpoint. A registration kept from
    /// before endpoints were recorded matches nothing, and is made again.
    pub(crate) fn registered_with(&self, meta: &AuthServerMetadata) -> bool {
        self.issuer.trim_end_matches('/') == meta.issuer.trim_end_matches('/')
            && !self.token_endpoint.is_empty()
            && Some(&self.token_endpoint) == meta.token_endpoint.as_ref()
            && self.registration_endpoint == meta.registration_endpoint
    }
}

/// Deletes the tokens under `key` only while they are `tokens` (compare-and-delete: tokens
/// another process stored meanwhile stay); whether it deleted them. What is stored under
/// `key` but cannot be read as tokens is left too.
pub(crate) fn delete_tokens_if(
    store: &dyn TokenStore,
    key: &str,
    tokens: &StoredTokens,
) -> Result<bool, StoreError> {
    let stored = store.load(key)?;
    let same = stored
        .and_then(|text| serde_json::from_str::<StoredTokens>(&text).ok())
        .is_some_and(|stored| &stored == tokens);
    if same {
        store.delete(key)?;
    }
    Ok(same)
}

/// The key of a server's tokens.
pub fn tokens_key(server: &str) -> String {
    format!("tokens:{server}")
}

/// The key of the issuer that the configured secret of client `client_id` for the MCP server at
/// `url` was first sent to: later logins send it to that issuer only.
pub fn secret_issuer_key(url: &str, client_id: &str) -> String {
    format!("secret-issuer:{url}#{client_id}")
}

/// The key of the client registered with `issuer`.
pub fn client_key(issuer: &str) -> String {
    format!("client:{}", issuer.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait in the store does not stall the runtime's only worker: another task's timer
    /// keeps firing meanwhile. On a current-thread runtime it just runs.
    #[test]
    fn a_store_that_waits_leaves_the_worker_to_other_tasks() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let ticks = runtime.block_on(async {
            let ticker = tokio::spawn(async {
                let mut ticks = 0;
                let started = std::time::Instant::now();
                while started.elapsed() < std::time::Duration::from_millis(400) {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    ticks += 1;
                }
                ticks
            });
            tokio::spawn(async {
                may_wait(|| std::thread::sleep(std::time::Duration::from_millis(400)));
            });
            ticker.await.unwrap()
        });
        assert!(ticks > 10, "the worker was held: {ticks} ticks");
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async { may_wait(|| ()) });
    }

    #[test]
    fn file_store_is_private_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(TOKEN_FILE);
        let store = FileStore::new(&path);
        assert_eq!(store.load("a").unwrap(), None);
        store.save("a", "secret-1").unwrap();
        store.save("b", "2").unwrap();
        store.delete("b").unwrap();
        store.delete("missing").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = FileStore::new(&path);
        assert_eq!(again.load("a").unwrap().as_deref(), Some("secret-1"));
        assert_eq!(again.load("b").unwrap(), None);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
    }

    /// The default store as on a machine without a keychain (this one may have one).
    fn without_keychain(dir: &Path) -> DefaultStore {
        let store = DefaultStore {
            dir: dir.to_path_buf(),
            chosen: OnceLock::new(),
            warned: AtomicBool::new(false),
        };
        let _ = store.chosen.set(Chosen {
            store: Arc::new(FileStore::new(dir.join(TOKEN_FILE))),
            fallback: Some("no keychain in this test".into()),
        });
        store
    }

    #[test]
    fn the_fallback_file_is_announced_once_when_a_secret_is_kept_or_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = without_keychain(dir.path());
        assert_eq!(store.load("tokens:a").unwrap(), None);
        store.delete("tokens:a").unwrap();
        assert!(!store.warned.load(Ordering::Relaxed), "no secret yet");
        store.save("tokens:a", "t").unwrap();
        assert!(store.warned.load(Ordering::Relaxed), "a secret kept");
        let again = without_keychain(dir.path());
        assert_eq!(again.load("tokens:a").unwrap().as_deref(), Some("t"));
        assert!(again.warned.load(Ordering::Relaxed), "a secret read");
    }

    #[cfg(feature = "keychain")]
    fn reached() -> Result<(), Unreachable> {
        Ok(())
    }

    #[cfg(feature = "keychain")]
    #[test]
    fn macos_uses_its_keychain() {
        assert_eq!(pick("macos", reached), Ok(Keychain::Apple));
    }

    #[cfg(feature = "keychain")]
    #[test]
    fn windows_uses_its_credential_manager() {
        assert_eq!(pick("windows", reached), Ok(Keychain::Windows));
    }

    #[cfg(feature = "keychain")]
    #[test]
    fn linux_and_the_bsds_use_the_secret_service() {
        for os in ["linux", "freebsd", "openbsd"] {
            assert_eq!(pick(os, reached), Ok(Keychain::SecretService), "{os}");
        }
    }

    #[cfg(feature = "keychain")]
    #[test]
    fn a_keychain_that_does_not_answer_leaves_the_file() {
        let why = "no Secret Service on the session bus";
        let absent = Unreachable::Absent(why.into());
        assert_eq!(pick("linux", || Err(absent.clone())), Err(absent));
    }

    #[cfg(feature = "keychain")]
    #[test]
    fn an_os_without_a_known_keychain_uses_the_file_unprobed() {
        let probe = || -> Result<(), Unreachable> { panic!("nothing to probe") };
        assert_eq!(
            pick("haiku", probe),
            Err(Unreachable::Absent(
                "no keychain is supported on haiku".into()
            ))
        );
    }

    #[cfg(not(feature = "keychain"))]
    #[test]
    fn without_the_keychain_feature_the_file_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let store = default_store(dir.path());
        store.save("tokens:a", "t").unwrap();
        assert_eq!(
            store.describe(),
            dir.path().join(TOKEN_FILE).display().to_string()
        );
        assert!(dir.path().join(TOKEN_FILE).is_file());
    }

    #[test]
    fn debug_shows_no_secret() {
        let t = StoredTokens {
            access_token: "AT-secret".into(),
            refresh_token: Some("RT-secret".into()),
            ..Default::default()
        };
        let c = StoredClient {
            client_secret: Some("CS-secret".into()),
            ..Default::default()
        };
        let text = format!("{t:?} {c:?}");
        assert!(!text.contains("secret\""), "{text}");
        assert!(!text.contains("AT-") && !text.contains("RT-") && !text.contains("CS-"));
    }
}
