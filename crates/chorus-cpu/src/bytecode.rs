//! The flat, warp-wide instruction set the IR is compiled to.
//!
//! Every instruction works on whole registers of 32 lanes under the warp's execution mask.
//! Structured control flow becomes explicit jumps plus mask bookkeeping in per-function "mask
//! slots" (see [`Op::IfBegin`] and friends), so a warp can stop at any `syncthreads` and resume
//! from its program counter.

use crate::texture::Component;
use crate::value::Kind;
use chorus_lang::Span;
use chorus_lang::ir::tensor::MmaKind;
use chorus_lang::ir::{AtomicOp, Builtin, MathFn, WarpReduceOp};

/// A register index, relative to the function's frame.
pub(crate) type Reg = u32;

/// One scalar piece of a value: its kind and its byte offset in the value's memory layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Leaf {
    pub(crate) kind: Kind,
    pub(crate) offset: u32,
}

/// Unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Not,
    BitNot,
    Abs,
    Recip,
    Saturate,
    DoubleToIntRn,
    Clz,
    Popc,
    Brev,
    Ffs,
}

/// Binary operations (comparisons give `bool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    /// The flooring remainder (`floor-mod`): the sign of the divisor.
    FloorMod,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

/// Where an index variable comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexSource {
    ThreadIdx(usize),
    BlockIdx(usize),
    BlockDim(usize),
    GridDim(usize),
    LaneId,
}

/// The four shuffles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Idx,
    Up,
    Down,
    Xor,
}

/// Votes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VoteOp {
    Ballot,
    All,
    Any,
}

/// One instruction.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// Every lane of `dst` := `bits`.
    Const {
        dst: Reg,
        bits: u64,
    },
    /// Every lane of `dst` := `src` (temporaries).
    Copy {
        dst: Reg,
        src: Reg,
    },
    /// Active lanes of `dst` := `src` (assignments to variables).
    CopyMasked {
        dst: Reg,
        src: Reg,
    },
    /// Per lane `cond ? a : b`.
    Select {
        dst: Reg,
        cond: Reg,
        a: Reg,
        b: Reg,
    },
    /// An index variable (as `int`).
    Index {
        dst: Reg,
        source: IndexSource,
    },
    Unary {
        op: UnOp,
        kind: Kind,
        dst: Reg,
        a: Reg,
    },
    Binary {
        op: BinOp,
        kind: Kind,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Fma {
        kind: Kind,
        dst: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Math1 {
        f: MathFn,
        kind: Kind,
        dst: Reg,
        a: Reg,
    },
    Math2 {
        f: MathFn,
        kind: Kind,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Convert {
        from: Kind,
        to: Kind,
        dst: Reg,
        src: Reg,
    },
    /// `dst := base + index * stride` on pointers (`index` canonical of `index_kind`).
    PtrIndex {
        dst: Reg,
        base: Reg,
        index: Reg,
        index_kind: Kind,
        stride: i64,
    },
    /// `dst := base + bytes`.
    PtrAdd {
        dst: Reg,
        base: Reg,
        bytes: i64,
    },
    /// A pointer to byte `offset` of the current frame in each lane's local stack.
    LocalAddr {
        dst: Reg,
        offset: u32,
    },
    /// Active lanes: `dst := *(addr + offset)`.
    Load {
        dst: Reg,
        addr: Reg,
        kind: Kind,
        offset: u32,
    },
    /// Active lanes: `*(addr + offset) := src`.
    Store {
        addr: Reg,
        src: Reg,
        kind: Kind,
        offset: u32,
    },
    Jump {
        target: u32,
    },
    /// `m[slot] := exec; m[slot+1] := exec & !cond; exec &= cond`; jumps to `else_target`
    /// when no lane takes the branch.
    IfBegin {
        cond: Reg,
        slot: u32,
        else_target: u32,
    },
    /// `exec := m[slot+1]`; jumps to `end_target` when no lane takes it.
    Else {
        slot: u32,
        end_target: u32,
    },
    /// `exec := m[slot] & !parked`: lanes that broke, continued or returned stay out.
    EndIf {
        slot: u32,
    },
    /// `m[slot] := exec` (entry), `m[slot+1] := 0` (broke), `m[slot+2] := 0` (continued).
    LoopBegin {
        slot: u32,
    },
    /// `exec &= cond` (no condition: unchanged); leaves the loop when no lane is left.
    LoopTest {
        cond: Option<Reg>,
        exit: u32,
    },
    /// Lanes that continued rejoin before the step.
    LoopContinue {
        slot: u32,
    },
    /// Lanes that broke rejoin; `exec := m[slot] & !parked`.
    LoopEnd {
        slot: u32,
    },
    /// Active lanes leave the innermost loop or switch (slot + 1).
    Break {
        slot: u32,
    },
    /// Active lanes skip to the loop's step (slot + 2).
    Continue {
        slot: u32,
    },
    /// `m[slot] := exec` (entry), `m[slot+1] := 0` (broke), `m[slot+2] := exec` (unmatched).
    SwitchBegin {
        slot: u32,
    },
    /// Unmatched lanes whose scrutinee equals one of `values` run the clause.
    Case {
        slot: u32,
        scrutinee: Reg,
        values: (u32, u32),
        next: u32,
    },
    /// Lanes no clause matched.
    Default {
        slot: u32,
    },
    SwitchEnd {
        slot: u32,
    },
    /// Active lanes store their result (if any) and leave the function.
    Return {
        value: Option<Reg>,
    },
    /// Calls `calls[index]`.
    Call {
        index: u32,
    },
    /// The end of the function.
    End,
    SyncThreads,
    Fence,
    Shfl {
        mode: ShflMode,
        dst: Reg,
        value: Reg,
        lane: Reg,
        width: Reg,
        mask: Reg,
    },
    Vote {
        op: VoteOp,
        dst: Reg,
        mask: Reg,
        pred: Reg,
    },
    ActiveMask {
        dst: Reg,
    },
    MatchAny {
        dst: Reg,
        mask: Reg,
        value: Reg,
    },
    MatchAll {
        dst: Reg,
        mask: Reg,
        value: Reg,
        pred: Reg,
    },
    Reduce {
        op: WarpReduceOp,
        kind: Kind,
        dst: Reg,
        mask: Reg,
        value: Reg,
    },
    Atomic {
        op: AtomicOp,
        kind: Kind,
        dst: Reg,
        addr: Reg,
        a: Reg,
        b: Reg,
    },
    CurandInit {
        seed: Reg,
        subsequence: Reg,
        offset: Reg,
        state: Reg,
    },
    CurandUniform {
        dst: Reg,
        state: Reg,
        double: bool,
    },
    CurandNormal {
        dst: Reg,
        state: Reg,
        double: bool,
    },
    Printf {
        index: u32,
    },
    /// A texture read or a surface access (`op` is the IR's): `handle` the object, `coords`
    /// its first 1 to 3 coordinates, `value` the first of `count` registers written (for a
    /// surface write), `dst` the first of `count` registers read into, each a `component`.
    Texture {
        op: Builtin,
        dst: Reg,
        handle: Reg,
        coords: [Reg; 3],
        value: Reg,
        component: Component,
        count: u8,
    },
    /// `mma.sync` over the whole warp (`exec/tensor.rs`): fragments `a`, `b`, `c` (their
    /// registers in a row), the result's registers from `dst`.
    Mma {
        kind: MmaKind,
        dst: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `ldmatrix`: `count` 8×8 matrices whose row addresses lanes give in `addr`.
    LdMatrix {
        count: u8,
        trans: bool,
        dst: Reg,
        addr: Reg,
    },
    /// `cp.async` of `bytes` bytes from `src` to `dst`, complete at once (and tracked until the
    /// kernel waits for it: `exec::async_copies`).
    CpAsync {
        dst: Reg,
        src: Reg,
        bytes: u8,
    },
    /// `cp.async.commit_group`.
    CpAsyncCommit,
    /// `cp.async.wait_group N`.
    CpAsyncWait(u8),
    /// `cp.async.wait_all`.
    CpAsyncWaitAll,
    /// `__syncwarp`: the lanes run in lockstep already; it orders `cp.async` completions
    /// between them.
    SyncWarp,
}

/// A call site: argument registers copied into the callee's parameters, result copied back.
#[derive(Clone, Debug)]
pub(crate) struct CallSite {
    pub(crate) function: u32,
    /// (caller register, callee register) per leaf.
    pub(crate) args: Vec<(Reg, Reg)>,
    /// Caller registers receiving the result's leaves.
    pub(crate) dest: Option<(Reg, u32)>,
}

/// One argument of a `printf`.
#[derive(Clone, Debug)]
pub(crate) struct PrintfArg {
    pub(crate) reg: Reg,
    pub(crate) kind: Kind,
    /// For `%s`: the argument is a pointer to bytes.
    pub(crate) is_byte_pointer: bool,
}

/// A `printf` statement.
#[derive(Clone, Debug)]
pub(crate) struct PrintfSite {
    pub(crate) format: crate::printf::Format,
    pub(crate) args: Vec<PrintfArg>,
}

/// A compiled function.
#[derive(Clone, Debug)]
pub(crate) struct FunctionCode {
    pub(crate) name: String,
    pub(crate) code: Vec<Op>,
    /// The span of each instruction, for fault messages.
    pub(crate) spans: Vec<Span>,
    pub(crate) n_regs: u32,
    pub(crate) n_masks: u32,
    /// Bytes of local memory (address-taken variables) per lane.
    pub(crate) local_bytes: u32,
    /// Each parameter's first register and its leaves.
    pub(crate) params: Vec<(Reg, Vec<Leaf>)>,
    /// The first register of the result.
    pub(crate) ret_reg: Reg,
    /// Number of leaves of the result (0 for `void`).
    pub(crate) ret_leaves: u32,
    /// Functions this one calls.
    pub(crate) callees: Vec<u32>,
    /// Static shared slots it declares.
    pub(crate) shared_slots: Vec<u32>,
}

/// The whole compiled module.
#[derive(Clone, Debug, Default)]
pub(crate) struct Program {
    pub(crate) functions: Vec<FunctionCode>,
    pub(crate) calls: Vec<CallSite>,
    pub(crate) case_values: Vec<u64>,
    pub(crate) printfs: Vec<PrintfSite>,
    /// Byte size of each static shared slot.
    pub(crate) shared_sizes: Vec<usize>,
    /// Lanes per warp: 32, or 64 for AMD CDNA's waves (the target's `warp_width`).
    pub(crate) warp_width: u32,
}
