//! Lowering of built-in operations to their instructions.

use super::*;
use crate::texture::Component;
use chorus_lang::types::ScalarType;

impl FnCompiler<'_> {
    pub(super) fn builtin(&mut self, e: &Expr, op: Builtin, args: &[Expr]) -> Result<Reg> {
        let bin = |b| Some(b);
        let binop = match op {
            Builtin::Add => bin(BinOp::Add),
            Builtin::Sub => bin(BinOp::Sub),
            Builtin::Mul => bin(BinOp::Mul),
            Builtin::Div | Builtin::FastDivide => bin(BinOp::Div),
            Builtin::Rem => bin(BinOp::Rem),
            Builtin::FloorMod => bin(BinOp::FloorMod),
            Builtin::Min => bin(BinOp::Min),
            Builtin::Max => bin(BinOp::Max),
            Builtin::BitAnd => bin(BinOp::BitAnd),
            Builtin::BitOr => bin(BinOp::BitOr),
            Builtin::BitXor => bin(BinOp::BitXor),
            Builtin::Shl => bin(BinOp::Shl),
            Builtin::Shr => bin(BinOp::Shr),
            _ => None,
        };
        if let Some(b) = binop {
            return self.arith2(e, b, args);
        }
        let cmp = match op {
            Builtin::Eq => Some(BinOp::Eq),
            Builtin::Ne => Some(BinOp::Ne),
            Builtin::Lt => Some(BinOp::Lt),
            Builtin::Gt => Some(BinOp::Gt),
            Builtin::Le => Some(BinOp::Le),
            Builtin::Ge => Some(BinOp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            let kind = match args.first() {
                Some(a) => self.kind(&a.ty)?,
                None => return Err(unsupported(&e.span, "a comparison without arguments")),
            };
            let [a, b] = self.args(e, args)?;
            let r = self.binary_into(c, kind, a, b);
            return self.convert_result(r, Kind::Bool, &e.ty);
        }
        let un = match op {
            Builtin::Neg => Some(UnOp::Neg),
            Builtin::Not => Some(UnOp::Not),
            Builtin::BitNot => Some(UnOp::BitNot),
            Builtin::Abs => Some(UnOp::Abs),
            Builtin::Recip => Some(UnOp::Recip),
            Builtin::Saturate => Some(UnOp::Saturate),
            Builtin::DoubleToIntRn => Some(UnOp::DoubleToIntRn),
            Builtin::Clz => Some(UnOp::Clz),
            Builtin::Popc => Some(UnOp::Popc),
            Builtin::Brev => Some(UnOp::Brev),
            Builtin::Ffs => Some(UnOp::Ffs),
            _ => None,
        };
        if let Some(u) = un {
            return self.arith1(e, u, args);
        }
        match op {
            Builtin::And => self.short_circuit(e, true, args),
            Builtin::Or => self.short_circuit(e, false, args),
            Builtin::Math(f) => {
                let kind = match args.first() {
                    Some(a) => self.kind(&a.ty)?,
                    None => return Err(unsupported(&e.span, "a math function without arguments")),
                };
                if !kind.is_float() {
                    return Err(unsupported(&e.span, format!("`{f:?}` of an integer")));
                }
                let dst = self.alloc(1);
                if matches!(f, MathFn::Atan2 | MathFn::Pow | MathFn::Hypot) {
                    let [a, b] = self.args(e, args)?;
                    self.emit(Op::Math2 { f, kind, dst, a, b });
                } else {
                    let [a] = self.args(e, args)?;
                    self.emit(Op::Math1 { f, kind, dst, a });
                }
                self.convert_result(dst, kind, &e.ty)
            }
            Builtin::Fma => {
                let kind = self.kind(&e.ty)?;
                let [a, b, c] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::Fma { kind, dst, a, b, c });
                Ok(dst)
            }
            Builtin::Dot => {
                let Some(Type::Vector(v)) = args.first().map(|a| &a.ty) else {
                    return Err(unsupported(&e.span, "`dot` of non-vectors"));
                };
                let (n, kind) = (v.len() as u32, Kind::of_scalar(v.element()));
                let [a, b] = self.args(e, args)?;
                let mut acc = self.binary_into(BinOp::Mul, kind, a, b);
                for i in 1..n {
                    let t = self.binary_into(BinOp::Mul, kind, a + i, b + i);
                    acc = self.binary_into(BinOp::Add, kind, acc, t);
                }
                Ok(acc)
            }
            Builtin::SyncThreads => {
                self.emit(Op::SyncThreads);
                Ok(0)
            }
            Builtin::SyncWarp => {
                // Lanes of a warp run in lockstep here: nothing to wait for, but the op orders
                // `cp-async` completions between the warp's threads.
                for a in args {
                    self.expr(a)?;
                }
                self.emit(Op::SyncWarp);
                Ok(0)
            }
            Builtin::ThreadFence | Builtin::ThreadFenceBlock | Builtin::ThreadFenceSystem => {
                self.emit(Op::Fence);
                Ok(0)
            }
            Builtin::ShflSync
            | Builtin::ShflUpSync
            | Builtin::ShflDownSync
            | Builtin::ShflXorSync => {
                let mode = match op {
                    Builtin::ShflSync => ShflMode::Idx,
                    Builtin::ShflUpSync => ShflMode::Up,
                    Builtin::ShflDownSync => ShflMode::Down,
                    _ => ShflMode::Xor,
                };
                if !(3..=4).contains(&args.len()) {
                    return Err(unsupported(
                        &e.span,
                        "a shuffle with other than 3 or 4 arguments",
                    ));
                }
                let mask = self.expr(&args[0])?;
                let value = self.expr(&args[1])?;
                let lane = self.expr(&args[2])?;
                let width = match args.get(3) {
                    Some(w) => self.expr(w)?,
                    None => self.constant(self.prog.warp_width.into()),
                };
                self.span = e.span.clone();
                let n = self.leaves(&e.ty)?.len() as u32;
                let dst = self.alloc(n);
                for i in 0..n {
                    self.emit(Op::Shfl {
                        mode,
                        dst: dst + i,
                        value: value + i,
                        lane,
                        width,
                        mask,
                    });
                }
                Ok(dst)
            }
            Builtin::BallotSync | Builtin::AllSync | Builtin::AnySync => {
                let vote = match op {
                    Builtin::BallotSync => VoteOp::Ballot,
                    Builtin::AllSync => VoteOp::All,
                    _ => VoteOp::Any,
                };
                let [mask, pred] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::Vote {
                    op: vote,
                    dst,
                    mask,
                    pred,
                });
                Ok(dst)
            }
            Builtin::ActiveMask => {
                let dst = self.alloc(1);
                self.emit(Op::ActiveMask { dst });
                Ok(dst)
            }
            Builtin::MatchAnySync => {
                let [mask, value] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::MatchAny { dst, mask, value });
                Ok(dst)
            }
            Builtin::MatchAllSync => {
                let [mask, value, pred] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::MatchAll {
                    dst,
                    mask,
                    value,
                    pred,
                });
                Ok(dst)
            }
            Builtin::WarpReduce(rop) => {
                let kind = match args.get(1) {
                    Some(a) => self.kind(&a.ty)?,
                    None => return Err(unsupported(&e.span, "a warp reduction without a value")),
                };
                if !matches!(kind, Kind::I32 | Kind::U32) {
                    return Err(unsupported(
                        &e.span,
                        "a warp reduction of other than `int` or `uint`",
                    ));
                }
                let [mask, value] = self.args(e, args)?;
                let dst = self.alloc(1);
                self.emit(Op::Reduce {
                    op: rop,
                    kind,
                    dst,
                    mask,
                    value,
                });
                Ok(dst)
            }
            Builtin::Atomic(aop) => {
                let Some(pointee) = args.first().and_then(|a| a.ty.pointee()) else {
                    return Err(unsupported(
                        &e.span,
                        "an atomic whose first argument is not a pointer",
                    ));
                };
                let kind = self.kind(pointee)?;
                if !matches!(
                    kind,
                    Kind::I32
                        | Kind::U32
                        | Kind::I64
                        | Kind::U64
                        | Kind::F32
                        | Kind::F64
                        | Kind::F16
                        | Kind::BF16
                        | Kind::U16
                ) {
                    return Err(unsupported(&e.span, format!("atomics on `{pointee}`")));
                }
                let dst = self.alloc(1);
                let (addr, a, b) = match args.len() {
                    2 => {
                        let [addr, a] = self.args(e, args)?;
                        (addr, a, a)
                    }
                    3 => {
                        let [addr, a, b] = self.args(e, args)?;
                        (addr, a, b)
                    }
                    n => {
                        return Err(unsupported(
                            &e.span,
                            format!("an atomic with {n} arguments"),
                        ));
                    }
                };
                self.emit(Op::Atomic {
                    op: aop,
                    kind,
                    dst,
                    addr,
                    a,
                    b,
                });
                Ok(dst)
            }
            Builtin::ClusterRank | Builtin::ClusterBarrier | Builtin::ThreadFenceCluster => Err(
                unsupported(&e.span, "thread-block cluster operations (sm_90 clusters)"),
            ),
            Builtin::CurandInit => {
                for a in &args[..args.len().min(3)] {
                    if !self.kind(&a.ty)?.is_integer() {
                        return Err(unsupported(
                            &a.span,
                            "a cuRAND seed, sequence or offset that is not an integer",
                        ));
                    }
                }
                let [seed, subsequence, offset, state] = self.args(e, args)?;
                self.emit(Op::CurandInit {
                    seed,
                    subsequence,
                    offset,
                    state,
                });
                Ok(0)
            }
            Builtin::CurandUniform | Builtin::CurandNormal => {
                let double = match self.kind(&e.ty)? {
                    Kind::F32 => false,
                    Kind::F64 => true,
                    _ => {
                        return Err(unsupported(
                            &e.span,
                            format!("a cuRAND result of type `{}`", e.ty),
                        ));
                    }
                };
                let [state] = self.args(e, args)?;
                let dst = self.alloc(1);
                if op == Builtin::CurandUniform {
                    self.emit(Op::CurandUniform { dst, state, double });
                } else {
                    self.emit(Op::CurandNormal { dst, state, double });
                }
                Ok(dst)
            }
            Builtin::TexFetch
            | Builtin::Tex(_)
            | Builtin::SurfRead(..)
            | Builtin::SurfWrite(..) => self.texture(e, op, args),
            Builtin::Tensor(t) => self.tensor(e, t, args),
            // The async proxy (TMA, transaction mbarriers) and warpgroup MMA are the GPU's;
            // Target::cpu() lacks their capabilities, so validation names them first.
            Builtin::Hopper(h) => Err(unsupported(
                &e.span,
                format!(
                    "the Hopper built-in `{}` (TMA, mbarrier transactions and wgmma need an \
                     sm_90 CUDA device)",
                    chorus_lang::check::builtins::signatures_of(op)
                        .next()
                        .map_or_else(|| format!("{h:?}"), |(name, _)| name.to_string())
                ),
            )),
            other => Err(unsupported(&e.span, format!("the built-in {other:?}"))),
        }
    }
}

impl FnCompiler<'_> {
    /// A texture read or surface access: the element (the result, or a write's value) as
    /// components, the handle, then the coordinates.
    fn texture(&mut self, e: &Expr, op: Builtin, args: &[Expr]) -> Result<Reg> {
        let write = matches!(op, Builtin::SurfWrite(..));
        let element = if write {
            args.first().map(|a| &a.ty).unwrap_or(&Type::Void)
        } else {
            &e.ty
        };
        let (scalar, count) = match element {
            Type::Scalar(s) => (*s, 1u8),
            Type::Vector(v) => (v.element(), v.len() as u8),
            other => {
                return Err(unsupported(
                    &e.span,
                    format!("a texture or surface element of type `{other}`"),
                ));
            }
        };
        let component = if scalar == ScalarType::Float {
            Component::Float
        } else if scalar.is_integer() && scalar.size() <= 4 {
            Component::Int {
                bytes: scalar.size() as u8,
                signed: scalar.is_signed_integer(),
            }
        } else {
            return Err(unsupported(
                &e.span,
                format!("a texture or surface element of type `{element}`"),
            ));
        };
        let mut regs = Vec::with_capacity(args.len());
        for a in args {
            regs.push(self.expr(a)?);
        }
        self.span = e.span.clone();
        let (value, rest) = if write {
            (regs[0], &regs[1..])
        } else {
            (0, &regs[..])
        };
        let Some((&handle, coords)) = rest.split_first() else {
            return Err(unsupported(&e.span, "a texture access without its object"));
        };
        if coords.is_empty() || coords.len() > 3 {
            return Err(unsupported(
                &e.span,
                format!("a texture access with {} coordinates", coords.len()),
            ));
        }
        let coords: [Reg; 3] = std::array::from_fn(|k| coords.get(k).copied().unwrap_or(coords[0]));
        let dst = if write {
            0
        } else {
            self.alloc(u32::from(count))
        };
        self.emit(Op::Texture {
            op,
            dst,
            handle,
            coords,
            value,
            component,
            count,
        });
        Ok(dst)
    }
}
