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

/// A copy found in flight: its thread (linear index in the block), its commit group, and the
/// byte of its region where the access met it.
#[derive(Clone, Copy, Debug)]
pub(super) struct InFlight {
    pub(super) thread: u32,
    pub(super) group: u32,
    pub(super) byte: u64,
}

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

#[derive(Default)]
struct State {
    /// Per shared region (dynamic shared memory, then each static slot), per 4-byte word: 0, or
    /// the last copy into it as (thread + 1) << 32 | group.
    words: Vec<Vec<u64>>,
    groups: Vec<Groups>,
}

/// The copies of one block in flight (one worker's, reused block after block).
pub(super) struct AsyncCopies {
    state: RefCell<State>,
    /// Lanes per warp, to tell a `syncwarp`'s threads.
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
        let words = std::iter::once(dynamic_bytes)
            .chain(static_bytes.iter().copied())
            .map(|bytes| vec![0; bytes.div_ceil(4)])
            .collect();
        AsyncCopies {
            state: RefCell::new(State {
                words,
                groups: vec![Groups::default(); threads],
            }),
            warp_width,
        }
    }

    /// Forgets the previous block's copies.
    pub(super) fn reset(&self) {
        let mut state = self.state.borrow_mut();
        for region in &mut state.words {
            region.fill(0);
        }
        state.groups.fill(Groups::default());
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

    /// `thread` copies `bytes` bytes into `region` at `byte`: the words now belong to its open
    /// group. (The caller has checked the words with [`AsyncCopies::check`] as a write.)
    pub(super) fn record(&self, region: usize, byte: u64, bytes: u64, thread: u32) {
        let mut state = self.state.borrow_mut();
        let group = state.groups[thread as usize].committed;
        let tag = (u64::from(thread) + 1) << 32 | u64::from(group);
        if let Some(words) = state.words.get_mut(region) {
            let (first, last) = (byte / 4, (byte + bytes - 1) / 4);
            for w in words
                .iter_mut()
                .take(last as usize + 1)
                .skip(first as usize)
            {
                *w = tag;
            }
        }
    }

    /// `thread` reads or writes `bytes` bytes of `region` at `byte`: the copy in flight there,
    /// if any. Words whose copy is complete for the whole block are forgotten.
    pub(super) fn check(
        &self,
        region: usize,
        byte: u64,
        bytes: u64,
        thread: u32,
    ) -> Result<(), InFlight> {
        let mut state = self.state.borrow_mut();
        let State { words, groups } = &mut *state;
        let Some(words) = words.get_mut(region) else {
            return Ok(());
        };
        let (first, last) = (byte / 4, (byte + bytes.max(1) - 1) / 4);
        // Beyond the region: the access itself faults.
        for (i, w) in words
            .iter_mut()
            .enumerate()
            .take(last as usize + 1)
            .skip(first as usize)
        {
            if *w == 0 {
                continue;
            }
            let (copier, group) = ((*w >> 32) as u32 - 1, *w as u32);
            let counters = groups[copier as usize];
            if group < counters.block {
                *w = 0;
                continue;
            }
            let complete = if copier == thread {
                group < counters.done
            } else if copier / self.warp_width == thread / self.warp_width {
                group < counters.warp
            } else {
                false
            };
            if !complete {
                return Err(InFlight {
                    thread: copier,
                    group,
                    byte: (i as u64 * 4).max(byte),
                });
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

    /// A block-wide barrier: what each thread waited for is complete for every thread.
    pub(super) fn barrier(&self) {
        for g in &mut self.state.borrow_mut().groups {
            g.block = g.done;
            g.warp = g.warp.max(g.done);
        }
    }
}

impl InFlight {
    /// The fault message for `access` by `thread` (linear indexes; `name` turns one into the
    /// thread's (x, y, z)).
    pub(super) fn describe(
        self,
        access: Access,
        thread: u32,
        name: impl Fn(u32) -> String,
    ) -> String {
        let verb = match access {
            Access::Read => "reads",
            Access::Write => "writes",
        };
        let complete = if self.thread == thread {
            "wait for it first (`cp-async-commit` ends a group; `cp-async-wait N` completes all \
             but the N most recent committed groups)"
                .to_string()
        } else {
            "that thread must wait for it (`cp-async-wait`) and the block synchronise \
             (`syncthreads`) before this access"
                .to_string()
        };
        let whose = if self.thread == thread {
            "this thread's own".to_string()
        } else {
            format!("thread {}'s", name(self.thread))
        };
        format!(
            "{verb} shared memory at byte {} that {whose} `cp-async` (commit group {}) may still \
             be writing: {complete}",
            self.byte, self.group
        )
    }
}
