//! Validation: a checked module against one [`Target`], as naga's `valid::Validator` with its
//! `Capabilities`.
//!
//! The checker accepts the whole language; [`validate`] then says whether one target can run
//! a module, before any printer runs: every use of a feature the target lacks (a type, a
//! built-in, a statement, a kind of global, recursion: see [`Capability`]) and every limit it
//! exceeds (static shared memory, kernel parameter bytes and count, launch bounds, warp width)
//! is an error at the span of the offending definition, statement or expression. It reads the
//! module and changes nothing, so one checked module can be validated for several targets.

use super::shared::{amount, array_bytes, check_kernel_totals};
use super::{builtins, consts, err};
use crate::error::{Error, Result};
use crate::ir::visit::{Node, Visit, Visitor, for_each_node, walk_block};
use crate::ir::{
    Builtin, Expr, ExprKind, Function, FunctionId, FunctionKind, GlobalQualifier, IndexVar,
    LocalId, Module, Stmt, StmtKind,
};
use crate::span::Span;
use crate::target::{Capability, Target, TargetKind};
use crate::types::{ScalarType, Type, VectorType};

/// Checks that `target` can run `module`: the first feature it lacks or limit it exceeds is an
/// error at that feature's span. Definitions are visited in order (structures, globals, then
/// each function's signature and body); the per-kernel static shared-memory totals and, on
/// targets without [`Capability::Recursion`], recursion come last.
///
/// ```
/// use chorus_lang::check::validate;
/// use chorus_lang::target::Target;
///
/// let module = chorus_lang::compile_str(
///     "(defkernel k (void ((a int*)))\n  (cuda-asm \"trap;\"))",
///     "k.lisp",
/// )
/// .unwrap();
/// assert!(validate(&module, &Target::cuda(9, 0)).is_ok());
/// let e = validate(&module, &Target::cpu()).unwrap_err();
/// assert_eq!(e.to_string(), "k.lisp:2:3: `cuda-asm` needs inline assembly, which the CPU target does not have");
/// ```
pub fn validate(module: &Module, target: &Target) -> Result<()> {
    let v = Validator { m: module, target };
    for def in &module.structs {
        for field in &def.fields {
            v.ty(&field.ty, &def.span)?;
        }
    }
    for global in &module.globals {
        v.ty(&global.ty, &global.span)?;
        for q in &global.qualifiers {
            let (needs, spelled) = match q {
                GlobalQualifier::Device => (Capability::DeviceGlobals, ":device"),
                GlobalQualifier::Shared => (Capability::SharedGlobals, ":shared"),
                GlobalQualifier::Managed => (Capability::ManagedMemory, ":managed"),
                GlobalQualifier::Constant | GlobalQualifier::Restrict => continue,
            };
            v.needs(
                needs,
                &format!("the {spelled} global `{}`", global.name),
                &global.span,
            )?;
        }
    }
    for f in &module.functions {
        v.function(f)?;
    }
    if !target.has(Capability::Recursion) {
        v.recursion()?;
    }
    check_kernel_totals(module, target)
}

/// The module and the target it is validated for.
struct Validator<'a> {
    m: &'a Module,
    target: &'a Target,
}

impl Validator<'_> {
    /// An error unless the target has `capability`; `what` names the use (`` `cuda-asm` ``).
    fn needs(&self, capability: Capability, what: &str, span: &Span) -> Result<()> {
        if self.target.has(capability) {
            return Ok(());
        }
        err(
            span,
            format!(
                "{what} needs {capability}, which the {} does not have",
                self.target
            ),
        )
    }

    /// Checks that the target has every type `ty` is built of.
    fn ty(&self, ty: &Type, span: &Span) -> Result<()> {
        let needs = match ty {
            Type::Pointer(inner) => return self.ty(inner, span),
            Type::Scalar(s) => scalar_needs(*s),
            Type::Vector(v) => vector_needs(*v),
            Type::CurandStateXorwow => Some(Capability::DeviceRandom),
            Type::TextureObject | Type::SurfaceObject => Some(Capability::Textures),
            Type::TensorMap | Type::WgmmaAccumulator(_) => super::hopper::type_needs(ty),
            Type::Void | Type::Bool | Type::Struct(_) => None,
        };
        match needs {
            Some(c) => self.needs(c, &format!("`{ty}`"), span),
            None => Ok(()),
        }
    }

    /// A function's signature, launch bounds and body.
    fn function(&self, f: &Function) -> Result<()> {
        self.ty(&f.ret, &f.span)?;
        super::hopper::signature_rules(f)?;
        for p in &f.params {
            if let Some(local) = f.local(p.local) {
                self.ty(&local.ty, &f.span)?;
            }
        }
        if f.kind == FunctionKind::Kernel {
            self.kernel_limits(f)?;
        }
        walk_block(
            &f.body,
            &mut BodyValidator {
                v: self,
                f,
                shared_bytes: 0,
            },
        )
    }

    /// A kernel's parameter space and launch bounds.
    fn kernel_limits(&self, f: &Function) -> Result<()> {
        let t = self.target;
        if let Some(max) = t.max_kernel_params
            && f.params.len() as u64 > u64::from(max)
        {
            return err(
                &f.span,
                format!(
                    "kernel `{}` takes {} parameters, more than the {} allows ({max}); pass \
                     them in a structure or through a pointer",
                    f.name,
                    f.params.len(),
                    t
                ),
            );
        }
        let mut bytes = 0u64;
        for p in &f.params {
            let Some(local) = f.local(p.local) else {
                continue;
            };
            let Some((size, align)) = t.layout(&local.ty, &self.m.structs) else {
                continue;
            };
            bytes = bytes
                .next_multiple_of(align as u64)
                .saturating_add(size as u64);
        }
        if bytes > t.max_kernel_param_bytes {
            return err(
                &f.span,
                format!(
                    "kernel `{}` takes {bytes} bytes of parameters, more than the {}'s parameter \
                     space of {} bytes; pass large data through a pointer to device memory",
                    f.name, t, t.max_kernel_param_bytes
                ),
            );
        }
        let Some(bounds) = f.launch_bounds else {
            return Ok(());
        };
        let what = format!("`launch-bounds` in `{}`", f.name);
        self.needs(Capability::LaunchBounds, &what, &f.span)?;
        if bounds.max_threads > t.max_threads_per_block {
            return err(
                &f.span,
                format!(
                    "the launch bounds of `{}` allow {} threads per block, more than the {}'s \
                     limit of {}",
                    f.name, bounds.max_threads, t, t.max_threads_per_block
                ),
            );
        }
        if bounds.min_blocks.is_some() {
            let what = format!("the second value of `launch-bounds` in `{}`", f.name);
            self.needs(Capability::LaunchMinBlocks, &what, &f.span)?;
        }
        if bounds.max_cluster.is_some() {
            let what = format!("the third value of `launch-bounds` in `{}`", f.name);
            self.needs(Capability::Clusters, &what, &f.span)?;
        }
        Ok(())
    }

    /// One statement (its expressions are visited on their own).
    fn stmt(&self, f: &Function, s: &Stmt, shared_bytes: &mut u64) -> Result<()> {
        let local_ty = |id: &LocalId| f.local(*id).map(|l| &l.ty);
        match &s.kind {
            StmtKind::Declare { local, .. } => {
                if let Some(l) = f.local(*local) {
                    self.ty(&l.ty, &s.span)?;
                    super::hopper::declared_local(&l.name, &l.ty, &s.span)?;
                }
            }
            StmtKind::For { init, .. } => {
                for (local, _) in init {
                    if let Some(ty) = local_ty(local) {
                        self.ty(ty, &s.span)?;
                    }
                }
            }
            StmtKind::SharedArray { element, sizes, .. } => {
                self.ty(element, &s.span)?;
                let limit = self.target.max_static_shared_bytes;
                *shared_bytes =
                    array_bytes(element, sizes, self.m, self.target).saturating_add(*shared_bytes);
                if *shared_bytes > limit {
                    return err(
                        &s.span,
                        format!(
                            "`{}` declares more than {} of static shared memory, {}'s limit; \
                             use with-dynamic-shared-memory and :shared-mem for more",
                            f.name,
                            amount(limit),
                            self.target.kind
                        ),
                    );
                }
            }
            StmtKind::DynamicShared { locals } => {
                self.needs(
                    Capability::DynamicSharedMemory,
                    "`with-dynamic-shared-memory`",
                    &s.span,
                )?;
                for local in locals {
                    if let Some(ty) = local_ty(local) {
                        self.ty(ty, &s.span)?;
                    }
                }
            }
            StmtKind::Assign { place, .. } => {
                self.constant_parameter(f, place, "assignment to", &s.span)?;
            }
            StmtKind::Printf { .. } => self.needs(Capability::Printf, "`printf`", &s.span)?,
            StmtKind::Asm(_) => self.needs(Capability::InlineAsm, "`cuda-asm`", &s.span)?,
            _ => {}
        }
        Ok(())
    }

    /// One expression (its operands are visited on their own).
    fn expr(&self, e: &Expr) -> Result<()> {
        self.ty(&e.ty, &e.span)?;
        match &e.kind {
            ExprKind::Index(index) if is_cluster_index(*index) => {
                self.needs(
                    Capability::Clusters,
                    &format!("`{}`", index_name(*index)),
                    &e.span,
                )?;
            }
            ExprKind::Builtin { op, args } => self.builtin(*op, args, e)?,
            _ => {}
        }
        Ok(())
    }

    /// A built-in's capability and the warp-width assumptions it makes.
    fn builtin(&self, op: Builtin, args: &[Expr], e: &Expr) -> Result<()> {
        let name = builtin_name(op);
        if let Some(needs) = builtin_needs(op, args) {
            let what = match (op, args.first().and_then(|p| p.ty.pointee())) {
                (Builtin::Atomic(_), Some(pointee)) => format!("`{name}` on `{pointee}`"),
                _ => format!("`{name}`"),
            };
            self.needs(needs, &what, &e.span)?;
        }
        let t = self.target;
        if takes_lane_masks(op, args) && t.lane_mask_bits != 32 {
            // Wider waves (AMD CDNA's 64 lanes): a mask operand that is the constant full
            // 32-bit mask means "the whole warp" and is widened to the whole wave; any other
            // mask, and a mask as the result, cannot name the wave's lanes in a `uint`.
            let span = match op {
                _ if returns_lane_mask(op) => Some(&e.span),
                _ => args
                    .first()
                    .filter(|mask| consts::int_value(mask) != Some(i128::from(u32::MAX)))
                    .map(|mask| &mask.span),
            };
            if let Some(span) = span {
                return err(
                    span,
                    format!(
                        "`{name}` works on 32-bit lane masks (`uint`), but the {t} has {}-lane \
                         warps with {}-bit masks; only the constant full mask `(uint -1)` is \
                         accepted there (it means the whole wave)",
                        t.warp_width, t.lane_mask_bits
                    ),
                );
            }
        }
        if is_shuffle(op)
            && t.kind == TargetKind::Hip
            && args
                .get(1)
                .is_some_and(|v| v.ty == Type::Scalar(ScalarType::Half))
        {
            // HIP's `__shfl` family has no `__half` overload (ROCm 5 and 6).
            return err(
                &e.span,
                format!(
                    "`{name}` on `half` is not available for the {t}: HIP shuffles no `__half`"
                ),
            );
        }
        if is_shuffle(op)
            && let Some(width) = args.get(3)
            && let Some(w) = consts::int_value(width)
            && w > i128::from(t.warp_width)
        {
            return err(
                &width.span,
                format!(
                    "a shuffle width of {w} is more than the {t}'s {} lanes per warp",
                    t.warp_width
                ),
            );
        }
        Ok(())
    }

    /// Reports a call that closes a cycle of calls (for targets without recursion): the first
    /// back edge of a depth-first search from each function in order, without recursing.
    fn recursion(&self) -> Result<()> {
        let calls: Vec<Vec<(FunctionId, Span)>> = self
            .m
            .functions
            .iter()
            .map(|f| {
                let mut calls = Vec::new();
                for_each_node(Node::Block(&f.body), |node, _| {
                    if let Node::Expr(e) = node
                        && let ExprKind::Call { function, .. } = &e.kind
                    {
                        calls.push((*function, e.span.clone()));
                    }
                });
                calls
            })
            .collect();
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Unvisited,
            OnPath,
            Done,
        }
        let mut marks = vec![Mark::Unvisited; calls.len()];
        for root in 0..calls.len() {
            if marks[root] != Mark::Unvisited {
                continue;
            }
            // Each frame: a function on the path and the index of its next call to follow.
            let mut path: Vec<(usize, usize)> = vec![(root, 0)];
            marks[root] = Mark::OnPath;
            while let Some((caller, next)) = path.last_mut() {
                let caller = *caller;
                let Some((callee, span)) = calls[caller].get(*next) else {
                    marks[caller] = Mark::Done;
                    path.pop();
                    continue;
                };
                *next += 1;
                let callee = callee.index();
                match marks.get(callee) {
                    Some(Mark::OnPath) => {
                        let callee_name = &self.m.functions[callee].name;
                        return err(
                            span,
                            format!(
                                "this call of `{callee_name}` makes `{}` recursive, and the \
                                 {} does not have recursion",
                                self.m.functions[caller].name, self.target
                            ),
                        );
                    }
                    Some(Mark::Unvisited) => {
                        marks[callee] = Mark::OnPath;
                        path.push((callee, 0));
                    }
                    Some(Mark::Done) | None => {}
                }
            }
        }
        Ok(())
    }
}

/// Validates one function body: each statement and expression on its own, and the running
/// total of the body's static shared memory.
struct BodyValidator<'v> {
    v: &'v Validator<'v>,
    f: &'v Function,
    shared_bytes: u64,
}

impl Visitor<'_> for BodyValidator<'_> {
    type Error = Error;

    fn enter_stmt(&mut self, s: &Stmt, _depth: usize) -> Result<Visit> {
        self.v.stmt(self.f, s, &mut self.shared_bytes)?;
        Ok(Visit::Children)
    }

    fn enter_expr(&mut self, e: &Expr, _depth: usize) -> Result<Visit> {
        self.v.expr(e)?;
        if let ExprKind::AddressOf(place) = &e.kind {
            self.v
                .constant_parameter(self.f, place, "the address of", &e.span)?;
        }
        Ok(Visit::Children)
    }
}

impl Validator<'_> {
    /// On Metal, a kernel's by-value parameters are `constant T&` buffer bindings (the host
    /// passes them with `setBytes`): `place` (assigned, or whose address is taken) may not be
    /// one of them or a field of one. An error at `span` names the parameter and the fix.
    fn constant_parameter(
        &self,
        f: &Function,
        place: &Expr,
        what: &str,
        span: &Span,
    ) -> Result<()> {
        if self.target.kind != TargetKind::Metal || f.kind != FunctionKind::Kernel {
            return Ok(());
        }
        let mut root = place;
        while let ExprKind::Field { base, .. } = &root.kind {
            root = base;
        }
        let ExprKind::Local(id) = root.kind else {
            return Ok(());
        };
        let Some(local) = f.local(id) else {
            return Ok(());
        };
        if !f.params.iter().any(|p| p.local == id) || local.ty.pointee().is_some() {
            return Ok(());
        }
        err(
            span,
            format!(
                "{what} the by-value parameter `{}` of kernel `{}`: on the {} a kernel's value \
                 parameters are constant (MSL binds them as `constant {}&`); copy it into a \
                 `let` and use that",
                local.name, f.name, self.target, local.ty
            ),
        )
    }
}

/// The capability a scalar type needs.
fn scalar_needs(s: ScalarType) -> Option<Capability> {
    match s {
        ScalarType::Double => Some(Capability::Float64),
        ScalarType::Half => Some(Capability::Float16),
        ScalarType::BFloat16 => Some(Capability::BFloat16),
        ScalarType::Fp8 => Some(Capability::Fp8),
        ScalarType::Fp4 => Some(Capability::Fp4),
        _ => None,
    }
}

/// The capability a vector type needs: its element type's.
fn vector_needs(v: VectorType) -> Option<Capability> {
    scalar_needs(v.element())
}

/// The capability a built-in needs beyond its operand types.
fn builtin_needs(op: Builtin, args: &[Expr]) -> Option<Capability> {
    Some(match op {
        Builtin::ShflSync | Builtin::ShflUpSync | Builtin::ShflDownSync | Builtin::ShflXorSync => {
            Capability::WarpShuffle
        }
        Builtin::BallotSync | Builtin::AllSync | Builtin::AnySync | Builtin::ActiveMask => {
            Capability::WarpVote
        }
        Builtin::MatchAnySync | Builtin::MatchAllSync => Capability::WarpMatch,
        Builtin::WarpReduce(_) => Capability::WarpReduce,
        Builtin::SyncWarp => Capability::WarpSync,
        Builtin::ThreadFenceSystem => Capability::SystemFence,
        Builtin::ClusterRank | Builtin::ClusterBarrier | Builtin::ThreadFenceCluster => {
            Capability::Clusters
        }
        Builtin::CurandInit | Builtin::CurandUniform | Builtin::CurandNormal => {
            Capability::DeviceRandom
        }
        Builtin::TexFetch | Builtin::Tex(_) | Builtin::SurfRead(..) | Builtin::SurfWrite(..) => {
            Capability::Textures
        }
        Builtin::Tensor(op) => super::tensor::capability(op),
        Builtin::Hopper(h) => super::hopper::needs(h),
        Builtin::Atomic(_) => match args.first()?.ty.pointee()?.scalar()? {
            ScalarType::Int64 | ScalarType::UInt64 => Capability::Atomic64,
            ScalarType::Int16 | ScalarType::UInt16 => Capability::Atomic16,
            ScalarType::Float => Capability::FloatAtomics,
            ScalarType::Double => Capability::DoubleAtomics,
            ScalarType::Half | ScalarType::BFloat16 => Capability::HalfAtomics,
            _ => return None,
        },
        _ => return None,
    })
}

/// True for the four shuffles, whose optional fourth operand is a width in lanes.
fn is_shuffle(op: Builtin) -> bool {
    matches!(
        op,
        Builtin::ShflSync | Builtin::ShflUpSync | Builtin::ShflDownSync | Builtin::ShflXorSync
    )
}

/// True for the warp operations that take or return a lane mask, which the language types as a
/// 32-bit `uint`.
fn takes_lane_masks(op: Builtin, args: &[Expr]) -> bool {
    match op {
        Builtin::SyncWarp => !args.is_empty(),
        Builtin::BallotSync
        | Builtin::AllSync
        | Builtin::AnySync
        | Builtin::ActiveMask
        | Builtin::MatchAnySync
        | Builtin::MatchAllSync
        | Builtin::WarpReduce(_) => true,
        other => is_shuffle(other),
    }
}

/// True for the warp operations whose result is a lane mask (`ballot-sync`, `activemask`, the
/// matches), which a 32-bit `uint` cannot hold on a wider wave.
fn returns_lane_mask(op: Builtin) -> bool {
    matches!(
        op,
        Builtin::BallotSync | Builtin::ActiveMask | Builtin::MatchAnySync | Builtin::MatchAllSync
    )
}

/// The kernel-language name of a built-in (`atomic-add`), for messages.
fn builtin_name(op: Builtin) -> &'static str {
    if let Builtin::Tensor(t) = op {
        return super::tensor::name_of(t);
    }
    builtins::signatures_of(op)
        .next()
        .map_or("a built-in", |(name, _)| name)
}

/// True for the cluster index variables.
fn is_cluster_index(index: IndexVar) -> bool {
    matches!(
        index,
        IndexVar::ClusterDim(_) | IndexVar::ClusterIdx(_) | IndexVar::BlockInCluster(_)
    )
}

/// The kernel-language name of an index variable (`cluster-idx-x`).
fn index_name(index: IndexVar) -> &'static str {
    super::expr::INDEX_VARIABLES
        .iter()
        .find(|(_, v)| *v == index)
        .map_or("an index variable", |(name, _)| name)
}
