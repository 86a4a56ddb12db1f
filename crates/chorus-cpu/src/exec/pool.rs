//! The threads that run a launch's blocks beside the launching thread: kept between launches,
//! so a launch does not pay for starting threads.
//!
//! Starting an OS thread per launch (`std::thread::scope`) cost the 2-vCPU machine more than
//! the second core gave back: native vector add over 1M floats ran in 0.47–0.57 ms on one core
//! and only 1.43–1.51× faster on two, while an OpenMP loop, whose threads persist and spin
//! between parallel regions, scaled 2.0× on the same machine. A helper thread here spins for a
//! short while after its part of a launch ([`SPIN`]), where back-to-back launches find it
//! awake, then parks until the next launch unparks it.
//!
//! One launch at a time uses the pool: a launch that finds it busy (launches from several host
//! threads at once) starts scoped threads instead, as before. The launching thread always
//! works too, so a launch is never slower than one worker by more than the hand-off.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long an idle helper spins before it parks: long enough to bridge the gap between
/// back-to-back launches (tens of microseconds), short enough that an idle program costs little.
const SPIN: Duration = Duration::from_micros(200);

/// The work of one launch, shared with the helpers: `work` points to the launch's closure,
/// which lives until every helper that takes part has returned from it ([`Pool::run`]). A raw
/// pointer, not a reference: a helper that does not take part may still copy the job after the
/// launch is over, and must not hold a reference to a closure that is gone.
#[derive(Clone, Copy)]
struct Job {
    work: *const (dyn Fn() + Sync + 'static),
    /// How many helpers take part (those with a lower index).
    helpers: usize,
}

// SAFETY: `work` is only called by the helpers that take part, while the launch that owns the
// closure waits for them; the closure is `Sync`, so calling it from several threads is allowed.
unsafe impl Send for Job {}

/// The state the launching thread and the helpers share.
struct Shared {
    /// Bumped once per launch; a helper runs a job when it sees a generation it has not run.
    generation: AtomicU64,
    /// The job of the current generation, with that generation (a helper that wakes late must
    /// not run a later job twice, once for each generation it notices).
    job: Mutex<Option<(u64, Job)>>,
    /// Helpers of the current generation that have not finished.
    running: AtomicUsize,
}

/// Helper threads and the lock that gives the pool to one launch at a time.
pub(crate) struct Pool {
    shared: &'static Shared,
    /// The helpers' handles, for unparking; grows to the most helpers a launch asked for.
    helpers: Mutex<Vec<Thread>>,
}

/// The process's pool.
pub(crate) fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        shared: Box::leak(Box::new(Shared {
            generation: AtomicU64::new(0),
            job: Mutex::new(None),
            running: AtomicUsize::new(0),
        })),
        helpers: Mutex::new(Vec::new()),
    })
}

/// Waits, when dropped, until no helper runs the job any more: the job's closure borrows the
/// launch, which must outlive every call of it, also when the launching thread unwinds.
struct WaitForHelpers<'p>(&'p Shared);

impl Drop for WaitForHelpers<'_> {
    fn drop(&mut self) {
        while self.0.running.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        *self.0.job.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Pool {
    /// Runs `work` on the calling thread and on `helpers` other threads at once, and returns
    /// when every call has returned. `work` must not panic (the launch catches panics around
    /// each block); it is called `helpers + 1` times. Returns `false`, having run nothing, when
    /// another launch holds the pool or a helper thread cannot be started.
    pub(crate) fn run(&self, helpers: usize, work: &(dyn Fn() + Sync)) -> bool {
        let Ok(mut threads) = self.helpers.try_lock() else {
            return false;
        };
        while threads.len() < helpers {
            let index = threads.len();
            let shared = self.shared;
            // Read here, under the lock, not by the new thread: it may start after this launch
            // publishes its generation, which it must not take for one it has seen.
            let seen = shared.generation.load(Ordering::Acquire);
            let started = thread::Builder::new()
                .name(format!("chorus-cpu-{}", index + 1))
                .spawn(move || helper_loop(shared, index, seen));
            match started {
                Ok(handle) => threads.push(handle.thread().clone()),
                Err(_) => return false,
            }
        }
        // SAFETY: only the lifetime changes (a pointer to the same closure). The pointer is
        // called only by helpers that take part, which `running` counts, and
        // `WaitForHelpers` (dropped before this function returns or unwinds) waits until
        // every one of them has returned: no call of `work` outlives this borrow.
        let shared_work: *const (dyn Fn() + Sync + 'static) = unsafe {
            std::mem::transmute::<*const (dyn Fn() + Sync + '_), *const (dyn Fn() + Sync + 'static)>(
                work,
            )
        };
        let shared = self.shared;
        shared.running.store(helpers, Ordering::Release);
        let generation = shared.generation.load(Ordering::Acquire) + 1;
        *shared.job.lock().unwrap_or_else(|p| p.into_inner()) = Some((
            generation,
            Job {
                work: shared_work,
                helpers,
            },
        ));
        let _wait = WaitForHelpers(shared);
        shared.generation.store(generation, Ordering::Release);
        for t in &threads[..helpers] {
            t.unpark();
        }
        work();
        true
    }
}

/// A helper's life: wait for a generation it has not seen, take part in its job if its index is
/// among the job's helpers, then wait again (spinning for [`SPIN`], then parked). `seen` is the
/// generation before the first launch it may serve. The
/// generation is only written under the pool's lock, one launch at a time, and only goes up.
fn helper_loop(shared: &'static Shared, index: usize, mut seen: u64) {
    loop {
        let idle_since = Instant::now();
        let mut spins = 0u32;
        let generation = loop {
            let g = shared.generation.load(Ordering::Acquire);
            if g != seen {
                break g;
            }
            spins = spins.wrapping_add(1);
            // Reading the clock every spin would slow the spin; every 64th is plenty.
            if spins.is_multiple_of(64) && idle_since.elapsed() > SPIN {
                // The launch unparks its helpers after it publishes the generation, so a
                // helper that parks after that check still wakes (the unpark token).
                thread::park();
            } else {
                std::hint::spin_loop();
            }
        };
        let job = *shared.job.lock().unwrap_or_else(|p| p.into_inner());
        let Some((job_generation, job)) = job.filter(|(g, _)| *g > seen) else {
            // That launch is over (its helpers have all finished): wait for the next.
            seen = generation;
            continue;
        };
        seen = job_generation;
        if index < job.helpers {
            // `work` catches the panics of the blocks it runs; one that escapes (a bug) must
            // still count this helper out, or the launch would wait forever.
            // SAFETY: this helper is counted in `running`, so the launch that owns the closure
            // waits for this call to return (`Job`).
            let work = unsafe { &*job.work };
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            shared.running.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn every_participant_runs_once_per_launch_and_launches_do_not_overlap() {
        let pool = pool();
        for helpers in [0, 1, 3, 2, 1] {
            let calls = AtomicUsize::new(0);
            let work = || {
                calls.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            };
            // Another test may hold the pool for a moment: try again then.
            while !pool.run(helpers, &work) {
                std::thread::yield_now();
            }
            assert_eq!(calls.load(Ordering::Relaxed), helpers + 1);
        }
    }

    #[test]
    fn a_busy_pool_is_refused_not_waited_for() {
        let pool = pool();
        let inner_refused = AtomicUsize::new(0);
        let work = || {
            if !pool.run(1, &|| {}) {
                inner_refused.fetch_add(1, Ordering::Relaxed);
            }
        };
        while !pool.run(1, &work) {
            std::thread::yield_now();
        }
        // Both participants of the outer launch found the pool busy.
        assert_eq!(inner_refused.load(Ordering::Relaxed), 2);
    }
}
