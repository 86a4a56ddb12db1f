//! What the examples share: the banner naming the backend and device, and the pseudo-random
//! inputs of vector-add (cl-cuda's `(random 1.0)`). [`workloads`] holds what the workload
//! examples and the benchmark suite share.

pub mod workloads;

/// Prints the backend kernels run on and its device, and returns the backend.
pub fn banner(example: &str) -> chorus::Result<chorus::Backend> {
    let backend = chorus::check_backend()?;
    let device = chorus::current_device()?;
    println!("{example}: backend {backend}, {device}");
    Ok(backend)
}

/// A small deterministic generator (xorshift64*), so that runs are reproducible.
pub struct Random(u64);

impl Random {
    /// A generator from a nonzero seed (0 is replaced by a fixed constant).
    pub fn new(seed: u64) -> Random {
        Random(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// A float uniformly distributed in [0, 1).
    pub fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // The top 24 bits are exactly representable in an f32.
        (bits >> 40) as f32 / (1u64 << 24) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::Random;

    #[test]
    fn random_floats_are_in_the_unit_interval_and_vary() {
        let mut random = Random::new(1);
        let values: Vec<f32> = (0..1000).map(|_| random.next_f32()).collect();
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
        let mean = values.iter().sum::<f32>() / values.len() as f32;
        assert!((0.4..0.6).contains(&mean), "mean {mean}");
        assert_eq!(Random::new(1).next_f32(), values[0]);
    }
}
