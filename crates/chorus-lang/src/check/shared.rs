//! Static shared memory per kernel: its own `with-shared-memory` arrays, those of every device
//! function it calls (directly or not), and the `:shared` globals any of them use. CUDA
//! allocates one copy of each per block, so their sum must fit the static limit.

use crate::error::Result;
use crate::ir::{
    Block, Expr, ExprKind, FunctionId, FunctionKind, GlobalId, GlobalQualifier, Local, Module,
    Stmt, StmtKind, StructDef,
};
use crate::types::Type;
use std::collections::BTreeSet;

/// CUDA's limit on the static shared memory of one kernel (48 KiB); more needs dynamic shared
/// memory and an opt-in at launch.
pub(super) const MAX_STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// How many of the largest contributors an over-the-limit message names.
const NAMED_CONTRIBUTORS: usize = 3;

/// The bytes of a shared array of `element` with dimensions `sizes` (a scalar when empty),
/// saturating at `u64::MAX`.
pub(super) fn array_bytes(element: &Type, sizes: &[u64], structs: &[StructDef]) -> u64 {
    let element_size = element.layout(structs).map_or(1, |(size, _)| size as u64);
    sizes
        .iter()
        .try_fold(element_size, |acc, d| acc.checked_mul(*d))
        .unwrap_or(u64::MAX)
}

/// What one function contributes on its own and whom it calls.
#[derive(Default)]
struct Usage {
    /// Its `with-shared-memory` arrays: kernel-language name and bytes.
    arrays: Vec<(String, u64)>,
    /// The device functions it calls.
    callees: BTreeSet<FunctionId>,
    /// The `:shared` globals it uses.
    shared_globals: BTreeSet<GlobalId>,
}

/// Checks that each kernel's static shared memory, counted across everything it calls, fits
/// [`MAX_STATIC_SHARED_BYTES`]. Each function and global counts once however often it is called
/// or used; recursion ends at functions already counted.
pub(super) fn check_kernel_totals(m: &Module) -> Result<()> {
    let usages: Vec<Usage> = m
        .functions
        .iter()
        .map(|f| {
            let mut usage = Usage::default();
            usage.block(m, &f.body, &f.locals);
            usage
        })
        .collect();
    for (index, kernel) in m.functions.iter().enumerate() {
        if kernel.kind != FunctionKind::Kernel {
            continue;
        }
        let mut contributors: Vec<(String, u64)> = Vec::new();
        let mut globals = BTreeSet::new();
        let mut seen = BTreeSet::from([FunctionId(index as u32)]);
        let mut pending = vec![FunctionId(index as u32)];
        while let Some(id) = pending.pop() {
            let function = &m.functions[id.0 as usize];
            let usage = &usages[id.0 as usize];
            contributors.extend(
                usage
                    .arrays
                    .iter()
                    .map(|(name, bytes)| (format!("`{name}` in `{}`", function.name), *bytes)),
            );
            globals.extend(usage.shared_globals.iter().copied());
            pending.extend(usage.callees.iter().filter(|c| seen.insert(**c)));
        }
        contributors.extend(globals.into_iter().map(|id| {
            let global = &m.globals[id.0 as usize];
            let bytes = array_bytes(&global.ty, &[], &m.structs);
            (format!(":shared global `{}`", global.name), bytes)
        }));
        let total = contributors
            .iter()
            .fold(0u64, |acc, (_, bytes)| acc.saturating_add(*bytes));
        if total > MAX_STATIC_SHARED_BYTES {
            // Largest first; the sort is stable, so ties keep the order found, which is deterministic.
            contributors.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
            let largest: Vec<String> = contributors
                .iter()
                .take(NAMED_CONTRIBUTORS)
                .map(|(what, bytes)| format!("{what} ({bytes} bytes)"))
                .collect();
            return super::err(
                &kernel.span,
                format!(
                    "kernel `{}` needs {total} bytes of static shared memory with the device \
                     functions it calls, more than CUDA's limit of {} KiB; largest: {}; use \
                     with-dynamic-shared-memory and :shared-mem for more",
                    kernel.name,
                    MAX_STATIC_SHARED_BYTES / 1024,
                    largest.join(", ")
                ),
            );
        }
    }
    Ok(())
}

impl Usage {
    fn block(&mut self, m: &Module, block: &Block, locals: &[Local]) {
        for s in &block.stmts {
            self.stmt(m, s, locals);
        }
    }

    fn stmt(&mut self, m: &Module, s: &Stmt, locals: &[Local]) {
        match &s.kind {
            StmtKind::Block(b) => self.block(m, b, locals),
            StmtKind::Declare { init, .. } => self.expr(m, init),
            StmtKind::SharedArray {
                local,
                element,
                sizes,
                ..
            } => {
                let name = locals[local.0 as usize].name.to_string();
                self.arrays
                    .push((name, array_bytes(element, sizes, &m.structs)));
            }
            StmtKind::DynamicShared { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(None)
            | StmtKind::Asm(_) => {}
            StmtKind::Assign { place, value } => {
                self.expr(m, place);
                self.expr(m, value);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(m, cond);
                self.block(m, then, locals);
                if let Some(b) = otherwise {
                    self.block(m, b, locals);
                }
            }
            StmtKind::While { cond, body } => {
                self.expr(m, cond);
                self.block(m, body, locals);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                for (_, e) in init.iter().chain(step) {
                    self.expr(m, e);
                }
                if let Some(c) = cond {
                    self.expr(m, c);
                }
                self.block(m, body, locals);
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                self.expr(m, scrutinee);
                for case in cases {
                    self.block(m, &case.body, locals);
                }
                if let Some(b) = default {
                    self.block(m, b, locals);
                }
            }
            StmtKind::Return(Some(e)) | StmtKind::Expr(e) => self.expr(m, e),
            StmtKind::Printf { args, .. } => {
                for e in args {
                    self.expr(m, e);
                }
            }
        }
    }

    fn expr(&mut self, m: &Module, e: &Expr) {
        match &e.kind {
            ExprKind::Literal(_) | ExprKind::Local(_) | ExprKind::Index(_) => {}
            ExprKind::Global(id) => {
                if m.globals[id.0 as usize]
                    .qualifiers
                    .contains(&GlobalQualifier::Shared)
                {
                    self.shared_globals.insert(*id);
                }
            }
            ExprKind::Aref { base, indices } => {
                self.expr(m, base);
                for i in indices {
                    self.expr(m, i);
                }
            }
            ExprKind::Field { base, .. } => self.expr(m, base),
            ExprKind::Builtin { args, .. } | ExprKind::Construct(args) => {
                for a in args {
                    self.expr(m, a);
                }
            }
            ExprKind::Call { function, args } => {
                self.callees.insert(*function);
                for a in args {
                    self.expr(m, a);
                }
            }
            ExprKind::Cast { value, .. } => self.expr(m, value),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                self.expr(m, cond);
                self.expr(m, then);
                self.expr(m, otherwise);
            }
            ExprKind::AddressOf(inner) => self.expr(m, inner),
        }
    }
}
