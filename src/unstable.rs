//! Unstable: the few internals the `agenvoy-mcp` binary and the tests reach into (the
//! transports `probe` opens itself, becoming the reaper of a server's orphans, the page
//! bound of `tools`), and, in fuzz builds only, the fuzz targets' entry points. Not part of the API: anything here may change or go in any
//! release, without notice. Embedders use what the crate root, [`crate::host`],
//! [`crate::wire`], `auth`, `api` and `tui` export.

pub use crate::client::MAX_TOOL_PAGES;
#[cfg(feature = "stdio")]
pub use crate::transport::stdio::{become_subreaper, is_default_env};

/// The transports under a [`Client`](crate::Client), for the `probe` command, which opens
/// one itself so that a signal during the handshake can close it (and end the server).
pub mod transport {
    #[cfg(feature = "http")]
    pub use crate::transport::http::HttpTransport;
    #[cfg(feature = "stdio")]
    pub use crate::transport::stdio::StdioTransport;
    pub use crate::transport::{
        Inbound, Kind, Limits, Outbound, Shortcut, Transport, WholeReplies,
    };
    use crate::{Client, ClientOptions, Result};
    use std::sync::Arc;
    use tokio::sync::mpsc;

    /// What the transport keeps of each incoming message, under `options`.
    pub fn limits(options: &ClientOptions) -> Limits {
        options.limits()
    }

    /// Connects over an opened transport: starts the session, and closes the transport if
    /// that fails.
    pub async fn connect(
        name: &str,
        transport: Arc<dyn Transport>,
        inbound: mpsc::Receiver<Inbound>,
        options: ClientOptions,
    ) -> Result<Client> {
        Client::connect(name, transport, inbound, options).await
    }
}

/// One HTTP exchange as written and its raw answer, for `check`'s tests of a server's HTTP
/// rules; OAuth discovery, for its check of a server that requires authorization.
#[cfg(feature = "http")]
pub mod raw_http {
    #[cfg(feature = "oauth")]
    pub use crate::auth::discovery::{
        AuthServerMetadata, Challenge, Discovery, ProtectedResource, discover,
    };
    pub use crate::transport::http::{
        HttpsClient, RAW_BODY_MAX, RawAnswer, https_client, raw_exchange,
    };
}

/// Entry points for the fuzz targets (`fuzz/`) into checks that are private elsewhere: built
/// only when cargo-fuzz builds the crate (`--cfg fuzzing`), never part of a release.
#[cfg(fuzzing)]
pub mod fuzz {
    #[cfg(feature = "oauth")]
    pub use crate::auth::discovery::{
        AuthServerMetadata, Challenge, ProtectedResource, auth_server_metadata_urls, origin,
        resource_matches,
    };
    #[cfg(feature = "oauth")]
    use crate::auth::{discovery, fetch};
    pub use crate::host::expand::is_pure_reference;
    pub use crate::host::gate::{belongs_to, check_entry, whole_server};
    /// The streaming decoder against the reference, for any split (`render_equiv`); a test
    /// oracle, built only when fuzzing.
    #[cfg(fuzzing)]
    pub use crate::wire::decode::assert_matches_reference;
    /// A whole stream split into lines, the framer's reference (`framer`); built only when
    /// fuzzing.
    #[cfg(fuzzing)]
    pub use crate::wire::framing::split_lines;

    /// `fetch::check_url`: https, or http on a loopback host.
    #[cfg(feature = "oauth")]
    pub fn check_url(url: &str) -> Result<(), String> {
        fetch::check_url("the URL", url).map(drop)
    }

    /// Discovery's check of protected resource metadata for the server at `server_url`:
    /// the resource to send and the issuer to ask.
    #[cfg(feature = "oauth")]
    pub fn check_protected_resource(
        prm: &ProtectedResource,
        server_url: &str,
    ) -> Result<(String, String), String> {
        discovery::check_protected_resource(prm, server_url)
    }

    /// Discovery's check of authorization server metadata fetched from `url` for `issuer`.
    #[cfg(feature = "oauth")]
    pub fn check_metadata(
        meta: &AuthServerMetadata,
        issuer: &str,
        url: &str,
    ) -> Result<(), String> {
        discovery::check_metadata(meta, issuer, url)
    }

    /// The same for metadata on the MCP server's origin `base` (the 2025-03-26 rules).
    #[cfg(feature = "oauth")]
    pub fn check_legacy_metadata(
        meta: &AuthServerMetadata,
        base: &str,
        url: &str,
    ) -> Result<(), String> {
        discovery::check_legacy_metadata(meta, base, url)
    }

    /// The management API's reading of one request (route, query, JSON body and members),
    /// without acting on it; a refusal as (status, type, message).
    #[cfg(feature = "api")]
    pub fn api_request(
        method: &str,
        path: &str,
        query: &str,
        body: &[u8],
    ) -> Result<(), (u16, &'static str, String)> {
        let method = hyper::Method::from_bytes(method.as_bytes())
            .map_err(|_| (400, "invalid_request", "not an HTTP method".to_string()))?;
        crate::api::read_request(&method, path, query, body).map_err(|e| e.into_parts())
    }

    /// The management API's request guard (`Host`, `Origin`, bearer token) on a request
    /// with these headers, for an API on `port` whose token is `token`; a refusal as (status,
    /// type, message).
    #[cfg(feature = "api")]
    pub fn api_admit(
        headers: &[(&str, &[u8])],
        token: &str,
        port: u16,
        allow_remote: bool,
    ) -> Result<(), (u16, &'static str, String)> {
        let token = crate::api::ApiToken::new(token)
            .map_err(|e| (500, "token", format!("not a token: {e}")))?;
        let mut request = hyper::Request::builder().uri("/v1/mcp/status");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let Ok(request) = request.body(()) else {
            return Err((400, "invalid_request", "not an HTTP request head".into()));
        };
        let (parts, ()) = request.into_parts();
        crate::api::admit(&parts, &token, port, allow_remote).map_err(|e| e.into_parts())
    }

    /// The legacy (HTTP+SSE) transport's reading of an `endpoint` event from the server at
    /// `base`: the URL to POST to, or why it is refused (not a URL, another origin).
    #[cfg(feature = "http")]
    pub fn legacy_endpoint(base: &str, endpoint: &str) -> Result<String, String> {
        let base: hyper::Uri = base
            .parse()
            .map_err(|_| "the base is not a URL".to_string())?;
        crate::transport::http::endpoint_on_origin(&base, endpoint).map(|u| u.to_string())
    }

    /// The login callback listener's reading of one request head from `stream` (up to its
    /// blank line, at most 8 KiB): the head, or `Err(None)` when the peer closed first,
    /// `Err(Some(status))` when it is too large.
    #[cfg(feature = "oauth")]
    pub async fn callback_read_head(
        stream: &mut tokio::net::TcpStream,
    ) -> Result<String, Option<&'static str>> {
        crate::auth::callback::read_head(stream).await
    }

    /// The login callback listener's judgement of a request head, for a listener on `path`
    /// waiting for `state`: (status, page, the redirect URL when it ends the login).
    #[cfg(feature = "oauth")]
    pub fn callback_judge(
        head: &str,
        path: &str,
        state: Option<&str>,
    ) -> (&'static str, String, Option<String>) {
        crate::auth::callback::judge_callback(head, path, state)
    }

    #[cfg(all(
        feature = "keychain",
        unix,
        not(any(target_os = "macos", target_os = "ios"))
    ))]
    pub use dbus::*;

    /// The Secret Service's D-Bus client (`auth/store/dbus.rs`): its message reader, its
    /// writer, and a connection's start (authentication and `Hello`) on any stream.
    #[cfg(all(
        feature = "keychain",
        unix,
        not(any(target_os = "macos", target_os = "ios"))
    ))]
    mod dbus {
        use crate::auth::store::dbus::{Body, Bus, Message, Value, method_call};

        /// A value read from a message (the reader's `Value`).
        #[derive(Debug, Clone, PartialEq)]
        pub enum DbusValue {
            /// Any fixed-size number but a boolean, as its raw bits.
            Number(u64),
            /// `b`.
            Bool(bool),
            /// `s`, `o` or `g`.
            Str(String),
            /// `ay`.
            Bytes(Vec<u8>),
            /// Any other array.
            Array(Vec<DbusValue>),
            /// A struct or a dict entry.
            Struct(Vec<DbusValue>),
            /// `v`.
            Variant(Box<DbusValue>),
        }

        impl From<Value> for DbusValue {
            fn from(value: Value) -> Self {
                let all = |v: Vec<Value>| v.into_iter().map(DbusValue::from).collect();
                match value {
                    Value::Number(n) => DbusValue::Number(n),
                    Value::Bool(b) => DbusValue::Bool(b),
                    Value::Str(s) => DbusValue::Str(s),
                    Value::Bytes(b) => DbusValue::Bytes(b),
                    Value::Array(v) => DbusValue::Array(all(v)),
                    Value::Struct(v) => DbusValue::Struct(all(v)),
                    Value::Variant(v) => DbusValue::Variant(Box::new((*v).into())),
                }
            }
        }

        /// What the reader keeps of a message.
        #[derive(Debug)]
        pub struct DbusMessage {
            /// 1 method call, 2 method return, 3 error, 4 signal.
            pub kind: u8,
            /// The `REPLY_SERIAL` header field.
            pub reply_serial: Option<u32>,
            /// The `ERROR_NAME` header field, checked (or a placeholder).
            pub error_name: String,
            /// The body's signature.
            pub signature: String,
            /// The body's values.
            pub body: Vec<DbusValue>,
        }

        /// `Message::parse`: one whole message (header, fields, body).
        pub fn dbus_parse(bytes: &[u8]) -> Result<DbusMessage, String> {
            let m = Message::parse(bytes)?;
            Ok(DbusMessage {
                kind: m.kind,
                reply_serial: m.reply_serial,
                error_name: m.error_name,
                signature: m.signature,
                body: m.body.into_iter().map(DbusValue::from).collect(),
            })
        }

        /// The message writer (`Body`, little-endian).
        pub struct DbusBody(Body);

        impl DbusBody {
            /// An empty body whose values will have `signature`.
            pub fn new(signature: &str) -> Self {
                DbusBody(Body::new(signature))
            }
            /// A `u` (also the encoding of `b`).
            pub fn u32(&mut self, value: u32) {
                self.0.u32(value)
            }
            /// An `s` or an `o` (no NUL in it).
            pub fn string(&mut self, value: &str) {
                self.0.string(value)
            }
            /// A `g` (at most 255 bytes).
            pub fn signature(&mut self, value: &str) {
                self.0.signature(value)
            }
            /// An `ay`.
            pub fn byte_array(&mut self, value: &[u8]) {
                self.0.byte_array(value)
            }
            /// A struct or dict entry.
            pub fn structure(&mut self, members: impl FnOnce(&mut DbusBody)) {
                self.0.structure(|b| with(b, members))
            }
            /// An array whose elements align to `align`.
            pub fn array(&mut self, align: usize, elements: impl FnOnce(&mut DbusBody)) {
                self.0.array(align, |b| with(b, elements))
            }
            /// The method call message carrying this body.
            pub fn method_call(
                &self,
                serial: u32,
                destination: &str,
                path: &str,
                interface: &str,
                member: &str,
            ) -> Vec<u8> {
                method_call(serial, destination, path, interface, member, &self.0)
            }
        }

        /// Runs `f` on `body` as a [`DbusBody`].
        fn with(body: &mut Body, f: impl FnOnce(&mut DbusBody)) {
            let mut wrapped = DbusBody(std::mem::replace(body, Body::new("")));
            f(&mut wrapped);
            *body = wrapped.0;
        }

        /// A connection's start on `stream` (authentication, `Hello` and its answer), all
        /// before `deadline`; an error as the user would read it.
        pub fn dbus_start(
            stream: std::os::unix::net::UnixStream,
            deadline: std::time::Instant,
        ) -> Result<(), String> {
            Bus::start(stream, deadline)
                .map(drop)
                .map_err(|e| e.to_string())
        }
    }
}
