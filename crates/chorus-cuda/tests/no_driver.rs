//! Where no CUDA driver loads (this development machine, CI), every entry point that needs the
//! driver returns `Error::SdkNotFound` and nothing panics. Skipped where a driver loads.

use chorus_cuda::*;

fn sdk_not_found_or_skip() -> bool {
    if sdk_not_found() {
        return true;
    }
    eprintln!("skipped: a CUDA driver is present");
    false
}

/// Driver-layer calls return `DriverError`, which converts into `Error` variant for variant.
fn assert_sdk_not_found<T: std::fmt::Debug, E: Into<Error>>(what: &str, result: Result<T, E>) {
    match result.map_err(Into::into) {
        Err(Error::SdkNotFound { reason }) => assert!(!reason.is_empty(), "{what}"),
        other => panic!("{what}: expected SdkNotFound, got {other:?}"),
    }
}

#[test]
fn every_driver_entry_point_is_sdk_not_found() {
    if !sdk_not_found_or_skip() {
        return;
    }
    assert_sdk_not_found("ensure_driver", ensure_driver());
    assert_sdk_not_found("driver_version", driver_version());
    assert_sdk_not_found("device_count", device_count());
    assert_sdk_not_found("devices", devices());
    assert_sdk_not_found("device_name", device_name(0));
    assert_sdk_not_found("compute_capability", compute_capability(0));
    assert_sdk_not_found("device_total_memory", device_total_memory(0));
    assert_sdk_not_found(
        "device_attribute",
        device_attribute(0, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE),
    );
    assert_sdk_not_found("memory_info", memory_info());
    assert_sdk_not_found("synchronize_context", synchronize_context());
    assert_sdk_not_found("Context::new", Context::new(0));
    assert_sdk_not_found("Context::primary", Context::primary(0));
    assert_sdk_not_found("with_cuda", with_cuda(0, |_| Ok::<_, Error>(())));
    assert_sdk_not_found(
        "with_primary_cuda",
        with_primary_cuda(0, |_| Ok::<_, Error>(())),
    );
    assert_sdk_not_found("MemoryBlock::alloc", MemoryBlock::<f32>::alloc(16));
    assert_sdk_not_found(
        "MemoryBlock::alloc_pinned",
        MemoryBlock::<f32>::alloc_pinned(16),
    );
    assert_sdk_not_found(
        "MemoryBlock::alloc_managed",
        MemoryBlock::<f32>::alloc_managed(16),
    );
    assert_sdk_not_found("DeviceMemory::alloc", DeviceMemory::alloc(16));
    assert_sdk_not_found("PinnedMemory::alloc", PinnedMemory::alloc(16));
    // SAFETY: without a driver nothing is touched: the call returns SdkNotFound first.
    assert_sdk_not_found("memset_device", unsafe {
        memset_device(0, MemsetValue::U32(0), 4)
    });
    // SAFETY: without a driver nothing is touched: the call returns SdkNotFound first.
    assert_sdk_not_found("memcpy_device_to_device", unsafe {
        memcpy_device_to_device(0, 0, 4)
    });
    // SAFETY: without a driver nothing is touched: the call returns SdkNotFound first.
    assert_sdk_not_found("memcpy_2d", unsafe {
        memcpy_device_to_device_2d(0, 8, 0, 8, 8, 2)
    });
    assert_sdk_not_found("Stream::new", Stream::new());
    assert_sdk_not_found("Stream::synchronize", Stream::null().synchronize());
    assert_sdk_not_found("Event::new", Event::new());
    assert_sdk_not_found("Timer::new", Timer::new());
    assert_sdk_not_found(
        "Module::load",
        Module::load(b".version 9.0", ImageKind::Ptx),
    );
    assert_eq!(current_compute_capability(), None);
}

#[test]
fn programs_compile_but_do_not_load() {
    if !sdk_not_found_or_skip() {
        return;
    }
    let source = "extern \"C\" __global__ void k(int* a) { a[0] = 1; }";
    match Program::from_cuda_c(source, "k") {
        // With a compiler the source compiles; loading then needs the driver.
        Err(Error::SdkNotFound { .. }) => {}
        // Without one, the missing compiler is reported.
        Err(Error::NvccNotFound { .. } | Error::NvrtcNotFound { .. }) => {}
        other => panic!("expected SdkNotFound, got {other:?}"),
    }
}

#[test]
fn memory_block_size_errors_come_before_the_driver() {
    let e = MemoryBlock::<f32>::alloc(0).unwrap_err();
    assert!(matches!(e, DriverError::InvalidArgument(_)), "{e}");
    let e = MemoryBlock::<f64>::alloc(usize::MAX / 2).unwrap_err();
    assert!(matches!(e, DriverError::InvalidArgument(_)), "{e}");
}
