//! [`Secret`]: a string that `Debug` and `Display` never show and serde never writes by
//! accident.

use serde::{Deserialize, Deserializer, Serializer};
use std::fmt;

/// A secret string: a token, a client secret, a header or variable value. Its `Debug` and
/// `Display` print `***`, so a struct holding one can derive `Debug` and be logged; the value
/// is read on purpose with [`Secret::expose`].
///
/// It can be read from serde (`Deserialize`) but has no `Serialize`: a struct holding one
/// cannot be written out unless its field says how, so a secret is never serialized by
/// accident. Equality takes time that depends on the lengths only, not on where two values
/// differ.
///
/// ```
/// use agenvoy_mcp::Secret;
/// let token = Secret::from("s3cr3t");
/// assert_eq!(format!("{token:?} {token}"), "*** ***");
/// assert_eq!(token.expose(), "s3cr3t");
/// ```
///
/// ```compile_fail
/// #[derive(serde::Serialize)]
/// struct Stored {
///     token: agenvoy_mcp::Secret,
/// }
/// ```
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    /// `value` as a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret's text, read on purpose (to send it, or to store it).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `other` is the secret, in time that depends on the lengths only.
    pub fn matches(&self, other: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), other.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::safe_text::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::safe_text::REDACTED)
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        self.matches(&other.0)
    }
}

impl PartialEq<str> for Secret {
    fn eq(&self, other: &str) -> bool {
        self.matches(other)
    }
}

impl PartialEq<&str> for Secret {
    fn eq(&self, other: &&str) -> bool {
        self.matches(other)
    }
}

impl Eq for Secret {}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// Writes the secret's text: for `#[serde(serialize_with = "crate::secret::serialize")]` on
/// a field that must be stored (the token store's entries).
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) fn serialize<S: Serializer>(secret: &Secret, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose())
}

/// [`serialize`] for an optional secret: `None` is `null`.
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) fn serialize_option<S: Serializer>(
    secret: &Option<Secret>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => serializer.serialize_some(secret.expose()),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    struct Stored {
        name: String,
        #[serde(serialize_with = "serialize")]
        token: Secret,
        #[serde(serialize_with = "serialize_option", default)]
        refresh: Option<Secret>,
    }

    #[test]
    fn debug_and_display_redact() {
        let secret = Secret::from("hunter2".to_string());
        assert_eq!(format!("{secret:?}"), "***");
        assert_eq!(format!("{secret:#?}"), "***");
        assert_eq!(format!("{secret}"), "***");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(***)");
        assert_eq!(secret.expose(), "hunter2");
        assert!(Secret::default().is_empty());
    }

    #[test]
    fn equality_compares_the_values() {
        let a = Secret::from("abc");
        assert_eq!(a, Secret::new("abc"));
        assert_ne!(a, Secret::from("abd"));
        assert_ne!(a, Secret::from("ab"));
        assert_ne!(a, Secret::from("abcd"));
        assert!(a == "abc" && a != "abd" && a == *"abc");
        assert!(a.matches("abc") && !a.matches("") && !Secret::default().matches("a"));
        assert!(Secret::default().matches(""));
    }

    #[test]
    fn the_explicit_paths_write_the_value_and_debug_never_does() {
        let stored = Stored {
            name: "srv".into(),
            token: "tok-123".into(),
            refresh: Some("ref-456".into()),
        };
        let debug = format!("{stored:?} {stored:#?}");
        assert!(
            !debug.contains("tok-123") && !debug.contains("ref-456"),
            "{debug}"
        );
        assert!(debug.contains("srv"));

        let json = serde_json::to_string(&stored).unwrap();
        assert_eq!(
            json,
            r#"{"name":"srv","token":"tok-123","refresh":"ref-456"}"#
        );
        let back: Stored = serde_json::from_str(&json).unwrap();
        assert_eq!(back.token.expose(), "tok-123");
        assert_eq!(back.refresh.as_ref().map(Secret::expose), Some("ref-456"));

        let none = Stored {
            refresh: None,
            ..back
        };
        let json = serde_json::to_string(&none).unwrap();
        assert_eq!(json, r#"{"name":"srv","token":"tok-123","refresh":null}"#);
        let back: Stored = serde_json::from_str(r#"{"name":"n","token":"t"}"#).unwrap();
        assert!(back.refresh.is_none());
    }

    /// `Secret` has no `Serialize` (the inherent `IS` applies only where `T: Serialize`), so a
    /// struct deriving `Serialize` around one without `serialize_with` does not compile (the
    /// `compile_fail` example on [`Secret`] checks that too).
    #[test]
    fn secret_is_not_serialize() {
        trait NotSerialize {
            const IS: bool = false;
        }
        impl<T> NotSerialize for T {}
        struct Probe<T>(std::marker::PhantomData<T>);
        impl<T: Serialize> Probe<T> {
            #[allow(dead_code)]
            const IS: bool = true;
        }
        const { assert!(!<Probe<Secret>>::IS) };
        const { assert!(<Probe<String>>::IS) };
    }
}
