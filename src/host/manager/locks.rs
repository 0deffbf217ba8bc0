//! One lock per server, so that one server is connected by one task at a time: concurrent
//! reconnects make one connection, and an add, a remove or a reconnect of a name waits for
//! the connect in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A server's connect lock.
pub(super) type ServerLock = Arc<tokio::sync::Mutex<()>>;

/// Every server's connect lock, made on first use.
#[derive(Default)]
pub(super) struct ServerLocks(Mutex<HashMap<String, ServerLock>>);

impl ServerLocks {
    /// Server `name`'s lock.
    pub(super) fn of(&self, name: &str) -> ServerLock {
        let mut locks = self.0.lock().expect("locks lock");
        locks.entry(name.to_string()).or_default().clone()
    }

    /// Every lock there is (to wait out each connect in flight).
    pub(super) fn all(&self) -> Vec<ServerLock> {
        self.0
            .lock()
            .expect("locks lock")
            .values()
            .cloned()
            .collect()
    }

    /// Forgets server `name`'s lock when no one holds it and `gone` says the server is gone.
    pub(super) fn forget(&self, name: &str, gone: impl FnOnce() -> bool) {
        let mut locks = self.0.lock().expect("locks lock");
        let unused = locks.get(name).is_some_and(|l| Arc::strong_count(l) == 1);
        if unused && gone() {
            locks.remove(name);
        }
    }
}
