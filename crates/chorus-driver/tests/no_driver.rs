//! Where no CUDA driver loads (this development machine, CI), every entry point that needs the
//! driver returns `Error::SdkNotFound` and nothing panics. Skipped where a driver loads.

use chorus_driver::*;

fn sdk_not_found_or_skip() -> bool {
    if sdk_not_found() {
        return true;
    }
    eprintln!("skipped: a CUDA driver is present");
    false
}

fn assert_sdk_not_found<T: std::fmt::Debug>(what: &str, result: Result<T>) {
    match result {
        Err(Error::SdkNotFound { reason }) => assert!(!reason.is_empty(), "{what}"),
        other => panic!("{what}: expected SdkNotFound, got {other:?}"),
    }
}

#[test]
fn every_driver_entry_point_is_sdk_not_found() {
    if !sdk_not_found_or_skip() {
        return;
    }
    assert!(!loader::driver().present());
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
        MemoryBlock::<u8>::alloc_managed(16),
    );
    assert_sdk_not_found("DeviceMemory::alloc", DeviceMemory::alloc(16));
    assert_sdk_not_found("PinnedMemory::alloc", PinnedMemory::alloc(16));
    // SAFETY: without a driver nothing is written; the call returns SdkNotFound first.
    let memset = unsafe { memset_device(0, MemsetValue::U32(0), 4) };
    assert_sdk_not_found("memset_device", memset);
    assert_sdk_not_found("Stream::new", Stream::new());
    assert_sdk_not_found("Stream::synchronize", Stream::null().synchronize());
    assert_sdk_not_found("Stream::is_idle", Stream::null().is_idle());
    assert_sdk_not_found("Event::new", Event::new());
    assert_sdk_not_found("Timer::new", Timer::new());
    assert_eq!(current_context(), None);
    assert_eq!(current_compute_capability(), None);
}

#[test]
fn every_extended_driver_entry_point_is_sdk_not_found() {
    if !sdk_not_found_or_skip() {
        return;
    }
    assert_sdk_not_found("Linker::new", Linker::new(&LinkOptions::default()));
    assert_sdk_not_found("allocation_granularity", allocation_granularity(0, false));
    assert_sdk_not_found("VirtualRange::reserve", VirtualRange::reserve(1 << 21));
    assert_sdk_not_found(
        "PhysicalMemory::new",
        PhysicalMemory::new(1 << 21, Shareable::No),
    );
    assert_sdk_not_found("GrowableBuffer::new", GrowableBuffer::new(1 << 26));
    assert_sdk_not_found("MemoryPool::new", MemoryPool::new(None));
    assert_sdk_not_found(
        "MemoryPool::default_for_device",
        MemoryPool::default_for_device(0),
    );
    assert_sdk_not_found(
        "StreamAllocation::new",
        StreamAllocation::new(64, &Stream::null()),
    );
    let layout = TensorLayout::dense(TensorDataType::F32, 0x1000, &[64, 64]);
    assert_sdk_not_found(
        "TensorMap::encode_tiled",
        TensorMap::encode_tiled(&layout, &[16, 16]),
    );
    assert_sdk_not_found("SmResource::of_device", SmResource::of_device(0));
    assert_sdk_not_found(
        "IpcEventHandle::interprocess_event",
        IpcEventHandle::interprocess_event(),
    );
    assert_sdk_not_found(
        "IpcMemHandle::open",
        IpcMemHandle::from_bytes([0; 64]).open(),
    );
    #[cfg(unix)]
    {
        let null = std::os::fd::OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        assert_sdk_not_found(
            "ExternalMemory::import_fd",
            ExternalMemory::import_fd(null, 4096, false),
        );
    }
    let pid = std::process::id();
    assert_sdk_not_found("process_state", process_state(pid));
    assert_sdk_not_found("lock_process", lock_process(pid, 0));
    assert_sdk_not_found("checkpoint_process", checkpoint_process(pid));
    assert_sdk_not_found("restore_process", restore_process(pid));
    assert_sdk_not_found("unlock_process", unlock_process(pid));
    assert_sdk_not_found("restore_thread_id", restore_thread_id(pid));
}
