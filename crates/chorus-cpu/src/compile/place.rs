//! Lowering of places: locals, globals, array elements and fields that can be read, written or addressed.

use super::*;

impl FnCompiler<'_> {
    pub(super) fn is_place(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Local(id) => matches!(
                self.homes.get(id.index()),
                Some(Home::Regs(_) | Home::Memory(_) | Home::SharedScalar(_))
            ),
            ExprKind::Global(_) => true,
            ExprKind::Aref { base, indices } => !self.is_partial_shared_aref(base, indices),
            ExprKind::Field { base, .. } => self.is_place(base),
            _ => false,
        }
    }

    pub(super) fn is_partial_shared_aref(&self, base: &Expr, indices: &[Expr]) -> bool {
        if let ExprKind::Local(id) = base.kind
            && let Some(Home::SharedArray { sizes, .. }) = self.homes.get(id.index())
        {
            return indices.len() < sizes.len();
        }
        false
    }

    pub(super) fn global_pointer(&mut self, id: ir::GlobalId) -> Result<Reg> {
        if let Some(&Some(slot)) = self.shared_globals.get(id.index()) {
            if !self.shared_slots.contains(&slot) {
                self.shared_slots.push(slot);
            }
            return Ok(self.constant(encode(STATIC_SHARED_BASE + slot, 0)));
        }
        let alloc = *self
            .global_ids
            .get(id.index())
            .ok_or_else(|| unsupported(&self.span, format!("global #{} is not defined", id.0)))?;
        Ok(self.constant(encode(alloc, 0)))
    }

    pub(super) fn place(&mut self, e: &Expr) -> Result<Place> {
        match &e.kind {
            ExprKind::Local(id) => match self.homes.get(id.index()).cloned() {
                Some(Home::Regs(r)) => Ok(Place::Regs(r)),
                Some(Home::Memory(offset)) => {
                    let ptr = self.alloc(1);
                    self.emit(Op::LocalAddr { dst: ptr, offset });
                    Ok(Place::Mem { ptr, offset: 0 })
                }
                Some(Home::SharedScalar(slot)) => {
                    let ptr = self.constant(encode(STATIC_SHARED_BASE + slot, 0));
                    Ok(Place::Mem { ptr, offset: 0 })
                }
                Some(Home::Unset) | None => Err(unsupported(
                    &e.span,
                    "a variable used before its declaration",
                )),
                Some(_) => Err(unsupported(
                    &e.span,
                    "assigning to a shared-memory array variable",
                )),
            },
            ExprKind::Global(g) => {
                let ptr = self.global_pointer(*g)?;
                Ok(Place::Mem { ptr, offset: 0 })
            }
            ExprKind::Aref { base, indices } => {
                if self.is_partial_shared_aref(base, indices) {
                    return Err(unsupported(&e.span, "assigning to a row of a shared array"));
                }
                let ptr = self.aref_address(base, indices)?;
                Ok(Place::Mem { ptr, offset: 0 })
            }
            ExprKind::Field { base, index } => {
                let (leaf, byte) = self.field_position(&base.ty, *index, &e.span)?;
                Ok(match self.place(base)? {
                    Place::Regs(r) => Place::Regs(r + leaf),
                    Place::Mem { ptr, offset } => Place::Mem {
                        ptr,
                        offset: offset + byte,
                    },
                })
            }
            _ => Err(unsupported(
                &e.span,
                "a place that is not a variable, global, aref or field",
            )),
        }
    }

    /// (index of the first leaf, byte offset) of component or field `index` of `ty`.
    pub(super) fn field_position(
        &self,
        ty: &Type,
        index: usize,
        span: &Span,
    ) -> Result<(u32, u32)> {
        match ty {
            Type::Vector(v) if index < v.len() => {
                Ok((index as u32, (index * v.element().size()) as u32))
            }
            Type::Struct(name) => {
                let def = self
                    .module
                    .struct_def(name)
                    .ok_or_else(|| unsupported(span, format!("unknown structure `{name}`")))?;
                let field = def
                    .fields
                    .get(index)
                    .ok_or_else(|| unsupported(span, format!("field #{index} of `{name}`")))?;
                let mut leaf = 0;
                for f in &def.fields[..index] {
                    leaf += leaves(self.module, &f.ty, span)?.len() as u32;
                }
                Ok((leaf, field.offset as u32))
            }
            other => Err(unsupported(
                span,
                format!("component #{index} of `{other}`"),
            )),
        }
    }

    /// The address `base[i][j]…` (a row address when a shared array is indexed partially).
    pub(super) fn aref_address(&mut self, base: &Expr, indices: &[Expr]) -> Result<Reg> {
        if let ExprKind::Local(id) = base.kind
            && let Some(Home::SharedArray {
                slot,
                sizes,
                elem_size,
            }) = self.homes.get(id.index()).cloned()
        {
            if indices.len() > sizes.len() {
                return Err(unsupported(
                    &base.span,
                    "more indices than the shared array has dimensions",
                ));
            }
            let mut p = self.constant(encode(STATIC_SHARED_BASE + slot, 0));
            for (k, idx) in indices.iter().enumerate() {
                let stride = elem_size * sizes[k + 1..].iter().product::<u64>();
                p = self.ptr_index(p, idx, stride as i64)?;
            }
            return Ok(p);
        }
        let mut p = self.expr(base)?;
        let mut ty = base.ty.clone();
        for (k, idx) in indices.iter().enumerate() {
            let elem = ty.pointee().cloned().ok_or_else(|| {
                unsupported(
                    &base.span,
                    format!("indexing a `{ty}`, which is not a pointer"),
                )
            })?;
            let stride = size_of_type(self.module, &elem, &base.span)?;
            let q = self.ptr_index(p, idx, stride as i64)?;
            if k + 1 < indices.len() {
                let r = self.alloc(1);
                self.emit(Op::Load {
                    dst: r,
                    addr: q,
                    kind: Kind::Ptr,
                    offset: 0,
                });
                p = r;
            } else {
                p = q;
            }
            ty = elem;
        }
        Ok(p)
    }

    pub(super) fn read_place(&mut self, place: Place, ty: &Type) -> Result<Reg> {
        match place {
            Place::Regs(r) => Ok(r),
            Place::Mem { ptr, offset } => {
                let l = self.leaves(ty)?;
                let dst = self.alloc(l.len() as u32);
                for (i, leaf) in l.iter().enumerate() {
                    self.emit(Op::Load {
                        dst: dst + i as u32,
                        addr: ptr,
                        kind: leaf.kind,
                        offset: offset + leaf.offset,
                    });
                }
                Ok(dst)
            }
        }
    }

    pub(super) fn write_place(&mut self, place: Place, v: Reg, ty: &Type) -> Result<()> {
        let l = self.leaves(ty)?;
        for (i, leaf) in l.iter().enumerate() {
            let src = v + i as u32;
            match place {
                Place::Regs(r) => self.emit(Op::CopyMasked {
                    dst: r + i as u32,
                    src,
                }),
                Place::Mem { ptr, offset } => self.emit(Op::Store {
                    addr: ptr,
                    src,
                    kind: leaf.kind,
                    offset: offset + leaf.offset,
                }),
            };
        }
        Ok(())
    }
}
