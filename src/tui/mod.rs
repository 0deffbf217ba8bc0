//! The `/mcp` terminal panel (feature `tui`): manage servers, tools, trust and logins from
//! the keyboard, on [ratatui] and crossterm. `agenvoy-mcp tui` runs it full screen; an
//! agent's own ratatui app shows a [`Panel`] when its user types `/mcp`.
//!
//! The panel drives a [`Control`](crate::host::Control): the same manager, config file,
//! allowlist and OAuth token store as the management API, so the two never disagree (and a
//! daemon in another process changing the same files loses nothing: see
//! [`Control`](crate::host::Control)).
//!
//! | screen | keys |
//! |---|---|
//! | list | ↑/↓ (j/k) move, Enter open, `a` add, `d` delete (then `y`), `q` quit |
//! | server | `t` tools, `R` resources, `P` prompts, `r` reconnect, `i` instructions, Esc back; `l` login / relogin and `c` OAuth client for `"auth": "oauth"` servers |
//! | tools | ↑/↓ move, Enter calls the tool (arguments as a JSON object), Space toggles the tool, `A` toggles `mcp__<server>__*`, Esc back |
//! | resources | resources and templates; Enter reads one as the model sees it (a template asks for its variables first) |
//! | prompts | Enter asks for the prompt's arguments and shows its messages as the model sees them |
//! | arguments | Tab / Shift-Tab between fields, ↑/↓ choose among the server's completions, Enter takes one or sends, Esc back |
//! | add | one field a step, Enter accepts, Shift-Tab (or Backspace on an empty field) goes back, Esc cancels; ↑/↓ choose on choice steps |
//! | login | `p` paste the URL the browser ended on, Esc cancel |
//!
//! Ctrl-C leaves from any screen. Connecting, reconnecting, saving and logging in run in
//! the background with a spinner; the panel keeps drawing and taking keys. Text a server
//! sent is drawn with control characters escaped; env values, header values and secrets are
//! never drawn, and a URL's query values and password are drawn as `***`.
//!
//! Given a [`PendingRequests`](crate::host::PendingRequests) board ([`Panel::answering`]),
//! the servers' requests open over whatever screen shows, oldest first: an elicitation's
//! form (one field a property: text, number, integer, yes/no with Space, one or several
//! choices with ←/→ and Space; defaults filled in, required ones marked `*`; Tab / Shift-Tab
//! between fields; Enter sends once the answer fits the schema, else names the field; Esc
//! declines), a URL to visit (its origin shown; `y` accepts and opens the browser, `n` or
//! Esc declines), or a sampling request, shown for review and declined with Enter or Esc
//! (the panel has no model: an app that has one gives the manager its own sampling handler).
//!
//! ```no_run
//! # async fn demo(control: agenvoy_mcp::host::Control) -> std::io::Result<()> {
//! use agenvoy_mcp::tui::{Flow, Panel};
//! use crossterm::event::{self, Event};
//! use std::time::Duration;
//! let mut terminal = ratatui::init();
//! let mut panel = Panel::new(control); // `.answering(board)` to answer servers' requests
//! loop {
//!     panel.tick();
//!     terminal.draw(|frame| panel.draw(frame, frame.area()))?;
//!     // (a real app reads events off its async loop; see `agenvoy-mcp tui`)
//!     if event::poll(Duration::from_millis(200))? {
//!         if panel.handle_event(&event::read()?) == Flow::Quit {
//!             break;
//!         }
//!     }
//! }
//! ratatui::restore();
//! # Ok(()) }
//! ```
//!
//! Inside, [`Panel`] wires a pure state machine (keys in, effects out) to the control: each
//! effect runs on a task and its result comes back over a bounded channel, applied at the
//! next [`Panel::tick`] or [`Panel::changed`].
//!
//! [ratatui]: https://ratatui.rs

mod app;
mod catalog;
mod effect;
mod form;
mod input;
mod oauth;
mod panel;
mod template;
mod view;
mod wizard;

pub use panel::{Flow, Panel};
