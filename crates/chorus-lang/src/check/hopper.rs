//! The Hopper (sm_90) built-ins: their names and signatures in the overload table, the
//! arguments that must be constants, and the rules for `tensor-map` values.
//!
//! | kernel text | PTX |
//! |---|---|
//! | `(mbarrier-init bar count)` | `mbarrier.init.shared::cta.b64` |
//! | `(mbarrier-arrive bar)` | `mbarrier.arrive.shared::cta.b64` |
//! | `(mbarrier-arrive-expect-tx bar bytes)` | `mbarrier.arrive.expect_tx.shared::cta.b64` |
//! | `(mbarrier-try-wait bar parity)` → bool, `(mbarrier-wait bar parity)` | `mbarrier.try_wait.parity.shared::cta.b64` |
//! | `(mbarrier-arrive-cluster bar rank)` | `mapa` + `mbarrier.arrive.shared::cluster.b64` |
//! | `(cp-async-mbarrier-arrive bar)` | `cp.async.mbarrier.arrive.noinc.shared::cta.b64` |
//! | `(fence-mbarrier-init)` | `fence.mbarrier_init.release.cluster` |
//! | `(fence-proxy-async)` | `fence.proxy.async.shared::cta` |
//! | `(shared-address p)` → uint | `__cvta_generic_to_shared`: to align a buffer |
//! | `(tma-load-2d dst bar (pointer map) x y)` (1-D to 5-D) | `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes` |
//! | `(tma-load-2d-multicast dst bar (pointer map) cta-mask x y)` (1-D to 5-D) | the same, `.multicast::cluster` |
//! | `(tma-store-2d (pointer map) src x y)` (1-D to 5-D) | `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group` |
//! | `(tma-store-commit)`, `(tma-store-wait N)` | `cp.async.bulk.commit_group`, `cp.async.bulk.wait_group.read N` |
//! | `(prefetch-tensor-map (pointer map))` | `prefetch.tensormap` |
//! | `(wgmma-descriptor smem leading-bytes stride-bytes swizzle)` → uint64 | a shared-memory matrix descriptor |
//! | `(wgmma-mma-async-bf16 (pointer acc) desc-a desc-b scale-d [transpose-a transpose-b])` | `wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16` |
//! | `(wgmma-fence)`, `(wgmma-commit-group)`, `(wgmma-wait-group N)` | `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group N` |
//! | `(wgmma-fence-operand (pointer acc))` | keeps the compiler from moving accumulator reads across a wait |
//! | `(wgmma-f32-m64n256)`, `(wgmma-acc-ref acc i)` | a zero accumulator; its register `i` |
//! | `(setmaxnreg-inc N)`, `(setmaxnreg-dec N)` | `setmaxnreg.inc/dec.sync.aligned.u32 N` |
//!
//! The swizzles of shared-memory layouts are built-in macros (`swizzle-128b` …,
//! `expand/builtin.rs`). Shared-memory operands (`bar`, `dst`, `src`, `smem`) are pointers into shared memory
//! (`with-shared-memory`, `with-dynamic-shared-memory`); an mbarrier is a `uint64`. A pointer
//! into global memory there is undefined behaviour on the GPU, as in CUDA C: the language does
//! not track address spaces. `wgmma-mma-async-f16`, `-e4m3` and `-e5m2` take the same operands
//! (fp8 has K = 32 and no transposes). The accumulator layout (PTX ISA, "Register fragments":
//! register `i` of thread `t` of the warpgroup holds row `16 (t / 32) + (t % 32) / 4 + 8 ((i /
//! 2) % 2)`, column `8 (i / 4) + 2 (t % 4) + i % 2`) is the same for every N.
//!
//! Constants, checked here with the span of the argument: the group counts of the waits
//! (0 to 255), `setmaxnreg`'s register count (24 to 256, a multiple of 8), the descriptor's
//! swizzle (0, 32, 64 or 128 bytes), the transposes (0 or 1) and accumulator register numbers
//! (0 to N/2 − 1: a register file cannot be indexed at run time, so unroll with a macro).

use super::{consts, err};
use crate::error::Result;
use crate::ir::{Builtin, Expr, ExprKind, Function, FunctionKind, HopperOp, WgmmaInput};
use crate::target::Capability;
use crate::types::{ScalarType, Type};

/// The accumulator type names, which are also the names of their zero constructors, for every
/// N of [`crate::types::is_wgmma_n`] in increasing order.
pub const ACCUMULATOR_NAMES: [&str; 32] = [
    "wgmma-f32-m64n8",
    "wgmma-f32-m64n16",
    "wgmma-f32-m64n24",
    "wgmma-f32-m64n32",
    "wgmma-f32-m64n40",
    "wgmma-f32-m64n48",
    "wgmma-f32-m64n56",
    "wgmma-f32-m64n64",
    "wgmma-f32-m64n72",
    "wgmma-f32-m64n80",
    "wgmma-f32-m64n88",
    "wgmma-f32-m64n96",
    "wgmma-f32-m64n104",
    "wgmma-f32-m64n112",
    "wgmma-f32-m64n120",
    "wgmma-f32-m64n128",
    "wgmma-f32-m64n136",
    "wgmma-f32-m64n144",
    "wgmma-f32-m64n152",
    "wgmma-f32-m64n160",
    "wgmma-f32-m64n168",
    "wgmma-f32-m64n176",
    "wgmma-f32-m64n184",
    "wgmma-f32-m64n192",
    "wgmma-f32-m64n200",
    "wgmma-f32-m64n208",
    "wgmma-f32-m64n216",
    "wgmma-f32-m64n224",
    "wgmma-f32-m64n232",
    "wgmma-f32-m64n240",
    "wgmma-f32-m64n248",
    "wgmma-f32-m64n256",
];

/// The wgmma names by input type.
const MMA_NAMES: [(&str, WgmmaInput); 4] = [
    ("wgmma-mma-async-bf16", WgmmaInput::BF16),
    ("wgmma-mma-async-f16", WgmmaInput::F16),
    ("wgmma-mma-async-e4m3", WgmmaInput::E4M3),
    ("wgmma-mma-async-e5m2", WgmmaInput::E5M2),
];

/// The bulk tensor copies by dimension count.
const TMA_NAMES: [(&str, &str, &str, u8); 5] = [
    ("tma-load-1d", "tma-load-1d-multicast", "tma-store-1d", 1),
    ("tma-load-2d", "tma-load-2d-multicast", "tma-store-2d", 2),
    ("tma-load-3d", "tma-load-3d-multicast", "tma-store-3d", 3),
    ("tma-load-4d", "tma-load-4d-multicast", "tma-store-4d", 4),
    ("tma-load-5d", "tma-load-5d-multicast", "tma-store-5d", 5),
];

/// One overload: the operation, the parameter types and the result type (the overload
/// table's `Signature`, which `check/builtins.rs` makes of it).
pub(super) type Overload = (Builtin, Vec<Type>, Type);

/// One overload of a Hopper operation.
fn sig(op: HopperOp, params: &[Type], result: Type) -> Overload {
    (Builtin::Hopper(op), params.to_vec(), result)
}

/// The N of every accumulator type.
fn accumulator_ns() -> impl Iterator<Item = u16> {
    (8..=256).step_by(8)
}

/// Adds the Hopper built-ins to the overload table (`check/builtins.rs` calls this last).
pub(super) fn add_signatures(add: &mut dyn FnMut(&'static str, Vec<Overload>)) {
    use HopperOp::*;
    let uint = Type::UINT;
    let int = Type::INT;
    let u64_ = Type::Scalar(ScalarType::UInt64);
    let bar = u64_.clone().pointer_to();
    let map = Type::TensorMap.pointer_to();
    // Shared-memory data may have any scalar element type.
    let smem: Vec<Type> = ScalarType::ALL
        .iter()
        .map(|&s| Type::Scalar(s).pointer_to())
        .collect();
    let none = |op| vec![sig(op, &[], Type::Void)];

    // Counts, byte counts and parities are 32-bit: `int` or `uint`, whichever the caller has.
    let counted = |op, result: Type| -> Vec<Overload> {
        [int.clone(), uint.clone()]
            .into_iter()
            .map(|count| sig(op, &[bar.clone(), count], result.clone()))
            .collect()
    };
    add("mbarrier-init", counted(MbarrierInit, Type::Void));
    add(
        "mbarrier-arrive",
        vec![sig(MbarrierArrive, std::slice::from_ref(&bar), Type::Void)],
    );
    add(
        "mbarrier-arrive-expect-tx",
        counted(MbarrierArriveExpectTx, Type::Void),
    );
    add("mbarrier-try-wait", counted(MbarrierTryWait, Type::Bool));
    add("mbarrier-wait", counted(MbarrierWait, Type::Void));
    add(
        "mbarrier-arrive-cluster",
        counted(MbarrierArriveCluster, Type::Void),
    );
    add(
        "cp-async-mbarrier-arrive",
        vec![sig(
            CpAsyncMbarrierArrive,
            std::slice::from_ref(&bar),
            Type::Void,
        )],
    );
    add("fence-mbarrier-init", none(FenceMbarrierInit));
    add("fence-proxy-async", none(FenceProxyAsync));
    add(
        "shared-address",
        smem.iter()
            .map(|p| sig(SharedAddress, std::slice::from_ref(p), Type::UINT))
            .collect(),
    );
    for (load, multicast, store, dims) in TMA_NAMES {
        // Every TMA operation's operands end in its `dims` coordinates.
        let with_coords = |mut params: Vec<Type>| {
            params.extend(std::iter::repeat_n(int.clone(), usize::from(dims)));
            params
        };
        add(
            load,
            smem.iter()
                .map(|p| {
                    let params = with_coords(vec![p.clone(), bar.clone(), map.clone()]);
                    sig(TmaLoad(dims), &params, Type::Void)
                })
                .collect(),
        );
        // The CTA mask, 16 bits in PTX, is an `int` or `uint` like the counts.
        add(
            multicast,
            smem.iter()
                .flat_map(|p| {
                    [int.clone(), uint.clone()].map(|mask| {
                        let params = with_coords(vec![p.clone(), bar.clone(), map.clone(), mask]);
                        sig(TmaLoadMulticast(dims), &params, Type::Void)
                    })
                })
                .collect(),
        );
        add(
            store,
            smem.iter()
                .map(|p| {
                    let params = with_coords(vec![map.clone(), p.clone()]);
                    sig(TmaStore(dims), &params, Type::Void)
                })
                .collect(),
        );
    }
    add("tma-store-commit", none(BulkCommitGroup));
    add(
        "tma-store-wait",
        vec![sig(
            BulkWaitGroupRead,
            std::slice::from_ref(&int),
            Type::Void,
        )],
    );
    add(
        "prefetch-tensor-map",
        vec![sig(
            PrefetchTensorMap,
            std::slice::from_ref(&map),
            Type::Void,
        )],
    );
    add("wgmma-fence", none(WgmmaFence));
    add("wgmma-commit-group", none(WgmmaCommitGroup));
    add(
        "wgmma-wait-group",
        vec![sig(WgmmaWaitGroup, std::slice::from_ref(&int), Type::Void)],
    );
    add(
        "wgmma-descriptor",
        [int.clone(), uint.clone()]
            .iter()
            .flat_map(|bytes| {
                smem.iter().map(move |p| {
                    sig(
                        WgmmaDescriptor,
                        &[p.clone(), bytes.clone(), bytes.clone(), Type::INT],
                        Type::Scalar(ScalarType::UInt64),
                    )
                })
            })
            .collect(),
    );
    for (name, input) in MMA_NAMES {
        let mut sigs = Vec::new();
        for n in accumulator_ns() {
            let acc = Type::WgmmaAccumulator(n).pointer_to();
            let mut params = vec![acc, u64_.clone(), u64_.clone(), int.clone()];
            sigs.push(sig(WgmmaMma(input), &params, Type::Void));
            if input.transposable() {
                params.extend([int.clone(), int.clone()]);
                sigs.push(sig(WgmmaMma(input), &params, Type::Void));
            }
        }
        add(name, sigs);
    }
    add(
        "wgmma-fence-operand",
        accumulator_ns()
            .map(|n| {
                let acc = Type::WgmmaAccumulator(n).pointer_to();
                sig(WgmmaFenceOperand, &[acc], Type::Void)
            })
            .collect(),
    );
    for (name, n) in ACCUMULATOR_NAMES.into_iter().zip(accumulator_ns()) {
        add(
            name,
            vec![sig(WgmmaAccZero, &[], Type::WgmmaAccumulator(n))],
        );
    }
    add(
        "wgmma-acc-ref",
        accumulator_ns()
            .map(|n| {
                let acc = Type::WgmmaAccumulator(n);
                sig(WgmmaAccRef, &[acc, int.clone()], Type::FLOAT)
            })
            .collect(),
    );
    add(
        "setmaxnreg-inc",
        vec![sig(SetMaxNRegInc, std::slice::from_ref(&int), Type::Void)],
    );
    add(
        "setmaxnreg-dec",
        vec![sig(SetMaxNRegDec, std::slice::from_ref(&int), Type::Void)],
    );
}

/// True when a call of `op` does something besides computing its value.
pub(super) fn has_effect(op: HopperOp) -> bool {
    !matches!(
        op,
        HopperOp::MbarrierTryWait
            | HopperOp::SharedAddress
            | HopperOp::WgmmaDescriptor
            | HopperOp::WgmmaAccZero
            | HopperOp::WgmmaAccRef
    )
}

/// The capability `op` needs.
pub(super) fn needs(op: HopperOp) -> Capability {
    if matches!(op, HopperOp::TmaLoadMulticast(_)) {
        Capability::TensorMemoryAccess
    } else if op.is_arch_specific() {
        Capability::WarpgroupMma
    } else if matches!(
        op,
        HopperOp::MbarrierArriveCluster | HopperOp::FenceMbarrierInit
    ) {
        Capability::Clusters
    } else {
        Capability::TensorMemoryAccess
    }
}

/// The capability a Hopper type needs, `None` for other types.
pub(super) fn type_needs(ty: &Type) -> Option<Capability> {
    match ty {
        Type::TensorMap => Some(Capability::TensorMemoryAccess),
        Type::WgmmaAccumulator(_) => Some(Capability::WarpgroupMma),
        _ => None,
    }
}

/// For a built-in whose argument `index` must be an integer constant, a value it accepts (the
/// smallest); `None` for any other argument. Generators of calls (the signature sweeps of the
/// tests, the compiler tier) use it to write valid calls.
///
/// ```
/// use chorus_lang::check::constant_argument;
/// use chorus_lang::ir::{Builtin, HopperOp};
///
/// assert_eq!(constant_argument(Builtin::Hopper(HopperOp::SetMaxNRegInc), 0), Some(24));
/// assert_eq!(constant_argument(Builtin::Hopper(HopperOp::MbarrierInit), 1), None);
/// assert_eq!(constant_argument(Builtin::Add, 0), None);
/// ```
pub fn constant_argument(op: Builtin, index: usize) -> Option<i128> {
    let Builtin::Hopper(op) = op else {
        return None;
    };
    match (op, index) {
        (HopperOp::WgmmaWaitGroup | HopperOp::BulkWaitGroupRead, 0) => Some(0),
        (HopperOp::SetMaxNRegInc | HopperOp::SetMaxNRegDec, 0) => Some(24),
        (HopperOp::WgmmaDescriptor, 3) => Some(0),
        (HopperOp::WgmmaMma(_), 4 | 5) => Some(0),
        (HopperOp::WgmmaAccRef, 1) => Some(0),
        _ => None,
    }
}

/// Checks the constant arguments of a resolved call (`e`, named `name`); other built-ins pass.
pub(super) fn check_constants(name: &str, e: &Expr) -> Result<()> {
    let ExprKind::Builtin {
        op: Builtin::Hopper(op),
        args,
    } = &e.kind
    else {
        return Ok(());
    };
    match op {
        HopperOp::WgmmaWaitGroup | HopperOp::BulkWaitGroupRead => {
            constant(name, &args[0], "the number of groups left pending", |v| {
                (0..=255).contains(&v).then_some(()).ok_or("0 to 255")
            })
        }
        HopperOp::SetMaxNRegInc | HopperOp::SetMaxNRegDec => {
            constant(name, &args[0], "the register count", |v| {
                ((24..=256).contains(&v) && v.rem_euclid(8) == 0)
                    .then_some(())
                    .ok_or("a multiple of 8 from 24 to 256")
            })
        }
        HopperOp::WgmmaDescriptor => constant(name, &args[3], "the swizzle in bytes", |v| {
            matches!(v, 0 | 32 | 64 | 128)
                .then_some(())
                .ok_or("0 (none), 32, 64 or 128")
        }),
        HopperOp::WgmmaMma(_) => {
            for (arg, what) in args[4..].iter().zip(["transpose-a", "transpose-b"]) {
                constant(name, arg, what, |v| {
                    matches!(v, 0 | 1)
                        .then_some(())
                        .ok_or("0 (K-major) or 1 (MN-major)")
                })?;
            }
            Ok(())
        }
        HopperOp::WgmmaAccRef => {
            let Type::WgmmaAccumulator(n) = args[0].ty else {
                return Ok(());
            };
            let last = i128::from(n / 2) - 1;
            constant(name, &args[1], "the register number", |v| {
                (0..=last).contains(&v).then_some(()).ok_or("")
            })
            .map_err(|mut e| {
                if e.message.is_empty() {
                    e.message = format!(
                        "`{name}`: an accumulator `{}` has registers 0 to {last}; got {}",
                        args[0].ty,
                        consts::int_value(&args[1]).unwrap_or_default()
                    );
                }
                e
            })
        }
        _ => Ok(()),
    }
}

/// An error at `arg` unless it is an integer constant that `ok` accepts; `ok`'s error names
/// the accepted values.
fn constant(
    name: &str,
    arg: &Expr,
    what: &str,
    ok: impl Fn(i128) -> std::result::Result<(), &'static str>,
) -> Result<()> {
    let Some(v) = consts::int_value(arg) else {
        return err(
            &arg.span,
            format!(
                "`{name}`: {what} must be an integer constant (PTX encodes it in the \
                 instruction); compute it with a macro or a symbol macro"
            ),
        );
    };
    match ok(v) {
        Ok(()) => Ok(()),
        // The caller words this one itself.
        Err("") => err(&arg.span, ""),
        Err(accepted) => err(
            &arg.span,
            format!("`{name}`: {what} must be {accepted}; got {v}"),
        ),
    }
}

/// The rules for Hopper types in a function's signature, whatever the target: a `tensor-map`
/// is a kernel's parameter only (the TMA reads it in parameter space, `__grid_constant__`; a
/// copy in registers or local memory has no address the TMA may use), and a wgmma
/// accumulator is never a kernel's parameter (it lives in the registers of one thread of a
/// warpgroup). Errors are at the function's span.
pub(super) fn signature_rules(f: &Function) -> Result<()> {
    if f.ret == Type::TensorMap {
        return err(
            &f.span,
            format!(
                "`{}` returns a `tensor-map`: a tensor map can only be a kernel's parameter; \
                 return a `tensor-map*` instead",
                f.name
            ),
        );
    }
    for p in &f.params {
        let Some(local) = f.local(p.local) else {
            continue;
        };
        match (&local.ty, f.kind) {
            (Type::TensorMap, FunctionKind::Device) => {
                return err(
                    &f.span,
                    format!(
                        "the parameter `{}` of device function `{}` is a `tensor-map`: a \
                         tensor map can only be a kernel's parameter; take a `tensor-map*` \
                         and pass `(pointer map)`",
                        local.name, f.name
                    ),
                );
            }
            (Type::WgmmaAccumulator(_), FunctionKind::Kernel) => {
                return err(
                    &f.span,
                    format!(
                        "kernel `{}` takes the accumulator `{}` as a parameter: accumulators \
                         live in registers; declare it in the kernel with `({})`",
                        f.name, local.name, local.ty
                    ),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// The rule for a declared local of type `ty` named `name` (an error at `span`): never a
/// `tensor-map` (see [`signature_rules`]).
pub(super) fn declared_local(name: &str, ty: &Type, span: &crate::span::Span) -> Result<()> {
    if *ty == Type::TensorMap {
        return err(
            span,
            format!(
                "`{name}` would be a copy of a `tensor-map`, which the TMA cannot use: a tensor \
                 map can only be a kernel's parameter; bind `(pointer map)`, a `tensor-map*`"
            ),
        );
    }
    Ok(())
}
