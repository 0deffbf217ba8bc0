//! The freedesktop.org Secret Service (GNOME Keyring, KWallet, KeePassXC): the keychain of
//! Linux and the BSDs, over the session bus ([`dbus`]).
//!
//! Each entry is an item in the default collection (the login keyring) with the attributes
//! `service` = `agenvoy` and `key` = the store key, and a label a person recognises in
//! Seahorse or KWalletManager. Secrets travel with the `plain` session algorithm: the session
//! bus is a socket only this user can reach, so encrypting for it would add crates, not
//! safety. Every operation opens its own connection (closing it closes the session) and ends
//! within [`DEADLINE`]. A locked keyring is reported, never unlocked: that takes a prompt, and
//! a prompt can wait forever.

pub(crate) mod dbus;

use super::{SERVICE, StoreError, StoreErrorKind};
use dbus::{Body, Bus, BusError, Value};
use std::time::{Duration, Instant};

/// What the store calls itself in messages.
pub(super) const NAME: &str = "Secret Service keyring";
/// How long one load, save or delete may take, connecting included.
const DEADLINE: Duration = Duration::from_secs(10);

const DESTINATION: &str = "org.freedesktop.secrets";
const SERVICE_PATH: &str = "/org/freedesktop/secrets";
const SERVICE_INTERFACE: &str = "org.freedesktop.Secret.Service";
const ITEM_INTERFACE: &str = "org.freedesktop.Secret.Item";
const COLLECTION_INTERFACE: &str = "org.freedesktop.Secret.Collection";
/// The object path that stands for "none" (no prompt needed, no such alias).
const NONE: &str = "/";

const LOCKED: &str = "the Secret Service keyring is locked: unlock it (log in to the desktop, \
                      or open Seahorse or KWalletManager) and try again";

/// Whether a Secret Service answers on the session bus (a session is opened and closed): one
/// that is there but does not answer within [`DEADLINE`] is `Silent`, not absent.
pub(super) fn probe() -> Result<(), super::Unreachable> {
    Service::connect().map(drop).map_err(|e| match e {
        BusError::TimedOut => super::Unreachable::Silent(describe(e).to_string()),
        e => super::Unreachable::Absent(describe(e).to_string()),
    })
}

/// The secret stored under `key`, if any.
pub(super) fn load(key: &str) -> Result<Option<String>, StoreError> {
    let mut service = Service::open()?;
    let (unlocked, locked) = service.search(key)?;
    let Some(item) = unlocked.first() else {
        return if locked.is_empty() {
            Ok(None)
        } else {
            Err(keyring_locked())
        };
    };
    let mut body = Body::new("o");
    body.string(&service.session);
    let secret = service.call(item, ITEM_INTERFACE, "GetSecret", &body, "(oayays)")?;
    let value = secret[0]
        .members()
        .and_then(|m| m.get(2))
        .and_then(Value::bytes)
        .ok_or_else(|| {
            StoreError::new(
                StoreErrorKind::Other,
                "the Secret Service sent a malformed secret",
            )
        })?;
    String::from_utf8(value.to_vec()).map(Some).map_err(|_| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!("the entry {key:?} is not text; remove it with `secret-tool clear service {SERVICE} key {key}`"),
        )
    })
}

/// Stores `value` under `key` in the default collection, replacing any old one.
pub(super) fn save(key: &str, value: &str) -> Result<(), StoreError> {
    check_key(key)?;
    let mut service = Service::open()?;
    let alias = service.call(
        SERVICE_PATH,
        SERVICE_INTERFACE,
        "ReadAlias",
        &{
            let mut body = Body::new("s");
            body.string("default");
            body
        },
        "o",
    )?;
    let collection = alias[0].str().unwrap_or(NONE).to_string();
    if collection == NONE {
        return Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "the Secret Service has no default keyring: create one (Seahorse: File → New → Password \
             Keyring, then Set as Default) and try again",
        ));
    }
    let label = label(key);
    let mut body = Body::new("a{sv}(oayays)b");
    body.array(8, |props| {
        props.structure(|p| {
            p.string("org.freedesktop.Secret.Item.Label");
            p.signature("s");
            p.string(&label);
        });
        props.structure(|p| {
            p.string("org.freedesktop.Secret.Item.Attributes");
            p.signature("a{ss}");
            p.string_dict(&attributes(key));
        });
    });
    body.structure(|s| {
        s.string(&service.session);
        s.byte_array(b"");
        s.byte_array(value.as_bytes());
        s.string("text/plain");
    });
    body.u32(1); // replace the item with the same attributes
    let created = service.call(&collection, COLLECTION_INTERFACE, "CreateItem", &body, "oo")?;
    no_prompt(&created[1])
}

/// Removes every item under `key` (none is fine).
pub(super) fn delete(key: &str) -> Result<(), StoreError> {
    let mut service = Service::open()?;
    let (unlocked, locked) = service.search(key)?;
    if !locked.is_empty() {
        return Err(keyring_locked());
    }
    for item in &unlocked {
        let prompt = service.call(item, ITEM_INTERFACE, "Delete", &Body::new(""), "o")?;
        no_prompt(&prompt[0])?;
    }
    Ok(())
}

/// An answer's prompt path: any prompt means the collection or item is locked.
fn no_prompt(prompt: &Value) -> Result<(), StoreError> {
    match prompt.str() {
        Some(NONE) => Ok(()),
        _ => Err(keyring_locked()),
    }
}

/// D-Bus strings cannot hold NUL.
fn check_key(key: &str) -> Result<(), StoreError> {
    if key.contains('\0') {
        return Err(StoreError::new(
            StoreErrorKind::Other,
            format!("the key {key:?} has a NUL character"),
        ));
    }
    Ok(())
}

/// The attributes that find the item of `key`.
fn attributes(key: &str) -> [(&str, &str); 2] {
    [("service", SERVICE), ("key", key)]
}

/// What Seahorse or KWalletManager shows for the item of `key` (the prefixes are the store's
/// keys: `tokens:`, `client:`, and the host's `client_secret:`).
fn label(key: &str) -> String {
    match key.split_once(':') {
        Some(("tokens", server)) => format!("agenvoy: OAuth tokens for MCP server {server}"),
        Some(("client", issuer)) => format!("agenvoy: OAuth client registered with {issuer}"),
        Some(("client_secret", server)) => {
            format!("agenvoy: OAuth client secret for MCP server {server}")
        }
        Some(("secret-issuer", client)) => {
            format!("agenvoy: the authorization server trusted with the client secret of {client}")
        }
        _ => format!("agenvoy: {key}"),
    }
}

/// A connection to the Secret Service with an open `plain` session, until [`DEADLINE`].
struct Service {
    bus: Bus,
    session: String,
}

impl Service {
    fn open() -> Result<Service, StoreError> {
        Service::connect().map_err(describe)
    }

    fn connect() -> Result<Service, BusError> {
        let mut bus = Bus::session(Instant::now() + DEADLINE)?;
        let mut body = Body::new("sv");
        body.string("plain");
        body.signature("s");
        body.string("");
        let opened = bus.call(
            DESTINATION,
            SERVICE_PATH,
            SERVICE_INTERFACE,
            "OpenSession",
            &body,
            "vo",
        )?;
        let session = opened[1].str().unwrap_or(NONE).to_string();
        Ok(Service { bus, session })
    }

    fn call(
        &mut self,
        path: &str,
        interface: &str,
        member: &str,
        body: &Body,
        reply: &str,
    ) -> Result<Vec<Value>, StoreError> {
        self.bus
            .call(DESTINATION, path, interface, member, body, reply)
            .map_err(describe)
    }

    /// The unlocked and the locked items of `key`.
    fn search(&mut self, key: &str) -> Result<(Vec<String>, Vec<String>), StoreError> {
        check_key(key)?;
        let mut body = Body::new("a{ss}");
        body.string_dict(&attributes(key));
        let found = self.call(
            SERVICE_PATH,
            SERVICE_INTERFACE,
            "SearchItems",
            &body,
            "aoao",
        )?;
        let paths = |v: &Value| -> Vec<String> {
            v.array()
                .unwrap_or(&[])
                .iter()
                .filter_map(|p| p.str().map(str::to_string))
                .collect()
        };
        Ok((paths(&found[0]), paths(&found[1])))
    }
}

/// That the keyring is locked.
fn keyring_locked() -> StoreError {
    StoreError::new(StoreErrorKind::Locked, LOCKED)
}

/// A bus error in words a user can act on, of its kind.
fn describe(e: BusError) -> StoreError {
    use StoreErrorKind::{Unanswered, Unavailable};
    match e {
        BusError::Remote(name) => match name.as_str() {
            "org.freedesktop.DBus.Error.ServiceUnknown"
            | "org.freedesktop.DBus.Error.NameHasNoOwner" => StoreError::new(
                Unavailable,
                "no Secret Service on the session bus (GNOME Keyring or KWallet is not running)",
            ),
            "org.freedesktop.Secret.Error.IsLocked" => keyring_locked(),
            _ => StoreError::new(
                StoreErrorKind::Other,
                format!("the Secret Service refused the operation ({name})"),
            ),
        },
        BusError::TimedOut => StoreError::new(
            Unanswered,
            format!(
                "the Secret Service did not answer within {} s",
                DEADLINE.as_secs()
            ),
        ),
        other => StoreError::new(Unavailable, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_say_what_an_entry_is() {
        assert_eq!(
            label("tokens:github"),
            "agenvoy: OAuth tokens for MCP server github"
        );
        assert_eq!(
            label("client:https://auth.example.com"),
            "agenvoy: OAuth client registered with https://auth.example.com"
        );
        assert_eq!(
            label("client_secret:github"),
            "agenvoy: OAuth client secret for MCP server github"
        );
        assert_eq!(
            label("secret-issuer:https://mcp.example.com/mcp#id"),
            "agenvoy: the authorization server trusted with the client secret of https://mcp.example.com/mcp#id"
        );
        assert_eq!(label("dpop:github"), "agenvoy: dpop:github");
    }

    #[test]
    fn a_key_with_nul_is_refused_before_any_call() {
        assert!(
            save("tokens:a\0b", "v")
                .unwrap_err()
                .to_string()
                .contains("NUL")
        );
    }
}
