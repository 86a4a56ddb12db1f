//! The lowering of a kernel's IR to Cranelift IR: thread loops, regions between barriers,
//! lane arrays, bounds-checked accesses.

use super::NativeKernel;
use super::runtime::{self, Ctx, Root, RootSource, kind_code};
use crate::memory::{DYNAMIC_SHARED_ID, OFFSET_MASK, STATIC_SHARED_BASE, encode};
use crate::value::Kind;
use chorus_lang::Span;
use chorus_lang::ir::visit::{Node, for_each_node};
use chorus_lang::ir::{
    self, Block, Builtin, Expr, ExprKind, FunctionKind, IndexVar, LocalStorage, MathFn, Stmt,
    StmtKind,
};
use chorus_lang::types::Type;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    self as cir, AbiParam, Block as CBlock, InstBuilder, MemFlags, Signature, UserFuncName, Value,
    types,
};
use cranelift_codegen::isa::CallConv;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module as _, default_libcall_names};
use std::mem::offset_of;

mod simd;
mod warp;

type R<T> = Result<T, String>;

/// Deepest statement and expression nesting compiled (the lowering recurses).
const MAX_DEPTH: usize = chorus_lang::stack::SMALL_STACK_DEPTH;

/// A JIT module for the host.
pub(super) fn new_jit() -> R<JITModule> {
    let mut flags = settings::builder();
    let e = |e: settings::SetError| e.to_string();
    flags.set("opt_level", "speed").map_err(e)?;
    flags.set("use_colocated_libcalls", "false").map_err(e)?;
    flags.set("is_pic", "false").map_err(e)?;
    let isa = cranelift_native::builder()
        .map_err(|m| format!("the host is not supported by Cranelift: {m}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    Ok(JITModule::new(JITBuilder::with_isa(
        isa,
        default_libcall_names(),
    )))
}

/// Compiles kernel `index` of `module` into `jit`.
/// Marks a fault position recorded by a device function: an index into
/// [`DeviceCache::spans`] rather than the kernel's own.
pub(crate) const DEVICE_SPAN: u32 = 1 << 31;

/// Device functions compiled once per module and shared by its kernels (their roots are the
/// module's, registered first by every function, so their indices agree).
#[derive(Default)]
pub(crate) struct DeviceCache {
    funcs: Vec<(usize, FuncId, Option<Vec<cir::Type>>)>,
    /// Fault positions of device functions (indices carry [`DEVICE_SPAN`]).
    pub(crate) spans: Vec<Span>,
}

pub(super) fn compile_kernel(
    jit: &mut JITModule,
    cache: &mut DeviceCache,
    module: &ir::Module,
    index: usize,
    warp_width: u32,
    global_ids: &[u32],
) -> R<NativeKernel> {
    let func = module.functions.get(index).ok_or("no such function")?;
    if func.kind != FunctionKind::Kernel {
        return Err("a device function".into());
    }
    let mut deepest = 0;
    for_each_node(Node::Block(&func.body), |_, d| deepest = deepest.max(d));
    if deepest > MAX_DEPTH {
        return Err(format!(
            "a body nested {deepest} deep (the native compiler takes {MAX_DEPTH})"
        ));
    }
    // Shared slots as the interpreter numbers them: `:shared` globals first, then each
    // function's shared arrays in order.
    let mut shared_globals = Vec::new();
    let mut next_slot = 0u32;
    for g in &module.globals {
        if g.qualifiers.contains(&ir::GlobalQualifier::Shared) {
            let size = module
                .layout(&g.ty)
                .ok_or("a shared global of unknown size")?
                .0;
            shared_globals.push(Some((next_slot, size)));
            next_slot += 1;
        } else {
            shared_globals.push(None);
        }
    }
    for f in &module.functions[..index] {
        for_each_node(Node::Block(&f.body), |n, _| {
            if let Node::Stmt(s) = n
                && matches!(s.kind, StmtKind::SharedArray { .. })
            {
                next_slot += 1;
            }
        });
    }
    // The device functions the kernel reaches, none recursive (native recursion could not be
    // bounded as the interpreter bounds it).
    let reached = reachable_functions(module, index)?;
    let call_conv = jit.target_config().default_call_conv;
    let mut funcs = Vec::new();
    let mut sigs = Vec::new();
    for &f in &reached {
        if let Some((_, id, _)) = cache.funcs.iter().find(|(g, _, _)| *g == f) {
            funcs.push((f, *id));
            continue;
        }
        let callee = &module.functions[f];
        let mut sig = Signature::new(call_conv);
        sig.params.push(AbiParam::new(types::I64));
        sig.params.extend([types::I32; 3].map(AbiParam::new));
        sig.params.push(AbiParam::new(types::I64));
        let ret_leaves = match &callee.ret {
            Type::Void => 0,
            t => type_leaves(module, t).map_or(0, |l| l.len()),
        };
        if ret_leaves > 1 {
            // Results of several leaves go through memory the caller passes.
            sig.params.push(AbiParam::new(types::I64));
        }
        for p in &callee.params {
            let leaves = type_leaves(module, &callee[p.local].ty)
                .ok_or_else(|| format!("calling `{}` (its parameters)", callee.name))?;
            for (k, _) in leaves {
                sig.params.push(AbiParam::new(cty(k)));
            }
        }
        sig.returns.push(AbiParam::new(types::I32));
        let ret = match &callee.ret {
            Type::Void => Vec::new(),
            t => type_leaves(module, t)
                .ok_or_else(|| format!("calling `{}` (its result)", callee.name))?
                .into_iter()
                .map(|(k, _)| cty(k))
                .collect(),
        };
        if ret.len() == 1 {
            sig.returns.push(AbiParam::new(ret[0]));
        }
        let name = format!("f{f}_{}", jit.declarations().get_functions().count());
        let id = jit
            .declare_function(&name, Linkage::Local, &sig)
            .map_err(|e| e.to_string())?;
        funcs.push((f, id));
        sigs.push((f, id, sig, ret));
    }
    let mut kernel_sig = Signature::new(call_conv);
    kernel_sig.params.push(AbiParam::new(types::I64));
    kernel_sig.returns.push(AbiParam::new(types::I32));
    let name = format!("k{index}_{}", jit.declarations().get_functions().count());
    let kernel_id = jit
        .declare_function(&name, Linkage::Local, &kernel_sig)
        .map_err(|e| e.to_string())?;
    let mut carry = Carry {
        roots: Vec::new(),
        spans: Vec::new(),
        shared: Vec::new(),
        next_slot,
        lane_slots: 0,
        mask_slots: 0,
    };
    let mut fctx = FunctionBuilderContext::new();
    let mut jobs: Vec<(usize, FuncId, Signature, Option<Vec<cir::Type>>)> = sigs
        .into_iter()
        .map(|(f, id, sig, ret)| (f, id, sig, Some(ret)))
        .collect();
    jobs.push((index, kernel_id, kernel_sig, None));
    let mut kernel_simd = false;
    for (f, id, sig, device) in jobs {
        let is_device = device.is_some();
        let func = &module.functions[f];
        // A kernel is tried with SIMD over its threads first; a body the vector code does
        // not take (or that Cranelift refuses) is lowered again without.
        let attempts: &[bool] = if is_device || !simd_wanted() {
            &[false]
        } else {
            &[true, false]
        };
        let shared_before = carry.shared.clone();
        let mut outcome = Err(String::new());
        for &simd in attempts {
            carry.shared = shared_before.clone();
            outcome = lower_function(LowerJob {
                jit,
                cache,
                carry: &mut carry,
                fctx: &mut fctx,
                funcs: &funcs,
                module,
                func,
                id,
                sig: sig.clone(),
                device: device.clone(),
                simd,
                warp_width,
                call_conv,
                global_ids,
                shared_globals: &shared_globals,
            });
            if outcome.is_ok() {
                break;
            }
        }
        kernel_simd = outcome?;
        if is_device {
            cache.funcs.push((f, id, device));
        }
    }
    jit.finalize_definitions().map_err(|e| e.to_string())?;
    let entry = jit.get_finalized_function(kernel_id);
    Ok(NativeKernel {
        entry,
        roots: carry.roots,
        lane_slots: carry.lane_slots,
        mask_slots: carry.mask_slots,
        spans: carry.spans,
        shared: carry.shared,
        simd: kernel_simd,
        generation: 0,
    })
}

/// One function to lower: a device function, or the kernel (with or without SIMD).
struct LowerJob<'a, 'j> {
    jit: &'j mut JITModule,
    cache: &'j mut DeviceCache,
    carry: &'j mut Carry,
    fctx: &'j mut FunctionBuilderContext,
    funcs: &'a [(usize, FuncId)],
    module: &'a ir::Module,
    func: &'a ir::Function,
    id: FuncId,
    sig: Signature,
    device: Option<Vec<cir::Type>>,
    simd: bool,
    warp_width: u32,
    call_conv: CallConv,
    global_ids: &'a [u32],
    shared_globals: &'a [Option<(u32, usize)>],
}

/// Lowers and defines one function of a kernel's job list; on `Err` nothing of it is defined.
/// `Ok(true)`: its thread loop runs chunks of threads as vectors.
fn lower_function(job: LowerJob<'_, '_>) -> R<bool> {
    let LowerJob {
        jit,
        cache,
        carry,
        fctx,
        funcs,
        module,
        func,
        id,
        sig,
        device,
        simd,
        warp_width,
        call_conv,
        global_ids,
        shared_globals,
    } = job;
    let is_device = device.is_some();
    let vectorised;
    let mut ctx = jit.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    {
        let b = FunctionBuilder::new(&mut ctx.func, fctx);
        // A device function starts from the module's roots alone and records its fault
        // positions in the module's table; the kernel keeps its own.
        let (spans, span_flag) = if is_device {
            (std::mem::take(&mut cache.spans), DEVICE_SPAN)
        } else {
            (Vec::new(), 0)
        };
        let mut l = Lower {
            b,
            jit,
            funcs,
            span_flag,
            device,
            sret: None,
            module,
            func,
            warp_width,
            call_conv,
            global_ids,
            shared_globals: shared_globals.to_vec(),
            next_slot: carry.next_slot,
            shared: std::mem::take(&mut carry.shared),
            roots: Vec::new(),
            root_vals: Vec::new(),
            roots_ptr: None,
            root_limits: Vec::new(),
            homes: vec![Home::Unset; func.locals.len()],
            spans,
            ctx: None,
            entry: None,
            t: Variable::from_u32(0),
            tid: [Variable::from_u32(0); 3],
            next_thread: None,
            chain: Vec::new(),
            loops: Vec::new(),
            lane_slots: 0,
            mask_slots: 0,
            refresh: Vec::new(),
            warp_results: Vec::new(),
            simd,
            vs: None,
            vectorised: false,
        };
        let lowered = if is_device {
            l.device_function()
        } else {
            l.kernel()
        };
        if is_device {
            // Positions recorded by a failed attempt index nothing; keeping them is harmless.
            cache.spans = std::mem::take(&mut l.spans);
        }
        if let Err(e) = lowered {
            // The builder stopped half-way: its context keeps that state, so the next
            // function (or attempt) starts from a fresh one.
            drop(l);
            *fctx = FunctionBuilderContext::new();
            return Err(e);
        }
        l.b.seal_all_blocks();
        vectorised = l.vectorised;
        if is_device {
            carry.shared = l.shared;
        } else {
            *carry = Carry {
                roots: l.roots,
                spans: l.spans,
                shared: l.shared,
                next_slot: l.next_slot,
                lane_slots: l.lane_slots,
                mask_slots: l.mask_slots,
            };
        }
        l.b.finalize();
    }
    jit.define_function(id, &mut ctx)
        .map_err(|e| format!("Cranelift: {e:?}"))?;
    jit.clear_context(&mut ctx);
    Ok(vectorised)
}

/// SIMD over threads is tried unless `CHORUS_CPU_SIMD=0` (read at each compile, so a benchmark
/// can compare both in one process).
fn simd_wanted() -> bool {
    std::env::var_os("CHORUS_CPU_SIMD").is_none_or(|v| v != "0")
}

/// What one function's lowering hands to the next.
struct Carry {
    roots: Vec<RootSource>,
    spans: Vec<Span>,
    shared: Vec<(u32, usize)>,
    next_slot: u32,
    lane_slots: u32,
    mask_slots: u32,
}

/// The device functions kernel `index` calls, directly or not; recursion is refused.
fn reachable_functions(module: &ir::Module, index: usize) -> R<Vec<usize>> {
    let calls = |f: usize| {
        let mut out = Vec::new();
        for_each_node(Node::Block(&module.functions[f].body), |n, _| {
            if let Node::Expr(Expr {
                kind: ExprKind::Call { function, .. },
                ..
            }) = n
            {
                out.push(function.index());
            }
        });
        out
    };
    // Depth-first, with the path on a stack: a callee on the path is a cycle.
    let mut order = Vec::new();
    let mut state = vec![0u8; module.functions.len()]; // 0 new, 1 on the path, 2 done
    let mut stack: Vec<(usize, Vec<usize>)> = vec![(index, calls(index))];
    state[index] = 1;
    while let Some((f, pending)) = stack.last_mut() {
        match pending.pop() {
            Some(g) => {
                if g >= module.functions.len() {
                    return Err("a call of an unknown function".into());
                }
                if module.functions[g].kind != FunctionKind::Device {
                    return Err(format!("calling the kernel `{}`", module.functions[g].name));
                }
                match state[g] {
                    1 => {
                        return Err(format!(
                            "recursion through `{}` (the interpreter bounds its depth)",
                            module.functions[g].name
                        ));
                    }
                    0 => {
                        let mut deepest = 0;
                        for_each_node(Node::Block(&module.functions[g].body), |_, d| {
                            deepest = deepest.max(d)
                        });
                        if deepest > MAX_DEPTH {
                            return Err(format!("`{}` nested too deep", module.functions[g].name));
                        }
                        state[g] = 1;
                        let c = calls(g);
                        stack.push((g, c));
                    }
                    _ => {}
                }
            }
            None => {
                let f = *f;
                state[f] = 2;
                if f != index {
                    order.push(f);
                }
                stack.pop();
            }
        }
    }
    Ok(order)
}

#[derive(Clone, Debug)]
enum Home {
    Unset,
    /// A register (a Cranelift variable).
    Var(Variable),
    /// A lane array slot (lives across barriers).
    Lane(u32),
    /// A vector or structure in registers, one variable per leaf.
    Vars(Vec<Variable>),
    /// A vector or structure in lane arrays, one slot per leaf.
    Lanes(Vec<u32>),
    /// A pointer parameter never assigned: its variable and its root.
    PtrParam(Variable, u32),
    /// A static shared array: root, dimensions, element size.
    Shared(u32, Vec<u64>, u64),
    /// A static shared scalar.
    SharedScalar(u32),
    /// The dynamic shared memory base.
    Dynamic(u32),
}

enum Target {
    Thread {
        brk: CBlock,
        cont: CBlock,
    },
    Switch {
        brk: CBlock,
    },
    /// A loop over regions: its chain positions (loop mask, iteration mask).
    Region {
        lp: usize,
        it: usize,
    },
}

/// Where a `break` or `continue` goes.
enum Exit {
    /// A block of the thread's own code (a loop inside one region).
    Jump(CBlock),
    /// Out of a loop over regions: the thread clears the masks from this chain position on,
    /// which keeps it out of the rest of the loop (or of this iteration), and goes to the next
    /// thread.
    Leave(usize),
}

/// An address to check: through a root, with (index, stride, is 64-bit) terms, or a pointer.
#[derive(Clone)]
enum Addr {
    Root(u32, Vec<(Value, i64, bool)>),
    Ptr(Value),
}

struct Lower<'a, 'f, 'j> {
    b: FunctionBuilder<'f>,
    jit: &'j mut JITModule,
    /// The device functions the kernel reaches: (function index, declared id).
    funcs: &'a [(usize, FuncId)],
    /// Compiling a device function (returning these leaves), not a kernel.
    device: Option<Vec<cir::Type>>,
    /// Where a device function with several result leaves stores them.
    sret: Option<Value>,
    /// Or-ed into fault position indices ([`DEVICE_SPAN`] in device functions).
    span_flag: u32,
    module: &'a ir::Module,
    func: &'a ir::Function,
    warp_width: u32,
    call_conv: CallConv,
    global_ids: &'a [u32],
    shared_globals: Vec<Option<(u32, usize)>>,
    next_slot: u32,
    shared: Vec<(u32, usize)>,
    roots: Vec<RootSource>,
    /// (base, len, off, ptr) of each root, loaded in the entry block.
    root_vals: Vec<(Value, Value, Value, Value)>,
    /// The context's root array (the vector code reads its fields where it uses them).
    roots_ptr: Option<Value>,
    /// Per root and access size (1, 2, 4, 8): (start offset, last valid offset), computed in
    /// the entry block so that an access is one unsigned compare: a root whose offset is
    /// misaligned for the size, or shorter than it, gets a start far out of range.
    root_limits: Vec<[(Value, Value); 4]>,
    homes: Vec<Home>,
    spans: Vec<Span>,
    ctx: Option<Value>,
    entry: Option<Entry>,
    t: Variable,
    tid: [Variable; 3],
    next_thread: Option<CBlock>,
    chain: Vec<u32>,
    loops: Vec<Target>,
    lane_slots: u32,
    mask_slots: u32,
    /// Assigned parameters of a kernel without barriers: (variable, value) to set again at the
    /// start of each thread.
    refresh: Vec<(Variable, Value)>,
    /// Warp collectives already run for the statement being lowered, and the lane slot of
    /// each one's results (`warp.rs`), and for `match-all-sync` the slot of its predicate
    /// pointer.
    warp_results: Vec<(*const Expr, u32, Option<u32>)>,
    /// Try SIMD over the threads of a kernel without barriers ([`simd`]).
    simd: bool,
    /// The vector body's state while it is emitted.
    vs: Option<simd::VState>,
    /// The thread loop was emitted with SIMD.
    vectorised: bool,
}

#[derive(Clone, Copy)]
struct Entry {
    lanes: Value,
    masks: Value,
    table: Value,
    table_shift: Value,
    threads: Value,
    block_idx: [Value; 3],
    block_dim: [Value; 3],
    grid_dim: [Value; 3],
}

fn unsupported<T>(span: &Span, what: impl std::fmt::Display) -> R<T> {
    Err(format!("{what} at {span}"))
}

fn cty(kind: Kind) -> cir::Type {
    match kind {
        Kind::Bool | Kind::I8 | Kind::U8 => types::I8,
        Kind::I16 | Kind::U16 => types::I16,
        Kind::I32 | Kind::U32 => types::I32,
        Kind::I64 | Kind::U64 | Kind::Ptr => types::I64,
        Kind::F32 => types::F32,
        Kind::F64 => types::F64,
        // Their raw bits; every operation on them calls the interpreter's functions.
        Kind::F16 | Kind::BF16 => types::I16,
        Kind::Fp8 | Kind::Fp4 => types::I8,
    }
}

/// The leaves of `ty` (kind, byte offset), flattened as the interpreter flattens them; `None`
/// for what the native code does not hold (cuRAND states, texture handles, void).
fn type_leaves(module: &ir::Module, ty: &Type) -> Option<Vec<(Kind, i64)>> {
    match ty {
        Type::Vector(v) => {
            let k = Kind::of_scalar(v.element());
            Some(
                (0..v.len())
                    .map(|i| (k, (i * v.element().size()) as i64))
                    .collect(),
            )
        }
        Type::Struct(name) => {
            let def = module.struct_def(name)?;
            let mut out = Vec::new();
            for f in &def.fields {
                for (k, o) in type_leaves(module, &f.ty)? {
                    out.push((k, o + f.offset as i64));
                }
            }
            Some(out)
        }
        Type::TextureObject | Type::SurfaceObject => None,
        t => {
            let k = Kind::of(t)?;
            Some(vec![(k, 0)])
        }
    }
}

/// The integer compare for comparison `op` (`None` for another operation).
fn int_cc(op: crate::bytecode::BinOp, signed: bool) -> Option<IntCC> {
    use crate::bytecode::BinOp as B;
    Some(match (op, signed) {
        (B::Eq, _) => IntCC::Equal,
        (B::Ne, _) => IntCC::NotEqual,
        (B::Lt, true) => IntCC::SignedLessThan,
        (B::Gt, true) => IntCC::SignedGreaterThan,
        (B::Le, true) => IntCC::SignedLessThanOrEqual,
        (B::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (B::Lt, false) => IntCC::UnsignedLessThan,
        (B::Gt, false) => IntCC::UnsignedGreaterThan,
        (B::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (B::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        _ => return None,
    })
}

/// The float compare for comparison `op` (ordered: false when either side is NaN, except
/// `Ne`, as C's operators); `None` for another operation.
fn float_cc(op: crate::bytecode::BinOp) -> Option<FloatCC> {
    use crate::bytecode::BinOp as B;
    Some(match op {
        B::Eq => FloatCC::Equal,
        B::Ne => FloatCC::NotEqual,
        B::Lt => FloatCC::LessThan,
        B::Gt => FloatCC::GreaterThan,
        B::Le => FloatCC::LessThanOrEqual,
        B::Ge => FloatCC::GreaterThanOrEqual,
        _ => return None,
    })
}

fn is_composite(ty: &Type) -> bool {
    matches!(ty, Type::Vector(_) | Type::Struct(_))
}

fn is_sync(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Builtin {
            op: Builtin::SyncThreads | Builtin::SyncWarp,
            ..
        }
    )
}

/// Whether `s` holds a point where the region method splits: a barrier or a warp collective.
fn has_barrier(s: &Stmt) -> bool {
    let mut found = false;
    for_each_node(Node::Stmt(s), |n, _| {
        if let Node::Expr(e) = n
            && (is_sync(e) || warp::is_collective(e))
        {
            found = true;
        }
    });
    found
}

fn block_has_barrier(b: &Block) -> bool {
    b.stmts.iter().any(has_barrier)
}

const TRUSTED: MemFlags = MemFlags::trusted();

/// What one thread loop of a region runs, in order: statements, and the operands of the warp
/// collective that follows (`warp.rs`).
enum Item<'s> {
    Stmt(&'s Stmt),
    Operands(Vec<(u32, &'s Expr)>),
}

/// The position a fault of an access to `place` names: its last index's for an `aref`, as
/// the interpreter reports it (the span current when its load or store is emitted).
fn access_span(place: &Expr) -> &Span {
    match &place.kind {
        ExprKind::Aref { indices, .. } => indices.last().map_or(&place.span, |i| &i.span),
        ExprKind::Field { base, .. } if matches!(base.kind, ExprKind::Aref { .. }) => {
            access_span(base)
        }
        _ => &place.span,
    }
}

impl<'a, 'f, 'j> Lower<'a, 'f, 'j> {
    fn ctx(&self) -> Value {
        self.ctx.expect("set at entry")
    }

    fn en(&self) -> Entry {
        self.entry.expect("set at entry")
    }

    fn kind(&self, ty: &Type, span: &Span) -> R<Kind> {
        match ty {
            Type::TextureObject | Type::SurfaceObject => unsupported(span, "texture objects"),
            _ => match Kind::of(ty) {
                Some(k) => Ok(k),
                _ => unsupported(span, format!("values of type `{ty}`")),
            },
        }
    }

    fn leaves_of(&self, ty: &Type, span: &Span) -> R<Vec<(Kind, i64)>> {
        type_leaves(self.module, ty).ok_or_else(|| format!("values of type `{ty}` at {span}"))
    }

    /// Component or field `index` of `ty`: (first leaf, number of leaves, byte offset).
    fn field_pos(&self, ty: &Type, index: usize, span: &Span) -> R<(usize, usize, i64)> {
        match ty {
            Type::Vector(v) if index < v.len() => {
                Ok((index, 1, (index * v.element().size()) as i64))
            }
            Type::Struct(name) => {
                let def = self
                    .module
                    .struct_def(name)
                    .ok_or_else(|| format!("an unknown structure at {span}"))?;
                let field = def
                    .fields
                    .get(index)
                    .ok_or_else(|| format!("an unknown field at {span}"))?;
                let mut first = 0;
                for f in &def.fields[..index] {
                    first += self.leaves_of(&f.ty, span)?.len();
                }
                let n = self.leaves_of(&field.ty, span)?.len();
                Ok((first, n, field.offset as i64))
            }
            _ => unsupported(span, "this component access"),
        }
    }

    /// A chain of fields over a memory place (`aref`, global): its address and byte offset.
    fn memory_field(&mut self, e: &Expr) -> R<Option<(Addr, i64)>> {
        match &e.kind {
            ExprKind::Aref { .. } | ExprKind::Global(_) => Ok(Some((self.place_addr(e)?, 0))),
            ExprKind::Field { base, index } => {
                let (_, _, off) = self.field_pos(&base.ty, *index, &e.span)?;
                Ok(self.memory_field(base)?.map(|(a, o)| (a, o + off)))
            }
            _ => Ok(None),
        }
    }

    /// A chain of fields over a register local: the local and its first leaf.
    fn local_field(&self, e: &Expr) -> R<Option<(ir::LocalId, usize)>> {
        match &e.kind {
            ExprKind::Local(id) => Ok(Some((*id, 0))),
            ExprKind::Field { base, index } => {
                let (first, _, _) = self.field_pos(&base.ty, *index, &e.span)?;
                Ok(self.local_field(base)?.map(|(l, f)| (l, f + first)))
            }
            _ => Ok(None),
        }
    }

    /// Every leaf of `e`'s value (one for a scalar).
    fn vals(&mut self, e: &Expr) -> R<Vec<Value>> {
        if !is_composite(&e.ty) {
            return Ok(vec![self.expr(e)?]);
        }
        let leaves = self.leaves_of(&e.ty, &e.span)?;
        match &e.kind {
            ExprKind::Local(id) => match self.homes[id.index()].clone() {
                Home::Vars(vars) => Ok(vars.iter().map(|v| self.b.use_var(*v)).collect()),
                Home::Lanes(slots) => {
                    let mut out = Vec::new();
                    for (slot, (k, _)) in slots.iter().zip(&leaves) {
                        let a = self.lane_addr(*slot);
                        out.push(self.b.ins().load(cty(*k), TRUSTED, a, 0));
                    }
                    Ok(out)
                }
                _ => unsupported(&e.span, "this variable"),
            },
            ExprKind::Aref { .. } | ExprKind::Global(_) | ExprKind::Field { .. } => {
                if let Some((addr, off)) = self.memory_field(e)? {
                    let span = access_span(e).clone();
                    let mut out = Vec::new();
                    for (k, o) in &leaves {
                        out.push(self.access_at(addr.clone(), off + o, *k, None, &span)?);
                    }
                    return Ok(out);
                }
                let ExprKind::Field { base, index } = &e.kind else {
                    return unsupported(&e.span, "this value");
                };
                let all = self.vals(base)?;
                let (first, n, _) = self.field_pos(&base.ty, *index, &e.span)?;
                Ok(all[first..first + n].to_vec())
            }
            ExprKind::Construct(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    out.extend(self.vals(p)?);
                }
                if out.len() != leaves.len() {
                    return unsupported(&e.span, "a constructor of this shape");
                }
                Ok(out)
            }
            ExprKind::Cast { value, .. } => {
                let from = self.leaves_of(&value.ty, &value.span)?;
                if from.len() != leaves.len() || !is_composite(&value.ty) {
                    return unsupported(&e.span, "this conversion");
                }
                let v = self.vals(value)?;
                Ok(v.iter()
                    .zip(from.iter().zip(&leaves))
                    .map(|(x, ((fk, _), (tk, _)))| self.convert(*x, *fk, *tk))
                    .collect())
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                let vars: Vec<Variable> = leaves
                    .iter()
                    .map(|(k, _)| self.b.declare_var(cty(*k)))
                    .collect();
                let (tb, eb, end) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, tb, &[], eb, &[]);
                for (blk, branch) in [(tb, then), (eb, otherwise)] {
                    self.b.switch_to_block(blk);
                    let v = self.vals(branch)?;
                    for (var, x) in vars.iter().zip(v) {
                        self.b.def_var(*var, x);
                    }
                    self.b.ins().jump(end, &[]);
                }
                self.b.switch_to_block(end);
                Ok(vars.iter().map(|v| self.b.use_var(*v)).collect())
            }
            ExprKind::Call { function, args } => {
                let r = self.call_device_vals(e, function.index(), args)?;
                if r.len() != leaves.len() {
                    return unsupported(&e.span, "this call");
                }
                Ok(r)
            }
            ExprKind::Builtin { op, args } => self.vector_builtin(e, *op, args, &leaves),
            _ => unsupported(&e.span, format!("a `{}` value here", e.ty)),
        }
    }

    /// A scalar field or component: read from memory alone when its base is there.
    fn vals_of_field(&mut self, e: &Expr) -> R<Vec<Value>> {
        let kind = self.kind(&e.ty, &e.span)?;
        if let Some((addr, off)) = self.memory_field(e)? {
            let span = access_span(e).clone();
            return Ok(vec![self.access_at(addr, off, kind, None, &span)?]);
        }
        let ExprKind::Field { base, index } = &e.kind else {
            return unsupported(&e.span, "this field");
        };
        let all = self.vals(base)?;
        let (first, _, _) = self.field_pos(&base.ty, *index, &e.span)?;
        Ok(vec![all[first]])
    }

    /// Component-wise arithmetic on vectors (a scalar operand is used for every component).
    fn vector_builtin(
        &mut self,
        e: &Expr,
        op: Builtin,
        args: &[Expr],
        leaves: &[(Kind, i64)],
    ) -> R<Vec<Value>> {
        use crate::bytecode::BinOp as B;
        let Type::Vector(_) = e.ty else {
            return unsupported(&e.span, "this operation on a structure");
        };
        let bin = match op {
            Builtin::Add => B::Add,
            Builtin::Sub => B::Sub,
            Builtin::Mul => B::Mul,
            Builtin::Div | Builtin::FastDivide => B::Div,
            Builtin::Min => B::Min,
            Builtin::Max => B::Max,
            Builtin::Neg => {
                let [x] = args else {
                    return unsupported(&e.span, "this arity");
                };
                let v = self.vals(x)?;
                let mut out = Vec::new();
                for (x, (k, _)) in v.iter().zip(leaves) {
                    out.push(self.unary(op, *k, *x, &e.span)?.0);
                }
                return Ok(out);
            }
            _ => return unsupported(&e.span, format!("`{op:?}` on vectors")),
        };
        let [x, y] = args else {
            return unsupported(&e.span, "this arity");
        };
        let (xs, ys) = (self.vals(x)?, self.vals(y)?);
        let mut out = Vec::new();
        for (i, (k, _)) in leaves.iter().enumerate() {
            let a = if is_composite(&x.ty) { xs[i] } else { xs[0] };
            let b = if is_composite(&y.ty) { ys[i] } else { ys[0] };
            out.push(self.binary(bin, *k, a, b, *k, &e.span)?);
        }
        Ok(out)
    }

    /// Stores `vals` (the leaves of `place`'s type) into `place`: a local, a field of one, or
    /// memory.
    fn assign_vals(&mut self, place: &Expr, vals: &[Value], span: &Span) -> R<()> {
        if let Some((addr, off)) = self.memory_field(place)? {
            let leaves = self.leaves_of(&place.ty, span)?;
            let span = if matches!(place.kind, ExprKind::Global(_)) {
                span.clone()
            } else {
                access_span(place).clone()
            };
            for ((k, o), v) in leaves.iter().zip(vals) {
                self.access_at(addr.clone(), off + o, *k, Some(*v), &span)?;
            }
            return Ok(());
        }
        match self.local_field(place)? {
            Some((l, first)) if matches!(place.kind, ExprKind::Local(_)) => {
                let _ = first;
                self.set_local_vals(l, vals, span)
            }
            Some((l, first)) => match self.homes[l.index()].clone() {
                Home::Vars(vars) if first + vals.len() <= vars.len() => {
                    for (var, v) in vars[first..].iter().zip(vals) {
                        self.b.def_var(*var, *v);
                    }
                    Ok(())
                }
                Home::Lanes(slots) if first + vals.len() <= slots.len() => {
                    for (slot, v) in slots[first..].iter().zip(vals) {
                        let a = self.lane_addr(*slot);
                        self.b.ins().store(TRUSTED, *v, a, 0);
                    }
                    Ok(())
                }
                _ => unsupported(span, "assigning this field"),
            },
            None => unsupported(span, "assigning this place"),
        }
    }

    fn span_index(&mut self, span: &Span) -> u32 {
        self.spans.push(span.clone());
        (self.spans.len() - 1) as u32 | self.span_flag
    }

    fn iconst(&mut self, ty: cir::Type, v: i64) -> Value {
        let v = match ty.bits() {
            8 => v as u8 as i64,
            16 => v as u16 as i64,
            32 => v as u32 as i64,
            _ => v,
        };
        self.b.ins().iconst(ty, v)
    }

    /// Leaves a terminated block: later code goes to a fresh block nothing jumps to.
    fn dead_block(&mut self) {
        let d = self.b.create_block();
        self.b.switch_to_block(d);
    }

    // ---- the kernel: entry, homes, regions

    fn load_entry(&mut self, ctx: Value) {
        self.ctx = Some(ctx);
        let ld = |b: &mut FunctionBuilder<'_>, ty, off: usize| {
            b.ins().load(ty, TRUSTED, ctx, off as i32)
        };
        let u32s = |b: &mut FunctionBuilder<'_>, off: usize| {
            [0, 1, 2].map(|i| b.ins().load(types::I32, TRUSTED, ctx, (off + 4 * i) as i32))
        };
        let threads32 = ld(&mut self.b, types::I32, offset_of!(Ctx, threads));
        let threads = self.b.ins().uextend(types::I64, threads32);
        let entry = Entry {
            lanes: ld(&mut self.b, types::I64, offset_of!(Ctx, lanes)),
            masks: ld(&mut self.b, types::I64, offset_of!(Ctx, masks)),
            table: ld(&mut self.b, types::I64, offset_of!(Ctx, table)),
            table_shift: ld(&mut self.b, types::I64, offset_of!(Ctx, table_shift)),
            threads,
            block_idx: u32s(&mut self.b, offset_of!(Ctx, block_idx)),
            block_dim: u32s(&mut self.b, offset_of!(Ctx, block_dim)),
            grid_dim: u32s(&mut self.b, offset_of!(Ctx, grid_dim)),
        };
        self.entry = Some(entry);
    }

    /// A device function: one thread's call, its thread indexes passed by the caller.
    fn device_function(&mut self) -> R<()> {
        let func = self.func;
        let start = self.b.create_block();
        self.b.append_block_params_for_function_params(start);
        self.b.switch_to_block(start);
        let params = self.b.block_params(start).to_vec();
        self.load_entry(params[0]);
        self.tid = [0; 3].map(|_| self.b.declare_var(types::I32));
        self.t = self.b.declare_var(types::I64);
        for k in 0..3 {
            self.b.def_var(self.tid[k], params[1 + k]);
        }
        self.b.def_var(self.t, params[4]);
        let mut at = 5;
        if self.device.as_ref().is_some_and(|r| r.len() > 1) {
            self.sret = Some(params[5]);
            at = 6;
        }
        for p in &func.params {
            let leaves = self.leaves_of(&func[p.local].ty, &func.span)?;
            let mut vars = Vec::new();
            for (k, _) in &leaves {
                let var = self.b.declare_var(cty(*k));
                self.b.def_var(var, params[at]);
                at += 1;
                vars.push(var);
            }
            self.homes[p.local.index()] = if is_composite(&func[p.local].ty) {
                Home::Vars(vars)
            } else {
                Home::Var(vars[0])
            };
        }
        self.module_roots()?;
        self.load_roots();
        self.block(&func.body)?;
        self.device_return(None)?;
        Ok(())
    }

    /// Returns from a device function with status 0 and `value` (zeros when none is given).
    fn device_return(&mut self, value: Option<Vec<Value>>) -> R<()> {
        let zero = self.b.ins().iconst(types::I32, 0);
        let mut vals = vec![zero];
        let tys = self.device.clone().unwrap_or_default();
        if let Some(p) = self.sret {
            if let Some(v) = value.filter(|v| v.len() == tys.len()) {
                for (i, x) in v.iter().enumerate() {
                    self.b.ins().store(TRUSTED, *x, p, (8 * i) as i32);
                }
            }
            self.b.ins().return_(&vals);
            self.dead_block();
            return Ok(());
        }
        match value {
            Some(v) if v.len() == tys.len() => vals.extend(v),
            _ => {
                for t in tys {
                    vals.push(self.zero_of(t));
                }
            }
        }
        self.b.ins().return_(&vals);
        self.dead_block();
        Ok(())
    }

    fn zero_of(&mut self, ty: cir::Type) -> Value {
        if ty == types::F32 {
            self.b.ins().f32const(0.0)
        } else if ty == types::F64 {
            self.b.ins().f64const(0.0)
        } else {
            self.b.ins().iconst(ty, 0)
        }
    }

    /// Leaves the function after a fault (status 1; the fault's data is in the context).
    fn fault_return(&mut self) {
        let one = self.b.ins().iconst(types::I32, 1);
        let mut vals = vec![one];
        if self.sret.is_none() {
            for t in self.device.clone().unwrap_or_default() {
                vals.push(self.zero_of(t));
            }
        }
        self.b.ins().return_(&vals);
    }

    /// Roots every function registers first, in one order (the root list is shared by the
    /// kernel and its device functions): globals and `:shared` globals.
    fn module_roots(&mut self) -> R<()> {
        for g in 0..self.module.globals.len() {
            match self.shared_globals[g] {
                Some((slot, _)) => {
                    self.root(RootSource::Shared(slot));
                }
                None => {
                    if let Some(&id) = self.global_ids.get(g) {
                        self.root(RootSource::Global(id));
                    }
                }
            }
        }
        Ok(())
    }

    fn kernel(&mut self) -> R<()> {
        let func = self.func;
        let start = self.b.create_block();
        self.b.append_block_params_for_function_params(start);
        self.b.switch_to_block(start);
        let ctx = self.b.block_params(start)[0];
        self.load_entry(ctx);
        let ld = |b: &mut FunctionBuilder<'_>, ty, off: usize| {
            b.ins().load(ty, TRUSTED, ctx, off as i32)
        };
        self.t = self.b.declare_var(types::I64);
        self.tid = [0; 3].map(|_| self.b.declare_var(types::I32));
        let barriers = block_has_barrier(&func.body);
        // Which locals are assigned (parameters that are, are not roots).
        let mut assigned = vec![false; func.locals.len()];
        for_each_node(Node::Block(&func.body), |n, _| match n {
            Node::Stmt(Stmt {
                kind:
                    StmtKind::Assign {
                        place:
                            Expr {
                                kind: ExprKind::Local(id),
                                ..
                            },
                        ..
                    },
                ..
            }) => assigned[id.index()] = true,
            Node::Stmt(Stmt {
                kind: StmtKind::For { step, .. },
                ..
            }) => {
                for (id, _) in step {
                    assigned[id.index()] = true;
                }
            }
            _ => {}
        });
        if barriers {
            self.mark_lanes(&func.body);
            self.mask_slots = 1;
            self.chain.push(0);
        }
        // The module's roots first, at the indices device functions use too.
        self.module_roots()?;
        // Parameters: each a scalar or pointer leaf of the parameter block.
        let params = ld(&mut self.b, types::I64, offset_of!(Ctx, params));
        let mut lane_params = Vec::new();
        let mut leaf = 0usize;
        for p in &func.params {
            let local = &func[p.local];
            if is_composite(&local.ty) {
                if assigned[p.local.index()] && barriers {
                    return unsupported(&func.span, "assigning a vector or structure parameter");
                }
                let mut vars = Vec::new();
                for (k, _) in self.leaves_of(&local.ty, &func.span)? {
                    let bits = self
                        .b
                        .ins()
                        .load(types::I64, TRUSTED, params, (leaf * 8) as i32);
                    leaf += 1;
                    let v = self.of_bits(bits, k);
                    let var = self.b.declare_var(cty(k));
                    self.b.def_var(var, v);
                    if assigned[p.local.index()] {
                        self.refresh.push((var, v));
                    }
                    vars.push(var);
                }
                self.homes[p.local.index()] = Home::Vars(vars);
                continue;
            }
            let kind = self.kind(&local.ty, &func.span)?;
            let bits = self
                .b
                .ins()
                .load(types::I64, TRUSTED, params, (leaf * 8) as i32);
            let this_leaf = leaf;
            leaf += 1;
            let v = self.of_bits(bits, kind);
            if assigned[p.local.index()] {
                if barriers {
                    let slot = self.lane_slots;
                    self.lane_slots += 1;
                    self.homes[p.local.index()] = Home::Lane(slot);
                    lane_params.push((slot, v, kind));
                } else {
                    let var = self.b.declare_var(cty(kind));
                    self.b.def_var(var, v);
                    self.refresh.push((var, v));
                    self.homes[p.local.index()] = Home::Var(var);
                }
            } else {
                let var = self.b.declare_var(cty(kind));
                self.b.def_var(var, v);
                self.homes[p.local.index()] = if kind == Kind::Ptr {
                    Home::PtrParam(var, self.root(RootSource::Param(this_leaf as u32)))
                } else {
                    Home::Var(var)
                };
            }
        }
        // Shared memory declared anywhere in the kernel, and globals, resolved up front.
        self.declare_shared(&func.body)?;
        self.load_roots();
        if barriers {
            if !lane_params.is_empty() {
                self.thread_loop(Some(0), |me| {
                    for &(slot, v, _) in &lane_params {
                        let a = me.lane_addr(slot);
                        me.b.ins().store(TRUSTED, v, a, 0);
                    }
                    Ok(())
                })?;
            }
            self.region_block(&func.body)?;
        } else if self.simd {
            self.simd_thread_loop(&func.body)?;
        } else {
            self.thread_loop(None, |me| me.block(&func.body))?;
        }
        let zero = self.b.ins().iconst(types::I32, 0);
        self.b.ins().return_(&[zero]);
        Ok(())
    }

    fn root(&mut self, src: RootSource) -> u32 {
        let same = |a: &RootSource| match (a, &src) {
            (RootSource::Param(x), RootSource::Param(y))
            | (RootSource::Shared(x), RootSource::Shared(y))
            | (RootSource::Global(x), RootSource::Global(y)) => x == y,
            (RootSource::Dynamic, RootSource::Dynamic) => true,
            _ => false,
        };
        if let Some(i) = self.roots.iter().position(same) {
            return i as u32;
        }
        self.roots.push(src);
        (self.roots.len() - 1) as u32
    }

    /// Loads every root's (base, len, off) in the entry block, before any loop.
    fn load_roots(&mut self) {
        let ctx = self.ctx();
        let roots = self
            .b
            .ins()
            .load(types::I64, TRUSTED, ctx, offset_of!(Ctx, roots) as i32);
        self.roots_ptr = Some(roots);
        for i in 0..self.roots.len() {
            let at = (i * size_of::<Root>()) as i32;
            let base = self.b.ins().load(
                types::I64,
                TRUSTED,
                roots,
                at + offset_of!(Root, base) as i32,
            );
            let len = self.b.ins().load(
                types::I64,
                TRUSTED,
                roots,
                at + offset_of!(Root, len) as i32,
            );
            let off = self.b.ins().load(
                types::I64,
                TRUSTED,
                roots,
                at + offset_of!(Root, off) as i32,
            );
            let ptr = self.b.ins().load(
                types::I64,
                TRUSTED,
                roots,
                at + offset_of!(Root, ptr) as i32,
            );
            self.root_vals.push((base, len, off, ptr));
            let limits = [0usize, 1, 2, 3].map(|k| {
                let ld = |b: &mut FunctionBuilder<'_>, field: usize| {
                    b.ins()
                        .load(types::I64, TRUSTED, roots, at + (field + 8 * k) as i32)
                };
                (
                    ld(&mut self.b, offset_of!(Root, start)),
                    ld(&mut self.b, offset_of!(Root, last)),
                )
            });
            self.root_limits.push(limits);
        }
    }

    fn declare_shared(&mut self, body: &Block) -> R<()> {
        let mut found = Vec::new();
        for_each_node(Node::Block(body), |n, _| {
            if let Node::Stmt(s) = n {
                match &s.kind {
                    StmtKind::SharedArray {
                        local,
                        element,
                        sizes,
                        ..
                    } => found.push((Some((*local, element, sizes)), s)),
                    StmtKind::DynamicShared { .. } => found.push((None, s)),
                    _ => {}
                }
            }
        });
        for (decl, s) in found {
            match decl {
                Some((local, element, sizes)) => {
                    let elem = self
                        .module
                        .layout(element)
                        .ok_or_else(|| format!("a shared array of unknown size at {}", s.span))?
                        .0 as u64;
                    let count: u64 = sizes.iter().product();
                    let slot = self.next_slot;
                    self.next_slot += 1;
                    self.shared.push((slot, (elem * count.max(1)) as usize));
                    let root = self.root(RootSource::Shared(slot));
                    self.homes[local.index()] = if sizes.is_empty() {
                        Home::SharedScalar(root)
                    } else {
                        Home::Shared(root, sizes.clone(), elem)
                    };
                }
                None => {
                    let StmtKind::DynamicShared { locals } = &s.kind else {
                        return unsupported(&s.span, "this shared declaration");
                    };
                    let root = self.root(RootSource::Dynamic);
                    for l in locals {
                        self.homes[l.index()] = Home::Dynamic(root);
                    }
                }
            }
        }
        for g in 0..self.shared_globals.len() {
            if let Some((slot, size)) = self.shared_globals[g] {
                self.shared.push((slot, size));
                self.root(RootSource::Shared(slot));
            }
        }
        Ok(())
    }

    /// Locals declared at region level (directly in a block that holds a barrier, or by a
    /// region-level `for`) live in lane arrays.
    fn mark_lanes(&mut self, block: &Block) {
        for s in &block.stmts {
            if has_barrier(s) {
                match &s.kind {
                    StmtKind::Block(b) => self.mark_lanes(b),
                    StmtKind::If {
                        then, otherwise, ..
                    } => {
                        self.mark_lanes(then);
                        if let Some(o) = otherwise {
                            self.mark_lanes(o);
                        }
                    }
                    StmtKind::While { body, .. } => self.mark_lanes(body),
                    StmtKind::For { init, body, .. } => {
                        for (l, _) in init {
                            self.lane(*l);
                        }
                        self.mark_lanes(body);
                    }
                    // A local set from a warp collective: read after the split.
                    StmtKind::Declare { local, .. } => self.lane(*local),
                    _ => {}
                }
            } else if let StmtKind::Declare { local, .. } = s.kind {
                self.lane(local);
            }
        }
    }

    fn lane(&mut self, l: ir::LocalId) {
        let ty = &self.func[l].ty;
        if is_composite(ty) {
            let n = type_leaves(self.module, ty).map_or(0, |v| v.len()) as u32;
            self.homes[l.index()] = Home::Lanes((self.lane_slots..self.lane_slots + n).collect());
            self.lane_slots += n;
        } else {
            self.homes[l.index()] = Home::Lane(self.lane_slots);
            self.lane_slots += 1;
        }
    }

    fn lane_addr(&mut self, slot: u32) -> Value {
        let en = self.en();
        let t = self.b.use_var(self.t);
        let stride = self.b.ins().imul_imm(en.threads, 8 * slot as i64);
        let t8 = self.b.ins().ishl_imm(t, 3);
        let off = self.b.ins().iadd(stride, t8);
        self.b.ins().iadd(en.lanes, off)
    }

    fn mask_addr(&mut self, slot: u32) -> Value {
        let en = self.en();
        let t = self.b.use_var(self.t);
        let base = self.b.ins().imul_imm(en.threads, slot as i64);
        let off = self.b.ins().iadd(base, t);
        self.b.ins().iadd(en.masks, off)
    }

    fn new_mask(&mut self) -> u32 {
        self.mask_slots += 1;
        self.mask_slots - 1
    }

    /// A loop over the block's threads (skipping those whose mask byte is 0) running `body`.
    fn thread_loop(&mut self, mask: Option<u32>, body: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        let zero = self.start_threads();
        let (head, run, next, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        match mask {
            Some(m) => {
                let a = self.mask_addr(m);
                let on = self.b.ins().load(types::I8, TRUSTED, a, 0);
                self.b.ins().brif(on, run, &[], next, &[]);
            }
            None => {
                self.b.ins().jump(run, &[]);
            }
        }
        self.b.switch_to_block(run);
        self.scalar_thread(next, body)?;
        // Nested counters: the common step is x + 1 and t + 1, one compare.
        self.b.switch_to_block(next);
        let x1 = self.step_x(1);
        let next_y = self.b.create_block();
        let width = self.en().block_dim[0];
        let more_x = self.b.ins().icmp(IntCC::UnsignedLessThan, x1, width);
        self.b.ins().brif(more_x, head, &[], next_y, &[]);
        self.b.switch_to_block(next_y);
        self.end_of_row(zero, head, exit);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// Sets the thread counters (`t` and the three indexes) to the block's first thread;
    /// returns the `I32` zero that [`Lower::end_of_row`] resets an index to.
    fn start_threads(&mut self) -> Value {
        let zero64 = self.b.ins().iconst(types::I64, 0);
        let zero = self.b.ins().iconst(types::I32, 0);
        self.b.def_var(self.t, zero64);
        for v in self.tid {
            self.b.def_var(v, zero);
        }
        zero
    }

    /// One thread's scalar `body` from the current block, then on to `next`, which is also
    /// where a thread that leaves early goes.
    fn scalar_thread(&mut self, next: CBlock, body: impl FnOnce(&mut Self) -> R<()>) -> R<()> {
        let saved = self.next_thread.replace(next);
        for (var, v) in self.refresh.clone() {
            self.b.def_var(var, v);
        }
        body(self)?;
        self.b.ins().jump(next, &[]);
        self.next_thread = saved;
        Ok(())
    }

    /// Moves the linear thread index `t` and `x` on by `by` threads; returns the new `x`.
    fn step_x(&mut self, by: i64) -> Value {
        let t = self.b.use_var(self.t);
        let t1 = self.b.ins().iadd_imm(t, by);
        self.b.def_var(self.t, t1);
        let vx = self.tid[0];
        let x = self.b.use_var(vx);
        let x1 = self.b.ins().iadd_imm(x, by);
        self.b.def_var(vx, x1);
        x1
    }

    /// From the current block, after a row's last thread: the next row (`x` back to 0, `y` + 1),
    /// or after the plane's last row the next plane (`y` back to 0, `z` + 1); on to `again`
    /// while inside the block, else to `exit`. The thread loops' one way of wrapping.
    fn end_of_row(&mut self, zero: Value, again: CBlock, exit: CBlock) {
        let next_plane = self.b.create_block();
        self.next_index(1, zero, again, next_plane);
        self.b.switch_to_block(next_plane);
        self.next_index(2, zero, again, exit);
    }

    /// Index `axis - 1` back to 0 and index `axis` + 1; to `again` while that is below the
    /// block's size along `axis`, else to `done`.
    fn next_index(&mut self, axis: usize, zero: Value, again: CBlock, done: CBlock) {
        self.b.def_var(self.tid[axis - 1], zero);
        let v = self.b.use_var(self.tid[axis]);
        let v1 = self.b.ins().iadd_imm(v, 1);
        self.b.def_var(self.tid[axis], v1);
        let size = self.en().block_dim[axis];
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, v1, size);
        self.b.ins().brif(more, again, &[], done, &[]);
    }

    fn region_block(&mut self, block: &Block) -> R<()> {
        let mark = self.warp_results.len();
        let mut group: Vec<Item<'_>> = Vec::new();
        for s in &block.stmts {
            // A statement with one warp collective: its operands at the end of the thread loop
            // before it, the statement itself at the start of the one after (one loop per
            // collective where several follow each other).
            if let Some(c) = warp::lone_collective(s) {
                let planned = self.plan_collective(c)?;
                if !planned.evaluated.is_empty() {
                    group.push(Item::Operands(planned.evaluated.clone()));
                }
                self.flush(&mut group)?;
                self.call_collective(&planned)?;
                group.push(Item::Stmt(s));
                continue;
            }
            let barrier_stmt = matches!(&s.kind, StmtKind::Expr(e) if is_sync(e));
            if barrier_stmt || has_barrier(s) {
                self.flush(&mut group)?;
                if !barrier_stmt {
                    self.region_stmt(s)?;
                }
            } else {
                group.push(Item::Stmt(s));
            }
        }
        self.flush(&mut group)?;
        self.warp_results.truncate(mark);
        Ok(())
    }

    fn flush(&mut self, group: &mut Vec<Item<'_>>) -> R<()> {
        if group.is_empty() {
            return Ok(());
        }
        let items = std::mem::take(group);
        let cur = *self.chain.last().ok_or("a region without a mask")?;
        self.thread_loop(Some(cur), |me| {
            for item in items {
                match item {
                    Item::Stmt(s) => me.stmt(s)?,
                    Item::Operands(evaluated) => me.operands(&evaluated)?,
                }
            }
            Ok(())
        })
    }

    fn region_stmt(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Block(b) => self.region_block(b),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let cur = *self.chain.last().ok_or("a region without a mask")?;
                let mark = self.warp_results.len();
                self.warp_collectives(cond)?;
                let mt = self.new_mask();
                let me_ = otherwise.as_ref().map(|_| self.new_mask());
                self.thread_loop(None, |me| {
                    let a = me.mask_addr(cur);
                    let on = me.b.ins().load(types::I8, TRUSTED, a, 0);
                    let c = me.guarded_bool(on, cond)?;
                    let at = me.mask_addr(mt);
                    me.b.ins().store(TRUSTED, c, at, 0);
                    if let Some(m) = me_ {
                        let nc = me.b.ins().bxor_imm(c, 1);
                        let other = me.b.ins().band(on, nc);
                        let at = me.mask_addr(m);
                        me.b.ins().store(TRUSTED, other, at, 0);
                    }
                    Ok(())
                })?;
                self.warp_results.truncate(mark);
                self.chain.push(mt);
                self.region_block(then)?;
                self.chain.pop();
                if let (Some(m), Some(o)) = (me_, otherwise) {
                    self.chain.push(m);
                    self.region_block(o)?;
                    self.chain.pop();
                }
                Ok(())
            }
            StmtKind::While { cond, body } => self.region_loop(&[], Some(cond), &[], body),
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => self.region_loop(init, cond.as_ref(), step, body),
            StmtKind::Declare { init: e, .. } | StmtKind::Expr(e) => self.warp_stmt(s, &[e]),
            StmtKind::Assign { place, value } => self.warp_stmt(s, &[value, place]),
            _ => unsupported(&s.span, "a barrier inside this statement"),
        }
    }

    /// A statement holding warp collectives (and no barrier): the collectives run first, then
    /// the statement in a loop over the region's threads.
    fn warp_stmt(&mut self, s: &Stmt, exprs: &[&Expr]) -> R<()> {
        let mark = self.warp_results.len();
        for e in exprs {
            self.warp_collectives(e)?;
        }
        let cur = *self.chain.last().ok_or("a region without a mask")?;
        self.thread_loop(Some(cur), |me| me.stmt(s))?;
        self.warp_results.truncate(mark);
        Ok(())
    }

    /// `cond` for threads whose `on` is 1, else 0 (as an I8 bool).
    fn guarded_bool(&mut self, on: Value, cond: &Expr) -> R<Value> {
        let var = self.b.declare_var(types::I8);
        let zero = self.b.ins().iconst(types::I8, 0);
        self.b.def_var(var, zero);
        let (eval, join) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(on, eval, &[], join, &[]);
        self.b.switch_to_block(eval);
        let c = self.expr(cond)?;
        self.b.def_var(var, c);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(join);
        Ok(self.b.use_var(var))
    }

    fn region_loop(
        &mut self,
        init: &[(ir::LocalId, Expr)],
        cond: Option<&Expr>,
        step: &[(ir::LocalId, Expr)],
        body: &Block,
    ) -> R<()> {
        let cur = *self.chain.last().ok_or("a region without a mask")?;
        let per_thread = init.iter().chain(step).map(|(_, e)| e).chain(cond);
        if let Some(e) = per_thread.into_iter().find(|e| warp::has_collective(e)) {
            return unsupported(&e.span, "a warp collective in a loop's header");
        }
        let (ml, mi) = (self.new_mask(), self.new_mask());
        self.thread_loop(None, |me| {
            let a = me.mask_addr(cur);
            let on = me.b.ins().load(types::I8, TRUSTED, a, 0);
            let at = me.mask_addr(ml);
            me.b.ins().store(TRUSTED, on, at, 0);
            if !init.is_empty() {
                let (run, join) = (me.b.create_block(), me.b.create_block());
                me.b.ins().brif(on, run, &[], join, &[]);
                me.b.switch_to_block(run);
                for (l, e) in init {
                    let v = me.expr(e)?;
                    me.set_local(*l, v, &e.span)?;
                }
                me.b.ins().jump(join, &[]);
                me.b.switch_to_block(join);
            }
            Ok(())
        })?;
        let (head, run, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let any = self.b.declare_var(types::I8);
        let zero = self.b.ins().iconst(types::I8, 0);
        self.b.def_var(any, zero);
        self.thread_loop(None, |me| {
            let a = me.mask_addr(ml);
            let on = me.b.ins().load(types::I8, TRUSTED, a, 0);
            let c = match cond {
                Some(c) => me.guarded_bool(on, c)?,
                None => on,
            };
            me.b.ins().store(TRUSTED, c, a, 0);
            let at = me.mask_addr(mi);
            me.b.ins().store(TRUSTED, c, at, 0);
            let acc = me.b.use_var(any);
            let acc = me.b.ins().bor(acc, c);
            me.b.def_var(any, acc);
            Ok(())
        })?;
        let go = self.b.use_var(any);
        self.b.ins().brif(go, run, &[], exit, &[]);
        self.b.switch_to_block(run);
        self.chain.push(ml);
        let lp = self.chain.len() - 1;
        self.chain.push(mi);
        self.loops.push(Target::Region { lp, it: lp + 1 });
        self.region_block(body)?;
        self.loops.pop();
        self.chain.pop();
        self.chain.pop();
        if !step.is_empty() {
            self.thread_loop(Some(ml), |me| me.parallel_step(step))?;
        }
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    fn parallel_step(&mut self, step: &[(ir::LocalId, Expr)]) -> R<()> {
        let mut values = Vec::with_capacity(step.len());
        for (_, e) in step {
            values.push(self.expr(e)?);
        }
        for ((l, e), v) in step.iter().zip(values) {
            self.set_local(*l, v, &e.span)?;
        }
        Ok(())
    }

    /// Clears this thread's masks from chain position `from` on.
    /// A `break` or `continue` to `exit`; what follows it in the block is unreachable.
    fn exit_to(&mut self, exit: Exit) -> R<()> {
        match exit {
            Exit::Jump(to) => {
                self.b.ins().jump(to, &[]);
                self.dead_block();
            }
            Exit::Leave(mask) => {
                self.clear_masks(mask);
                self.leave_thread()?;
            }
        }
        Ok(())
    }

    fn clear_masks(&mut self, from: usize) {
        let zero = self.b.ins().iconst(types::I8, 0);
        for i in from..self.chain.len() {
            let a = self.mask_addr(self.chain[i]);
            self.b.ins().store(TRUSTED, zero, a, 0);
        }
    }

    fn leave_thread(&mut self) -> R<()> {
        let next = self
            .next_thread
            .ok_or("leaving a thread outside a thread loop")?;
        self.b.ins().jump(next, &[]);
        self.dead_block();
        Ok(())
    }

    // ---- statements (inside a thread loop)

    fn block(&mut self, b: &Block) -> R<()> {
        for s in &b.stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn declare(&mut self, l: ir::LocalId, ty: &Type, span: &Span) -> R<()> {
        if matches!(self.homes[l.index()], Home::Unset) && is_composite(ty) {
            let leaves = self.leaves_of(ty, span)?;
            let vars = leaves
                .iter()
                .map(|(k, _)| self.b.declare_var(cty(*k)))
                .collect();
            self.homes[l.index()] = Home::Vars(vars);
        }
        if matches!(self.homes[l.index()], Home::Unset) {
            let k = self.kind(ty, span)?;
            let var = self.b.declare_var(cty(k));
            self.homes[l.index()] = Home::Var(var);
        }
        Ok(())
    }

    fn set_local(&mut self, l: ir::LocalId, v: Value, span: &Span) -> R<()> {
        let ty = &self.func[l].ty;
        if self.func[l].storage != LocalStorage::Register {
            return unsupported(span, "assigning a shared-memory variable");
        }
        self.declare(l, ty, span)?;
        match self.homes[l.index()].clone() {
            Home::Var(var) => self.b.def_var(var, v),
            Home::Lane(slot) => {
                let a = self.lane_addr(slot);
                self.b.ins().store(TRUSTED, v, a, 0);
            }
            _ => return unsupported(span, "assigning this variable"),
        }
        Ok(())
    }

    /// Sets all leaves of local `l` (a vector or structure, or a scalar: one leaf).
    fn set_local_vals(&mut self, l: ir::LocalId, vals: &[Value], span: &Span) -> R<()> {
        let ty = self.func[l].ty.clone();
        if !is_composite(&ty) {
            return self.set_local(l, vals[0], span);
        }
        self.declare(l, &ty, span)?;
        match self.homes[l.index()].clone() {
            Home::Vars(vars) if vars.len() == vals.len() => {
                for (var, v) in vars.iter().zip(vals) {
                    self.b.def_var(*var, *v);
                }
            }
            Home::Lanes(slots) if slots.len() == vals.len() => {
                for (slot, v) in slots.iter().zip(vals) {
                    let a = self.lane_addr(*slot);
                    self.b.ins().store(TRUSTED, *v, a, 0);
                }
            }
            _ => return unsupported(span, "assigning this variable"),
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Block(b) => self.block(b),
            StmtKind::Declare { local, init } => {
                let v = self.vals(init)?;
                self.set_local_vals(*local, &v, &s.span)
            }
            StmtKind::SharedArray { .. } | StmtKind::DynamicShared { .. } => Ok(()),
            StmtKind::Assign { place, value } => {
                if is_composite(&place.ty) || matches!(place.kind, ExprKind::Field { .. }) {
                    let v = self.vals(value)?;
                    return self.assign_vals(place, &v, &s.span);
                }
                let v = self.expr(value)?;
                self.assign(place, v, &s.span)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                let (tb, eb, end) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, tb, &[], eb, &[]);
                self.b.switch_to_block(tb);
                self.block(then)?;
                self.b.ins().jump(end, &[]);
                self.b.switch_to_block(eb);
                if let Some(o) = otherwise {
                    self.block(o)?;
                }
                self.b.ins().jump(end, &[]);
                self.b.switch_to_block(end);
                Ok(())
            }
            StmtKind::While { cond, body } => self.thread_loop_stmt(&[], Some(cond), &[], body),
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => self.thread_loop_stmt(init, cond.as_ref(), step, body),
            StmtKind::Break => {
                let exit = match self.loops.last() {
                    Some(Target::Thread { brk, .. } | Target::Switch { brk }) => Exit::Jump(*brk),
                    Some(Target::Region { lp, .. }) => Exit::Leave(*lp),
                    None => return unsupported(&s.span, "`break` outside a loop or switch"),
                };
                self.exit_to(exit)
            }
            StmtKind::Continue => {
                let target = self
                    .loops
                    .iter()
                    .rev()
                    .find(|t| !matches!(t, Target::Switch { .. }));
                let exit = match target {
                    Some(Target::Thread { cont, .. }) => Exit::Jump(*cont),
                    Some(Target::Region { it, .. }) => Exit::Leave(*it),
                    _ => return unsupported(&s.span, "`continue` outside a loop"),
                };
                self.exit_to(exit)
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                let kind = self.kind(&scrutinee.ty, &scrutinee.span)?;
                let v = self.expr(scrutinee)?;
                let ty = cty(kind);
                let end = self.b.create_block();
                self.loops.push(Target::Switch { brk: end });
                for case in cases {
                    let (body, next) = (self.b.create_block(), self.b.create_block());
                    let mut hit = self.b.ins().iconst(types::I8, 0);
                    for &c in &case.values {
                        let k = self.iconst(ty, c as i64);
                        let eq = self.b.ins().icmp(IntCC::Equal, v, k);
                        hit = self.b.ins().bor(hit, eq);
                    }
                    self.b.ins().brif(hit, body, &[], next, &[]);
                    self.b.switch_to_block(body);
                    self.block(&case.body)?;
                    self.b.ins().jump(end, &[]);
                    self.b.switch_to_block(next);
                }
                if let Some(d) = default {
                    self.block(d)?;
                }
                self.b.ins().jump(end, &[]);
                self.loops.pop();
                self.b.switch_to_block(end);
                Ok(())
            }
            StmtKind::Return(value) if self.device.is_some() => {
                let v = match value {
                    Some(e) => Some(self.vals(e)?),
                    None => None,
                };
                self.device_return(v)
            }
            StmtKind::Return(None) => {
                if !self.chain.is_empty() {
                    self.clear_masks(0);
                }
                self.leave_thread()?;
                Ok(())
            }
            StmtKind::Return(Some(_)) => unsupported(&s.span, "a kernel returning a value"),
            StmtKind::Expr(e) => {
                match &e.kind {
                    ExprKind::Builtin {
                        op:
                            Builtin::ThreadFence
                            | Builtin::ThreadFenceBlock
                            | Builtin::ThreadFenceSystem,
                        ..
                    } => {
                        self.b.ins().fence();
                    }
                    ExprKind::Builtin {
                        op: Builtin::SyncThreads | Builtin::SyncWarp,
                        ..
                    } => return unsupported(&e.span, "a barrier here"),
                    _ => {
                        self.expr(e)?;
                    }
                }
                Ok(())
            }
            StmtKind::Printf { .. } => unsupported(&s.span, "`printf`"),
            StmtKind::Asm(_) => unsupported(&s.span, "`cuda-asm`"),
        }
    }

    fn thread_loop_stmt(
        &mut self,
        init: &[(ir::LocalId, Expr)],
        cond: Option<&Expr>,
        step: &[(ir::LocalId, Expr)],
        body: &Block,
    ) -> R<()> {
        for (l, e) in init {
            let v = self.expr(e)?;
            self.set_local(*l, v, &e.span)?;
        }
        let (head, run, stepb, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        match cond {
            Some(c) => {
                let c = self.expr(c)?;
                self.b.ins().brif(c, run, &[], exit, &[]);
            }
            None => {
                self.b.ins().jump(run, &[]);
            }
        }
        self.b.switch_to_block(run);
        self.loops.push(Target::Thread {
            brk: exit,
            cont: stepb,
        });
        self.block(body)?;
        self.loops.pop();
        self.b.ins().jump(stepb, &[]);
        self.b.switch_to_block(stepb);
        self.parallel_step(step)?;
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    fn assign(&mut self, place: &Expr, v: Value, span: &Span) -> R<()> {
        match &place.kind {
            ExprKind::Local(id) => match self.homes[id.index()].clone() {
                Home::SharedScalar(root) => {
                    let kind = self.kind(&place.ty, span)?;
                    self.access(Addr::Root(root, Vec::new()), kind, Some(v), span)?;
                    Ok(())
                }
                _ => self.set_local(*id, v, span),
            },
            ExprKind::Global(_) | ExprKind::Aref { .. } => {
                let kind = self.kind(&place.ty, span)?;
                let addr = self.place_addr(place)?;
                let span = if matches!(place.kind, ExprKind::Aref { .. }) {
                    access_span(place)
                } else {
                    span
                };
                self.access(addr, kind, Some(v), span)?;
                Ok(())
            }
            _ => unsupported(span, "assigning this place"),
        }
    }

    // ---- memory

    /// The address of a global or `aref` place.
    fn place_addr(&mut self, place: &Expr) -> R<Addr> {
        match &place.kind {
            ExprKind::Global(g) => {
                let g = g.index();
                let src = match self.shared_globals.get(g).copied().flatten() {
                    Some((slot, _)) => RootSource::Shared(slot),
                    None => RootSource::Global(
                        *self
                            .global_ids
                            .get(g)
                            .ok_or_else(|| format!("an unknown global at {}", place.span))?,
                    ),
                };
                Ok(Addr::Root(self.root(src), Vec::new()))
            }
            ExprKind::Aref { base, indices } => self.aref_addr(base, indices),
            _ => unsupported(&place.span, "this place"),
        }
    }

    fn index_term(&mut self, idx: &Expr, stride: u64) -> R<(Value, i64, bool)> {
        if stride >= 1 << 20 {
            return unsupported(&idx.span, "an array of elements this large");
        }
        let kind = self.kind(&idx.ty, &idx.span)?;
        if !kind.is_integer() {
            return unsupported(&idx.span, "a non-integer index");
        }
        let v = self.expr(idx)?;
        let wide = kind.size() == 8;
        let v = self.widen64(v, kind);
        let v = if kind == Kind::U64 {
            let max = self.b.ins().iconst(types::I64, i64::MAX);
            self.b.ins().umin(v, max)
        } else {
            v
        };
        Ok((v, stride as i64, wide))
    }

    fn aref_addr(&mut self, base: &Expr, indices: &[Expr]) -> R<Addr> {
        if let ExprKind::Local(id) = base.kind {
            match self.homes[id.index()].clone() {
                Home::Shared(root, sizes, elem) => {
                    if indices.len() != sizes.len() || indices.len() > 3 {
                        return unsupported(&base.span, "a partly indexed shared array");
                    }
                    let mut terms = Vec::new();
                    for (k, idx) in indices.iter().enumerate() {
                        let stride = elem * sizes[k + 1..].iter().product::<u64>();
                        terms.push(self.index_term(idx, stride)?);
                    }
                    return Ok(Addr::Root(root, terms));
                }
                Home::Dynamic(root) | Home::PtrParam(_, root) if indices.len() == 1 => {
                    let stride = self.pointee_size(&base.ty, &base.span)?;
                    let term = self.index_term(&indices[0], stride)?;
                    return Ok(Addr::Root(root, vec![term]));
                }
                _ => {}
            }
        }
        let mut p = self.expr(base)?;
        let mut ty = base.ty.clone();
        for (k, idx) in indices.iter().enumerate() {
            let stride = self.pointee_size(&ty, &base.span)?;
            let (i, s, _) = self.index_term(idx, stride)?;
            let s = self.b.ins().iconst(types::I64, s);
            let f = runtime::nf_ptr_index as extern "C" fn(u64, i64, i64) -> u64 as usize;
            let q = self.call1(f, 3, &[p, i, s]);
            ty = ty
                .pointee()
                .cloned()
                .ok_or_else(|| format!("indexing a `{ty}` at {}", base.span))?;
            if k + 1 < indices.len() {
                p = self.access(Addr::Ptr(q), Kind::Ptr, None, &idx.span)?;
            } else {
                p = q;
            }
        }
        Ok(Addr::Ptr(p))
    }

    /// The root of a static shared scalar (or a `:shared` global) named by `place`.
    fn shared_scalar_root(&self, place: &Expr) -> Option<u32> {
        match &place.kind {
            ExprKind::Local(id) => match self.homes[id.index()] {
                Home::SharedScalar(root) => Some(root),
                _ => None,
            },
            _ => None,
        }
    }

    /// The pointer value of an address, as the interpreter computes it.
    fn pointer_of(&mut self, addr: Addr) -> Value {
        match addr {
            Addr::Ptr(p) => p,
            Addr::Root(root, terms) => {
                let mut p = self.root_vals[root as usize].3;
                let f = runtime::nf_ptr_index as extern "C" fn(u64, i64, i64) -> u64 as usize;
                for (i, s, _) in terms {
                    let s = self.b.ins().iconst(types::I64, s);
                    p = self.call1(f, 3, &[p, i, s]);
                }
                p
            }
        }
    }

    fn pointee_size(&self, ty: &Type, span: &Span) -> R<u64> {
        let elem = ty
            .pointee()
            .ok_or_else(|| format!("indexing a `{ty}` at {span}"))?;
        Ok(self
            .module
            .layout(elem)
            .ok_or_else(|| format!("indexing a pointer to `{elem}` at {span}"))?
            .0 as u64)
    }

    /// A checked read (`value` None) or write of one leaf; returns what was read.
    fn access(&mut self, addr: Addr, kind: Kind, value: Option<Value>, span: &Span) -> R<Value> {
        self.access_at(addr, 0, kind, value, span)
    }

    /// [`Self::access`] of the leaf `extra` bytes past `addr` (a field or component).
    fn access_at(
        &mut self,
        addr: Addr,
        extra: i64,
        kind: Kind,
        value: Option<Value>,
        span: &Span,
    ) -> R<Value> {
        let address = self.checked_at(
            addr,
            extra,
            kind.size() as i64,
            value.is_some() as i64,
            span,
        );
        let ty = cty(kind);
        match value {
            Some(v) => {
                self.b.ins().store(TRUSTED, v, address, 0);
                Ok(v)
            }
            None => {
                let v = self.b.ins().load(ty, TRUSTED, address, 0);
                Ok(match kind {
                    Kind::Bool => self.b.ins().icmp_imm(IntCC::NotEqual, v, 0),
                    Kind::Fp4 => self.b.ins().band_imm(v, 0xf),
                    _ => v,
                })
            }
        }
    }

    /// The host address of `size` bytes at `addr`, checked (bounds, alignment, allocation);
    /// a failed check leaves the function with the fault. `mode`: 0 read, 1 write, 2 atomic.
    fn checked(&mut self, addr: Addr, size: i64, mode: i64, span: &Span) -> Value {
        self.checked_at(addr, 0, size, mode, span)
    }

    /// [`Self::checked`] of the bytes `extra` past `addr` (`extra` a multiple of `size`, as
    /// C layouts place fields).
    fn checked_at(&mut self, addr: Addr, extra: i64, size: i64, mode: i64, span: &Span) -> Value {
        let span_i = self.span_index(span);
        if extra != 0 {
            let ctx = self.ctx();
            let x = self.b.ins().iconst(types::I64, extra);
            self.b
                .ins()
                .store(TRUSTED, x, ctx, offset_of!(Ctx, fault_extra) as i32);
        }
        let (ok, fail) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(fail);
        match addr {
            Addr::Root(root, ref terms) => {
                let base = self.root_vals[root as usize].0;
                let (start, lim) = self.root_limits[root as usize][size.trailing_zeros() as usize];
                // Every stride is a multiple of the element size, so an offset is aligned
                // exactly when the root's is (checked once, in `start`).
                let mut o = start;
                let mut bad: Option<Value> = None;
                for &(i, s, wide) in terms {
                    if wide {
                        // |i| < 2^40, so the product cannot overflow; beyond, it is out of
                        // bounds anyway (allocations are under 2^39 bytes).
                        let shifted = self.b.ins().iadd_imm(i, 1 << 40);
                        let g = self
                            .b
                            .ins()
                            .icmp_imm(IntCC::UnsignedGreaterThan, shifted, 1 << 41);
                        bad = Some(match bad {
                            Some(b) => self.b.ins().bor(b, g),
                            None => g,
                        });
                    }
                    let d = if s.count_ones() == 1 {
                        self.b.ins().ishl_imm(i, s.trailing_zeros() as i64)
                    } else {
                        self.b.ins().imul_imm(i, s)
                    };
                    o = self.b.ins().iadd(o, d);
                }
                if extra != 0 {
                    o = self.b.ins().iadd_imm(o, extra);
                }
                // Negative offsets are huge unsigned: one compare covers both ends.
                let mut wrong = self.b.ins().icmp(IntCC::UnsignedGreaterThan, o, lim);
                if let Some(b) = bad {
                    wrong = self.b.ins().bor(wrong, b);
                }
                self.b.ins().brif(wrong, fail, &[], ok, &[]);
                self.b.switch_to_block(fail);
                self.fault_fields(1, span_i);
                self.fault_access_fields(size, mode, None);
                let ctx = self.ctx();
                let mut args = vec![ctx, self.b.ins().iconst(types::I64, root as i64)];
                for k in 0..3 {
                    match terms.get(k) {
                        Some(&(i, s, _)) => {
                            args.push(i);
                            args.push(self.b.ins().iconst(types::I64, s));
                        }
                        None => {
                            let z = self.b.ins().iconst(types::I64, 0);
                            args.push(z);
                            args.push(z);
                        }
                    }
                }
                let f = runtime::nf_root_fault
                    as extern "C" fn(*mut Ctx, u64, i64, i64, i64, i64, i64, i64)
                    as usize;
                self.call(f, 8, false, &args);
                self.fault_return();
                self.b.switch_to_block(ok);
                self.b.ins().iadd(base, o)
            }
            Addr::Ptr(p) => {
                let en = self.en();
                let id = self.b.ins().ushr_imm(p, 40);
                let h = self.b.ins().imul_imm(id, runtime::HASH as i64);
                let h = self.b.ins().band_imm(h, 0xffff_ffff);
                let slot = self.b.ins().ushr(h, en.table_shift);
                let at = self.b.ins().ishl_imm(slot, 5);
                let e = self.b.ins().iadd(en.table, at);
                let eid = self.b.ins().load(types::I64, TRUSTED, e, 0);
                let base = self.b.ins().load(types::I64, TRUSTED, e, 8);
                let len = self.b.ins().load(types::I64, TRUSTED, e, 16);
                let miss = self.b.ins().icmp(IntCC::NotEqual, eid, id);
                let o = self.b.ins().band_imm(p, OFFSET_MASK as i64);
                let o = if extra != 0 {
                    self.b.ins().iadd_imm(o, extra)
                } else {
                    o
                };
                let end = self.b.ins().iadd_imm(o, size);
                let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, len);
                let mut wrong = self.b.ins().bor(miss, past);
                if size > 1 {
                    let m = self.b.ins().band_imm(o, size - 1);
                    let mis = self.b.ins().icmp_imm(IntCC::NotEqual, m, 0);
                    wrong = self.b.ins().bor(wrong, mis);
                }
                self.b.ins().brif(wrong, fail, &[], ok, &[]);
                self.b.switch_to_block(fail);
                self.fault_fields(1, span_i);
                self.fault_access_fields(size, mode, Some(p));
                self.fault_return();
                self.b.switch_to_block(ok);
                self.b.ins().iadd(base, o)
            }
        }
    }

    fn fault_fields(&mut self, code: i64, span: u32) {
        let ctx = self.ctx();
        for (k, v) in self.tid.into_iter().enumerate() {
            let x = self.b.use_var(v);
            self.b.ins().store(
                TRUSTED,
                x,
                ctx,
                (offset_of!(Ctx, fault_thread) + 4 * k) as i32,
            );
        }
        let c = self.b.ins().iconst(types::I32, code);
        self.b
            .ins()
            .store(TRUSTED, c, ctx, offset_of!(Ctx, fault_code) as i32);
        let s = self.b.ins().iconst(types::I32, span as i64);
        self.b
            .ins()
            .store(TRUSTED, s, ctx, offset_of!(Ctx, fault_span) as i32);
    }

    fn fault_access_fields(&mut self, size: i64, mode: i64, ptr: Option<Value>) {
        let ctx = self.ctx();
        let w = self.b.ins().iconst(types::I32, mode);
        self.b
            .ins()
            .store(TRUSTED, w, ctx, offset_of!(Ctx, fault_write) as i32);
        let s = self.b.ins().iconst(types::I64, size);
        self.b
            .ins()
            .store(TRUSTED, s, ctx, offset_of!(Ctx, fault_size) as i32);
        if let Some(p) = ptr {
            self.b
                .ins()
                .store(TRUSTED, p, ctx, offset_of!(Ctx, fault_ptr) as i32);
        }
    }

    /// Calls the helper at `addr` with `n` 64-bit arguments and one 64-bit result.
    fn call1(&mut self, addr: usize, n: usize, args: &[Value]) -> Value {
        let sig = self.helper_sig(n, true);
        let sigref = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(types::I64, addr as i64);
        let call = self.b.ins().call_indirect(sigref, callee, args);
        // The signature has exactly one result.
        self.b.inst_results(call)[0]
    }

    fn helper_sig(&self, n: usize, returns: bool) -> Signature {
        let mut sig = Signature::new(self.call_conv);
        for _ in 0..n {
            sig.params.push(AbiParam::new(types::I64));
        }
        if returns {
            sig.returns.push(AbiParam::new(types::I64));
        }
        sig
    }

    /// Calls the helper at `addr` with `n` 64-bit arguments (the first may be the context).
    fn call(&mut self, addr: usize, n: usize, returns: bool, args: &[Value]) -> Option<Value> {
        let sig = self.helper_sig(n, returns);
        let sigref = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(types::I64, addr as i64);
        let call = self.b.ins().call_indirect(sigref, callee, args);
        self.b.inst_results(call).first().copied()
    }

    // ---- values and bits

    /// A leaf's canonical 64 bits (the interpreter's lane form).
    fn bits_of(&mut self, v: Value, kind: Kind) -> Value {
        match kind {
            Kind::F32 => {
                let i = self.b.ins().bitcast(types::I32, MemFlags::new(), v);
                self.b.ins().uextend(types::I64, i)
            }
            Kind::F64 => self.b.ins().bitcast(types::I64, MemFlags::new(), v),
            k => self.widen64(v, k),
        }
    }

    fn widen64(&mut self, v: Value, kind: Kind) -> Value {
        let ty = cty(kind);
        if ty == types::I64 {
            v
        } else if kind.is_signed() {
            self.b.ins().sextend(types::I64, v)
        } else {
            self.b.ins().uextend(types::I64, v)
        }
    }

    fn of_bits(&mut self, bits: Value, kind: Kind) -> Value {
        match kind {
            Kind::F32 => {
                let i = self.b.ins().ireduce(types::I32, bits);
                self.b.ins().bitcast(types::F32, MemFlags::new(), i)
            }
            Kind::F64 => self.b.ins().bitcast(types::F64, MemFlags::new(), bits),
            Kind::Bool => {
                let i = self.b.ins().ireduce(types::I8, bits);
                self.b.ins().icmp_imm(IntCC::NotEqual, i, 0)
            }
            k => {
                let ty = cty(k);
                if ty == types::I64 {
                    bits
                } else {
                    self.b.ins().ireduce(ty, bits)
                }
            }
        }
    }

    fn convert(&mut self, v: Value, from: Kind, to: Kind) -> Value {
        if from == to {
            return v;
        }
        let (ft, tt) = (cty(from), cty(to));
        if from.is_narrow_float() || to.is_narrow_float() {
            return self.convert_by_helper(v, from, to);
        }
        if to == Kind::Bool {
            return if from.is_float() {
                let z = if from == Kind::F64 {
                    self.b.ins().f64const(0.0)
                } else {
                    self.b.ins().f32const(0.0)
                };
                self.b.ins().fcmp(FloatCC::NotEqual, v, z)
            } else {
                self.b.ins().icmp_imm(IntCC::NotEqual, v, 0)
            };
        }
        match (from.is_float(), to.is_float()) {
            (false, false) => {
                if tt.bits() > ft.bits() {
                    if from.is_signed() {
                        self.b.ins().sextend(tt, v)
                    } else {
                        self.b.ins().uextend(tt, v)
                    }
                } else if tt.bits() < ft.bits() {
                    self.b.ins().ireduce(tt, v)
                } else {
                    v
                }
            }
            (false, true) => {
                let wide = self.widen64(v, from);
                if from.is_signed() {
                    self.b.ins().fcvt_from_sint(tt, wide)
                } else {
                    self.b.ins().fcvt_from_uint(tt, wide)
                }
            }
            (true, true) => {
                if to == Kind::F64 {
                    self.b.ins().fpromote(types::F64, v)
                } else {
                    self.b.ins().fdemote(types::F32, v)
                }
            }
            (true, false) => self.convert_by_helper(v, from, to),
        }
    }

    /// [`crate::value::convert`] itself.
    fn convert_by_helper(&mut self, v: Value, from: Kind, to: Kind) -> Value {
        let bits = self.bits_of(v, from);
        let f = runtime::nf_convert as extern "C" fn(u64, u64, u64) -> u64 as usize;
        let a = self.b.ins().iconst(types::I64, kind_code(from) as i64);
        let b = self.b.ins().iconst(types::I64, kind_code(to) as i64);
        let r = self.call1(f, 3, &[a, b, bits]);
        self.of_bits(r, to)
    }

    /// True when evaluating `e` for threads that do not need it is harmless (see
    /// [`crate::compile::is_pure`]); a shared scalar is memory.
    fn is_pure(&self, e: &Expr) -> bool {
        crate::compile::is_pure(e, &|id| {
            !matches!(self.homes[id.index()], Home::SharedScalar(_))
        })
    }

    // ---- expressions

    fn expr(&mut self, e: &Expr) -> R<Value> {
        if !self.warp_results.is_empty()
            && let Some(v) = self.warp_result(e)?
        {
            return Ok(v);
        }
        match &e.kind {
            ExprKind::Literal(lit) => {
                let kind = self.kind(&e.ty, &e.span)?;
                let bits = crate::compile::literal_bits(*lit, kind);
                Ok(match kind {
                    Kind::F32 => self.b.ins().f32const(f32::from_bits(bits as u32)),
                    Kind::F64 => self.b.ins().f64const(f64::from_bits(bits)),
                    k => self.iconst(cty(k), bits as i64),
                })
            }
            ExprKind::Local(id) => match self.homes[id.index()].clone() {
                Home::Var(v) | Home::PtrParam(v, _) => Ok(self.b.use_var(v)),
                Home::Lane(slot) => {
                    let kind = self.kind(&e.ty, &e.span)?;
                    let a = self.lane_addr(slot);
                    Ok(self.b.ins().load(cty(kind), TRUSTED, a, 0))
                }
                Home::SharedScalar(root) => {
                    let kind = self.kind(&e.ty, &e.span)?;
                    self.access(Addr::Root(root, Vec::new()), kind, None, &e.span)
                }
                Home::Shared(root, sizes, _) => {
                    if sizes.len() > 1 {
                        return unsupported(&e.span, "a 2-D shared array as a value");
                    }
                    let Some(&RootSource::Shared(slot)) = self.roots.get(root as usize) else {
                        return unsupported(&e.span, "this shared array");
                    };
                    Ok(self
                        .b
                        .ins()
                        .iconst(types::I64, encode(STATIC_SHARED_BASE + slot, 0) as i64))
                }
                Home::Dynamic(_) => Ok(self
                    .b
                    .ins()
                    .iconst(types::I64, encode(DYNAMIC_SHARED_ID, 0) as i64)),
                Home::Unset => unsupported(&e.span, "a variable used before its declaration"),
                Home::Vars(_) | Home::Lanes(_) => {
                    unsupported(&e.span, "a vector or structure as a scalar")
                }
            },
            ExprKind::Global(_) | ExprKind::Aref { .. } => {
                let kind = self.kind(&e.ty, &e.span)?;
                let addr = self.place_addr(e)?;
                self.access(addr, kind, None, access_span(e))
            }
            ExprKind::AddressOf(place) if matches!(place.kind, ExprKind::Aref { .. }) => {
                let addr = self.place_addr(place)?;
                Ok(self.pointer_of(addr))
            }
            ExprKind::AddressOf(place) if let Some(root) = self.shared_scalar_root(place) => {
                Ok(self.root_vals[root as usize].3)
            }
            ExprKind::Index(var) => self.index(*var, e),
            ExprKind::Cast { value, .. } => {
                let from = self.kind(&value.ty, &value.span)?;
                let to = self.kind(&e.ty, &e.span)?;
                let v = self.expr(value)?;
                Ok(self.convert(v, from, to))
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let kind = self.kind(&e.ty, &e.span)?;
                if self.is_pure(then) && self.is_pure(otherwise) {
                    let c = self.expr(cond)?;
                    let a = self.expr(then)?;
                    let b = self.expr(otherwise)?;
                    return Ok(self.b.ins().select(c, a, b));
                }
                let c = self.expr(cond)?;
                let var = self.b.declare_var(cty(kind));
                let (tb, eb, end) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, tb, &[], eb, &[]);
                self.b.switch_to_block(tb);
                let a = self.expr(then)?;
                self.b.def_var(var, a);
                self.b.ins().jump(end, &[]);
                self.b.switch_to_block(eb);
                let b = self.expr(otherwise)?;
                self.b.def_var(var, b);
                self.b.ins().jump(end, &[]);
                self.b.switch_to_block(end);
                Ok(self.b.use_var(var))
            }
            ExprKind::Builtin { op, args } => self.builtin(e, *op, args),
            ExprKind::Call { function, args } => self.call_device(e, function.index(), args),
            ExprKind::Field { .. } => {
                let mut v = self.vals_of_field(e)?;
                Ok(v.swap_remove(0))
            }
            ExprKind::AddressOf(_) => unsupported(&e.span, "taking an address"),
            ExprKind::Construct(_) => unsupported(&e.span, "a constructor of a scalar"),
        }
    }

    fn call_device(&mut self, e: &Expr, function: usize, args: &[Expr]) -> R<Value> {
        let mut r = self.call_device_vals(e, function, args)?;
        Ok(if r.is_empty() {
            self.b.ins().iconst(types::I8, 0)
        } else {
            r.swap_remove(0)
        })
    }

    /// A call's result leaves (none for `void`).
    fn call_device_vals(&mut self, e: &Expr, function: usize, args: &[Expr]) -> R<Vec<Value>> {
        let Some(&(_, id)) = self.funcs.iter().find(|(f, _)| *f == function) else {
            return unsupported(&e.span, "this call");
        };
        let mut vals = vec![self.ctx()];
        for v in self.tid {
            vals.push(self.b.use_var(v));
        }
        vals.push(self.b.use_var(self.t));
        let ret: Vec<Kind> = match &self.module.functions[function].ret {
            Type::Void => Vec::new(),
            t => self
                .leaves_of(t, &e.span)?
                .into_iter()
                .map(|(k, _)| k)
                .collect(),
        };
        let sret = if ret.len() > 1 {
            let slot = self.b.create_sized_stack_slot(cir::StackSlotData::new(
                cir::StackSlotKind::ExplicitSlot,
                8 * ret.len() as u32,
                3,
            ));
            let p = self.b.ins().stack_addr(types::I64, slot, 0);
            vals.push(p);
            Some(p)
        } else {
            None
        };
        for a in args {
            vals.extend(self.vals(a)?);
        }
        let fref = self.jit.declare_func_in_func(id, self.b.func);
        let call = self.b.ins().call(fref, &vals);
        let results = self.b.inst_results(call).to_vec();
        let (ok, fail) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(fail);
        self.b.ins().brif(results[0], fail, &[], ok, &[]);
        self.b.switch_to_block(fail);
        self.fault_return();
        self.b.switch_to_block(ok);
        if let Some(p) = sret {
            let mut out = Vec::new();
            for (i, k) in ret.iter().enumerate() {
                let ty = cty(*k);
                out.push(self.b.ins().load(ty, TRUSTED, p, (8 * i) as i32));
            }
            return Ok(out);
        }
        Ok(results[1..].to_vec())
    }

    fn index(&mut self, var: IndexVar, e: &Expr) -> R<Value> {
        let en = self.en();
        let axis = |a: ir::Axis| match a {
            ir::Axis::X => 0,
            ir::Axis::Y => 1,
            ir::Axis::Z => 2,
        };
        let v = match var {
            IndexVar::ThreadIdx(a) => self.b.use_var(self.tid[axis(a)]),
            IndexVar::BlockIdx(a) => en.block_idx[axis(a)],
            IndexVar::BlockDim(a) => en.block_dim[axis(a)],
            IndexVar::GridDim(a) => en.grid_dim[axis(a)],
            IndexVar::WarpSize => self.b.ins().iconst(types::I32, self.warp_width as i64),
            IndexVar::LaneId => {
                let t = self.b.use_var(self.t);
                let l = self.b.ins().band_imm(t, self.warp_width as i64 - 1);
                self.b.ins().ireduce(types::I32, l)
            }
            _ => return unsupported(&e.span, "cluster indexes"),
        };
        let kind = self.kind(&e.ty, &e.span)?;
        Ok(self.convert(v, Kind::U32, kind))
    }

    fn builtin(&mut self, e: &Expr, op: Builtin, args: &[Expr]) -> R<Value> {
        use crate::bytecode::BinOp as B;
        let bin = match op {
            Builtin::Add => Some(B::Add),
            Builtin::Sub => Some(B::Sub),
            Builtin::Mul => Some(B::Mul),
            Builtin::Div | Builtin::FastDivide => Some(B::Div),
            Builtin::Rem => Some(B::Rem),
            Builtin::FloorMod => Some(B::FloorMod),
            Builtin::Min => Some(B::Min),
            Builtin::Max => Some(B::Max),
            Builtin::BitAnd => Some(B::BitAnd),
            Builtin::BitOr => Some(B::BitOr),
            Builtin::BitXor => Some(B::BitXor),
            Builtin::Shl => Some(B::Shl),
            Builtin::Shr => Some(B::Shr),
            Builtin::Eq => Some(B::Eq),
            Builtin::Ne => Some(B::Ne),
            Builtin::Lt => Some(B::Lt),
            Builtin::Gt => Some(B::Gt),
            Builtin::Le => Some(B::Le),
            Builtin::Ge => Some(B::Ge),
            _ => None,
        };
        if let Some(b) = bin {
            let [x, y] = args else {
                return unsupported(&e.span, "this arity");
            };
            if x.ty.pointee().is_some() || y.ty.pointee().is_some() {
                return self.pointer_arith(e, b, x, y);
            }
            let kind = self.kind(&x.ty, &x.span)?;
            let ykind = self.kind(&y.ty, &y.span)?;
            let a = self.expr(x)?;
            let c = self.expr(y)?;
            let r = self.binary(b, kind, a, c, ykind, &e.span)?;
            let produced = if matches!(b, B::Eq | B::Ne | B::Lt | B::Gt | B::Le | B::Ge) {
                Kind::Bool
            } else {
                kind
            };
            let want = self.kind(&e.ty, &e.span)?;
            return Ok(self.convert(r, produced, want));
        }
        match op {
            Builtin::And | Builtin::Or => self.short_circuit(op == Builtin::And, args),
            Builtin::Neg
            | Builtin::Not
            | Builtin::BitNot
            | Builtin::Abs
            | Builtin::Recip
            | Builtin::Saturate
            | Builtin::DoubleToIntRn
            | Builtin::Clz
            | Builtin::Popc
            | Builtin::Brev
            | Builtin::Ffs => {
                let [x] = args else {
                    return unsupported(&e.span, "this arity");
                };
                let kind = self.kind(&x.ty, &x.span)?;
                let v = self.expr(x)?;
                let (r, produced) = self.unary(op, kind, v, &e.span)?;
                let want = self.kind(&e.ty, &e.span)?;
                Ok(self.convert(r, produced, want))
            }
            Builtin::Math(f) => {
                let kind = self.kind(&args[0].ty, &e.span)?;
                if !kind.is_float() {
                    return unsupported(&e.span, "a math function of an integer");
                }
                let r = if f == MathFn::Sqrt && !kind.is_narrow_float() {
                    let v = self.expr(&args[0])?;
                    self.b.ins().sqrt(v)
                } else {
                    let code = runtime::MATH.iter().position(|m| *m == f).unwrap_or(0) as i64;
                    let fc = self.b.ins().iconst(types::I64, code);
                    let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
                    let mut bits = Vec::new();
                    for a in args {
                        let v = self.expr(a)?;
                        bits.push(self.bits_of(v, kind));
                    }
                    let r = if bits.len() == 2 {
                        let h = runtime::nf_math2 as extern "C" fn(u64, u64, u64, u64) -> u64;
                        self.call1(h as usize, 4, &[fc, kc, bits[0], bits[1]])
                    } else {
                        let h = runtime::nf_math1 as extern "C" fn(u64, u64, u64) -> u64;
                        self.call1(h as usize, 3, &[fc, kc, bits[0]])
                    };
                    self.of_bits(r, kind)
                };
                let want = self.kind(&e.ty, &e.span)?;
                Ok(self.convert(r, kind, want))
            }
            Builtin::Fma => {
                let kind = self.kind(&e.ty, &e.span)?;
                let [a, b, c] = args else {
                    return unsupported(&e.span, "this arity");
                };
                let (a, b, c) = (self.expr(a)?, self.expr(b)?, self.expr(c)?);
                if kind.is_float() {
                    let bits = [a, b, c].map(|v| self.bits_of(v, kind));
                    let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
                    let h = runtime::nf_fma as extern "C" fn(u64, u64, u64, u64) -> u64;
                    let r = self.call1(h as usize, 4, &[kc, bits[0], bits[1], bits[2]]);
                    Ok(self.of_bits(r, kind))
                } else {
                    let m = self.b.ins().imul(a, b);
                    Ok(self.b.ins().iadd(m, c))
                }
            }
            Builtin::Atomic(aop) => self.atomic(e, aop, args),
            Builtin::Dot => {
                use crate::bytecode::BinOp as B;
                let [x, y] = args else {
                    return unsupported(&e.span, "this arity");
                };
                let kind = self.kind(&e.ty, &e.span)?;
                let (xs, ys) = (self.vals(x)?, self.vals(y)?);
                let mut acc = self.binary(B::Mul, kind, xs[0], ys[0], kind, &e.span)?;
                for i in 1..xs.len().min(ys.len()) {
                    let t = self.binary(B::Mul, kind, xs[i], ys[i], kind, &e.span)?;
                    acc = self.binary(B::Add, kind, acc, t, kind, &e.span)?;
                }
                Ok(acc)
            }
            _ => unsupported(&e.span, format!("`{op:?}`")),
        }
    }

    /// An atomic read-modify-write: the address checked here, the operation done by the
    /// interpreter's own host atomics.
    fn atomic(&mut self, e: &Expr, aop: ir::AtomicOp, args: &[Expr]) -> R<Value> {
        let Some(pointee) = args.first().and_then(|a| a.ty.pointee()) else {
            return unsupported(&e.span, "an atomic without a pointer");
        };
        let kind = self.kind(pointee, &e.span)?;
        if !matches!(
            kind,
            Kind::I32 | Kind::U32 | Kind::I64 | Kind::U64 | Kind::F32 | Kind::F64
        ) || !matches!(args.len(), 2 | 3)
        {
            return unsupported(&e.span, format!("atomics on `{pointee}`"));
        }
        let addr = match &args[0].kind {
            ExprKind::AddressOf(place) if matches!(place.kind, ExprKind::Aref { .. }) => {
                self.place_addr(place)?
            }
            ExprKind::AddressOf(place) if let Some(root) = self.shared_scalar_root(place) => {
                Addr::Root(root, Vec::new())
            }
            _ => Addr::Ptr(self.expr(&args[0])?),
        };
        let a = self.expr(&args[1])?;
        let a = self.bits_of(a, kind);
        let b = match args.get(2) {
            Some(x) => {
                let v = self.expr(x)?;
                self.bits_of(v, kind)
            }
            None => a,
        };
        let address = self.checked(addr, kind.size() as i64, 2, &e.span);
        let code = runtime::ATOMICS.iter().position(|o| *o == aop).unwrap_or(0) as i64;
        let oc = self.b.ins().iconst(types::I64, code);
        let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
        let h = runtime::nf_atomic as extern "C" fn(u64, u64, u64, u64, u64) -> u64;
        let old = self.call1(h as usize, 5, &[oc, kc, address, a, b]);
        let old = self.of_bits(old, kind);
        let want = self.kind(&e.ty, &e.span)?;
        Ok(self.convert(old, kind, want))
    }

    fn pointer_arith(
        &mut self,
        e: &Expr,
        op: crate::bytecode::BinOp,
        x: &Expr,
        y: &Expr,
    ) -> R<Value> {
        use crate::bytecode::BinOp as B;
        let (ptr, int, negate) = match (x.ty.pointee(), y.ty.pointee(), op) {
            (Some(_), None, B::Add) => (x, y, false),
            (Some(_), None, B::Sub) => (x, y, true),
            (None, Some(_), B::Add) => (y, x, false),
            _ => return unsupported(&e.span, "this pointer arithmetic"),
        };
        let size = self.pointee_size(&ptr.ty, &ptr.span)? as i64;
        let p = self.expr(ptr)?;
        let kind = self.kind(&int.ty, &int.span)?;
        let i = self.expr(int)?;
        let i = self.widen64(i, kind);
        let i = if kind == Kind::U64 {
            let max = self.b.ins().iconst(types::I64, i64::MAX);
            self.b.ins().umin(i, max)
        } else {
            i
        };
        let s = self
            .b
            .ins()
            .iconst(types::I64, if negate { -size } else { size });
        let f = runtime::nf_ptr_index as extern "C" fn(u64, i64, i64) -> u64 as usize;
        Ok(self.call1(f, 3, &[p, i, s]))
    }

    fn short_circuit(&mut self, is_and: bool, args: &[Expr]) -> R<Value> {
        let Some((first, rest)) = args.split_first() else {
            return Ok(self.b.ins().iconst(types::I8, is_and as i64));
        };
        let var = self.b.declare_var(types::I8);
        let v = self.expr(first)?;
        self.b.def_var(var, v);
        for y in rest {
            if self.is_pure(y) {
                let b = self.expr(y)?;
                let a = self.b.use_var(var);
                let r = if is_and {
                    self.b.ins().band(a, b)
                } else {
                    self.b.ins().bor(a, b)
                };
                self.b.def_var(var, r);
                continue;
            }
            let (eval, join) = (self.b.create_block(), self.b.create_block());
            let a = self.b.use_var(var);
            if is_and {
                self.b.ins().brif(a, eval, &[], join, &[]);
            } else {
                self.b.ins().brif(a, join, &[], eval, &[]);
            }
            self.b.switch_to_block(eval);
            let b = self.expr(y)?;
            self.b.def_var(var, b);
            self.b.ins().jump(join, &[]);
            self.b.switch_to_block(join);
        }
        Ok(self.b.use_var(var))
    }

    fn div_zero_check(&mut self, b: Value, span: &Span) {
        let span_i = self.span_index(span);
        let zero = self.b.ins().icmp_imm(IntCC::Equal, b, 0);
        let (ok, fail) = (self.b.create_block(), self.b.create_block());
        self.b.set_cold_block(fail);
        self.b.ins().brif(zero, fail, &[], ok, &[]);
        self.b.switch_to_block(fail);
        self.fault_fields(2, span_i);
        self.fault_return();
        self.b.switch_to_block(ok);
    }

    fn binary(
        &mut self,
        op: crate::bytecode::BinOp,
        kind: Kind,
        a: Value,
        b: Value,
        bkind: Kind,
        span: &Span,
    ) -> R<Value> {
        use crate::bytecode::BinOp as B;
        if kind.is_narrow_float() {
            let Some(code) = runtime::NARROW_BINARY.iter().position(|o| *o == op) else {
                return unsupported(span, format!("`{op:?}` on `{kind:?}`"));
            };
            let (x, y) = (self.bits_of(a, kind), self.bits_of(b, kind));
            let oc = self.b.ins().iconst(types::I64, code as i64);
            let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
            let h = runtime::nf_narrow_binary as extern "C" fn(u64, u64, u64, u64) -> u64;
            let r = self.call1(h as usize, 4, &[oc, kc, x, y]);
            let produced = if matches!(op, B::Eq | B::Ne | B::Lt | B::Gt | B::Le | B::Ge) {
                Kind::Bool
            } else {
                kind
            };
            return Ok(self.of_bits(r, produced));
        }
        if kind.is_float() {
            if let Some(c) = float_cc(op) {
                return Ok(self.b.ins().fcmp(c, a, b));
            }
            return match op {
                B::Add => Ok(self.b.ins().fadd(a, b)),
                B::Sub => Ok(self.b.ins().fsub(a, b)),
                B::Mul => Ok(self.b.ins().fmul(a, b)),
                B::Div => Ok(self.b.ins().fdiv(a, b)),
                B::Rem | B::FloorMod | B::Min | B::Max => {
                    let code = match op {
                        B::Rem => 0,
                        B::FloorMod => 1,
                        B::Min => 2,
                        _ => 3,
                    };
                    let (x, y) = (self.bits_of(a, kind), self.bits_of(b, kind));
                    let oc = self.b.ins().iconst(types::I64, code);
                    let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
                    let h = runtime::nf_float_binary as extern "C" fn(u64, u64, u64, u64) -> u64;
                    let r = self.call1(h as usize, 4, &[oc, kc, x, y]);
                    Ok(self.of_bits(r, kind))
                }
                _ => unsupported(span, "a bitwise operation on floats"),
            };
        }
        let signed = kind.is_signed();
        let ty = cty(kind);
        // Narrow integers compute in 32 bits, as after C's promotion, then truncate.
        let wty = if ty.bits() < 32 { types::I32 } else { ty };
        let widen = |me: &mut Self, v: Value| {
            if wty == ty {
                v
            } else if signed {
                me.b.ins().sextend(wty, v)
            } else {
                me.b.ins().uextend(wty, v)
            }
        };
        if matches!(op, B::Shl | B::Shr) {
            let x = widen(self, a);
            let n = self.widen64(b, bkind);
            let width = wty.bits() as i64;
            let big = self
                .b
                .ins()
                .icmp_imm(IntCC::UnsignedGreaterThanOrEqual, n, width);
            let r = if op == B::Shr && signed {
                let lim = self.b.ins().iconst(types::I64, width - 1);
                let n = self.b.ins().umin(n, lim);
                let n = if wty == types::I64 {
                    n
                } else {
                    self.b.ins().ireduce(wty, n)
                };
                self.b.ins().sshr(x, n)
            } else {
                let n1 = if wty == types::I64 {
                    n
                } else {
                    self.b.ins().ireduce(wty, n)
                };
                let s = if op == B::Shl {
                    self.b.ins().ishl(x, n1)
                } else {
                    self.b.ins().ushr(x, n1)
                };
                let z = self.b.ins().iconst(wty, 0);
                self.b.ins().select(big, z, s)
            };
            return Ok(if wty == ty {
                r
            } else {
                self.b.ins().ireduce(ty, r)
            });
        }
        if let Some(cc) = int_cc(op, signed) {
            return Ok(self.b.ins().icmp(cc, a, b));
        }
        let (x, y) = (widen(self, a), widen(self, b));
        let r = match op {
            B::Add => self.b.ins().iadd(x, y),
            B::Sub => self.b.ins().isub(x, y),
            B::Mul => self.b.ins().imul(x, y),
            B::BitAnd => self.b.ins().band(x, y),
            B::BitOr => self.b.ins().bor(x, y),
            B::BitXor => self.b.ins().bxor(x, y),
            B::Min if signed => self.b.ins().smin(x, y),
            B::Max if signed => self.b.ins().smax(x, y),
            B::Min => self.b.ins().umin(x, y),
            B::Max => self.b.ins().umax(x, y),
            B::Div | B::Rem | B::FloorMod => {
                self.div_zero_check(y, span);
                if signed {
                    let m1 = self.b.ins().icmp_imm(IntCC::Equal, y, -1);
                    let one = self.b.ins().iconst(wty, 1);
                    let safe = self.b.ins().select(m1, one, y);
                    match op {
                        B::Div => {
                            let q = self.b.ins().sdiv(x, safe);
                            let n = self.b.ins().ineg(x);
                            self.b.ins().select(m1, n, q)
                        }
                        _ => {
                            let r = self.b.ins().srem(x, safe);
                            if op == B::FloorMod {
                                // r != 0 && (r < 0) != (y < 0): add y.
                                let nz = self.b.ins().icmp_imm(IntCC::NotEqual, r, 0);
                                let rn = self.b.ins().icmp_imm(IntCC::SignedLessThan, r, 0);
                                let yn = self.b.ins().icmp_imm(IntCC::SignedLessThan, y, 0);
                                let diff = self.b.ins().bxor(rn, yn);
                                let fix = self.b.ins().band(nz, diff);
                                let ry = self.b.ins().iadd(r, y);
                                self.b.ins().select(fix, ry, r)
                            } else {
                                r
                            }
                        }
                    }
                } else if op == B::Div {
                    self.b.ins().udiv(x, y)
                } else {
                    self.b.ins().urem(x, y)
                }
            }
            _ => return unsupported(span, format!("`{op:?}` on integers")),
        };
        Ok(if wty == ty {
            r
        } else {
            self.b.ins().ireduce(ty, r)
        })
    }

    fn unary(&mut self, op: Builtin, kind: Kind, v: Value, span: &Span) -> R<(Value, Kind)> {
        if kind.is_narrow_float() {
            use crate::bytecode::UnOp;
            let (u, produced) = match op {
                Builtin::Saturate => (UnOp::Saturate, kind),
                Builtin::DoubleToIntRn => (UnOp::DoubleToIntRn, Kind::I32),
                Builtin::Neg => (UnOp::Neg, kind),
                Builtin::Abs => (UnOp::Abs, kind),
                Builtin::Recip => (UnOp::Recip, kind),
                Builtin::Not => (UnOp::Not, Kind::Bool),
                _ => return unsupported(span, format!("`{op:?}` of a `{kind:?}`")),
            };
            let code = runtime::UNARY.iter().position(|x| *x == u).unwrap_or(0) as i64;
            let bits = self.bits_of(v, kind);
            let oc = self.b.ins().iconst(types::I64, code);
            let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
            let h = runtime::nf_unary as extern "C" fn(u64, u64, u64) -> u64;
            let r = self.call1(h as usize, 3, &[oc, kc, bits]);
            return Ok((self.of_bits(r, produced), produced));
        }
        let float = kind.is_float();
        let ty = cty(kind);
        Ok(match op {
            Builtin::Neg if float => (self.b.ins().fneg(v), kind),
            Builtin::Neg => (self.b.ins().ineg(v), kind),
            Builtin::Not => {
                let r = if float {
                    let z = if kind == Kind::F64 {
                        self.b.ins().f64const(0.0)
                    } else {
                        self.b.ins().f32const(0.0)
                    };
                    self.b.ins().fcmp(FloatCC::Equal, v, z)
                } else {
                    self.b.ins().icmp_imm(IntCC::Equal, v, 0)
                };
                (r, Kind::Bool)
            }
            Builtin::BitNot if !float => (self.b.ins().bnot(v), kind),
            Builtin::Abs if float => (self.b.ins().fabs(v), kind),
            Builtin::Abs if kind.is_signed() => (self.b.ins().iabs(v), kind),
            Builtin::Abs => (v, kind),
            Builtin::Recip if float => {
                let one = if kind == Kind::F64 {
                    self.b.ins().f64const(1.0)
                } else {
                    self.b.ins().f32const(1.0)
                };
                (self.b.ins().fdiv(one, v), kind)
            }
            Builtin::Saturate | Builtin::DoubleToIntRn if float => {
                let code = (op == Builtin::DoubleToIntRn) as i64;
                let bits = self.bits_of(v, kind);
                let oc = self.b.ins().iconst(types::I64, code);
                let kc = self.b.ins().iconst(types::I64, kind_code(kind) as i64);
                let h = runtime::nf_unary as extern "C" fn(u64, u64, u64) -> u64;
                let r = self.call1(h as usize, 3, &[oc, kc, bits]);
                if op == Builtin::Saturate {
                    (self.of_bits(r, kind), kind)
                } else {
                    (self.b.ins().ireduce(types::I32, r), Kind::I32)
                }
            }
            Builtin::Clz | Builtin::Popc | Builtin::Ffs | Builtin::Brev
                if !float && ty.bits() >= 32 =>
            {
                let r = match op {
                    Builtin::Clz => self.b.ins().clz(v),
                    Builtin::Popc => self.b.ins().popcnt(v),
                    Builtin::Brev => return Ok((self.b.ins().bitrev(v), kind)),
                    _ => {
                        let tz = self.b.ins().ctz(v);
                        let t1 = self.b.ins().iadd_imm(tz, 1);
                        let z = self.b.ins().icmp_imm(IntCC::Equal, v, 0);
                        let zero = self.b.ins().iconst(ty, 0);
                        self.b.ins().select(z, zero, t1)
                    }
                };
                let r = if ty == types::I64 {
                    self.b.ins().ireduce(types::I32, r)
                } else {
                    r
                };
                (r, Kind::I32)
            }
            _ => return unsupported(span, format!("`{op:?}` of a `{kind:?}`")),
        })
    }
}
