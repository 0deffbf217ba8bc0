//! The HTTP+SSE transport of 2024-11-05, the fallback: GET the URL, wait for the `endpoint`
//! event, POST every message there, read the answers on that stream.

use super::*;

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
        let endpoint = resolve(&self.url, endpoint.trim()).ok_or_else(|| {
            self.error(ErrorKind::Protocol(format!(
                "the endpoint {endpoint:?} is not a URL"
            )))
        })?;
        if origin(&endpoint) != origin(&self.url) {
            return Err(self.error(ErrorKind::Protocol(format!(
                "the endpoint {endpoint} is on another origin; refusing it"
            ))));
        }
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
