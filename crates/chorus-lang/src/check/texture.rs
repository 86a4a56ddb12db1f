//! Texture and surface built-ins, whose element type is written in the call.
//!
//! A read names the type it returns first, as CUDA's templates do (`tex2D<float4>(t, x, y)`):
//!
//! | kernel text | CUDA C |
//! |---|---|
//! | `(tex1d-fetch T tex i)` | `tex1Dfetch<T>(tex, i)` |
//! | `(tex1d T tex x)`, `(tex2d T tex x y)`, `(tex3d T tex x y z)` | `tex1D<T>` … `tex3D<T>` |
//! | `(surf2d-read T surf x y [boundary])` | `surf2Dread<T>(surf, x, y, mode)` |
//! | `(surf2d-write value surf x y [boundary])` | `surf2Dwrite(value, surf, x, y, mode)` |
//!
//! `T` is one of [`ELEMENT_TYPES`](super::builtins::ELEMENT_TYPES). Surface `x` coordinates are in **bytes**, as in CUDA (element
//! `i` of a `float4` surface is at `x = 16 i`); `y` and `z` are rows and slices. `boundary` is
//! `:trap` (the default: an access outside faults), `:clamp` or `:zero`. A write's element type
//! is its value's.

use super::builtins::{self, ELEMENT_TYPES, Signature};
use super::expr::resolve_among;
use super::{FnCx, err};
use crate::error::Result;
use crate::form::Form;
use crate::ir::{Builtin, Expr, SurfaceBoundary};
use crate::types::Type;

/// The boundary mode a keyword names.
fn boundary(name: &str) -> Option<SurfaceBoundary> {
    SurfaceBoundary::ALL
        .into_iter()
        .find(|b| b.keyword() == name || b.keyword()[1..] == *name)
}

impl FnCx<'_> {
    /// A call of a texture or surface built-in.
    pub(super) fn texture_builtin(&mut self, head: &str, args: &[Form], f: &Form) -> Result<Expr> {
        let is_write = head.ends_with("-write");
        let is_surface = head.starts_with("surf");
        let mut rest = args;
        // A read names its element type first.
        let element = if is_write {
            None
        } else {
            let usage = if is_surface {
                format!("({head} float4 surface x-bytes y …)")
            } else {
                format!("({head} float4 texture x …)")
            };
            let Some((first, tail)) = rest.split_first() else {
                return err(
                    &f.span,
                    format!("`{head}` needs the element type it reads first: {usage}"),
                );
            };
            let ty = first
                .as_symbol()
                .and_then(|name| Type::parse(name, |_| false))
                .filter(|t| ELEMENT_TYPES.contains(t));
            let Some(ty) = ty else {
                return err(
                    &first.span,
                    format!(
                        "`{head}` needs the element type it reads first ({usage}), one of {}; got `{first}`",
                        ELEMENT_TYPES.map(|t| t.to_string()).join(", ")
                    ),
                );
            };
            rest = tail;
            Some(ty)
        };
        // A surface access may end with its boundary mode.
        let mut mode = SurfaceBoundary::Trap;
        if is_surface
            && let Some((last, init)) = rest.split_last()
            && let Some(name) = last.as_symbol()
            && name.starts_with(':')
        {
            let Some(b) = boundary(name) else {
                return err(
                    &last.span,
                    format!(
                        "`{head}`: unknown boundary mode `{name}`; expected :trap, :clamp or :zero"
                    ),
                );
            };
            mode = b;
            rest = init;
        }
        let mut exprs = Vec::with_capacity(rest.len());
        for arg in rest {
            let e = self.expr(arg)?;
            if e.ty == Type::Void {
                return err(&arg.span, format!("`{arg}` returns no value"));
            }
            exprs.push(e);
        }
        // A write's value must have an element type itself: an implicit conversion would pick
        // the element size, which the surface's format decides.
        if is_write
            && let Some(value) = exprs.first()
            && !ELEMENT_TYPES.contains(&value.ty)
        {
            return err(
                &value.span,
                format!(
                    "`{head}` writes one of {}; got {} (convert it first)",
                    ELEMENT_TYPES.map(|t| t.to_string()).join(", "),
                    super::convert::with_article(&value.ty)
                ),
            );
        }
        let candidates: Vec<&Signature> = builtins::signatures(head)
            .iter()
            .filter(|s| element.as_ref().is_none_or(|t| s.result == *t))
            .filter(|s| match s.op {
                Builtin::SurfRead(_, b) | Builtin::SurfWrite(_, b) => b == mode,
                _ => true,
            })
            .collect();
        resolve_among(head, candidates, exprs, &f.span)
    }
}
