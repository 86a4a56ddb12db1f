//! The bytes of a global's constant initializer, under some [`LayoutRules`]: what a host that
//! stores the globals itself (Metal's, the CPU executor's) starts them with.
//!
//! One evaluator for every such host: it walks the initializer (literals, constructors,
//! conversions, negation), places each scalar it gives at the offset the rules give the
//! corresponding leaf of the global's type, and zeroes the padding. The scalars themselves
//! (how a literal is stored, how C converts and negates) are the host's: [`ConstantScalars`].

use super::LayoutRules;
use crate::error::{Error, Result};
use crate::ir::{Builtin, Expr, ExprKind, Global, Literal, StructDef};
use crate::span::Span;
use crate::types::{ScalarType, Type};

/// A host's arithmetic on the scalars of constant initializers. Each value is the bits of one
/// scalar (`bool`, number, pointer or handle) as the host holds it; its low bytes,
/// little-endian, are the scalar's bytes in memory.
pub trait ConstantScalars {
    /// `lit` as a value of the scalar type `ty`; `None` when the host has no such constant.
    fn literal(&self, lit: Literal, ty: &Type) -> Option<u64>;

    /// C's conversion of `bits` from scalar type `from` to `to`; `None` (the default) when the
    /// host does not evaluate conversions.
    fn convert(&self, _from: &Type, _to: &Type, _bits: u64) -> Option<u64> {
        None
    }

    /// `-bits` in scalar type `ty`; `None` (the default) when the host does not evaluate
    /// negation.
    fn negate(&self, _ty: &Type, _bits: u64) -> Option<u64> {
        None
    }
}

/// The scalars of initializers as the checker folds them (`Global::init`: literals of the
/// global's scalar types, no conversion or negation left): integers wrap to their type as C
/// converts them, `half` and `bfloat16` round to nearest even; `fp8`, `fp4`, pointers and a
/// floating literal for an integer have no value.
#[derive(Clone, Copy, Debug, Default)]
pub struct FoldedConstants;

impl ConstantScalars for FoldedConstants {
    fn literal(&self, lit: Literal, ty: &Type) -> Option<u64> {
        let s = match (ty, lit) {
            (Type::Bool, Literal::Bool(b)) => return Some(u64::from(b)),
            (Type::Scalar(s), _) => *s,
            _ => return None,
        };
        let float = match lit {
            Literal::Float(x) => x,
            Literal::Int(i) => i as f64,
            Literal::Bool(b) => f64::from(u8::from(b)),
        };
        Some(match s {
            ScalarType::Float => u64::from((float as f32).to_bits()),
            ScalarType::Double => float.to_bits(),
            ScalarType::Half => u64::from(half::f16::from_f64(float).to_bits()),
            ScalarType::BFloat16 => u64::from(half::bf16::from_f64(float).to_bits()),
            ScalarType::Fp8 | ScalarType::Fp4 => return None,
            _ => match lit {
                // Two's complement, of which the scalar's size is stored: C's wrapping conversion.
                Literal::Int(i) => i as u64,
                Literal::Bool(b) => u64::from(b),
                // The checker folds conversions; a float left for an integer is another shape.
                Literal::Float(_) => return None,
            },
        })
    }
}

/// One scalar of a laid-out value: its type, and where its bytes go.
struct Leaf {
    ty: Type,
    offset: usize,
    size: usize,
}

fn shape_error(span: &Span) -> Error {
    Error::new(span, "an initializer whose shape differs from its type")
}

impl LayoutRules {
    /// The bytes of `global`'s initializer as a value of its type under these rules, padding
    /// zeroed, its scalars computed by `scalars`. The initializer's scalars, in order, fill the
    /// type's (a vector's components, a structure's fields depth first). An error, at the
    /// global or at the part of the initializer concerned, when the type has no layout under
    /// these rules, the initializer has another shape, or a part is not a constant `scalars`
    /// evaluates.
    pub fn constant_bytes(
        self,
        global: &Global,
        structs: &[StructDef],
        scalars: &impl ConstantScalars,
    ) -> Result<Vec<u8>> {
        let ty = &global.ty;
        let (size, _) = self.layout(ty, structs).ok_or_else(|| {
            Error::new(&global.span, format!("a value of type `{ty}` has no size"))
        })?;
        let places = self.leaves(ty, structs, &global.span)?;
        let mut values = Vec::new();
        self.constant_leaves(&global.init, structs, scalars, &mut values)?;
        if values.len() != places.len() {
            return Err(shape_error(&global.span));
        }
        let mut bytes = vec![0u8; size];
        for (leaf, bits) in places.iter().zip(values) {
            let at = leaf.offset;
            bytes
                .get_mut(at..at + leaf.size)
                .ok_or_else(|| shape_error(&global.span))?
                .copy_from_slice(&bits.to_le_bytes()[..leaf.size]);
        }
        Ok(bytes)
    }

    /// The scalars of `e`, in order.
    fn constant_leaves(
        self,
        e: &Expr,
        structs: &[StructDef],
        scalars: &impl ConstantScalars,
        out: &mut Vec<u64>,
    ) -> Result<()> {
        let not_constant = || Error::new(&e.span, "a global initializer that is not a constant");
        match &e.kind {
            ExprKind::Literal(lit) => {
                let bits = scalars
                    .literal(*lit, &e.ty)
                    .ok_or_else(|| Error::new(&e.span, format!("a `{}` literal", e.ty)))?;
                out.push(bits);
            }
            ExprKind::Construct(parts) => {
                for p in parts {
                    self.constant_leaves(p, structs, scalars, out)?;
                }
            }
            ExprKind::Cast { value, .. } => {
                let mut inner = Vec::new();
                self.constant_leaves(value, structs, scalars, &mut inner)?;
                let from = self.leaves(&value.ty, structs, &e.span)?;
                let to = self.leaves(&e.ty, structs, &e.span)?;
                let conversion = || Error::new(&e.span, "this constant conversion");
                if from.len() != inner.len() || from.len() != to.len() {
                    return Err(conversion());
                }
                for ((bits, f), t) in inner.into_iter().zip(from).zip(to) {
                    out.push(scalars.convert(&f.ty, &t.ty, bits).ok_or_else(conversion)?);
                }
            }
            ExprKind::Builtin {
                op: Builtin::Neg,
                args,
            } if args.len() == 1 => {
                let mut inner = Vec::new();
                self.constant_leaves(&args[0], structs, scalars, &mut inner)?;
                let leaves = self.leaves(&e.ty, structs, &e.span)?;
                for (bits, leaf) in inner.into_iter().zip(leaves) {
                    out.push(scalars.negate(&leaf.ty, bits).ok_or_else(not_constant)?);
                }
            }
            _ => return Err(not_constant()),
        }
        Ok(())
    }

    /// The scalars of a value of `ty` under these rules, in order; errors at `span`.
    fn leaves(self, ty: &Type, structs: &[StructDef], span: &Span) -> Result<Vec<Leaf>> {
        let mut out = Vec::new();
        self.push_leaves(ty, 0, structs, span, &mut out, structs.len())?;
        Ok(out)
    }

    /// [`LayoutRules::leaves`] of a value at `base`, through at most `depth` nested structures
    /// (a structure holds only earlier ones by value, so a deeper nesting is a malformed module).
    fn push_leaves(
        self,
        ty: &Type,
        base: usize,
        structs: &[StructDef],
        span: &Span,
        out: &mut Vec<Leaf>,
        depth: usize,
    ) -> Result<()> {
        match ty {
            Type::Void => {}
            // Components are contiguous under every rules.
            Type::Vector(v) => {
                let size = v.element().size();
                for i in 0..v.len() {
                    out.push(Leaf {
                        ty: Type::Scalar(v.element()),
                        offset: base + i * size,
                        size,
                    });
                }
            }
            Type::Struct(name) => {
                let def = structs
                    .iter()
                    .find(|s| *s.name == **name)
                    .ok_or_else(|| Error::new(span, format!("unknown structure `{name}`")))?;
                let layout = depth
                    .checked_sub(1)
                    .and_then(|_| self.struct_layout(def, structs))
                    .ok_or_else(|| {
                        Error::new(span, format!("a value of type `{ty}` has no size"))
                    })?;
                for (field, offset) in def.fields.iter().zip(&layout.offsets) {
                    self.push_leaves(&field.ty, base + offset, structs, span, out, depth - 1)?;
                }
            }
            // Opaque 48 bytes, as six 64-bit words.
            Type::CurandStateXorwow => {
                for i in 0..6 {
                    out.push(Leaf {
                        ty: Type::Scalar(ScalarType::UInt64),
                        offset: base + 8 * i,
                        size: 8,
                    });
                }
            }
            other => {
                let size = match other {
                    Type::Bool => 1,
                    Type::Scalar(s) => s.size(),
                    // Pointers and 64-bit texture and surface handles.
                    Type::Pointer(_) | Type::TextureObject | Type::SurfaceObject => 8,
                    _ => return Err(Error::new(span, format!("values of type `{other}`"))),
                };
                out.push(Leaf {
                    ty: other.clone(),
                    offset: base,
                    size,
                });
            }
        }
        Ok(())
    }
}
