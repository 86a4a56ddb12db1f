//! CUDA C for the warp-level tensor-core operations: one `static __device__` helper per
//! operation used, wrapping inline PTX (`asm volatile`, as CUTLASS's `mma_sm80.h`,
//! `ldmatrix` and `cp_async` wrappers do). Fragments are CUDA's vector types (`uint4`, `uint2`,
//! `float4`, `int4`); each component is one 32-bit register of the instruction.

use crate::ir::tensor::{MmaInput, MmaKind, MmaOperand, TensorOp, ldmatrix_type};
use crate::types::Type;
use std::fmt::Write;

/// The helper's name (`chorus_mma_m16n8k16_bf16`, `chorus_ldmatrix_x4_trans`,
/// `chorus_cp_async_cg_16`, `chorus_cp_async_wait_2`).
pub(super) fn helper_name(op: TensorOp) -> String {
    match op {
        TensorOp::Mma(k) => format!("chorus_mma_{}_{}", k.shape.name(), k.input.name()),
        TensorOp::LdMatrix { count, trans } => format!(
            "chorus_ldmatrix_x{count}{}",
            if trans { "_trans" } else { "" }
        ),
        TensorOp::CpAsync { bytes, global_only } => format!(
            "chorus_cp_async_{}_{bytes}",
            if global_only { "cg" } else { "ca" }
        ),
        TensorOp::CpAsyncCommit => "chorus_cp_async_commit".into(),
        TensorOp::CpAsyncWait(n) => format!("chorus_cp_async_wait_{n}"),
        TensorOp::CpAsyncWaitAll => "chorus_cp_async_wait_all".into(),
        TensorOp::Pack(format) => format!("chorus_pack_{}x2", format.name()),
    }
}

/// The 32-bit registers of a fragment variable of type `ty` (`a.x`, `a.y` …; `a` for a
/// scalar).
fn registers(var: &str, ty: &Type) -> Vec<String> {
    match ty {
        Type::Vector(v) => v
            .components()
            .iter()
            .map(|c| format!("{var}.{c}"))
            .collect(),
        _ => vec![var.to_string()],
    }
}

/// The CUDA C type of a fragment.
fn c_type(ty: &Type) -> String {
    match ty {
        Type::Vector(v) => v.name().to_string(),
        _ => "unsigned int".into(),
    }
}

/// `{%0,%1,%2,%3}` for registers `first..first + n`.
fn operand_list(first: usize, n: usize) -> String {
    let regs: Vec<String> = (first..first + n).map(|i| format!("%{i}")).collect();
    format!("{{{}}}", regs.join(","))
}

/// The CUDA C definition of the helper for `op`, named `name`, with `prefix` its qualifiers.
pub(super) fn cuda_definition(op: TensorOp, name: &str, prefix: &str) -> String {
    let mut out = String::new();
    match op {
        TensorOp::Mma(kind) => mma(&mut out, kind, name, prefix),
        TensorOp::LdMatrix { count, trans } => {
            let ty = ldmatrix_type(count);
            let regs = registers("r", &ty);
            let outs: Vec<String> = regs.iter().map(|r| format!("\"=r\"({r})")).collect();
            let _ = write!(
                out,
                "{prefix} {ty} {name}(const void* p)\n{{\n  {ty} r;\n  unsigned int a = (unsigned int)__cvta_generic_to_shared(p);\n  asm volatile(\"ldmatrix.sync.aligned.m8n8.x{count}{trans}.shared.b16 {list}, [%{n}];\\n\" : {outs} : \"r\"(a));\n  return r;\n}}\n",
                ty = c_type(&ty),
                trans = if trans { ".trans" } else { "" },
                list = operand_list(0, regs.len()),
                n = regs.len(),
                outs = outs.join(", "),
            );
        }
        TensorOp::CpAsync { bytes, global_only } => {
            let _ = write!(
                out,
                "{prefix} void {name}(void* dst, const void* src)\n{{\n  unsigned int d = (unsigned int)__cvta_generic_to_shared(dst);\n  asm volatile(\"cp.async.{mode}.shared.global [%0], [%1], {bytes};\\n\" :: \"r\"(d), \"l\"(__cvta_generic_to_global(src)) : \"memory\");\n}}\n",
                mode = if global_only { "cg" } else { "ca" },
            );
        }
        // PTX puts the conversion of its first source in the upper half: hi first.
        TensorOp::Pack(format) => {
            let _ = write!(
                out,
                "{prefix} unsigned int {name}(float lo, float hi)\n{{\n  unsigned int d;\n  asm(\"cvt.rn.{f}x2.f32 %0, %1, %2;\\n\" : \"=r\"(d) : \"f\"(hi), \"f\"(lo));\n  return d;\n}}\n",
                f = format.name(),
            );
        }
        TensorOp::CpAsyncCommit | TensorOp::CpAsyncWait(_) | TensorOp::CpAsyncWaitAll => {
            let instruction = match op {
                TensorOp::CpAsyncCommit => "cp.async.commit_group".to_string(),
                TensorOp::CpAsyncWait(n) => format!("cp.async.wait_group {n}"),
                _ => "cp.async.wait_all".to_string(),
            };
            let _ = write!(
                out,
                "{prefix} void {name}()\n{{\n  asm volatile(\"{instruction};\\n\" ::: \"memory\");\n}}\n"
            );
        }
    }
    out
}

/// `D = A·B + C` through `mma.sync`.
fn mma(out: &mut String, kind: MmaKind, name: &str, prefix: &str) {
    let (a_ty, b_ty, c_ty) = (
        kind.fragment_type(MmaOperand::A),
        kind.fragment_type(MmaOperand::B),
        kind.fragment_type(MmaOperand::C),
    );
    let (a, b, c, d) = (
        registers("a", &a_ty),
        registers("b", &b_ty),
        registers("c", &c_ty),
        registers("d", &c_ty),
    );
    let acc = if kind.input.is_integer() { "r" } else { "f" };
    // tf32 operands are floats whose bits the instruction reads.
    let input = |r: &String| {
        if kind.input == MmaInput::Tf32 {
            format!("\"r\"(__float_as_uint({r}))")
        } else {
            format!("\"r\"({r})")
        }
    };
    let outs: Vec<String> = d.iter().map(|r| format!("\"={acc}\"({r})")).collect();
    let mut ins: Vec<String> = a.iter().chain(&b).map(input).collect();
    ins.extend(c.iter().map(|r| format!("\"{acc}\"({r})")));
    let lists = [
        operand_list(0, d.len()),
        operand_list(d.len(), a.len()),
        operand_list(d.len() + a.len(), b.len()),
        operand_list(d.len() + a.len() + b.len(), c.len()),
    ];
    let _ = write!(
        out,
        "{prefix} {ct} {name}({at} a, {bt} b, {ct} c)\n{{\n  {ct} d;\n  asm volatile(\"{ptx} {lists};\\n\"\n      : {outs}\n      : {ins});\n  return d;\n}}\n",
        ct = c_type(&c_ty),
        at = c_type(&a_ty),
        bt = c_type(&b_ty),
        ptx = kind.ptx(),
        lists = lists.join(", "),
        outs = outs.join(", "),
        ins = ins.join(", "),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::tensor::MmaShape;

    #[test]
    fn mma_helpers_bind_every_register() {
        let kind = MmaKind::new(MmaShape::M16N8K16, MmaInput::Bf16);
        let text = cuda_definition(TensorOp::Mma(kind), "chorus_mma_m16n8k16_bf16", "static");
        assert!(text.contains("float4 chorus_mma_m16n8k16_bf16(uint4 a, uint2 b, float4 c)"));
        assert!(text.contains(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
        ));
        assert!(text.contains("\"=f\"(d.w)") && text.contains("\"r\"(b.y)"));
        let s8 = MmaKind::new(MmaShape::M16N8K32, MmaInput::S8);
        let text = cuda_definition(TensorOp::Mma(s8), "m", "static");
        assert!(text.contains("int4 m(uint4 a, uint2 b, int4 c)") && text.contains("\"=r\"(d.x)"));
        let k8 = MmaKind::new(MmaShape::M16N8K8, MmaInput::F16);
        let text = cuda_definition(TensorOp::Mma(k8), "m", "static");
        assert!(text.contains("(uint2 a, unsigned int b, float4 c)") && text.contains("{%6}"));
    }

    #[test]
    fn copies_and_loads() {
        let ld = TensorOp::LdMatrix {
            count: 2,
            trans: true,
        };
        assert_eq!(helper_name(ld), "chorus_ldmatrix_x2_trans");
        assert!(
            cuda_definition(ld, "l", "static")
                .contains("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];")
        );
        let cp = TensorOp::CpAsync {
            bytes: 16,
            global_only: true,
        };
        assert!(
            cuda_definition(cp, "c", "static")
                .contains("cp.async.cg.shared.global [%0], [%1], 16;")
        );
        assert!(
            cuda_definition(TensorOp::CpAsyncWait(2), "w", "static")
                .contains("cp.async.wait_group 2;")
        );
    }
}
