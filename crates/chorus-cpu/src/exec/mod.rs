//! The SIMT interpreter: runs a block warp by warp, each instruction over its 32 or 64 lanes under the
//! warp's execution mask, and a launch's blocks in parallel over the host's cores.

mod access;
mod async_copies;
mod interp;
mod pool;
mod tensor;
mod texture;

use crate::atomic::{atomic16, atomic32, atomic64};
use crate::bytecode::*;
use crate::curand;
use crate::error::Error;
use crate::lanes::*;
use crate::memory::{
    AccessError, DYNAMIC_SHARED_ID, OFFSET_BITS, OFFSET_MASK, OVERFLOWED_ID, Region,
    STATIC_SHARED_BASE, THREAD_LOCAL_BASE, encode, offset_pointer, pointer_id, scaled_index,
    shifted_index, zeroed_words,
};
use crate::printf;
use crate::scalar::{fma, math1, math2};
use crate::value::{Kind, convert, from_raw, to_f64};
use async_copies::{Access, AsyncCopies, Hazard};
use chorus_lang::ir::AtomicOp;
use std::cell::Cell;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Calls deeper than this fault (recursion without a base case).
pub(crate) const MAX_CALL_DEPTH: usize = 256;

/// Everything a launch shares between its workers.
pub(crate) struct Launch<'a> {
    pub(crate) program: &'a Program,
    pub(crate) kernel: u32,
    pub(crate) kernel_name: &'a str,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    /// Buffers and globals reachable in this launch, by allocation id.
    pub(crate) regions: Vec<(u32, Region<'a>)>,
    /// Kernel parameter registers and their bits.
    pub(crate) params: Vec<(Reg, u64)>,
    /// The texture and surface objects passed to this launch.
    pub(crate) textures: Vec<crate::texture::Bound<'a>>,
    pub(crate) dynamic_shared: usize,
    /// Local stack bytes per thread (0 when no function has address-taken locals).
    pub(crate) stack_bytes: usize,
    pub(crate) output: &'a Mutex<Box<dyn Write + Send>>,
    pub(crate) workers: usize,
}

/// The memory one block sees.
struct Memory<'a> {
    launch: &'a [(u32, Region<'a>)],
    shared: &'a [Box<[AtomicU64]>],
    shared_sizes: &'a [usize],
    dynamic: Region<'a>,
    stacks: &'a [AtomicU64],
    stack_bytes: usize,
}

impl<'a> Memory<'a> {
    #[inline(always)]
    fn region(&self, id: u32) -> Option<Region<'a>> {
        if id >= STATIC_SHARED_BASE {
            if let Some(slot) = (id - STATIC_SHARED_BASE)
                .try_into()
                .ok()
                .filter(|s: &usize| *s < self.shared.len())
            {
                return Some(Region {
                    words: &self.shared[slot],
                    len: self.shared_sizes[slot],
                });
            }
            return self.launch.iter().find(|(i, _)| *i == id).map(|(_, r)| *r);
        }
        if id == DYNAMIC_SHARED_ID {
            return Some(self.dynamic);
        }
        if id >= THREAD_LOCAL_BASE && self.stack_bytes > 0 {
            let t = (id - THREAD_LOCAL_BASE) as usize;
            let words = self.stack_bytes / 8;
            let slice = self.stacks.get(t * words..(t + 1) * words)?;
            return Some(Region {
                words: slice,
                len: self.stack_bytes,
            });
        }
        None
    }

    /// The region and offset a pointer designates, or the fault message.
    #[inline(always)]
    fn resolve(&self, ptr: u64, lane: u32) -> Result<(Region<'a>, u64), Fault> {
        let id = pointer_id(ptr);
        match self.region(id) {
            Some(r) => Ok((r, ptr & OFFSET_MASK)),
            None if id == OVERFLOWED_ID => Err(fault(
                lane,
                "out-of-bounds access: pointer arithmetic moved the pointer more than 2^39 bytes from its allocation's start",
            )),
            None if id == 0 => Err(fault(
                lane,
                format!(
                    "access through a null pointer (offset {})",
                    ptr & OFFSET_MASK
                ),
            )),
            None => Err(fault(
                lane,
                "access through a pointer to memory that is not an argument of this launch",
            )),
        }
    }
}

fn access_fault(lane: u32, what: &str, e: AccessError) -> Fault {
    fault(lane, e.describe(what))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Ready,
    Barrier,
    Done,
}

#[derive(Clone, Copy)]
struct Frame {
    func: u32,
    pc: u32,
    reg_base: usize,
    mask_base: usize,
    local_base: u32,
    exec: u64,
    parked: u64,
    entry_exec: u64,
    call: u32,
}

/// One warp's execution state, for warps of `W` lanes.
struct Warp<const W: usize> {
    func: u32,
    pc: u32,
    reg_base: usize,
    mask_base: usize,
    local_base: u32,
    exec: u64,
    /// Lanes that left the current construct by `break`, `continue` or `return`.
    parked: u64,
    /// Lanes that entered the current function.
    entry_exec: u64,
    frames: Vec<Frame>,
    regs: Vec<Lanes<W>>,
    masks: Vec<u64>,
    tid: [Lanes<W>; 3],
    linear: [u32; W],
    status: Status,
}

impl<const W: usize> Warp<W> {
    fn new() -> Warp<W> {
        Warp {
            func: 0,
            pc: 0,
            reg_base: 0,
            mask_base: 0,
            local_base: 0,
            exec: 0,
            parked: 0,
            entry_exec: 0,
            frames: Vec::new(),
            regs: Vec::new(),
            masks: Vec::new(),
            tid: [[0; W]; 3],
            linear: [0; W],
            status: Status::Done,
        }
    }
}

/// A worker's reusable storage.
struct Worker<const W: usize> {
    warps: Vec<Warp<W>>,
    shared: Vec<Box<[AtomicU64]>>,
    dynamic: Box<[AtomicU64]>,
    stacks: Box<[AtomicU64]>,
    /// The block's `cp-async` copies in flight, when the kernel issues any.
    copies: Option<AsyncCopies>,
}

/// Runs a whole launch, with the warp width the program was compiled for.
pub(crate) fn run(launch: &Launch<'_>) -> Result<(), Error> {
    match launch.program.warp_width {
        64 => run_warps::<64>(launch),
        _ => run_warps::<32>(launch),
    }
}

/// Runs a whole launch in warps of `W` lanes.
fn run_warps<const W: usize>(launch: &Launch<'_>) -> Result<(), Error> {
    let [gx, gy, gz] = launch.grid;
    let blocks = gx as usize * gy as usize * gz as usize;
    parallel_blocks(
        blocks,
        launch.workers,
        launch.kernel_name,
        || new_worker::<W>(launch),
        |worker, b| run_block(launch, worker, b),
    )
}

/// Runs `blocks` blocks over up to `workers` OS threads (an atomic counter hands them out),
/// each thread with its own state from `new_worker`; the first error (of the lowest block that
/// failed) stops the launch. Shared by the interpreter and the native code.
pub(crate) fn parallel_blocks<S>(
    blocks: usize,
    workers: usize,
    kernel_name: &str,
    new_worker: impl Fn() -> S + Sync,
    run_block: impl Fn(&mut S, usize) -> Result<(), Error> + Sync,
) -> Result<(), Error> {
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let first_error: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    let workers = workers.clamp(1, blocks.max(1));
    // Blocks are handed out a few at a time: one shared counter bump per block costs as much as
    // a short block (native code runs a 256-thread vector-add block in well under a
    // microsecond), while 8 grabs per worker still balance uneven blocks.
    let chunk = (blocks / (workers * 8)).clamp(1, 256);
    let work = || {
        let mut worker = new_worker();
        'grab: loop {
            let first = next.fetch_add(chunk, Ordering::Relaxed);
            if first >= blocks {
                break;
            }
            for b in first..(first + chunk).min(blocks) {
                if abort.load(Ordering::Relaxed) {
                    break 'grab;
                }
                // A panic here is a bug of the executor or of the printf writer: it fails this
                // launch instead of unwinding through the scoped threads into the caller.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_block(&mut worker, b)
                }))
                .unwrap_or_else(|payload| Err(panic_error(kernel_name, b, payload.as_ref())));
                if let Err(e) = result {
                    abort.store(true, Ordering::Relaxed);
                    let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                    if slot.as_ref().is_none_or(|(at, _)| b < *at) {
                        *slot = Some((b, e));
                    }
                    break 'grab;
                }
            }
        }
    };
    if workers == 1 {
        work();
    } else if !pool::pool().run(workers - 1, &work) {
        // The pool serves another launch (from another host thread): threads of this launch's
        // own. The calling thread is one of the workers: it starts at once, so a launch is
        // never slower than on one worker by more than the spawn, even when the other threads
        // wait for a core on a busy machine.
        std::thread::scope(|s| {
            for _ in 1..workers {
                s.spawn(work);
            }
            work();
        });
    }
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The error of a launch whose block `linear_block` panicked.
fn panic_error(
    kernel_name: &str,
    linear_block: usize,
    payload: &(dyn std::any::Any + Send),
) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    Error::Launch {
        kernel: kernel_name.to_string(),
        message: format!("the executor panicked running block {linear_block}: {what}"),
    }
}

fn new_worker<const W: usize>(launch: &Launch<'_>) -> Worker<W> {
    let prog = launch.program;
    let reachable = reachable_shared_slots(prog, launch.kernel);
    let shared = prog
        .shared_sizes
        .iter()
        .enumerate()
        .map(|(slot, size)| {
            zeroed_words(if reachable.contains(&(slot as u32)) {
                *size
            } else {
                0
            })
        })
        .collect();
    let threads = launch.block.iter().product::<u32>() as usize;
    let copies = async_copies::reaches_cp_async(prog, launch.kernel)
        .then(|| AsyncCopies::new(threads, W as u32, launch.dynamic_shared, &prog.shared_sizes));
    Worker {
        warps: Vec::new(),
        shared,
        dynamic: zeroed_words(launch.dynamic_shared),
        stacks: zeroed_words(launch.stack_bytes * threads),
        copies,
    }
}

/// Static shared slots declared by the kernel or a function it calls.
fn reachable_shared_slots(prog: &Program, kernel: u32) -> Vec<u32> {
    let mut seen = vec![false; prog.functions.len()];
    let mut stack = vec![kernel];
    let mut slots = Vec::new();
    while let Some(f) = stack.pop() {
        if std::mem::replace(&mut seen[f as usize], true) {
            continue;
        }
        slots.extend(&prog.functions[f as usize].shared_slots);
        stack.extend(&prog.functions[f as usize].callees);
    }
    slots
}

fn run_block<const W: usize>(
    launch: &Launch<'_>,
    worker: &mut Worker<W>,
    linear_block: usize,
) -> Result<(), Error> {
    let [gx, gy, _] = launch.grid;
    let block_idx = [
        (linear_block % gx as usize) as u32,
        (linear_block / gx as usize % gy as usize) as u32,
        (linear_block / (gx as usize * gy as usize)) as u32,
    ];
    let [bx, by, bz] = launch.block;
    let threads = (bx * by * bz) as usize;
    let n_warps = threads.div_ceil(W);
    let prog = launch.program;
    let kernel = &prog.functions[launch.kernel as usize];
    if worker.warps.len() < n_warps {
        // Thread indexes depend only on the block shape, which is fixed for the launch.
        for wi in worker.warps.len()..n_warps {
            let mut w = Warp::new();
            for l in 0..W {
                let t = (wi * W + l) as u32;
                w.linear[l] = t;
                w.tid[0][l] = (t % bx) as u64;
                w.tid[1][l] = (t / bx % by) as u64;
                w.tid[2][l] = (t / (bx * by)) as u64;
            }
            worker.warps.push(w);
        }
    }
    for (wi, w) in worker.warps.iter_mut().enumerate().take(n_warps) {
        w.func = launch.kernel;
        w.pc = 0;
        w.reg_base = 0;
        w.mask_base = 0;
        w.local_base = 0;
        w.parked = 0;
        w.frames.clear();
        w.status = Status::Ready;
        let first = wi * W;
        let exec = if threads - first >= W {
            full_mask::<W>()
        } else {
            (1u64 << (threads - first)) - 1
        };
        w.exec = exec;
        w.entry_exec = exec;
        let need = kernel.n_regs as usize;
        if w.regs.len() < need {
            w.regs.resize(need, [0; W]);
        }
        if w.masks.len() < kernel.n_masks as usize {
            w.masks.resize(kernel.n_masks as usize, 0);
        }
        for &(reg, bits) in &launch.params {
            w.regs[reg as usize] = [bits; W];
        }
    }
    let memory = Memory {
        launch: &launch.regions,
        shared: &worker.shared,
        shared_sizes: &prog.shared_sizes,
        dynamic: Region {
            words: &worker.dynamic,
            len: launch.dynamic_shared,
        },
        stacks: &worker.stacks,
        stack_bytes: launch.stack_bytes,
    };
    if let Some(copies) = &worker.copies {
        copies.reset();
    }
    let ctx = BlockCtx {
        launch,
        memory,
        block_idx,
        copies: worker.copies.as_ref(),
        warp_first_thread: Cell::new(0),
    };
    loop {
        for w in worker.warps[..n_warps].iter_mut() {
            if w.status == Status::Ready {
                ctx.warp_first_thread.set(w.linear[0]);
                match ctx.run_warp(w) {
                    Ok(s) => w.status = s,
                    Err(f) => {
                        let func = &prog.functions[w.func as usize];
                        let span = func
                            .spans
                            .get(w.pc as usize)
                            .cloned()
                            .unwrap_or_else(chorus_lang::Span::generated);
                        let lane = f.lane as usize;
                        return Err(Error::Fault {
                            kernel: launch.kernel_name.to_string(),
                            block: block_idx,
                            thread: [
                                w.tid[0][lane] as u32,
                                w.tid[1][lane] as u32,
                                w.tid[2][lane] as u32,
                            ],
                            span,
                            message: f.message,
                        });
                    }
                }
            }
        }
        let mut all_done = true;
        for w in worker.warps[..n_warps].iter_mut() {
            if w.status == Status::Barrier {
                w.status = Status::Ready;
                all_done = false;
            }
        }
        if all_done {
            return Ok(());
        }
        if let Some(copies) = ctx.copies {
            copies.barrier();
        }
    }
}

struct BlockCtx<'a> {
    launch: &'a Launch<'a>,
    memory: Memory<'a>,
    block_idx: [u32; 3],
    /// The block's `cp-async` copies in flight, when the kernel issues any.
    copies: Option<&'a AsyncCopies>,
    /// The linear index of the running warp's lane 0 (lane `l` is thread this + `l`).
    warp_first_thread: Cell<u32>,
}
