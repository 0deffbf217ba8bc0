//! Session expiry: a new `initialize` when the server forgot our session. It lives in the
//! transport because streamable HTTP ties `Mcp-Session-Id` to it: only the transport sees the
//! 404 and can replay the exact bytes of `initialize` and of the request.

use super::*;
use crate::methods;

impl Inner {
    /// Starts a new session after the server forgot ours; done once however many requests
    /// notice at the same time.
    pub(super) async fn reinitialize(self: &Arc<Self>, stale: Option<String>) -> Result<()> {
        let _one_at_a_time = self.reinit.lock().await;
        let initialize = {
            let mut state = self.state.lock().expect("state lock");
            if state.session_id != stale {
                return Ok(());
            }
            state.session_id = None;
            state.initialize.clone()
        };
        let initialize = initialize.ok_or_else(|| {
            self.error(ErrorKind::Protocol(
                "the session expired before it was initialized".into(),
            ))
        })?;
        let (init_id, initialize) = initialize;
        let failed = |e: Error| {
            self.error(ErrorKind::Closed(format!(
                "the session expired and starting a new one failed: {}",
                e.kind_text()
            )))
        };
        let response = self
            .exchange(
                Method::POST,
                &self.url,
                Some(initialize),
                None,
                &[],
                Some(self.header_timeout),
            )
            .await
            .map_err(|f| failed(self.failure(f)))?;
        if let Some(session) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.state.lock().expect("state lock").session_id = Some(session.to_string());
        }
        let answer = match content_type(&response).as_str() {
            "text/event-stream" => {
                let mut cursor = Cursor::default();
                let mut reader = EventReader::new(response.into_body(), self);
                let mut answer = None;
                while let Some((_, data)) = reader.next(self, &mut cursor).await {
                    if let EventData::Message(decoded) = data
                        && decoded.render.is_some()
                        && decoded.id.as_ref() == Some(&init_id)
                    {
                        answer = Some(decoded);
                        break;
                    }
                }
                answer.ok_or_else(|| {
                    failed(self.error(ErrorKind::Closed("no answer to initialize".into())))
                })?
            }
            _ => self.read_json(response.into_body()).await.map_err(failed)?,
        };
        match answer.raw.as_deref().map(Message::parse) {
            Some(Ok(Message::Response(r))) if r.outcome.is_ok() => self.note_version(&answer),
            _ => {
                return Err(failed(self.error(ErrorKind::Protocol(
                    "the new initialize was refused".into(),
                ))));
            }
        }
        let initialized = Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","method":"{}"}}"#,
            methods::INITIALIZED
        ));
        self.post_one_way(initialized).await.map_err(failed)?;
        self.start_listening();
        Ok(())
    }
}
