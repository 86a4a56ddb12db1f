//! Memory accesses of a warp: loads and stores over its lanes (with the coalesced and
//! uniform fast paths), atomics, cuRAND states and `printf`.

use super::*;

impl BlockCtx<'_> {
    /// Runs `f` with the tracker for each active lane's thread (nothing when the kernel issues
    /// no `cp-async`).
    pub(super) fn each_thread(&self, exec: u64, f: impl Fn(&AsyncCopies, u32)) {
        if let Some(copies) = self.copies {
            let first = self.warp_first_thread.get();
            for l in lanes_of(exec) {
                f(copies, first + l);
            }
        }
    }

    /// Faults the first active lane whose `bytes`-byte access at its pointer plus `offset`
    /// meets a `cp-async` copy still in flight for its thread (`async_copies`); nothing to do
    /// when the kernel issues no `cp-async`.
    #[inline(always)]
    pub(super) fn check_copies<const W: usize>(
        &self,
        addr: &Lanes<W>,
        offset: u32,
        bytes: u64,
        exec: u64,
        access: Access,
    ) -> Result<(), Fault> {
        if self.copies.is_none() {
            return Ok(());
        }
        self.each_shared_lane(
            addr,
            offset,
            exec,
            access,
            |copies, region, byte, thread| copies.check(region, byte, bytes, thread, access),
        )
    }

    /// Runs `f` with the tracker, region, byte and thread of each active lane whose pointer
    /// plus `offset` is in shared memory; its hazard is the lane's fault, described as an
    /// `access`.
    pub(super) fn each_shared_lane<const W: usize>(
        &self,
        addr: &Lanes<W>,
        offset: u32,
        exec: u64,
        access: Access,
        f: impl Fn(&AsyncCopies, usize, u64, u32) -> Result<(), Hazard>,
    ) -> Result<(), Fault> {
        let Some(copies) = self.copies else {
            return Ok(());
        };
        let first = self.warp_first_thread.get();
        for l in lanes_of(exec) {
            let p = addr[l as usize];
            let Some(region) = copies.region_of(pointer_id(p), self.memory.shared.len()) else {
                continue;
            };
            let byte = (p & OFFSET_MASK) + u64::from(offset);
            let thread = first + l;
            f(copies, region, byte, thread).map_err(|hazard| {
                fault(l, hazard.describe(access, thread, |t| self.thread_name(t)))
            })?;
        }
        Ok(())
    }

    /// Thread `linear` of the block as `(x, y, z)`.
    fn thread_name(&self, linear: u32) -> String {
        let [bx, by, _] = self.launch.block;
        format!(
            "({}, {}, {})",
            linear % bx,
            linear / bx % by,
            linear / (bx * by)
        )
    }

    #[inline(always)]
    pub(super) fn load_lanes<const W: usize>(
        &self,
        addr: &Lanes<W>,
        kind: Kind,
        offset: u32,
        d: &mut Lanes<W>,
        exec: u64,
    ) -> Result<(), Fault> {
        self.check_copies(addr, offset, kind.size() as u64, exec, Access::Read)?;
        match kind.size() {
            1 => self.load_sized::<1, W>(addr, offset, d, exec)?,
            2 => self.load_sized::<2, W>(addr, offset, d, exec)?,
            4 => self.load_sized::<4, W>(addr, offset, d, exec)?,
            _ => self.load_sized::<8, W>(addr, offset, d, exec)?,
        }
        if kind.is_signed() || matches!(kind, Kind::Bool | Kind::Fp4) {
            for v in d.iter_mut() {
                *v = from_raw(kind, *v);
            }
        }
        Ok(())
    }

    /// The region of lane `l`'s pointer `p`, reusing the previous lane's when it is the same.
    #[inline(always)]
    pub(super) fn lane_region<'r>(
        &'r self,
        p: u64,
        l: u32,
        cached: &mut Option<(u32, Region<'r>)>,
    ) -> Result<Region<'r>, Fault> {
        let id = pointer_id(p);
        match *cached {
            Some((cid, r)) if cid == id => Ok(r),
            _ => {
                let (r, _) = self.memory.resolve(p, l)?;
                *cached = Some((id, r));
                Ok(r)
            }
        }
    }

    /// When the active lanes' pointers are consecutive elements of size `N` (lane `l` at
    /// `first + l * N`, the coalesced `a[base + lane]` pattern) inside one allocation and
    /// aligned: that allocation and the byte offset lane 0's element would have (lane `l`'s is
    /// that plus `l * N`). Bounds and alignment are then checked once for the whole warp.
    #[inline(always)]
    pub(super) fn contiguous_region<const N: usize, const W: usize>(
        &self,
        addr: &Lanes<W>,
        offset: u32,
        exec: u64,
    ) -> Option<(Region<'_>, u64)> {
        if exec == 0 {
            return None;
        }
        let (first, last) = (exec.trailing_zeros(), 63 - exec.leading_zeros());
        // Lane 0's pointer if the pattern holds (wrapping: lane 0 may be inactive).
        let base = addr[first as usize].wrapping_sub(first as u64 * N as u64);
        let mut diff = 0;
        if exec == full_mask::<W>() {
            for (l, p) in addr.iter().enumerate() {
                diff |= p ^ base.wrapping_add((l * N) as u64);
            }
        } else {
            for (l, p) in addr.iter().enumerate() {
                let active = 0u64.wrapping_sub((exec >> l) & 1);
                diff |= (p ^ base.wrapping_add((l * N) as u64)) & active;
            }
        }
        if diff != 0 {
            return None;
        }
        let start = (addr[first as usize] & OFFSET_MASK) + offset as u64;
        let end = start + (last - first) as u64 * N as u64 + N as u64;
        let region = self.memory.region(pointer_id(addr[first as usize]))?;
        // `end` within the allocation (below 2^40) also means no active lane's offset carried
        // into the allocation id.
        (start.is_multiple_of(N as u64) && end <= region.len as u64)
            .then(|| (region, start.wrapping_sub(first as u64 * N as u64)))
    }

    /// For a warp whose active pointers all fall, aligned, inside one allocation (gathers
    /// within one buffer): that allocation, checked once for all lanes.
    #[inline(always)]
    pub(super) fn uniform_region<const N: usize, const W: usize>(
        &self,
        addr: &Lanes<W>,
        offset: u32,
        exec: u64,
    ) -> Option<Region<'_>> {
        if exec == 0 {
            return None;
        }
        let id = addr[exec.trailing_zeros() as usize] >> OFFSET_BITS;
        let mut same = true;
        let mut max = 0;
        let mut bits = 0;
        for (l, p) in addr.iter().enumerate() {
            let active = (exec >> l) & 1 != 0;
            let off = if active {
                (p & OFFSET_MASK) + offset as u64
            } else {
                0
            };
            same &= !active || p >> OFFSET_BITS == id;
            max = max.max(off);
            bits |= off;
        }
        let region = self.memory.region(id as u32)?;
        (same && bits & (N as u64 - 1) == 0 && max + N as u64 <= region.len as u64)
            .then_some(region)
    }

    #[inline(always)]
    pub(super) fn load_sized<const N: usize, const W: usize>(
        &self,
        addr: &Lanes<W>,
        offset: u32,
        d: &mut Lanes<W>,
        exec: u64,
    ) -> Result<(), Fault> {
        if let Some((region, start)) = self.contiguous_region::<N, W>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            if exec == full_mask::<W>() {
                for (l, d) in d.iter_mut().enumerate() {
                    *d = region.load_raw_unchecked::<N>(start + (l * N) as u64);
                }
            } else {
                for l in lanes_of(exec) {
                    d[l as usize] =
                        region.load_raw_unchecked::<N>(start.wrapping_add(l as u64 * N as u64));
                }
            }
            return Ok(());
        }
        if let Some(region) = self.uniform_region::<N, W>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            if exec == full_mask::<W>() {
                for l in 0..W {
                    d[l] = region.load_raw_unchecked::<N>((addr[l] & OFFSET_MASK) + offset as u64);
                }
            } else {
                for l in lanes_of(exec) {
                    let l = l as usize;
                    d[l] = region.load_raw_unchecked::<N>((addr[l] & OFFSET_MASK) + offset as u64);
                }
            }
            return Ok(());
        }
        let mut cached = None;
        for l in lanes_of(exec) {
            let p = addr[l as usize];
            let region = self.lane_region(p, l, &mut cached)?;
            let off = (p & OFFSET_MASK) + offset as u64;
            d[l as usize] = region
                .load_raw::<N>(off)
                .map_err(|e| access_fault(l, "read", e))?;
        }
        Ok(())
    }

    #[inline(always)]
    pub(super) fn store_lanes<const W: usize>(
        &self,
        addr: &Lanes<W>,
        src: &Lanes<W>,
        kind: Kind,
        offset: u32,
        exec: u64,
    ) -> Result<(), Fault> {
        self.check_copies(addr, offset, kind.size() as u64, exec, Access::Write)?;
        match kind.size() {
            1 => self.store_sized::<1, W>(addr, src, offset, exec),
            2 => self.store_sized::<2, W>(addr, src, offset, exec),
            4 => self.store_sized::<4, W>(addr, src, offset, exec),
            _ => self.store_sized::<8, W>(addr, src, offset, exec),
        }
    }

    #[inline(always)]
    pub(super) fn store_sized<const N: usize, const W: usize>(
        &self,
        addr: &Lanes<W>,
        src: &Lanes<W>,
        offset: u32,
        exec: u64,
    ) -> Result<(), Fault> {
        if let Some((region, start)) = self.contiguous_region::<N, W>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            if exec == full_mask::<W>() {
                for (l, v) in src.iter().enumerate() {
                    region.store_raw_unchecked::<N>(start + (l * N) as u64, *v);
                }
            } else {
                for l in lanes_of(exec) {
                    region.store_raw_unchecked::<N>(
                        start.wrapping_add(l as u64 * N as u64),
                        src[l as usize],
                    );
                }
            }
            return Ok(());
        }
        if let Some(region) = self.uniform_region::<N, W>(addr, offset, exec) {
            // Checked above: in bounds and aligned for every active lane.
            for l in lanes_of(exec) {
                let l = l as usize;
                region.store_raw_unchecked::<N>((addr[l] & OFFSET_MASK) + offset as u64, src[l]);
            }
            return Ok(());
        }
        let mut cached = None;
        for l in lanes_of(exec) {
            let p = addr[l as usize];
            let region = self.lane_region(p, l, &mut cached)?;
            let off = (p & OFFSET_MASK) + offset as u64;
            region
                .store_raw::<N>(off, src[l as usize])
                .map_err(|e| access_fault(l, "write", e))?;
        }
        Ok(())
    }

    pub(super) fn read_curand(&self, ptr: u64, lane: u32) -> Result<curand::State, Fault> {
        let (region, off) = self.memory.resolve(ptr, lane)?;
        let mut bytes = [0u8; 48];
        for i in 0..6 {
            let word = region
                .load(off + 8 * i, Kind::U64)
                .map_err(|e| access_fault(lane, "read of a cuRAND state", e))?;
            bytes[8 * i as usize..8 * i as usize + 8].copy_from_slice(&word.to_le_bytes());
        }
        Ok(curand::State::from_bytes(&bytes))
    }

    pub(super) fn write_curand(
        &self,
        ptr: u64,
        lane: u32,
        state: curand::State,
    ) -> Result<(), Fault> {
        let (region, off) = self.memory.resolve(ptr, lane)?;
        let bytes = state.to_bytes();
        for i in 0..6usize {
            let word = u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"));
            region
                .store(off + 8 * i as u64, Kind::U64, word)
                .map_err(|e| access_fault(lane, "write of a cuRAND state", e))?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic_lanes<const W: usize>(
        &self,
        op: AtomicOp,
        kind: Kind,
        p: &Lanes<W>,
        x: &Lanes<W>,
        y: &Lanes<W>,
        d: &mut Lanes<W>,
        exec: u64,
    ) -> Result<(), Fault> {
        self.check_copies(p, 0, kind.size() as u64, exec, Access::Write)?;
        for l in lanes_of(exec) {
            let i = l as usize;
            let (region, off) = self.memory.resolve(p[i], l)?;
            let old = if kind.size() == 2 {
                let (cell, shift) = region
                    .atomic16(off)
                    .map_err(|e| access_fault(l, "atomic", e))?;
                atomic16(cell, shift, op, kind, x[i] as u16, y[i] as u16) as u64
            } else if kind.size() == 4 {
                let cell = region
                    .atomic32(off)
                    .map_err(|e| access_fault(l, "atomic", e))?;
                atomic32(cell, op, kind, x[i] as u32, y[i] as u32) as u64
            } else {
                let cell = region
                    .atomic64(off)
                    .map_err(|e| access_fault(l, "atomic", e))?;
                atomic64(cell, op, kind, x[i], y[i])
            };
            d[i] = from_raw(kind, old);
        }
        Ok(())
    }

    pub(super) fn printf<const W: usize>(
        &self,
        site: &PrintfSite,
        w: &Warp<W>,
        exec: u64,
    ) -> Result<(), Fault> {
        let mut text = String::new();
        for l in lanes_of(exec) {
            let mut args = Vec::with_capacity(site.args.len());
            for (k, a) in site.args.iter().enumerate() {
                let bits = w.regs[w.reg_base + a.reg as usize][l as usize];
                let arg = if a.is_byte_pointer && site.format.conversion(k) == Some('s') {
                    printf::Arg::Str(self.c_string(bits, l)?)
                } else if a.kind == Kind::Ptr {
                    printf::Arg::Pointer(bits)
                } else if a.kind.is_float() {
                    printf::Arg::Float(to_f64(a.kind, bits))
                } else if a.kind.is_signed() {
                    printf::Arg::Int(bits as i64)
                } else {
                    printf::Arg::UInt(bits)
                };
                args.push(arg);
            }
            text.push_str(&site.format.render(&args));
        }
        let mut out = self.launch.output.lock().unwrap_or_else(|p| p.into_inner());
        // Output errors (a closed stdout) are not the kernel's fault; CUDA drops them too.
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        Ok(())
    }

    pub(super) fn c_string(&self, ptr: u64, lane: u32) -> Result<String, Fault> {
        let (region, mut off) = self.memory.resolve(ptr, lane)?;
        let mut bytes = Vec::new();
        loop {
            let b = region
                .load(off, Kind::U8)
                .map_err(|e| access_fault(lane, "read of a %s string", e))?;
            if b == 0 {
                break;
            }
            bytes.push(b as u8);
            off += 1;
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
