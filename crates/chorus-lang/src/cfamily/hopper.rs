//! The CUDA C of the Hopper built-ins ([`HopperOp`]): inline PTX in helper functions, as
//! CUTLASS's `cute/arch/copy_sm90_tma.hpp`, `barrier.h` and `mma_sm90_gmma.hpp` write it.
//!
//! * A `tensor-map` is `chorus_tensor_map`, a 64-byte aligned structure of sixteen 64-bit
//!   words (the layout of the driver's `CUtensorMap`, so that no driver header is needed), and a
//!   kernel takes it as `__grid_constant__ const chorus_tensor_map m`: the TMA reads it in
//!   parameter space through its generic address.
//! * A `wgmma-f32-m64nN` accumulator is `struct chorus_wgmma_f32_m64nN { float r[N/2]; }`;
//!   `(wgmma-acc-ref acc i)` is `acc.r[i]` with `i` a constant, so that after inlining nvcc
//!   keeps every register in a register.
//! * Shared-memory operands reach PTX as 32-bit shared-window addresses
//!   (`__cvta_generic_to_shared`); immediates (group counts, register counts, transposes) are
//!   template arguments fed to `"n"` constraints.
//!
//! The file that uses `wgmma` or `setmaxnreg` must be compiled for `sm_90a`; it says so with
//! [`ARCH_SPECIFIC_GUARD`], which a compiler driver looks for (chorus-cuda does).

use crate::ir::{Expr, HopperOp, WgmmaInput};
use crate::types::Type;
use std::fmt::Write;

/// The first line of the guard a CUDA C file that needs `sm_90a` starts its helpers with: it
/// turns compiling for plain `sm_90` (or another architecture) into a clear `#error` rather
/// than ptxas's complaint about `wgmma`. chorus-cuda compiles a source containing it with
/// `-arch=sm_90a`.
pub const ARCH_SPECIFIC_GUARD: &str =
    "#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)";

/// A helper of the Hopper built-ins (types first, so that a definition follows the types it
/// uses in the sorted set of helpers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HopperHelper {
    /// The `#error` for a compilation not for `sm_90a` ([`ARCH_SPECIFIC_GUARD`]).
    ArchGuard,
    /// `struct chorus_tensor_map`.
    TensorMap,
    /// `struct chorus_wgmma_f32_m64nN`.
    Accumulator(u16),
    /// The helper of one operation (not the wgmma itself, which has one per shape).
    Op(HopperOp),
    /// `chorus_wgmma_m64nNkK_f32_T`: one `wgmma.mma_async` shape.
    Mma(WgmmaInput, u16),
    /// `chorus_wgmma_fence_operand_m64nN`.
    FenceOperand(u16),
}

impl HopperHelper {
    /// The helper's name in the printed text.
    pub fn name(self) -> String {
        match self {
            HopperHelper::ArchGuard => "chorus_sm90a_guard".into(),
            HopperHelper::TensorMap => "chorus_tensor_map".into(),
            HopperHelper::Accumulator(n) => format!("chorus_wgmma_f32_m64n{n}"),
            HopperHelper::Mma(input, n) => {
                format!("chorus_wgmma_m64n{n}k{}_f32_{}", input.k(), input.ptx())
            }
            HopperHelper::FenceOperand(n) => format!("chorus_wgmma_fence_operand_m64n{n}"),
            HopperHelper::Op(op) => {
                let word = match op {
                    HopperOp::MbarrierInit => "mbarrier_init",
                    HopperOp::MbarrierArrive => "mbarrier_arrive",
                    HopperOp::MbarrierArriveExpectTx => "mbarrier_arrive_expect_tx",
                    HopperOp::MbarrierTryWait => "mbarrier_try_wait",
                    HopperOp::MbarrierWait => "mbarrier_wait",
                    HopperOp::FenceProxyAsync => "fence_proxy_async",
                    HopperOp::MbarrierArriveCluster => "mbarrier_arrive_cluster",
                    HopperOp::FenceMbarrierInit => "fence_mbarrier_init",
                    HopperOp::CpAsyncMbarrierArrive => "cp_async_mbarrier_arrive",
                    HopperOp::TmaLoad(d) => return format!("chorus_tma_load_{d}d"),
                    HopperOp::TmaLoadMulticast(d) => {
                        return format!("chorus_tma_load_{d}d_multicast");
                    }
                    HopperOp::TmaStore(d) => return format!("chorus_tma_store_{d}d"),
                    HopperOp::BulkCommitGroup => "bulk_commit_group",
                    HopperOp::BulkWaitGroupRead => "bulk_wait_group_read",
                    HopperOp::PrefetchTensorMap => "prefetch_tensor_map",
                    HopperOp::WgmmaFence => "wgmma_fence",
                    HopperOp::WgmmaCommitGroup => "wgmma_commit_group",
                    HopperOp::WgmmaWaitGroup => "wgmma_wait_group",
                    HopperOp::WgmmaDescriptor => "wgmma_descriptor",
                    HopperOp::SetMaxNRegInc => "setmaxnreg_inc",
                    HopperOp::SetMaxNRegDec => "setmaxnreg_dec",
                    // Printed without a helper of their own (see `call`).
                    HopperOp::SharedAddress
                    | HopperOp::WgmmaMma(_)
                    | HopperOp::WgmmaFenceOperand
                    | HopperOp::WgmmaAccZero
                    | HopperOp::WgmmaAccRef => "wgmma",
                };
                format!("chorus_{word}")
            }
        }
    }
}

/// The helpers a Hopper type's spelling needs and the spelling, for `tensor-map` and the
/// accumulators; `None` for other types.
pub(super) fn type_spelling(ty: &Type) -> Option<(Vec<HopperHelper>, String)> {
    match ty {
        Type::TensorMap => Some((
            vec![HopperHelper::TensorMap],
            format!("const {}", HopperHelper::TensorMap.name()),
        )),
        Type::WgmmaAccumulator(n) => Some((
            vec![HopperHelper::ArchGuard, HopperHelper::Accumulator(*n)],
            HopperHelper::Accumulator(*n).name(),
        )),
        _ => None,
    }
}

/// What a kernel parameter of type `ty` is prefixed with: `__grid_constant__ ` for a tensor
/// map, so that its address is the parameter's own.
pub(super) fn kernel_parameter_prefix(ty: &Type) -> &'static str {
    if *ty == Type::TensorMap {
        "__grid_constant__ "
    } else {
        ""
    }
}

/// The accumulator N of an expression of type `wgmma-f32-m64nN` or a pointer to one.
fn accumulator_n(e: &Expr) -> u16 {
    match e.ty.pointee().unwrap_or(&e.ty) {
        Type::WgmmaAccumulator(n) => *n,
        _ => 0,
    }
}

/// The call of `op` on `args`, printed as `printed` (each usable as a postfix operand), with
/// the result type `result`: the helpers it needs and its text.
pub(super) fn call(
    op: HopperOp,
    args: &[Expr],
    printed: &[String],
    result: &Type,
) -> (Vec<HopperHelper>, String) {
    let mut helpers = Vec::new();
    if op.is_arch_specific() {
        helpers.push(HopperHelper::ArchGuard);
    }
    let list = printed.join(", ");
    let text = match op {
        HopperOp::WgmmaAccZero => {
            let n = match result {
                Type::WgmmaAccumulator(n) => *n,
                _ => 0,
            };
            helpers.push(HopperHelper::Accumulator(n));
            format!("{}{{}}", HopperHelper::Accumulator(n).name())
        }
        HopperOp::WgmmaAccRef => format!("{}.r[{}]", printed[0], printed[1]),
        HopperOp::SharedAddress => format!("({})", shared(&printed[0])),
        HopperOp::WgmmaMma(input) => {
            let n = accumulator_n(&args[0]);
            let h = HopperHelper::Mma(input, n);
            helpers.extend([HopperHelper::Accumulator(n), h]);
            let operands = printed[..4].join(", ");
            if input.transposable() {
                let (a, b) = match printed {
                    [.., a, b] if printed.len() == 6 => (a.as_str(), b.as_str()),
                    _ => ("0", "0"),
                };
                format!("{}<{a}, {b}>({operands})", h.name())
            } else {
                format!("{}({operands})", h.name())
            }
        }
        HopperOp::WgmmaFenceOperand => {
            let n = accumulator_n(&args[0]);
            let h = HopperHelper::FenceOperand(n);
            helpers.extend([HopperHelper::Accumulator(n), h]);
            format!("{}({list})", h.name())
        }
        HopperOp::WgmmaWaitGroup
        | HopperOp::BulkWaitGroupRead
        | HopperOp::SetMaxNRegInc
        | HopperOp::SetMaxNRegDec => {
            let h = HopperHelper::Op(op);
            helpers.push(h);
            format!("{}<{list}>()", h.name())
        }
        HopperOp::TmaLoad(_)
        | HopperOp::TmaLoadMulticast(_)
        | HopperOp::TmaStore(_)
        | HopperOp::PrefetchTensorMap => {
            let h = HopperHelper::Op(op);
            helpers.extend([HopperHelper::TensorMap, h]);
            format!("{}({list})", h.name())
        }
        _ => {
            let h = HopperHelper::Op(op);
            helpers.push(h);
            format!("{}({list})", h.name())
        }
    };
    (helpers, text)
}

/// `static __device__ __forceinline__`, as every helper of the CUDA dialect.
const PREFIX: &str = "static __device__ __forceinline__";

/// `(unsigned int)__cvta_generic_to_shared(p)`: the shared-window address PTX takes.
fn shared(p: &str) -> String {
    format!("(unsigned int)__cvta_generic_to_shared({p})")
}

/// A `void` helper `name(params)` whose body is one `asm volatile`.
fn asm_helper(name: &str, params: &str, ptx: &str, operands: &str) -> String {
    format!("{PREFIX} void {name}({params})\n{{\n  asm volatile(\"{ptx}\"{operands});\n}}\n")
}

/// A helper templated on the immediate `N`, whose body is `asm volatile(ptx :: "n"(N))`.
fn immediate_helper(name: &str, ptx: &str) -> String {
    format!(
        "template <int N>\n{PREFIX} void {name}()\n{{\n  asm volatile(\"{ptx}\" :: \"n\"(N) : \"memory\");\n}}\n"
    )
}

/// `{%first, …}` for the coordinates of a bulk tensor copy.
fn coordinates(first: usize, dims: u8) -> String {
    let regs: Vec<String> = (0..usize::from(dims))
        .map(|i| format!("%{}", first + i))
        .collect();
    format!("{{{}}}", regs.join(", "))
}

/// The CUDA C definition of `helper`, named `name`, ending in a newline.
pub(super) fn definition(helper: HopperHelper, name: &str) -> String {
    match helper {
        HopperHelper::ArchGuard => format!(
            "{ARCH_SPECIFIC_GUARD}\n#error \"this module uses wgmma, setmaxnreg or TMA multicast, which need \
             sm_90a: compile with -arch=sm_90a\"\n#endif\n"
        ),
        HopperHelper::TensorMap => {
            format!("struct __align__(64) {name}\n{{\n  unsigned long long opaque[16];\n}};\n")
        }
        HopperHelper::Accumulator(n) => {
            format!("struct {name}\n{{\n  float r[{}];\n}};\n", n / 2)
        }
        HopperHelper::Mma(input, n) => mma_definition(name, input, n),
        HopperHelper::FenceOperand(n) => {
            let acc = HopperHelper::Accumulator(n).name();
            let mut out = format!("{PREFIX} void {name}({acc}* d)\n{{\n");
            let _ = writeln!(
                out,
                "  #pragma unroll\n  for (int i = 0; i < {}; ++i) {{\n    asm volatile(\"\" : \"+f\"(d->r[i]) :: \"memory\");\n  }}\n}}",
                n / 2
            );
            out
        }
        HopperHelper::Op(op) => op_definition(op, name),
    }
}

/// The definition of the helper of one operation.
fn op_definition(op: HopperOp, name: &str) -> String {
    let map = HopperHelper::TensorMap.name();
    match op {
        HopperOp::MbarrierInit => asm_helper(
            name,
            "void* bar, unsigned int count",
            "mbarrier.init.shared::cta.b64 [%0], %1;",
            &format!(" :: \"r\"({}), \"r\"(count) : \"memory\"", shared("bar")),
        ),
        HopperOp::MbarrierArrive => asm_helper(
            name,
            "void* bar",
            "mbarrier.arrive.shared::cta.b64 _, [%0];",
            &format!(" :: \"r\"({}) : \"memory\"", shared("bar")),
        ),
        HopperOp::MbarrierArriveExpectTx => asm_helper(
            name,
            "void* bar, unsigned int bytes",
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;",
            &format!(" :: \"r\"({}), \"r\"(bytes) : \"memory\"", shared("bar")),
        ),
        HopperOp::MbarrierTryWait => format!(
            "{PREFIX} bool {name}(void* bar, unsigned int parity)\n{{\n  unsigned int done;\n  \
             asm volatile(\"{{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.shared::cta.b64 p, \
             [%1], %2;\\n\\tselp.u32 %0, 1, 0, p;\\n\\t}}\" : \"=r\"(done) : \"r\"({}), \
             \"r\"(parity) : \"memory\");\n  return done != 0;\n}}\n",
            shared("bar")
        ),
        HopperOp::MbarrierWait => format!(
            "{PREFIX} void {name}(void* bar, unsigned int parity)\n{{\n  unsigned int done;\n  \
             do {{\n    asm volatile(\"{{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.shared::cta.b64 \
             p, [%1], %2;\\n\\tselp.u32 %0, 1, 0, p;\\n\\t}}\" : \"=r\"(done) : \"r\"({}), \
             \"r\"(parity) : \"memory\");\n  }} while (done == 0);\n}}\n",
            shared("bar")
        ),
        HopperOp::CpAsyncMbarrierArrive => asm_helper(
            name,
            "void* bar",
            "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];",
            &format!(" :: \"r\"({}) : \"memory\"", shared("bar")),
        ),
        HopperOp::MbarrierArriveCluster => asm_helper(
            name,
            "void* bar, unsigned int rank",
            "{\\n\\t.reg .b32 remote;\\n\\tmapa.shared::cluster.u32 remote, %0, %1;\\n\\t\
             mbarrier.arrive.shared::cluster.b64 _, [remote];\\n\\t}",
            &format!(" :: \"r\"({}), \"r\"(rank) : \"memory\"", shared("bar")),
        ),
        HopperOp::FenceMbarrierInit => asm_helper(
            name,
            "",
            "fence.mbarrier_init.release.cluster;",
            " ::: \"memory\"",
        ),
        HopperOp::FenceProxyAsync => asm_helper(
            name,
            "",
            "fence.proxy.async.shared::cta;",
            " ::: \"memory\"",
        ),
        HopperOp::TmaLoad(dims) | HopperOp::TmaLoadMulticast(dims) => {
            let coords: Vec<String> = (0..dims).map(|i| format!("int c{i}")).collect();
            let inputs: Vec<String> = (0..dims).map(|i| format!("\"r\"(c{i})")).collect();
            // The multicast form takes the CTA mask as its fourth operand, a 16-bit register.
            let (mask_param, multicast, mask_operand, mask_input, first) =
                if matches!(op, HopperOp::TmaLoadMulticast(_)) {
                    (
                        "unsigned int mask, ",
                        ".multicast::cluster",
                        ", %3",
                        "\"h\"((unsigned short)mask), ",
                        4,
                    )
                } else {
                    ("", "", "", "", 3)
                };
            asm_helper(
                name,
                &format!(
                    "void* dst, void* bar, const {map}* map, {mask_param}{}",
                    coords.join(", ")
                ),
                &format!(
                    "cp.async.bulk.tensor.{dims}d.shared::cluster.global.mbarrier::complete_tx::bytes\
                     {multicast} [%0], [%1, {}], [%2]{mask_operand};",
                    coordinates(first, dims)
                ),
                &format!(
                    " :: \"r\"({}), \"l\"((unsigned long long)map), \"r\"({}), {mask_input}{} \
                     : \"memory\"",
                    shared("dst"),
                    shared("bar"),
                    inputs.join(", ")
                ),
            )
        }
        HopperOp::TmaStore(dims) => {
            let coords: Vec<String> = (0..dims).map(|i| format!("int c{i}")).collect();
            let inputs: Vec<String> = (0..dims).map(|i| format!("\"r\"(c{i})")).collect();
            asm_helper(
                name,
                &format!("const {map}* map, const void* src, {}", coords.join(", ")),
                &format!(
                    "cp.async.bulk.tensor.{dims}d.global.shared::cta.bulk_group [%0, {}], [%1];",
                    coordinates(2, dims)
                ),
                &format!(
                    " :: \"l\"((unsigned long long)map), \"r\"({}), {} : \"memory\"",
                    shared("src"),
                    inputs.join(", ")
                ),
            )
        }
        HopperOp::BulkCommitGroup => {
            asm_helper(name, "", "cp.async.bulk.commit_group;", " ::: \"memory\"")
        }
        HopperOp::BulkWaitGroupRead => immediate_helper(name, "cp.async.bulk.wait_group.read %0;"),
        HopperOp::PrefetchTensorMap => asm_helper(
            name,
            &format!("const {map}* map"),
            "prefetch.tensormap [%0];",
            " :: \"l\"((unsigned long long)map) : \"memory\"",
        ),
        HopperOp::WgmmaFence => {
            asm_helper(name, "", "wgmma.fence.sync.aligned;", " ::: \"memory\"")
        }
        HopperOp::WgmmaCommitGroup => asm_helper(
            name,
            "",
            "wgmma.commit_group.sync.aligned;",
            " ::: \"memory\"",
        ),
        HopperOp::WgmmaWaitGroup => immediate_helper(name, "wgmma.wait_group.sync.aligned %0;"),
        HopperOp::SetMaxNRegInc => immediate_helper(name, "setmaxnreg.inc.sync.aligned.u32 %0;"),
        HopperOp::SetMaxNRegDec => immediate_helper(name, "setmaxnreg.dec.sync.aligned.u32 %0;"),
        // The matrix descriptor of PTX ISA 8.0, "Matrix Descriptor Format": bits 0-13 the start
        // address, 16-29 the leading-dimension byte offset, 32-45 the stride byte offset (each
        // in units of 16 bytes), 49-51 the base offset (0: buffers aligned to the swizzle's
        // repeat), 62-63 the swizzle (1: 128B, 2: 64B, 3: 32B, 0: none).
        HopperOp::WgmmaDescriptor => format!(
            "{PREFIX} unsigned long long {name}(const void* smem, unsigned int leading, unsigned int stride, int swizzle)\n{{\n  \
             unsigned long long layout = swizzle == 128 ? 1ull : swizzle == 64 ? 2ull : swizzle == 32 ? 3ull : 0ull;\n  \
             return (unsigned long long)((({} & 0x3FFFFu) >> 4))\n    \
             | ((unsigned long long)((leading & 0x3FFFFu) >> 4) << 16)\n    \
             | ((unsigned long long)((stride & 0x3FFFFu) >> 4) << 32)\n    \
             | (layout << 62);\n}}\n",
            shared("smem")
        ),
        HopperOp::SharedAddress
        | HopperOp::WgmmaMma(_)
        | HopperOp::WgmmaFenceOperand
        | HopperOp::WgmmaAccZero
        | HopperOp::WgmmaAccRef => String::new(),
    }
}

/// `chorus_wgmma_m64nNkK_f32_T(acc*, desc_a, desc_b, scale_d)`: one `wgmma.mma_async` with
/// both operands from shared memory, `D = A·B + (scale_d ? D : 0)`; 16-bit types are
/// templated on the transposes of A and B (0: K-major).
fn mma_definition(name: &str, input: WgmmaInput, n: u16) -> String {
    let registers = usize::from(n / 2);
    let acc = HopperHelper::Accumulator(n).name();
    let t = input.ptx();
    let mut regs = String::new();
    for i in 0..registers {
        if i > 0 {
            regs.push_str(if i % 8 == 0 { ",\"\n      \"" } else { ", " });
        }
        let _ = write!(regs, "%{i}");
    }
    let (a, b, scale) = (registers, registers + 1, registers + 2);
    let (template, immediates, imm_inputs) = if input.transposable() {
        (
            "template <int TRANSPOSE_A, int TRANSPOSE_B>\n",
            format!(", %{}, %{}", registers + 3, registers + 4),
            ", \"n\"(TRANSPOSE_A), \"n\"(TRANSPOSE_B)",
        )
    } else {
        ("", String::new(), "")
    };
    let mut outputs = String::new();
    for i in 0..registers {
        if i > 0 {
            outputs.push_str(if i % 4 == 0 { ",\n      " } else { ", " });
        }
        let _ = write!(outputs, "\"+f\"(d->r[{i}])");
    }
    format!(
        "{template}{PREFIX} void {name}({acc}* d, unsigned long long desc_a, unsigned long long desc_b, int scale_d)\n{{\n  \
         asm volatile(\n    \"{{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %{scale}, 0;\\n\\t\"\n    \
         \"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{t}.{t} \"\n    \
         \"{{{regs}}}, \"\n    \
         \"%{a}, %{b}, p, 1, 1{immediates};\\n\\t}}\"\n    \
         : {outputs}\n    \
         : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d){imm_inputs});\n}}\n",
        k = input.k()
    )
}
