//! What the examples share: the banner naming the backend and device, and the pseudo-random
//! inputs of vector-add (cl-cuda's `(random 1.0)`). [`workloads`] holds what the workload
//! examples and the benchmark suite share.

pub mod flash_attention;
pub mod tensor_gemm;
pub mod workloads;

/// Prints the backend kernels run on and its device, and returns the backend.
pub fn banner(example: &str) -> chorus::Result<chorus::Backend> {
    let backend = chorus::check_backend()?;
    let device = chorus::current_device()?;
    println!("{example}: backend {backend}, {device}");
    Ok(backend)
}

/// The exit status of the example `name` from the outcome of its run: success when its results
/// verified (`Ok(true)`); a failed check (`Ok(false)`, said as `NAME: verification failed`) or
/// an error (`NAME: ERROR`), both on standard error, is a failure.
pub fn exit_code<E: std::fmt::Display>(
    name: &str,
    outcome: Result<bool, E>,
) -> std::process::ExitCode {
    match outcome {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("{name}: verification failed");
            std::process::ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("{name}: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Reads the command line of an example that takes no arguments: `--help` prints its usage and
/// `about`; anything else is refused with the usage, and the process exits with status 2.
pub fn no_arguments(name: &'static str, about: &'static str) {
    if let Err(error) = no_arguments_from(name, about, std::env::args_os()) {
        error.exit();
    }
}

/// [`no_arguments`] over the command line `args` (its first item is the program), returning
/// clap's error (`--help` included) instead of exiting.
pub fn no_arguments_from<I, T>(
    name: &'static str,
    about: &'static str,
    args: I,
) -> Result<(), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    clap::Command::new(name)
        .about(about)
        .try_get_matches_from(args)
        .map(drop)
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
    use super::{Random, no_arguments_from};

    #[test]
    fn examples_refuse_arguments_with_their_usage() {
        let about = "An example";
        assert!(no_arguments_from("vector-add", about, ["vector-add"]).is_ok());
        for wrong in ["--fast", "1024", "-n"] {
            let error = no_arguments_from("vector-add", about, ["vector-add", wrong]).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{wrong}");
            let text = error.render().to_string();
            assert!(text.contains("Usage: vector-add"), "{wrong}: {text}");
        }
        let help = no_arguments_from("vector-add", about, ["vector-add", "--help"]).unwrap_err();
        assert_eq!(help.exit_code(), 0);
        assert!(help.render().to_string().contains(about));
    }

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
