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

mod builtin;
mod expr;
mod layout;
mod place;
mod stmt;

pub(crate) use layout::constant_bytes;
use layout::{leaves, literal_bits, local_of, param_layout, size_of_type};

fn unsupported(span: &Span, what: impl Into<String>) -> Error {
    Error::Unsupported {
        span: span.clone(),
        what: what.into(),
    }
}

/// Compiles every function of `module`. `global_ids` are the allocation ids of its globals.
pub(crate) fn compile(module: &ir::Module, global_ids: &[u32]) -> Result<Program> {
    let mut prog = Program::default();
    // A `:shared` global is one variable per block, as CUDA's `__shared__`: a static shared
    // slot, not the module's buffer.
    let mut shared_globals = Vec::with_capacity(module.globals.len());
    for g in &module.globals {
        if g.qualifiers.contains(&ir::GlobalQualifier::Shared) {
            let size = size_of_type(module, &g.ty, &g.span)?;
            shared_globals.push(Some(prog.shared_sizes.len() as u32));
            prog.shared_sizes.push(size as usize);
        } else {
            shared_globals.push(None);
        }
    }
    for f in &module.functions {
        let code = FnCompiler::new(module, &mut prog, f, global_ids, &shared_globals)?.run()?;
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
    /// The static shared slot of each `:shared` global.
    shared_globals: &'a [Option<u32>],
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
        shared_globals: &'a [Option<u32>],
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
            shared_globals,
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
