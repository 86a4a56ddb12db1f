//! External semaphores made by Vulkan, imported into CUDA ([`ExternalSemaphore::import_fd`]),
//! signalled and waited for in both directions with device work ordered by them.
//!
//! CUDA cannot export a semaphore; Vulkan can (`VK_KHR_external_semaphore_fd`, a timeline or
//! a binary semaphore exported as `OPAQUE_FD`). The test makes a Vulkan device on the same GPU
//! as CUDA's device 0 (matched by UUID) through `ash`, which loads `libvulkan` at run time.
//!
//! When it skips: with no CUDA driver it skips, or fails under `CHORUS_REQUIRE_GPU=1`, as every
//! GPU test does. A missing Vulkan (no `libvulkan.so.1`, no NVIDIA ICD, no Vulkan device with
//! the CUDA device's UUID) is a missing second API, not a missing GPU — CUDA installs do not
//! bring Vulkan, and the project's H200 image lacks its loader — so it skips with the reason
//! even under `CHORUS_REQUIRE_GPU=1`, and fails only under `CHORUS_REQUIRE_VULKAN=1` (set it
//! where Vulkan is installed; the GPU runs that carry Debian's `libvulkan1` do).

#![cfg(unix)]

use ash::vk;
use chorus_driver::{
    DeviceMemory, ExternalSemaphore, PinnedMemory, Result, SemaphoreFdKind, Stream, ensure_driver,
    sys, with_cuda,
};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

fn env_is_one(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v.trim() == "1")
}

/// Whether a CUDA device is there; skips (printing why) or panics under CHORUS_REQUIRE_GPU=1.
fn gpu_or_skip(test: &str) -> bool {
    let why = match ensure_driver().and_then(|()| chorus_driver::device_count()) {
        Ok(n) if n > 0 => return true,
        Ok(_) => "the CUDA driver loads but reports no device".to_owned(),
        Err(e) => e.to_string(),
    };
    if env_is_one("CHORUS_REQUIRE_GPU") {
        panic!("{test}: CHORUS_REQUIRE_GPU=1 but there is no usable GPU: {why}");
    }
    eprintln!("skipped {test}: no usable GPU: {why}");
    false
}

/// CUDA device `ordinal`'s UUID.
fn cuda_uuid(ordinal: i32) -> Result<[u8; 16]> {
    ensure_driver()?;
    let mut device = 0;
    // SAFETY: the driver is loaded; one out-parameter.
    chorus_driver::check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal)
    })?;
    // SAFETY: a plain C struct of bytes.
    let mut uuid: sys::CUuuid = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    chorus_driver::check("cuDeviceGetUuid_v2", unsafe {
        sys::cuDeviceGetUuid_v2(&mut uuid, device)
    })?;
    Ok(uuid.bytes.map(|b| b as u8))
}

/// A Vulkan instance and device on the GPU with a given UUID, with timeline semaphores and
/// `VK_KHR_external_semaphore_fd`; destroyed on drop.
struct Vulkan {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    fd: ash::khr::external_semaphore_fd::Device,
    queue: vk::Queue,
    name: String,
}

impl Vulkan {
    /// The Vulkan device whose UUID is `uuid`, or why there is none.
    fn on(uuid: [u8; 16]) -> std::result::Result<Vulkan, String> {
        // SAFETY: loads libvulkan, whose initialisers are the loader's.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("libvulkan: {e}"))?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"chorus-driver external semaphore test")
            .api_version(vk::API_VERSION_1_2);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: valid create info; the instance is destroyed on every path below.
        let instance = unsafe { entry.create_instance(&info, None) }
            .map_err(|e| format!("vkCreateInstance: {e} (is an ICD installed?)"))?;
        match Vulkan::device_on(&instance, uuid) {
            Ok((device, queue, name)) => {
                let fd = ash::khr::external_semaphore_fd::Device::new(&instance, &device);
                Ok(Vulkan {
                    _entry: entry,
                    instance,
                    device,
                    fd,
                    queue,
                    name,
                })
            }
            Err(why) => {
                // SAFETY: nothing else was made from it.
                unsafe { instance.destroy_instance(None) };
                Err(why)
            }
        }
    }

    fn device_on(
        instance: &ash::Instance,
        uuid: [u8; 16],
    ) -> std::result::Result<(ash::Device, vk::Queue, String), String> {
        // SAFETY: a live instance.
        let physicals = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))?;
        let mut seen = Vec::new();
        for physical in physicals {
            let mut id = vk::PhysicalDeviceIDProperties::default();
            let (name, api) = {
                let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
                // SAFETY: a physical device of this instance; the chain is valid.
                unsafe { instance.get_physical_device_properties2(physical, &mut props) };
                let name = props
                    .properties
                    .device_name_as_c_str()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (name, props.properties.api_version)
            };
            seen.push(format!("{name} {:02x?}", &id.device_uuid[..4]));
            if id.device_uuid != uuid {
                continue;
            }
            if vk::api_version_minor(api) < 2 && vk::api_version_major(api) == 1 {
                return Err(format!(
                    "{name} offers Vulkan 1.{}",
                    vk::api_version_minor(api)
                ));
            }
            // SAFETY: as above.
            let families =
                unsafe { instance.get_physical_device_queue_family_properties(physical) };
            let family = families
                .iter()
                .position(|f| f.queue_count > 0)
                .ok_or_else(|| format!("{name} has no queue"))? as u32;
            let priorities = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family)
                .queue_priorities(&priorities)];
            let extensions = [ash::khr::external_semaphore_fd::NAME.as_ptr()];
            let mut features12 =
                vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
            let info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&extensions)
                .push_next(&mut features12);
            // SAFETY: valid create info for this physical device.
            let device = unsafe { instance.create_device(physical, &info, None) }
                .map_err(|e| format!("vkCreateDevice on {name}: {e}"))?;
            // SAFETY: the family and index were created above.
            let queue = unsafe { device.get_device_queue(family, 0) };
            return Ok((device, queue, name));
        }
        Err(format!(
            "no Vulkan device has the CUDA device's UUID {:02x?}… (Vulkan devices: {})",
            &uuid[..4],
            if seen.is_empty() {
                "none".to_owned()
            } else {
                seen.join(", ")
            }
        ))
    }

    /// An exportable semaphore (timeline with initial value 0, or binary).
    fn semaphore(&self, timeline: bool) -> vk::Semaphore {
        let mut kind = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(if timeline {
                vk::SemaphoreType::TIMELINE
            } else {
                vk::SemaphoreType::BINARY
            })
            .initial_value(0);
        let mut export = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let info = vk::SemaphoreCreateInfo::default()
            .push_next(&mut kind)
            .push_next(&mut export);
        // SAFETY: a live device with timeline semaphores enabled.
        unsafe { self.device.create_semaphore(&info, None) }.expect("vkCreateSemaphore")
    }

    /// `semaphore` exported as an opaque file descriptor (a new reference to its payload).
    fn export(&self, semaphore: vk::Semaphore) -> OwnedFd {
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(semaphore)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: a semaphore of this device created exportable as OPAQUE_FD.
        let fd = unsafe { self.fd.get_semaphore_fd(&info) }.expect("vkGetSemaphoreFdKHR");
        assert!(fd >= 0);
        // SAFETY: vkGetSemaphoreFdKHR gives the caller a new descriptor to own.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    fn counter(&self, semaphore: vk::Semaphore) -> u64 {
        // SAFETY: a timeline semaphore of this device.
        unsafe { self.device.get_semaphore_counter_value(semaphore) }
            .expect("vkGetSemaphoreCounterValue")
    }

    /// Waits on the host until the timeline `semaphore` reaches `value`: false on time-out.
    fn wait(&self, semaphore: vk::Semaphore, value: u64, timeout: Duration) -> bool {
        let semaphores = [semaphore];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&semaphores)
            .values(&values);
        // SAFETY: a timeline semaphore of this device.
        match unsafe {
            self.device
                .wait_semaphores(&info, timeout.as_nanos() as u64)
        } {
            Ok(()) => true,
            Err(vk::Result::TIMEOUT) => false,
            Err(e) => panic!("vkWaitSemaphores: {e}"),
        }
    }

    /// Submits no work to the queue: waiting for `wait` (binary semaphores) and then
    /// signalling `signal`, with `fence` signalled when done.
    fn submit(&self, wait: &[vk::Semaphore], signal: &[vk::Semaphore], fence: vk::Fence) {
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; wait.len()];
        let submit = [vk::SubmitInfo::default()
            .wait_semaphores(wait)
            .wait_dst_stage_mask(&stages)
            .signal_semaphores(signal)];
        // SAFETY: the queue, semaphores and fence belong to this device.
        unsafe { self.device.queue_submit(self.queue, &submit, fence) }.expect("vkQueueSubmit");
    }

    fn fence(&self) -> vk::Fence {
        // SAFETY: a live device.
        unsafe {
            self.device
                .create_fence(&vk::FenceCreateInfo::default(), None)
        }
        .expect("vkCreateFence")
    }

    fn destroy(&self, semaphores: &[vk::Semaphore], fences: &[vk::Fence]) {
        // SAFETY: the device is idle after the wait; nothing uses these any more (CUDA's
        // imports were dropped first).
        unsafe {
            self.device.device_wait_idle().expect("vkDeviceWaitIdle");
            for s in semaphores {
                self.device.destroy_semaphore(*s, None);
            }
            for f in fences {
                self.device.destroy_fence(*f, None);
            }
        }
    }
}

impl Drop for Vulkan {
    fn drop(&mut self) {
        // SAFETY: made by this value; children destroyed by `destroy`.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// The Vulkan device on CUDA device 0's GPU, or `None` after printing why not (a panic under
/// CHORUS_REQUIRE_VULKAN=1).
fn vulkan_or_skip(test: &str) -> Option<Vulkan> {
    let found = cuda_uuid(0)
        .map_err(|e| format!("CUDA device 0's UUID: {e}"))
        .and_then(Vulkan::on);
    match found {
        Ok(vulkan) => Some(vulkan),
        Err(why) if env_is_one("CHORUS_REQUIRE_VULKAN") => {
            panic!("{test}: CHORUS_REQUIRE_VULKAN=1 but Vulkan is not usable: {why}")
        }
        Err(why) => {
            eprintln!("skipped {test}: no Vulkan on the CUDA device: {why}");
            None
        }
    }
}

const BYTES: usize = 1 << 20;

/// Copies `BYTES` bytes at `ptr` into `host` on a stream of their own that does not wait for
/// other streams (a blocking copy would wait for the stream a semaphore holds), polling for at
/// most `DEADLINE`. `host` is pinned and allocated before any stream is held: allocating or
/// freeing pinned memory may synchronise the device, which would wait forever for a held stream.
fn read_apart(ptr: sys::CUdeviceptr, host: &PinnedMemory) -> Result<Vec<u8>> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: the driver is loaded (a context is current); one out-parameter.
    chorus_driver::check("cuStreamCreate", unsafe {
        sys::cuStreamCreate(
            &mut stream,
            sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
        )
    })?;
    // SAFETY: `ptr` holds BYTES bytes of the current context; `host` has room for them and
    // outlives the copy (it is waited for below, or the process aborts).
    let copied = chorus_driver::check("cuMemcpyDtoHAsync_v2", unsafe {
        sys::cuMemcpyDtoHAsync_v2(host.as_ptr().cast(), ptr, BYTES, stream)
    })
    .and_then(|()| {
        let start = Instant::now();
        loop {
            // SAFETY: a live stream of this context.
            match unsafe { sys::cuStreamQuery(stream) } {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY if start.elapsed() < DEADLINE => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                sys::CUresult::CUDA_ERROR_NOT_READY => {
                    panic!("a copy on its own stream did not end within {DEADLINE:?}")
                }
                other => return chorus_driver::check("cuStreamQuery", other),
            }
        }
    });
    // SAFETY: created above; its work is done.
    unsafe { sys::cuStreamDestroy_v2(stream) };
    copied.map(|()| host.as_slice()[..BYTES].to_vec())
}

/// Waits for `stream` for at most `DEADLINE`, polling (a panic past it, never a hang).
fn finish(stream: &Stream) -> Result<()> {
    let start = Instant::now();
    while !stream.is_idle()? {
        assert!(
            start.elapsed() < DEADLINE,
            "the stream did not finish within {DEADLINE:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// How long any one wait of the test may take.
const DEADLINE: Duration = Duration::from_secs(5);

/// How long the whole test may take before the watchdog aborts it.
const WATCHDOG: Duration = Duration::from_secs(20);

/// The step the test is at, for the watchdog's message.
static STEP: Mutex<&str> = Mutex::new("starting");

fn step(now: &'static str) {
    *STEP.lock().unwrap_or_else(PoisonError::into_inner) = now;
    eprintln!("step: {now}");
}

/// Queues a memset of `BYTES` bytes at `ptr` to `byte` on `stream`.
fn memset_on(ptr: sys::CUdeviceptr, byte: u8, stream: &Stream) -> Result<()> {
    // SAFETY: `ptr` holds BYTES bytes that outlive the stream's work (synchronised before
    // they are freed).
    chorus_driver::check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(ptr, byte, BYTES, stream.raw())
    })
}

fn all(bytes: &[u8], byte: u8) -> bool {
    bytes.iter().all(|b| *b == byte)
}

#[test]
fn vulkan_semaphores_order_cuda_work_both_ways() {
    const TEST: &str = "Vulkan external semaphores";
    if !gpu_or_skip(TEST) {
        return;
    }
    // A semaphore that is never signalled holds its stream for ever, and every later driver
    // call that synchronises (a free, the context's destruction at a panic) with it: the test
    // runs on a thread of its own, and a watchdog aborts the process past its deadline, naming
    // the step, instead of hanging.
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(|| with_cuda(0, |_| semaphores_both_ways(TEST)));
        let _ = done.send(result);
    });
    match outcome.recv_timeout(WATCHDOG) {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => panic!("{TEST}: {e}"),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => {
            eprintln!(
                "{TEST}: no end after {WATCHDOG:?}, at step `{}`; aborting instead of hanging",
                STEP.lock().unwrap_or_else(PoisonError::into_inner)
            );
            std::process::abort();
        }
    }
}

fn semaphores_both_ways(test: &str) -> Result<()> {
    step("Vulkan device");
    let Some(vulkan) = vulkan_or_skip(test) else {
        return Ok(());
    };
    eprintln!("Vulkan device {} matches CUDA device 0", vulkan.name);
    let memory = DeviceMemory::alloc(BYTES)?;
    let host = PinnedMemory::alloc(BYTES)?;
    let ptr = memory.ptr();
    let stream = Stream::new()?;
    memset_on(ptr, 0, &stream)?;
    finish(&stream)?;

    // A timeline semaphore: CUDA waits for Vulkan's 1, sets the memory, signals 2.
    step("timeline: import");
    let timeline = vulkan.semaphore(true);
    let imported =
        ExternalSemaphore::import_fd(vulkan.export(timeline), SemaphoreFdKind::Timeline)?;
    step("timeline: CUDA waits for 1, sets, signals 2");
    imported.wait(1, &stream)?;
    memset_on(ptr, 0xab, &stream)?;
    imported.signal(2, &stream)?;
    std::thread::sleep(Duration::from_millis(200));
    assert!(!stream.is_idle()?, "the stream waits for Vulkan's signal");
    step("timeline: the memory before Vulkan's signal");
    let before = read_apart(ptr, &host)?;
    assert_eq!(vulkan.counter(timeline), 0);
    assert!(
        !vulkan.wait(timeline, 2, Duration::ZERO),
        "CUDA has not signalled yet"
    );
    step("timeline: Vulkan signals 1");
    let signal = vk::SemaphoreSignalInfo::default()
        .semaphore(timeline)
        .value(1);
    // SAFETY: a timeline semaphore of this device, signalled to a higher value.
    unsafe { vulkan.device.signal_semaphore(&signal) }.expect("vkSignalSemaphore");
    // Vulkan sees CUDA's signal, which comes after the memset in stream order: the memory is
    // set by then, read without synchronising the stream.
    step("timeline: Vulkan waits for CUDA's 2");
    let reached = vulkan.wait(timeline, 2, DEADLINE);
    finish(&stream)?;
    assert!(all(&before, 0), "the memset waited for Vulkan's signal");
    assert!(reached, "CUDA's signal of 2 reaches Vulkan");
    assert!(vulkan.counter(timeline) >= 2);
    assert!(
        all(&read_apart(ptr, &host)?, 0xab),
        "set before CUDA's signal"
    );

    // Binary semaphores: Vulkan's queue signals `to_cuda`, CUDA waits for it, sets the memory
    // and signals `to_vulkan`, which a Vulkan submission waits for.
    step("binary: import");
    let to_cuda = vulkan.semaphore(false);
    let to_vulkan = vulkan.semaphore(false);
    let cuda_waits = ExternalSemaphore::import_fd(vulkan.export(to_cuda), SemaphoreFdKind::Opaque)?;
    let cuda_signals =
        ExternalSemaphore::import_fd(vulkan.export(to_vulkan), SemaphoreFdKind::Opaque)?;
    let signalled = vulkan.fence();
    let waited = vulkan.fence();
    step("binary: Vulkan signals, CUDA waits, sets, signals, Vulkan waits");
    vulkan.submit(&[], &[to_cuda], signalled);
    cuda_waits.wait(0, &stream)?;
    memset_on(ptr, 0x5a, &stream)?;
    cuda_signals.signal(0, &stream)?;
    vulkan.submit(&[to_vulkan], &[], waited);
    // SAFETY: fences of this device, submitted above.
    unsafe {
        vulkan
            .device
            .wait_for_fences(&[signalled, waited], true, DEADLINE.as_nanos() as u64)
    }
    .expect("the Vulkan submission waiting for CUDA's signal completes");
    assert!(
        all(&read_apart(ptr, &host)?, 0x5a),
        "set before CUDA's binary signal"
    );
    finish(&stream)?;

    step("cleanup");
    drop((imported, cuda_waits, cuda_signals));
    vulkan.destroy(&[timeline, to_cuda, to_vulkan], &[signalled, waited]);
    eprintln!("timeline and binary semaphores ordered CUDA memsets both ways");
    Ok(())
}
