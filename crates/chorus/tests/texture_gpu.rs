//! Textures and surfaces on the GPU, compared with the CPU executor: every case of
//! `texture_cases` (all filter, address, read and boundary modes) runs on both backends, and the
//! results must agree bit for bit where no filtering happens and within
//! [`texture_cases::LINEAR_TOLERANCE`] where it does. The driver wrappers are exercised directly
//! too (3-D copies, the checks before the driver).
//!
//! Skips, printing why, without a GPU; fails instead with `CHORUS_REQUIRE_GPU=1`.

mod texture_cases;

use chorus::{Backend, with_backend};
use chorus_cuda::driver::{
    ArrayDesc, ChannelFormat, ChannelType, CudaArray, SurfaceObject, TextureDesc, TextureObject,
};
use texture_cases::{
    LINEAR_TOLERANCE, TextureCase, program, run_surface_case, run_texture_case, surface_cases,
    texture_cases,
};

fn gpu(name: &str) -> bool {
    if !chorus_cuda::testing::gpu_available_or_skip(name) {
        return false;
    }
    if let Err(reason) = Backend::Cuda.availability() {
        panic!("{name}: there is a GPU but the CUDA backend is not available: {reason}");
    }
    true
}

/// A rounding of an interpolation weight.
type Weight = fn(f32) -> f32;

/// The weights a texture unit might use, for the report: which rounding of `frac` to 1.8
/// fixed point reproduces the GPU's 1-D linear filtering bit for bit.
fn linear_1d_reference(case: &TextureCase, x: f32, weight: impl Fn(f32) -> f32) -> f32 {
    let texels: &[f32] = bytemuck::cast_slice(&case.data);
    let n = texels.len() as i64;
    let shifted = x - 0.5;
    let base = shifted.floor();
    let a = weight(shifted - base);
    let at = |i: i64| texels[i.clamp(0, n - 1) as usize];
    (1.0 - a) * at(base as i64) + a * at(base as i64 + 1)
}

#[test]
fn textures_read_the_same_on_the_gpu_and_the_cpu() {
    if !gpu("textures_read_the_same_on_the_gpu_and_the_cpu") {
        return;
    }
    let program = program();
    let mut failures = Vec::new();
    for case in texture_cases() {
        let gpu = with_backend(Backend::Cuda, || run_texture_case(&program, &case))
            .unwrap_or_else(|e| panic!("{} on the GPU: {e}", case.name));
        let cpu = with_backend(Backend::Cpu, || run_texture_case(&program, &case))
            .unwrap_or_else(|e| panic!("{} on the CPU: {e}", case.name));
        if case.exact {
            let same = gpu
                .chunks(4)
                .zip(cpu.chunks(4))
                .filter(|(g, c)| g == c)
                .count();
            let total = gpu.len() / 4;
            println!("{:<48} exact: {same}/{total} values equal", case.name);
            if same != total {
                let first = gpu
                    .chunks(4)
                    .zip(cpu.chunks(4))
                    .position(|(g, c)| g != c)
                    .unwrap_or(0);
                let per_read = total / case.coords.len();
                failures.push(format!(
                    "{}: {} of {total} values differ (first at value {first}, read at {:?})",
                    case.name,
                    total - same,
                    case.coords[first / per_read]
                ));
            }
        } else {
            let g: &[f32] = bytemuck::cast_slice(&gpu);
            let c: &[f32] = bytemuck::cast_slice(&cpu);
            let worst = g
                .iter()
                .zip(c)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            let equal = g.iter().zip(c).filter(|(a, b)| a == b).count();
            println!(
                "{:<48} linear: max |gpu − cpu| = {worst:.3e}, {equal}/{} bit-equal",
                case.name,
                g.len()
            );
            if worst > LINEAR_TOLERANCE || worst.is_nan() {
                failures.push(format!(
                    "{}: max difference {worst} exceeds {LINEAR_TOLERANCE}",
                    case.name
                ));
            }
            if case.name == "1-D Linear Clamp normalized=false" {
                let variants: [(&str, Weight); 4] = [
                    ("round to nearest", |f| (f * 256.0).round() / 256.0),
                    ("truncate", |f| (f * 256.0).floor() / 256.0),
                    ("round half up", |f| (f * 256.0 + 0.5).floor() / 256.0),
                    ("unquantized", |f| f),
                ];
                for (label, weight) in variants {
                    let matches = case
                        .coords
                        .iter()
                        .zip(g)
                        .filter(|(x, v)| linear_1d_reference(&case, x[0], weight) == **v)
                        .count();
                    println!(
                        "    weights {label:<17}: {matches}/{} GPU values reproduced bit for bit",
                        g.len()
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn surfaces_read_and_write_the_same_on_the_gpu_and_the_cpu() {
    if !gpu("surfaces_read_and_write_the_same_on_the_gpu_and_the_cpu") {
        return;
    }
    let program = program();
    for case in surface_cases() {
        let gpu = with_backend(Backend::Cuda, || run_surface_case(&program, &case))
            .unwrap_or_else(|e| panic!("{} on the GPU: {e}", case.name));
        let cpu = with_backend(Backend::Cpu, || run_surface_case(&program, &case))
            .unwrap_or_else(|e| panic!("{} on the CPU: {e}", case.name));
        println!(
            "{:<48} {} bytes, equal: {}",
            case.name,
            gpu.len(),
            gpu == cpu
        );
        assert_eq!(gpu, cpu, "{}", case.name);
    }
}

#[test]
fn driver_arrays_copy_in_three_dimensions_and_check_arguments_first() {
    if !chorus_cuda::testing::gpu_available_or_skip(
        "driver_arrays_copy_in_three_dimensions_and_check_arguments_first",
    ) {
        return;
    }
    chorus_cuda::testing::on_gpu("driver arrays", |_| {
        let f32x2 = ChannelFormat::new(ChannelType::F32, 2).unwrap();
        for desc in [
            ArrayDesc::new(f32x2, 7, 0, 0),
            ArrayDesc::new(f32x2, 7, 5, 0),
            ArrayDesc::new(f32x2, 7, 5, 3),
            ArrayDesc::new(f32x2, 7, 5, 3).surface(),
        ] {
            let mut array = CudaArray::new(desc)?;
            let data: Vec<u8> = (0..desc.byte_len()).map(|i| (i * 7 % 251) as u8).collect();
            array.copy_from_host(&data)?;
            let mut back = vec![0u8; data.len()];
            array.copy_to_host(&mut back)?;
            assert_eq!(back, data, "{desc:?}");
            // Objects over it are made and freed.
            let texture = TextureObject::from_array(&array, &TextureDesc::default())?;
            assert_ne!(texture.raw(), 0);
            if desc.surface {
                let surface = SurfaceObject::from_array(&array)?;
                assert_ne!(surface.raw(), 0);
            } else {
                let e = SurfaceObject::from_array(&array).unwrap_err();
                assert!(e.to_string().contains("made for surfaces"), "{e}");
            }
        }
        // A pitch off the device's alignment is refused before the driver, naming it.
        let memory = chorus_cuda::DeviceMemory::alloc(4096)?;
        let f32x1 = ChannelFormat::scalar(ChannelType::F32);
        let e = TextureObject::from_pitch2d(&memory, f32x1, 9, 4, 36, &TextureDesc::default())
            .unwrap_err();
        assert!(e.to_string().contains("texture pitch alignment"), "{e}");
        let e = TextureObject::from_pitch2d(&memory, f32x1, 9, 400, 64, &TextureDesc::default())
            .unwrap_err();
        assert!(e.to_string().contains("but the memory has 4096"), "{e}");
        let linear = TextureObject::from_linear(&memory, f32x1, 1024, &TextureDesc::default())?;
        assert_ne!(linear.raw(), 0);
        Ok(())
    });
}
