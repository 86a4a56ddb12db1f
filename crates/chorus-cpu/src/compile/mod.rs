//! Compiles the typed IR to warp bytecode, once per module.
//!
//! Locals are resolved to register slots (one register per scalar leaf of their type), or to
//! local memory when their address is taken; shared arrays to module-wide slots; structured
//! control flow to jumps and mask slots; each built-in to its instruction. Everything the CPU
//! cannot run is refused here with [`Error::Unsupported`], before any launch.
//!
//! Lowering recurses over statements and expressions: each construct emits its code around its
//! children's and patches jumps once the blocks it skips are emitted, which the call stack
//! orders for free. The scans that only read the IR (how deeply a body nests, which locals have
//! their address taken) walk it with [`chorus_lang::ir::visit`] instead, and the depth decides
//! whether lowering needs a big stack.

use crate::bytecode::*;
use crate::error::{Error, Result};
use crate::memory::{DYNAMIC_SHARED_ID, STATIC_SHARED_BASE, encode};
use crate::value::{Kind, canon, from_f64};
use chorus_lang::Span;
use chorus_lang::ir::visit::{Node, Visit, Visitor, for_each_node, walk_block};
use chorus_lang::ir::{
    self, Block, Builtin, Expr, ExprKind, IndexVar, Literal, MathFn, Stmt, StmtKind,
};
use chorus_lang::stack;
use chorus_lang::types::Type;

mod builtin;
mod expr;
mod layout;
mod place;
mod stmt;
mod tensor;

pub(crate) use expr::is_pure;
pub(crate) use layout::{constant_bytes, literal_bits};
use layout::{leaves, local_of, param_layout, size_of_type};

fn unsupported(span: &Span, what: impl Into<String>) -> Error {
    Error::Unsupported {
        span: span.clone(),
        what: what.into(),
    }
}

/// How deeply a function body may nest (statements and expressions together); deeper ones are
/// refused at the expression. Lowering recurses once per level, on a big stack (see
/// [`chorus_lang::stack`]) when a body nests deeper than the caller's stack allows.
pub const MAX_EXPRESSION_DEPTH: usize = 10_000;

/// Compiles every function of `module`. `global_ids` are the allocation ids of its globals.
pub(crate) fn compile(module: &ir::Module, global_ids: &[u32], warp_width: u32) -> Result<Program> {
    let mut deepest: Option<(usize, &ir::Function)> = None;
    for f in &module.functions {
        let depth = nesting_depth(f)?;
        if deepest.is_none_or(|(most, _)| depth > most) {
            deepest = Some((depth, f));
        }
    }
    match deepest {
        Some((depth, f)) if depth > stack::SMALL_STACK_DEPTH => {
            stack::on_big_stack("chorus-cpu lowering", || {
                compile_functions(module, global_ids, warp_width)
            })
            .unwrap_or_else(|e| {
                Err(unsupported(
                    &f.span,
                    format!("a body nested {depth} deep (no thread with a big enough stack: {e})"),
                ))
            })
        }
        _ => compile_functions(module, global_ids, warp_width),
    }
}

fn compile_functions(module: &ir::Module, global_ids: &[u32], warp_width: u32) -> Result<Program> {
    let mut prog = Program {
        warp_width,
        ..Program::default()
    };
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
        for_each_node(Node::Block(&func.body), |node, _| {
            if let Node::Expr(e) = node
                && let ExprKind::AddressOf(inner) = &e.kind
            {
                let mut root = &**inner;
                while let ExprKind::Field { base, .. } = &root.kind {
                    root = base;
                }
                if let ExprKind::Local(id) = root.kind
                    && let Some(a) = addressed.get_mut(id.index())
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
            if self.addressed[p.local.index()] {
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
                self.homes[p.local.index()] = Home::Memory(offset);
            } else {
                self.homes[p.local.index()] = Home::Regs(*reg);
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

/// How deeply `f`'s body nests (statements and expressions), or the located error when it
/// nests deeper than [`MAX_EXPRESSION_DEPTH`].
fn nesting_depth(f: &ir::Function) -> Result<usize> {
    /// The deepest expression so far; stops at the first one deeper than the limit.
    struct Depth {
        deepest: usize,
        /// Statements around the node being visited: they do not count as levels here.
        open_stmts: usize,
    }
    impl<'a> Visitor<'a> for Depth {
        type Error = &'a Expr;
        fn enter_stmt(&mut self, _: &'a Stmt, _depth: usize) -> Result<Visit, &'a Expr> {
            self.open_stmts += 1;
            Ok(Visit::Children)
        }
        fn exit_stmt(&mut self, _: &'a Stmt, _depth: usize) -> Result<(), &'a Expr> {
            self.open_stmts -= 1;
            Ok(())
        }
        fn enter_expr(&mut self, e: &'a Expr, depth: usize) -> Result<Visit, &'a Expr> {
            // Blocks and expressions around `e`: a body statement's expression is at 1.
            let depth = depth - self.open_stmts;
            if depth > MAX_EXPRESSION_DEPTH {
                return Err(e);
            }
            self.deepest = self.deepest.max(depth);
            Ok(Visit::Children)
        }
    }
    let mut measure = Depth {
        deepest: 0,
        open_stmts: 0,
    };
    match walk_block(&f.body, &mut measure) {
        Err(e) => Err(unsupported(
            &e.span,
            format!(
                "an expression that nests more than {MAX_EXPRESSION_DEPTH} deep (split it with `let`)"
            ),
        )),
        Ok(()) => Ok(measure.deepest),
    }
}
