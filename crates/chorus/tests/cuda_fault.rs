//! A kernel that faults on the GPU (CUDA's sticky errors), in a test binary of its own: the
//! fault makes the device's context unusable for every thread of the process until it is
//! reset, so no other test may share the device meanwhile.
//!
//! Skips, printing why, where the CUDA backend is not available; with `CHORUS_REQUIRE_GPU=1`
//! it fails instead.

use chorus::{Arg, Backend, Device, Direction, Error, Launch, MemoryBlock, Program, with_backend};

const KERNELS: &str = "
(defkernel fill (void ((a int*) (value int) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (when (< i n) (set (aref a i) (+ value i)))))

(defkernel read-far (void ((a int*) (far int64) (out int*)))
  (set (aref out 0) (aref a far)))
";

fn fill(program: &Program, a: &MemoryBlock<i32>, value: i32) -> chorus::Result<()> {
    let n = a.len() as i32;
    program.launch(
        "fill",
        &[a.as_arg(), Arg::value(value), Arg::value(n)],
        Launch::grid(1).block(256),
    )
}

#[test]
fn a_faulting_kernel_is_named_poisons_the_device_and_reset_recovers() {
    let name = "a_faulting_kernel_is_named_poisons_the_device_and_reset_recovers";
    if !chorus_cuda::testing::gpu_available_or_skip(name) {
        return;
    }
    if let Err(reason) = Backend::Cuda.availability() {
        panic!("{name}: there is a GPU but the CUDA backend is not available: {reason}");
    }
    with_backend(Backend::Cuda, || {
        let device = chorus::current_device()?;
        let program = Program::new(KERNELS, "fault.lisp")?;
        let mut a = MemoryBlock::<i32>::alloc(100)?;
        fill(&program, &a, 1)?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a[99], 100);

        // 4 TiB past a 400-byte block: no memory there.
        let out = MemoryBlock::<i32>::alloc(1)?;
        let fault_line = line!() + 1;
        let launched = program.launch(
            "read-far",
            &[a.as_arg(), Arg::value(1i64 << 40), out.as_arg()],
            Launch::grid(1).block(1),
        );
        // The launch is asynchronous: the fault surfaces at the launch or at the next sync.
        let fault = match launched {
            Err(e) => e,
            Ok(()) => device.synchronize().expect_err("the kernel faulted"),
        };
        let message = fault.to_string();
        println!("{message}");
        match &fault {
            Error::KernelFault {
                kernel,
                launched_at,
                source,
                ..
            } => {
                assert_eq!(kernel, "read-far", "{message}");
                assert!(
                    launched_at.contains(&format!("cuda_fault.rs:{fault_line}:")),
                    "{message}"
                );
                assert!(
                    source.is_driver_error("CUDA_ERROR_ILLEGAL_ADDRESS"),
                    "{message}"
                );
                assert!(message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{message}");
            }
            other => panic!("expected a kernel fault, got {other:?}"),
        }
        assert!(message.contains("Device::reset"), "{message}");

        // The context is unusable: every call says why, without reaching the driver.
        let poisoned = fill(&program, &a, 2).expect_err("the context is poisoned");
        assert!(
            matches!(&poisoned, Error::ContextPoisoned { fault, .. } if fault.contains("read-far")),
            "{poisoned}"
        );
        println!("{poisoned}");
        assert!(matches!(
            MemoryBlock::<i32>::alloc(4),
            Err(Error::ContextPoisoned { .. })
        ));
        assert!(matches!(
            device.synchronize(),
            Err(Error::ContextPoisoned { .. })
        ));

        // Recovery: the context is recreated and what was made before is gone, or (what the
        // H200's driver 580 does after an illegal address, as CUDA documents) the driver keeps
        // the fault for the process: then reset says so, and so does every later call.
        match device.reset() {
            Ok(()) => {}
            Err(Error::ProcessPoisoned { fault, .. }) => {
                assert!(fault.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{fault}");
                let later = MemoryBlock::<i32>::alloc(1).expect_err("the process is poisoned");
                assert!(matches!(later, Error::ProcessPoisoned { .. }), "{later}");
                assert!(later.to_string().contains("restart the process"), "{later}");
                eprintln!("{name}: the driver keeps the fault for the process: {later}");
                return Ok(());
            }
            Err(other) => panic!("{name}: reset failed unexpectedly: {other}"),
        }
        let stale = a
            .sync(Direction::DeviceToHost)
            .expect_err("the block went with the reset");
        assert!(matches!(stale, Error::DeviceWasReset { .. }), "{stale}");
        let stale_launch = fill(&program, &a, 3).expect_err("a stale block cannot be an argument");
        assert!(
            matches!(stale_launch, Error::DeviceWasReset { .. }),
            "{stale_launch}"
        );
        drop((a, out));

        // The same program loads again in the new context, and a new one works too.
        let mut b = MemoryBlock::<i32>::alloc(100)?;
        fill(&program, &b, 7)?;
        b.sync(Direction::DeviceToHost)?;
        assert_eq!((b[0], b[99]), (7, 106));
        let again = Program::new(KERNELS, "again.lisp")?;
        fill(&again, &b, 9)?;
        b.sync(Direction::DeviceToHost)?;
        assert_eq!((b[0], b[99]), (9, 108));
        Device::synchronize(device)?;
        Ok::<(), Error>(())
    })
    .unwrap_or_else(|e| panic!("{name}: {e}"));
}

#[test]
fn the_cpu_backend_has_nothing_to_reset() {
    with_backend(Backend::Cpu, || chorus::current_device()?.reset())
        .expect("resetting a CPU device does nothing");
}
