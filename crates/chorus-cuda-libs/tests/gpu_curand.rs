//! cuRAND on the GPU: the moments of each distribution from each generator, within about five
//! standard errors of the mean (n = 2²⁰), reproducibility by seed and offset, and the errors.

mod common;

use chorus_cuda_libs::Error;
use chorus_cuda_libs::curand::{Generator, RngKind};
use chorus_driver::{MemoryBlock, Stream};
use common::*;

const N: usize = 1 << 20;

fn moments(v: &[f64]) -> (f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
    (mean, var)
}

#[test]
fn every_generator_makes_every_distribution() {
    on_gpu("every_generator_makes_every_distribution", |_| {
        let stream = Stream::new()?;
        for kind in [
            RngKind::Xorwow,
            RngKind::Philox4x32_10,
            RngKind::Mrg32k3a,
            RngKind::Sobol32,
        ] {
            let mut g = Generator::new(kind, &stream)?;
            if !kind.is_quasi() {
                g.set_seed(1234)?;
            }
            let mut u = MemoryBlock::<f32>::alloc(N)?;
            g.fill_uniform(&mut u)?;
            let v: Vec<f64> = download(&mut u).into_iter().map(f64::from).collect();
            assert!(
                v.iter().all(|&x| x > 0.0 && x <= 1.0),
                "{kind:?}: uniform outside (0, 1]"
            );
            let (mean, var) = moments(&v);
            assert!((mean - 0.5).abs() < 2e-3, "{kind:?} uniform mean {mean}");
            assert!(
                (var - 1.0 / 12.0).abs() < 1e-3,
                "{kind:?} uniform variance {var}"
            );
            let mut z = MemoryBlock::<f64>::alloc(N)?;
            g.fill_normal(&mut z, 2.0, 3.0)?;
            let (mean, var) = moments(&download(&mut z));
            assert!((mean - 2.0).abs() < 0.02, "{kind:?} normal mean {mean}");
            assert!(
                (var.sqrt() - 3.0).abs() < 0.02,
                "{kind:?} normal sd {}",
                var.sqrt()
            );
            let mut l = MemoryBlock::<f32>::alloc(N)?;
            g.fill_log_normal(&mut l, 0.0, 0.5)?;
            let v: Vec<f64> = download(&mut l).into_iter().map(f64::from).collect();
            let (mean, _) = moments(&v);
            let want = (0.125f64).exp();
            assert!(
                (mean - want).abs() < 5e-3,
                "{kind:?} log-normal mean {mean} vs {want}"
            );
            let mut p = MemoryBlock::<u32>::alloc(N)?;
            g.fill_poisson(&mut p, 4.0)?;
            let v: Vec<f64> = download(&mut p).into_iter().map(f64::from).collect();
            let (mean, var) = moments(&v);
            assert!((mean - 4.0).abs() < 0.02, "{kind:?} Poisson mean {mean}");
            assert!((var - 4.0).abs() < 0.05, "{kind:?} Poisson variance {var}");
            let mut bits = MemoryBlock::<u32>::alloc(N)?;
            g.fill_u32(&mut bits)?;
            let v = download(&mut bits);
            let high = v.iter().filter(|&&x| x >= 1 << 31).count() as f64 / N as f64;
            assert!((high - 0.5).abs() < 3e-3, "{kind:?} u32 top bit {high}");
        }
        Ok(())
    });
}

#[test]
fn seeds_and_offsets_reproduce_sequences() {
    on_gpu("seeds_and_offsets_reproduce_sequences", |_| {
        let stream = Stream::null();
        let draw = |seed: u64, offset: u64| -> Result<Vec<f32>, Error> {
            let mut g = Generator::new(RngKind::Philox4x32_10, &stream)?;
            g.set_seed(seed)?;
            g.set_offset(offset)?;
            let mut u = MemoryBlock::<f32>::alloc(4096)?;
            g.fill_uniform(&mut u)?;
            Ok(download(&mut u))
        };
        let a = draw(7, 0)?;
        assert_eq!(a, draw(7, 0)?, "same seed, same numbers");
        assert_ne!(a, draw(8, 0)?, "another seed");
        let shifted = draw(7, 100)?;
        assert_ne!(a, shifted, "another offset");
        assert_eq!(shifted, draw(7, 100)?);
        Ok(())
    });
}

#[test]
fn bad_requests_are_refused() {
    on_gpu("bad_requests_are_refused", |_| {
        let stream = Stream::null();
        let mut g = Generator::new(RngKind::Xorwow, &stream)?;
        let mut odd = MemoryBlock::<f32>::alloc(1001)?;
        let e = g.fill_normal(&mut odd, 0.0, 1.0).unwrap_err();
        assert!(e.to_string().contains("pairs"), "{e}");
        let mut p = MemoryBlock::<u32>::alloc(16)?;
        assert!(matches!(
            g.fill_poisson(&mut p, 0.0),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(
            g.set_dimensions(3).is_err(),
            "pseudo generators have no dimensions"
        );
        let mut sobol = Generator::new(RngKind::Sobol32, &stream)?;
        assert!(sobol.set_seed(1).is_err());
        sobol.set_dimensions(3)?;
        let mut u = MemoryBlock::<f32>::alloc(1000)?;
        let e = sobol.fill_uniform(&mut u).unwrap_err();
        assert!(
            e.to_string().contains("multiple of the 3 dimensions"),
            "{e}"
        );
        // Sobol32 in 3 dimensions: each dimension's first 1024 points are evenly spread.
        let mut u = MemoryBlock::<f32>::alloc(3 * 1024)?;
        sobol.fill_uniform(&mut u)?;
        let v = download(&mut u);
        for d in 0..3 {
            let mean = v[d * 1024..(d + 1) * 1024]
                .iter()
                .map(|&x| x as f64)
                .sum::<f64>()
                / 1024.0;
            assert!((mean - 0.5).abs() < 1e-3, "dimension {d}: {mean}");
        }
        Ok(())
    });
}
