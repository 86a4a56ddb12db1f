//! Layouts: the scalar leaves of a type, parameter registers, sizes, literals and constant initializers.

use super::*;

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

pub(super) fn constant_leaves(module: &ir::Module, e: &Expr, out: &mut Vec<u64>) -> Result<()> {
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
