//! cuRAND's XORWOW generator, bit for bit: seeding, `curand`, skip-ahead by offset and by
//! subsequence (2^67 steps each), and the uniform and normal transforms for `float` and
//! `double` (Box–Muller with a cached second value, as `curand_kernel.h` does).
//!
//! Skip-ahead multiplies the 160-bit xorshift state by powers of the one-step matrix over
//! GF(2); the powers M^(2^k) are computed once, by repeated squaring, when first needed.

use std::sync::OnceLock;

/// The state, laid out as `curandStateXORWOW_t` (48 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct State {
    pub(crate) d: u32,
    pub(crate) v: [u32; 5],
    pub(crate) boxmuller_flag: i32,
    pub(crate) boxmuller_flag_double: i32,
    pub(crate) boxmuller_extra: f32,
    pub(crate) boxmuller_extra_double: f64,
}

const TWO_POW32_INV: f32 = 2.3283064e-10;
const TWO_PI: f32 = std::f32::consts::TAU;
const TWO_POW53_INV_DOUBLE: f64 = 1.1102230246251565e-16;
const TWO_PI_DOUBLE: f64 = std::f64::consts::TAU;

/// One xorshift step of `v` alone (the matrix M).
fn xorshift(v: &mut [u32; 5]) {
    let t = v[0] ^ (v[0] >> 2);
    v[0] = v[1];
    v[1] = v[2];
    v[2] = v[3];
    v[3] = v[4];
    v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}

/// A 160×160 matrix over GF(2), as the images of the 160 unit vectors.
type Matrix = Vec<[u32; 5]>;

fn apply(m: &Matrix, v: &[u32; 5]) -> [u32; 5] {
    let mut out = [0u32; 5];
    for (bit, column) in m.iter().enumerate() {
        if v[bit / 32] >> (bit % 32) & 1 != 0 {
            for k in 0..5 {
                out[k] ^= column[k];
            }
        }
    }
    out
}

/// M^(2^k) for k = 0 ..= 131: offsets use k < 64, subsequences k = 67 ..= 130.
fn powers() -> &'static [Matrix] {
    static POWERS: OnceLock<Vec<Matrix>> = OnceLock::new();
    POWERS.get_or_init(|| {
        let step: Matrix = (0..160)
            .map(|bit| {
                let mut v = [0u32; 5];
                v[bit / 32] = 1 << (bit % 32);
                xorshift(&mut v);
                v
            })
            .collect();
        let mut out = vec![step];
        for _ in 0..131 {
            let last = out.last().expect("at least one power");
            let squared = last.iter().map(|column| apply(last, column)).collect();
            out.push(squared);
        }
        out
    })
}

/// Advances `v` by `n · 2^shift` xorshift steps.
fn jump(v: &mut [u32; 5], n: u64, shift: usize) {
    let powers = powers();
    for bit in 0..64 {
        if n >> bit & 1 != 0 {
            *v = apply(&powers[bit + shift], v);
        }
    }
}

impl State {
    /// `curand_init(seed, subsequence, offset, &state)`.
    pub(crate) fn init(seed: u64, subsequence: u64, offset: u64) -> State {
        let s0 = (seed as u32) ^ 0xaad2_6b49;
        let s1 = ((seed >> 32) as u32) ^ 0xf7dc_efdd;
        let t0 = 1_099_087_573u32.wrapping_mul(s0);
        let t1 = 2_591_861_531u32.wrapping_mul(s1);
        let mut state = State {
            d: 6_615_241u32.wrapping_add(t1).wrapping_add(t0),
            v: [
                123_456_789u32.wrapping_add(t0),
                362_436_069 ^ t0,
                521_288_629u32.wrapping_add(t1),
                88_675_123 ^ t1,
                5_783_321u32.wrapping_add(t0),
            ],
            ..State::default()
        };
        // Subsequences are 2^67 steps apart; d moves by a multiple of 2^32 there, so not at all.
        jump(&mut state.v, subsequence, 67);
        jump(&mut state.v, offset, 0);
        state.d = state.d.wrapping_add(362_437u32.wrapping_mul(offset as u32));
        state
    }

    /// `curand(&state)`: 32 random bits.
    pub(crate) fn next(&mut self) -> u32 {
        xorshift(&mut self.v);
        self.d = self.d.wrapping_add(362_437);
        self.v[4].wrapping_add(self.d)
    }

    /// `curand_uniform`: (0, 1].
    pub(crate) fn uniform(&mut self) -> f32 {
        self.next() as f32 * TWO_POW32_INV + TWO_POW32_INV / 2.0
    }

    /// `curand_uniform_double`: two draws give 53 bits.
    pub(crate) fn uniform_double(&mut self) -> f64 {
        let x = self.next();
        let y = self.next();
        let z = x as u64 ^ ((y as u64) << (53 - 32));
        z as f64 * TWO_POW53_INV_DOUBLE + TWO_POW53_INV_DOUBLE / 2.0
    }

    /// `curand_normal`: Box–Muller on two draws; the second value is kept for the next call.
    pub(crate) fn normal(&mut self) -> f32 {
        if self.boxmuller_flag != 1 {
            let x = self.next();
            let y = self.next();
            let u = x as f32 * TWO_POW32_INV + TWO_POW32_INV / 2.0;
            let v = y as f32 * (TWO_POW32_INV * TWO_PI) + (TWO_POW32_INV * TWO_PI) / 2.0;
            let s = (-2.0 * u.ln()).sqrt();
            self.boxmuller_extra = v.cos() * s;
            self.boxmuller_flag = 1;
            return v.sin() * s;
        }
        self.boxmuller_flag = 0;
        self.boxmuller_extra
    }

    /// `curand_normal_double`: Box–Muller on four draws.
    pub(crate) fn normal_double(&mut self) -> f64 {
        if self.boxmuller_flag_double != 1 {
            let x0 = self.next() as u64;
            let x1 = self.next() as u64;
            let y0 = self.next() as u64;
            let y1 = self.next() as u64;
            let zx = x0 ^ (x1 << (53 - 32));
            let zy = y0 ^ (y1 << (53 - 32));
            let u = zx as f64 * TWO_POW53_INV_DOUBLE + TWO_POW53_INV_DOUBLE / 2.0;
            let step = TWO_POW53_INV_DOUBLE * TWO_PI_DOUBLE;
            let v = zy as f64 * step + step / 2.0;
            let s = (-2.0 * u.ln()).sqrt();
            self.boxmuller_extra_double = v.cos() * s;
            self.boxmuller_flag_double = 1;
            return v.sin() * s;
        }
        self.boxmuller_flag_double = 0;
        self.boxmuller_extra_double
    }

    /// The 48 bytes of `curandStateXORWOW_t`.
    pub(crate) fn to_bytes(self) -> [u8; 48] {
        let mut b = [0u8; 48];
        b[0..4].copy_from_slice(&self.d.to_le_bytes());
        for (i, v) in self.v.iter().enumerate() {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b[24..28].copy_from_slice(&self.boxmuller_flag.to_le_bytes());
        b[28..32].copy_from_slice(&self.boxmuller_flag_double.to_le_bytes());
        b[32..36].copy_from_slice(&self.boxmuller_extra.to_le_bytes());
        b[40..48].copy_from_slice(&self.boxmuller_extra_double.to_le_bytes());
        b
    }

    /// Reads a state from its 48 bytes.
    pub(crate) fn from_bytes(b: &[u8; 48]) -> State {
        let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        State {
            d: u(0),
            v: [u(4), u(8), u(12), u(16), u(20)],
            boxmuller_flag: u(24) as i32,
            boxmuller_flag_double: u(28) as i32,
            boxmuller_extra: f32::from_bits(u(32)),
            boxmuller_extra_double: f64::from_le_bytes(b[40..48].try_into().expect("8 bytes")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_scrambling_matches_curand_kernel_h() {
        // Seed 0: s0 = 0xaad26b49, s1 = 0xf7dcefdd, t0 = 1099087573·s0, t1 = 2591861531·s1.
        let s = State::init(0, 0, 0);
        let t0 = 1_099_087_573u32.wrapping_mul(0xaad2_6b49);
        let t1 = 2_591_861_531u32.wrapping_mul(0xf7dc_efdd);
        assert_eq!(
            s.v,
            [
                123_456_789u32.wrapping_add(t0),
                362_436_069 ^ t0,
                521_288_629u32.wrapping_add(t1),
                88_675_123 ^ t1,
                5_783_321u32.wrapping_add(t0)
            ]
        );
        assert_eq!(s.d, 6_615_241u32.wrapping_add(t0).wrapping_add(t1));
    }

    #[test]
    fn offset_skip_equals_stepping() {
        let mut stepped = State::init(1234, 0, 0);
        for _ in 0..1000 {
            stepped.next();
        }
        let skipped = State::init(1234, 0, 1000);
        assert_eq!(stepped, skipped);
        let mut a = skipped;
        let mut b = stepped;
        assert_eq!(a.next(), b.next());
    }

    #[test]
    fn subsequence_jump_is_two_to_the_67_steps() {
        // Jumping 2^67 steps equals jumping 2^66 steps twice; and subsequences compose.
        let mut v = State::init(7, 0, 0).v;
        jump(&mut v, 2, 66);
        assert_eq!(v, State::init(7, 1, 0).v);
        let mut w = State::init(7, 1, 0).v;
        jump(&mut w, 2, 67);
        assert_eq!(w, State::init(7, 3, 0).v);
        assert_ne!(State::init(7, 1, 0).v, State::init(7, 0, 0).v);
    }

    #[test]
    fn uniform_and_normal_ranges_and_layout() {
        let mut s = State::init(42, 3, 5);
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let u = s.uniform();
            assert!(u > 0.0 && u <= 1.0);
            let d = s.uniform_double();
            assert!(d > 0.0 && d <= 1.0);
            sum += s.normal() as f64 + s.normal_double();
        }
        assert!((sum / 20_000.0).abs() < 0.05);
        let back = State::from_bytes(&s.to_bytes());
        assert_eq!(back, s);
        // The first value follows from the scrambled seed alone.
        let mut first = State::init(0, 0, 0);
        let mut v = first.v;
        let t = v[0] ^ (v[0] >> 2);
        v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
        assert_eq!(first.next(), v[4].wrapping_add(first.d));
    }
}
