//! Compiles the typed IR to warp bytecode, once per module.
//!
//! Locals are resolved to register slots (one register per scalar leaf of their type), or to
//! local memory when their address is taken; shared arrays to module-wide slots; structured
//! control flow to jumps and mask slots; each built-in to its instruction. Everything the CPU
//! cannot run is refused here with [`Error::Unsupported`], before any launch.

use crate::bytecode::*;
use crate::error::{Error, Result};
use crate::memory::{DYNAMIC_SHARED_ID, STATIC_SHARED_BASE, encode};
use crate::value::{Kind, canon, from_f64};
use chorus_lang::Span;
use chorus_lang::ir::{
    self, Block, Builtin, Expr, ExprKind, IndexVar, Literal, MathFn, Stmt, StmtKind,
};
use chorus_lang::types::Type;

/// The leaves of `ty`, in register order.
pub(crate) fn leaves(module: &ir::Module, ty: &Type, span: &Span) -> Result<Vec<Leaf>> {
    let mut out = Vec::new();
    push_leaves(module, ty, 0, span, &mut out)?;
    Ok(out)
}

fn push_leaves(
    module: &ir::Module,
    ty: &Type,
    base: u32,
    span: &Span,
    out: &mut Vec<Leaf>,
) -> Result<()> {
    match ty {
        Type::Void => {}
        Type::Vector(v) => {
            let kind = Kind::of_scalar(v.element());
            for i in 0..v.len() {
                out.push(Leaf {
                    kind,
                    offset: base + (i * kind.size()) as u32,
                });
            }
        }
        Type::Struct(name) => {
            let def = module
                .struct_def(name)
                .ok_or_else(|| unsupported(span, format!("unknown structure `{name}`")))?;
            for field in &def.fields {
                push_leaves(module, &field.ty, base + field.offset as u32, span, out)?;
            }
        }
        Type::CurandStateXorwow => {
            // Opaque 48 bytes, copied as six words.
            for i in 0..6 {
                out.push(Leaf {
                    kind: Kind::U64,
                    offset: base + 8 * i,
                });
            }
        }
        other => {
            let kind = Kind::of(other)
                .ok_or_else(|| unsupported(span, format!("values of type `{other}`")))?;
            out.push(Leaf { kind, offset: base });
        }
    }
    Ok(())
}

fn unsupported(span: &Span, what: impl Into<String>) -> Error {
    Error::Unsupported {
        span: span.clone(),
        what: what.into(),
    }
}

/// Size in bytes of `ty` in `module`.
fn size_of_type(module: &ir::Module, ty: &Type, span: &Span) -> Result<u64> {
    module
        .layout(ty)
        .map(|(size, _)| size as u64)
        .ok_or_else(|| unsupported(span, format!("a value of type `{ty}` has no size")))
}

/// The register index of each parameter's first leaf; the result's leaves come first.
/// The number of result leaves, and each parameter's first register and leaves.
type ParamLayout = (u32, Vec<(Reg, Vec<Leaf>)>);

fn param_layout(module: &ir::Module, f: &ir::Function) -> Result<ParamLayout> {
    let ret = leaves(module, &f.ret, &f.span)?.len() as u32;
    let mut next = ret;
    let mut params = Vec::new();
    for p in &f.params {
        let local = local_of(f, p.local, &f.span)?;
        let l = leaves(module, &local.ty, &f.span)?;
        params.push((next, l.clone()));
        next += l.len() as u32;
    }
    Ok((ret, params))
}

fn local_of<'f>(f: &'f ir::Function, id: ir::LocalId, span: &Span) -> Result<&'f ir::Local> {
    f.locals.get(id.0 as usize).ok_or_else(|| {
        unsupported(
            span,
            format!("local #{} is not declared in `{}`", id.0, f.name),
        )
    })
}

/// The bits of a literal as a leaf of `kind`.
pub(crate) fn literal_bits(lit: Literal, kind: Kind) -> u64 {
    match lit {
        Literal::Bool(b) => b as u64,
        Literal::Int(i) if kind.is_float() => from_f64(kind, i as f64),
        Literal::Int(i) => canon(kind, i as u64),
        Literal::Float(f) => from_f64(kind, f),
    }
}

/// Evaluates a global's constant initializer to its bytes.
pub(crate) fn constant_bytes(module: &ir::Module, global: &ir::Global) -> Result<Vec<u8>> {
    let size = size_of_type(module, &global.ty, &global.span)? as usize;
    let layout = leaves(module, &global.ty, &global.span)?;
    let mut values = Vec::new();
    constant_leaves(module, &global.init, &mut values)?;
    if values.len() != layout.len() {
        return Err(unsupported(
            &global.span,
            "an initializer whose shape differs from its type",
        ));
    }
    let mut bytes = vec![0u8; size];
    for (leaf, bits) in layout.iter().zip(values) {
        let at = leaf.offset as usize;
        bytes[at..at + leaf.kind.size()].copy_from_slice(&bits.to_le_bytes()[..leaf.kind.size()]);
    }
    Ok(bytes)
}

fn constant_leaves(module: &ir::Module, e: &Expr, out: &mut Vec<u64>) -> Result<()> {
    match &e.kind {
        ExprKind::Literal(lit) => {
            let kind = Kind::of(&e.ty)
                .ok_or_else(|| unsupported(&e.span, format!("a `{}` literal", e.ty)))?;
            out.push(literal_bits(*lit, kind));
        }
        ExprKind::Construct(args) => {
            for a in args {
                constant_leaves(module, a, out)?;
            }
        }
        ExprKind::Cast { value, .. } => {
            let mut inner = Vec::new();
            constant_leaves(module, value, &mut inner)?;
            let from = leaves(module, &value.ty, &e.span)?;
            let to = leaves(module, &e.ty, &e.span)?;
            if from.len() != inner.len() || from.len() != to.len() {
                return Err(unsupported(&e.span, "this constant conversion"));
            }
            for ((bits, f), t) in inner.into_iter().zip(from).zip(to) {
                out.push(crate::value::convert(f.kind, t.kind, bits));
            }
        }
        ExprKind::Builtin {
            op: Builtin::Neg,
            args,
        } if args.len() == 1 => {
            let mut inner = Vec::new();
            constant_leaves(module, &args[0], &mut inner)?;
            let kinds = leaves(module, &e.ty, &e.span)?;
            for (bits, leaf) in inner.into_iter().zip(kinds) {
                out.push(crate::scalar::unary(UnOp::Neg, leaf.kind, bits));
            }
        }
        _ => {
            return Err(unsupported(
                &e.span,
                "a global initializer that is not a constant",
            ));
        }
    }
    Ok(())
}

/// Compiles every function of `module`. `global_ids` are the allocation ids of its globals.
pub(crate) fn compile(module: &ir::Module, global_ids: &[u32]) -> Result<Program> {
    let mut prog = Program::default();
    for f in &module.functions {
        let code = FnCompiler::new(module, &mut prog, f, global_ids)?.run()?;
        prog.functions.push(code);
    }
    Ok(prog)
}

/// Where a local lives.
#[derive(Clone, Debug)]
enum Home {
    Unset,
    Regs(Reg),
    /// Byte offset in the frame's local memory.
    Memory(u32),
    SharedScalar(u32),
    SharedArray {
        slot: u32,
        sizes: Vec<u64>,
        elem_size: u64,
    },
    Dynamic,
}

/// A place: registers, or memory at a pointer plus a constant offset.
#[derive(Clone, Copy, Debug)]
enum Place {
    Regs(Reg),
    Mem { ptr: Reg, offset: u32 },
}

struct FnCompiler<'a> {
    module: &'a ir::Module,
    prog: &'a mut Program,
    func: &'a ir::Function,
    global_ids: &'a [u32],
    code: Vec<Op>,
    spans: Vec<Span>,
    span: Span,
    homes: Vec<Home>,
    addressed: Vec<bool>,
    next_reg: u32,
    max_reg: u32,
    next_mask: u32,
    max_mask: u32,
    local_bytes: u32,
    /// Innermost last: (mask slot, is a loop).
    breakables: Vec<(u32, bool)>,
    ret_reg: Reg,
    ret_leaves: u32,
    params: Vec<(Reg, Vec<Leaf>)>,
    callees: Vec<u32>,
    shared_slots: Vec<u32>,
}

impl<'a> FnCompiler<'a> {
    fn new(
        module: &'a ir::Module,
        prog: &'a mut Program,
        func: &'a ir::Function,
        global_ids: &'a [u32],
    ) -> Result<Self> {
        let (ret_leaves, params) = param_layout(module, func)?;
        let mut addressed = vec![false; func.locals.len()];
        visit_block(&func.body, &mut |e| {
            if let ExprKind::AddressOf(inner) = &e.kind {
                let mut root = &**inner;
                while let ExprKind::Field { base, .. } = &root.kind {
                    root = base;
                }
                if let ExprKind::Local(id) = root.kind
                    && let Some(a) = addressed.get_mut(id.0 as usize)
                {
                    *a = true;
                }
            }
        });
        let next_reg = params
            .last()
            .map_or(ret_leaves, |(r, l)| r + l.len() as u32);
        Ok(FnCompiler {
            module,
            prog,
            func,
            global_ids,
            code: Vec::new(),
            spans: Vec::new(),
            span: func.span.clone(),
            homes: vec![Home::Unset; func.locals.len()],
            addressed,
            next_reg,
            max_reg: next_reg,
            next_mask: 0,
            max_mask: 0,
            local_bytes: 0,
            breakables: Vec::new(),
            ret_reg: 0,
            ret_leaves,
            params,
            callees: Vec::new(),
            shared_slots: Vec::new(),
        })
    }

    fn run(mut self) -> Result<FunctionCode> {
        let func = self.func;
        let params = self.params.clone();
        for (p, (reg, param_leaves)) in func.params.iter().zip(&params) {
            if self.addressed[p.local.0 as usize] {
                let ty = &local_of(func, p.local, &func.span)?.ty;
                let offset = self.alloc_local_memory(ty)?;
                let ptr = self.alloc(1);
                self.emit(Op::LocalAddr { dst: ptr, offset });
                for (i, leaf) in param_leaves.iter().enumerate() {
                    self.emit(Op::Store {
                        addr: ptr,
                        src: reg + i as u32,
                        kind: leaf.kind,
                        offset: leaf.offset,
                    });
                }
                self.homes[p.local.0 as usize] = Home::Memory(offset);
            } else {
                self.homes[p.local.0 as usize] = Home::Regs(*reg);
            }
        }
        self.block(&func.body)?;
        self.span = func.span.clone();
        self.emit(Op::End);
        Ok(FunctionCode {
            name: func.name.to_string(),
            code: self.code,
            spans: self.spans,
            n_regs: self.max_reg,
            n_masks: self.max_mask,
            local_bytes: self.local_bytes,
            params,
            ret_reg: self.ret_reg,
            ret_leaves: self.ret_leaves,
            callees: self.callees,
            shared_slots: self.shared_slots,
        })
    }

    // ---- bookkeeping

    fn emit(&mut self, op: Op) -> u32 {
        self.code.push(op);
        self.spans.push(self.span.clone());
        (self.code.len() - 1) as u32
    }

    fn pc(&self) -> u32 {
        self.code.len() as u32
    }

    fn alloc(&mut self, n: u32) -> Reg {
        let r = self.next_reg;
        self.next_reg += n;
        self.max_reg = self.max_reg.max(self.next_reg);
        r
    }

    fn alloc_masks(&mut self, n: u32) -> u32 {
        let m = self.next_mask;
        self.next_mask += n;
        self.max_mask = self.max_mask.max(self.next_mask);
        m
    }

    fn alloc_local_memory(&mut self, ty: &Type) -> Result<u32> {
        let (size, align) = self
            .module
            .layout(ty)
            .ok_or_else(|| unsupported(&self.span, format!("a variable of type `{ty}`")))?;
        let offset = (self.local_bytes as usize).next_multiple_of(align.max(1));
        self.local_bytes = (offset + size) as u32;
        Ok(offset as u32)
    }

    fn leaves(&self, ty: &Type) -> Result<Vec<Leaf>> {
        leaves(self.module, ty, &self.span)
    }

    fn kind(&self, ty: &Type) -> Result<Kind> {
        Kind::of(ty).ok_or_else(|| unsupported(&self.span, format!("this operation on `{ty}`")))
    }

    fn constant(&mut self, bits: u64) -> Reg {
        let r = self.alloc(1);
        self.emit(Op::Const { dst: r, bits });
        r
    }

    fn patch(&mut self, at: u32, target: u32) {
        match &mut self.code[at as usize] {
            Op::IfBegin { else_target: t, .. }
            | Op::Else { end_target: t, .. }
            | Op::LoopTest { exit: t, .. }
            | Op::Case { next: t, .. } => *t = target,
            _ => unreachable!("patching an instruction without a target"),
        }
    }

    fn local(&self, id: ir::LocalId) -> Result<&'a ir::Local> {
        local_of(self.func, id, &self.span)
    }

    // ---- statements

    fn block(&mut self, b: &Block) -> Result<()> {
        let (regs, masks) = (self.next_reg, self.next_mask);
        for s in &b.stmts {
            self.stmt(s)?;
        }
        self.next_reg = regs;
        self.next_mask = masks;
        Ok(())
    }

    /// Compiles a sub-block under a fresh scope (its temporaries are released after it).
    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        self.span = s.span.clone();
        let mark = self.next_reg;
        match &s.kind {
            StmtKind::Block(b) => self.block(b)?,
            StmtKind::Declare { local, init } => {
                let keep = self.declare(*local, init)?;
                self.next_reg = keep;
                return Ok(());
            }
            StmtKind::SharedArray {
                local,
                element,
                sizes,
                ..
            } => {
                let elem_size = size_of_type(self.module, element, &s.span)?;
                let count: u64 = sizes.iter().product();
                let slot = self.prog.shared_sizes.len() as u32;
                self.prog
                    .shared_sizes
                    .push((elem_size * count.max(1)) as usize);
                self.shared_slots.push(slot);
                let home = if sizes.is_empty() {
                    Home::SharedScalar(slot)
                } else {
                    Home::SharedArray {
                        slot,
                        sizes: sizes.clone(),
                        elem_size,
                    }
                };
                self.set_home(*local, home)?;
            }
            StmtKind::DynamicShared { locals } => {
                for l in locals {
                    self.set_home(*l, Home::Dynamic)?;
                }
            }
            StmtKind::Assign { place, value } => {
                let v = self.expr(value)?;
                self.span = s.span.clone();
                let p = self.place(place)?;
                self.write_place(p, v, &place.ty)?;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                let slot = self.alloc_masks(2);
                let begin = self.emit(Op::IfBegin {
                    cond: c,
                    slot,
                    else_target: 0,
                });
                self.block(then)?;
                self.span = s.span.clone();
                if let Some(other) = otherwise {
                    let e = self.emit(Op::Else {
                        slot,
                        end_target: 0,
                    });
                    self.patch(begin, e);
                    self.block(other)?;
                    self.span = s.span.clone();
                    let end = self.emit(Op::EndIf { slot });
                    self.patch(e, end);
                } else {
                    let end = self.emit(Op::EndIf { slot });
                    self.patch(begin, end);
                }
                self.next_mask = slot;
            }
            StmtKind::While { cond, body } => {
                self.emit_loop(Some(cond), &[], body, &s.span)?;
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                for (local, value) in init {
                    let keep = self.declare(*local, value)?;
                    self.next_reg = keep;
                }
                self.emit_loop(cond.as_ref(), step, body, &s.span)?;
            }
            StmtKind::Break => {
                let &(slot, _) = self
                    .breakables
                    .last()
                    .ok_or_else(|| unsupported(&s.span, "`break` outside a loop or switch"))?;
                self.emit(Op::Break { slot });
            }
            StmtKind::Continue => {
                let &(slot, _) = self
                    .breakables
                    .iter()
                    .rev()
                    .find(|(_, is_loop)| *is_loop)
                    .ok_or_else(|| unsupported(&s.span, "`continue` outside a loop"))?;
                self.emit(Op::Continue { slot });
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                let kind = self.kind(&scrutinee.ty)?;
                let sc = self.expr(scrutinee)?;
                self.span = s.span.clone();
                let slot = self.alloc_masks(3);
                self.emit(Op::SwitchBegin { slot });
                self.breakables.push((slot, false));
                for case in cases {
                    let start = self.prog.case_values.len() as u32;
                    self.prog
                        .case_values
                        .extend(case.values.iter().map(|v| canon(kind, *v as u64)));
                    let values = (start, case.values.len() as u32);
                    let at = self.emit(Op::Case {
                        slot,
                        scrutinee: sc,
                        values,
                        next: 0,
                    });
                    self.block(&case.body)?;
                    let next = self.pc();
                    self.patch(at, next);
                }
                self.span = s.span.clone();
                if let Some(d) = default {
                    self.emit(Op::Default { slot });
                    self.block(d)?;
                    self.span = s.span.clone();
                }
                self.emit(Op::SwitchEnd { slot });
                self.breakables.pop();
                self.next_mask = slot;
            }
            StmtKind::Return(value) => {
                let value = match value {
                    Some(v) => Some(self.expr(v)?),
                    None => None,
                };
                self.span = s.span.clone();
                self.emit(Op::Return { value });
            }
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
            StmtKind::Printf { format, args } => self.printf(format, args)?,
            StmtKind::Asm(_) => {
                return Err(unsupported(&s.span, "`cuda-asm` (inline CUDA C or PTX)"));
            }
        }
        self.next_reg = mark;
        Ok(())
    }

    fn set_home(&mut self, local: ir::LocalId, home: Home) -> Result<()> {
        self.local(local)?;
        self.homes[local.0 as usize] = home;
        Ok(())
    }

    /// Declares a register or memory local initialised by `init`; returns the first register
    /// free after it.
    fn declare(&mut self, local: ir::LocalId, init: &Expr) -> Result<Reg> {
        let ty = &self.local(local)?.ty;
        if self.addressed[local.0 as usize] {
            let offset = self.alloc_local_memory(ty)?;
            self.homes[local.0 as usize] = Home::Memory(offset);
            let keep = self.next_reg;
            let v = self.expr(init)?;
            self.write_place_memory_local(offset, v, ty)?;
            Ok(keep)
        } else {
            let n = self.leaves(ty)?.len() as u32;
            let mark = self.next_reg;
            let v = self.expr(init)?;
            if v >= mark {
                // The value is in a temporary made for it: the variable simply lives there.
                // (Lanes that are not active here never read this declaration's value.)
                self.homes[local.0 as usize] = Home::Regs(v);
                return Ok(v + n);
            }
            let regs = self.alloc(n);
            let keep = self.next_reg;
            for i in 0..n {
                self.emit(Op::CopyMasked {
                    dst: regs + i,
                    src: v + i,
                });
            }
            self.homes[local.0 as usize] = Home::Regs(regs);
            Ok(keep)
        }
    }

    fn write_place_memory_local(&mut self, offset: u32, v: Reg, ty: &Type) -> Result<()> {
        let ptr = self.alloc(1);
        self.emit(Op::LocalAddr { dst: ptr, offset });
        self.write_place(Place::Mem { ptr, offset: 0 }, v, ty)
    }

    fn emit_loop(
        &mut self,
        cond: Option<&Expr>,
        step: &[(ir::LocalId, Expr)],
        body: &Block,
        span: &Span,
    ) -> Result<()> {
        let slot = self.alloc_masks(3);
        self.emit(Op::LoopBegin { slot });
        let top = self.pc();
        let mark = self.next_reg;
        let c = match cond {
            Some(c) => Some(self.expr(c)?),
            None => None,
        };
        self.span = span.clone();
        let test = self.emit(Op::LoopTest { cond: c, exit: 0 });
        self.next_reg = mark;
        self.breakables.push((slot, true));
        self.block(body)?;
        self.breakables.pop();
        self.span = span.clone();
        self.emit(Op::LoopContinue { slot });
        // Steps are parallel: every new value is computed before any is assigned.
        let mut values = Vec::new();
        for (local, value) in step {
            let v = self.expr(value)?;
            let n = self.leaves(&value.ty)?.len() as u32;
            let t = self.alloc(n);
            for i in 0..n {
                self.emit(Op::Copy {
                    dst: t + i,
                    src: v + i,
                });
            }
            values.push((*local, t));
        }
        for (local, t) in values {
            let ty = self.local(local)?.ty.clone();
            let p = self.place(&Expr {
                kind: ExprKind::Local(local),
                ty: ty.clone(),
                span: span.clone(),
            })?;
            self.write_place(p, t, &ty)?;
        }
        self.next_reg = mark;
        self.emit(Op::Jump { target: top });
        let exit = self.emit(Op::LoopEnd { slot });
        self.patch(test, exit);
        self.next_mask = slot;
        Ok(())
    }

    fn printf(&mut self, format: &str, args: &[Expr]) -> Result<()> {
        let parsed =
            crate::printf::Format::parse(format).map_err(|m| unsupported(&self.span, m))?;
        if parsed.arg_count() != args.len() {
            return Err(unsupported(
                &self.span,
                format!(
                    "a printf format taking {} argument(s) given {}",
                    parsed.arg_count(),
                    args.len()
                ),
            ));
        }
        let mut regs = Vec::new();
        for a in args {
            let kind = self.kind(&a.ty)?;
            let is_byte_pointer = matches!(
                a.ty.pointee(),
                Some(Type::Scalar(
                    chorus_lang::types::ScalarType::Int8 | chorus_lang::types::ScalarType::UInt8
                ))
            );
            let reg = self.expr(a)?;
            regs.push(PrintfArg {
                reg,
                kind,
                is_byte_pointer,
            });
        }
        let index = self.prog.printfs.len() as u32;
        self.prog.printfs.push(PrintfSite {
            format: parsed,
            args: regs,
        });
        self.emit(Op::Printf { index });
        Ok(())
    }

    // ---- places

    fn is_place(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Local(id) => matches!(
                self.homes.get(id.0 as usize),
                Some(Home::Regs(_) | Home::Memory(_) | Home::SharedScalar(_))
            ),
            ExprKind::Global(_) => true,
            ExprKind::Aref { base, indices } => !self.is_partial_shared_aref(base, indices),
            ExprKind::Field { base, .. } => self.is_place(base),
            _ => false,
        }
    }

    fn is_partial_shared_aref(&self, base: &Expr, indices: &[Expr]) -> bool {
        if let ExprKind::Local(id) = base.kind
            && let Some(Home::SharedArray { sizes, .. }) = self.homes.get(id.0 as usize)
        {
            return indices.len() < sizes.len();
        }
        false
    }

    fn global_pointer(&mut self, id: ir::GlobalId) -> Result<Reg> {
        let alloc = *self
            .global_ids
            .get(id.0 as usize)
            .ok_or_else(|| unsupported(&self.span, format!("global #{} is not defined", id.0)))?;
        Ok(self.constant(encode(alloc, 0)))
    }

    fn place(&mut self, e: &Expr) -> Result<Place> {
        match &e.kind {
            ExprKind::Local(id) => match self.homes.get(id.0 as usize).cloned() {
                Some(Home::Regs(r)) => Ok(Place::Regs(r)),
                Some(Home::Memory(offset)) => {
                    let ptr = self.alloc(1);
                    self.emit(Op::LocalAddr { dst: ptr, offset });
                    Ok(Place::Mem { ptr, offset: 0 })
                }
                Some(Home::SharedScalar(slot)) => {
                    let ptr = self.constant(encode(STATIC_SHARED_BASE + slot, 0));
                    Ok(Place::Mem { ptr, offset: 0 })
                }
                Some(Home::Unset) | None => Err(unsupported(
                    &e.span,
                    "a variable used before its declaration",
                )),
                Some(_) => Err(unsupported(
                    &e.span,
                    "assigning to a shared-memory array variable",
                )),
            },
            ExprKind::Global(g) => {
                let ptr = self.global_pointer(*g)?;
                Ok(Place::Mem { ptr, offset: 0 })
            }
            ExprKind::Aref { base, indices } => {
                if self.is_partial_shared_aref(base, indices) {
                    return Err(unsupported(&e.span, "assigning to a row of a shared array"));
                }
                let ptr = self.aref_address(base, indices)?;
                Ok(Place::Mem { ptr, offset: 0 })
            }
            ExprKind::Field { base, index } => {
                let (leaf, byte) = self.field_position(&base.ty, *index, &e.span)?;
                Ok(match self.place(base)? {
                    Place::Regs(r) => Place::Regs(r + leaf),
                    Place::Mem { ptr, offset } => Place::Mem {
                        ptr,
                        offset: offset + byte,
                    },
                })
            }
            _ => Err(unsupported(
                &e.span,
                "a place that is not a variable, global, aref or field",
            )),
        }
    }

    /// (index of the first leaf, byte offset) of component or field `index` of `ty`.
    fn field_position(&self, ty: &Type, index: usize, span: &Span) -> Result<(u32, u32)> {
        match ty {
            Type::Vector(v) if index < v.len() => {
                Ok((index as u32, (index * v.element().size()) as u32))
            }
            Type::Struct(name) => {
                let def = self
                    .module
                    .struct_def(name)
                    .ok_or_else(|| unsupported(span, format!("unknown structure `{name}`")))?;
                let field = def
                    .fields
                    .get(index)
                    .ok_or_else(|| unsupported(span, format!("field #{index} of `{name}`")))?;
                let mut leaf = 0;
                for f in &def.fields[..index] {
                    leaf += leaves(self.module, &f.ty, span)?.len() as u32;
                }
                Ok((leaf, field.offset as u32))
            }
            other => Err(unsupported(
                span,
                format!("component #{index} of `{other}`"),
            )),
        }
    }

    /// The address `base[i][j]…` (a row address when a shared array is indexed partially).
    fn aref_address(&mut self, base: &Expr, indices: &[Expr]) -> Result<Reg> {
        if let ExprKind::Local(id) = base.kind
            && let Some(Home::SharedArray {
                slot,
                sizes,
                elem_size,
            }) = self.homes.get(id.0 as usize).cloned()
        {
            if indices.len() > sizes.len() {
                return Err(unsupported(
                    &base.span,
                    "more indices than the shared array has dimensions",
                ));
            }
            let mut p = self.constant(encode(STATIC_SHARED_BASE + slot, 0));
            for (k, idx) in indices.iter().enumerate() {
                let stride = elem_size * sizes[k + 1..].iter().product::<u64>();
                p = self.ptr_index(p, idx, stride as i64)?;
            }
            return Ok(p);
        }
        let mut p = self.expr(base)?;
        let mut ty = base.ty.clone();
        for (k, idx) in indices.iter().enumerate() {
            let elem = ty.pointee().cloned().ok_or_else(|| {
                unsupported(
                    &base.span,
                    format!("indexing a `{ty}`, which is not a pointer"),
                )
            })?;
            let stride = size_of_type(self.module, &elem, &base.span)?;
            let q = self.ptr_index(p, idx, stride as i64)?;
            if k + 1 < indices.len() {
                let r = self.alloc(1);
                self.emit(Op::Load {
                    dst: r,
                    addr: q,
                    kind: Kind::Ptr,
                    offset: 0,
                });
                p = r;
            } else {
                p = q;
            }
            ty = elem;
        }
        Ok(p)
    }

    fn read_place(&mut self, place: Place, ty: &Type) -> Result<Reg> {
        match place {
            Place::Regs(r) => Ok(r),
            Place::Mem { ptr, offset } => {
                let l = self.leaves(ty)?;
                let dst = self.alloc(l.len() as u32);
                for (i, leaf) in l.iter().enumerate() {
                    self.emit(Op::Load {
                        dst: dst + i as u32,
                        addr: ptr,
                        kind: leaf.kind,
                        offset: offset + leaf.offset,
                    });
                }
                Ok(dst)
            }
        }
    }

    fn write_place(&mut self, place: Place, v: Reg, ty: &Type) -> Result<()> {
        let l = self.leaves(ty)?;
        for (i, leaf) in l.iter().enumerate() {
            let src = v + i as u32;
            match place {
                Place::Regs(r) => self.emit(Op::CopyMasked {
                    dst: r + i as u32,
                    src,
                }),
                Place::Mem { ptr, offset } => self.emit(Op::Store {
                    addr: ptr,
                    src,
                    kind: leaf.kind,
                    offset: offset + leaf.offset,
                }),
            };
        }
        Ok(())
    }

    // ---- expressions

    fn expr(&mut self, e: &Expr) -> Result<Reg> {
        self.span = e.span.clone();
        match &e.kind {
            ExprKind::Literal(lit) => {
                let kind = self.kind(&e.ty)?;
                Ok(self.constant(literal_bits(*lit, kind)))
            }
            ExprKind::Local(id) => match self.homes.get(id.0 as usize).cloned() {
                Some(Home::SharedArray { slot, sizes, .. }) => {
                    if sizes.len() > 1 {
                        return Err(unsupported(
                            &e.span,
                            "a multi-dimensional shared array used other than through `aref`",
                        ));
                    }
                    Ok(self.constant(encode(STATIC_SHARED_BASE + slot, 0)))
                }
                Some(Home::Dynamic) => Ok(self.constant(encode(DYNAMIC_SHARED_ID, 0))),
                _ => {
                    let p = self.place(e)?;
                    self.read_place(p, &e.ty)
                }
            },
            ExprKind::Global(_) => {
                let p = self.place(e)?;
                self.read_place(p, &e.ty)
            }
            ExprKind::Index(var) => self.index(*var, &e.span),
            ExprKind::Aref { base, indices } => {
                if self.is_partial_shared_aref(base, indices) {
                    return self.aref_address(base, indices);
                }
                let p = self.place(e)?;
                self.read_place(p, &e.ty)
            }
            ExprKind::Field { base, index } => {
                if self.is_place(e) {
                    let p = self.place(e)?;
                    return self.read_place(p, &e.ty);
                }
                let (leaf, _) = self.field_position(&base.ty, *index, &e.span)?;
                Ok(self.expr(base)? + leaf)
            }
            ExprKind::Builtin { op, args } => self.builtin(e, *op, args),
            ExprKind::Call { function, args } => self.call(e, *function, args),
            ExprKind::Cast { value, .. } => self.cast(value, &e.ty, &e.span),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => self.select(e, cond, then, otherwise),
            ExprKind::AddressOf(place) => self.address_of(place),
            ExprKind::Construct(parts) => {
                let n = self.leaves(&e.ty)?.len() as u32;
                let dst = self.alloc(n);
                let mut at = dst;
                for part in parts {
                    let v = self.expr(part)?;
                    let m = self.leaves(&part.ty)?.len() as u32;
                    for i in 0..m {
                        self.emit(Op::Copy {
                            dst: at + i,
                            src: v + i,
                        });
                    }
                    at += m;
                }
                if at != dst + n {
                    return Err(unsupported(
                        &e.span,
                        format!("a `{}` built from {} values", e.ty, at - dst),
                    ));
                }
                Ok(dst)
            }
        }
    }

    fn index(&mut self, var: IndexVar, span: &Span) -> Result<Reg> {
        let axis = |a: ir::Axis| match a {
            ir::Axis::X => 0,
            ir::Axis::Y => 1,
            ir::Axis::Z => 2,
        };
        let source = match var {
            IndexVar::ThreadIdx(a) => IndexSource::ThreadIdx(axis(a)),
            IndexVar::BlockIdx(a) => IndexSource::BlockIdx(axis(a)),
            IndexVar::BlockDim(a) => IndexSource::BlockDim(axis(a)),
            IndexVar::GridDim(a) => IndexSource::GridDim(axis(a)),
            IndexVar::LaneId => IndexSource::LaneId,
            IndexVar::WarpSize => return Ok(self.constant(32)),
            IndexVar::ClusterDim(_) | IndexVar::ClusterIdx(_) | IndexVar::BlockInCluster(_) => {
                return Err(unsupported(
                    span,
                    "thread-block cluster indexes (sm_90 clusters)",
                ));
            }
        };
        let dst = self.alloc(1);
        self.emit(Op::Index { dst, source });
        Ok(dst)
    }

    fn address_of(&mut self, place: &Expr) -> Result<Reg> {
        if let ExprKind::Local(id) = place.kind
            && let Some(Home::SharedArray { slot, .. }) = self.homes.get(id.0 as usize)
        {
            let slot = *slot;
            return Ok(self.constant(encode(STATIC_SHARED_BASE + slot, 0)));
        }
        match self.place(place)? {
            Place::Mem { ptr, offset: 0 } => Ok(ptr),
            Place::Mem { ptr, offset } => {
                let dst = self.alloc(1);
                self.emit(Op::PtrAdd {
                    dst,
                    base: ptr,
                    bytes: offset as i64,
                });
                Ok(dst)
            }
            Place::Regs(_) => Err(unsupported(
                &place.span,
                "the address of a value that is not in memory",
            )),
        }
    }

    fn cast(&mut self, value: &Expr, to: &Type, span: &Span) -> Result<Reg> {
        let v = self.expr(value)?;
        self.span = span.clone();
        if &value.ty == to {
            return Ok(v);
        }
        let from_leaves = self.leaves(&value.ty)?;
        let to_leaves = self.leaves(to)?;
        let componentwise = match (&value.ty, to) {
            (Type::Vector(a), Type::Vector(b)) => a.len() == b.len(),
            (Type::Struct(_) | Type::Vector(_), _) | (_, Type::Struct(_) | Type::Vector(_)) => {
                false
            }
            _ => from_leaves.len() == 1 && to_leaves.len() == 1,
        };
        if !componentwise {
            return Err(unsupported(
                span,
                format!("a conversion from `{}` to `{to}`", value.ty),
            ));
        }
        let dst = self.alloc(to_leaves.len() as u32);
        for (i, (f, t)) in from_leaves.iter().zip(&to_leaves).enumerate() {
            let i = i as u32;
            if f.kind == t.kind {
                self.emit(Op::Copy {
                    dst: dst + i,
                    src: v + i,
                });
            } else {
                self.emit(Op::Convert {
                    from: f.kind,
                    to: t.kind,
                    dst: dst + i,
                    src: v + i,
                });
            }
        }
        Ok(dst)
    }

    /// True when evaluating `e` for lanes that do not need it is harmless: no memory access,
    /// no call, no side effect, nothing that can fault.
    fn is_pure(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Literal(_) | ExprKind::Index(_) => true,
            ExprKind::Local(id) => {
                matches!(
                    self.homes.get(id.0 as usize),
                    Some(Home::Regs(_) | Home::SharedArray { .. } | Home::Dynamic)
                )
            }
            ExprKind::Cast { value, .. } => self.is_pure(value),
            ExprKind::Field { base, .. } => self.is_pure(base),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => self.is_pure(cond) && self.is_pure(then) && self.is_pure(otherwise),
            ExprKind::Construct(parts) => parts.iter().all(|p| self.is_pure(p)),
            ExprKind::Builtin { op, args } => {
                let integer_division = matches!(op, Builtin::Div | Builtin::Rem | Builtin::Recip)
                    && !matches!(Kind::of(&e.ty), Some(k) if k.is_float());
                let safe_op = matches!(
                    op,
                    Builtin::Add
                        | Builtin::Sub
                        | Builtin::Mul
                        | Builtin::Div
                        | Builtin::Rem
                        | Builtin::Neg
                        | Builtin::Recip
                        | Builtin::Min
                        | Builtin::Max
                        | Builtin::Abs
                        | Builtin::Eq
                        | Builtin::Ne
                        | Builtin::Lt
                        | Builtin::Gt
                        | Builtin::Le
                        | Builtin::Ge
                        | Builtin::Not
                        | Builtin::And
                        | Builtin::Or
                        | Builtin::BitAnd
                        | Builtin::BitOr
                        | Builtin::BitXor
                        | Builtin::BitNot
                        | Builtin::Shl
                        | Builtin::Shr
                        | Builtin::Math(_)
                        | Builtin::Fma
                        | Builtin::Saturate
                );
                safe_op && !integer_division && args.iter().all(|a| self.is_pure(a))
            }
            _ => false,
        }
    }

    fn select(&mut self, e: &Expr, cond: &Expr, then: &Expr, otherwise: &Expr) -> Result<Reg> {
        let n = self.leaves(&e.ty)?.len() as u32;
        if self.is_pure(then) && self.is_pure(otherwise) {
            let c = self.expr(cond)?;
            let a = self.expr(then)?;
            let b = self.expr(otherwise)?;
            let dst = self.alloc(n);
            for i in 0..n {
                self.emit(Op::Select {
                    dst: dst + i,
                    cond: c,
                    a: a + i,
                    b: b + i,
                });
            }
            return Ok(dst);
        }
        let dst = self.alloc(n);
        let c = self.expr(cond)?;
        let slot = self.alloc_masks(2);
        let begin = self.emit(Op::IfBegin {
            cond: c,
            slot,
            else_target: 0,
        });
        let a = self.expr(then)?;
        for i in 0..n {
            self.emit(Op::CopyMasked {
                dst: dst + i,
                src: a + i,
            });
        }
        let el = self.emit(Op::Else {
            slot,
            end_target: 0,
        });
        self.patch(begin, el);
        let b = self.expr(otherwise)?;
        for i in 0..n {
            self.emit(Op::CopyMasked {
                dst: dst + i,
                src: b + i,
            });
        }
        let end = self.emit(Op::EndIf { slot });
        self.patch(el, end);
        self.next_mask = slot;
        Ok(dst)
    }

    fn call(&mut self, e: &Expr, function: ir::FunctionId, args: &[Expr]) -> Result<Reg> {
        let callee = self
            .module
            .functions
            .get(function.0 as usize)
            .ok_or_else(|| {
                unsupported(&e.span, format!("function #{} is not defined", function.0))
            })?;
        if callee.kind != ir::FunctionKind::Device {
            return Err(unsupported(
                &e.span,
                format!("calling the kernel `{}` from device code", callee.name),
            ));
        }
        let (ret_leaves, params) = param_layout(self.module, callee)?;
        if params.len() != args.len() {
            return Err(unsupported(
                &e.span,
                format!("a call of `{}` with {} arguments", callee.name, args.len()),
            ));
        }
        let mut copies = Vec::new();
        for (arg, (param_reg, param_leaves)) in args.iter().zip(&params) {
            let v = self.expr(arg)?;
            for i in 0..param_leaves.len() as u32 {
                copies.push((v + i, param_reg + i));
            }
        }
        let dest = self.alloc(ret_leaves);
        let index = self.prog.calls.len() as u32;
        self.prog.calls.push(CallSite {
            function: function.0,
            args: copies,
            dest: (ret_leaves > 0).then_some((dest, ret_leaves)),
        });
        self.span = e.span.clone();
        self.emit(Op::Call { index });
        self.callees.push(function.0);
        Ok(dest)
    }

    fn binary_into(&mut self, op: BinOp, kind: Kind, a: Reg, b: Reg) -> Reg {
        let dst = self.alloc(1);
        self.emit(Op::Binary {
            op,
            kind,
            dst,
            a,
            b,
        });
        dst
    }

    /// A binary arithmetic built-in: scalars, vectors component-wise, vector·scalar scaling,
    /// pointer ± integer.
    fn arith2(&mut self, e: &Expr, op: BinOp, args: &[Expr]) -> Result<Reg> {
        let [x, y] = args else {
            return Err(unsupported(
                &e.span,
                format!("{op:?} with {} arguments", args.len()),
            ));
        };
        if matches!(op, BinOp::Add | BinOp::Sub)
            && (x.ty.pointee().is_some() || y.ty.pointee().is_some())
        {
            return self.pointer_arith(e, op, x, y);
        }
        let a = self.expr(x)?;
        let b = self.expr(y)?;
        self.span = e.span.clone();
        if let Type::Vector(v) = e.ty {
            let kind = Kind::of_scalar(v.element());
            let dst = self.alloc(v.len() as u32);
            for i in 0..v.len() as u32 {
                let ai = if matches!(x.ty, Type::Vector(_)) {
                    a + i
                } else {
                    a
                };
                let bi = if matches!(y.ty, Type::Vector(_)) {
                    b + i
                } else {
                    b
                };
                self.emit(Op::Binary {
                    op,
                    kind,
                    dst: dst + i,
                    a: ai,
                    b: bi,
                });
            }
            return Ok(dst);
        }
        let kind = self.kind(&x.ty)?;
        let r = self.binary_into(op, kind, a, b);
        self.convert_result(r, kind, &e.ty)
    }

    fn pointer_arith(&mut self, e: &Expr, op: BinOp, x: &Expr, y: &Expr) -> Result<Reg> {
        let (ptr, int, negate) = match (x.ty.pointee(), y.ty.pointee(), op) {
            (Some(_), None, BinOp::Add) => (x, y, false),
            (Some(_), None, BinOp::Sub) => (x, y, true),
            (None, Some(_), BinOp::Add) => (y, x, false),
            _ => return Err(unsupported(&e.span, "this pointer arithmetic")),
        };
        let elem = ptr.ty.pointee().cloned().unwrap_or(Type::Void);
        let size = size_of_type(self.module, &elem, &e.span)? as i64;
        let p = self.expr(ptr)?;
        self.ptr_index(p, int, if negate { -size } else { size })
    }

    /// `base + index * stride` bytes, in a new register (`index` evaluated here).
    fn ptr_index(&mut self, base: Reg, index: &Expr, stride: i64) -> Result<Reg, Error> {
        let i = self.expr(index)?;
        let index_kind = self.kind(&index.ty)?;
        let dst = self.alloc(1);
        self.emit(Op::PtrIndex {
            dst,
            base,
            index: i,
            index_kind,
            stride,
        });
        Ok(dst)
    }

    fn arith1(&mut self, e: &Expr, op: UnOp, args: &[Expr]) -> Result<Reg> {
        let [x] = args else {
            return Err(unsupported(
                &e.span,
                format!("{op:?} with {} arguments", args.len()),
            ));
        };
        let a = self.expr(x)?;
        self.span = e.span.clone();
        if let Type::Vector(v) = x.ty {
            let kind = Kind::of_scalar(v.element());
            let dst = self.alloc(v.len() as u32);
            for i in 0..v.len() as u32 {
                self.emit(Op::Unary {
                    op,
                    kind,
                    dst: dst + i,
                    a: a + i,
                });
            }
            return Ok(dst);
        }
        let kind = self.kind(&x.ty)?;
        let dst = self.alloc(1);
        self.emit(Op::Unary { op, kind, dst, a });
        let produced = match op {
            UnOp::DoubleToIntRn | UnOp::Clz | UnOp::Popc | UnOp::Ffs => Kind::I32,
            UnOp::Not => Kind::Bool,
            _ => kind,
        };
        self.convert_result(dst, produced, &e.ty)
    }

    /// Converts a scalar computed as `produced` to the expression's type when they differ.
    fn convert_result(&mut self, r: Reg, produced: Kind, ty: &Type) -> Result<Reg> {
        let want = self.kind(ty)?;
        if want == produced {
            return Ok(r);
        }
        let dst = self.alloc(1);
        self.emit(Op::Convert {
            from: produced,
            to: want,
            dst,
            src: r,
        });
        Ok(dst)
    }

    /// `and`/`or` over any number of `bool`s: each further operand is evaluated only in lanes
    /// whose result is still undecided (a pure operand is simply combined).
    fn short_circuit(&mut self, e: &Expr, is_and: bool, args: &[Expr]) -> Result<Reg> {
        let Some((first, rest)) = args.split_first() else {
            return Ok(self.constant(is_and as u64));
        };
        let op = if is_and { BinOp::BitAnd } else { BinOp::BitOr };
        let dst = self.alloc(1);
        let a = self.expr(first)?;
        self.emit(Op::Copy { dst, src: a });
        for y in rest {
            if self.is_pure(y) {
                let b = self.expr(y)?;
                self.emit(Op::Binary {
                    op,
                    kind: Kind::Bool,
                    dst,
                    a: dst,
                    b,
                });
                continue;
            }
            self.span = e.span.clone();
            let cond = if is_and {
                dst
            } else {
                let n = self.alloc(1);
                self.emit(Op::Unary {
                    op: UnOp::Not,
                    kind: Kind::Bool,
                    dst: n,
                    a: dst,
                });
                n
            };
            let slot = self.alloc_masks(2);
            let begin = self.emit(Op::IfBegin {
                cond,
                slot,
                else_target: 0,
            });
            let b = self.expr(y)?;
            self.emit(Op::CopyMasked { dst, src: b });
            let end = self.emit(Op::EndIf { slot });
            self.patch(begin, end);
            self.next_mask = slot;
        }
        Ok(dst)
    }

    fn args<const N: usize>(&mut self, e: &Expr, args: &[Expr]) -> Result<[Reg; N]> {
        if args.len() != N {
            return Err(unsupported(
                &e.span,
                format!(
                    "a built-in given {} arguments where {N} were expected",
                    args.len()
                ),
            ));
        }
        let mut out = [0; N];
        for (o, a) in out.iter_mut().zip(args) {
            *o = self.expr(a)?;
        }
        self.span = e.span.clone();
        Ok(out)
    }

    fn builtin(&mut self, e: &Expr, op: Builtin, args: &[Expr]) -> Result<Reg> {
        let bin = |b| Some(b);
        let binop = match op {
            Builtin::Add => bin(BinOp::Add),
            Builtin::Sub => bin(BinOp::Sub),
            Builtin::Mul => bin(BinOp::Mul),
            Builtin::Div | Builtin::FastDivide => bin(BinOp::Div),
            Builtin::Rem => bin(BinOp::Rem),
            Builtin::Min => bin(BinOp::Min),
            Builtin::Max => bin(BinOp::Max),
            Builtin::BitAnd => bin(BinOp::BitAnd),
            Builtin::BitOr => bin(BinOp::BitOr),
            Builtin::BitXor => bin(BinOp::BitXor),
            Builtin::Shl => bin(BinOp::Shl),
            Builtin::Shr => bin(BinOp::Shr),
            _ => None,
        };
        if let Some(b) = binop {
            return self.arith2(e, b, args);
        }
        let cmp = match op {
            Builtin::Eq => Some(BinOp::Eq),
            Builtin::Ne => Some(BinOp::Ne),
            Builtin::Lt => Some(BinOp::Lt),
            Builtin::Gt => Some(BinOp::Gt),
            Builtin::Le => Some(BinOp::Le),
            Builtin::Ge => Some(BinOp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            let kind = match args.first() {
                Some(a) => self.kind(&a.ty)?,
                None => return Err(unsupported(&e.span, "a comparison without arguments")),
            };
            let [a, b] = self.args(e, args)?;
            let r = self.binary_into(c, kind, a, b);
            return self.convert_result(r, Kind::Bool, &e.ty);
        }
        let un = match op {
            Builtin::Neg => Some(UnOp::Neg),
            Builtin::Not => Some(UnOp::Not),
            Builtin::BitNot => Some(UnOp::BitNot),
            Builtin::Abs => Some(UnOp::Abs),
            Builtin::Recip => Some(UnOp::Recip),
            Builtin::Saturate => Some(UnOp::Saturate),
            Builtin::DoubleToIntRn => Some(UnOp::DoubleToIntRn),
            Builtin::Clz => Some(UnOp::Clz),
            Builtin::Popc => Some(UnOp::Popc),
            Builtin::Brev => Some(UnOp::Brev),
            Builtin::Ffs => Some(UnOp::Ffs),
            _ => None,
        };
        if let Some(u) = un {
            return self.arith1(e, u, args);
        }
        match op {
            Builtin::And => self.short_circuit(e, true, args),
            Builtin::Or => self.short_circuit(e, false, args),
            Builtin::Math(f) => {
                let kind = match args.first() {
                    Some(a) => self.kind(&a.ty)?,
                    None => return Err(unsupported(&e.span, "a math function without arguments")),
                };
                if !kind.is_float() {
                    return Err(unsupported(&e.span, format!("`{f:?}` of an integer")));
                }
                let dst = self.alloc(1);
                if matches!(f, MathFn::Atan2 | MathFn::Pow | MathFn::Hypot) {
                    let [a, b] = self.args(e, args)?;
                    self.emit(Op::Math2 { f, kind, dst, a, b });
                } else {
                    let [a] = self.args(e, args)?;
                    self.emit(Op::Math1 { f, kind, dst, a });
                }
                self.convert_result(dst, kind, &e.ty)
            }
            Builtin::Fma => {
                let kind = self.kind(&e.ty)?;
                let [a, b, c] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::Fma { kind, dst, a, b, c });
                Ok(dst)
            }
            Builtin::Dot => {
                let Some(Type::Vector(v)) = args.first().map(|a| &a.ty) else {
                    return Err(unsupported(&e.span, "`dot` of non-vectors"));
                };
                let (n, kind) = (v.len() as u32, Kind::of_scalar(v.element()));
                let [a, b] = self.args(e, args)?;
                let mut acc = self.binary_into(BinOp::Mul, kind, a, b);
                for i in 1..n {
                    let t = self.binary_into(BinOp::Mul, kind, a + i, b + i);
                    acc = self.binary_into(BinOp::Add, kind, acc, t);
                }
                Ok(acc)
            }
            Builtin::SyncThreads => {
                self.emit(Op::SyncThreads);
                Ok(0)
            }
            Builtin::SyncWarp => {
                // Lanes of a warp run in lockstep here: nothing to wait for.
                for a in args {
                    self.expr(a)?;
                }
                Ok(0)
            }
            Builtin::ThreadFence | Builtin::ThreadFenceBlock | Builtin::ThreadFenceSystem => {
                self.emit(Op::Fence);
                Ok(0)
            }
            Builtin::ShflSync
            | Builtin::ShflUpSync
            | Builtin::ShflDownSync
            | Builtin::ShflXorSync => {
                let mode = match op {
                    Builtin::ShflSync => ShflMode::Idx,
                    Builtin::ShflUpSync => ShflMode::Up,
                    Builtin::ShflDownSync => ShflMode::Down,
                    _ => ShflMode::Xor,
                };
                if !(3..=4).contains(&args.len()) {
                    return Err(unsupported(
                        &e.span,
                        "a shuffle with other than 3 or 4 arguments",
                    ));
                }
                let mask = self.expr(&args[0])?;
                let value = self.expr(&args[1])?;
                let lane = self.expr(&args[2])?;
                let width = match args.get(3) {
                    Some(w) => self.expr(w)?,
                    None => self.constant(32),
                };
                self.span = e.span.clone();
                let n = self.leaves(&e.ty)?.len() as u32;
                let dst = self.alloc(n);
                for i in 0..n {
                    self.emit(Op::Shfl {
                        mode,
                        dst: dst + i,
                        value: value + i,
                        lane,
                        width,
                        mask,
                    });
                }
                Ok(dst)
            }
            Builtin::BallotSync | Builtin::AllSync | Builtin::AnySync => {
                let vote = match op {
                    Builtin::BallotSync => VoteOp::Ballot,
                    Builtin::AllSync => VoteOp::All,
                    _ => VoteOp::Any,
                };
                let [mask, pred] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::Vote {
                    op: vote,
                    dst,
                    mask,
                    pred,
                });
                Ok(dst)
            }
            Builtin::ActiveMask => {
                let dst = self.alloc(1);
                self.emit(Op::ActiveMask { dst });
                Ok(dst)
            }
            Builtin::MatchAnySync => {
                let [mask, value] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::MatchAny { dst, mask, value });
                Ok(dst)
            }
            Builtin::MatchAllSync => {
                let [mask, value, pred] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::MatchAll {
                    dst,
                    mask,
                    value,
                    pred,
                });
                Ok(dst)
            }
            Builtin::WarpReduce(rop) => {
                let kind = match args.get(1) {
                    Some(a) => self.kind(&a.ty)?,
                    None => return Err(unsupported(&e.span, "a warp reduction without a value")),
                };
                if !matches!(kind, Kind::I32 | Kind::U32) {
                    return Err(unsupported(
                        &e.span,
                        "a warp reduction of other than `int` or `uint`",
                    ));
                }
                let [mask, value] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::Reduce {
                    op: rop,
                    kind,
                    dst,
                    mask,
                    value,
                });
                Ok(dst)
            }
            Builtin::Atomic(aop) => {
                let Some(pointee) = args.first().and_then(|a| a.ty.pointee()) else {
                    return Err(unsupported(
                        &e.span,
                        "an atomic whose first argument is not a pointer",
                    ));
                };
                let kind = self.kind(pointee)?;
                if !matches!(
                    kind,
                    Kind::I32
                        | Kind::U32
                        | Kind::I64
                        | Kind::U64
                        | Kind::F32
                        | Kind::F64
                        | Kind::F16
                        | Kind::BF16
                        | Kind::U16
                ) {
                    return Err(unsupported(&e.span, format!("atomics on `{pointee}`")));
                }
                let dst = self.alloc(1);
                let (addr, a, b) = match args.len() {
                    2 => {
                        let [addr, a] = self.args(e, args)?;
                        (addr, a, a)
                    }
                    3 => {
                        let [addr, a, b] = self.args(e, args)?;
                        (addr, a, b)
                    }
                    n => {
                        return Err(unsupported(
                            &e.span,
                            format!("an atomic with {n} arguments"),
                        ));
                    }
                };
                self.emit(Op::Atomic {
                    op: aop,
                    kind,
                    dst,
                    addr,
                    a,
                    b,
                });
                Ok(dst)
            }
            Builtin::ClusterRank | Builtin::ClusterBarrier | Builtin::ThreadFenceCluster => Err(
                unsupported(&e.span, "thread-block cluster operations (sm_90 clusters)"),
            ),
            Builtin::CurandInit => {
                for a in &args[..args.len().min(3)] {
                    if !self.kind(&a.ty)?.is_integer() {
                        return Err(unsupported(
                            &a.span,
                            "a cuRAND seed, sequence or offset that is not an integer",
                        ));
                    }
                }
                let [seed, subsequence, offset, state] = self.args(e, args)?;
                self.emit(Op::CurandInit {
                    seed,
                    subsequence,
                    offset,
                    state,
                });
                Ok(0)
            }
            Builtin::CurandUniform | Builtin::CurandNormal => {
                let double = match self.kind(&e.ty)? {
                    Kind::F32 => false,
                    Kind::F64 => true,
                    _ => {
                        return Err(unsupported(
                            &e.span,
                            format!("a cuRAND result of type `{}`", e.ty),
                        ));
                    }
                };
                let [state] = self.args(e, args)?;
                let dst = self.alloc(1);
                if op == Builtin::CurandUniform {
                    self.emit(Op::CurandUniform { dst, state, double });
                } else {
                    self.emit(Op::CurandNormal { dst, state, double });
                }
                Ok(dst)
            }
            other => Err(unsupported(&e.span, format!("the built-in {other:?}"))),
        }
    }
}

/// Calls `f` on every expression of `block`, outer expressions before inner ones.
fn visit_block(block: &Block, f: &mut impl FnMut(&Expr)) {
    for s in &block.stmts {
        match &s.kind {
            StmtKind::Block(b) => visit_block(b, f),
            StmtKind::Declare { init, .. } => visit_expr(init, f),
            StmtKind::SharedArray { .. } | StmtKind::DynamicShared { .. } => {}
            StmtKind::Assign { place, value } => {
                visit_expr(place, f);
                visit_expr(value, f);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                visit_expr(cond, f);
                visit_block(then, f);
                if let Some(o) = otherwise {
                    visit_block(o, f);
                }
            }
            StmtKind::While { cond, body } => {
                visit_expr(cond, f);
                visit_block(body, f);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                init.iter().chain(step).for_each(|(_, e)| visit_expr(e, f));
                if let Some(c) = cond {
                    visit_expr(c, f);
                }
                visit_block(body, f);
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                visit_expr(scrutinee, f);
                cases.iter().for_each(|c| visit_block(&c.body, f));
                if let Some(d) = default {
                    visit_block(d, f);
                }
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => visit_expr(e, f),
            StmtKind::Printf { args, .. } => args.iter().for_each(|a| visit_expr(a, f)),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) | StmtKind::Asm(_) => {}
        }
    }
}

fn visit_expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Index(_) => {}
        ExprKind::Aref { base, indices } => {
            visit_expr(base, f);
            indices.iter().for_each(|i| visit_expr(i, f));
        }
        ExprKind::Field { base, .. } => visit_expr(base, f),
        ExprKind::Builtin { args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Construct(args) => args.iter().for_each(|a| visit_expr(a, f)),
        ExprKind::Cast { value, .. } | ExprKind::AddressOf(value) => visit_expr(value, f),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            visit_expr(cond, f);
            visit_expr(then, f);
            visit_expr(otherwise, f);
        }
    }
}
