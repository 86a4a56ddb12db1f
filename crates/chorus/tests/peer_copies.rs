//! Copies between the device copies of memory blocks on any two devices
//! (`MemoryBlock::copy_device_from`): within a device, between peers, through the host. The CPU
//! backend stands in for several devices (`CHORUS_CPU_DEVICES=2`, read once per process, so
//! that case runs this binary again with it set); CUDA devices are used where there are some
//! (on one GPU: the same-device path, and CUDA ↔ CPU through the host).

use chorus::{Backend, CopyRoute, Device, Direction, Error, Launch, MemoryBlock, Stream};
use std::process::Command;

chorus::defkernel! {
    (defkernel scale (void ((a int*) (k int) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref a i) (* (aref a i) k)))))
}

/// Fills a block on `device` with `0..n` times `k` (by a kernel), copies it to `to` and checks
/// what arrived there, returning the route.
fn copy_between(from: Device, to: Device, n: usize, k: i32) -> chorus::Result<CopyRoute> {
    let values: Vec<i32> = (0..n as i32).collect();
    let src = MemoryBlock::from_slice_on(from, &values)?;
    scale(
        &src,
        k,
        n as i32,
        Launch::grid(n.div_ceil(128)).block(128).on(from),
    )?;
    let mut dst = MemoryBlock::<i32>::alloc_on(to, n)?;
    let route = dst.copy_device_from(&src)?;
    // The host copy is untouched until synchronized.
    assert!(dst.as_slice().iter().all(|&v| v == 0));
    dst.sync(Direction::DeviceToHost)?;
    let want: Vec<i32> = values.iter().map(|v| v * k).collect();
    assert_eq!(
        dst.as_slice(),
        want.as_slice(),
        "{from} → {to} by {route:?}"
    );
    Ok(route)
}

#[test]
fn copies_within_a_device_and_length_errors() {
    let cpu = Device::new(Backend::Cpu, 0).unwrap();
    assert_eq!(copy_between(cpu, cpu, 1000, 3).unwrap(), CopyRoute::Host);
    let a = MemoryBlock::<i32>::alloc_on(cpu, 4).unwrap();
    let mut b = MemoryBlock::<i32>::alloc_on(cpu, 5).unwrap();
    let e = b.copy_device_from(&a).unwrap_err();
    assert!(matches!(e, Error::CopyLength { src: 4, dst: 5 }), "{e}");
    assert!(
        e.to_string()
            .contains("the source holds 4 elements, the destination 5")
    );
}

#[test]
fn copies_between_cuda_devices_and_the_cpu() {
    let gpus = Backend::Cuda.devices();
    let required = std::env::var("CHORUS_REQUIRE_GPU").is_ok_and(|v| v.trim() == "1");
    if gpus.is_empty() {
        assert!(!required, "CHORUS_REQUIRE_GPU=1 but no CUDA device");
        eprintln!("skipped: no CUDA device");
        return;
    }
    let cpu = Device::new(Backend::Cpu, 0).unwrap();
    let n = 1 << 20;
    for &a in &gpus {
        assert_eq!(copy_between(a, a, n, 5).unwrap(), CopyRoute::SameDevice);
        assert_eq!(copy_between(a, cpu, 4096, 7).unwrap(), CopyRoute::Host);
        assert_eq!(copy_between(cpu, a, 4096, 9).unwrap(), CopyRoute::Host);
        for &b in gpus.iter().filter(|&&b| b != a) {
            let route = copy_between(a, b, n, 11).unwrap();
            eprintln!("{a} → {b}: {route:?}");
            assert_ne!(route, CopyRoute::SameDevice);
        }
    }
    // A facade stream gives its CUDA stream to the libraries; a CPU stream has none.
    let s = Stream::new_on(gpus[0]).unwrap();
    assert!(s.cuda_stream().is_some_and(|c| !c.raw().is_null()));
    assert!(Stream::new_on(cpu).unwrap().cuda_stream().is_none());
}

#[test]
fn copies_between_two_cpu_devices_go_through_the_host() {
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "on_two_cpu_devices", "--ignored", "--nocapture"])
        .env("CHORUS_CPU_DEVICES", "2")
        .env("CHORUS_BACKEND", "cpu")
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
#[ignore = "run by copies_between_two_cpu_devices_go_through_the_host with CHORUS_CPU_DEVICES=2"]
fn on_two_cpu_devices() {
    let devices = Backend::Cpu.devices();
    assert_eq!(devices.len(), 2, "{devices:?}");
    let (d0, d1) = (devices[0], devices[1]);
    assert_eq!(copy_between(d0, d1, 777, 2).unwrap(), CopyRoute::Host);
    assert_eq!(copy_between(d1, d0, 777, 4).unwrap(), CopyRoute::Host);
    assert_eq!(copy_between(d1, d1, 10, 6).unwrap(), CopyRoute::Host);
}
