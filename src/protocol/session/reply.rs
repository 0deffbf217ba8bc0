//! Where a request's reply is left for its caller: a one-shot slot whose filling and waking
//! are two steps, so that the inbound side fills every reply of a batch before it wakes any
//! caller; of the callers waiting outside the runtime's tasks it wakes the first, which wakes
//! the others when it takes its reply, and then wakes those it has not woken.
//!
//! With a oneshot channel each reply wakes its caller as it is sent. Callers outside the tasks
//! (futures joined in `block_on` on the multi-threaded runtime, as `#[tokio::main]` runs them)
//! share their thread's one wake-up: the first reply wakes it, and on a busy machine (or one
//! CPU) it runs at once, finds one reply, and sleeps again before the next is sent: a context
//! switch there and back for each reply, and one write each for their next requests (the cork
//! is written by the last of them). A first caller that runs at once wakes the others itself,
//! so they are ready together; those it has not reached are woken by the inbound side right
//! after, so no caller waits for another's thread to run (it may be blocked, or its future
//! kept unpolled). Callers in tasks are woken one by one, as before: waking a task only queues
//! it.

use super::{Reply, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct State {
    reply: Option<Result<Reply>>,
    waker: Option<Waker>,
    /// The filling side was dropped without a reply (the connection ended).
    dropped: bool,
    /// Callers of the same batch, for this one to wake when it takes its reply (or is dropped).
    followers: Vec<Shared>,
    /// Whether the caller waits outside the runtime's tasks (`block_on`).
    outside: bool,
}

type Shared = Arc<Mutex<State>>;

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, State> {
    state.lock().expect("reply lock")
}

/// A new slot: the side that fills it and the side that waits for it.
pub(super) fn slot() -> (Filler, Waiting) {
    let state = Shared::default();
    (Filler(Some(state.clone())), Waiting(state))
}

/// The filling side; dropping it unfilled tells the waiting side so.
pub(super) struct Filler(Option<Shared>);

impl Filler {
    /// Leaves the reply without waking its caller: that is [`wake`]'s.
    pub fn fill(mut self, reply: Result<Reply>) -> Filled {
        let state = self.0.take().expect("a filler is filled once");
        lock(&state).reply = Some(reply);
        Filled(state)
    }
}

impl Drop for Filler {
    fn drop(&mut self) {
        if let Some(state) = self.0.take() {
            let waker = {
                let mut state = lock(&state);
                state.dropped = true;
                state.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

/// A filled slot whose caller is not woken yet.
pub(super) struct Filled(Shared);

/// Wakes the callers of `filled`: those in tasks one by one; of those outside them the first,
/// then the others it has not woken yet.
pub(super) fn wake(filled: impl IntoIterator<Item = Filled>) {
    let followers = hand_over(filled);
    followers.iter().for_each(wake_one);
}

/// Wakes the callers in tasks and the first caller outside them, who is handed the others
/// (returned) to wake as it takes its reply.
fn hand_over(filled: impl IntoIterator<Item = Filled>) -> Vec<Shared> {
    let mut leader: Option<Shared> = None;
    let mut others = Vec::new();
    for Filled(state) in filled {
        let task_waker = {
            let mut guard = lock(&state);
            if guard.waker.is_none() {
                // A caller not waiting yet finds its reply when it polls.
                continue;
            }
            if guard.outside {
                None
            } else {
                guard.waker.take()
            }
        };
        match task_waker {
            Some(waker) => waker.wake(),
            None if leader.is_none() => leader = Some(state),
            None => others.push(state),
        }
    }
    if let Some(leader) = leader {
        let waker = {
            let mut guard = lock(&leader);
            if guard.reply.is_some() {
                guard.followers = others.clone();
            }
            guard.waker.take()
        };
        waker.into_iter().for_each(Waker::wake);
    }
    others
}

/// Wakes the caller of `state` unless it has been woken already.
fn wake_one(state: &Shared) {
    let waker = lock(state).waker.take();
    waker.into_iter().for_each(Waker::wake);
}

/// The caller's side: ready with the reply, or with `Err(())` once the filler is dropped
/// unfilled.
pub(super) struct Waiting(Shared);

impl Future for Waiting {
    type Output = std::result::Result<Result<Reply>, ()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (ready, followers) = {
            let mut state = lock(&self.0);
            if let Some(reply) = state.reply.take() {
                (Ok(reply), std::mem::take(&mut state.followers))
            } else if state.dropped {
                (Err(()), Vec::new())
            } else {
                match &mut state.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    waker => *waker = Some(cx.waker().clone()),
                }
                state.outside = tokio::task::try_id().is_none();
                return Poll::Pending;
            }
        };
        followers.iter().for_each(wake_one);
        Poll::Ready(ready)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let followers = std::mem::take(&mut lock(&self.0).followers);
        followers.iter().for_each(wake_one);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorKind};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Count {
        fn get(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// Polls `waiting` with a waker that counts on `count`: `Some(is_ok)` once ready.
    fn poll(waiting: &mut Waiting, count: &Arc<Count>) -> Option<bool> {
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        match Pin::new(waiting).poll(&mut cx) {
            Poll::Ready(r) => Some(r.is_ok()),
            Poll::Pending => None,
        }
    }

    fn closed() -> Result<Reply> {
        Err(Error::new("s", ErrorKind::Closed("gone".into())))
    }

    /// Polls a fresh batch of `n` callers outside any task and fills their replies.
    fn batch(n: usize) -> (Vec<Arc<Count>>, Vec<Waiting>, Vec<Filled>) {
        let counts: Vec<Arc<Count>> = (0..n).map(|_| Arc::default()).collect();
        let (fillers, mut waiting): (Vec<_>, Vec<_>) = (0..n).map(|_| slot()).unzip();
        for (w, c) in waiting.iter_mut().zip(&counts) {
            assert_eq!(poll(w, c), None);
        }
        let filled = fillers.into_iter().map(|f| f.fill(closed())).collect();
        assert!(counts.iter().all(|c| c.get() == 0), "woken by the filling");
        (counts, waiting, filled)
    }

    fn woken(counts: &[Arc<Count>]) -> Vec<usize> {
        counts.iter().map(|c| c.get()).collect()
    }

    #[test]
    fn a_first_caller_that_runs_at_once_wakes_the_others_and_no_one_is_woken_twice() {
        let (counts, mut waiting, filled) = batch(3);
        let others = hand_over(filled);
        assert_eq!(woken(&counts), [1, 0, 0]);
        // Its thread runs before the inbound side goes on.
        assert_eq!(poll(&mut waiting[0], &counts[0]), Some(true));
        assert_eq!(woken(&counts), [1, 1, 1]);
        others.iter().for_each(wake_one);
        assert_eq!(woken(&counts), [1, 1, 1]);
        assert_eq!(poll(&mut waiting[1], &counts[1]), Some(true));
        assert_eq!(poll(&mut waiting[2], &counts[2]), Some(true));
    }

    #[test]
    fn callers_outside_tasks_never_wait_for_the_first_to_run() {
        // The first caller's thread is blocked, or its future kept and never polled again.
        let (counts, _waiting, filled) = batch(3);
        wake(filled);
        assert_eq!(woken(&counts), [1, 1, 1]);
    }

    #[test]
    fn callers_in_tasks_are_each_woken_at_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let counts: Vec<Arc<Count>> = (0..3).map(|_| Arc::default()).collect();
        let (fillers, waiting): (Vec<_>, Vec<_>) = (0..3).map(|_| slot()).unzip();
        // Each caller waits from a task of its own.
        let polled = counts.clone();
        let mut waiting = runtime.block_on(async move {
            let task = tokio::spawn(async move {
                let mut waiting = waiting;
                for (w, c) in waiting.iter_mut().zip(&polled) {
                    assert_eq!(poll(w, c), None);
                }
                waiting
            });
            task.await.unwrap()
        });
        wake(
            fillers
                .into_iter()
                .map(|f| f.fill(closed()))
                .collect::<Vec<_>>(),
        );
        let woken: Vec<usize> = counts.iter().map(|c| c.get()).collect();
        assert_eq!(woken, [1, 1, 1]);
        for (w, c) in waiting.iter_mut().zip(&counts) {
            assert_eq!(poll(w, c), Some(true));
        }
    }

    #[test]
    fn a_first_caller_dropped_before_its_reply_wakes_the_others() {
        let (counts, mut waiting, filled) = batch(2);
        let _others = hand_over(filled);
        assert_eq!(counts[1].get(), 0);
        drop(waiting.remove(0));
        assert_eq!(counts[1].get(), 1);
        assert_eq!(poll(&mut waiting[0], &counts[1]), Some(true));
    }

    #[test]
    fn a_first_caller_that_took_its_reply_already_leaves_the_others_to_the_inbound_side() {
        let (counts, mut waiting, filled) = batch(2);
        // The first caller polled again (another wake-up) and took its reply before the wake.
        assert_eq!(poll(&mut waiting[0], &counts[0]), Some(true));
        let others = hand_over(filled);
        assert_eq!(counts[1].get(), 0);
        others.iter().for_each(wake_one);
        assert_eq!(counts[1].get(), 1);
    }

    #[test]
    fn a_filler_dropped_unfilled_wakes_its_caller_with_an_error() {
        let count = Arc::new(Count::default());
        let (filler, mut waiting) = slot();
        assert_eq!(poll(&mut waiting, &count), None);
        drop(filler);
        assert_eq!(count.get(), 1);
        assert_eq!(poll(&mut waiting, &count), Some(false));
        // Filled before its caller ever waited: ready at the first poll, nothing to wake.
        let (filler, mut waiting) = slot();
        wake(vec![filler.fill(closed())]);
        assert_eq!(poll(&mut waiting, &count), Some(true));
        assert_eq!(count.get(), 1);
    }
}
