//! The HTTP+SSE transport of 2024-11-05, the fallback: GET the URL, wait for the `endpoint`
//! event, POST every message there, read the answers on that stream.

use super::*;

/// The URL an `endpoint` event names (absolute, or a path against `base`), if it is on
/// `base`'s origin (scheme, host and port): every message, credentials included, is POSTed
/// there.
pub(crate) fn endpoint_on_origin(base: &Uri, endpoint: &str) -> std::result::Result<Uri, String> {
    let resolved = resolve(base, endpoint.trim())
        .ok_or_else(|| format!("the endpoint {endpoint:?} is not a URL"))?;
    if !plain_authority(&resolved) {
        return Err(format!(
            "the endpoint {endpoint:?} has a malformed host or port, or a user name in it; refusing it"
        ));
    }
    if origin(&resolved) != origin(base) {
        return Err(format!(
            "the endpoint {resolved} is on another origin; refusing it"
        ));
    }
    Ok(resolved)
}

impl Inner {
    /// Switches to the HTTP+SSE transport: GET the URL, wait for the `endpoint` event, and
    /// keep reading that stream for the server's messages.
    pub(super) async fn start_legacy(self: &Arc<Self>) -> Result<()> {
        let response = self
            .exchange(
                Method::GET,
                &self.url,
                None,
                None,
                &[],
                Some(self.header_timeout),
            )
            .await
            .map_err(|f| self.failure(f))?;
        if content_type(&response) != "text/event-stream" {
            return Err(self.error(ErrorKind::Protocol(
                "the server refused the streamable HTTP POST, and its GET is not an SSE stream either".into(),
            )));
        }
        let (tx, rx) = oneshot::channel();
        let inner = self.clone();
        self.spawn(async move { inner.legacy_stream(response.into_body(), tx).await });
        let endpoint = tokio::time::timeout(self.header_timeout, rx)
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or_else(|| {
                self.error(ErrorKind::Protocol(
                    "the HTTP+SSE stream sent no endpoint event".into(),
                ))
            })?;
        let endpoint = endpoint_on_origin(&self.url, &endpoint)
            .map_err(|why| self.error(ErrorKind::Protocol(why)))?;
        self.state.lock().expect("state lock").legacy_endpoint = Some(endpoint);
        Ok(())
    }

    pub(super) async fn legacy_stream(
        self: Arc<Self>,
        body: Incoming,
        endpoint: oneshot::Sender<String>,
    ) {
        let mut endpoint = Some(endpoint);
        let mut cursor = Cursor::default();
        let mut reader = EventReader::new(body, &self);
        while let Some((event, data)) = reader.next(&self, &mut cursor).await {
            match data {
                EventData::Text(text) if event == "endpoint" => {
                    if let Some(tx) = endpoint.take() {
                        let _ = tx.send(text);
                    }
                }
                EventData::Message(decoded) => self.deliver(decoded).await,
                EventData::Text(_) => {}
            }
        }
        let _ = self
            .inbound
            .send(Inbound::Closed(
                "the server closed its HTTP+SSE stream".into(),
            ))
            .await;
    }
}
