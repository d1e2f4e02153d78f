//! How a search gives up part-way: its caller's flag was set (the client went
//! away, the call was cancelled) or its deadline passed. The long loops of a
//! search (checking names and entries, walking subtrees, ranking, fuzzy
//! scoring) ask a [`Halt`] whether to go on; once it says no, each loop ends
//! at once and the search answers [`Stopped`] instead of its partial work.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When a search must stop: a flag someone else sets, a deadline, a budget
/// of CPU time (all its threads together), any of them or none
/// ([`Stop::NEVER`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stop<'a> {
    flag: Option<&'a AtomicBool>,
    deadline: Option<Instant>,
    cpu: Option<Duration>,
}

impl<'a> Stop<'a> {
    /// Never stops.
    pub const NEVER: Stop<'static> = Stop {
        flag: None,
        deadline: None,
        cpu: None,
    };

    /// Stops once `flag` is set.
    pub fn on(flag: &'a AtomicBool) -> Stop<'a> {
        Stop {
            flag: Some(flag),
            ..Stop::NEVER
        }
    }

    /// Stops at `deadline` too (when one is given).
    pub fn until(self, deadline: Option<Instant>) -> Stop<'a> {
        Stop { deadline, ..self }
    }

    /// Stops once the search's threads have spent `budget` of CPU time.
    pub fn within_cpu(self, budget: Duration) -> Stop<'a> {
        Stop {
            cpu: Some(budget),
            ..self
        }
    }

    /// Whether the flag is set or the deadline passed (the CPU budget is
    /// counted by the search itself).
    pub fn is_set(&self) -> bool {
        self.flagged() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the flag was set (rather than the deadline passed).
    pub fn flagged(&self) -> bool {
        self.flag.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    fn can_stop(&self) -> bool {
        self.flag.is_some() || self.deadline.is_some() || self.cpu.is_some()
    }
}

/// The CPU time a name search may spend, all its threads together, before
/// it gives up as [`Stopped::OverBudget`]: the servers' searches (MCP, the
/// page, Everything's API) run within it, so no query keeps a core busy for
/// long, whatever its terms (the query language's limits bound how many;
/// this bounds what a few costly ones, like pathological regexes, do).
pub const SEARCH_CPU_BUDGET: Duration = Duration::from_millis(800);

/// Why a search was stopped before it ended (by its [`Stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Its flag was set: the caller went away.
    Cancelled,
    /// Its deadline passed.
    Timeout,
    /// It spent its CPU budget.
    OverBudget,
}

impl Stopped {
    fn code(self) -> u8 {
        match self {
            Stopped::Cancelled => 1,
            Stopped::Timeout => 2,
            Stopped::OverBudget => 3,
        }
    }

    fn of(code: u8) -> Option<Stopped> {
        match code {
            1 => Some(Stopped::Cancelled),
            2 => Some(Stopped::Timeout),
            3 => Some(Stopped::OverBudget),
            _ => None,
        }
    }
}

/// The flag and the clock are read once every this many steps of a thread
/// (a step is one name or entry checked: from nanoseconds to a millisecond
/// for a name against 16 pathological regexes).
const CHECK_EVERY: u32 = 16;

/// The thread's CPU clock (a system call, not a vDSO read like the wall
/// clock) is read when this much wall time has passed since its last
/// reading on this thread: at most this much CPU goes uncounted.
const CPU_EVERY: Duration = Duration::from_millis(5);

/// Tells the halts apart, for the threads' last CPU readings.
static HALTS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static STEPS: Cell<u32> = const { Cell::new(0) };
    /// (halt, this thread's CPU time at its last reading, ns, and when).
    static LAST: Cell<(u64, u64, Option<Instant>)> = const { Cell::new((0, 0, None)) };
}

/// This thread's CPU time, ns.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to; the clock id is a constant.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    if !ok {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A [`Stop`] asked in hot loops, on any thread: cheap (a relaxed load, and
/// the stop itself read once every [`CHECK_EVERY`] steps of a thread), and
/// once it said stop, it says so to every loop after.
pub(crate) struct Halt<'a> {
    stop: Stop<'a>,
    id: u64,
    /// CPU time the threads reported, ns.
    spent: AtomicU64,
    /// 0 while running, else a [`Stopped`]'s code.
    halted: AtomicU8,
}

impl<'a> Halt<'a> {
    pub(crate) fn new(stop: Stop<'a>) -> Halt<'a> {
        Halt {
            stop,
            id: HALTS.fetch_add(1, Ordering::Relaxed),
            spent: AtomicU64::new(0),
            halted: AtomicU8::new(0),
        }
    }

    /// Whether to go on with the next step.
    #[inline]
    pub(crate) fn go(&self) -> bool {
        if !self.stop.can_stop() {
            return true;
        }
        if self.halted.load(Ordering::Relaxed) != 0 {
            return false;
        }
        let n = STEPS.with(|s| {
            let n = s.get().wrapping_add(1);
            s.set(n);
            n
        });
        if !n.is_multiple_of(CHECK_EVERY) {
            return true;
        }
        let why = self.check();
        match why {
            Some(why) => {
                self.halted.store(why.code(), Ordering::Relaxed);
                false
            }
            None => true,
        }
    }

    fn check(&self) -> Option<Stopped> {
        if self.stop.flagged() {
            return Some(Stopped::Cancelled);
        }
        if self.stop.deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(Stopped::Timeout);
        }
        let budget = self.stop.cpu?;
        let wall = Instant::now();
        let (id, last, read_at) = LAST.with(Cell::get);
        if id == self.id && read_at.is_some_and(|t| wall.duration_since(t) < CPU_EVERY) {
            return None;
        }
        let now = thread_cpu_ns();
        LAST.with(|l| l.set((self.id, now, Some(wall))));
        if id != self.id {
            // This thread's first reading for this search: the baseline.
            return None;
        }
        let delta = now.saturating_sub(last);
        let spent = self.spent.fetch_add(delta, Ordering::Relaxed) + delta;
        (spent > budget.as_nanos() as u64).then_some(Stopped::OverBudget)
    }

    /// Why the work was (or should now be) stopped: its results are then
    /// partial, and answered as that.
    pub(crate) fn halted(&self) -> Option<Stopped> {
        Stopped::of(self.halted.load(Ordering::Relaxed)).or_else(|| {
            if self.stop.flagged() {
                Some(Stopped::Cancelled)
            } else if self.stop.is_set() {
                Some(Stopped::Timeout)
            } else {
                None
            }
        })
    }

    /// `value`, or why the work was stopped.
    pub(crate) fn result<T>(&self, value: T) -> Result<T, Stopped> {
        match self.halted() {
            Some(why) => Err(why),
            None => Ok(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_halt_stops_on_its_flag_or_deadline_and_stays_stopped() {
        let never = Halt::new(Stop::NEVER);
        assert!((0..1000).all(|_| never.go()) && never.halted().is_none());
        let flag = AtomicBool::new(false);
        let h = Halt::new(Stop::on(&flag));
        assert!((0..1000).all(|_| h.go()) && h.halted().is_none());
        flag.store(true, Ordering::Relaxed);
        // Within CHECK_EVERY steps it notices, then it says stop every time.
        let went = (0..CHECK_EVERY * 2).take_while(|_| h.go()).count();
        assert!(went < CHECK_EVERY as usize, "{went}");
        assert!(!h.go());
        assert_eq!(h.result(1), Err(Stopped::Cancelled));
        let past = Halt::new(Stop::NEVER.until(Some(Instant::now() - Duration::from_millis(1))));
        assert_eq!(past.halted(), Some(Stopped::Timeout));
        let later = Halt::new(Stop::NEVER.until(Some(Instant::now() + Duration::from_secs(60))));
        assert!((0..1000).all(|_| later.go()));
        assert_eq!(later.result(1), Ok(1));
    }

    #[test]
    fn a_cpu_budget_counts_the_work_of_every_thread() {
        let spin = |h: &Halt| {
            let mut x = 0u64;
            while h.go() {
                for i in 0..1000u64 {
                    x = x.wrapping_mul(31).wrapping_add(i);
                }
                std::hint::black_box(x);
            }
        };
        let h = Halt::new(Stop::NEVER.within_cpu(Duration::from_millis(100)));
        let started = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| spin(&h));
            s.spawn(|| spin(&h));
        });
        assert_eq!(h.halted(), Some(Stopped::OverBudget));
        // Two threads spend 100 ms of CPU in about 50 ms each; never seconds.
        assert!(started.elapsed() < Duration::from_secs(5));
        // Idle time is not spent.
        let idle = Halt::new(Stop::NEVER.within_cpu(Duration::from_millis(20)));
        for _ in 0..(CHECK_EVERY * 4) {
            std::thread::sleep(Duration::from_micros(200));
            assert!(idle.go());
        }
        assert_eq!(idle.result(()), Ok(()));
    }
}
