//! The warp-level tensor-core instructions over one warp's lanes: `mma.sync` (gather each
//! lane's fragments by PTX's layout, multiply, scatter), `ldmatrix` (lanes give row addresses)
//! and `cp.async` (a copy that completes at once; `async_copies` tracks it until the kernel
//! waits for it).
//!
//! Arithmetic: floating inputs are exact in `f64` (every product of two f16, bf16, tf32 or
//! fp8 values is), summed in `f64` with the accumulator and rounded once to `f32`. A GPU's
//! tensor cores sum in their own order and precision, so results agree bit for bit whenever
//! the sums are exact in `f32` (integers, exactly representable inputs), and within the
//! rounding of a K-term sum otherwise. tf32 inputs drop their low 13 mantissa bits, as the
//! hardware ignores them. The integer shapes wrap in 32 bits, as `mma.sync` without
//! `.satfinite`.

use super::*;
use crate::memory::{is_global_pointer, is_shared_pointer, signed_offset};
use chorus_lang::ir::tensor::{MmaInput, MmaKind, MmaOperand};
use chorus_minifloat::{Fp8E4M3, Fp8E5M2};
use half::{bf16, f16};

/// A fault unless all `W` lanes are active and `W` is 32: the `.sync.aligned` instructions
/// need the whole warp.
fn whole_warp<const W: usize>(what: &str, exec: u64) -> Result<(), Fault> {
    if W != 32 {
        return Err(fault(0, format!("`{what}` needs 32-lane warps, not {W}")));
    }
    if exec != full_mask::<W>() {
        let lane = (!exec & full_mask::<W>()).trailing_zeros();
        return Err(fault(
            lane,
            format!(
                "`{what}` needs all 32 lanes of the warp active (lane {lane} is not: the \
                 instruction is .sync.aligned)"
            ),
        ));
    }
    Ok(())
}

/// An element of `input` from its bits, as `f64` (integers exactly).
fn element(input: MmaInput, bits: u32) -> f64 {
    match input {
        MmaInput::F16 => f16::from_bits(bits as u16).to_f64(),
        MmaInput::Bf16 => bf16::from_bits(bits as u16).to_f64(),
        MmaInput::Tf32 => f64::from(f32::from_bits(bits & !0x1fff)),
        MmaInput::E4m3 => Fp8E4M3(bits as u8).to_f64(),
        MmaInput::E5m2 => Fp8E5M2(bits as u8).to_f64(),
        MmaInput::S8 => f64::from(bits as u8 as i8),
        MmaInput::U8 => f64::from(bits as u8),
    }
}

/// Gathers `operand`'s `rows × cols` matrix from the fragments in `regs[first..]`.
fn gather<const W: usize>(
    regs: &[Lanes<W>],
    kind: MmaKind,
    operand: MmaOperand,
    first: Reg,
    cols: u32,
    out: &mut [f64],
) {
    let bits = kind.input.bits();
    let per_register = 32 / bits;
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1 << bits) - 1
    };
    for lane in 0..32u32 {
        for i in 0..kind.elements(operand) {
            let word = regs[(first + i / per_register) as usize][lane as usize] as u32;
            let raw = (word >> ((i % per_register) * bits)) & mask;
            let (r, c) = kind.coordinate(operand, lane, i);
            out[(r * cols + c) as usize] = element(kind.input, raw);
        }
    }
}

/// `D = A·B + C` for the warp whose registers start at `regs[0]`; `[dst, a, b, c]` are the
/// fragments' first registers.
pub(super) fn mma_lanes<const W: usize>(
    regs: &mut [Lanes<W>],
    kind: MmaKind,
    [dst, a, b, c]: [Reg; 4],
    exec: u64,
) -> Result<(), Fault> {
    whole_warp::<W>("mma-sync", exec)?;
    let (m, n, k) = kind.shape.dims();
    let (mut am, mut bm) = (vec![0.0; (m * k) as usize], vec![0.0; (k * n) as usize]);
    gather(regs, kind, MmaOperand::A, a, k, &mut am);
    gather(regs, kind, MmaOperand::B, b, n, &mut bm);
    let integer = kind.input.is_integer();
    let mut out = [[0u64; 4]; 32];
    for lane in 0..32u32 {
        for i in 0..4 {
            let (r, col) = kind.coordinate(MmaOperand::C, lane, i);
            let acc_bits = regs[(c + i) as usize][lane as usize];
            let dot = |row: u32| -> f64 {
                (0..k)
                    .map(|kk| am[(row * k + kk) as usize] * bm[(kk * n + col) as usize])
                    .sum()
            };
            out[lane as usize][i as usize] = if integer {
                // Each product and the K-term sum are exact in f64 (|sum| < 2^21).
                let sum = dot(r) as i64 as i32;
                (acc_bits as i32).wrapping_add(sum) as i64 as u64
            } else {
                let acc = f64::from(f32::from_bits(acc_bits as u32));
                u64::from(((acc + dot(r)) as f32).to_bits())
            };
        }
    }
    for (lane, values) in out.iter().enumerate() {
        for (i, v) in values.iter().enumerate() {
            regs[dst as usize + i][lane] = *v;
        }
    }
    Ok(())
}

impl BlockCtx<'_> {
    /// A fault unless lane `l`'s `ptr` is in shared memory and aligned to `align` bytes.
    fn shared_aligned(what: &str, ptr: u64, align: i64, l: u32) -> Result<(), Fault> {
        if !is_shared_pointer(ptr) {
            return Err(fault(
                l,
                format!("`{what}`: lane {l}'s address is not in shared memory"),
            ));
        }
        if signed_offset(ptr).rem_euclid(align) != 0 {
            return Err(fault(
                l,
                format!("`{what}`: lane {l}'s address is not aligned to {align} bytes"),
            ));
        }
        Ok(())
    }

    /// `ldmatrix`: matrix `j` has its row `r` at the address of lane `8 j + r`; without
    /// `.trans`, lane `l` receives row `l / 4`, columns `2 (l % 4)` and `2 (l % 4) + 1`; with
    /// it, column `l / 4`, rows `2 (l % 4)` and `2 (l % 4) + 1` (low half first).
    pub(super) fn ldmatrix_lanes<const W: usize>(
        &self,
        regs: &mut [Lanes<W>],
        count: u8,
        trans: bool,
        dst: Reg,
        addr: Reg,
        exec: u64,
    ) -> Result<(), Fault> {
        whole_warp::<W>("ldmatrix", exec)?;
        let rows = regs[addr as usize];
        for l in 0..8 * u32::from(count) {
            Self::shared_aligned("ldmatrix", rows[l as usize], 16, l)?;
        }
        for j in 0..usize::from(count) {
            let row = |r: usize| rows[8 * j + r];
            let mut d = [0u64; W];
            if trans {
                let lo: Lanes<W> =
                    std::array::from_fn(|l| offset_pointer(row((l % 4) * 2), (l / 4) as i64 * 2));
                let hi: Lanes<W> = std::array::from_fn(|l| {
                    offset_pointer(row((l % 4) * 2 + 1), (l / 4) as i64 * 2)
                });
                let mut h = [0u64; W];
                self.load_lanes(&lo, Kind::U16, 0, &mut d, exec)?;
                self.load_lanes(&hi, Kind::U16, 0, &mut h, exec)?;
                for (x, y) in d.iter_mut().zip(h) {
                    *x |= y << 16;
                }
            } else {
                let a: Lanes<W> =
                    std::array::from_fn(|l| offset_pointer(row(l / 4), (l % 4) as i64 * 4));
                self.load_lanes(&a, Kind::U32, 0, &mut d, exec)?;
            }
            regs[dst as usize + j] = d;
        }
        Ok(())
    }

    /// `cp.async`: each active lane copies `bytes` bytes from global `src` to shared `dst`,
    /// both aligned to `bytes`, now; the tracker holds the destination until the thread waits.
    pub(super) fn cp_async_lanes<const W: usize>(
        &self,
        dst: &Lanes<W>,
        src: &Lanes<W>,
        bytes: u8,
        exec: u64,
    ) -> Result<(), Fault> {
        for l in lanes_of(exec) {
            Self::shared_aligned("cp-async", dst[l as usize], i64::from(bytes), l)?;
            let s = src[l as usize];
            if !is_global_pointer(s) || signed_offset(s).rem_euclid(i64::from(bytes)) != 0 {
                return Err(fault(
                    l,
                    format!(
                        "`cp-async`: lane {l}'s source must be global memory aligned to {bytes} bytes"
                    ),
                ));
            }
        }
        let mut word = [0u64; W];
        for at in (0..u32::from(bytes)).step_by(4) {
            self.load_lanes(src, Kind::U32, at, &mut word, exec)?;
            self.store_lanes(dst, &word, Kind::U32, at, exec)?;
        }
        // The destination is the copy's until its thread waits for it (checked above as a
        // write: no earlier copy is still in flight there), unless another warp read it in
        // this barrier interval.
        self.each_shared_lane(
            dst,
            0,
            exec,
            Access::Write,
            |copies, region, byte, thread| copies.record(region, byte, u64::from(bytes), thread),
        )
    }
}
