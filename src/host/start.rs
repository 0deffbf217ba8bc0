//! When a configured server runs ([`Start`]): from the manager's launch to its close (the
//! default), or only while it is used: started by the first request that needs it, stopped
//! after a while without one, its lists kept meanwhile in a catalog
//! ([`super::kept_catalog`]).
//!
//! In the config file an entry says `"start": "on_demand"` (or `"launch"`) and may set
//! `"idle_timeout"` (seconds); the top level may set both as the default of every entry.

use serde::Serialize;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// How long an on-demand server runs without a request before it is stopped, unless its
/// entry or the config's top level says otherwise.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// When a server runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "start", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Start {
    /// From the manager's launch to its close (the default).
    #[default]
    Launch,
    /// Only while used: registered at launch from its kept catalog, started by the first
    /// call, read, prompt or completion that needs it, stopped after `idle_timeout` without
    /// a request (a request in flight or a resource followed keeps it running).
    OnDemand {
        /// How long it may run without a request; in JSON, seconds.
        #[serde(rename = "idleTimeout", serialize_with = "as_seconds")]
        idle_timeout: Duration,
    },
}

impl Start {
    /// On demand, stopped after [`DEFAULT_IDLE_TIMEOUT`] without a request.
    pub fn on_demand() -> Start {
        Start::OnDemand {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }

    /// Whether it is [`Start::OnDemand`].
    pub fn is_on_demand(self) -> bool {
        matches!(self, Start::OnDemand { .. })
    }

    /// The name the config file and the front ends use: `launch` or `on_demand`.
    pub fn name(self) -> &'static str {
        match self {
            Start::Launch => "launch",
            Start::OnDemand { .. } => "on_demand",
        }
    }

    /// Writes it into an entry: `"start"` and `"idle_timeout"`, left out where they say the
    /// default.
    pub(crate) fn write(self, entry: &mut Map<String, Value>) {
        entry.remove("start");
        entry.remove("idle_timeout");
        if let Start::OnDemand { idle_timeout } = self {
            entry.insert("start".into(), json!("on_demand"));
            if idle_timeout != DEFAULT_IDLE_TIMEOUT {
                entry.insert("idle_timeout".into(), json!(idle_timeout.as_secs_f64()));
            }
        }
    }
}

fn as_seconds<S: serde::Serializer>(value: &Duration, to: S) -> Result<S::Ok, S::Error> {
    to.serialize_f64(value.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_leaves_out_the_defaults() {
        let mut entry = Map::new();
        Start::on_demand().write(&mut entry);
        assert_eq!(Value::Object(entry.clone()), json!({"start": "on_demand"}));
        Start::OnDemand {
            idle_timeout: Duration::from_secs(5),
        }
        .write(&mut entry);
        assert_eq!(
            Value::Object(entry.clone()),
            json!({"start": "on_demand", "idle_timeout": 5.0})
        );
        Start::Launch.write(&mut entry);
        assert_eq!(Value::Object(entry), json!({}));
    }
}
