//! What compiled kernels run with: the block context they read, the helpers they call, and
//! the launcher that spreads blocks over the cores and turns faults into errors.

use super::NativeKernel;
use crate::error::Error;
use crate::memory::{
    AccessError, DYNAMIC_SHARED_ID, OFFSET_MASK, OVERFLOWED_ID, Region, STATIC_SHARED_BASE, encode,
    offset_pointer, pointer_id, scaled_index, signed_offset, zeroed_words,
};
use chorus_lang::ir::{AtomicOp, MathFn};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Threads per chunk of a compiled SIMD thread loop (`lower/simd.rs`: eight 128-bit vectors of
/// 32-bit lanes); the launcher's per-root chunk limits are computed for this width.
pub(crate) const LANES: i64 = 32;

/// Where a root allocation comes from, resolved by the launcher for each worker.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RootSource {
    /// The pointer in parameter leaf `n`.
    Param(u32),
    /// Static shared slot `n`.
    Shared(u32),
    /// The block's dynamic shared memory.
    Dynamic,
    /// The global with this allocation id.
    Global(u32),
}

/// One allocation resolved for a block: where its bytes are, how many, and the pointer.
#[repr(C)]
pub(crate) struct Root {
    pub(crate) base: u64,
    pub(crate) len: u64,
    /// The pointer's signed offset into the allocation.
    pub(crate) off: i64,
    pub(crate) ptr: u64,
    /// Per access size (1, 2, 4, 8): the offset an access at element 0 starts from, and the
    /// last valid start, so that a check is one unsigned compare: a root misaligned for the
    /// size, or shorter than it, starts far out of range. Computed here, once per launch and
    /// worker, rather than in the compiled code, where Cranelift would recompute them in the
    /// thread loop (their constants are rematerialised at every use).
    pub(crate) start: [u64; 4],
    pub(crate) last: [u64; 4],
    /// For 4-byte elements (the vector code's): the host address of element 0; an index `i`
    /// is valid exactly when `i - lo4 <= span4` as unsigned 64-bit numbers, and a chunk of
    /// [`LANES`] elements may start at `i` when `i - chunk_lo4 <= chunk_span4`.
    pub(crate) elem0: u64,
    pub(crate) lo4: i64,
    pub(crate) span4: u64,
    pub(crate) chunk_lo4: i64,
    pub(crate) chunk_span4: u64,
}

impl Root {
    fn new(base: u64, len: u64, off: i64, ptr: u64) -> Root {
        let mut start = [0; 4];
        let mut last = [0; 4];
        for (k, size) in [1u64, 2, 4, 8].into_iter().enumerate() {
            let short = len < size;
            let misaligned = off as u64 & (size - 1) != 0;
            start[k] = if short || misaligned {
                1 << 62
            } else {
                off as u64
            };
            last[k] = if short { 0 } else { len - size };
        }
        // Element indexes i with 0 <= off + 4i <= len - 4, off a multiple of 4.
        let (lo4, hi4) = if len >= 4 && off % 4 == 0 {
            (-off / 4, (len as i64 - 4 - off).div_euclid(4))
        } else {
            (0, -1)
        };
        // `None`: no index is valid.
        let span = |extra: i64| {
            let top = hi4 - extra;
            (top >= lo4).then(|| (top - lo4) as u64)
        };
        let (span4, chunk_span4) = (span(0), span(LANES - 1));
        // Where nothing is valid, `lo4` lies far above any index a kernel computes (a 32-bit
        // one, or a 64-bit one under 2^40), so that `i - lo4` is huge for every `i`.
        const FAR: i64 = 1 << 62;
        let lo_of = |s: Option<u64>| if s.is_some() { lo4 } else { FAR };
        let (chunk_lo4, lo4) = (lo_of(chunk_span4), lo_of(span4));
        let (span4, chunk_span4) = (span4.unwrap_or(0), chunk_span4.unwrap_or(0));
        Root {
            base,
            len,
            off,
            ptr,
            start,
            last,
            elem0: base.wrapping_add(off as u64),
            lo4,
            span4,
            chunk_lo4,
            chunk_span4,
        }
    }
}

/// A slot of the allocation table (indexed by the low bits of an allocation id).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) id: u64,
    pub(crate) base: u64,
    pub(crate) len: u64,
    pub(crate) _pad: u64,
}

/// What a work-group function reads (and writes when it faults). Field offsets are read by
/// the code generator through `offset_of!`.
#[repr(C)]
pub(crate) struct Ctx {
    pub(crate) roots: *const Root,
    pub(crate) table: *const Entry,
    /// `32 - log2(slots)`: a slot is `(id * HASH mod 2^32) >> table_shift`.
    pub(crate) table_shift: u64,
    pub(crate) lanes: *mut u8,
    pub(crate) masks: *mut u8,
    pub(crate) params: *const u64,
    pub(crate) block_idx: [u32; 3],
    pub(crate) block_dim: [u32; 3],
    pub(crate) grid_dim: [u32; 3],
    pub(crate) threads: u32,
    pub(crate) fault_thread: [u32; 3],
    /// 1: a memory access (`fault_ptr`, `fault_size`, `fault_write`: 0 read, 1 write, 2
    /// atomic); 2: integer division by zero.
    pub(crate) fault_code: u32,
    pub(crate) fault_span: u32,
    pub(crate) fault_write: u32,
    pub(crate) fault_ptr: u64,
    pub(crate) fault_size: u64,
    /// Bytes past `fault_ptr` of the faulting leaf (a field or component), set before the check.
    pub(crate) fault_extra: u64,
}

/// Everything a native launch needs.
pub(crate) struct NativeLaunch<'a> {
    pub(crate) kernel: &'a NativeKernel,
    pub(crate) kernel_name: &'a str,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) regions: &'a [(u32, Region<'a>)],
    pub(crate) params: Vec<u64>,
    pub(crate) dynamic_shared: usize,
    pub(crate) workers: usize,
    /// The module whose code runs (for the positions of device functions' faults).
    pub(crate) module: &'a super::NativeModule,
}

/// One worker's storage: shared memory, lane arrays, masks and its allocation table.
struct Worker {
    _shared: Vec<Box<[AtomicU64]>>,
    _dynamic: Box<[AtomicU64]>,
    lanes: Vec<u64>,
    masks: Vec<u8>,
    table: Vec<Entry>,
    table_shift: u64,
    roots: Vec<Root>,
    /// (id, base, len) of everything this worker's blocks can reach.
    reachable: Vec<(u32, u64, u64)>,
}

fn region_base(r: &Region<'_>) -> u64 {
    r.words.as_ptr() as u64
}

/// Multiplier of the table's Fibonacci hash of allocation ids.
pub(crate) const HASH: u64 = 0x9E37_79B1;

/// The table slot of `id` with a table of 2^`bits` slots (what the compiled code computes).
fn slot_of(id: u32, bits: u32) -> u64 {
    ((id as u64).wrapping_mul(HASH) & 0xffff_ffff) >> (32 - bits)
}

/// A table size (its log2, its slots) at which the ids land in distinct slots.
fn table_for(reachable: &[(u32, u64, u64)]) -> Option<(Vec<Entry>, u64)> {
    let mut bits = (reachable.len() * 2)
        .next_power_of_two()
        .max(8)
        .trailing_zeros();
    while bits <= 16 {
        let size = 1usize << bits;
        let mut table = vec![
            Entry {
                id: u64::MAX,
                base: 0,
                len: 0,
                _pad: 0,
            };
            size
        ];
        let mut ok = true;
        for &(id, base, len) in reachable {
            let slot = &mut table[slot_of(id, bits) as usize];
            if slot.id != u64::MAX && slot.id != id as u64 {
                ok = false;
                break;
            }
            *slot = Entry {
                id: id as u64,
                base,
                len,
                _pad: 0,
            };
        }
        if ok {
            return Some((table, 32 - bits as u64));
        }
        bits += 1;
    }
    None
}

fn new_worker(launch: &NativeLaunch<'_>, threads: usize) -> Result<Worker, String> {
    let k = launch.kernel;
    let shared: Vec<Box<[AtomicU64]>> = k.shared.iter().map(|(_, s)| zeroed_words(*s)).collect();
    let dynamic = zeroed_words(launch.dynamic_shared);
    let mut reachable: Vec<(u32, u64, u64)> = launch
        .regions
        .iter()
        .map(|(id, r)| (*id, region_base(r), r.len as u64))
        .collect();
    for ((slot, size), words) in k.shared.iter().zip(&shared) {
        reachable.push((
            STATIC_SHARED_BASE + slot,
            words.as_ptr() as u64,
            *size as u64,
        ));
    }
    reachable.push((
        DYNAMIC_SHARED_ID,
        dynamic.as_ptr() as u64,
        launch.dynamic_shared as u64,
    ));
    let (table, table_shift) =
        table_for(&reachable).ok_or("the launch's allocation ids collide in every table size")?;
    let find = |ptr: u64| {
        let id = pointer_id(ptr);
        reachable
            .iter()
            .find(|(i, _, _)| *i == id)
            .map(|&(_, base, len)| (base, len))
    };
    let roots = k
        .roots
        .iter()
        .map(|src| {
            let ptr = match *src {
                RootSource::Param(leaf) => launch.params.get(leaf as usize).copied().unwrap_or(0),
                RootSource::Shared(slot) => encode(STATIC_SHARED_BASE + slot, 0),
                RootSource::Dynamic => encode(DYNAMIC_SHARED_ID, 0),
                RootSource::Global(id) => encode(id, 0),
            };
            let (base, len) = find(ptr).unwrap_or((0, 0));
            Root::new(base, len, signed_offset(ptr), ptr)
        })
        .collect();
    Ok(Worker {
        _shared: shared,
        _dynamic: dynamic,
        lanes: vec![0; k.lane_slots as usize * threads],
        masks: vec![0; (k.mask_slots as usize * threads).max(1)],
        table,
        table_shift,
        roots,
        reachable,
    })
}

/// The interpreter's message for an access of `size` bytes through `ptr`.
fn access_message(
    reachable: &[(u32, u64, u64)],
    ptr: u64,
    extra: u64,
    size: u64,
    mode: u32,
) -> String {
    let id = pointer_id(ptr);
    let what = match mode {
        0 => "read",
        1 => "write",
        _ => "atomic",
    };
    match reachable.iter().find(|(i, _, _)| *i == id) {
        Some(&(_, _, len)) => {
            let offset = (ptr & OFFSET_MASK).wrapping_add(extra);
            let e = if offset.checked_add(size).is_none_or(|end| end > len) {
                AccessError::OutOfBounds {
                    offset,
                    size: size as usize,
                    len: len as usize,
                }
            } else {
                AccessError::Misaligned {
                    offset,
                    size: size as usize,
                }
            };
            e.describe(what)
        }
        None if id == OVERFLOWED_ID => "out-of-bounds access: pointer arithmetic moved the pointer more than 2^39 bytes from its allocation's start".into(),
        None if id == 0 => format!("access through a null pointer (offset {})", ptr & OFFSET_MASK),
        None => "access through a pointer to memory that is not an argument of this launch".into(),
    }
}

/// Runs a whole launch of a compiled kernel.
pub(crate) fn run(launch: &NativeLaunch<'_>) -> Result<(), Error> {
    let [bx, by, bz] = launch.block;
    let threads = (bx * by * bz) as usize;
    let [gx, gy, gz] = launch.grid;
    let blocks = gx as usize * gy as usize * gz as usize;
    let entry: extern "C" fn(*mut Ctx) -> u32 =
        // SAFETY: the code generator made `entry` a function of exactly this signature.
        unsafe { std::mem::transmute(launch.kernel.entry) };
    crate::exec::parallel_blocks(
        blocks,
        launch.workers,
        launch.kernel_name,
        || new_worker(launch, threads),
        |worker: &mut Result<Worker, String>, b| {
            let w = worker.as_mut().map_err(|m| Error::Launch {
                kernel: launch.kernel_name.to_string(),
                message: m.clone(),
            })?;
            let block_idx = [
                (b % gx as usize) as u32,
                (b / gx as usize % gy as usize) as u32,
                (b / (gx as usize * gy as usize)) as u32,
            ];
            // Mask 0 is "this thread has not returned".
            if launch.kernel.mask_slots > 0 {
                w.masks[..threads].fill(1);
            }
            let mut ctx = Ctx {
                roots: w.roots.as_ptr(),
                table: w.table.as_ptr(),
                table_shift: w.table_shift,
                lanes: w.lanes.as_mut_ptr().cast(),
                masks: w.masks.as_mut_ptr(),
                params: launch.params.as_ptr(),
                block_idx,
                block_dim: launch.block,
                grid_dim: launch.grid,
                threads: threads as u32,
                fault_thread: [0; 3],
                fault_code: 0,
                fault_span: 0,
                fault_write: 0,
                fault_ptr: 0,
                fault_size: 0,
                fault_extra: 0,
            };
            if entry(&mut ctx) == 0 {
                return Ok(());
            }
            let message = match ctx.fault_code {
                2 => "integer division by zero".to_string(),
                _ => access_message(
                    &w.reachable,
                    ctx.fault_ptr,
                    ctx.fault_extra,
                    ctx.fault_size,
                    ctx.fault_write,
                ),
            };
            Err(Error::Fault {
                kernel: launch.kernel_name.to_string(),
                block: block_idx,
                thread: ctx.fault_thread,
                span: launch
                    .module
                    .span(launch.kernel, ctx.fault_span)
                    .unwrap_or_else(chorus_lang::Span::generated),
                message,
            })
        },
    )
}

// ---- helpers the compiled code calls (rare or intricate operations, with the interpreter's
// own functions, so both paths give the same bits)

/// The interpreter's pointer for a root access that failed its check: each index scaled with
/// saturation and added with `offset_pointer`, as `PtrIndex` does.
pub(crate) extern "C" fn nf_root_fault(
    ctx: *mut Ctx,
    root: u64,
    i0: i64,
    s0: i64,
    i1: i64,
    s1: i64,
    i2: i64,
    s2: i64,
) {
    // SAFETY: the compiled code passes the context it was called with, and a root index
    // below the kernel's root count.
    let ctx = unsafe { &mut *ctx };
    // SAFETY: as above.
    let mut p = unsafe { (*ctx.roots.add(root as usize)).ptr };
    for (i, s) in [(i0, s0), (i1, s1), (i2, s2)] {
        if s != 0 {
            p = offset_pointer(p, scaled_index(i, s));
        }
    }
    ctx.fault_ptr = p;
}

/// `ptr + index * stride` bytes, as the interpreter's `PtrIndex`.
pub(crate) extern "C" fn nf_ptr_index(ptr: u64, index: i64, stride: i64) -> u64 {
    offset_pointer(ptr, scaled_index(index, stride))
}

/// The math functions, by position in [`MATH`].
pub(crate) const MATH: [MathFn; 33] = [
    MathFn::Exp,
    MathFn::Exp2,
    MathFn::Expm1,
    MathFn::Log,
    MathFn::Log2,
    MathFn::Log10,
    MathFn::Log1p,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Tan,
    MathFn::Asin,
    MathFn::Acos,
    MathFn::Atan,
    MathFn::Atan2,
    MathFn::Sinh,
    MathFn::Cosh,
    MathFn::Tanh,
    MathFn::Sqrt,
    MathFn::Rsqrt,
    MathFn::Cbrt,
    MathFn::Pow,
    MathFn::Hypot,
    MathFn::Floor,
    MathFn::Ceil,
    MathFn::Round,
    MathFn::Trunc,
    MathFn::Erf,
    MathFn::Erfc,
    MathFn::FastExp,
    MathFn::FastSin,
    MathFn::FastCos,
    MathFn::FastLog,
    MathFn::FastLog2,
];

/// Leaf kinds by code (what the compiled code passes).
pub(crate) const KINDS: [crate::value::Kind; 16] = {
    use crate::value::Kind::*;
    [
        Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, Fp8, Fp4, F32, F64, Ptr,
    ]
};

/// The code of a kind in [`KINDS`].
pub(crate) fn kind_code(k: crate::value::Kind) -> u64 {
    KINDS.iter().position(|x| *x == k).unwrap_or(0) as u64
}

fn kind_of(code: u64) -> crate::value::Kind {
    KINDS[(code as usize).min(KINDS.len() - 1)]
}

pub(crate) extern "C" fn nf_math1(f: u64, kind: u64, x: u64) -> u64 {
    crate::scalar::math1(MATH[(f as usize).min(MATH.len() - 1)], kind_of(kind), x)
}

pub(crate) extern "C" fn nf_math2(f: u64, kind: u64, a: u64, b: u64) -> u64 {
    crate::scalar::math2(MATH[(f as usize).min(MATH.len() - 1)], kind_of(kind), a, b)
}

pub(crate) extern "C" fn nf_fma(kind: u64, a: u64, b: u64, c: u64) -> u64 {
    crate::scalar::fma(kind_of(kind), a, b, c)
}

pub(crate) extern "C" fn nf_convert(from: u64, to: u64, bits: u64) -> u64 {
    crate::value::convert(kind_of(from), kind_of(to), bits)
}

/// Floating `Rem`, `FloorMod`, `Min`, `Max` (op 0..4) as the interpreter computes them.
pub(crate) extern "C" fn nf_float_binary(op: u64, kind: u64, a: u64, b: u64) -> u64 {
    use crate::bytecode::BinOp;
    let op = [BinOp::Rem, BinOp::FloorMod, BinOp::Min, BinOp::Max][(op as usize).min(3)];
    if kind_of(kind) == crate::value::Kind::F64 {
        crate::scalar::float_binary(op, f64::from_bits(a), f64::from_bits(b), f64::to_bits)
    } else {
        let f = |v: u64| f32::from_bits(v as u32) as f64;
        crate::scalar::float_binary(op, f(a), f(b), |r| (r as f32).to_bits() as u64)
    }
}

/// The unary operations the compiled code calls out for, by code.
pub(crate) const UNARY: [crate::bytecode::UnOp; 6] = {
    use crate::bytecode::UnOp::*;
    [Saturate, DoubleToIntRn, Neg, Abs, Recip, Not]
};

/// A unary operation of [`crate::scalar::unary`] by code in [`UNARY`].
pub(crate) extern "C" fn nf_unary(op: u64, kind: u64, x: u64) -> u64 {
    crate::scalar::unary(UNARY[(op as usize).min(UNARY.len() - 1)], kind_of(kind), x)
}

/// The binary operations of the narrow float types, by code.
pub(crate) const NARROW_BINARY: [crate::bytecode::BinOp; 14] = {
    use crate::bytecode::BinOp::*;
    [
        Add, Sub, Mul, Div, Rem, FloorMod, Min, Max, Eq, Ne, Lt, Gt, Le, Ge,
    ]
};

/// A binary operation on `half`, `bfloat16`, `fp8` or `fp4` as the interpreter computes it:
/// exact in `f32`, then one rounding (comparisons give 0 or 1).
pub(crate) extern "C" fn nf_narrow_binary(op: u64, kind: u64, a: u64, b: u64) -> u64 {
    use crate::bytecode::BinOp;
    use crate::value::{from_f32, to_f32};
    let op = NARROW_BINARY[(op as usize).min(NARROW_BINARY.len() - 1)];
    let k = kind_of(kind);
    let (a, b) = (to_f32(k, a), to_f32(k, b));
    match op {
        BinOp::Add => from_f32(k, a + b),
        BinOp::Sub => from_f32(k, a - b),
        BinOp::Mul => from_f32(k, a * b),
        BinOp::Div => from_f32(k, a / b),
        _ => crate::scalar::float_binary(op, a as f64, b as f64, |r| from_f32(k, r as f32)),
    }
}

/// The atomic operations, by code.
pub(crate) const ATOMICS: [AtomicOp; 11] = [
    AtomicOp::Add,
    AtomicOp::Sub,
    AtomicOp::Exch,
    AtomicOp::Min,
    AtomicOp::Max,
    AtomicOp::Inc,
    AtomicOp::Dec,
    AtomicOp::Cas,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
];

/// An atomic on the 4 or 8 bytes at host address `addr` (checked by the compiled code: in
/// bounds of an allocation and aligned), with the interpreter's semantics; returns the old
/// value in canonical form.
pub(crate) extern "C" fn nf_atomic(op: u64, kind: u64, addr: u64, a: u64, b: u64) -> u64 {
    let op = ATOMICS[(op as usize).min(ATOMICS.len() - 1)];
    let k = kind_of(kind);
    let old = if k.size() == 4 {
        // SAFETY: `addr` is 4-aligned and inside an allocation of atomic words that outlives
        // the launch (the compiled code checked it).
        let cell = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
        crate::atomic::atomic32(cell, op, k, a as u32, b as u32) as u64
    } else {
        // SAFETY: as above, 8-aligned.
        let cell = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
        crate::atomic::atomic64(cell, op, k, a, b)
    };
    crate::value::from_raw(k, old)
}

/// Bit `l` set where `bytes[l]` is not zero (`bytes` at most 64 long): eight bytes at a time.
fn bits_of_bytes(bytes: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut m = 0u64;
    let mut words = bytes.chunks_exact(8);
    for (k, w) in words.by_ref().enumerate() {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        // The top bit of each non-zero byte, moved to bit 0 of its byte, then the eight bytes'
        // bits gathered into the top byte by one multiplication.
        let top = (((w & LOW7) + LOW7) | w) & !LOW7;
        m |= ((top >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    let done = bytes.len() - words.remainder().len();
    for (l, &byte) in words.remainder().iter().enumerate() {
        m |= ((byte != 0) as u64) << (done + l);
    }
    m
}

/// A warp collective the compiled code runs through [`nf_warp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WarpOp {
    /// `shfl*-sync`: operands value, lane (or delta), width, mask.
    Shfl(crate::bytecode::ShflMode),
    /// `ballot-sync`, `all-sync`, `any-sync`: operands mask, predicate.
    Vote(crate::bytecode::VoteOp),
    /// `reduce-OP-sync` of `int` or `uint`: operands mask, value.
    Reduce(chorus_lang::ir::WarpReduceOp),
    /// `match-any-sync`: operands mask, value.
    MatchAny,
    /// `match-all-sync`: operands mask, value; the "all equal" flag (0 or 1) goes to lane slot
    /// `dst + 1` (the compiled code stores it through the predicate pointer).
    MatchAll,
    /// `active-mask`: no operands.
    ActiveMask,
}

/// Every [`WarpOp`], indexed by the code the compiled code passes to [`nf_warp`].
pub(crate) const WARP_OPS: [WarpOp; 16] = {
    use crate::bytecode::{ShflMode as S, VoteOp as V};
    use chorus_lang::ir::WarpReduceOp as R;
    [
        WarpOp::Shfl(S::Idx),
        WarpOp::Shfl(S::Up),
        WarpOp::Shfl(S::Down),
        WarpOp::Shfl(S::Xor),
        WarpOp::Vote(V::Ballot),
        WarpOp::Vote(V::All),
        WarpOp::Vote(V::Any),
        WarpOp::Reduce(R::Add),
        WarpOp::Reduce(R::Min),
        WarpOp::Reduce(R::Max),
        WarpOp::Reduce(R::And),
        WarpOp::Reduce(R::Or),
        WarpOp::Reduce(R::Xor),
        WarpOp::MatchAny,
        WarpOp::MatchAll,
        WarpOp::ActiveMask,
    ]
};

/// The code of `op` for [`nf_warp`].
pub(crate) fn warp_code(op: WarpOp) -> u64 {
    WARP_OPS.iter().position(|x| *x == op).unwrap_or(0) as u64
}

/// An operand slot [`nf_warp`] does not read.
pub(crate) const NO_SLOT: u64 = u64::MAX;

/// One warp collective over every warp of the block, on lane arrays, with the interpreter's
/// own functions (`lanes::shuffle`, `lanes::warp_reduce`) and its rules for the rest: warp
/// `w` is threads `32w..32w+31` of the block; a thread is active when its byte in mask slot
/// `on` is set; operand `i` (`a` to `d`) of thread `t` is the canonical value in its lane
/// slot, or for every thread its bits (`ka` to `kd`) where the slot is [`NO_SLOT`]; and
/// the result of each active thread goes to lane slot `dst` (a warp without active threads
/// does nothing, as in the interpreter). Warps of 32 lanes only (the lowering refuses others).
///
/// # Safety
///
/// `lanes` must point to the block's lane arrays (`threads` 64-bit words per slot) and
/// `masks` to its mask bytes (`threads` per slot); `on`, `dst` and each operand slot that is
/// not [`NO_SLOT`] must be slots of them, `dst` different from the operands (and, for
/// [`WarpOp::MatchAll`], `dst + 1` a slot too, different from them).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn nf_warp(
    op: u64,
    kind: u64,
    lanes: *mut u64,
    masks: *const u8,
    threads: u64,
    on: u64,
    dst: u64,
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    ka: u64,
    kb: u64,
    kc: u64,
    kd: u64,
) {
    use crate::lanes::{first_active, lanes_of, mask_of, operand_mask, shuffle, warp_reduce};
    const W: usize = 32;
    let threads = threads as usize;
    let k = kind_of(kind);
    let op = WARP_OPS[(op as usize).min(WARP_OPS.len() - 1)];
    for base in (0..threads).step_by(W) {
        let n = (threads - base).min(W);
        // SAFETY: `base + n <= threads` and `on` is a mask slot (the contract above).
        let on_bytes =
            unsafe { std::slice::from_raw_parts(masks.add(on as usize * threads + base), n) };
        let exec = bits_of_bytes(on_bytes);
        // A warp without active threads (a branch only other warps take) costs the mask only.
        if exec == 0 {
            continue;
        }
        let mut ops = [[0u64; W]; 4];
        for (o, (slot, bits)) in ops.iter_mut().zip([(a, ka), (b, kb), (c, kc), (d, kd)]) {
            if slot == NO_SLOT {
                *o = [bits; W];
            } else {
                // SAFETY: `slot` is a lane slot and `base + n <= threads`; no `&mut` to the
                // lane arrays is alive.
                let from = unsafe {
                    std::slice::from_raw_parts(lanes.add(slot as usize * threads + base), n)
                };
                o[..n].copy_from_slice(from);
            }
        }
        let [x, y, z, m] = &ops;
        let mut out = [0u64; W];
        // A second result, for `match-all-sync`.
        let mut flag = None;
        match op {
            WarpOp::Shfl(mode) => shuffle::<W>(mode, x, y, z, m, exec, &mut out),
            WarpOp::Vote(v) => {
                let participating = exec & operand_mask::<W>(first_active(x, exec));
                let p = mask_of(y) & participating;
                out = [match v {
                    crate::bytecode::VoteOp::Ballot => p,
                    crate::bytecode::VoteOp::All => (p == participating) as u64,
                    crate::bytecode::VoteOp::Any => (p != 0) as u64,
                }; W];
            }
            WarpOp::Reduce(r) => {
                let participating = exec & operand_mask::<W>(first_active(x, exec));
                out = [warp_reduce::<W>(r, k, y, participating); W];
            }
            WarpOp::MatchAny => {
                let participating = exec & operand_mask::<W>(first_active(x, exec));
                for l in lanes_of(exec) {
                    out[l as usize] = lanes_of(participating)
                        .filter(|&j| y[j as usize] == y[l as usize])
                        .fold(0, |acc, j| acc | 1 << j);
                }
            }
            WarpOp::MatchAll => {
                let participating = exec & operand_mask::<W>(first_active(x, exec));
                let first = y[(participating.trailing_zeros() as usize).min(W - 1)];
                let all = lanes_of(participating).all(|j| y[j as usize] == first);
                out = [if all { participating } else { 0 }; W];
                flag = Some(all as u64);
            }
            WarpOp::ActiveMask => out = [exec; W],
        }
        // Inactive threads' results are never read (their slots are scratch).
        // SAFETY: `dst` (and for `match-all-sync` `dst + 1`) is a lane slot distinct from the
        // operands, `base + n <= threads`, and no other reference to the lane arrays is alive.
        let to =
            unsafe { std::slice::from_raw_parts_mut(lanes.add(dst as usize * threads + base), n) };
        to.copy_from_slice(&out[..n]);
        if let Some(f) = flag {
            // SAFETY: as above.
            let to = unsafe {
                std::slice::from_raw_parts_mut(lanes.add((dst as usize + 1) * threads + base), n)
            };
            to.fill(f);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bits_of_bytes_sets_a_bit_per_non_zero_byte() {
        let bytes: Vec<u8> = (0..45u32)
            .map(|i| [0, 1, 0x80, 0xff, 7, 0][(i * 7 % 6) as usize])
            .collect();
        for n in [0, 1, 7, 8, 9, 31, 32, 45] {
            let want = bytes[..n]
                .iter()
                .enumerate()
                .fold(0u64, |m, (l, &b)| m | ((b != 0) as u64) << l);
            assert_eq!(super::bits_of_bytes(&bytes[..n]), want, "{n}");
        }
    }
}
