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

    ;; One thread takes iters dependent steps (milliseconds for millions), then writes value
    ;; to the n entries of out: work still running when a later launch is queued.
    (defkernel slow-fill (void ((out int*) (n int) (value int) (iters int)))
      (let ((acc 1.0))
        (for (k 0 (< k iters) (+ k 1))
          (set acc (+ (* acc 0.999999) 0.000001)))
        (for (i 0 (< i n) (+ i 1))
          (set (aref out i) (+ value (if (> acc 1000.0) 1 0))))))

    (defkernel double-into (void ((src int*) (dst int*) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref dst i) (* 2 (aref src i))))))

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

/// `Stream::wait_for`: a slow kernel on one stream fills `x`, a kernel on a second stream
/// that waited for the first doubles `x` into `y`, and the first waits for the second before
/// its next round overwrites `x`. Without the waits the doubling runs while the fill is still
/// spinning (milliseconds) and reads the previous round's values.
#[test]
fn a_stream_waits_for_another_on_the_gpu() {
    on_cuda("a_stream_waits_for_another_on_the_gpu", || {
        const N: usize = 4096;
        const ITERATIONS: i32 = 4_000_000;
        let mut x = MemoryBlock::from_slice(&[0i32; N])?;
        let mut y = MemoryBlock::from_slice(&[-1i32; N])?;
        let (fill, double) = (chorus::Stream::new()?, chorus::Stream::new()?);
        // Fills x with `value` on `fill` and doubles it into y on `double`, the streams
        // waiting for each other when `wait`.
        let round = |x: &mut MemoryBlock<i32>,
                     y: &mut MemoryBlock<i32>,
                     value: i32,
                     wait: bool|
         -> chorus::Result<()> {
            slow_fill(
                &mut *x,
                N as i32,
                value,
                ITERATIONS,
                Launch::grid(1).block(1).stream(&fill),
            )?;
            if wait {
                double.wait_for(&fill)?;
            }
            double_into(
                &*x,
                &mut *y,
                N as i32,
                Launch::grid(N / 256).block(256).stream(&double),
            )?;
            if wait {
                fill.wait_for(&double)?;
            }
            Ok(())
        };
        for value in 1..=3 {
            round(&mut x, &mut y, value, true)?;
        }
        fill.synchronize()?;
        y.sync(Direction::DeviceToHost)?;
        let wrong = y.as_slice().iter().filter(|&&v| v != 6).count();
        assert_eq!(
            wrong, 0,
            "{wrong} of {N} entries are not 2 × the last round's 3"
        );
        // The control, printed and not asserted (its outcome is a race): one more round
        // without the waits reads what the fill has not yet overwritten.
        round(&mut x, &mut y, 4, false)?;
        fill.synchronize()?;
        double.synchronize()?;
        y.sync(Direction::DeviceToHost)?;
        let stale = y.as_slice().iter().filter(|&&v| v != 8).count();
        println!("without the waits: {stale} of {N} entries read before the fill wrote them");
        Ok(())
    });
}

/// Two blocks of a cluster each load half of a 32×16 f32 matrix with the TMA's multicast into
/// both blocks' shared memory, completing on both blocks' `full` barrier; then each arrives on
/// its own and its peer's `done` barrier (`mbarrier-arrive-cluster`) and waits for both
/// arrivals. Every block writes the whole matrix out as it saw it.
const MULTICAST: &str = "
(defkernel multicast-halves (void ((m tensor-map) (out float*)))
  (with-shared-memory ((full uint64 1)
                       (done uint64 1))
    (with-dynamic-shared-memory ((raw float))
      (let* ((pad (logand (- 128 (logand (shared-address raw) 127)) 127))
             (buf (pointer (aref raw (/ pad 4))))  ; 128-byte aligned, as the TMA wants
             (rank (cluster-rank)))
        (when (= thread-idx-x 0)
          (mbarrier-init (pointer (aref full 0)) 1)
          (mbarrier-init (pointer (aref done 0)) 2)
          (fence-mbarrier-init))
        (cluster-barrier)                       ; both blocks' barriers exist
        (when (= thread-idx-x 0)
          (mbarrier-arrive-expect-tx (pointer (aref full 0)) 2048)
          (tma-load-2d-multicast (pointer (aref buf (* rank 256))) (pointer (aref full 0))
                                 (pointer m) 3 0 (* (int rank) 16)))
        (mbarrier-wait (pointer (aref full 0)) 0)
        (for (i thread-idx-x (< i 512) (+ i block-dim-x))
          (set (aref out (+ (* block-idx-x 512) i)) (aref buf i)))
        (when (= thread-idx-x 0)
          (mbarrier-arrive (pointer (aref done 0)))
          (mbarrier-arrive-cluster (pointer (aref done 0)) (logxor rank 1)))
        (mbarrier-wait (pointer (aref done 0)) 0)
        (cluster-barrier)))))                   ; no block leaves while its peer may arrive
";

#[test]
fn clusters_share_a_multicast_load_and_arrive_on_each_others_barriers() {
    on_cuda("clusters_multicast", || {
        use chorus::cuda::{TensorDataType, TensorLayout, TensorMap};
        if chorus::cuda::compute_capability(0).map_err(chorus::cuda::Error::from)? < (9, 0) {
            eprintln!("clusters_multicast: skipped, clusters need compute capability 9.0");
            return Ok(());
        }
        let (width, height) = (16usize, 32usize);
        let matrix: Vec<f32> = (0..width * height).map(|i| i as f32 + 0.5).collect();
        let tensor = MemoryBlock::from_slice(&matrix)?;
        let layout = TensorLayout::dense(
            TensorDataType::F32,
            tensor
                .device_address()
                .expect("a CUDA block has an address"),
            &[width as u64, height as u64],
        );
        let map = TensorMap::encode_tiled(&layout, &[16, 16]).map_err(chorus::cuda::Error::from)?;
        let program = chorus::Program::new(MULTICAST, "multicast.lisp")?;
        let blocks = 4;
        let mut out = MemoryBlock::<f32>::alloc(blocks * 512)?;
        let launch = Launch::grid(blocks).block(128).shared_mem(2048 + 128);
        program.launch(
            "multicast-halves",
            &[Arg::tensor_map(&map), out.as_arg()],
            launch.clone().cluster(2),
        )?;
        out.sync(Direction::DeviceToHost)?;
        // What a persistent kernel in pairs would size its grid by.
        let occupancy = program.occupancy("multicast-halves", &launch.clone().cluster(2))?;
        let pairs = occupancy
            .clusters
            .expect("a cluster launch reports its clusters");
        assert!(occupancy.multiprocessors >= 2 && occupancy.blocks_per_multiprocessor >= 1);
        assert!(
            pairs >= 1
                && 2 * pairs <= occupancy.multiprocessors * occupancy.blocks_per_multiprocessor,
            "{occupancy:?}"
        );
        let single = program.occupancy("multicast-halves", &launch)?;
        assert_eq!(single.clusters, None);
        assert_eq!(single.multiprocessors, occupancy.multiprocessors);
        eprintln!("clusters_multicast: {occupancy:?}");
        for block in 0..blocks {
            assert_eq!(
                &out.as_slice()[block * 512..(block + 1) * 512],
                &matrix[..],
                "block {block}"
            );
        }
        // The grid must be a whole number of clusters.
        let e = program
            .launch(
                "multicast-halves",
                &[Arg::tensor_map(&map), out.as_arg()],
                Launch::grid(3).block(128).shared_mem(2048 + 128).cluster(2),
            )
            .unwrap_err();
        assert!(matches!(e, chorus::Error::ClusterShape { .. }), "{e}");
        Ok(())
    });
}
