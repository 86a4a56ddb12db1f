//! Atomic read-modify-writes on device memory cells, with CUDA's semantics per kind.

use crate::value::{Kind, from_f32, to_f32};
use chorus_lang::ir::AtomicOp;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A 16-bit atomic (`half`/`bfloat16` add, `uint16` compare-and-swap …) as a
/// compare-and-swap loop on its 32-bit word.
pub(crate) fn atomic16(
    cell: &AtomicU32,
    shift: u32,
    op: AtomicOp,
    kind: Kind,
    v: u16,
    w: u16,
) -> u16 {
    use Ordering::SeqCst;
    let apply = |old: u16| -> u16 {
        match op {
            AtomicOp::Add if kind.is_float() => {
                from_f32(kind, to_f32(kind, old as u64) + to_f32(kind, v as u64)) as u16
            }
            AtomicOp::Sub if kind.is_float() => {
                from_f32(kind, to_f32(kind, old as u64) - to_f32(kind, v as u64)) as u16
            }
            AtomicOp::Add => old.wrapping_add(v),
            AtomicOp::Sub => old.wrapping_sub(v),
            AtomicOp::Exch => v,
            AtomicOp::Cas => {
                if old == v {
                    w
                } else {
                    old
                }
            }
            AtomicOp::And => old & v,
            AtomicOp::Or => old | v,
            AtomicOp::Xor => old ^ v,
            AtomicOp::Min => old.min(v),
            AtomicOp::Max => old.max(v),
            AtomicOp::Inc => {
                if old >= v {
                    0
                } else {
                    old + 1
                }
            }
            AtomicOp::Dec => {
                if old == 0 || old > v {
                    v
                } else {
                    old - 1
                }
            }
        }
    };
    let word = cell
        .fetch_update(SeqCst, SeqCst, |word| {
            let old = (word >> shift) as u16;
            Some((word & !(0xffff << shift)) | ((apply(old) as u32) << shift))
        })
        .unwrap_or_else(|x| x);
    (word >> shift) as u16
}

/// `atomic32` and `atomic64`: one read-modify-write per [`AtomicOp`] on a 32- or 64-bit cell,
/// returning the old value (float operations through a compare-exchange loop).
macro_rules! atomic_rmw {
    ($name:ident, $cell:ty, $uint:ty, $int:ty, $float:ty, $float_kind:expr) => {
        pub(crate) fn $name(cell: &$cell, op: AtomicOp, kind: Kind, v: $uint, w: $uint) -> $uint {
            use Ordering::SeqCst;
            let float = kind == $float_kind;
            let f = <$float>::from_bits;
            let update = |g: &dyn Fn($uint) -> $uint| {
                cell.fetch_update(SeqCst, SeqCst, |old| Some(g(old)))
                    .unwrap_or_else(|x| x)
            };
            match op {
                AtomicOp::Add if float => update(&|o| (f(o) + f(v)).to_bits()),
                AtomicOp::Sub if float => update(&|o| (f(o) - f(v)).to_bits()),
                AtomicOp::Min if float => update(&|o| f(o).min(f(v)).to_bits()),
                AtomicOp::Max if float => update(&|o| f(o).max(f(v)).to_bits()),
                AtomicOp::Add => cell.fetch_add(v, SeqCst),
                AtomicOp::Sub => cell.fetch_sub(v, SeqCst),
                AtomicOp::Exch => cell.swap(v, SeqCst),
                AtomicOp::Min if kind.is_signed() => {
                    update(&|o| (o as $int).min(v as $int) as $uint)
                }
                AtomicOp::Max if kind.is_signed() => {
                    update(&|o| (o as $int).max(v as $int) as $uint)
                }
                AtomicOp::Min => cell.fetch_min(v, SeqCst),
                AtomicOp::Max => cell.fetch_max(v, SeqCst),
                AtomicOp::Inc => update(&|o| if o >= v { 0 } else { o + 1 }),
                AtomicOp::Dec => update(&|o| if o == 0 || o > v { v } else { o - 1 }),
                AtomicOp::Cas => cell
                    .compare_exchange(v, w, SeqCst, SeqCst)
                    .unwrap_or_else(|x| x),
                AtomicOp::And => cell.fetch_and(v, SeqCst),
                AtomicOp::Or => cell.fetch_or(v, SeqCst),
                AtomicOp::Xor => cell.fetch_xor(v, SeqCst),
            }
        }
    };
}

atomic_rmw!(atomic32, AtomicU32, u32, i32, f32, Kind::F32);
atomic_rmw!(atomic64, AtomicU64, u64, i64, f64, Kind::F64);
