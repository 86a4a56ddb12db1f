//! `cp.async` hazards. The executor completes a copy when it runs (it has nothing to overlap it
//! with), so a kernel that touches a copy's destination before the copy is complete for it
//! would see the data here where a GPU may not have it yet: a race that only a GPU shows, and
//! only sometimes. The tracker remembers, for each 4-byte word of shared memory, the last copy
//! into it (its thread and commit group), and an access to that word faults until the copy is
//! complete for the accessing thread, as PTX defines it:
//!
//! - for the copying thread, once a `cp-async-wait` left fewer groups in flight than there are
//!   after the copy's (`cp.async.wait_group N` completes all but the N most recent committed
//!   groups; a copy not yet committed is in none of them);
//! - for another thread, once the copying thread has so waited and then a `syncthreads` (or,
//!   within one warp, a `syncwarp`) has ordered the two.
//!
//! The other order is a race too: a copy into a word that a thread of another warp read since
//! the last `syncthreads` may land before that read on a GPU (a producer refilling a stage its
//! consumers have not finished). The executor runs a block's warps one after the other, so the
//! read has happened here and the result is right; the tracker remembers each word's readers of
//! the current barrier interval and faults such a copy. (Within a warp, whose lanes run in
//! lockstep here, reads are taken to come first.)
//!
//! Only kernels that reach `cp-async` pay for it (`reaches_cp_async`).

use super::{Program, STATIC_SHARED_BASE};
use crate::bytecode::Op;
use crate::memory::DYNAMIC_SHARED_ID;
use std::cell::RefCell;

/// What a thread did that a copy in flight makes undefined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

/// A race the tracker found, at `byte` of its shared region.
#[derive(Clone, Copy, Debug)]
pub(super) enum Hazard {
    /// An access met a copy in flight: the copy's thread (linear index in the block) and commit
    /// group.
    InFlight { thread: u32, group: u32, byte: u64 },
    /// A copy into a word that a thread of another warp read since the last barrier (`None`:
    /// threads of several warps).
    ReadBefore { reader: Option<u32>, byte: u64 },
}

/// A word's read tag when no thread read it in the current barrier interval.
const NO_READER: u32 = 0;
/// A word's read tag when threads of more than one warp read it.
const SEVERAL_READERS: u32 = u32::MAX;

/// Per-thread group counters.
#[derive(Clone, Copy, Default)]
struct Groups {
    /// Groups committed (a copy issued now joins group `committed`).
    committed: u32,
    /// Groups complete for the thread itself: every group below this one.
    done: u32,
    /// Groups complete for every thread of the block (`done` at the last barrier).
    block: u32,
    /// Groups complete for the thread's warp (`done` at its last `syncwarp`).
    warp: u32,
}

/// What the tracker knows of one 4-byte word of shared memory.
#[derive(Clone, Copy, Default)]
struct Word {
    /// 0, or the last copy into it as (thread + 1) << 32 | group.
    copy: u64,
    /// Its readers: barrier interval << 32 | (reader + 1, or `SEVERAL_READERS`).
    read: u64,
}

impl Word {
    /// The reader code of the read tag, if the word was read in barrier interval `interval`.
    fn reader_in(self, interval: u32) -> Option<u32> {
        let (read_interval, reader) = ((self.read >> 32) as u32, self.read as u32);
        (read_interval == interval && reader != NO_READER).then_some(reader)
    }
}

#[derive(Default)]
struct State {
    /// Per shared region (dynamic shared memory, then each static slot), per 4-byte word.
    regions: Vec<Vec<Word>>,
    groups: Vec<Groups>,
    /// The current barrier interval (1 after a reset, one more at each barrier).
    interval: u32,
}

impl State {
    /// The words of `region` that `bytes` bytes at `byte` touch, with their indexes (only
    /// those inside it: an access beyond the region faults by itself); the threads' counters;
    /// the current interval.
    fn words(
        &mut self,
        region: usize,
        byte: u64,
        bytes: u64,
    ) -> (impl Iterator<Item = (usize, &mut Word)>, &[Groups], u32) {
        let first = (byte / 4) as usize;
        let last = ((byte + bytes.max(1) - 1) / 4) as usize;
        let words = self
            .regions
            .get_mut(region)
            .map_or(&mut [][..], |r| &mut r[..]);
        let touched = words.iter_mut().enumerate().take(last + 1).skip(first);
        (touched, &self.groups, self.interval)
    }
}

/// The copies of one block in flight (one worker's, reused block after block).
pub(super) struct AsyncCopies {
    state: RefCell<State>,
    /// Lanes per warp, to tell a warp's threads.
    warp_width: u32,
}

/// Whether `kernel` or a function it calls issues `cp-async`.
pub(super) fn reaches_cp_async(prog: &Program, kernel: u32) -> bool {
    let mut seen = vec![false; prog.functions.len()];
    let mut stack = vec![kernel];
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut seen[f as usize], true) {
            continue;
        }
        let function = &prog.functions[f as usize];
        if function
            .code
            .iter()
            .any(|op| matches!(op, Op::CpAsync { .. }))
        {
            return true;
        }
        stack.extend(&function.callees);
    }
    false
}

impl AsyncCopies {
    /// A tracker for blocks of `threads` threads over `dynamic_bytes` of dynamic shared memory
    /// and static slots of `static_bytes` each.
    pub(super) fn new(
        threads: usize,
        warp_width: u32,
        dynamic_bytes: usize,
        static_bytes: &[usize],
    ) -> AsyncCopies {
        let regions = std::iter::once(dynamic_bytes)
            .chain(static_bytes.iter().copied())
            .map(|bytes| vec![Word::default(); bytes.div_ceil(4)])
            .collect();
        AsyncCopies {
            state: RefCell::new(State {
                regions,
                groups: vec![Groups::default(); threads],
                interval: 1,
            }),
            warp_width,
        }
    }

    /// Forgets the previous block's copies and reads.
    pub(super) fn reset(&self) {
        let mut state = self.state.borrow_mut();
        for region in &mut state.regions {
            region.fill(Word::default());
        }
        state.groups.fill(Groups::default());
        // Not 0: a cleared read tag's interval.
        state.interval = 1;
    }

    /// The tracked region a pointer's allocation id designates: dynamic shared memory or a
    /// static shared slot (the ids `Memory::region` resolves to them).
    pub(super) fn region_of(&self, id: u32, static_slots: usize) -> Option<usize> {
        if id == DYNAMIC_SHARED_ID {
            Some(0)
        } else {
            let slot = id.checked_sub(STATIC_SHARED_BASE)? as usize;
            (slot < static_slots).then_some(1 + slot)
        }
    }

    /// Whether two threads are lanes of one warp.
    fn same_warp(&self, a: u32, b: u32) -> bool {
        a / self.warp_width == b / self.warp_width
    }

    /// `thread` copies `bytes` bytes into `region` at `byte`: the words now belong to its open
    /// group, unless a thread of another warp read one of them in this barrier interval. (The
    /// caller has checked the words with [`AsyncCopies::check`] as a write.)
    pub(super) fn record(
        &self,
        region: usize,
        byte: u64,
        bytes: u64,
        thread: u32,
    ) -> Result<(), Hazard> {
        let mut state = self.state.borrow_mut();
        let (words, groups, interval) = state.words(region, byte, bytes);
        let tag = (u64::from(thread) + 1) << 32 | u64::from(groups[thread as usize].committed);
        for (i, word) in words {
            let Some(reader) = word.reader_in(interval) else {
                continue;
            };
            let reader = (reader != SEVERAL_READERS).then(|| reader - 1);
            if reader.is_none_or(|r| !self.same_warp(r, thread)) {
                return Err(Hazard::ReadBefore {
                    reader,
                    byte: (i as u64 * 4).max(byte),
                });
            }
        }
        for (_, word) in state.words(region, byte, bytes).0 {
            word.copy = tag;
        }
        Ok(())
    }

    /// `thread` reads or writes `bytes` bytes of `region` at `byte`: the copy in flight there,
    /// if any. Words whose copy is complete for the whole block are forgotten; a read is
    /// remembered for the copies of this barrier interval.
    pub(super) fn check(
        &self,
        region: usize,
        byte: u64,
        bytes: u64,
        thread: u32,
        access: Access,
    ) -> Result<(), Hazard> {
        let mut state = self.state.borrow_mut();
        let (words, groups, interval) = state.words(region, byte, bytes);
        for (i, word) in words {
            if word.copy != 0 {
                let (copier, group) = ((word.copy >> 32) as u32 - 1, word.copy as u32);
                let counters = groups[copier as usize];
                let complete = if group < counters.block {
                    word.copy = 0;
                    true
                } else if copier == thread {
                    group < counters.done
                } else if self.same_warp(copier, thread) {
                    group < counters.warp
                } else {
                    false
                };
                if !complete {
                    return Err(Hazard::InFlight {
                        thread: copier,
                        group,
                        byte: (i as u64 * 4).max(byte),
                    });
                }
            }
            if access == Access::Read {
                let code = match word.reader_in(interval) {
                    None => thread + 1,
                    Some(r) if r != SEVERAL_READERS && self.same_warp(r - 1, thread) => r,
                    Some(_) => SEVERAL_READERS,
                };
                word.read = u64::from(interval) << 32 | u64::from(code);
            }
        }
        Ok(())
    }

    /// `cp-async-commit` by `thread`: its open group is committed.
    pub(super) fn commit(&self, thread: u32) {
        self.state.borrow_mut().groups[thread as usize].committed += 1;
    }

    /// `cp-async-wait n` by `thread`: all but its `n` most recent committed groups complete.
    pub(super) fn wait(&self, thread: u32, n: u32) {
        let g = &mut self.state.borrow_mut().groups[thread as usize];
        g.done = g.done.max(g.committed.saturating_sub(n));
    }

    /// `cp-async-wait-all` by `thread` (`cp.async.wait_all`: commit, then wait for every group).
    pub(super) fn wait_all(&self, thread: u32) {
        let g = &mut self.state.borrow_mut().groups[thread as usize];
        g.committed += 1;
        g.done = g.committed;
    }

    /// `syncwarp` by the warp whose first thread is `first`: what each of its threads waited for
    /// is complete for the others.
    pub(super) fn syncwarp(&self, first: u32) {
        let mut state = self.state.borrow_mut();
        let end = (first + self.warp_width).min(state.groups.len() as u32);
        for g in &mut state.groups[first as usize..end as usize] {
            g.warp = g.done;
        }
    }

    /// A block-wide barrier: what each thread waited for is complete for every thread, and a
    /// new barrier interval begins.
    pub(super) fn barrier(&self) {
        let mut state = self.state.borrow_mut();
        for g in &mut state.groups {
            g.block = g.done;
            g.warp = g.warp.max(g.done);
        }
        state.interval = state.interval.wrapping_add(1).max(1);
    }
}

impl Hazard {
    /// The fault message for `access` by `thread` (linear indexes; `name` turns one into the
    /// thread's (x, y, z)).
    pub(super) fn describe(
        self,
        access: Access,
        thread: u32,
        name: impl Fn(u32) -> String,
    ) -> String {
        match self {
            Hazard::InFlight {
                thread: copier,
                group,
                byte,
            } => {
                let verb = match access {
                    Access::Read => "reads",
                    Access::Write => "writes",
                };
                let (whose, complete) = if copier == thread {
                    (
                        "this thread's own".to_string(),
                        "wait for it first (`cp-async-commit` ends a group; `cp-async-wait N` \
                         completes all but the N most recent committed groups)",
                    )
                } else {
                    (
                        format!("thread {}'s", name(copier)),
                        "that thread must wait for it (`cp-async-wait`) and the block \
                         synchronise (`syncthreads`) before this access",
                    )
                };
                format!(
                    "{verb} shared memory at byte {byte} that {whose} `cp-async` (commit group \
                     {group}) may still be writing: {complete}"
                )
            }
            Hazard::ReadBefore { reader, byte } => {
                let who = match reader {
                    Some(r) => format!("thread {}", name(r)),
                    None => "threads of several warps".to_string(),
                };
                format!(
                    "`cp-async` into shared memory at byte {byte}, which {who} read since the \
                     last `syncthreads`: on a GPU the copy may land before that read; a \
                     `syncthreads` must come between"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two warps of 4 lanes, 64 bytes of dynamic shared memory.
    fn tracker() -> AsyncCopies {
        AsyncCopies::new(8, 4, 64, &[])
    }

    fn read(c: &AsyncCopies, byte: u64, thread: u32) -> Result<(), Hazard> {
        c.check(0, byte, 4, thread, Access::Read)
    }

    #[test]
    fn a_wait_completes_all_but_the_newest_committed_groups() {
        let c = tracker();
        c.record(0, 0, 4, 0).unwrap(); // group 0
        c.commit(0);
        c.record(0, 4, 4, 0).unwrap(); // group 1
        c.commit(0);
        c.record(0, 8, 4, 0).unwrap(); // group 2, not committed
        c.wait(0, 1);
        assert!(read(&c, 0, 0).is_ok());
        assert!(matches!(
            read(&c, 4, 0),
            Err(Hazard::InFlight { group: 1, .. })
        ));
        c.wait(0, 0);
        assert!(read(&c, 4, 0).is_ok());
        // wait 0 leaves the open group in flight; wait-all commits and completes it.
        assert!(matches!(
            read(&c, 8, 0),
            Err(Hazard::InFlight { group: 2, .. })
        ));
        c.wait_all(0);
        assert!(read(&c, 8, 0).is_ok());
    }

    #[test]
    fn other_threads_need_a_barrier_or_within_the_warp_a_syncwarp() {
        let c = tracker();
        c.record(0, 0, 16, 1).unwrap();
        c.wait_all(1);
        assert!(read(&c, 0, 1).is_ok());
        assert!(matches!(
            read(&c, 0, 2),
            Err(Hazard::InFlight { thread: 1, .. })
        ));
        c.syncwarp(0);
        assert!(read(&c, 0, 2).is_ok(), "lane 2 of warp 0");
        assert!(read(&c, 12, 5).is_err(), "warp 1 needs the barrier");
        c.barrier();
        assert!(read(&c, 12, 5).is_ok());
        // A barrier before the wait does not complete the copy.
        c.record(0, 32, 4, 6).unwrap();
        c.commit(6);
        c.barrier();
        c.wait(6, 0);
        assert!(read(&c, 32, 0).is_err());
        c.barrier();
        assert!(read(&c, 32, 0).is_ok());
    }

    #[test]
    fn a_copy_over_another_warps_read_needs_a_barrier_between() {
        let c = tracker();
        read(&c, 0, 1).unwrap();
        // The reader's own warp: lockstep, the read came first.
        assert!(c.record(0, 0, 4, 3).is_ok());
        c.wait_all(3);
        c.barrier();
        read(&c, 4, 1).unwrap();
        assert!(matches!(
            c.record(0, 4, 4, 4),
            Err(Hazard::ReadBefore {
                reader: Some(1),
                byte: 4
            })
        ));
        read(&c, 8, 0).unwrap();
        read(&c, 8, 5).unwrap();
        assert!(matches!(
            c.record(0, 8, 4, 4),
            Err(Hazard::ReadBefore { reader: None, .. })
        ));
        c.barrier();
        assert!(c.record(0, 8, 4, 4).is_ok(), "after a barrier");
        // A new block starts clean.
        c.reset();
        assert!(read(&c, 8, 0).is_ok());
    }
}
