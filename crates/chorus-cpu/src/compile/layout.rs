//! Layouts: the scalar leaves of a type, parameter registers, sizes, literals and constant initializers.

use super::*;
use chorus_lang::target::{ConstantScalars, LayoutRules};

/// The leaves of `ty`, in register order.
pub(crate) fn leaves(module: &ir::Module, ty: &Type, span: &Span) -> Result<Vec<Leaf>> {
    let mut out = Vec::new();
    push_leaves(module, ty, 0, span, &mut out)?;
    Ok(out)
}

pub(super) fn push_leaves(
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

/// Size in bytes of `ty` in `module`.
pub(super) fn size_of_type(module: &ir::Module, ty: &Type, span: &Span) -> Result<u64> {
    module
        .layout(ty)
        .map(|(size, _)| size as u64)
        .ok_or_else(|| unsupported(span, format!("a value of type `{ty}` has no size")))
}

/// The register index of each parameter's first leaf; the result's leaves come first.
/// The number of result leaves, and each parameter's first register and leaves.
pub(super) type ParamLayout = (u32, Vec<(Reg, Vec<Leaf>)>);

pub(super) fn param_layout(module: &ir::Module, f: &ir::Function) -> Result<ParamLayout> {
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

pub(super) fn local_of<'f>(
    f: &'f ir::Function,
    id: ir::LocalId,
    span: &Span,
) -> Result<&'f ir::Local> {
    f.local(id).ok_or_else(|| {
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

/// The CPU's scalars in constant initializers: its literal bits and its C conversions and
/// negation, the same the kernels compute with.
struct CpuConstants;

impl ConstantScalars for CpuConstants {
    fn literal(&self, lit: Literal, ty: &Type) -> Option<u64> {
        Kind::of(ty).map(|k| literal_bits(lit, k))
    }

    fn convert(&self, from: &Type, to: &Type, bits: u64) -> Option<u64> {
        Some(crate::value::convert(Kind::of(from)?, Kind::of(to)?, bits))
    }

    fn negate(&self, ty: &Type, bits: u64) -> Option<u64> {
        Some(crate::scalar::unary(UnOp::Neg, Kind::of(ty)?, bits))
    }
}

/// Evaluates a global's constant initializer to its bytes (C's layout).
pub(crate) fn constant_bytes(module: &ir::Module, global: &ir::Global) -> Result<Vec<u8>> {
    LayoutRules::C
        .constant_bytes(global, &module.structs, &CpuConstants)
        .map_err(|e| unsupported(&e.span, e.message))
}
