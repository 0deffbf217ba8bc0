//! Not part of the API: the layers below [`Client`](crate::Client) (wire, transport,
//! protocol, the client module, the error module, terminal text), as the `agenvoy-mcp`
//! binary, the tests, the benches and the fuzz targets use them. Anything here may change in
//! any release, without notice: embedders use what the crate root, [`crate::host`],
//! `auth`, `api` and `tui` export.

#[path = "client.rs"]
pub mod client;
#[path = "error.rs"]
pub mod error;
#[path = "protocol/mod.rs"]
pub mod protocol;
#[path = "text.rs"]
pub mod text;
#[path = "transport/mod.rs"]
pub mod transport;
#[path = "wire/mod.rs"]
pub mod wire;
