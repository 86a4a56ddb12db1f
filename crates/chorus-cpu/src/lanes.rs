//! Warp-wide values: a register of `W` lanes (32, or 64 for AMD CDNA's waves), lane masks, a lane's fault, and the operations
//! that act on whole registers (arithmetic and comparisons by kind, shuffles, reductions).

use crate::bytecode::{BinOp, ShflMode, UnOp};
use crate::scalar::{float_binary, unary};
use crate::value::{Kind, canon, from_f32, to_f32};
use chorus_lang::ir::WarpReduceOp;

/// One register: a 64-bit value per lane.
pub(crate) type Lanes<const W: usize> = [u64; W];

/// The mask of all `W` lanes of a warp.
#[inline(always)]
pub(crate) const fn full_mask<const W: usize>() -> u64 {
    u64::MAX >> (64 - W)
}

/// The lanes a mask operand names: the language's masks are 32-bit `uint`; on a wider warp
/// only the full 32-bit mask is accepted (`check::validate`), and it means the whole warp.
#[inline(always)]
pub(crate) fn operand_mask<const W: usize>(m: u64) -> u64 {
    let m = m as u32 as u64;
    if W > 32 && m == u32::MAX as u64 {
        full_mask::<W>()
    } else {
        m
    }
}

/// A thread's failure, before it is given its kernel, block and thread.
pub(crate) struct Fault {
    pub(crate) lane: u32,
    pub(crate) message: String,
}

pub(crate) fn fault(lane: u32, message: impl Into<String>) -> Fault {
    Fault {
        lane,
        message: message.into(),
    }
}

#[inline(always)]
pub(crate) fn lanes_of(mut m: u64) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros();
            m &= m - 1;
            Some(l)
        }
    })
}

/// The lanes of `r` that are non-zero, as a mask.
#[inline(always)]
pub(crate) fn mask_of<const W: usize>(r: &Lanes<W>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // Two lanes per SSE2 compare (a lane is zero when both its halves are), one
        // `movmskpd` each: about a third of the scalar loop's instructions.
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned loads read whole lanes
        // of `r`.
        unsafe {
            let zero = _mm_setzero_si128();
            let mut zeros = 0u64;
            for pair in 0..W / 2 {
                let v = _mm_loadu_si128(r.as_ptr().add(2 * pair).cast());
                let eq = _mm_cmpeq_epi32(v, zero);
                let both = _mm_and_si128(eq, _mm_shuffle_epi32::<0b10_11_00_01>(eq));
                zeros |= (_mm_movemask_pd(_mm_castsi128_pd(both)) as u64) << (2 * pair);
            }
            !zeros & full_mask::<W>()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0;
        for (l, v) in r.iter().enumerate() {
            m |= ((*v != 0) as u64) << l;
        }
        m
    }
}

/// The value of the first active lane (masks and widths are warp-uniform).
#[inline(always)]
pub(crate) fn first_active<const W: usize>(r: &Lanes<W>, exec: u64) -> u64 {
    r[(exec.trailing_zeros() as usize).min(W - 1)]
}

/// CUDA's `__shfl*_sync`, by the PTX `shfl.sync` rules: a source outside the lane's segment
/// (for `up`, below it; for `down` and `xor`, above it), or one that is not active and in
/// `mask`, gives the lane its own value.
pub(crate) fn shuffle<const W: usize>(
    mode: ShflMode,
    v: &Lanes<W>,
    src: &Lanes<W>,
    width: &Lanes<W>,
    mask: &Lanes<W>,
    exec: u64,
    d: &mut Lanes<W>,
) {
    let sources = exec & operand_mask::<W>(first_active(mask, exec));
    let lanes = W as u32;
    if sources == full_mask::<W>() {
        // Every lane active and a source (full-warp reductions and scans): the rules below
        // without the per-lane branches, one source index per lane, kept in range and chosen
        // by `ok` (out-of-range sources are exactly those with `ok` false).
        if src.iter().all(|&s| s == src[0]) && width.iter().all(|&w| w == width[0]) {
            // One delta (or index) and width for the warp, as in most code: the same with the
            // segment arithmetic out of the loop.
            let w = width[0] as u32;
            let w = if w.is_power_of_two() && w <= lanes {
                w
            } else {
                lanes
            };
            let s = src[0] as u32;
            let segment = !(w - 1);
            match mode {
                ShflMode::Idx => {
                    for l in 0..lanes {
                        d[l as usize] = v[((l & segment) | (s & (w - 1))) as usize & (W - 1)];
                    }
                }
                ShflMode::Up => {
                    for l in 0..lanes {
                        let ok = s <= l - (l & segment);
                        let j = if ok { l.wrapping_sub(s) } else { l };
                        d[l as usize] = v[j as usize & (W - 1)];
                    }
                }
                ShflMode::Down => {
                    for l in 0..lanes {
                        let ok = s <= ((l & segment) | (w - 1)) - l;
                        let j = if ok { l.wrapping_add(s) } else { l };
                        d[l as usize] = v[j as usize & (W - 1)];
                    }
                }
                ShflMode::Xor => {
                    for l in 0..lanes {
                        let j = l ^ (s & (lanes - 1));
                        let j = if j <= ((l & segment) | (w - 1)) { j } else { l };
                        d[l as usize] = v[j as usize & (W - 1)];
                    }
                }
            }
            return;
        }
        for l in 0..lanes {
            let i = l as usize;
            let (w, min_lane, max_lane) = segment(l, width[i], lanes);
            let s = src[i] as u32;
            let (j, ok) = match mode {
                ShflMode::Idx => (min_lane | (s & (w - 1)), true),
                ShflMode::Up => (l.wrapping_sub(s), s <= l - min_lane),
                ShflMode::Down => (l.wrapping_add(s), s <= max_lane - l),
                ShflMode::Xor => {
                    let j = l ^ (s & (lanes - 1));
                    (j, j <= max_lane)
                }
            };
            d[i] = if ok { v[j as usize & (W - 1)] } else { v[i] };
        }
        return;
    }
    shuffle_by_lane(mode, v, src, width, sources, exec, d);
}

/// Lane `l`'s shuffle segment for a width operand: the width used (a power of two up to
/// `lanes`, else the whole warp, as CUDA's `width`) and the segment's first and last lane.
fn segment(l: u32, width: u64, lanes: u32) -> (u32, u32, u32) {
    let w = width as u32;
    let w = if w.is_power_of_two() && w <= lanes {
        w
    } else {
        lanes
    };
    let min_lane = l & !(w - 1);
    (w, min_lane, min_lane | (w - 1))
}

/// [`shuffle`] lane by lane, for any execution mask and `sources` (the active lanes in the
/// mask operand).
fn shuffle_by_lane<const W: usize>(
    mode: ShflMode,
    v: &Lanes<W>,
    src: &Lanes<W>,
    width: &Lanes<W>,
    sources: u64,
    exec: u64,
    d: &mut Lanes<W>,
) {
    let lanes = W as u32;
    for l in 0..lanes {
        let i = l as usize;
        d[i] = v[i];
        if exec >> l & 1 == 0 {
            continue;
        }
        let (w, min_lane, max_lane) = segment(l, width[i], lanes);
        let s = src[i] as i64;
        let (j, ok) = match mode {
            ShflMode::Idx => ((min_lane | (s as u32 & (w - 1))) as i64, true),
            ShflMode::Up => {
                let j = l as i64 - (src[i] as u32) as i64;
                (j, j >= min_lane as i64)
            }
            ShflMode::Down => {
                let j = l as i64 + (src[i] as u32) as i64;
                (j, j <= max_lane as i64)
            }
            ShflMode::Xor => {
                let j = (l ^ (s as u32 & (lanes - 1))) as i64;
                (j, j <= max_lane as i64)
            }
        };
        if ok && (0..lanes as i64).contains(&j) && sources >> j & 1 != 0 {
            d[i] = v[j as usize];
        }
    }
}

pub(crate) fn warp_reduce<const W: usize>(
    op: WarpReduceOp,
    kind: Kind,
    v: &Lanes<W>,
    lanes: u64,
) -> u64 {
    let signed = kind.is_signed();
    let mut acc: Option<u64> = None;
    for l in lanes_of(lanes) {
        let x = v[l as usize];
        acc = Some(match acc {
            None => x,
            Some(a) => match op {
                WarpReduceOp::Add => a.wrapping_add(x),
                WarpReduceOp::Min if signed => (a as i64).min(x as i64) as u64,
                WarpReduceOp::Max if signed => (a as i64).max(x as i64) as u64,
                WarpReduceOp::Min => a.min(x),
                WarpReduceOp::Max => a.max(x),
                WarpReduceOp::And => a & x,
                WarpReduceOp::Or => a | x,
                WarpReduceOp::Xor => a ^ x,
            },
        });
    }
    canon(kind, acc.unwrap_or(0))
}

pub(crate) fn unary_lanes<const W: usize>(
    op: UnOp,
    kind: Kind,
    x: &Lanes<W>,
    d: &mut Lanes<W>,
    exec: u64,
) -> Result<(), Fault> {
    if op == UnOp::Recip && kind.is_integer() {
        for l in lanes_of(exec) {
            if x[l as usize] == 0 {
                return Err(fault(l, "integer division by zero"));
            }
        }
    }
    for l in 0..W {
        d[l] = unary(op, kind, x[l]);
    }
    Ok(())
}

/// `canon` over a whole register, with the type's test outside the lane loop.
#[inline(always)]
pub(crate) fn canon_lanes<const W: usize>(kind: Kind, d: &mut Lanes<W>) {
    macro_rules! each {
        ($f:expr) => {
            for v in d.iter_mut() {
                *v = $f(*v);
            }
        };
    }
    match kind {
        Kind::I8 => each!(|v| v as i8 as i64 as u64),
        Kind::U8 => each!(|v| v as u8 as u64),
        Kind::I16 => each!(|v| v as i16 as i64 as u64),
        Kind::U16 => each!(|v| v as u16 as u64),
        Kind::I32 => each!(|v| v as i32 as i64 as u64),
        Kind::U32 => each!(|v| v as u32 as u64),
        Kind::Bool => each!(|v| (v != 0) as u64),
        _ => {}
    }
}

macro_rules! map2 {
    ($d:ident, $x:ident, $y:ident, |$a:ident, $b:ident| $e:expr) => {
        for l in 0..W {
            let $a = $x[l];
            let $b = $y[l];
            $d[l] = $e;
        }
    };
}

/// An integer operation wrapping in 64 bits, then truncated to the type's width: in one pass
/// for the 32-bit types (the common case), else followed by [`canon_lanes`].
#[inline(always)]
pub(crate) fn wrapping_lanes<const W: usize>(
    kind: Kind,
    x: &Lanes<W>,
    y: &Lanes<W>,
    d: &mut Lanes<W>,
    f: impl Fn(u64, u64) -> u64,
) {
    match kind {
        Kind::I32 => map2!(d, x, y, |a, b| f(a, b) as i32 as i64 as u64),
        Kind::U32 => map2!(d, x, y, |a, b| f(a, b) as u32 as u64),
        _ => {
            map2!(d, x, y, |a, b| f(a, b));
            canon_lanes(kind, d);
        }
    }
}

pub(crate) fn binary_lanes<const W: usize>(
    op: BinOp,
    kind: Kind,
    x: &Lanes<W>,
    y: &Lanes<W>,
    d: &mut Lanes<W>,
    exec: u64,
) -> Result<(), Fault> {
    match kind {
        Kind::F32 => {
            let f = |v: u64| f32::from_bits(v as u32);
            match op {
                BinOp::Add => map2!(d, x, y, |a, b| (f(a) + f(b)).to_bits() as u64),
                BinOp::Sub => map2!(d, x, y, |a, b| (f(a) - f(b)).to_bits() as u64),
                BinOp::Mul => map2!(d, x, y, |a, b| (f(a) * f(b)).to_bits() as u64),
                BinOp::Div => map2!(d, x, y, |a, b| (f(a) / f(b)).to_bits() as u64),
                _ => map2!(d, x, y, |a, b| float_binary(
                    op,
                    f(a) as f64,
                    f(b) as f64,
                    |r| (r as f32).to_bits() as u64
                )),
            }
        }
        Kind::F64 => {
            let f = f64::from_bits;
            match op {
                BinOp::Add => map2!(d, x, y, |a, b| (f(a) + f(b)).to_bits()),
                BinOp::Sub => map2!(d, x, y, |a, b| (f(a) - f(b)).to_bits()),
                BinOp::Mul => map2!(d, x, y, |a, b| (f(a) * f(b)).to_bits()),
                BinOp::Div => map2!(d, x, y, |a, b| (f(a) / f(b)).to_bits()),
                _ => map2!(d, x, y, |a, b| float_binary(op, f(a), f(b), f64::to_bits)),
            }
        }
        k if k.is_narrow_float() => {
            // Exact in f32, then one rounding: what __hadd, __hmul … return.
            map2!(d, x, y, |a, b| {
                let (a, b) = (to_f32(k, a), to_f32(k, b));
                match op {
                    BinOp::Add => from_f32(k, a + b),
                    BinOp::Sub => from_f32(k, a - b),
                    BinOp::Mul => from_f32(k, a * b),
                    BinOp::Div => from_f32(k, a / b),
                    _ => float_binary(op, a as f64, b as f64, |r| from_f32(k, r as f32)),
                }
            })
        }
        k => {
            if matches!(op, BinOp::Div | BinOp::Rem | BinOp::FloorMod) {
                for l in lanes_of(exec) {
                    if y[l as usize] == 0 {
                        return Err(fault(l, "integer division by zero"));
                    }
                }
            }
            let signed = k.is_signed();
            let width = k.shift_width();
            match op {
                // Wrapping in 64 bits, then one truncation pass for the type's width.
                BinOp::Add => wrapping_lanes(k, x, y, d, u64::wrapping_add),
                BinOp::Sub => wrapping_lanes(k, x, y, d, u64::wrapping_sub),
                BinOp::Mul => wrapping_lanes(k, x, y, d, u64::wrapping_mul),
                BinOp::Div if signed => {
                    map2!(d, x, y, |a, b| if b == 0 {
                        0
                    } else {
                        canon(k, (a as i64).wrapping_div(b as i64) as u64)
                    })
                }
                BinOp::Div => map2!(d, x, y, |a, b| a.checked_div(b).unwrap_or(0)),
                BinOp::Rem if signed => {
                    map2!(d, x, y, |a, b| if b == 0 {
                        0
                    } else {
                        canon(k, (a as i64).wrapping_rem(b as i64) as u64)
                    })
                }
                BinOp::FloorMod if signed => map2!(d, x, y, |a, b| if b == 0 {
                    0
                } else {
                    let (a, b) = (a as i64, b as i64);
                    let r = a.wrapping_rem(b);
                    let floored = if r != 0 && ((r < 0) != (b < 0)) {
                        r + b
                    } else {
                        r
                    };
                    canon(k, floored as u64)
                }),
                // Unsigned: truncating and flooring agree.
                BinOp::Rem | BinOp::FloorMod => {
                    map2!(d, x, y, |a, b| a.checked_rem(b).unwrap_or(0))
                }
                BinOp::Min if signed => map2!(d, x, y, |a, b| (a as i64).min(b as i64) as u64),
                BinOp::Max if signed => map2!(d, x, y, |a, b| (a as i64).max(b as i64) as u64),
                BinOp::Min => map2!(d, x, y, |a, b| a.min(b)),
                BinOp::Max => map2!(d, x, y, |a, b| a.max(b)),
                BinOp::BitAnd => map2!(d, x, y, |a, b| a & b),
                BinOp::BitOr => map2!(d, x, y, |a, b| a | b),
                BinOp::BitXor => map2!(d, x, y, |a, b| a ^ b),
                // PTX semantics: counts at or beyond the width shift everything out.
                BinOp::Shl => map2!(d, x, y, |a, b| if b >= width {
                    0
                } else {
                    canon(k, a << b)
                }),
                BinOp::Shr if signed => map2!(d, x, y, |a, b| ((a as i64) >> b.min(63)) as u64),
                BinOp::Shr => map2!(d, x, y, |a, b| if b >= width { 0 } else { a >> b }),
                BinOp::Eq => map2!(d, x, y, |a, b| (a == b) as u64),
                BinOp::Ne => map2!(d, x, y, |a, b| (a != b) as u64),
                BinOp::Lt if signed => map2!(d, x, y, |a, b| ((a as i64) < (b as i64)) as u64),
                BinOp::Gt if signed => map2!(d, x, y, |a, b| ((a as i64) > (b as i64)) as u64),
                BinOp::Le if signed => map2!(d, x, y, |a, b| ((a as i64) <= (b as i64)) as u64),
                BinOp::Ge if signed => map2!(d, x, y, |a, b| ((a as i64) >= (b as i64)) as u64),
                BinOp::Lt => map2!(d, x, y, |a, b| (a < b) as u64),
                BinOp::Gt => map2!(d, x, y, |a, b| (a > b) as u64),
                BinOp::Le => map2!(d, x, y, |a, b| (a <= b) as u64),
                BinOp::Ge => map2!(d, x, y, |a, b| (a >= b) as u64),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::encode;

    #[test]
    fn mask_of_sees_bits_in_either_half_of_a_lane() {
        mask_of_sees_bits_of::<32>();
        mask_of_sees_bits_of::<64>();
    }

    #[test]
    fn the_full_warp_shuffle_follows_the_lane_by_lane_rules() {
        // Every mode, deltas and lane indices in and out of range (negative too), widths that
        // are and are not powers of two, per lane.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let v: Lanes<32> = std::array::from_fn(|l| 500 + l as u64);
        let mask = [u32::MAX as u64; 32];
        for round in 0..800 {
            let mode = [ShflMode::Idx, ShflMode::Up, ShflMode::Down, ShflMode::Xor][round % 4];
            let mut src: Lanes<32> = std::array::from_fn(|_| match next() % 3 {
                0 => next() % 40,
                1 => (-((next() % 40) as i64)) as u64,
                _ => next(),
            });
            let mut width: Lanes<32> =
                std::array::from_fn(|_| [1, 2, 3, 8, 16, 32, 33, 0][(next() % 8) as usize]);
            // Half the rounds with one delta and width for the warp (the uniform fast path).
            if round % 8 >= 4 {
                src = [src[0]; 32];
                width = [width[0]; 32];
            }
            let (mut fast, mut by_lane) = ([0; 32], [0; 32]);
            shuffle(mode, &v, &src, &width, &mask, full_mask::<32>(), &mut fast);
            let all = full_mask::<32>();
            shuffle_by_lane(mode, &v, &src, &width, all, all, &mut by_lane);
            assert_eq!(fast, by_lane, "{mode:?} {src:?} {width:?}");
        }
    }

    #[test]
    fn shuffles_span_a_64_lane_wave() {
        let v: Lanes<64> = std::array::from_fn(|l| 1000 + l as u64);
        let full = full_mask::<64>();
        let mask = [u32::MAX as u64; 64];
        let run = |mode, by: u64, width: u64, exec| {
            let mut d = [0; 64];
            shuffle(mode, &v, &[by; 64], &[width; 64], &mask, exec, &mut d);
            d
        };
        // Down by 3 over the whole wave: lanes 29..31 read 32..34, lanes 61..63 keep theirs.
        let d = run(ShflMode::Down, 3, 64, full);
        assert_eq!((d[29], d[31], d[60], d[61]), (1032, 1034, 1063, 1061));
        // Up by 2 in segments of 32: lane 32 is a segment's first lane.
        let d = run(ShflMode::Up, 2, 32, full);
        assert_eq!((d[33], d[34], d[2]), (1033, 1032, 1000));
        // Xor by 32 swaps the halves; an index wraps within the 64 lanes.
        assert_eq!(run(ShflMode::Xor, 32, 64, full)[5], 1037);
        assert_eq!(run(ShflMode::Idx, 70, 64, full)[0], 1006);
        // An inactive source gives the lane its own value.
        assert_eq!(run(ShflMode::Xor, 32, 64, u32::MAX as u64)[5], 1005);
        // The full 32-bit mask operand means the whole wave; a warp of 32 keeps 32-bit masks.
        assert_eq!(operand_mask::<64>(u32::MAX as u64), u64::MAX);
        assert_eq!(operand_mask::<32>(u64::MAX), u32::MAX as u64);
        assert_eq!(full_mask::<32>(), u32::MAX as u64);
    }

    fn mask_of_sees_bits_of<const W: usize>() {
        let patterns = [
            0,
            1,
            0x8000_0000,
            1 << 32,
            0x8000_0000_0000_0000,
            u64::MAX,
            // A pointer to offset 0 of an allocation: only the high half is set.
            encode(0x10000, 0),
        ];
        for (i, &p) in patterns.iter().enumerate() {
            for shift in 0..W {
                let mut r: Lanes<W> = [0; W];
                // Lane `shift` holds the pattern, every third lane another one.
                r[shift] = p;
                for l in (0..W).step_by(3) {
                    r[l] |= patterns[(i + l) % patterns.len()];
                }
                let want = (0..W).fold(0u64, |m, l| m | (((r[l] != 0) as u64) << l));
                assert_eq!(mask_of(&r), want, "pattern {p:#x} at lane {shift}");
            }
        }
    }
}
