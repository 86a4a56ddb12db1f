//! Lowering of expressions: operators, casts, selections, calls and pointer arithmetic.

use super::*;

impl FnCompiler<'_> {
    pub(super) fn expr(&mut self, e: &Expr) -> Result<Reg> {
        self.span = e.span.clone();
        match &e.kind {
            ExprKind::Literal(lit) => {
                let kind = self.kind(&e.ty)?;
                Ok(self.constant(literal_bits(*lit, kind)))
            }
            ExprKind::Local(id) => match self.homes.get(id.index()).cloned() {
                Some(Home::SharedArray { slot, sizes, .. }) => {
                    if sizes.len() > 1 {
                        return Err(unsupported(
                            &e.span,
                            "a multi-dimensional shared array used other than through `aref`",
                        ));
                    }
                    Ok(self.constant(encode(STATIC_SHARED_BASE + slot, 0)))
                }
                Some(Home::Dynamic) => Ok(self.constant(encode(DYNAMIC_SHARED_ID, 0))),
                _ => {
                    let p = self.place(e)?;
                    self.read_place(p, &e.ty)
                }
            },
            ExprKind::Global(_) => {
                let p = self.place(e)?;
                self.read_place(p, &e.ty)
            }
            ExprKind::Index(var) => self.index(*var, &e.span),
            ExprKind::Aref { base, indices } => {
                if self.is_partial_shared_aref(base, indices) {
                    return self.aref_address(base, indices);
                }
                let p = self.place(e)?;
                self.read_place(p, &e.ty)
            }
            ExprKind::Field { base, index } => {
                if self.is_place(e) {
                    let p = self.place(e)?;
                    return self.read_place(p, &e.ty);
                }
                let (leaf, _) = self.field_position(&base.ty, *index, &e.span)?;
                Ok(self.expr(base)? + leaf)
            }
            ExprKind::Builtin { op, args } => self.builtin(e, *op, args),
            ExprKind::Call { function, args } => self.call(e, *function, args),
            ExprKind::Cast { value, .. } => self.cast(value, &e.ty, &e.span),
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => self.select(e, cond, then, otherwise),
            ExprKind::AddressOf(place) => self.address_of(place),
            ExprKind::Construct(parts) => {
                let n = self.leaves(&e.ty)?.len() as u32;
                let dst = self.alloc(n);
                let mut at = dst;
                for part in parts {
                    let v = self.expr(part)?;
                    let m = self.leaves(&part.ty)?.len() as u32;
                    for i in 0..m {
                        self.emit(Op::Copy {
                            dst: at + i,
                            src: v + i,
                        });
                    }
                    at += m;
                }
                if at != dst + n {
                    return Err(unsupported(
                        &e.span,
                        format!("a `{}` built from {} values", e.ty, at - dst),
                    ));
                }
                Ok(dst)
            }
        }
    }

    pub(super) fn index(&mut self, var: IndexVar, span: &Span) -> Result<Reg> {
        let axis = |a: ir::Axis| match a {
            ir::Axis::X => 0,
            ir::Axis::Y => 1,
            ir::Axis::Z => 2,
        };
        let source = match var {
            IndexVar::ThreadIdx(a) => IndexSource::ThreadIdx(axis(a)),
            IndexVar::BlockIdx(a) => IndexSource::BlockIdx(axis(a)),
            IndexVar::BlockDim(a) => IndexSource::BlockDim(axis(a)),
            IndexVar::GridDim(a) => IndexSource::GridDim(axis(a)),
            IndexVar::LaneId => IndexSource::LaneId,
            IndexVar::WarpSize => return Ok(self.constant(self.prog.warp_width.into())),
            IndexVar::ClusterDim(_) | IndexVar::ClusterIdx(_) | IndexVar::BlockInCluster(_) => {
                return Err(unsupported(
                    span,
                    "thread-block cluster indexes (sm_90 clusters)",
                ));
            }
        };
        let dst = self.alloc(1);
        self.emit(Op::Index { dst, source });
        Ok(dst)
    }

    pub(super) fn address_of(&mut self, place: &Expr) -> Result<Reg> {
        if let ExprKind::Local(id) = place.kind
            && let Some(Home::SharedArray { slot, .. }) = self.homes.get(id.index())
        {
            let slot = *slot;
            return Ok(self.constant(encode(STATIC_SHARED_BASE + slot, 0)));
        }
        match self.place(place)? {
            Place::Mem { ptr, offset: 0 } => Ok(ptr),
            Place::Mem { ptr, offset } => {
                let dst = self.alloc(1);
                self.emit(Op::PtrAdd {
                    dst,
                    base: ptr,
                    bytes: offset as i64,
                });
                Ok(dst)
            }
            Place::Regs(_) => Err(unsupported(
                &place.span,
                "the address of a value that is not in memory",
            )),
        }
    }

    pub(super) fn cast(&mut self, value: &Expr, to: &Type, span: &Span) -> Result<Reg> {
        let v = self.expr(value)?;
        self.span = span.clone();
        if &value.ty == to {
            return Ok(v);
        }
        let from_leaves = self.leaves(&value.ty)?;
        let to_leaves = self.leaves(to)?;
        let componentwise = match (&value.ty, to) {
            (Type::Vector(a), Type::Vector(b)) => a.len() == b.len(),
            (Type::Struct(_) | Type::Vector(_), _) | (_, Type::Struct(_) | Type::Vector(_)) => {
                false
            }
            _ => from_leaves.len() == 1 && to_leaves.len() == 1,
        };
        if !componentwise {
            return Err(unsupported(
                span,
                format!("a conversion from `{}` to `{to}`", value.ty),
            ));
        }
        let dst = self.alloc(to_leaves.len() as u32);
        for (i, (f, t)) in from_leaves.iter().zip(&to_leaves).enumerate() {
            let i = i as u32;
            if f.kind == t.kind {
                self.emit(Op::Copy {
                    dst: dst + i,
                    src: v + i,
                });
            } else {
                self.emit(Op::Convert {
                    from: f.kind,
                    to: t.kind,
                    dst: dst + i,
                    src: v + i,
                });
            }
        }
        Ok(dst)
    }

    /// True when evaluating `e` for lanes that do not need it is harmless (see [`is_pure`]).
    pub(super) fn is_pure(&self, e: &Expr) -> bool {
        is_pure(e, &|id| {
            matches!(
                self.homes.get(id.index()),
                Some(Home::Regs(_) | Home::SharedArray { .. } | Home::Dynamic)
            )
        })
    }

    pub(super) fn select(
        &mut self,
        e: &Expr,
        cond: &Expr,
        then: &Expr,
        otherwise: &Expr,
    ) -> Result<Reg> {
        let n = self.leaves(&e.ty)?.len() as u32;
        if self.is_pure(then) && self.is_pure(otherwise) {
            let c = self.expr(cond)?;
            let a = self.expr(then)?;
            let b = self.expr(otherwise)?;
            let dst = self.alloc(n);
            for i in 0..n {
                self.emit(Op::Select {
                    dst: dst + i,
                    cond: c,
                    a: a + i,
                    b: b + i,
                });
            }
            return Ok(dst);
        }
        let dst = self.alloc(n);
        let c = self.expr(cond)?;
        let slot = self.alloc_masks(2);
        let begin = self.emit(Op::IfBegin {
            cond: c,
            slot,
            else_target: 0,
        });
        let a = self.expr(then)?;
        for i in 0..n {
            self.emit(Op::CopyMasked {
                dst: dst + i,
                src: a + i,
            });
        }
        let el = self.emit(Op::Else {
            slot,
            end_target: 0,
        });
        self.patch(begin, el);
        let b = self.expr(otherwise)?;
        for i in 0..n {
            self.emit(Op::CopyMasked {
                dst: dst + i,
                src: b + i,
            });
        }
        let end = self.emit(Op::EndIf { slot });
        self.patch(el, end);
        self.next_mask = slot;
        Ok(dst)
    }

    pub(super) fn call(
        &mut self,
        e: &Expr,
        function: ir::FunctionId,
        args: &[Expr],
    ) -> Result<Reg> {
        let callee = self.module.function_by_id(function).ok_or_else(|| {
            unsupported(&e.span, format!("function #{} is not defined", function.0))
        })?;
        if callee.kind != ir::FunctionKind::Device {
            return Err(unsupported(
                &e.span,
                format!("calling the kernel `{}` from device code", callee.name),
            ));
        }
        let (ret_leaves, params) = param_layout(self.module, callee)?;
        if params.len() != args.len() {
            return Err(unsupported(
                &e.span,
                format!("a call of `{}` with {} arguments", callee.name, args.len()),
            ));
        }
        let mut copies = Vec::new();
        for (arg, (param_reg, param_leaves)) in args.iter().zip(&params) {
            let v = self.expr(arg)?;
            for i in 0..param_leaves.len() as u32 {
                copies.push((v + i, param_reg + i));
            }
        }
        let dest = self.alloc(ret_leaves);
        let index = self.prog.calls.len() as u32;
        self.prog.calls.push(CallSite {
            function: function.0,
            args: copies,
            dest: (ret_leaves > 0).then_some((dest, ret_leaves)),
        });
        self.span = e.span.clone();
        self.emit(Op::Call { index });
        self.callees.push(function.0);
        Ok(dest)
    }

    pub(super) fn binary_into(&mut self, op: BinOp, kind: Kind, a: Reg, b: Reg) -> Reg {
        let dst = self.alloc(1);
        self.emit(Op::Binary {
            op,
            kind,
            dst,
            a,
            b,
        });
        dst
    }

    /// A binary arithmetic built-in: scalars, vectors component-wise, vector·scalar scaling,
    /// pointer ± integer.
    pub(super) fn arith2(&mut self, e: &Expr, op: BinOp, args: &[Expr]) -> Result<Reg> {
        let [x, y] = args else {
            return Err(unsupported(
                &e.span,
                format!("{op:?} with {} arguments", args.len()),
            ));
        };
        if matches!(op, BinOp::Add | BinOp::Sub)
            && (x.ty.pointee().is_some() || y.ty.pointee().is_some())
        {
            return self.pointer_arith(e, op, x, y);
        }
        let a = self.expr(x)?;
        let b = self.expr(y)?;
        self.span = e.span.clone();
        if let Type::Vector(v) = e.ty {
            let kind = Kind::of_scalar(v.element());
            let dst = self.alloc(v.len() as u32);
            for i in 0..v.len() as u32 {
                let ai = if matches!(x.ty, Type::Vector(_)) {
                    a + i
                } else {
                    a
                };
                let bi = if matches!(y.ty, Type::Vector(_)) {
                    b + i
                } else {
                    b
                };
                self.emit(Op::Binary {
                    op,
                    kind,
                    dst: dst + i,
                    a: ai,
                    b: bi,
                });
            }
            return Ok(dst);
        }
        let kind = self.kind(&x.ty)?;
        let r = self.binary_into(op, kind, a, b);
        self.convert_result(r, kind, &e.ty)
    }

    pub(super) fn pointer_arith(&mut self, e: &Expr, op: BinOp, x: &Expr, y: &Expr) -> Result<Reg> {
        let (ptr, int, negate) = match (x.ty.pointee(), y.ty.pointee(), op) {
            (Some(_), None, BinOp::Add) => (x, y, false),
            (Some(_), None, BinOp::Sub) => (x, y, true),
            (None, Some(_), BinOp::Add) => (y, x, false),
            _ => return Err(unsupported(&e.span, "this pointer arithmetic")),
        };
        let elem = ptr.ty.pointee().cloned().unwrap_or(Type::Void);
        let size = size_of_type(self.module, &elem, &e.span)? as i64;
        let p = self.expr(ptr)?;
        self.ptr_index(p, int, if negate { -size } else { size })
    }

    /// `base + index * stride` bytes, in a new register (`index` evaluated here).
    pub(super) fn ptr_index(&mut self, base: Reg, index: &Expr, stride: i64) -> Result<Reg, Error> {
        let i = self.expr(index)?;
        let index_kind = self.kind(&index.ty)?;
        let dst = self.alloc(1);
        self.emit(Op::PtrIndex {
            dst,
            base,
            index: i,
            index_kind,
            stride,
        });
        Ok(dst)
    }

    pub(super) fn arith1(&mut self, e: &Expr, op: UnOp, args: &[Expr]) -> Result<Reg> {
        let [x] = args else {
            return Err(unsupported(
                &e.span,
                format!("{op:?} with {} arguments", args.len()),
            ));
        };
        let a = self.expr(x)?;
        self.span = e.span.clone();
        if let Type::Vector(v) = x.ty {
            let kind = Kind::of_scalar(v.element());
            let dst = self.alloc(v.len() as u32);
            for i in 0..v.len() as u32 {
                self.emit(Op::Unary {
                    op,
                    kind,
                    dst: dst + i,
                    a: a + i,
                });
            }
            return Ok(dst);
        }
        let kind = self.kind(&x.ty)?;
        let dst = self.alloc(1);
        self.emit(Op::Unary { op, kind, dst, a });
        let produced = match op {
            UnOp::DoubleToIntRn | UnOp::Clz | UnOp::Popc | UnOp::Ffs => Kind::I32,
            UnOp::Not => Kind::Bool,
            _ => kind,
        };
        self.convert_result(dst, produced, &e.ty)
    }

    /// Converts a scalar computed as `produced` to the expression's type when they differ.
    pub(super) fn convert_result(&mut self, r: Reg, produced: Kind, ty: &Type) -> Result<Reg> {
        let want = self.kind(ty)?;
        if want == produced {
            return Ok(r);
        }
        let dst = self.alloc(1);
        self.emit(Op::Convert {
            from: produced,
            to: want,
            dst,
            src: r,
        });
        Ok(dst)
    }

    /// `and`/`or` over any number of `bool`s: each further operand is evaluated only in lanes
    /// whose result is still undecided (a pure operand is simply combined).
    pub(super) fn short_circuit(&mut self, e: &Expr, is_and: bool, args: &[Expr]) -> Result<Reg> {
        let Some((first, rest)) = args.split_first() else {
            return Ok(self.constant(is_and as u64));
        };
        let op = if is_and { BinOp::BitAnd } else { BinOp::BitOr };
        let dst = self.alloc(1);
        let a = self.expr(first)?;
        self.emit(Op::Copy { dst, src: a });
        for y in rest {
            if self.is_pure(y) {
                let b = self.expr(y)?;
                self.emit(Op::Binary {
                    op,
                    kind: Kind::Bool,
                    dst,
                    a: dst,
                    b,
                });
                continue;
            }
            self.span = e.span.clone();
            let cond = if is_and {
                dst
            } else {
                let n = self.alloc(1);
                self.emit(Op::Unary {
                    op: UnOp::Not,
                    kind: Kind::Bool,
                    dst: n,
                    a: dst,
                });
                n
            };
            let slot = self.alloc_masks(2);
            let begin = self.emit(Op::IfBegin {
                cond,
                slot,
                else_target: 0,
            });
            let b = self.expr(y)?;
            self.emit(Op::CopyMasked { dst, src: b });
            let end = self.emit(Op::EndIf { slot });
            self.patch(begin, end);
            self.next_mask = slot;
        }
        Ok(dst)
    }

    pub(super) fn args<const N: usize>(&mut self, e: &Expr, args: &[Expr]) -> Result<[Reg; N]> {
        if args.len() != N {
            return Err(unsupported(
                &e.span,
                format!(
                    "a built-in given {} arguments where {N} were expected",
                    args.len()
                ),
            ));
        }
        let mut out = [0; N];
        for (o, a) in out.iter_mut().zip(args) {
            *o = self.expr(a)?;
        }
        self.span = e.span.clone();
        Ok(out)
    }
}

/// True when evaluating `e` for lanes (or threads) that do not need it is harmless: no memory
/// access, no call, no side effect, nothing that can fault. `local` answers for a local, whose
/// home each compiler knows. The bytecode and the native compiler both ask it before they
/// compute both sides of a selection, or an operand of `and`/`or` unconditionally.
pub(crate) fn is_pure(e: &Expr, local: &impl Fn(ir::LocalId) -> bool) -> bool {
    let pure = |x: &Expr| is_pure(x, local);
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Index(_) => true,
        ExprKind::Local(id) => local(*id),
        ExprKind::Cast { value, .. } => pure(value),
        ExprKind::Field { base, .. } => pure(base),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => pure(cond) && pure(then) && pure(otherwise),
        ExprKind::Construct(parts) => parts.iter().all(pure),
        ExprKind::Builtin { op, args } => {
            // Integer division traps on 0; floating division does not.
            let integer_division = matches!(
                op,
                Builtin::Div | Builtin::Rem | Builtin::FloorMod | Builtin::Recip
            ) && !matches!(Kind::of(&e.ty), Some(k) if k.is_float());
            let safe_op = matches!(
                op,
                Builtin::Add
                    | Builtin::Sub
                    | Builtin::Mul
                    | Builtin::Div
                    | Builtin::Rem
                    | Builtin::Neg
                    | Builtin::Recip
                    | Builtin::Min
                    | Builtin::Max
                    | Builtin::Abs
                    | Builtin::Eq
                    | Builtin::Ne
                    | Builtin::Lt
                    | Builtin::Gt
                    | Builtin::Le
                    | Builtin::Ge
                    | Builtin::Not
                    | Builtin::And
                    | Builtin::Or
                    | Builtin::BitAnd
                    | Builtin::BitOr
                    | Builtin::BitXor
                    | Builtin::BitNot
                    | Builtin::Shl
                    | Builtin::Shr
                    | Builtin::Math(_)
                    | Builtin::Fma
                    | Builtin::Saturate
            );
            safe_op && !integer_division && args.iter().all(pure)
        }
        _ => false,
    }
}
