//! Static shared memory per kernel: its own `with-shared-memory` arrays, those of every device
//! function it calls (directly or not), and the `:shared` globals any of them use. A GPU
//! allocates one copy of each per block, so their sum must fit the target's static limit
//! ([`Target::max_static_shared_bytes`]).

use crate::error::Result;
use crate::ir::visit::{Node, for_each_node};
use crate::ir::{ExprKind, FunctionId, FunctionKind, GlobalId, GlobalQualifier, Module, StmtKind};
use crate::target::Target;
use crate::types::Type;
use std::collections::BTreeSet;

/// How many of the largest contributors an over-the-limit message names.
const NAMED_CONTRIBUTORS: usize = 3;

/// The bytes of a shared array of `element` with dimensions `sizes` (a scalar when empty) in
/// `target`'s layout, saturating at `u64::MAX`.
pub(super) fn array_bytes(element: &Type, sizes: &[u64], m: &Module, target: &Target) -> u64 {
    let element_size = target
        .layout(element, &m.structs)
        .map_or(1, |(size, _)| size as u64);
    sizes
        .iter()
        .try_fold(element_size, |acc, d| acc.checked_mul(*d))
        .unwrap_or(u64::MAX)
}

/// `48 KiB`, or `1000 bytes` for a limit that is not a whole number of KiB.
pub(super) fn amount(bytes: u64) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
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
/// `target`'s limit. Each function and global counts once however often it is called or used;
/// recursion ends at functions already counted.
pub(super) fn check_kernel_totals(m: &Module, target: &Target) -> Result<()> {
    let limit = target.max_static_shared_bytes;
    let usages: Vec<Usage> = m.functions.iter().map(|f| usage(m, f, target)).collect();
    for (index, kernel) in m.functions.iter().enumerate() {
        if kernel.kind != FunctionKind::Kernel {
            continue;
        }
        let mut contributors: Vec<(String, u64)> = Vec::new();
        let mut globals = BTreeSet::new();
        let mut seen = BTreeSet::from([FunctionId(index as u32)]);
        let mut pending = vec![FunctionId(index as u32)];
        while let Some(id) = pending.pop() {
            let (Some(function), Some(usage)) = (m.function_by_id(id), usages.get(id.index()))
            else {
                continue;
            };
            contributors.extend(
                usage
                    .arrays
                    .iter()
                    .map(|(name, bytes)| (format!("`{name}` in `{}`", function.name), *bytes)),
            );
            globals.extend(usage.shared_globals.iter().copied());
            pending.extend(usage.callees.iter().filter(|c| seen.insert(**c)));
        }
        contributors.extend(globals.into_iter().filter_map(|id| {
            let global = m.global_by_id(id)?;
            let bytes = array_bytes(&global.ty, &[], m, target);
            Some((format!(":shared global `{}`", global.name), bytes))
        }));
        let total = contributors
            .iter()
            .fold(0u64, |acc, (_, bytes)| acc.saturating_add(*bytes));
        if total > limit {
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
                     functions it calls, more than {}'s limit of {}; largest: {}; use \
                     with-dynamic-shared-memory and :shared-mem for more",
                    kernel.name,
                    target.kind,
                    amount(limit),
                    largest.join(", ")
                ),
            );
        }
    }
    Ok(())
}

/// What `f` contributes on its own.
fn usage(m: &Module, f: &crate::ir::Function, target: &Target) -> Usage {
    let mut usage = Usage::default();
    for_each_node(Node::Block(&f.body), |node, _| match node {
        Node::Stmt(s) => {
            if let StmtKind::SharedArray {
                local,
                element,
                sizes,
                ..
            } = &s.kind
            {
                let name = f
                    .local(*local)
                    .map_or_else(|| format!("#{}", local.0), |l| l.name.to_string());
                usage
                    .arrays
                    .push((name, array_bytes(element, sizes, m, target)));
            }
        }
        Node::Expr(e) => match &e.kind {
            ExprKind::Global(id)
                if m.global_by_id(*id)
                    .is_some_and(|g| g.qualifiers.contains(&GlobalQualifier::Shared)) =>
            {
                usage.shared_globals.insert(*id);
            }
            ExprKind::Call { function, .. } => {
                usage.callees.insert(*function);
            }
            _ => {}
        },
        Node::Block(_) => {}
    });
    usage
}
