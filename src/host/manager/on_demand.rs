//! On-demand servers (`"start": "on_demand"`): what keeps one running ([`Activity`], a
//! request in flight or one that ended lately), and how often the servers left idle are
//! looked for ([`check_interval`]; `servers.rs` stops them).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The requests through one server: how many are in flight, and when the last one ended.
#[derive(Debug)]
pub(super) struct Activity {
    in_flight: AtomicUsize,
    last_ended: Mutex<Instant>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            in_flight: AtomicUsize::new(0),
            last_ended: Mutex::new(Instant::now()),
        }
    }
}

impl Activity {
    /// A request begins; it is in flight until the guard is dropped.
    pub(super) fn begin(self: &Arc<Self>) -> InUse {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InUse(self.clone())
    }

    /// How long it has been without a request; `None` while one is in flight.
    pub(super) fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(self.last_ended.lock().expect("activity lock").elapsed())
    }

    /// Counts from now, as if a request just ended (a server just started).
    pub(super) fn touch(&self) {
        *self.last_ended.lock().expect("activity lock") = Instant::now();
    }
}

/// A request in flight through a server (see [`Activity::begin`]).
#[derive(Debug)]
pub(crate) struct InUse(Arc<Activity>);

impl Drop for InUse {
    fn drop(&mut self) {
        // Stamped before the count falls, so an idle check never sees 0 and an old time.
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How often the idle servers are looked for: a quarter of the shortest idle timeout,
/// between 50 ms and 30 s.
pub(super) fn check_interval(shortest_idle_timeout: Duration) -> Duration {
    (shortest_idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30))
}
