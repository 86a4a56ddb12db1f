//! Lowering of statements: blocks, declarations, assignments, control flow and `printf`.

use super::*;

impl FnCompiler<'_> {
    pub(super) fn block(&mut self, b: &Block) -> Result<()> {
        let (regs, masks) = (self.next_reg, self.next_mask);
        for s in &b.stmts {
            self.stmt(s)?;
        }
        self.next_reg = regs;
        self.next_mask = masks;
        Ok(())
    }

    /// Compiles a sub-block under a fresh scope (its temporaries are released after it).
    pub(super) fn stmt(&mut self, s: &Stmt) -> Result<()> {
        self.span = s.span.clone();
        let mark = self.next_reg;
        match &s.kind {
            StmtKind::Block(b) => self.block(b)?,
            StmtKind::Declare { local, init } => {
                let keep = self.declare(*local, init)?;
                self.next_reg = keep;
                return Ok(());
            }
            StmtKind::SharedArray {
                local,
                element,
                sizes,
                ..
            } => {
                let elem_size = size_of_type(self.module, element, &s.span)?;
                let count: u64 = sizes.iter().product();
                let slot = self.prog.shared_sizes.len() as u32;
                self.prog
                    .shared_sizes
                    .push((elem_size * count.max(1)) as usize);
                self.shared_slots.push(slot);
                let home = if sizes.is_empty() {
                    Home::SharedScalar(slot)
                } else {
                    Home::SharedArray {
                        slot,
                        sizes: sizes.clone(),
                        elem_size,
                    }
                };
                self.set_home(*local, home)?;
            }
            StmtKind::DynamicShared { locals } => {
                for l in locals {
                    self.set_home(*l, Home::Dynamic)?;
                }
            }
            StmtKind::Assign { place, value } => {
                let v = self.expr(value)?;
                self.span = s.span.clone();
                let p = self.place(place)?;
                self.write_place(p, v, &place.ty)?;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                let slot = self.alloc_masks(2);
                let begin = self.emit(Op::IfBegin {
                    cond: c,
                    slot,
                    else_target: 0,
                });
                self.block(then)?;
                self.span = s.span.clone();
                if let Some(other) = otherwise {
                    let e = self.emit(Op::Else {
                        slot,
                        end_target: 0,
                    });
                    self.patch(begin, e);
                    self.block(other)?;
                    self.span = s.span.clone();
                    let end = self.emit(Op::EndIf { slot });
                    self.patch(e, end);
                } else {
                    let end = self.emit(Op::EndIf { slot });
                    self.patch(begin, end);
                }
                self.next_mask = slot;
            }
            StmtKind::While { cond, body } => {
                self.emit_loop(Some(cond), &[], body, &s.span)?;
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                for (local, value) in init {
                    let keep = self.declare(*local, value)?;
                    self.next_reg = keep;
                }
                self.emit_loop(cond.as_ref(), step, body, &s.span)?;
            }
            StmtKind::Break => {
                let &(slot, _) = self
                    .breakables
                    .last()
                    .ok_or_else(|| unsupported(&s.span, "`break` outside a loop or switch"))?;
                self.emit(Op::Break { slot });
            }
            StmtKind::Continue => {
                let &(slot, _) = self
                    .breakables
                    .iter()
                    .rev()
                    .find(|(_, is_loop)| *is_loop)
                    .ok_or_else(|| unsupported(&s.span, "`continue` outside a loop"))?;
                self.emit(Op::Continue { slot });
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                let kind = self.kind(&scrutinee.ty)?;
                let sc = self.expr(scrutinee)?;
                self.span = s.span.clone();
                let slot = self.alloc_masks(3);
                self.emit(Op::SwitchBegin { slot });
                self.breakables.push((slot, false));
                for case in cases {
                    let start = self.prog.case_values.len() as u32;
                    self.prog
                        .case_values
                        .extend(case.values.iter().map(|v| canon(kind, *v as u64)));
                    let values = (start, case.values.len() as u32);
                    let at = self.emit(Op::Case {
                        slot,
                        scrutinee: sc,
                        values,
                        next: 0,
                    });
                    self.block(&case.body)?;
                    let next = self.pc();
                    self.patch(at, next);
                }
                self.span = s.span.clone();
                if let Some(d) = default {
                    self.emit(Op::Default { slot });
                    self.block(d)?;
                    self.span = s.span.clone();
                }
                self.emit(Op::SwitchEnd { slot });
                self.breakables.pop();
                self.next_mask = slot;
            }
            StmtKind::Return(value) => {
                let value = match value {
                    Some(v) => Some(self.expr(v)?),
                    None => None,
                };
                self.span = s.span.clone();
                self.emit(Op::Return { value });
            }
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
            StmtKind::Printf { format, args } => self.printf(format, args)?,
            StmtKind::Asm(_) => {
                return Err(unsupported(&s.span, "`cuda-asm` (inline CUDA C or PTX)"));
            }
        }
        self.next_reg = mark;
        Ok(())
    }

    pub(super) fn set_home(&mut self, local: ir::LocalId, home: Home) -> Result<()> {
        self.local(local)?;
        self.homes[local.index()] = home;
        Ok(())
    }

    /// Declares a register or memory local initialised by `init`; returns the first register
    /// free after it.
    pub(super) fn declare(&mut self, local: ir::LocalId, init: &Expr) -> Result<Reg> {
        let ty = &self.local(local)?.ty;
        if self.addressed[local.index()] {
            let offset = self.alloc_local_memory(ty)?;
            self.homes[local.index()] = Home::Memory(offset);
            let keep = self.next_reg;
            let v = self.expr(init)?;
            self.write_place_memory_local(offset, v, ty)?;
            Ok(keep)
        } else {
            let n = self.leaves(ty)?.len() as u32;
            let mark = self.next_reg;
            let v = self.expr(init)?;
            if v >= mark {
                // The value is in a temporary made for it: the variable simply lives there.
                // (Lanes that are not active here never read this declaration's value.)
                self.homes[local.index()] = Home::Regs(v);
                return Ok(v + n);
            }
            let regs = self.alloc(n);
            let keep = self.next_reg;
            for i in 0..n {
                self.emit(Op::CopyMasked {
                    dst: regs + i,
                    src: v + i,
                });
            }
            self.homes[local.index()] = Home::Regs(regs);
            Ok(keep)
        }
    }

    pub(super) fn write_place_memory_local(
        &mut self,
        offset: u32,
        v: Reg,
        ty: &Type,
    ) -> Result<()> {
        let ptr = self.alloc(1);
        self.emit(Op::LocalAddr { dst: ptr, offset });
        self.write_place(Place::Mem { ptr, offset: 0 }, v, ty)
    }

    pub(super) fn emit_loop(
        &mut self,
        cond: Option<&Expr>,
        step: &[(ir::LocalId, Expr)],
        body: &Block,
        span: &Span,
    ) -> Result<()> {
        let slot = self.alloc_masks(3);
        self.emit(Op::LoopBegin { slot });
        let top = self.pc();
        let mark = self.next_reg;
        let c = match cond {
            Some(c) => Some(self.expr(c)?),
            None => None,
        };
        self.span = span.clone();
        let test = self.emit(Op::LoopTest { cond: c, exit: 0 });
        self.next_reg = mark;
        self.breakables.push((slot, true));
        self.block(body)?;
        self.breakables.pop();
        self.span = span.clone();
        self.emit(Op::LoopContinue { slot });
        // Steps are parallel: every new value is computed before any is assigned.
        let mut values = Vec::new();
        for (local, value) in step {
            let v = self.expr(value)?;
            let n = self.leaves(&value.ty)?.len() as u32;
            let t = self.alloc(n);
            for i in 0..n {
                self.emit(Op::Copy {
                    dst: t + i,
                    src: v + i,
                });
            }
            values.push((*local, t));
        }
        for (local, t) in values {
            let ty = self.local(local)?.ty.clone();
            let p = self.place(&Expr {
                kind: ExprKind::Local(local),
                ty: ty.clone(),
                span: span.clone(),
            })?;
            self.write_place(p, t, &ty)?;
        }
        self.next_reg = mark;
        self.emit(Op::Jump { target: top });
        let exit = self.emit(Op::LoopEnd { slot });
        self.patch(test, exit);
        self.next_mask = slot;
        Ok(())
    }

    pub(super) fn printf(&mut self, format: &str, args: &[Expr]) -> Result<()> {
        let parsed =
            crate::printf::Format::parse(format).map_err(|m| unsupported(&self.span, m))?;
        if parsed.arg_count() != args.len() {
            return Err(unsupported(
                &self.span,
                format!(
                    "a printf format taking {} argument(s) given {}",
                    parsed.arg_count(),
                    args.len()
                ),
            ));
        }
        let mut regs = Vec::new();
        for a in args {
            let kind = self.kind(&a.ty)?;
            let is_byte_pointer = matches!(
                a.ty.pointee(),
                Some(Type::Scalar(
                    chorus_lang::types::ScalarType::Int8 | chorus_lang::types::ScalarType::UInt8
                ))
            );
            let reg = self.expr(a)?;
            regs.push(PrintfArg {
                reg,
                kind,
                is_byte_pointer,
            });
        }
        let index = self.prog.printfs.len() as u32;
        self.prog.printfs.push(PrintfSite {
            format: parsed,
            args: regs,
        });
        self.emit(Op::Printf { index });
        Ok(())
    }
}
