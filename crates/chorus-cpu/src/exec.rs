//! The SIMT interpreter: runs a block warp by warp, each instruction over 32 lanes under the
//! warp's execution mask, and a launch's blocks in parallel over the host's cores.

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
use chorus_lang::ir::AtomicOp;
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
    exec: u32,
    parked: u32,
    entry_exec: u32,
    call: u32,
}

/// One warp's execution state.
struct Warp {
    func: u32,
    pc: u32,
    reg_base: usize,
    mask_base: usize,
    local_base: u32,
    exec: u32,
    /// Lanes that left the current construct by `break`, `continue` or `return`.
    parked: u32,
    /// Lanes that entered the current function.
    entry_exec: u32,
    frames: Vec<Frame>,
    regs: Vec<Lanes>,
    masks: Vec<u32>,
    tid: [Lanes; 3],
    linear: [u32; 32],
    status: Status,
}

impl Warp {
    fn new() -> Warp {
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
            tid: [[0; 32]; 3],
            linear: [0; 32],
            status: Status::Done,
        }
    }
}

/// A worker's reusable storage.
struct Worker {
    warps: Vec<Warp>,
    shared: Vec<Box<[AtomicU64]>>,
    dynamic: Box<[AtomicU64]>,
    stacks: Box<[AtomicU64]>,
}

/// Runs a whole launch.
pub(crate) fn run(launch: &Launch<'_>) -> Result<(), Error> {
    let [gx, gy, gz] = launch.grid;
    let blocks = gx as usize * gy as usize * gz as usize;
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let first_error: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    let work = || {
        let mut worker = new_worker(launch);
        loop {
            if abort.load(Ordering::Relaxed) {
                break;
            }
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            // A panic here is a bug of the executor or of the printf writer: it fails this
            // launch instead of unwinding through the scoped threads into the caller.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_block(launch, &mut worker, b)
            }))
            .unwrap_or_else(|payload| Err(panic_error(launch, b, payload.as_ref())));
            if let Err(e) = result {
                abort.store(true, Ordering::Relaxed);
                let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().is_none_or(|(at, _)| b < *at) {
                    *slot = Some((b, e));
                }
                break;
            }
        }
    };
    let workers = launch.workers.clamp(1, blocks.max(1));
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The error of a launch whose block `linear_block` panicked.
fn panic_error(
    launch: &Launch<'_>,
    linear_block: usize,
    payload: &(dyn std::any::Any + Send),
) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    Error::Launch {
        kernel: launch.kernel_name.to_string(),
        message: format!("the executor panicked running block {linear_block}: {what}"),
    }
}

fn new_worker(launch: &Launch<'_>) -> Worker {
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
    Worker {
        warps: Vec::new(),
        shared,
        dynamic: zeroed_words(launch.dynamic_shared),
        stacks: zeroed_words(launch.stack_bytes * threads),
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

fn run_block(launch: &Launch<'_>, worker: &mut Worker, linear_block: usize) -> Result<(), Error> {
    let [gx, gy, _] = launch.grid;
    let block_idx = [
        (linear_block % gx as usize) as u32,
        (linear_block / gx as usize % gy as usize) as u32,
        (linear_block / (gx as usize * gy as usize)) as u32,
    ];
    let [bx, by, bz] = launch.block;
    let threads = (bx * by * bz) as usize;
    let n_warps = threads.div_ceil(32);
    let prog = launch.program;
    let kernel = &prog.functions[launch.kernel as usize];
    if worker.warps.len() < n_warps {
        // Thread indexes depend only on the block shape, which is fixed for the launch.
        for wi in worker.warps.len()..n_warps {
            let mut w = Warp::new();
            for l in 0..32 {
                let t = (wi * 32 + l) as u32;
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
        let first = wi * 32;
        let exec = if threads - first >= 32 {
            u32::MAX
        } else {
            (1u32 << (threads - first)) - 1
        };
        w.exec = exec;
        w.entry_exec = exec;
        let need = kernel.n_regs as usize;
        if w.regs.len() < need {
            w.regs.resize(need, [0; 32]);
        }
        if w.masks.len() < kernel.n_masks as usize {
            w.masks.resize(kernel.n_masks as usize, 0);
        }
        for &(reg, bits) in &launch.params {
            w.regs[reg as usize] = [bits; 32];
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
    let ctx = BlockCtx {
        launch,
        memory,
        block_idx,
    };
    loop {
        for w in worker.warps[..n_warps].iter_mut() {
            if w.status == Status::Ready {
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
    }
}

struct BlockCtx<'a> {
    launch: &'a Launch<'a>,
    memory: Memory<'a>,
    block_idx: [u32; 3],
}

impl BlockCtx<'_> {
    /// Runs `w` until it finishes, reaches a barrier, or faults (the warp's `pc` is then the
    /// faulting instruction).
    fn run_warp(&self, w: &mut Warp) -> Result<Status, Fault> {
        let prog = self.launch.program;
        let mut func = &prog.functions[w.func as usize];
        loop {
            let pc = w.pc as usize;
            w.pc += 1;
            let rb = w.reg_base;
            let mb = w.mask_base;
            let exec = w.exec;
            macro_rules! reg {
                ($r:expr) => {
                    w.regs[rb + $r as usize]
                };
            }
            let result: Result<(), Fault> = match &func.code[pc] {
                Op::Const { dst, bits } => {
                    reg!(*dst) = [*bits; 32];
                    Ok(())
                }
                Op::Copy { dst, src } => {
                    let (d, s) = (rb + *dst as usize, rb + *src as usize);
                    w.regs.copy_within(s..s + 1, d);
                    Ok(())
                }
                Op::CopyMasked { dst, src } => {
                    let (d, s) = (rb + *dst as usize, rb + *src as usize);
                    if exec == u32::MAX {
                        w.regs.copy_within(s..s + 1, d);
                    } else {
                        let s = w.regs[s];
                        let d = &mut w.regs[d];
                        for l in 0..32 {
                            let keep = (((exec >> l) & 1) as u64).wrapping_sub(1);
                            d[l] = (s[l] & !keep) | (d[l] & keep);
                        }
                    }
                    Ok(())
                }
                Op::Select { dst, cond, a, b } => {
                    let (c, x, y) = (reg!(*cond), reg!(*a), reg!(*b));
                    let d = &mut reg!(*dst);
                    for l in 0..32 {
                        d[l] = if c[l] != 0 { x[l] } else { y[l] };
                    }
                    Ok(())
                }
                Op::Index { dst, source } => {
                    reg!(*dst) = match *source {
                        IndexSource::ThreadIdx(a) => w.tid[a],
                        IndexSource::BlockIdx(a) => [self.block_idx[a] as u64; 32],
                        IndexSource::BlockDim(a) => [self.launch.block[a] as u64; 32],
                        IndexSource::GridDim(a) => [self.launch.grid[a] as u64; 32],
                        IndexSource::LaneId => std::array::from_fn(|l| l as u64),
                    };
                    Ok(())
                }
                Op::Unary { op, kind, dst, a } => {
                    let (dst, a) = (rb + *dst as usize, rb + *a as usize);
                    with2(&mut w.regs, dst, a, |x, d| {
                        unary_lanes(*op, *kind, x, d, exec)
                    })
                }
                Op::Binary {
                    op,
                    kind,
                    dst,
                    a,
                    b,
                } => {
                    let (dst, a, b) = (rb + *dst as usize, rb + *a as usize, rb + *b as usize);
                    with3(&mut w.regs, dst, a, b, |x, y, d| {
                        binary_lanes(*op, *kind, x, y, d, exec)
                    })
                }
                Op::Fma { kind, dst, a, b, c } => {
                    let (x, y, z) = (reg!(*a), reg!(*b), reg!(*c));
                    let d = &mut reg!(*dst);
                    for l in 0..32 {
                        d[l] = fma(*kind, x[l], y[l], z[l]);
                    }
                    Ok(())
                }
                Op::Math1 { f, kind, dst, a } => {
                    let x = reg!(*a);
                    let d = &mut reg!(*dst);
                    for l in 0..32 {
                        d[l] = math1(*f, *kind, x[l]);
                    }
                    Ok(())
                }
                Op::Math2 { f, kind, dst, a, b } => {
                    let (x, y) = (reg!(*a), reg!(*b));
                    let d = &mut reg!(*dst);
                    for l in 0..32 {
                        d[l] = math2(*f, *kind, x[l], y[l]);
                    }
                    Ok(())
                }
                Op::Convert { from, to, dst, src } => {
                    let (dst, src) = (rb + *dst as usize, rb + *src as usize);
                    with2(&mut w.regs, dst, src, |x, d| {
                        for l in 0..32 {
                            d[l] = convert(*from, *to, x[l]);
                        }
                        Ok(())
                    })
                }
                Op::PtrIndex {
                    dst,
                    base,
                    index,
                    index_kind,
                    stride,
                } => {
                    let (dst, base, index) = (
                        rb + *dst as usize,
                        rb + *base as usize,
                        rb + *index as usize,
                    );
                    let stride = *stride;
                    let signed = index_kind.is_signed();
                    with3(&mut w.regs, dst, base, index, |p, i, d| {
                        if signed && stride > 0 && (stride as u64).is_power_of_two() {
                            // The common `a[i]` case: a shift is the same saturating product,
                            // and the loop vectorises.
                            let shift = stride.trailing_zeros();
                            for l in 0..32 {
                                d[l] = offset_pointer(p[l], shifted_index(i[l] as i64, shift));
                            }
                        } else if signed {
                            for l in 0..32 {
                                d[l] = offset_pointer(p[l], scaled_index(i[l] as i64, stride));
                            }
                        } else {
                            for l in 0..32 {
                                let index = i[l].min(i64::MAX as u64) as i64;
                                d[l] = offset_pointer(p[l], scaled_index(index, stride));
                            }
                        }
                        Ok(())
                    })
                }
                Op::PtrAdd { dst, base, bytes } => {
                    let p = reg!(*base);
                    let d = &mut reg!(*dst);
                    for l in 0..32 {
                        d[l] = offset_pointer(p[l], *bytes);
                    }
                    Ok(())
                }
                Op::LocalAddr { dst, offset } => {
                    let base = w.local_base as u64 + *offset as u64;
                    let linear = w.linear;
                    let d = &mut reg!(*dst);
                    for l in 0..32 {
                        d[l] = encode(THREAD_LOCAL_BASE + linear[l], base);
                    }
                    Ok(())
                }
                Op::Load {
                    dst,
                    addr,
                    kind,
                    offset,
                } => {
                    let (dst, addr) = (rb + *dst as usize, rb + *addr as usize);
                    with2(&mut w.regs, dst, addr, |a, d| {
                        self.load_lanes(a, *kind, *offset, d, exec)
                    })
                }
                Op::Store {
                    addr,
                    src,
                    kind,
                    offset,
                } => self.store_lanes(&reg!(*addr), &reg!(*src), *kind, *offset, exec),
                Op::Jump { target } => {
                    w.pc = *target;
                    Ok(())
                }
                Op::IfBegin {
                    cond,
                    slot,
                    else_target,
                } => {
                    let c = mask_of(&reg!(*cond)) & exec;
                    w.masks[mb + *slot as usize] = exec;
                    w.masks[mb + *slot as usize + 1] = exec & !c;
                    w.exec = c;
                    if c == 0 {
                        w.pc = *else_target;
                    }
                    Ok(())
                }
                Op::Else { slot, end_target } => {
                    w.exec = w.masks[mb + *slot as usize + 1];
                    if w.exec == 0 {
                        w.pc = *end_target;
                    }
                    Ok(())
                }
                Op::EndIf { slot } => {
                    w.exec = w.masks[mb + *slot as usize] & !w.parked;
                    Ok(())
                }
                Op::LoopBegin { slot } | Op::SwitchBegin { slot } => {
                    let s = mb + *slot as usize;
                    w.masks[s] = exec;
                    w.masks[s + 1] = 0;
                    w.masks[s + 2] = if matches!(func.code[pc], Op::SwitchBegin { .. }) {
                        exec
                    } else {
                        0
                    };
                    Ok(())
                }
                Op::LoopTest { cond, exit } => {
                    if let Some(c) = cond {
                        w.exec &= mask_of(&reg!(*c));
                    }
                    if w.exec == 0 {
                        w.pc = *exit;
                    }
                    Ok(())
                }
                Op::LoopContinue { slot } => {
                    let s = mb + *slot as usize + 2;
                    let back = w.masks[s];
                    w.exec |= back;
                    w.parked &= !back;
                    w.masks[s] = 0;
                    Ok(())
                }
                Op::LoopEnd { slot } | Op::SwitchEnd { slot } => {
                    let s = mb + *slot as usize;
                    w.parked &= !w.masks[s + 1];
                    w.exec = w.masks[s] & !w.parked;
                    Ok(())
                }
                Op::Break { slot } => {
                    w.masks[mb + *slot as usize + 1] |= exec;
                    w.parked |= exec;
                    w.exec = 0;
                    Ok(())
                }
                Op::Continue { slot } => {
                    w.masks[mb + *slot as usize + 2] |= exec;
                    w.parked |= exec;
                    w.exec = 0;
                    Ok(())
                }
                Op::Case {
                    slot,
                    scrutinee,
                    values,
                    next,
                } => {
                    let s = mb + *slot as usize + 2;
                    let sc = reg!(*scrutinee);
                    let wanted =
                        &prog.case_values[values.0 as usize..(values.0 + values.1) as usize];
                    let mut m = 0;
                    for l in lanes_of(w.masks[s]) {
                        if wanted.contains(&sc[l as usize]) {
                            m |= 1 << l;
                        }
                    }
                    w.masks[s] &= !m;
                    w.exec = m;
                    if m == 0 {
                        w.pc = *next;
                    }
                    Ok(())
                }
                Op::Default { slot } => {
                    let s = mb + *slot as usize + 2;
                    w.exec = w.masks[s];
                    w.masks[s] = 0;
                    Ok(())
                }
                Op::Return { value } => {
                    if let Some(v) = value {
                        for i in 0..func.ret_leaves {
                            let s = reg!(*v + i);
                            let d = &mut reg!(func.ret_reg + i);
                            for l in lanes_of(exec) {
                                d[l as usize] = s[l as usize];
                            }
                        }
                    }
                    w.parked |= exec;
                    w.exec = 0;
                    if w.parked & w.entry_exec == w.entry_exec {
                        // Every lane has returned: go straight to the end.
                        w.pc = (func.code.len() - 1) as u32;
                    }
                    Ok(())
                }
                Op::Call { index } => {
                    if exec == 0 {
                        continue;
                    }
                    let site = &prog.calls[*index as usize];
                    if w.frames.len() >= MAX_CALL_DEPTH {
                        return Err(fault(
                            exec.trailing_zeros(),
                            format!("device-function calls nested deeper than {MAX_CALL_DEPTH}"),
                        ));
                    }
                    let callee = &prog.functions[site.function as usize];
                    let reg_base = rb + func.n_regs as usize;
                    let mask_base = mb + func.n_masks as usize;
                    let local_base = w.local_base + func.local_bytes;
                    if callee.local_bytes > 0
                        && (local_base + callee.local_bytes) as usize > self.launch.stack_bytes
                    {
                        return Err(fault(exec.trailing_zeros(), "local-memory stack overflow"));
                    }
                    if w.regs.len() < reg_base + callee.n_regs as usize {
                        w.regs.resize(reg_base + callee.n_regs as usize, [0; 32]);
                    }
                    if w.masks.len() < mask_base + callee.n_masks as usize {
                        w.masks.resize(mask_base + callee.n_masks as usize, 0);
                    }
                    for &(src, dst) in &site.args {
                        w.regs[reg_base + dst as usize] = w.regs[rb + src as usize];
                    }
                    w.frames.push(Frame {
                        func: w.func,
                        pc: w.pc,
                        reg_base: rb,
                        mask_base: mb,
                        local_base: w.local_base,
                        exec,
                        parked: w.parked,
                        entry_exec: w.entry_exec,
                        call: *index,
                    });
                    w.func = site.function;
                    w.pc = 0;
                    w.reg_base = reg_base;
                    w.mask_base = mask_base;
                    w.local_base = local_base;
                    w.parked = 0;
                    w.entry_exec = exec;
                    func = callee;
                    Ok(())
                }
                Op::End => {
                    let Some(frame) = w.frames.pop() else {
                        return Ok(Status::Done);
                    };
                    let callee = func;
                    let callee_base = w.reg_base;
                    w.func = frame.func;
                    w.pc = frame.pc;
                    w.reg_base = frame.reg_base;
                    w.mask_base = frame.mask_base;
                    w.local_base = frame.local_base;
                    w.exec = frame.exec;
                    w.parked = frame.parked;
                    w.entry_exec = frame.entry_exec;
                    func = &prog.functions[w.func as usize];
                    if let Some((dest, n)) = prog.calls[frame.call as usize].dest {
                        for i in 0..n as usize {
                            w.regs[frame.reg_base + dest as usize + i] =
                                w.regs[callee_base + callee.ret_reg as usize + i];
                        }
                    }
                    Ok(())
                }
                Op::SyncThreads => return Ok(Status::Barrier),
                Op::Fence => {
                    std::sync::atomic::fence(Ordering::SeqCst);
                    Ok(())
                }
                Op::Shfl {
                    mode,
                    dst,
                    value,
                    lane,
                    width,
                    mask,
                } => {
                    let (v, src, wd, m) = (reg!(*value), reg!(*lane), reg!(*width), reg!(*mask));
                    let d = &mut reg!(*dst);
                    shuffle(*mode, &v, &src, &wd, &m, exec, d);
                    Ok(())
                }
                Op::Vote {
                    op,
                    dst,
                    mask,
                    pred,
                } => {
                    let participating = exec & first_active(&reg!(*mask), exec) as u32;
                    let p = mask_of(&reg!(*pred)) & participating;
                    let r = match op {
                        VoteOp::Ballot => p as u64,
                        VoteOp::All => (p == participating) as u64,
                        VoteOp::Any => (p != 0) as u64,
                    };
                    reg!(*dst) = [r; 32];
                    Ok(())
                }
                Op::ActiveMask { dst } => {
                    reg!(*dst) = [exec as u64; 32];
                    Ok(())
                }
                Op::MatchAny { dst, mask, value } => {
                    let participating = exec & first_active(&reg!(*mask), exec) as u32;
                    let v = reg!(*value);
                    let d = &mut reg!(*dst);
                    for l in lanes_of(exec) {
                        let mut m = 0u32;
                        for j in lanes_of(participating) {
                            if v[j as usize] == v[l as usize] {
                                m |= 1 << j;
                            }
                        }
                        d[l as usize] = m as u64;
                    }
                    Ok(())
                }
                Op::MatchAll {
                    dst,
                    mask,
                    value,
                    pred,
                } => {
                    let participating = exec & first_active(&reg!(*mask), exec) as u32;
                    let v = reg!(*value);
                    let first = v[participating.trailing_zeros().min(31) as usize];
                    let all = lanes_of(participating).all(|j| v[j as usize] == first);
                    reg!(*dst) = [if all { participating as u64 } else { 0 }; 32];
                    let p = reg!(*pred);
                    let ones = [all as u64; 32];
                    self.store_lanes(&p, &ones, Kind::I32, 0, exec)
                }
                Op::Reduce {
                    op,
                    kind,
                    dst,
                    mask,
                    value,
                } => {
                    let participating = exec & first_active(&reg!(*mask), exec) as u32;
                    let v = reg!(*value);
                    let r = warp_reduce(*op, *kind, &v, participating);
                    reg!(*dst) = [r; 32];
                    Ok(())
                }
                Op::Atomic {
                    op,
                    kind,
                    dst,
                    addr,
                    a,
                    b,
                } => {
                    let (p, x, y) = (reg!(*addr), reg!(*a), reg!(*b));
                    let mut d = reg!(*dst);
                    let r = self.atomic_lanes(*op, *kind, &p, &x, &y, &mut d, exec);
                    reg!(*dst) = d;
                    r
                }
                Op::CurandInit {
                    seed,
                    subsequence,
                    offset,
                    state,
                } => {
                    let (s, q, o, p) =
                        (reg!(*seed), reg!(*subsequence), reg!(*offset), reg!(*state));
                    let mut r = Ok(());
                    for l in lanes_of(exec) {
                        let i = l as usize;
                        let st = curand::State::init(s[i], q[i], o[i]);
                        r = self.write_curand(p[i], l, st);
                        if r.is_err() {
                            break;
                        }
                    }
                    r
                }
                Op::CurandUniform { dst, state, double }
                | Op::CurandNormal { dst, state, double } => {
                    let normal = matches!(func.code[pc], Op::CurandNormal { .. });
                    let p = reg!(*state);
                    let mut d = reg!(*dst);
                    let mut r = Ok(());
                    for l in lanes_of(exec) {
                        let i = l as usize;
                        match self.read_curand(p[i], l) {
                            Ok(mut st) => {
                                d[i] = match (normal, *double) {
                                    (false, false) => st.uniform().to_bits() as u64,
                                    (false, true) => st.uniform_double().to_bits(),
                                    (true, false) => st.normal().to_bits() as u64,
                                    (true, true) => st.normal_double().to_bits(),
                                };
                                r = self.write_curand(p[i], l, st);
                            }
                            Err(e) => r = Err(e),
                        }
                        if r.is_err() {
                            break;
                        }
                    }
                    reg!(*dst) = d;
                    r
                }
                Op::Printf { index } => self.printf(&prog.printfs[*index as usize], w, exec),
            };
            if let Err(f) = result {
                w.pc = pc as u32;
                return Err(f);
            }
        }
    }

    #[inline(always)]
    fn load_lanes(
        &self,
        addr: &Lanes,
        kind: Kind,
        offset: u32,
        d: &mut Lanes,
        exec: u32,
    ) -> Result<(), Fault> {
        match kind.size() {
            1 => self.load_sized::<1>(addr, offset, d, exec)?,
            2 => self.load_sized::<2>(addr, offset, d, exec)?,
            4 => self.load_sized::<4>(addr, offset, d, exec)?,
            _ => self.load_sized::<8>(addr, offset, d, exec)?,
        }
        if kind.is_signed() || matches!(kind, Kind::Bool | Kind::Fp4) {
            for v in d.iter_mut() {
                *v = from_raw(kind, *v);
            }
        }
        Ok(())
    }

    /// The region of lane `l`'s pointer `p`, reusing the previous lane's when it is the same.
    #[inline(always)]
    fn lane_region<'r>(
        &'r self,
        p: u64,
        l: u32,
        cached: &mut Option<(u32, Region<'r>)>,
    ) -> Result<Region<'r>, Fault> {
        let id = pointer_id(p);
        match *cached {
            Some((cid, r)) if cid == id => Ok(r),
            _ => {
                let (r, _) = self.memory.resolve(p, l)?;
                *cached = Some((id, r));
                Ok(r)
            }
        }
    }

    /// When the active lanes' pointers are consecutive elements of size `N` (lane `l` at
    /// `first + l * N`, the coalesced `a[base + lane]` pattern) inside one allocation and
    /// aligned: that allocation and the byte offset lane 0's element would have (lane `l`'s is
    /// that plus `l * N`). Bounds and alignment are then checked once for the whole warp.
    #[inline(always)]
    fn contiguous_region<const N: usize>(
        &self,
        addr: &Lanes,
        offset: u32,
        exec: u32,
    ) -> Option<(Region<'_>, u64)> {
        if exec == 0 {
            return None;
        }
        let (first, last) = (exec.trailing_zeros(), 31 - exec.leading_zeros());
        // Lane 0's pointer if the pattern holds (wrapping: lane 0 may be inactive).
        let base = addr[first as usize].wrapping_sub(first as u64 * N as u64);
        let mut diff = 0;
        if exec == u32::MAX {
            for (l, p) in addr.iter().enumerate() {
                diff |= p ^ base.wrapping_add((l * N) as u64);
            }
        } else {
            for (l, p) in addr.iter().enumerate() {
                let active = 0u64.wrapping_sub(((exec >> l) & 1) as u64);
                diff |= (p ^ base.wrapping_add((l * N) as u64)) & active;
            }
        }
        if diff != 0 {
            return None;
        }
        let start = (addr[first as usize] & OFFSET_MASK) + offset as u64;
        let end = start + (last - first) as u64 * N as u64 + N as u64;
        let region = self.memory.region(pointer_id(addr[first as usize]))?;
        // `end` within the allocation (below 2^40) also means no active lane's offset carried
        // into the allocation id.
        (start.is_multiple_of(N as u64) && end <= region.len as u64)
            .then(|| (region, start.wrapping_sub(first as u64 * N as u64)))
    }

    /// For a warp whose active pointers all fall, aligned, inside one allocation (gathers
    /// within one buffer): that allocation, checked once for all lanes.
    #[inline(always)]
    fn uniform_region<const N: usize>(
        &self,
        addr: &Lanes,
        offset: u32,
        exec: u32,
    ) -> Option<Region<'_>> {
        if exec == 0 {
            return None;
        }
        let id = addr[exec.trailing_zeros() as usize] >> OFFSET_BITS;
        let mut same = true;
        let mut max = 0;
        let mut bits = 0;
        for (l, p) in addr.iter().enumerate() {
            let active = (exec >> l) & 1 != 0;
            let off = if active {
                (p & OFFSET_MASK) + offset as u64
            } else {
                0
            };
            same &= !active || p >> OFFSET_BITS == id;
            max = max.max(off);
            bits |= off;
        }
        let region = self.memory.region(id as u32)?;
        (same && bits & (N as u64 - 1) == 0 && max + N as u64 <= region.len as u64)
            .then_some(region)
    }

    #[inline(always)]
    fn load_sized<const N: usize>(
        &self,
        addr: &Lanes,
        offset: u32,
        d: &mut Lanes,
        exec: u32,
    ) -> Result<(), Fault> {
        if let Some((region, start)) = self.contiguous_region::<N>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            if exec == u32::MAX {
                for (l, d) in d.iter_mut().enumerate() {
                    *d = region.load_raw_unchecked::<N>(start + (l * N) as u64);
                }
            } else {
                for l in lanes_of(exec) {
                    d[l as usize] =
                        region.load_raw_unchecked::<N>(start.wrapping_add(l as u64 * N as u64));
                }
            }
            return Ok(());
        }
        if let Some(region) = self.uniform_region::<N>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            if exec == u32::MAX {
                for l in 0..32 {
                    d[l] = region.load_raw_unchecked::<N>((addr[l] & OFFSET_MASK) + offset as u64);
                }
            } else {
                for l in lanes_of(exec) {
                    let l = l as usize;
                    d[l] = region.load_raw_unchecked::<N>((addr[l] & OFFSET_MASK) + offset as u64);
                }
            }
            return Ok(());
        }
        let mut cached = None;
        for l in lanes_of(exec) {
            let p = addr[l as usize];
            let region = self.lane_region(p, l, &mut cached)?;
            let off = (p & OFFSET_MASK) + offset as u64;
            d[l as usize] = region
                .load_raw::<N>(off)
                .map_err(|e| access_fault(l, "read", e))?;
        }
        Ok(())
    }

    #[inline(always)]
    fn store_lanes(
        &self,
        addr: &Lanes,
        src: &Lanes,
        kind: Kind,
        offset: u32,
        exec: u32,
    ) -> Result<(), Fault> {
        match kind.size() {
            1 => self.store_sized::<1>(addr, src, offset, exec),
            2 => self.store_sized::<2>(addr, src, offset, exec),
            4 => self.store_sized::<4>(addr, src, offset, exec),
            _ => self.store_sized::<8>(addr, src, offset, exec),
        }
    }

    #[inline(always)]
    fn store_sized<const N: usize>(
        &self,
        addr: &Lanes,
        src: &Lanes,
        offset: u32,
        exec: u32,
    ) -> Result<(), Fault> {
        if let Some((region, start)) = self.contiguous_region::<N>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            if exec == u32::MAX {
                for (l, v) in src.iter().enumerate() {
                    region.store_raw_unchecked::<N>(start + (l * N) as u64, *v);
                }
            } else {
                for l in lanes_of(exec) {
                    region.store_raw_unchecked::<N>(
                        start.wrapping_add(l as u64 * N as u64),
                        src[l as usize],
                    );
                }
            }
            return Ok(());
        }
        if let Some(region) = self.uniform_region::<N>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            for l in lanes_of(exec) {
                let l = l as usize;
                region.store_raw_unchecked::<N>((addr[l] & OFFSET_MASK) + offset as u64, src[l]);
            }
            return Ok(());
        }
        let mut cached = None;
        for l in lanes_of(exec) {
            let p = addr[l as usize];
            let region = self.lane_region(p, l, &mut cached)?;
            let off = (p & OFFSET_MASK) + offset as u64;
            region
                .store_raw::<N>(off, src[l as usize])
                .map_err(|e| access_fault(l, "write", e))?;
        }
        Ok(())
    }

    fn read_curand(&self, ptr: u64, lane: u32) -> Result<curand::State, Fault> {
        let (region, off) = self.memory.resolve(ptr, lane)?;
        let mut bytes = [0u8; 48];
        for i in 0..6 {
            let word = region
                .load(off + 8 * i, Kind::U64)
                .map_err(|e| access_fault(lane, "read of a cuRAND state", e))?;
            bytes[8 * i as usize..8 * i as usize + 8].copy_from_slice(&word.to_le_bytes());
        }
        Ok(curand::State::from_bytes(&bytes))
    }

    fn write_curand(&self, ptr: u64, lane: u32, state: curand::State) -> Result<(), Fault> {
        let (region, off) = self.memory.resolve(ptr, lane)?;
        let bytes = state.to_bytes();
        for i in 0..6usize {
            let word = u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"));
            region
                .store(off + 8 * i as u64, Kind::U64, word)
                .map_err(|e| access_fault(lane, "write of a cuRAND state", e))?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic_lanes(
        &self,
        op: AtomicOp,
        kind: Kind,
        p: &Lanes,
        x: &Lanes,
        y: &Lanes,
        d: &mut Lanes,
        exec: u32,
    ) -> Result<(), Fault> {
        for l in lanes_of(exec) {
            let i = l as usize;
            let (region, off) = self.memory.resolve(p[i], l)?;
            let old = if kind.size() == 2 {
                let (cell, shift) = region
                    .atomic16(off)
                    .map_err(|e| access_fault(l, "atomic", e))?;
                atomic16(cell, shift, op, kind, x[i] as u16, y[i] as u16) as u64
            } else if kind.size() == 4 {
                let cell = region
                    .atomic32(off)
                    .map_err(|e| access_fault(l, "atomic", e))?;
                atomic32(cell, op, kind, x[i] as u32, y[i] as u32) as u64
            } else {
                let cell = region
                    .atomic64(off)
                    .map_err(|e| access_fault(l, "atomic", e))?;
                atomic64(cell, op, kind, x[i], y[i])
            };
            d[i] = from_raw(kind, old);
        }
        Ok(())
    }

    fn printf(&self, site: &PrintfSite, w: &Warp, exec: u32) -> Result<(), Fault> {
        let mut text = String::new();
        for l in lanes_of(exec) {
            let mut args = Vec::with_capacity(site.args.len());
            for (k, a) in site.args.iter().enumerate() {
                let bits = w.regs[w.reg_base + a.reg as usize][l as usize];
                let arg = if a.is_byte_pointer && site.format.conversion(k) == Some('s') {
                    printf::Arg::Str(self.c_string(bits, l)?)
                } else if a.kind == Kind::Ptr {
                    printf::Arg::Pointer(bits)
                } else if a.kind.is_float() {
                    printf::Arg::Float(to_f64(a.kind, bits))
                } else if a.kind.is_signed() {
                    printf::Arg::Int(bits as i64)
                } else {
                    printf::Arg::UInt(bits)
                };
                args.push(arg);
            }
            text.push_str(&site.format.render(&args));
        }
        let mut out = self.launch.output.lock().unwrap_or_else(|p| p.into_inner());
        // Output errors (a closed stdout) are not the kernel's fault; CUDA drops them too.
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        Ok(())
    }

    fn c_string(&self, ptr: u64, lane: u32) -> Result<String, Fault> {
        let (region, mut off) = self.memory.resolve(ptr, lane)?;
        let mut bytes = Vec::new();
        loop {
            let b = region
                .load(off, Kind::U8)
                .map_err(|e| access_fault(lane, "read of a %s string", e))?;
            if b == 0 {
                break;
            }
            bytes.push(b as u8);
            off += 1;
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Runs `f(source, destination)` on two registers of `regs` without copying either (a copy
/// of the source is made only when they are the same register).
#[inline(always)]
fn with2<R>(
    regs: &mut [Lanes],
    dst: usize,
    a: usize,
    f: impl FnOnce(&Lanes, &mut Lanes) -> R,
) -> R {
    if dst == a {
        let x = regs[a];
        return f(&x, &mut regs[dst]);
    }
    let [d, x] = regs
        .get_disjoint_mut([dst, a])
        .expect("registers within the frame");
    f(x, d)
}

/// Runs `f(a, b, destination)` on three registers of `regs`, copying only on aliasing.
#[inline(always)]
fn with3<R>(
    regs: &mut [Lanes],
    dst: usize,
    a: usize,
    b: usize,
    f: impl FnOnce(&Lanes, &Lanes, &mut Lanes) -> R,
) -> R {
    if dst == a || dst == b {
        let (x, y) = (regs[a], regs[b]);
        return f(&x, &y, &mut regs[dst]);
    }
    if a == b {
        let [d, x] = regs
            .get_disjoint_mut([dst, a])
            .expect("registers within the frame");
        return f(x, x, d);
    }
    let [d, x, y] = regs
        .get_disjoint_mut([dst, a, b])
        .expect("registers within the frame");
    f(x, y, d)
}
