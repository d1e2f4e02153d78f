//! How far a long operation has got, and whether its caller still wants it.
//!
//! Long work (a deep `list`, a folder copy, a content search) ticks a shared
//! [`Meter`]; the caller reads it to report progress and sets its cancel flag to
//! stop work nobody waits for any more. Plain atomics: no async, no MCP.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Meter {
    /// Units done so far (entries walked, files copied or searched).
    pub done: AtomicU64,
    /// Units in all, when known; 0 when not.
    pub total: AtomicU64,
    /// Set by the caller: stop at the next unit.
    pub cancel: AtomicBool,
    /// Set by the caller when nobody waits on the answer any more (the call
    /// became a task): work that cuts a wait short for a waiting caller may
    /// wait longer.
    pub unhurried: AtomicBool,
    /// Set by the work when it stopped before its end because of `cancel`
    /// (work that had finished, or that is never stopped half-way, leaves it
    /// clear, so that its caller can say the cancel came too late).
    cut_short: AtomicBool,
}

impl Meter {
    pub fn new() -> Meter {
        Meter::default()
    }

    pub fn tick(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    pub fn set_total(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    pub fn stop(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// The work stopped before its end because it was cancelled: what it
    /// answers is partial.
    pub fn cut_short(&self) {
        self.cut_short.store(true, Ordering::Relaxed);
    }

    /// Whether the work said it stopped part-way ([`Meter::cut_short`]).
    pub fn was_cut_short(&self) -> bool {
        self.cut_short.load(Ordering::Relaxed)
    }

    pub fn unhurry(&self) {
        self.unhurried.store(true, Ordering::Relaxed);
    }

    pub fn is_unhurried(&self) -> bool {
        self.unhurried.load(Ordering::Relaxed)
    }

    /// `(done, total)`, total `None` when unknown.
    pub fn read(&self) -> (u64, Option<u64>) {
        let total = self.total.load(Ordering::Relaxed);
        (
            self.done.load(Ordering::Relaxed),
            (total > 0).then_some(total),
        )
    }
}
