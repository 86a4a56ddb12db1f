//! The instruction loop: one warp runs until it finishes, reaches a barrier or faults.

use super::texture::TextureAccess;
use super::*;

impl BlockCtx<'_> {
    /// Runs `w` until it finishes, reaches a barrier, or faults (the warp's `pc` is then the
    /// faulting instruction).
    pub(super) fn run_warp<const W: usize>(&self, w: &mut Warp<W>) -> Result<Status, Fault> {
        let prog = self.launch.program;
        let mut func = &prog.functions[w.func as usize];
        loop {
            let pc = w.pc as usize;
            w.pc += 1;
            let rb = w.reg_base;
            let mb = w.mask_base;
            let exec = w.exec;
            macro_rules! reg {
                ($r:expr) => {
                    w.regs[rb + $r as usize]
                };
            }
            let result: Result<(), Fault> = match &func.code[pc] {
                Op::Const { dst, bits } => {
                    reg!(*dst) = [*bits; W];
                    Ok(())
                }
                Op::Copy { dst, src } => {
                    let (d, s) = (rb + *dst as usize, rb + *src as usize);
                    w.regs.copy_within(s..s + 1, d);
                    Ok(())
                }
                Op::CopyMasked { dst, src } => {
                    let (d, s) = (rb + *dst as usize, rb + *src as usize);
                    if exec == full_mask::<W>() {
                        w.regs.copy_within(s..s + 1, d);
                    } else {
                        let s = w.regs[s];
                        let d = &mut w.regs[d];
                        for l in 0..W {
                            let keep = ((exec >> l) & 1).wrapping_sub(1);
                            d[l] = (s[l] & !keep) | (d[l] & keep);
                        }
                    }
                    Ok(())
                }
                Op::Select { dst, cond, a, b } => {
                    let (c, x, y) = (reg!(*cond), reg!(*a), reg!(*b));
                    let d = &mut reg!(*dst);
                    for l in 0..W {
                        d[l] = if c[l] != 0 { x[l] } else { y[l] };
                    }
                    Ok(())
                }
                Op::Index { dst, source } => {
                    reg!(*dst) = match *source {
                        IndexSource::ThreadIdx(a) => w.tid[a],
                        IndexSource::BlockIdx(a) => [self.block_idx[a] as u64; W],
                        IndexSource::BlockDim(a) => [self.launch.block[a] as u64; W],
                        IndexSource::GridDim(a) => [self.launch.grid[a] as u64; W],
                        IndexSource::LaneId => std::array::from_fn(|l| l as u64),
                    };
                    Ok(())
                }
                Op::Unary { op, kind, dst, a } => {
                    let (dst, a) = (rb + *dst as usize, rb + *a as usize);
                    with2(&mut w.regs, dst, a, |x, d| {
                        unary_lanes(*op, *kind, x, d, exec)
                    })
                }
                Op::Binary {
                    op,
                    kind,
                    dst,
                    a,
                    b,
                } => {
                    let (dst, a, b) = (rb + *dst as usize, rb + *a as usize, rb + *b as usize);
                    with3(&mut w.regs, dst, a, b, |x, y, d| {
                        binary_lanes(*op, *kind, x, y, d, exec)
                    })
                }
                Op::Fma { kind, dst, a, b, c } => {
                    let (x, y, z) = (reg!(*a), reg!(*b), reg!(*c));
                    let d = &mut reg!(*dst);
                    for l in 0..W {
                        d[l] = fma(*kind, x[l], y[l], z[l]);
                    }
                    Ok(())
                }
                Op::Math1 { f, kind, dst, a } => {
                    let x = reg!(*a);
                    let d = &mut reg!(*dst);
                    for l in 0..W {
                        d[l] = math1(*f, *kind, x[l]);
                    }
                    Ok(())
                }
                Op::Math2 { f, kind, dst, a, b } => {
                    let (x, y) = (reg!(*a), reg!(*b));
                    let d = &mut reg!(*dst);
                    for l in 0..W {
                        d[l] = math2(*f, *kind, x[l], y[l]);
                    }
                    Ok(())
                }
                Op::Convert { from, to, dst, src } => {
                    let (dst, src) = (rb + *dst as usize, rb + *src as usize);
                    with2(&mut w.regs, dst, src, |x, d| {
                        for l in 0..W {
                            d[l] = convert(*from, *to, x[l]);
                        }
                        Ok(())
                    })
                }
                Op::PtrIndex {
                    dst,
                    base,
                    index,
                    index_kind,
                    stride,
                } => {
                    let (dst, base, index) = (
                        rb + *dst as usize,
                        rb + *base as usize,
                        rb + *index as usize,
                    );
                    let stride = *stride;
                    let signed = index_kind.is_signed();
                    with3(&mut w.regs, dst, base, index, |p, i, d| {
                        if signed && stride > 0 && (stride as u64).is_power_of_two() {
                            // The common `a[i]` case: a shift is the same saturating product,
                            // and the loop vectorises.
                            let shift = stride.trailing_zeros();
                            for l in 0..W {
                                d[l] = offset_pointer(p[l], shifted_index(i[l] as i64, shift));
                            }
                        } else if signed {
                            for l in 0..W {
                                d[l] = offset_pointer(p[l], scaled_index(i[l] as i64, stride));
                            }
                        } else {
                            for l in 0..W {
                                let index = i[l].min(i64::MAX as u64) as i64;
                                d[l] = offset_pointer(p[l], scaled_index(index, stride));
                            }
                        }
                        Ok(())
                    })
                }
                Op::PtrAdd { dst, base, bytes } => {
                    let p = reg!(*base);
                    let d = &mut reg!(*dst);
                    for l in 0..W {
                        d[l] = offset_pointer(p[l], *bytes);
                    }
                    Ok(())
                }
                Op::LocalAddr { dst, offset } => {
                    let base = w.local_base as u64 + *offset as u64;
                    let linear = w.linear;
                    let d = &mut reg!(*dst);
                    for l in 0..W {
                        d[l] = encode(THREAD_LOCAL_BASE + linear[l], base);
                    }
                    Ok(())
                }
                Op::Load {
                    dst,
                    addr,
                    kind,
                    offset,
                } => {
                    let (dst, addr) = (rb + *dst as usize, rb + *addr as usize);
                    with2(&mut w.regs, dst, addr, |a, d| {
                        self.load_lanes(a, *kind, *offset, d, exec)
                    })
                }
                Op::Store {
                    addr,
                    src,
                    kind,
                    offset,
                } => self.store_lanes(&reg!(*addr), &reg!(*src), *kind, *offset, exec),
                Op::Jump { target } => {
                    w.pc = *target;
                    Ok(())
                }
                Op::IfBegin {
                    cond,
                    slot,
                    else_target,
                } => {
                    let c = mask_of(&reg!(*cond)) & exec;
                    w.masks[mb + *slot as usize] = exec;
                    w.masks[mb + *slot as usize + 1] = exec & !c;
                    w.exec = c;
                    if c == 0 {
                        w.pc = *else_target;
                    }
                    Ok(())
                }
                Op::Else { slot, end_target } => {
                    w.exec = w.masks[mb + *slot as usize + 1];
                    if w.exec == 0 {
                        w.pc = *end_target;
                    }
                    Ok(())
                }
                Op::EndIf { slot } => {
                    w.exec = w.masks[mb + *slot as usize] & !w.parked;
                    Ok(())
                }
                Op::LoopBegin { slot } | Op::SwitchBegin { slot } => {
                    let s = mb + *slot as usize;
                    w.masks[s] = exec;
                    w.masks[s + 1] = 0;
                    w.masks[s + 2] = if matches!(func.code[pc], Op::SwitchBegin { .. }) {
                        exec
                    } else {
                        0
                    };
                    Ok(())
                }
                Op::LoopTest { cond, exit } => {
                    if let Some(c) = cond {
                        w.exec &= mask_of(&reg!(*c));
                    }
                    if w.exec == 0 {
                        w.pc = *exit;
                    }
                    Ok(())
                }
                Op::LoopContinue { slot } => {
                    let s = mb + *slot as usize + 2;
                    let back = w.masks[s];
                    w.exec |= back;
                    w.parked &= !back;
                    w.masks[s] = 0;
                    Ok(())
                }
                Op::LoopEnd { slot } | Op::SwitchEnd { slot } => {
                    let s = mb + *slot as usize;
                    w.parked &= !w.masks[s + 1];
                    w.exec = w.masks[s] & !w.parked;
                    Ok(())
                }
                Op::Break { slot } => {
                    w.masks[mb + *slot as usize + 1] |= exec;
                    w.parked |= exec;
                    w.exec = 0;
                    Ok(())
                }
                Op::Continue { slot } => {
                    w.masks[mb + *slot as usize + 2] |= exec;
                    w.parked |= exec;
                    w.exec = 0;
                    Ok(())
                }
                Op::Case {
                    slot,
                    scrutinee,
                    values,
                    next,
                } => {
                    let s = mb + *slot as usize + 2;
                    let sc = reg!(*scrutinee);
                    let wanted =
                        &prog.case_values[values.0 as usize..(values.0 + values.1) as usize];
                    let mut m = 0;
                    for l in lanes_of(w.masks[s]) {
                        if wanted.contains(&sc[l as usize]) {
                            m |= 1 << l;
                        }
                    }
                    w.masks[s] &= !m;
                    w.exec = m;
                    if m == 0 {
                        w.pc = *next;
                    }
                    Ok(())
                }
                Op::Default { slot } => {
                    let s = mb + *slot as usize + 2;
                    w.exec = w.masks[s];
                    w.masks[s] = 0;
                    Ok(())
                }
                Op::Return { value } => {
                    if let Some(v) = value {
                        for i in 0..func.ret_leaves {
                            let s = reg!(*v + i);
                            let d = &mut reg!(func.ret_reg + i);
                            for l in lanes_of(exec) {
                                d[l as usize] = s[l as usize];
                            }
                        }
                    }
                    w.parked |= exec;
                    w.exec = 0;
                    if w.parked & w.entry_exec == w.entry_exec {
                        // Every lane has returned: go straight to the end.
                        w.pc = (func.code.len() - 1) as u32;
                    }
                    Ok(())
                }
                Op::Call { index } => {
                    if exec == 0 {
                        continue;
                    }
                    let site = &prog.calls[*index as usize];
                    if w.frames.len() >= MAX_CALL_DEPTH {
                        return Err(fault(
                            exec.trailing_zeros(),
                            format!("device-function calls nested deeper than {MAX_CALL_DEPTH}"),
                        ));
                    }
                    let callee = &prog.functions[site.function as usize];
                    let reg_base = rb + func.n_regs as usize;
                    let mask_base = mb + func.n_masks as usize;
                    let local_base = w.local_base + func.local_bytes;
                    if callee.local_bytes > 0
                        && (local_base + callee.local_bytes) as usize > self.launch.stack_bytes
                    {
                        return Err(fault(exec.trailing_zeros(), "local-memory stack overflow"));
                    }
                    if w.regs.len() < reg_base + callee.n_regs as usize {
                        w.regs.resize(reg_base + callee.n_regs as usize, [0; W]);
                    }
                    if w.masks.len() < mask_base + callee.n_masks as usize {
                        w.masks.resize(mask_base + callee.n_masks as usize, 0);
                    }
                    for &(src, dst) in &site.args {
                        w.regs[reg_base + dst as usize] = w.regs[rb + src as usize];
                    }
                    w.frames.push(Frame {
                        func: w.func,
                        pc: w.pc,
                        reg_base: rb,
                        mask_base: mb,
                        local_base: w.local_base,
                        exec,
                        parked: w.parked,
                        entry_exec: w.entry_exec,
                        call: *index,
                    });
                    w.func = site.function;
                    w.pc = 0;
                    w.reg_base = reg_base;
                    w.mask_base = mask_base;
                    w.local_base = local_base;
                    w.parked = 0;
                    w.entry_exec = exec;
                    func = callee;
                    Ok(())
                }
                Op::End => {
                    let Some(frame) = w.frames.pop() else {
                        return Ok(Status::Done);
                    };
                    let callee = func;
                    let callee_base = w.reg_base;
                    w.func = frame.func;
                    w.pc = frame.pc;
                    w.reg_base = frame.reg_base;
                    w.mask_base = frame.mask_base;
                    w.local_base = frame.local_base;
                    w.exec = frame.exec;
                    w.parked = frame.parked;
                    w.entry_exec = frame.entry_exec;
                    func = &prog.functions[w.func as usize];
                    if let Some((dest, n)) = prog.calls[frame.call as usize].dest {
                        for i in 0..n as usize {
                            w.regs[frame.reg_base + dest as usize + i] =
                                w.regs[callee_base + callee.ret_reg as usize + i];
                        }
                    }
                    Ok(())
                }
                Op::SyncThreads => return Ok(Status::Barrier),
                Op::Fence => {
                    std::sync::atomic::fence(Ordering::SeqCst);
                    Ok(())
                }
                Op::Shfl {
                    mode,
                    dst,
                    value,
                    lane,
                    width,
                    mask,
                } => {
                    let (v, src, wd, m) = (reg!(*value), reg!(*lane), reg!(*width), reg!(*mask));
                    let d = &mut reg!(*dst);
                    shuffle(*mode, &v, &src, &wd, &m, exec, d);
                    Ok(())
                }
                Op::Vote {
                    op,
                    dst,
                    mask,
                    pred,
                } => {
                    let participating = exec & operand_mask::<W>(first_active(&reg!(*mask), exec));
                    let p = mask_of(&reg!(*pred)) & participating;
                    let r = match op {
                        VoteOp::Ballot => p,
                        VoteOp::All => (p == participating) as u64,
                        VoteOp::Any => (p != 0) as u64,
                    };
                    reg!(*dst) = [r; W];
                    Ok(())
                }
                Op::ActiveMask { dst } => {
                    reg!(*dst) = [exec; W];
                    Ok(())
                }
                Op::MatchAny { dst, mask, value } => {
                    let participating = exec & operand_mask::<W>(first_active(&reg!(*mask), exec));
                    let v = reg!(*value);
                    let d = &mut reg!(*dst);
                    for l in lanes_of(exec) {
                        let mut m = 0u64;
                        for j in lanes_of(participating) {
                            if v[j as usize] == v[l as usize] {
                                m |= 1 << j;
                            }
                        }
                        d[l as usize] = m;
                    }
                    Ok(())
                }
                Op::MatchAll {
                    dst,
                    mask,
                    value,
                    pred,
                } => {
                    let participating = exec & operand_mask::<W>(first_active(&reg!(*mask), exec));
                    let v = reg!(*value);
                    let first = v[(participating.trailing_zeros() as usize).min(W - 1)];
                    let all = lanes_of(participating).all(|j| v[j as usize] == first);
                    reg!(*dst) = [if all { participating } else { 0 }; W];
                    let p = reg!(*pred);
                    let ones = [all as u64; W];
                    self.store_lanes(&p, &ones, Kind::I32, 0, exec)
                }
                Op::Reduce {
                    op,
                    kind,
                    dst,
                    mask,
                    value,
                } => {
                    let participating = exec & operand_mask::<W>(first_active(&reg!(*mask), exec));
                    let v = reg!(*value);
                    let r = warp_reduce(*op, *kind, &v, participating);
                    reg!(*dst) = [r; W];
                    Ok(())
                }
                Op::Atomic {
                    op,
                    kind,
                    dst,
                    addr,
                    a,
                    b,
                } => {
                    let (p, x, y) = (reg!(*addr), reg!(*a), reg!(*b));
                    let mut d = reg!(*dst);
                    let r = self.atomic_lanes(*op, *kind, &p, &x, &y, &mut d, exec);
                    reg!(*dst) = d;
                    r
                }
                Op::CurandInit {
                    seed,
                    subsequence,
                    offset,
                    state,
                } => {
                    let (s, q, o, p) =
                        (reg!(*seed), reg!(*subsequence), reg!(*offset), reg!(*state));
                    let mut r = Ok(());
                    for l in lanes_of(exec) {
                        let i = l as usize;
                        let st = curand::State::init(s[i], q[i], o[i]);
                        r = self.write_curand(p[i], l, st);
                        if r.is_err() {
                            break;
                        }
                    }
                    r
                }
                Op::CurandUniform { dst, state, double }
                | Op::CurandNormal { dst, state, double } => {
                    let normal = matches!(func.code[pc], Op::CurandNormal { .. });
                    let p = reg!(*state);
                    let mut d = reg!(*dst);
                    let mut r = Ok(());
                    for l in lanes_of(exec) {
                        let i = l as usize;
                        match self.read_curand(p[i], l) {
                            Ok(mut st) => {
                                d[i] = match (normal, *double) {
                                    (false, false) => st.uniform().to_bits() as u64,
                                    (false, true) => st.uniform_double().to_bits(),
                                    (true, false) => st.normal().to_bits() as u64,
                                    (true, true) => st.normal_double().to_bits(),
                                };
                                r = self.write_curand(p[i], l, st);
                            }
                            Err(e) => r = Err(e),
                        }
                        if r.is_err() {
                            break;
                        }
                    }
                    reg!(*dst) = d;
                    r
                }
                Op::Printf { index } => self.printf(&prog.printfs[*index as usize], w, exec),
                Op::Texture {
                    op,
                    dst,
                    handle,
                    coords,
                    value,
                    component,
                    count,
                } => self.texture_lanes(
                    &mut w.regs[rb..],
                    TextureAccess {
                        op: *op,
                        dst: *dst,
                        handle: *handle,
                        coords: *coords,
                        value: *value,
                        component: *component,
                        count: *count,
                    },
                    exec,
                ),
                Op::Mma { kind, dst, a, b, c } => {
                    tensor::mma_lanes(&mut w.regs[rb..], *kind, [*dst, *a, *b, *c], exec)
                }
                Op::LdMatrix {
                    count,
                    trans,
                    dst,
                    addr,
                } => self.ldmatrix_lanes(&mut w.regs[rb..], *count, *trans, *dst, *addr, exec),
                Op::CpAsync { dst, src, bytes } => {
                    self.cp_async_lanes(&reg!(*dst), &reg!(*src), *bytes, exec)
                }
                Op::CpAsyncCommit => {
                    self.each_thread(exec, AsyncCopies::commit);
                    Ok(())
                }
                Op::CpAsyncWait(groups) => {
                    self.each_thread(exec, |c, t| c.wait(t, u32::from(*groups)));
                    Ok(())
                }
                Op::CpAsyncWaitAll => {
                    self.each_thread(exec, AsyncCopies::wait_all);
                    Ok(())
                }
                Op::SyncWarp => {
                    if let Some(copies) = self.copies {
                        copies.syncwarp(self.warp_first_thread.get());
                    }
                    Ok(())
                }
            };
            if let Err(f) = result {
                w.pc = pc as u32;
                return Err(f);
            }
        }
    }
}

/// Runs `f(source, destination)` on two registers of `regs` without copying either (a copy
/// of the source is made only when they are the same register).
#[inline(always)]
pub(super) fn with2<R, const W: usize>(
    regs: &mut [Lanes<W>],
    dst: usize,
    a: usize,
    f: impl FnOnce(&Lanes<W>, &mut Lanes<W>) -> R,
) -> R {
    if dst == a {
        let x = regs[a];
        return f(&x, &mut regs[dst]);
    }
    let [d, x] = regs
        .get_disjoint_mut([dst, a])
        .expect("registers within the frame");
    f(x, d)
}

/// Runs `f(a, b, destination)` on three registers of `regs`, copying only on aliasing.
#[inline(always)]
pub(super) fn with3<R, const W: usize>(
    regs: &mut [Lanes<W>],
    dst: usize,
    a: usize,
    b: usize,
    f: impl FnOnce(&Lanes<W>, &Lanes<W>, &mut Lanes<W>) -> R,
) -> R {
    if dst == a || dst == b {
        let (x, y) = (regs[a], regs[b]);
        return f(&x, &y, &mut regs[dst]);
    }
    if a == b {
        let [d, x] = regs
            .get_disjoint_mut([dst, a])
            .expect("registers within the frame");
        return f(x, x, d);
    }
    let [d, x, y] = regs
        .get_disjoint_mut([dst, a, b])
        .expect("registers within the frame");
    f(x, y, d)
}
