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
//! | server | `t` tools, `r` reconnect, `i` instructions, Esc back; `l` login / relogin and `c` OAuth client for `"auth": "oauth"` servers |
//! | tools | ↑/↓ move, Space toggles the tool, `A` toggles `mcp__<server>__*`, Esc back |
//! | add | one field a step, Enter accepts, Shift-Tab (or Backspace on an empty field) goes back, Esc cancels; ↑/↓ choose on choice steps |
//! | login | `p` paste the URL the browser ended on, Esc cancel |
//!
//! Ctrl-C leaves from any screen. Connecting, reconnecting, saving and logging in run in
//! the background with a spinner; the panel keeps drawing and taking keys. Text a server
//! sent is drawn with control characters escaped; env values, header values and secrets are
//! never drawn, and a URL's query values and password are drawn as `***`.
//!
//! ```no_run
//! # async fn demo(control: agenvoy_mcp::host::Control) -> std::io::Result<()> {
//! use agenvoy_mcp::tui::{Flow, Panel};
//! use crossterm::event::{self, Event};
//! use std::time::Duration;
//! let mut terminal = ratatui::init();
//! let mut panel = Panel::new(control);
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
mod form;
mod input;
mod panel;
mod view;
mod view_ask;
mod view_catalog;

pub use panel::{Flow, Panel};
