//! The macOS Keychain and the Windows Credential Manager, through the `keyring` crate.

use super::{SERVICE, StoreError, StoreErrorKind};

/// What the store calls itself in messages.
pub(super) const NAME: &str = if cfg!(windows) {
    "Windows Credential Manager"
} else {
    "macOS Keychain"
};

/// Writes, reads back and deletes a probe entry; a failure means none is usable here.
pub(super) fn probe() -> Result<(), super::Unreachable> {
    probe_entry().map_err(super::Unreachable::Absent)
}

fn probe_entry() -> Result<(), String> {
    let key = format!("probe:{}", crate::auth::pkce::random_token(6));
    let result = save(&key, "probe")
        .and_then(|()| load(&key))
        .map_err(|e| e.to_string())
        .and_then(|read| match read {
            Some(v) if v == "probe" => Ok(()),
            _ => Err("keychain: the probe entry did not read back".into()),
        });
    let _ = delete(&key);
    result
}

pub(super) fn load(key: &str) -> Result<Option<String>, StoreError> {
    match entry(key)?.get_password() {
        Ok(v) => Ok(Some(v)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(describe(&e)),
    }
}

pub(super) fn save(key: &str, value: &str) -> Result<(), StoreError> {
    entry(key)?.set_password(value).map_err(|e| describe(&e))
}

pub(super) fn delete(key: &str) -> Result<(), StoreError> {
    match entry(key)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(describe(&e)),
    }
}

fn entry(key: &str) -> Result<keyring::Entry, StoreError> {
    keyring::Entry::new(SERVICE, key).map_err(|e| describe(&e))
}

/// A keyring error in words that carry no secret, of its kind.
fn describe(e: &keyring::Error) -> StoreError {
    let kind = match e {
        keyring::Error::NoStorageAccess(_) | keyring::Error::PlatformFailure(_) => {
            StoreErrorKind::Unavailable
        }
        keyring::Error::BadEncoding(_) => StoreErrorKind::Corrupt,
        _ => StoreErrorKind::Other,
    };
    StoreError::new(kind, describe_text(e))
}

fn describe_text(e: &keyring::Error) -> String {
    let what = match e {
        keyring::Error::NoStorageAccess(_) => "no access to the keychain".into(),
        keyring::Error::PlatformFailure(_) => "the keychain failed".into(),
        keyring::Error::NoEntry => "no such entry".into(),
        keyring::Error::TooLong(what, max) => format!("{what} is over {max} bytes"),
        _ => "the keychain refused the operation".into(),
    };
    format!("keychain: {what}")
}
