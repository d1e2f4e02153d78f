//! How many threads all greps of a process may take together, so that content
//! searches cannot starve the cheap calls (`search`, `read`, `stat`) that
//! arrive meanwhile.
//!
//! The bound is one thread fewer than the machine has cores, at least one:
//! on 2 cores every grep in flight shares one searching thread, on 8 cores
//! seven. A grep waits for its first thread (checking its cancellation and
//! deadline), then takes more only where they are free at once, up to its own
//! `Options::threads`; it gives them back when it ends. Searching threads also
//! run at a lower CPU priority (`nice` +10), so a cheap call that wakes while
//! a grep is running gets a core first. `ferret grep` on the command line
//! uses no budget: it is alone.
//!
//! Written by hand (a mutex and a condition variable) because what is needed
//! is a counting semaphore that blocking threads wait on with a cancellation
//! flag and a deadline; tokio's semaphore is for async tasks.

use std::{
    sync::{
        Arc, Condvar, Mutex, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

/// A pool of thread slots shared by greps.
#[derive(Debug)]
pub struct Budget {
    max: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

/// Slots taken from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Slots<'a> {
    budget: &'a Budget,
    pub count: usize,
}

impl Drop for Slots<'_> {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|p| p.into_inner());
        *used -= self.count;
        drop(used);
        self.budget.freed.notify_all();
    }
}

/// How often a waiting grep looks at its cancellation flag.
const POLL: Duration = Duration::from_millis(20);

impl Budget {
    pub fn new(max: usize) -> Budget {
        Budget {
            max: max.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The process-wide budget: one thread fewer than the cores, at least one.
    pub fn shared() -> Arc<Budget> {
        static SHARED: OnceLock<Arc<Budget>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                Arc::new(Budget::new(cores.saturating_sub(1)))
            })
            .clone()
    }

    /// The most threads all greps take together.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Threads in use now.
    pub fn in_use(&self) -> usize {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for one slot, then take up to `want` in all where free. `None`
    /// when `cancel` was set or `deadline` passed while waiting.
    pub fn take(
        &self,
        want: usize,
        cancel: &AtomicBool,
        deadline: Option<Instant>,
    ) -> Option<Slots<'_>> {
        let want = want.clamp(1, self.max);
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while *used >= self.max {
            if cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            let wait = deadline.map_or(POLL, |d| {
                d.saturating_duration_since(Instant::now()).min(POLL)
            });
            used = self
                .freed
                .wait_timeout(used, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let count = want.min(self.max - *used);
        *used += count;
        Some(Slots {
            budget: self,
            count,
        })
    }
}

/// Lower the calling thread's CPU priority (a searching thread, which exits
/// when its grep ends). Best effort: where it is refused the thread runs as is.
pub(crate) fn lower_priority() {
    let tid = rustix::thread::gettid();
    let _ = rustix::process::setpriority_process(Some(tid), 10);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greps_share_the_bound_and_give_slots_back() {
        let budget = Budget::new(3);
        let never = AtomicBool::new(false);
        let a = budget.take(2, &never, None).unwrap();
        assert_eq!(a.count, 2);
        let b = budget.take(8, &never, None).unwrap();
        assert_eq!(b.count, 1, "only what is free");
        assert_eq!(budget.in_use(), 3);
        let soon = Instant::now() + Duration::from_millis(60);
        assert!(
            budget.take(1, &never, Some(soon)).is_none(),
            "a full budget is waited on until the deadline"
        );
        drop(a);
        assert_eq!(budget.in_use(), 1);
        assert_eq!(budget.take(5, &never, None).unwrap().count, 2);
    }

    #[test]
    fn a_waiting_grep_is_woken_or_cancelled() {
        let budget = Arc::new(Budget::new(1));
        let never = AtomicBool::new(false);
        let held = budget.take(1, &never, None).unwrap();
        let waiter = {
            let budget = budget.clone();
            std::thread::spawn(move || {
                let never = AtomicBool::new(false);
                budget.take(1, &never, None).map(|s| s.count)
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert_eq!(waiter.join().unwrap(), Some(1));
        let _held = budget.take(1, &never, None).unwrap();
        let cancel = AtomicBool::new(true);
        let started = Instant::now();
        assert!(budget.take(1, &cancel, None).is_none());
        assert!(started.elapsed() < Duration::from_secs(1));
        // The process-wide budget leaves one core for the cheap calls.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(Budget::shared().max(), cores.saturating_sub(1).max(1));
    }
}
