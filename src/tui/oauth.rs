//! The OAuth screens' state: the pre-registered client form (id, secret, redirect URI, one
//! field a step) and where a login is. The client form takes its keys and hands back the
//! client to save; App sends it and draws nothing here.

use super::input::{Input, Mask};
use crate::auth::callback::DEFAULT_REDIRECT_URI;
use crate::host::control::OAuthClient;
use crossterm::event::{KeyCode, KeyEvent};

/// The fields of the client form, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientField {
    Id,
    Secret,
    Redirect,
}

/// The pre-registered client form.
#[derive(Debug, Clone)]
pub(crate) struct ClientForm {
    pub(crate) field: ClientField,
    pub(crate) client_id: String,
    pub(crate) secret: Option<String>,
    pub(crate) input: Input,
    pub(crate) error: Option<String>,
    pub(crate) saving: bool,
}

/// Where a login is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoginState {
    Waiting,
    /// How it ended: `Ok` with the login's note, if any ([`LoginEvent::Note`]).
    ///
    /// [`LoginEvent::Note`]: crate::host::LoginEvent::Note
    Done(Result<Option<String>, String>),
}

impl ClientForm {
    /// The form, its id field holding the client id in force (if any).
    pub(crate) fn new(client_id: Option<&str>) -> ClientForm {
        ClientForm {
            field: ClientField::Id,
            client_id: String::new(),
            secret: None,
            input: Input::with_text(client_id.unwrap_or(""), Mask::None),
            error: None,
            saving: false,
        }
    }

    /// A key (App takes Esc): the client to save, once Enter accepts the redirect URI
    /// (which starts as `redirect`, the one in force). Keys wait while a save runs.
    pub(crate) fn handle_key(
        &mut self,
        key: &KeyEvent,
        redirect: Option<&str>,
    ) -> Option<OAuthClient> {
        if self.saving {
            return None;
        }
        if key.code != KeyCode::Enter {
            self.input.handle(key);
            return None;
        }
        let text = self.input.text().trim().to_string();
        self.error = None;
        match self.field {
            ClientField::Id if text.is_empty() => {
                self.error = Some("give the client id the authorization server issued".into());
            }
            ClientField::Id => {
                self.client_id = text;
                self.field = ClientField::Secret;
                self.input = Input::new(Mask::All);
            }
            ClientField::Secret => {
                self.secret = Some(self.input.text().to_string()).filter(|s| !s.is_empty());
                self.field = ClientField::Redirect;
                let redirect = redirect.unwrap_or(DEFAULT_REDIRECT_URI);
                self.input = Input::with_text(redirect, Mask::None);
            }
            ClientField::Redirect => {
                self.saving = true;
                return Some(OAuthClient {
                    client_id: self.client_id.clone(),
                    client_secret: self.secret.clone().map(Into::into),
                    // The default is left out of the file.
                    redirect_uri: Some(text).filter(|t| t != DEFAULT_REDIRECT_URI),
                });
            }
        }
        None
    }
}
