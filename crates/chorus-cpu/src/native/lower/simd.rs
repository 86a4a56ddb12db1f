//! Explicit SIMD over threads for kernels without barriers: the thread loop runs chunks of
//! [`LANES`] consecutive `x` threads with Cranelift's 128-bit vectors, one lane per thread.
//!
//! A chunk runs as vectors when it can run exactly as the threads one by one would; where it
//! cannot tell (lanes that disagree on a branch, an access that might fail its bounds check) it
//! *bails*: the chunk's threads run through the scalar body instead, which takes the same
//! branches and reports the same fault as without SIMD. A bail is only possible before the
//! chunk's first store (no side effect to redo); a body that would need one later, or that uses
//! anything this file does not vectorise, is compiled without SIMD (the caller retries).
//!
//! Values are [`V`]: uniform over the chunk (a scalar, computed by the scalar lowering), affine
//! in the thread index (`base + lane`, the index of a coalesced access), or one value per lane.
//! An access whose index is affine is one contiguous vector load or store, checked once for the
//! whole chunk (first and last lane against the root's hoisted limits); its bytes are the
//! scalar code's, lane for lane, and the arithmetic is the same IEEE operations in the same
//! order, so both paths give the same bits.

use super::runtime::Root;
use super::{Home, Lower, R, float_cc, int_cc, is_composite};
use crate::value::Kind;
use chorus_lang::ir::visit::{Node, for_each_node};
use chorus_lang::ir::{self, Block, Builtin, Expr, ExprKind, IndexVar, Stmt, StmtKind};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{self as cir, Block as CBlock, InstBuilder, MemFlags, Value, types};
use std::mem::offset_of;

/// 128-bit vectors per lane value.
const PARTS: usize = 8;
// Threads per chunk: 4 lanes of 32 bits per vector. The constant lives with the launcher, which
// computes each chunk's bounds limits from it.
pub(crate) use super::runtime::LANES;
const _: () = assert!(LANES == 4 * PARTS as i64);

/// A value of the chunk's threads.
#[derive(Clone)]
pub(super) enum V {
    /// The same in every lane: a scalar of the kind's Cranelift type.
    Uniform(Value),
    /// A 32-bit integer that is `base + k` (wrapping) in lane `k`; `base` an `I32`.
    Affine(Value),
    /// One value per lane: [`PARTS`] vectors of 4 lanes (`I32X4` for integers and for
    /// booleans as all-ones / zero masks, `F32X4` for floats).
    Lanes(Vec<Value>),
}

/// The vector body's state while it is emitted.
pub(super) struct VState {
    /// Each local declared in the body: its value and kind.
    homes: Vec<Option<(V, Kind)>>,
    /// Runs the chunk's threads through the scalar body.
    bail: CBlock,
    /// The chunk is finished.
    done: CBlock,
    /// A store has been emitted: no bail may follow.
    stored: bool,
}

type VResult<T> = R<T>;

fn no<T>(what: &str) -> VResult<T> {
    Err(format!("SIMD: {what}"))
}

/// The kinds a lane value may have.
fn lane_kind(k: Kind) -> bool {
    matches!(k, Kind::I32 | Kind::U32 | Kind::F32 | Kind::Bool)
}

fn part_ty(k: Kind) -> cir::Type {
    if k == Kind::F32 {
        types::F32X4
    } else {
        types::I32X4
    }
}

/// Plain vector accesses: the bounds were checked, alignment is not assumed.
fn vflags() -> MemFlags {
    MemFlags::new().with_notrap()
}

impl Lower<'_, '_, '_> {
    fn vs(&mut self) -> VResult<&mut VState> {
        self.vs
            .as_mut()
            .ok_or_else(|| "SIMD: outside the vector body".into())
    }

    /// The thread loop of a kernel without barriers, in chunks of [`LANES`] threads along `x`
    /// (the rest of a row, and bailed chunks, through the scalar body).
    pub(super) fn simd_thread_loop(&mut self, body: &Block) -> R<()> {
        let en = self.en();
        let zero = self.start_threads();
        let vx = self.tid[0];
        let stop = self.b.declare_var(types::I32);
        self.b.def_var(stop, zero);
        let mut blocks = [CBlock::from_u32(0); 10];
        for b in &mut blocks {
            *b = self.b.create_block();
        }
        let [
            vhead,
            vbody,
            vtail,
            vrest,
            vdone,
            vbail,
            srun,
            snext,
            rows,
            exit,
        ] = blocks;
        self.b.set_cold_block(vbail);
        self.b.ins().jump(vhead, &[]);

        // A whole chunk left in this row?
        self.b.switch_to_block(vhead);
        let x = self.b.use_var(vx);
        let end = self.b.ins().iadd_imm(x, LANES);
        let fits = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, end, en.block_dim[0]);
        self.b.ins().brif(fits, vbody, &[], vtail, &[]);
        self.b.switch_to_block(vtail);
        let more = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThan, x, en.block_dim[0]);
        self.b.ins().brif(more, vrest, &[], rows, &[]);
        self.b.switch_to_block(vrest);
        self.b.def_var(stop, en.block_dim[0]);
        self.b.ins().jump(srun, &[]);

        // The chunk as vectors.
        self.b.switch_to_block(vbody);
        self.vs = Some(VState {
            homes: vec![None; self.func.locals.len()],
            bail: vbail,
            done: vdone,
            stored: false,
        });
        let lowered = self.vblock(body);
        self.vs = None;
        lowered?;
        self.b.ins().jump(vdone, &[]);
        self.b.switch_to_block(vdone);
        self.step_x(LANES);
        self.b.ins().jump(vhead, &[]);

        // A bailed chunk: its threads one by one.
        self.b.switch_to_block(vbail);
        let x = self.b.use_var(vx);
        let end = self.b.ins().iadd_imm(x, LANES);
        self.b.def_var(stop, end);
        self.b.ins().jump(srun, &[]);

        // The scalar body, up to `stop`.
        self.b.switch_to_block(srun);
        self.scalar_thread(snext, |me| me.block(body))?;
        self.b.switch_to_block(snext);
        let x1 = self.step_x(1);
        let s = self.b.use_var(stop);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, x1, s);
        self.b.ins().brif(more, srun, &[], vhead, &[]);

        // The next row, and plane.
        self.b.switch_to_block(rows);
        self.end_of_row(zero, vhead, exit);
        self.b.switch_to_block(exit);
        self.vectorised = true;
        Ok(())
    }

    /// Leaves for the scalar body when `bad` (an `I8`) is set; refused after a store.
    fn vbail_if(&mut self, bad: Value) -> VResult<()> {
        if self.vs()?.stored {
            return no("a check after a store");
        }
        let bail = self.vs()?.bail;
        let ok = self.b.create_block();
        self.b.ins().brif(bad, bail, &[], ok, &[]);
        self.b.switch_to_block(ok);
        Ok(())
    }

    fn vblock(&mut self, b: &Block) -> VResult<()> {
        for s in &b.stmts {
            self.vstmt(s)?;
        }
        Ok(())
    }

    fn vstmt(&mut self, s: &Stmt) -> VResult<()> {
        match &s.kind {
            StmtKind::Block(b) => self.vblock(b),
            StmtKind::Declare { local, init } => {
                if is_composite(&init.ty) {
                    return no("a vector or structure");
                }
                let v = self.vexpr(init)?;
                self.vs()?.homes[local.index()] = Some(v);
                Ok(())
            }
            StmtKind::Assign { place, value } if matches!(place.kind, ExprKind::Aref { .. }) => {
                let (v, k) = self.vexpr(value)?;
                self.vstore(place, v, k)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                let (tb, eb, end) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.vbranch(cond, tb, eb)?;
                self.b.switch_to_block(tb);
                self.vblock(then)?;
                self.b.ins().jump(end, &[]);
                self.b.switch_to_block(eb);
                if let Some(o) = otherwise {
                    self.vblock(o)?;
                }
                self.b.ins().jump(end, &[]);
                self.b.switch_to_block(end);
                Ok(())
            }
            StmtKind::Return(None) if self.device.is_none() => {
                let done = self.vs()?.done;
                self.b.ins().jump(done, &[]);
                self.dead_block();
                Ok(())
            }
            StmtKind::Expr(Expr {
                kind:
                    ExprKind::Builtin {
                        op:
                            Builtin::ThreadFence
                            | Builtin::ThreadFenceBlock
                            | Builtin::ThreadFenceSystem,
                        ..
                    },
                ..
            }) => {
                self.b.ins().fence();
                Ok(())
            }
            _ => no("this statement"),
        }
    }

    /// Branches to `then` when every lane's `cond` holds, to `otherwise` when none does, and
    /// bails when the lanes disagree.
    fn vbranch(&mut self, cond: &Expr, then: CBlock, otherwise: CBlock) -> VResult<()> {
        use crate::bytecode::BinOp as B;
        // An order comparison of an affine index with a uniform bound (a guard such as
        // `(< i n)`): its lanes are monotonic, so the first and last lane decide all or none
        // with two scalar compares.
        if let ExprKind::Builtin { op, args } = &cond.kind
            && let [x, y] = &args[..]
            && x.ty.pointee().is_none()
            && y.ty.pointee().is_none()
            && !self.v_uniform(cond)
        {
            let bin = match op {
                Builtin::Lt => Some(B::Lt),
                Builtin::Le => Some(B::Le),
                Builtin::Gt => Some(B::Gt),
                Builtin::Ge => Some(B::Ge),
                _ => None,
            };
            if let Some(bin) = bin {
                let (a, ka) = self.vexpr(x)?;
                let (c, kc) = self.vexpr(y)?;
                let ints = ka == kc && matches!(ka, Kind::I32 | Kind::U32);
                let decided = match (&a, &c) {
                    (V::Affine(b), V::Uniform(u)) if ints => Some((*b, *u, bin)),
                    // u < v is v > u, and so on.
                    (V::Uniform(u), V::Affine(b)) if ints => Some((
                        *b,
                        *u,
                        match bin {
                            B::Lt => B::Gt,
                            B::Le => B::Ge,
                            B::Gt => B::Lt,
                            _ => B::Le,
                        },
                    )),
                    _ => None,
                };
                if let Some((b, u, bin)) = decided {
                    return self.affine_branch(b, u, bin, ka == Kind::I32, then, otherwise);
                }
                let mask = self.vbinary(cond, bin, (a, ka), (c, kc), Kind::Bool)?;
                return self.mask_branch(mask, then, otherwise);
            }
        }
        let (v, kind) = self.vexpr(cond)?;
        if kind != Kind::Bool && !matches!(v, V::Uniform(_)) {
            return no("a non-boolean condition");
        }
        self.mask_branch(v, then, otherwise)
    }

    /// Branches on lanes `b + k OP u` (`k` below [`LANES`]): to `then` when all hold, to
    /// `otherwise` when none does, else (or when the lanes' indexes wrap) bails.
    fn affine_branch(
        &mut self,
        b: Value,
        u: Value,
        bin: crate::bytecode::BinOp,
        signed: bool,
        then: CBlock,
        otherwise: CBlock,
    ) -> VResult<()> {
        use crate::bytecode::BinOp as B;
        let Some(cc) = int_cc(bin, signed) else {
            return no("an affine branch that is not a comparison");
        };
        let (wcc, max) = if signed {
            (IntCC::SignedGreaterThan, i32::MAX as i64 - (LANES - 1))
        } else {
            (IntCC::UnsignedGreaterThan, u32::MAX as i64 - (LANES - 1))
        };
        let wraps = self.b.ins().icmp_imm(wcc, b, max);
        let last = self.b.ins().iadd_imm(b, LANES - 1);
        // `<` and `<=` hold on a prefix of the lanes, `>` and `>=` on a suffix.
        let (all_at, none_at) = if matches!(bin, B::Lt | B::Le) {
            (last, b)
        } else {
            (b, last)
        };
        let all = self.b.ins().icmp(cc, all_at, u);
        let fits = self.b.ins().bxor_imm(wraps, 1);
        let all = self.b.ins().band(all, fits);
        let check = self.b.create_block();
        self.b.ins().brif(all, then, &[], check, &[]);
        self.b.switch_to_block(check);
        // Not none: some lane holds (or the lanes wrap).
        let some = self.b.ins().icmp(cc, none_at, u);
        let bad = self.b.ins().bor(some, wraps);
        self.vbail_if(bad)?;
        self.b.ins().jump(otherwise, &[]);
        Ok(())
    }

    fn mask_branch(&mut self, v: V, then: CBlock, otherwise: CBlock) -> VResult<()> {
        match v {
            V::Uniform(c) => {
                self.b.ins().brif(c, then, &[], otherwise, &[]);
            }
            V::Lanes(m) => {
                let all = self.all_true(&m);
                let check = self.b.create_block();
                self.b.ins().brif(all, then, &[], check, &[]);
                self.b.switch_to_block(check);
                let any = self.any_true(&m);
                self.vbail_if(any)?;
                self.b.ins().jump(otherwise, &[]);
            }
            _ => return no("this condition"),
        }
        Ok(())
    }

    fn all_true(&mut self, m: &[Value]) -> Value {
        let mut acc = m[0];
        for p in &m[1..] {
            acc = self.b.ins().band(acc, *p);
        }
        self.b.ins().vall_true(acc)
    }

    fn any_true(&mut self, m: &[Value]) -> Value {
        let mut acc = m[0];
        for p in &m[1..] {
            acc = self.b.ins().bor(acc, *p);
        }
        self.b.ins().vany_true(acc)
    }

    /// Whether `e` is the same for every thread of a chunk and safe to compute once by the
    /// scalar lowering (parameters, block values, `y`/`z` thread indexes, pure operations).
    fn v_uniform(&self, e: &Expr) -> bool {
        if is_composite(&e.ty) || !self.is_pure(e) {
            return false;
        }
        let mut uniform = true;
        let Some(vs) = self.vs.as_ref() else {
            return false;
        };
        for_each_node(Node::Expr(e), |n, _| match n {
            Node::Expr(Expr {
                kind: ExprKind::Local(id),
                ..
            }) if vs.homes[id.index()].is_some()
                || !matches!(self.homes[id.index()], Home::Var(_) | Home::PtrParam(..)) =>
            {
                uniform = false;
            }
            Node::Expr(Expr {
                kind: ExprKind::Index(IndexVar::ThreadIdx(ir::Axis::X) | IndexVar::LaneId),
                ..
            }) => uniform = false,
            _ => {}
        });
        uniform
    }

    /// A scalar expression's value over the chunk and its kind.
    fn vexpr(&mut self, e: &Expr) -> VResult<(V, Kind)> {
        let kind = match Kind::of(&e.ty) {
            Some(k) if !is_composite(&e.ty) => k,
            _ => return no("a value of this type"),
        };
        if self.v_uniform(e) {
            return Ok((V::Uniform(self.expr(e)?), kind));
        }
        // Non-uniform values have a lane kind (`lanes` refuses others); uniform locals and
        // uniform operands of casts and operations may have any.
        let v = match &e.kind {
            ExprKind::Local(id) => {
                if let Some(v) = self.vs()?.homes[id.index()].clone() {
                    return Ok(v);
                }
                return no("this variable");
            }
            ExprKind::Index(IndexVar::ThreadIdx(ir::Axis::X))
                if matches!(kind, Kind::I32 | Kind::U32) =>
            {
                V::Affine(self.b.use_var(self.tid[0]))
            }
            ExprKind::Cast { value, .. } => {
                let (v, from) = self.vexpr(value)?;
                self.vcast(v, from, kind)?
            }
            ExprKind::Builtin { op, args } => self.vbuiltin(e, *op, args, kind)?,
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => self.vselect(cond, then, otherwise, kind)?,
            ExprKind::Aref { .. } => self.vload(e, kind)?,
            _ => return no("this expression"),
        };
        Ok((v, kind))
    }

    /// `v` as one value per lane.
    fn lanes(&mut self, v: V, kind: Kind) -> VResult<Vec<Value>> {
        Ok(match v {
            V::Lanes(p) => p,
            V::Uniform(u) => {
                let s = match kind {
                    Kind::Bool => {
                        let w = self.b.ins().uextend(types::I32, u);
                        self.b.ins().ineg(w)
                    }
                    Kind::I32 | Kind::U32 | Kind::F32 => u,
                    _ => return no("a lane value of this kind"),
                };
                let p = self.b.ins().splat(part_ty(kind), s);
                vec![p; PARTS]
            }
            V::Affine(base) => {
                let s = self.b.ins().splat(types::I32X4, base);
                (0..PARTS)
                    .map(|k| {
                        let bytes: Vec<u8> = (0..4u32)
                            .flat_map(|i| (4 * k as u32 + i).to_le_bytes())
                            .collect();
                        let c = self.b.func.dfg.constants.insert(bytes.into());
                        let iota = self.b.ins().vconst(types::I32X4, c);
                        self.b.ins().iadd(s, iota)
                    })
                    .collect()
            }
        })
    }

    fn vcast(&mut self, v: V, from: Kind, to: Kind) -> VResult<V> {
        let int = |k: Kind| matches!(k, Kind::I32 | Kind::U32);
        if let V::Uniform(u) = v {
            return Ok(V::Uniform(self.convert(u, from, to)));
        }
        if from == to || (int(from) && int(to)) {
            return Ok(v);
        }
        let p = self.lanes(v, from)?;
        let out = match (from, to) {
            (Kind::I32, Kind::F32) => p
                .iter()
                .map(|x| self.b.ins().fcvt_from_sint(types::F32X4, *x))
                .collect(),
            (Kind::Bool, t) if int(t) => {
                let one = self.b.ins().iconst(types::I32, 1);
                let one = self.b.ins().splat(types::I32X4, one);
                p.iter().map(|x| self.b.ins().band(*x, one)).collect()
            }
            (f, Kind::Bool) if int(f) => p
                .iter()
                .map(|x| self.b.ins().icmp_imm(IntCC::NotEqual, *x, 0))
                .collect(),
            (Kind::F32, Kind::Bool) => {
                let z = self.b.ins().f32const(0.0);
                let z = self.b.ins().splat(types::F32X4, z);
                p.iter()
                    .map(|x| self.b.ins().fcmp(FloatCC::NotEqual, *x, z))
                    .collect()
            }
            _ => return no("this conversion"),
        };
        Ok(V::Lanes(out))
    }

    fn vbuiltin(&mut self, e: &Expr, op: Builtin, args: &[Expr], want: Kind) -> VResult<V> {
        use crate::bytecode::BinOp as B;
        let bin = match op {
            Builtin::Add => B::Add,
            Builtin::Sub => B::Sub,
            Builtin::Mul => B::Mul,
            Builtin::Div | Builtin::FastDivide => B::Div,
            Builtin::BitAnd => B::BitAnd,
            Builtin::BitOr => B::BitOr,
            Builtin::BitXor => B::BitXor,
            Builtin::Eq => B::Eq,
            Builtin::Ne => B::Ne,
            Builtin::Lt => B::Lt,
            Builtin::Gt => B::Gt,
            Builtin::Le => B::Le,
            Builtin::Ge => B::Ge,
            Builtin::And | Builtin::Or => {
                // Every operand is computed for every lane: only where that cannot fault.
                if !args.iter().all(|a| self.is_pure(a)) {
                    return no("a short-circuit operand with effects");
                }
                let mut acc: Option<Vec<Value>> = None;
                for a in args {
                    let (v, k) = self.vexpr(a)?;
                    if k != Kind::Bool {
                        return no("a non-boolean operand");
                    }
                    let p = self.lanes(v, k)?;
                    acc = Some(match acc {
                        None => p,
                        Some(q) => q
                            .iter()
                            .zip(&p)
                            .map(|(x, y)| {
                                if op == Builtin::And {
                                    self.b.ins().band(*x, *y)
                                } else {
                                    self.b.ins().bor(*x, *y)
                                }
                            })
                            .collect(),
                    });
                }
                return match acc {
                    Some(p) => Ok(V::Lanes(p)),
                    None => no("an empty `and`"),
                };
            }
            Builtin::Neg | Builtin::Not | Builtin::BitNot | Builtin::Abs => {
                let [x] = args else {
                    return no("this arity");
                };
                let (v, k) = self.vexpr(x)?;
                let p = self.lanes(v, k)?;
                let float = k == Kind::F32;
                let mut out = Vec::new();
                for x in p {
                    out.push(match op {
                        Builtin::Neg if float => self.b.ins().fneg(x),
                        Builtin::Neg if k != Kind::Bool => self.b.ins().ineg(x),
                        Builtin::Abs if float => self.b.ins().fabs(x),
                        Builtin::Abs if k == Kind::I32 => self.b.ins().iabs(x),
                        Builtin::Abs if k == Kind::U32 => x,
                        Builtin::BitNot if !float && k != Kind::Bool => self.b.ins().bnot(x),
                        Builtin::Not if k == Kind::Bool => self.b.ins().bnot(x),
                        Builtin::Not if float => {
                            let z = self.b.ins().f32const(0.0);
                            let z = self.b.ins().splat(types::F32X4, z);
                            self.b.ins().fcmp(FloatCC::Equal, x, z)
                        }
                        Builtin::Not => self.b.ins().icmp_imm(IntCC::Equal, x, 0),
                        _ => return no("this unary operation"),
                    });
                }
                let produced = if op == Builtin::Not { Kind::Bool } else { k };
                if produced != want {
                    return no("a unary operation of another result kind");
                }
                return Ok(V::Lanes(out));
            }
            _ => return no("this operation"),
        };
        let [x, y] = args else {
            return no("this arity");
        };
        if x.ty.pointee().is_some() || y.ty.pointee().is_some() {
            return no("pointer arithmetic");
        }
        let (a, ka) = self.vexpr(x)?;
        let (c, kc) = self.vexpr(y)?;
        self.vbinary(e, bin, (a, ka), (c, kc), want)
    }

    /// A binary operation of two operands already computed, giving a `want` value.
    fn vbinary(
        &mut self,
        e: &Expr,
        bin: crate::bytecode::BinOp,
        (a, ka): (V, Kind),
        (c, kc): (V, Kind),
        want: Kind,
    ) -> VResult<V> {
        use crate::bytecode::BinOp as B;
        let compare = matches!(bin, B::Eq | B::Ne | B::Lt | B::Gt | B::Le | B::Ge);
        let produced = if compare { Kind::Bool } else { ka };
        if bin == B::Div && !ka.is_float() {
            // It can fault: the scalar body reports that.
            return no("integer division");
        }
        if let (V::Uniform(a), V::Uniform(c)) = (&a, &c) {
            let r = self.binary(bin, ka, *a, *c, kc, &e.span)?;
            return Ok(V::Uniform(self.convert(r, produced, want)));
        }
        if ka != kc || !matches!(ka, Kind::I32 | Kind::U32 | Kind::F32) || produced != want {
            return no("operands of these kinds");
        }
        let float = ka == Kind::F32;
        match (&a, &c, bin) {
            (V::Affine(b), V::Uniform(u), B::Add) | (V::Uniform(u), V::Affine(b), B::Add)
                if !float =>
            {
                return Ok(V::Affine(self.b.ins().iadd(*b, *u)));
            }
            (V::Affine(b), V::Uniform(u), B::Sub) if !float => {
                return Ok(V::Affine(self.b.ins().isub(*b, *u)));
            }
            _ => {}
        }
        let (pa, pc) = (self.lanes(a, ka)?, self.lanes(c, kc)?);
        let signed = ka == Kind::I32;
        let mut out = Vec::new();
        for (x, y) in pa.into_iter().zip(pc) {
            let ins = self.b.ins();
            out.push(match bin {
                B::Add if float => ins.fadd(x, y),
                B::Sub if float => ins.fsub(x, y),
                B::Mul if float => ins.fmul(x, y),
                B::Div => ins.fdiv(x, y),
                B::Add => ins.iadd(x, y),
                B::Sub => ins.isub(x, y),
                B::Mul => ins.imul(x, y),
                B::BitAnd if !float => ins.band(x, y),
                B::BitOr if !float => ins.bor(x, y),
                B::BitXor if !float => ins.bxor(x, y),
                _ if float => {
                    let Some(cc) = float_cc(bin) else {
                        return no("this float operation");
                    };
                    ins.fcmp(cc, x, y)
                }
                _ => {
                    let Some(cc) = int_cc(bin, signed) else {
                        return no("this integer operation");
                    };
                    ins.icmp(cc, x, y)
                }
            });
        }
        Ok(V::Lanes(out))
    }

    /// `(if cond then otherwise)` as a value: a lane-wise select when both sides are safe to
    /// compute for every lane, else a branch (bailing when the lanes disagree).
    fn vselect(&mut self, cond: &Expr, then: &Expr, otherwise: &Expr, kind: Kind) -> VResult<V> {
        if self.is_pure(then) && self.is_pure(otherwise) {
            let (c, _) = self.vexpr(cond)?;
            if let V::Lanes(m) = c {
                let (a, _) = self.vexpr(then)?;
                let (b, _) = self.vexpr(otherwise)?;
                let (pa, pb) = (self.lanes(a, kind)?, self.lanes(b, kind)?);
                let out = m
                    .iter()
                    .zip(pa.iter().zip(&pb))
                    .map(|(m, (x, y))| {
                        let m = if kind == Kind::F32 {
                            let le = MemFlags::new().with_endianness(cir::Endianness::Little);
                            self.b.ins().bitcast(types::F32X4, le, *m)
                        } else {
                            *m
                        };
                        self.b.ins().bitselect(m, *x, *y)
                    })
                    .collect();
                return Ok(V::Lanes(out));
            }
            // A uniform condition: the branch below (it is computed once, not again).
            return self.vselect_branch(Some(c), cond, then, otherwise, kind);
        }
        self.vselect_branch(None, cond, then, otherwise, kind)
    }

    fn vselect_branch(
        &mut self,
        computed: Option<V>,
        cond: &Expr,
        then: &Expr,
        otherwise: &Expr,
        kind: Kind,
    ) -> VResult<V> {
        if !lane_kind(kind) {
            return no("a lane value of this kind");
        }
        let vars: Vec<_> = (0..PARTS)
            .map(|_| self.b.declare_var(part_ty(kind)))
            .collect();
        let (tb, eb, end) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        match computed {
            Some(V::Uniform(c)) => {
                self.b.ins().brif(c, tb, &[], eb, &[]);
            }
            Some(_) => return no("this condition"),
            None => self.vbranch(cond, tb, eb)?,
        }
        for (blk, side) in [(tb, then), (eb, otherwise)] {
            self.b.switch_to_block(blk);
            let (v, k) = self.vexpr(side)?;
            if k != kind {
                return no("branches of another kind");
            }
            let p = self.lanes(v, kind)?;
            for (var, x) in vars.iter().zip(p) {
                self.b.def_var(*var, x);
            }
            self.b.ins().jump(end, &[]);
        }
        self.b.switch_to_block(end);
        Ok(V::Lanes(vars.iter().map(|v| self.b.use_var(*v)).collect()))
    }

    /// The checked host address of an `aref` over the chunk: contiguous (`true`: lane `k` at
    /// `4k` bytes past it) for an affine index, one element for a uniform one.
    fn vaddr(&mut self, place: &Expr, kind: Kind) -> VResult<(Value, bool)> {
        let ExprKind::Aref { base, indices } = &place.kind else {
            return no("this place");
        };
        let ExprKind::Local(id) = base.kind else {
            return no("indexing this pointer");
        };
        let root = match self.homes[id.index()] {
            Home::PtrParam(_, root) | Home::Dynamic(root) => root,
            Home::Shared(root, ref sizes, _) if sizes.len() == 1 => root,
            _ => return no("indexing this pointer"),
        };
        let [index] = &indices[..] else {
            return no("several indexes");
        };
        if !matches!(kind, Kind::I32 | Kind::U32 | Kind::F32)
            || self.pointee_size(&base.ty, &base.span)? != 4
        {
            return no("elements of this size");
        }
        let (iv, ik) = self.vexpr(index)?;
        let signed = match ik {
            Kind::I32 => true,
            Kind::U32 => false,
            _ => return no("an index of this kind"),
        };
        let (i, contiguous) = match iv {
            V::Affine(b) => (b, true),
            V::Uniform(i) => (i, false),
            V::Lanes(_) => return no("a gather"),
        };
        let wide = if signed {
            self.b.ins().sextend(types::I64, i)
        } else {
            self.b.ins().uextend(types::I64, i)
        };
        // The root's fields are read here, not kept in registers across the thread loop:
        // a load from the (cached) root array is cheaper than the spills they would cause.
        let roots = self.roots_ptr.ok_or("SIMD: no root array")?;
        let at = (root as usize * size_of::<Root>()) as i32;
        let field = |me: &mut Self, off: usize| {
            me.b.ins()
                .load(types::I64, super::TRUSTED, roots, at + off as i32)
        };
        let (lo, span) = if contiguous {
            (offset_of!(Root, chunk_lo4), offset_of!(Root, chunk_span4))
        } else {
            (offset_of!(Root, lo4), offset_of!(Root, span4))
        };
        let (lo, span) = (field(self, lo), field(self, span));
        // One unsigned compare for both ends (the chunk's first and last lane).
        let rel = self.b.ins().isub(wide, lo);
        let mut bad = self.b.ins().icmp(IntCC::UnsignedGreaterThan, rel, span);
        if contiguous {
            // The lanes' indexes must not wrap around within the chunk.
            let (cc, max) = if signed {
                (IntCC::SignedGreaterThan, i32::MAX as i64 - (LANES - 1))
            } else {
                (IntCC::UnsignedGreaterThan, u32::MAX as i64 - (LANES - 1))
            };
            let wraps = self.b.ins().icmp_imm(cc, i, max);
            bad = self.b.ins().bor(bad, wraps);
        }
        self.vbail_if(bad)?;
        let elem0 = field(self, offset_of!(Root, elem0));
        let d = self.b.ins().ishl_imm(wide, 2);
        Ok((self.b.ins().iadd(elem0, d), contiguous))
    }

    fn vload(&mut self, place: &Expr, kind: Kind) -> VResult<V> {
        let (addr, contiguous) = self.vaddr(place, kind)?;
        if !contiguous {
            let ty = super::cty(kind);
            return Ok(V::Uniform(self.b.ins().load(ty, vflags(), addr, 0)));
        }
        let ty = part_ty(kind);
        Ok(V::Lanes(
            (0..PARTS)
                .map(|k| self.b.ins().load(ty, vflags(), addr, 16 * k as i32))
                .collect(),
        ))
    }

    fn vstore(&mut self, place: &Expr, v: V, kind: Kind) -> VResult<()> {
        let want = Kind::of(&place.ty);
        if want != Some(kind) {
            return no("a store of another kind");
        }
        let (addr, contiguous) = self.vaddr(place, kind)?;
        if !contiguous {
            return no("a store every lane makes to one element");
        }
        let p = self.lanes(v, kind)?;
        for (k, x) in p.into_iter().enumerate() {
            self.b.ins().store(vflags(), x, addr, 16 * k as i32);
        }
        self.vs()?.stored = true;
        Ok(())
    }
}
