//! The SIMT interpreter: runs a block warp by warp, each instruction over 32 lanes under the
//! warp's execution mask, and a launch's blocks in parallel over the host's cores.

use crate::bytecode::*;
use crate::curand;
use crate::error::Error;
use crate::memory::{
    AccessError, DYNAMIC_SHARED_ID, OFFSET_BITS, OFFSET_MASK, Region, STATIC_SHARED_BASE,
    THREAD_LOCAL_BASE, encode, offset_pointer, pointer_id, zeroed_words,
};
use crate::printf;
use crate::value::{Kind, canon, convert, from_f32, from_raw, to_f32, to_f64};
use chorus_lang::ir::{AtomicOp, MathFn, WarpReduceOp};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Calls deeper than this fault (recursion without a base case).
pub(crate) const MAX_CALL_DEPTH: usize = 256;

type Lanes = [u64; 32];

/// A thread's failure, before it is given its kernel, block and thread.
pub(crate) struct Fault {
    lane: u32,
    message: String,
}

fn fault(lane: u32, message: impl Into<String>) -> Fault {
    Fault {
        lane,
        message: message.into(),
    }
}

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

#[inline(always)]
fn lanes_of(mut m: u32) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros();
            m &= m - 1;
            Some(l)
        }
    })
}

/// The lanes of `r` that are non-zero, as a mask.
#[inline(always)]
fn mask_of(r: &Lanes) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // Two lanes per SSE2 compare (a lane is zero when both its halves are), one
        // `movmskpd` each: about a third of the scalar loop's instructions.
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned loads read whole lanes
        // of `r`.
        unsafe {
            let zero = _mm_setzero_si128();
            let mut zeros = 0u32;
            for pair in 0..16 {
                let v = _mm_loadu_si128(r.as_ptr().add(2 * pair).cast());
                let eq = _mm_cmpeq_epi32(v, zero);
                let both = _mm_and_si128(eq, _mm_shuffle_epi32::<0b10_11_00_01>(eq));
                zeros |= (_mm_movemask_pd(_mm_castsi128_pd(both)) as u32) << (2 * pair);
            }
            !zeros
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0;
        for (l, v) in r.iter().enumerate() {
            m |= ((*v != 0) as u32) << l;
        }
        m
    }
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
            if let Err(e) = run_block(launch, &mut worker, b) {
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
                            // The common `a[i]` case: a shift is the same wrapping product,
                            // and the loop vectorises.
                            let shift = stride.trailing_zeros();
                            for l in 0..32 {
                                d[l] = offset_pointer(p[l], (i[l] as i64) << shift);
                            }
                        } else if signed {
                            for l in 0..32 {
                                d[l] = offset_pointer(p[l], (i[l] as i64).wrapping_mul(stride));
                            }
                        } else {
                            for l in 0..32 {
                                let index = i[l].min(i64::MAX as u64) as i64;
                                d[l] = offset_pointer(p[l], index.wrapping_mul(stride));
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

/// The value of the first active lane (masks and widths are warp-uniform).
#[inline(always)]
fn first_active(r: &Lanes, exec: u32) -> u64 {
    r[exec.trailing_zeros().min(31) as usize]
}

/// CUDA's `__shfl*_sync`, by the PTX `shfl.sync` rules: a source outside the lane's segment
/// (for `up`, below it; for `down` and `xor`, above it), or one that is not active and in
/// `mask`, gives the lane its own value.
fn shuffle(
    mode: ShflMode,
    v: &Lanes,
    src: &Lanes,
    width: &Lanes,
    mask: &Lanes,
    exec: u32,
    d: &mut Lanes,
) {
    let sources = exec & first_active(mask, exec) as u32;
    for l in 0..32u32 {
        let i = l as usize;
        d[i] = v[i];
        if exec >> l & 1 == 0 {
            continue;
        }
        let w = width[i] as u32;
        let w = if w.is_power_of_two() && w <= 32 {
            w
        } else {
            32
        };
        let min_lane = l & !(w - 1);
        let max_lane = min_lane | (w - 1);
        let s = src[i] as i64;
        let (j, ok) = match mode {
            ShflMode::Idx => ((min_lane | (s as u32 & (w - 1))) as i64, true),
            ShflMode::Up => {
                let j = l as i64 - (src[i] as u32) as i64;
                (j, j >= min_lane as i64)
            }
            ShflMode::Down => {
                let j = l as i64 + (src[i] as u32) as i64;
                (j, j <= max_lane as i64)
            }
            ShflMode::Xor => {
                let j = (l ^ (s as u32 & 31)) as i64;
                (j, j <= max_lane as i64)
            }
        };
        if ok && (0..32).contains(&j) && sources >> j & 1 != 0 {
            d[i] = v[j as usize];
        }
    }
}

fn warp_reduce(op: WarpReduceOp, kind: Kind, v: &Lanes, lanes: u32) -> u64 {
    let signed = kind.is_signed();
    let mut acc: Option<u64> = None;
    for l in lanes_of(lanes) {
        let x = v[l as usize];
        acc = Some(match acc {
            None => x,
            Some(a) => match op {
                WarpReduceOp::Add => a.wrapping_add(x),
                WarpReduceOp::Min if signed => (a as i64).min(x as i64) as u64,
                WarpReduceOp::Max if signed => (a as i64).max(x as i64) as u64,
                WarpReduceOp::Min => a.min(x),
                WarpReduceOp::Max => a.max(x),
                WarpReduceOp::And => a & x,
                WarpReduceOp::Or => a | x,
                WarpReduceOp::Xor => a ^ x,
            },
        });
    }
    canon(kind, acc.unwrap_or(0))
}

/// A 16-bit atomic (`half`/`bfloat16` add, `uint16` compare-and-swap …) as a
/// compare-and-swap loop on its 32-bit word.
fn atomic16(cell: &AtomicU32, shift: u32, op: AtomicOp, kind: Kind, v: u16, w: u16) -> u16 {
    use Ordering::SeqCst;
    let apply = |old: u16| -> u16 {
        match op {
            AtomicOp::Add if kind.is_float() => {
                from_f32(kind, to_f32(kind, old as u64) + to_f32(kind, v as u64)) as u16
            }
            AtomicOp::Sub if kind.is_float() => {
                from_f32(kind, to_f32(kind, old as u64) - to_f32(kind, v as u64)) as u16
            }
            AtomicOp::Add => old.wrapping_add(v),
            AtomicOp::Sub => old.wrapping_sub(v),
            AtomicOp::Exch => v,
            AtomicOp::Cas => {
                if old == v {
                    w
                } else {
                    old
                }
            }
            AtomicOp::And => old & v,
            AtomicOp::Or => old | v,
            AtomicOp::Xor => old ^ v,
            AtomicOp::Min => old.min(v),
            AtomicOp::Max => old.max(v),
            AtomicOp::Inc => {
                if old >= v {
                    0
                } else {
                    old + 1
                }
            }
            AtomicOp::Dec => {
                if old == 0 || old > v {
                    v
                } else {
                    old - 1
                }
            }
        }
    };
    let word = cell
        .fetch_update(SeqCst, SeqCst, |word| {
            let old = (word >> shift) as u16;
            Some((word & !(0xffff << shift)) | ((apply(old) as u32) << shift))
        })
        .unwrap_or_else(|x| x);
    (word >> shift) as u16
}

/// `atomic32` and `atomic64`: one read-modify-write per [`AtomicOp`] on a 32- or 64-bit cell,
/// returning the old value (float operations through a compare-exchange loop).
macro_rules! atomic_rmw {
    ($name:ident, $cell:ty, $uint:ty, $int:ty, $float:ty, $float_kind:expr) => {
        fn $name(cell: &$cell, op: AtomicOp, kind: Kind, v: $uint, w: $uint) -> $uint {
            use Ordering::SeqCst;
            let float = kind == $float_kind;
            let f = <$float>::from_bits;
            let update = |g: &dyn Fn($uint) -> $uint| {
                cell.fetch_update(SeqCst, SeqCst, |old| Some(g(old)))
                    .unwrap_or_else(|x| x)
            };
            match op {
                AtomicOp::Add if float => update(&|o| (f(o) + f(v)).to_bits()),
                AtomicOp::Sub if float => update(&|o| (f(o) - f(v)).to_bits()),
                AtomicOp::Min if float => update(&|o| f(o).min(f(v)).to_bits()),
                AtomicOp::Max if float => update(&|o| f(o).max(f(v)).to_bits()),
                AtomicOp::Add => cell.fetch_add(v, SeqCst),
                AtomicOp::Sub => cell.fetch_sub(v, SeqCst),
                AtomicOp::Exch => cell.swap(v, SeqCst),
                AtomicOp::Min if kind.is_signed() => {
                    update(&|o| (o as $int).min(v as $int) as $uint)
                }
                AtomicOp::Max if kind.is_signed() => {
                    update(&|o| (o as $int).max(v as $int) as $uint)
                }
                AtomicOp::Min => cell.fetch_min(v, SeqCst),
                AtomicOp::Max => cell.fetch_max(v, SeqCst),
                AtomicOp::Inc => update(&|o| if o >= v { 0 } else { o + 1 }),
                AtomicOp::Dec => update(&|o| if o == 0 || o > v { v } else { o - 1 }),
                AtomicOp::Cas => cell
                    .compare_exchange(v, w, SeqCst, SeqCst)
                    .unwrap_or_else(|x| x),
                AtomicOp::And => cell.fetch_and(v, SeqCst),
                AtomicOp::Or => cell.fetch_or(v, SeqCst),
                AtomicOp::Xor => cell.fetch_xor(v, SeqCst),
            }
        }
    };
}

atomic_rmw!(atomic32, AtomicU32, u32, i32, f32, Kind::F32);
atomic_rmw!(atomic64, AtomicU64, u64, i64, f64, Kind::F64);

/// A unary operation on one canonical value (integer `Recip` of 0 gives 0; the lane version
/// faults instead).
pub(crate) fn unary(op: UnOp, kind: Kind, x: u64) -> u64 {
    if kind.is_float() {
        if kind == Kind::F64 {
            let v = f64::from_bits(x);
            return match op {
                UnOp::Neg => (-v).to_bits(),
                UnOp::Abs => v.abs().to_bits(),
                UnOp::Recip => (1.0 / v).to_bits(),
                UnOp::Saturate => saturate64(v).to_bits(),
                UnOp::DoubleToIntRn => v.round_ties_even() as i32 as i64 as u64,
                UnOp::Not => (v == 0.0) as u64,
                _ => x,
            };
        }
        let v = to_f32(kind, x);
        return match op {
            UnOp::Neg => from_f32(kind, -v),
            UnOp::Abs => from_f32(kind, v.abs()),
            UnOp::Recip => from_f32(kind, 1.0 / v),
            UnOp::Saturate => from_f32(kind, saturate64(v as f64) as f32),
            UnOp::DoubleToIntRn => (v as f64).round_ties_even() as i32 as i64 as u64,
            UnOp::Not => (v == 0.0) as u64,
            _ => x,
        };
    }
    let wide = kind.size() == 8;
    match op {
        UnOp::Neg => canon(kind, x.wrapping_neg()),
        UnOp::Not => (x == 0) as u64,
        UnOp::BitNot => canon(kind, !x),
        UnOp::Abs if kind.is_signed() => canon(kind, (x as i64).wrapping_abs() as u64),
        UnOp::Abs => x,
        UnOp::Recip => {
            if x == 0 {
                0
            } else if kind.is_signed() {
                canon(kind, 1i64.wrapping_div(x as i64) as u64)
            } else {
                1 / x
            }
        }
        UnOp::Saturate => x,
        UnOp::DoubleToIntRn => canon(Kind::I32, x),
        UnOp::Clz => {
            (if wide {
                x.leading_zeros()
            } else {
                (x as u32).leading_zeros()
            }) as u64
        }
        UnOp::Popc => {
            (if wide {
                x.count_ones()
            } else {
                (x as u32).count_ones()
            }) as u64
        }
        UnOp::Brev => canon(
            kind,
            if wide {
                x.reverse_bits()
            } else {
                (x as u32).reverse_bits() as u64
            },
        ),
        UnOp::Ffs => {
            let v = if wide { x } else { x as u32 as u64 };
            if v == 0 {
                0
            } else {
                v.trailing_zeros() as u64 + 1
            }
        }
    }
}

fn saturate64(v: f64) -> f64 {
    if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) }
}

fn unary_lanes(op: UnOp, kind: Kind, x: &Lanes, d: &mut Lanes, exec: u32) -> Result<(), Fault> {
    if op == UnOp::Recip && kind.is_integer() {
        for l in lanes_of(exec) {
            if x[l as usize] == 0 {
                return Err(fault(l, "integer division by zero"));
            }
        }
    }
    for l in 0..32 {
        d[l] = unary(op, kind, x[l]);
    }
    Ok(())
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

/// `canon` over a whole register, with the type's test outside the lane loop.
#[inline(always)]
fn canon_lanes(kind: Kind, d: &mut Lanes) {
    macro_rules! each {
        ($f:expr) => {
            for v in d.iter_mut() {
                *v = $f(*v);
            }
        };
    }
    match kind {
        Kind::I8 => each!(|v| v as i8 as i64 as u64),
        Kind::U8 => each!(|v| v as u8 as u64),
        Kind::I16 => each!(|v| v as i16 as i64 as u64),
        Kind::U16 => each!(|v| v as u16 as u64),
        Kind::I32 => each!(|v| v as i32 as i64 as u64),
        Kind::U32 => each!(|v| v as u32 as u64),
        Kind::Bool => each!(|v| (v != 0) as u64),
        _ => {}
    }
}

macro_rules! map2 {
    ($d:ident, $x:ident, $y:ident, |$a:ident, $b:ident| $e:expr) => {
        for l in 0..32 {
            let $a = $x[l];
            let $b = $y[l];
            $d[l] = $e;
        }
    };
}

/// An integer operation wrapping in 64 bits, then truncated to the type's width: in one pass
/// for the 32-bit types (the common case), else followed by [`canon_lanes`].
#[inline(always)]
fn wrapping_lanes(kind: Kind, x: &Lanes, y: &Lanes, d: &mut Lanes, f: impl Fn(u64, u64) -> u64) {
    match kind {
        Kind::I32 => map2!(d, x, y, |a, b| f(a, b) as i32 as i64 as u64),
        Kind::U32 => map2!(d, x, y, |a, b| f(a, b) as u32 as u64),
        _ => {
            map2!(d, x, y, |a, b| f(a, b));
            canon_lanes(kind, d);
        }
    }
}

fn binary_lanes(
    op: BinOp,
    kind: Kind,
    x: &Lanes,
    y: &Lanes,
    d: &mut Lanes,
    exec: u32,
) -> Result<(), Fault> {
    match kind {
        Kind::F32 => {
            let f = |v: u64| f32::from_bits(v as u32);
            match op {
                BinOp::Add => map2!(d, x, y, |a, b| (f(a) + f(b)).to_bits() as u64),
                BinOp::Sub => map2!(d, x, y, |a, b| (f(a) - f(b)).to_bits() as u64),
                BinOp::Mul => map2!(d, x, y, |a, b| (f(a) * f(b)).to_bits() as u64),
                BinOp::Div => map2!(d, x, y, |a, b| (f(a) / f(b)).to_bits() as u64),
                _ => map2!(d, x, y, |a, b| float_binary(
                    op,
                    f(a) as f64,
                    f(b) as f64,
                    |r| (r as f32).to_bits() as u64
                )),
            }
        }
        Kind::F64 => {
            let f = f64::from_bits;
            match op {
                BinOp::Add => map2!(d, x, y, |a, b| (f(a) + f(b)).to_bits()),
                BinOp::Sub => map2!(d, x, y, |a, b| (f(a) - f(b)).to_bits()),
                BinOp::Mul => map2!(d, x, y, |a, b| (f(a) * f(b)).to_bits()),
                BinOp::Div => map2!(d, x, y, |a, b| (f(a) / f(b)).to_bits()),
                _ => map2!(d, x, y, |a, b| float_binary(op, f(a), f(b), f64::to_bits)),
            }
        }
        k if k.is_narrow_float() => {
            // Exact in f32, then one rounding: what __hadd, __hmul … return.
            map2!(d, x, y, |a, b| {
                let (a, b) = (to_f32(k, a), to_f32(k, b));
                match op {
                    BinOp::Add => from_f32(k, a + b),
                    BinOp::Sub => from_f32(k, a - b),
                    BinOp::Mul => from_f32(k, a * b),
                    BinOp::Div => from_f32(k, a / b),
                    _ => float_binary(op, a as f64, b as f64, |r| from_f32(k, r as f32)),
                }
            })
        }
        k => {
            if matches!(op, BinOp::Div | BinOp::Rem) {
                for l in lanes_of(exec) {
                    if y[l as usize] == 0 {
                        return Err(fault(l, "integer division by zero"));
                    }
                }
            }
            let signed = k.is_signed();
            let width = k.shift_width();
            match op {
                // Wrapping in 64 bits, then one truncation pass for the type's width.
                BinOp::Add => wrapping_lanes(k, x, y, d, u64::wrapping_add),
                BinOp::Sub => wrapping_lanes(k, x, y, d, u64::wrapping_sub),
                BinOp::Mul => wrapping_lanes(k, x, y, d, u64::wrapping_mul),
                BinOp::Div if signed => {
                    map2!(d, x, y, |a, b| if b == 0 {
                        0
                    } else {
                        canon(k, (a as i64).wrapping_div(b as i64) as u64)
                    })
                }
                BinOp::Div => map2!(d, x, y, |a, b| a.checked_div(b).unwrap_or(0)),
                BinOp::Rem if signed => {
                    map2!(d, x, y, |a, b| if b == 0 {
                        0
                    } else {
                        canon(k, (a as i64).wrapping_rem(b as i64) as u64)
                    })
                }
                BinOp::Rem => map2!(d, x, y, |a, b| a.checked_rem(b).unwrap_or(0)),
                BinOp::Min if signed => map2!(d, x, y, |a, b| (a as i64).min(b as i64) as u64),
                BinOp::Max if signed => map2!(d, x, y, |a, b| (a as i64).max(b as i64) as u64),
                BinOp::Min => map2!(d, x, y, |a, b| a.min(b)),
                BinOp::Max => map2!(d, x, y, |a, b| a.max(b)),
                BinOp::BitAnd => map2!(d, x, y, |a, b| a & b),
                BinOp::BitOr => map2!(d, x, y, |a, b| a | b),
                BinOp::BitXor => map2!(d, x, y, |a, b| a ^ b),
                // PTX semantics: counts at or beyond the width shift everything out.
                BinOp::Shl => map2!(d, x, y, |a, b| if b >= width {
                    0
                } else {
                    canon(k, a << b)
                }),
                BinOp::Shr if signed => map2!(d, x, y, |a, b| ((a as i64) >> b.min(63)) as u64),
                BinOp::Shr => map2!(d, x, y, |a, b| if b >= width { 0 } else { a >> b }),
                BinOp::Eq => map2!(d, x, y, |a, b| (a == b) as u64),
                BinOp::Ne => map2!(d, x, y, |a, b| (a != b) as u64),
                BinOp::Lt if signed => map2!(d, x, y, |a, b| ((a as i64) < (b as i64)) as u64),
                BinOp::Gt if signed => map2!(d, x, y, |a, b| ((a as i64) > (b as i64)) as u64),
                BinOp::Le if signed => map2!(d, x, y, |a, b| ((a as i64) <= (b as i64)) as u64),
                BinOp::Ge if signed => map2!(d, x, y, |a, b| ((a as i64) >= (b as i64)) as u64),
                BinOp::Lt => map2!(d, x, y, |a, b| (a < b) as u64),
                BinOp::Gt => map2!(d, x, y, |a, b| (a > b) as u64),
                BinOp::Le => map2!(d, x, y, |a, b| (a <= b) as u64),
                BinOp::Ge => map2!(d, x, y, |a, b| (a >= b) as u64),
            }
        }
    }
    Ok(())
}

/// Floating operations other than the four arithmetic ones; comparisons give `bool` bits.
#[inline(always)]
fn float_binary(op: BinOp, a: f64, b: f64, round: impl Fn(f64) -> u64) -> u64 {
    match op {
        BinOp::Rem => round(a % b),
        BinOp::Min => round(a.min(b)),
        BinOp::Max => round(a.max(b)),
        BinOp::Eq => (a == b) as u64,
        BinOp::Ne => (a != b) as u64,
        BinOp::Lt => (a < b) as u64,
        BinOp::Gt => (a > b) as u64,
        BinOp::Le => (a <= b) as u64,
        BinOp::Ge => (a >= b) as u64,
        BinOp::Add => round(a + b),
        BinOp::Sub => round(a - b),
        BinOp::Mul => round(a * b),
        BinOp::Div => round(a / b),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => 0,
    }
}

fn fma(kind: Kind, a: u64, b: u64, c: u64) -> u64 {
    match kind {
        Kind::F64 => f64::from_bits(a)
            .mul_add(f64::from_bits(b), f64::from_bits(c))
            .to_bits(),
        k if k.is_float() => from_f32(k, to_f32(k, a).mul_add(to_f32(k, b), to_f32(k, c))),
        k => canon(k, a.wrapping_mul(b).wrapping_add(c)),
    }
}

fn math1(f: MathFn, kind: Kind, x: u64) -> u64 {
    if kind == Kind::F64 {
        return math_f64(f, f64::from_bits(x)).to_bits();
    }
    from_f32(kind, math_f32(f, to_f32(kind, x)))
}

fn math_f64(f: MathFn, x: f64) -> f64 {
    match f {
        MathFn::Exp | MathFn::FastExp => x.exp(),
        MathFn::Exp2 => x.exp2(),
        MathFn::Expm1 => x.exp_m1(),
        MathFn::Log | MathFn::FastLog => x.ln(),
        MathFn::Log2 | MathFn::FastLog2 => x.log2(),
        MathFn::Log10 => x.log10(),
        MathFn::Log1p => x.ln_1p(),
        MathFn::Sin | MathFn::FastSin => x.sin(),
        MathFn::Cos | MathFn::FastCos => x.cos(),
        MathFn::Tan => x.tan(),
        MathFn::Asin => x.asin(),
        MathFn::Acos => x.acos(),
        MathFn::Atan => x.atan(),
        MathFn::Sinh => x.sinh(),
        MathFn::Cosh => x.cosh(),
        MathFn::Tanh => x.tanh(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Rsqrt => 1.0 / x.sqrt(),
        MathFn::Cbrt => x.cbrt(),
        MathFn::Floor => x.floor(),
        MathFn::Ceil => x.ceil(),
        MathFn::Round => x.round(),
        MathFn::Trunc => x.trunc(),
        MathFn::Erf => crate::math::erf(x),
        MathFn::Erfc => crate::math::erfc(x),
        MathFn::Atan2 | MathFn::Pow | MathFn::Hypot => f64::NAN,
    }
}

fn math_f32(f: MathFn, x: f32) -> f32 {
    match f {
        MathFn::Exp | MathFn::FastExp => x.exp(),
        MathFn::Exp2 => x.exp2(),
        MathFn::Expm1 => x.exp_m1(),
        MathFn::Log | MathFn::FastLog => x.ln(),
        MathFn::Log2 | MathFn::FastLog2 => x.log2(),
        MathFn::Log10 => x.log10(),
        MathFn::Log1p => x.ln_1p(),
        MathFn::Sin | MathFn::FastSin => x.sin(),
        MathFn::Cos | MathFn::FastCos => x.cos(),
        MathFn::Tan => x.tan(),
        MathFn::Asin => x.asin(),
        MathFn::Acos => x.acos(),
        MathFn::Atan => x.atan(),
        MathFn::Sinh => x.sinh(),
        MathFn::Cosh => x.cosh(),
        MathFn::Tanh => x.tanh(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Rsqrt => 1.0 / x.sqrt(),
        MathFn::Cbrt => x.cbrt(),
        MathFn::Floor => x.floor(),
        MathFn::Ceil => x.ceil(),
        MathFn::Round => x.round(),
        MathFn::Trunc => x.trunc(),
        MathFn::Erf => crate::math::erf(x as f64) as f32,
        MathFn::Erfc => crate::math::erfc(x as f64) as f32,
        MathFn::Atan2 | MathFn::Pow | MathFn::Hypot => f32::NAN,
    }
}

fn math2(f: MathFn, kind: Kind, a: u64, b: u64) -> u64 {
    if kind == Kind::F64 {
        let (a, b) = (f64::from_bits(a), f64::from_bits(b));
        return match f {
            MathFn::Atan2 => a.atan2(b),
            MathFn::Pow => a.powf(b),
            _ => a.hypot(b),
        }
        .to_bits();
    }
    let (a, b) = (to_f32(kind, a), to_f32(kind, b));
    from_f32(
        kind,
        match f {
            MathFn::Atan2 => a.atan2(b),
            MathFn::Pow => a.powf(b),
            _ => a.hypot(b),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_of_sees_bits_in_either_half_of_a_lane() {
        let patterns = [
            0,
            1,
            0x8000_0000,
            1 << 32,
            0x8000_0000_0000_0000,
            u64::MAX,
            // A pointer to offset 0 of an allocation: only the high half is set.
            encode(0x10000, 0),
        ];
        for (i, &p) in patterns.iter().enumerate() {
            for shift in 0..32 {
                let mut r: Lanes = [0; 32];
                // Lane `shift` holds the pattern, every third lane another one.
                r[shift] = p;
                for l in (0..32).step_by(3) {
                    r[l] |= patterns[(i + l) % patterns.len()];
                }
                let want = (0..32).fold(0u32, |m, l| m | (((r[l] != 0) as u32) << l));
                assert_eq!(mask_of(&r), want, "pattern {p:#x} at lane {shift}");
            }
        }
    }
}
