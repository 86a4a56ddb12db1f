//! The same `defkernel!` functions, memory blocks and launches on the CUDA backend.
//!
//! Each test skips, printing why, where the CUDA backend is not available (no driver, no
//! device); with `CHORUS_REQUIRE_GPU=1` it fails instead.

use chorus::{Arg, Backend, DeviceAddress, Direction, Launch, MemoryBlock, with_backend};

chorus::defkernel! {
    (defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref c i)
                 (+ (aref a i) (aref b i))))))

    (defkernel-struct pair (x int) (y double))

    (defglobal foo 0)
    (defglobal bar 0 :constant)

    (defkernel add-globals (void ((out int*)))
      (set (aref out 0) (+ foo bar)))

    (defkernel scale-pairs (void ((p pair*) (k double) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref p i) (make-pair (* 2 (pair-x (aref p i))) (* k (pair-y (aref p i))))))))
}

/// Runs `test` on the CUDA backend, or says why it cannot.
fn on_cuda(name: &str, test: impl FnOnce() -> chorus::Result<()>) {
    if !chorus_cuda::testing::gpu_available_or_skip(name) {
        return;
    }
    // With a GPU present, the facade's CUDA backend must start.
    if let Err(reason) = Backend::Cuda.availability() {
        panic!("{name}: there is a GPU but the CUDA backend is not available: {reason}");
    }
    with_backend(Backend::Cuda, test).unwrap_or_else(|e| panic!("{name}: {e}"));
}

#[test]
fn vec_add_on_the_gpu() {
    on_cuda("vec_add_on_the_gpu", || {
        for n in [1024usize, 1000] {
            let a = MemoryBlock::from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
            let b = MemoryBlock::from_slice(
                &(0..n).map(|i| (2 * i) as f32 + 0.25).collect::<Vec<_>>(),
            )?;
            let mut c = MemoryBlock::<f32>::alloc(n)?;
            vec_add_kernel(
                &a,
                &b,
                &mut c,
                n as i32,
                Launch::grid(n.div_ceil(256)).block(256),
            )?;
            c.sync(Direction::DeviceToHost)?;
            assert!((0..n).all(|i| c[i] == a[i] + b[i]));
            assert_eq!(c.backend(), Backend::Cuda);
            assert!(c.device_address().is_some());
        }
        Ok(())
    });
}

#[test]
fn globals_on_the_gpu() {
    on_cuda("globals_on_the_gpu", || {
        let program = add_globals_program();
        program.set_global_ref("foo", 1i32)?;
        program.set_global_ref("bar", 2i32)?;
        assert_eq!(program.global_ref::<i32>("bar")?, 2);
        let mut out = MemoryBlock::<i32>::alloc(1)?;
        add_globals(&out, Launch::default())?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], 3);
        Ok(())
    });
}

#[test]
fn structs_and_raw_addresses_on_the_gpu() {
    on_cuda("structs_and_raw_addresses_on_the_gpu", || {
        let n = 100;
        let mut p =
            MemoryBlock::from_slice(&(0..n).map(|i| Pair::new(i, i as f64)).collect::<Vec<_>>())?;
        // SAFETY: the address is `p`'s device copy, of `n` pairs, on the device the launch runs
        // on, and `p` outlives the launch (the sync below waits for it).
        let address = unsafe {
            DeviceAddress::<Pair>::new(p.device_address().expect("CUDA blocks have addresses"))
        };
        scale_pairs(address, 0.5, n, Launch::grid(4).block(32))?;
        p.sync(Direction::DeviceToHost)?;
        for i in 0..n {
            assert_eq!(p[i as usize], Pair::new(2 * i, i as f64 * 0.5));
        }
        let wrong = scale_pairs_program()
            .launch(
                "scale-pairs",
                &[p.as_arg(), Arg::value(1.0f32), Arg::value(n)],
                Launch::default(),
            )
            .unwrap_err();
        assert!(wrong.to_string().contains("expected double"), "{wrong}");
        Ok(())
    });
}

#[test]
fn the_cuda_device_is_listed() {
    on_cuda("the_cuda_device_is_listed", || {
        let devices = chorus::list_devices();
        assert!(
            devices.iter().any(|d| d.backend() == Backend::Cuda),
            "{devices:?}"
        );
        assert_eq!(chorus::current_device()?.backend(), Backend::Cuda);
        Ok(())
    });
}

#[test]
fn native_cuda_memory_blocks_pass_as_device_pointers() {
    on_cuda("native_cuda_memory_blocks_pass_as_device_pointers", || {
        let device = chorus::current_device()?.index();
        chorus::cuda::with_primary_cuda(device, |_| -> chorus::Result<()> {
            let mut a = chorus::cuda::MemoryBlock::<f32>::alloc(3)?;
            a.as_mut_slice().copy_from_slice(&[1.0, 2.0, 3.0]);
            a.sync(chorus::cuda::Direction::HostToDevice)?;
            let mut c = chorus::cuda::MemoryBlock::<f32>::alloc(3)?;
            vec_add_kernel(&a, &a, &c, 3, Launch::grid(1).block(3))?;
            c.sync(chorus::cuda::Direction::DeviceToHost)?;
            assert_eq!(c.as_slice(), &[2.0, 4.0, 6.0]);
            Ok(())
        })
    });
}

#[test]
fn each_cuda_device_runs_its_own_launches() {
    on_cuda("each_cuda_device_runs_its_own_launches", || {
        let devices = Backend::Cuda.devices();
        assert!(!devices.is_empty());
        assert_eq!(chorus::Device::default()?.backend(), Backend::Cuda);
        // A program of its own: `add_globals_program()`'s `foo` belongs to `globals_on_the_gpu`,
        // which runs in parallel with this test.
        let per_device = chorus::Program::new("(defglobal foo 0)", "per-device.lisp")?;
        let mut blocks = Vec::new();
        for &device in &devices {
            let a = MemoryBlock::from_slice_on(device, &[1.0f32, 2.0])?;
            let mut c = MemoryBlock::<f32>::alloc_on(device, 2)?;
            let stream = chorus::Stream::new_on(device)?;
            vec_add_kernel(&a, &a, &mut c, 2, Launch::grid(1).block(2).stream(&stream))?;
            stream.synchronize()?;
            c.sync(Direction::DeviceToHost)?;
            assert_eq!((c.as_slice(), c.device()), (&[2.0, 4.0][..], device));
            per_device.set_global_ref_on(device, "foo", device.index() as i32)?;
            blocks.push(a);
        }
        for (device, a) in devices.iter().zip(&blocks) {
            assert_eq!(
                per_device.global_ref_on::<i32>(*device, "foo")?,
                device.index() as i32
            );
            // Memory of one device is refused by a launch on another.
            if let Some(other) = devices.iter().find(|d| *d != device) {
                let error = vec_add_kernel(a, a, a, 2, Launch::default().on(*other)).unwrap_err();
                assert!(
                    matches!(error, chorus::Error::ArgumentDevice { launch_device, .. } if launch_device == *other),
                    "{error}"
                );
            }
        }
        Ok(())
    });
}
