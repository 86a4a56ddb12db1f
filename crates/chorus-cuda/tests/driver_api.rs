//! GPU tests of the extended driver API (chorus-driver's link, vmm, pool, tensor_map, green,
//! ipc, external and checkpoint modules), with CUDA C kernels compiled by NVRTC. They skip,
//! saying why, when no CUDA driver loads, and fail instead when `CHORUS_REQUIRE_GPU=1`.
//!
//! The IPC and checkpoint tests re-run this test binary as a child process (an environment
//! variable tells the child side what to do); the child sides do nothing in a plain run.

use chorus_cuda::driver::{
    GreenContext, GrowableBuffer, Im2colBox, IpcEventHandle, IpcMemHandle, JitLinkOptions,
    JitLinked, JitLinker, LinkInputKind, LinkOptions, Linker, MemoryPool, PhysicalMemory,
    ProcessState, Shareable, SmResource, StreamAllocation, TensorDataType, TensorLayout, TensorMap,
    VirtualRange, allocation_granularity,
};
use chorus_cuda::testing::{gpu_available_or_skip, on_gpu};
use chorus_cuda::*;
use chorus_lang::types::Type;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

/// Copies `bytes` bytes at device address `ptr` to the host.
fn read_device(ptr: sys::CUdeviceptr, bytes: usize) -> Result<Vec<u8>> {
    let mut host = vec![0u8; bytes];
    ensure_driver()?;
    // SAFETY: the driver is loaded; `ptr` is a live allocation of at least `bytes` bytes of
    // the current context (every caller passes one), and `host` has room for them.
    let result = unsafe { sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), ptr, bytes) };
    driver::check("cuMemcpyDtoH_v2", result)?;
    Ok(host)
}

/// An I/O error of the test's own (child processes, pipes).
fn io_error(context: &str, source: std::io::Error) -> Error {
    Error::Io {
        context: context.into(),
        source,
    }
}

// ---------------------------------------------------------------------------------------
// The linker: separate compilation.

/// Defines a device function and a device variable that another program uses.
const LINK_LIBRARY: &str = r#"
extern "C" __device__ unsigned int scale_add_calls;
__device__ unsigned int scale_add_calls = 0;
extern "C" __device__ float scale_add(float x, float y) {
  atomicAdd(&scale_add_calls, 1u);
  return 2.0f * x + y;
}
"#;

/// Calls the other program's device function, declared `extern`.
const LINK_MAIN: &str = r#"
extern "C" __device__ float scale_add(float x, float y);
extern "C" __global__ void apply_scale_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = scale_add(a[i], b[i]);
}
"#;

/// Loads `cubin`, runs `apply_scale_add` over `n` elements and checks the results and the
/// call counter defined by the other module.
fn run_linked(cubin: &[u8], n: usize) -> Result<()> {
    let module = Module::load(cubin, ImageKind::Cubin)?;
    let f = module.function("apply_scale_add")?;
    let mut a = MemoryBlock::<f32>::alloc(n)?;
    let mut b = MemoryBlock::<f32>::alloc(n)?;
    let out = MemoryBlock::<f32>::alloc(n)?;
    for i in 0..n {
        a[i] = i as f32;
        b[i] = 0.5 - i as f32 * 0.25;
    }
    a.sync(Direction::HostToDevice)?;
    b.sync(Direction::HostToDevice)?;
    let count = n as i32;
    // SAFETY: the kernel's parameters, in order; the blocks live until the synchronisation.
    unsafe {
        launch_unchecked(
            &f,
            &LaunchConfig::grid(n.div_ceil(128) as u32).block(128),
            &[
                KernelArg::block(&a),
                KernelArg::block(&b),
                KernelArg::block(&out),
                KernelArg::value(&count),
            ],
        )
    }?;
    synchronize_context()?;
    let mut out = out;
    out.sync(Direction::DeviceToHost)?;
    for i in 0..n {
        assert_eq!(out[i], 2.0 * a[i] + b[i], "element {i}");
    }
    let (counter, size) = module.global("scale_add_calls")?;
    assert_eq!(size, 4);
    let calls = u32::from_ne_bytes(read_device(counter, 4)?.try_into().unwrap());
    assert_eq!(calls as usize, n, "the library module's counter");
    Ok(())
}

#[test]
fn separately_compiled_modules_link_and_share_device_functions() {
    on_gpu("linker", |ctx| {
        let arch = ctx.compute_capability()?;
        let library_cubin = nvrtc_compile_relocatable(
            LINK_LIBRARY,
            "library",
            RelocatableOutput::Cubin,
            arch,
            &[],
        )?;
        let library_ptx =
            nvrtc_compile_relocatable(LINK_LIBRARY, "library", RelocatableOutput::Ptx, arch, &[])?;
        let main_ptx =
            nvrtc_compile_relocatable(LINK_MAIN, "main", RelocatableOutput::Ptx, arch, &[])?;
        let main_cubin =
            nvrtc_compile_relocatable(LINK_MAIN, "main", RelocatableOutput::Cubin, arch, &[])?;

        // A relocatable cubin with PTX, then PTX with a cubin.
        let mut linker = Linker::new(&LinkOptions {
            verbose: true,
            ..LinkOptions::default()
        })?;
        linker.add(LinkInputKind::Cubin, &library_cubin, "library.cubin")?;
        linker.add(LinkInputKind::Ptx, &main_ptx, "main.ptx")?;
        assert_eq!(linker.inputs(), 2);
        let linked = linker.complete()?;
        let info: Vec<&str> = linked.info_log.lines().collect();
        eprintln!(
            "linker info log ({} lines): {:?}",
            info.len(),
            &info[..info.len().min(3)]
        );
        assert!(!info.is_empty(), "a verbose link says what it did");
        run_linked(&linked.cubin, 1000)?;

        let mut linker = Linker::new(&LinkOptions::default())?;
        linker.add(LinkInputKind::Ptx, &library_ptx, "library.ptx")?;
        linker.add(LinkInputKind::Cubin, &main_cubin, "main.cubin")?;
        run_linked(&linker.complete()?.cubin, 4097)?;

        // Without the library, the call is unresolved: the error carries the linker's log.
        let mut linker = Linker::new(&LinkOptions::default())?;
        linker.add(LinkInputKind::Cubin, &main_cubin, "main.cubin")?;
        match linker.complete() {
            Err(driver::Error::Link { log, name, .. }) => {
                eprintln!("unresolved link: {name}: {log}");
                assert!(log.contains("scale_add"), "the log names the symbol: {log}");
            }
            other => panic!("linking an unresolved call: {other:?}"),
        }
        Ok(())
    });
}

/// The two LTO-IR modules of the link test, compiled by NVRTC with `-dlto` for `arch`.
fn lto_modules(arch: (u32, u32)) -> Result<(Vec<u8>, Vec<u8>)> {
    let library =
        nvrtc_compile_relocatable(LINK_LIBRARY, "library", RelocatableOutput::LtoIr, arch, &[])?;
    let main = nvrtc_compile_relocatable(LINK_MAIN, "main", RelocatableOutput::LtoIr, arch, &[])?;
    assert!(!library.is_empty() && !main.is_empty());
    Ok((library, main))
}

/// Links the two LTO-IR modules with nvJitLink for `arch`.
fn jit_link_lto(arch: (u32, u32), library: &[u8], main: &[u8]) -> Result<JitLinked> {
    let mut linker = JitLinker::new(&JitLinkOptions {
        verbose: true,
        ..JitLinkOptions::lto(arch)
    })?;
    linker.add(LinkInputKind::LtoIr, library, "library.ltoir")?;
    linker.add(LinkInputKind::LtoIr, main, "main.ltoir")?;
    assert_eq!(linker.inputs(), 2);
    Ok(linker.complete()?)
}

#[test]
fn lto_ir_links_with_nvjitlink_and_runs() {
    on_gpu("nvJitLink LTO-IR", |ctx| {
        let arch = ctx.compute_capability()?;
        let (library, main) = lto_modules(arch)?;

        // The driver's linker refuses CUDA 12+ LTO-IR (on the H200, driver 580 / CUDA 13.0:
        // CUDA_ERROR_JIT_COMPILER_NOT_FOUND); should a driver accept it, its cubin must run.
        let by_driver = Linker::new(&LinkOptions {
            lto: true,
            ..LinkOptions::default()
        })
        .and_then(|mut linker| {
            linker.add(LinkInputKind::LtoIr, &library, "library.ltoir")?;
            linker.add(LinkInputKind::LtoIr, &main, "main.ltoir")?;
            linker.complete()
        });
        match by_driver {
            Ok(image) => run_linked(&image.cubin, 1000)?,
            Err(e) => {
                eprintln!("the driver's linker refuses CUDA 12+ LTO-IR: {e}");
                assert!(matches!(e, driver::Error::Link { .. }), "{e:?}");
            }
        }

        // nvJitLink links them; the cubin loads and the kernel calls the other module's
        // device function (the library's call counter counts every call).
        eprintln!(
            "nvJitLink {:?} from {}",
            driver::jitlink_version(),
            driver::jitlink_library()?.display()
        );
        let linked = jit_link_lto(arch, &library, &main)?;
        eprintln!("nvJitLink info log: {}", linked.info_log);
        let cubin = linked.cubin.expect("a cubin");
        run_linked(&cubin, 1000)?;
        run_linked(&cubin, 4097)?;

        // LTO-IR with a PTX input: the library as relocatable PTX, the caller as LTO-IR.
        let library_ptx =
            nvrtc_compile_relocatable(LINK_LIBRARY, "library", RelocatableOutput::Ptx, arch, &[])?;
        let mut linker = JitLinker::new(&JitLinkOptions::lto(arch))?;
        linker.add(LinkInputKind::Ptx, &library_ptx, "library.ptx")?;
        linker.add(LinkInputKind::LtoIr, &main, "main.ltoir")?;
        run_linked(&linker.complete()?.cubin.expect("a cubin"), 333)?;

        // Without the library the call is unresolved: the error carries nvJitLink's log.
        let mut linker = JitLinker::new(&JitLinkOptions::lto(arch))?;
        linker.add(LinkInputKind::LtoIr, &main, "main.ltoir")?;
        match linker.complete() {
            Err(driver::Error::Link { log, name, .. }) => {
                eprintln!("unresolved nvJitLink link: {name}: {log}");
                assert!(log.contains("scale_add"), "the log names the symbol: {log}");
            }
            other => panic!("linking an unresolved call: {other:?}"),
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Virtual memory management.

const TRIPLE: &str = r#"
extern "C" __global__ void triple_window(const unsigned int* buffer, unsigned int* out,
                                         unsigned long long start, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = buffer[start + i] * 3u + 1u;
}
"#;

fn pattern(i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761).rotate_left(7)
}

fn words_bytes(from: usize, count: usize) -> Vec<u8> {
    (from..from + count)
        .flat_map(|i| pattern(i).to_ne_bytes())
        .collect()
}

#[test]
fn a_growable_buffer_grows_in_place_across_chunks() {
    on_gpu("growable buffer", |ctx| {
        let recommended = allocation_granularity(ctx.device(), true)?;
        let minimum = allocation_granularity(ctx.device(), false)?;
        eprintln!("granularity: minimum {minimum}, recommended {recommended}");
        let mut buffer = GrowableBuffer::new(16 * recommended)?;
        let chunk = buffer.chunk_size();
        assert_eq!(chunk, recommended);
        assert!(chunk >= minimum && chunk % minimum == 0, "chunk {chunk}");
        assert_eq!(buffer.reserved(), 16 * chunk);
        let base = buffer.ptr();
        // Grow in three steps, writing each new part; the address never changes.
        let steps = [chunk / 2, chunk + 100 * 4, 3 * chunk + chunk / 2];
        let mut written = 0;
        for &size in &steps {
            buffer.grow_to(size)?;
            assert_eq!(buffer.ptr(), base, "the address is stable");
            assert_eq!(buffer.len(), size);
            assert_eq!(buffer.capacity(), size.div_ceil(chunk) * chunk);
            let words = (size - written) / 4;
            buffer.copy_from_host(written, &words_bytes(written / 4, words))?;
            written += words * 4;
        }
        assert_eq!(buffer.chunk_count(), 4);
        // Everything written is still there, across the chunk boundaries.
        let mut all = vec![0u8; written];
        buffer.copy_to_host(0, &mut all)?;
        assert!(all == words_bytes(0, written / 4), "data preserved");
        // A kernel reads a window that spans two boundaries.
        let program = Program::from_cuda_c(TRIPLE, "triple-window")?;
        let f = program.function("triple_window")?;
        let start = chunk / 4 - 1000;
        let n = chunk / 4 + 2000;
        let out = MemoryBlock::<u32>::alloc(n)?;
        let (start_arg, count) = (start as u64, n as i32);
        // SAFETY: the kernel's parameters; the window lies within the mapped bytes.
        unsafe {
            launch_unchecked(
                &f,
                &LaunchConfig::grid(n.div_ceil(256) as u32).block(256),
                &[
                    KernelArg::device_ptr(buffer.ptr()),
                    KernelArg::block(&out),
                    KernelArg::value(&start_arg),
                    KernelArg::value(&count),
                ],
            )
        }?;
        let mut out = out;
        out.sync(Direction::DeviceToHost)?;
        for i in 0..n {
            assert_eq!(
                out[i],
                pattern(start + i).wrapping_mul(3).wrapping_add(1),
                "word {} of the window",
                start + i
            );
        }
        // Past the reservation is refused.
        let e = buffer.grow_to(buffer.reserved() + 1).unwrap_err();
        assert!(e.to_string().contains("reserved"), "{e}");
        Ok(())
    });
}

#[test]
fn physical_memory_maps_into_a_reserved_range() {
    on_gpu("virtual memory", |ctx| {
        let granularity = allocation_granularity(ctx.device(), false)?;
        let range = VirtualRange::reserve(2 * granularity)?;
        assert_eq!(range.len(), 2 * granularity);
        let misaligned = range.map(1, PhysicalMemory::new(granularity, Shareable::No)?);
        assert!(misaligned.is_err());
        let mut mapping = range.map(
            granularity,
            PhysicalMemory::new(granularity, Shareable::No)?,
        )?;
        assert_eq!(mapping.ptr(), range.base() + granularity as u64);
        let data = words_bytes(7, 1024);
        mapping.copy_from_host(4096, &data)?;
        let mut back = vec![0u8; data.len()];
        mapping.copy_to_host(4096, &mut back)?;
        assert_eq!(back, data);
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Stream-ordered allocation and memory pools.

const DOUBLE_WORDS: &str = r#"
extern "C" __global__ void double_words(unsigned int* words, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) words[i] *= 2u;
}
"#;

#[test]
fn stream_ordered_allocations_come_from_pools() {
    on_gpu("memory pools", |ctx| {
        let stream = Stream::new()?;
        let pool = MemoryPool::new(None)?;
        pool.set_release_threshold(u64::MAX)?;
        assert_eq!(pool.release_threshold()?, u64::MAX);
        let n = 256 * 1024;
        let bytes = n * 4;
        let mut allocation = StreamAllocation::from_pool(&pool, bytes, &stream)?;
        let input = words_bytes(0, n);
        // SAFETY: `input` lives until the stream is synchronised below.
        unsafe { allocation.copy_from_host_async(0, &input, &stream) }?;
        let program = Program::from_cuda_c(DOUBLE_WORDS, "double-words")?;
        let f = program.function("double_words")?;
        let count = n as i32;
        // SAFETY: the kernel's parameters; the allocation is live on this stream.
        unsafe {
            launch_unchecked(
                &f,
                &LaunchConfig::grid(n.div_ceil(256) as u32)
                    .block(256)
                    .stream(&stream),
                &[
                    KernelArg::device_ptr(allocation.ptr()),
                    KernelArg::value(&count),
                ],
            )
        }?;
        let mut output = vec![0u8; bytes];
        allocation.copy_to_host(0, &mut output, &stream)?;
        for (i, word) in output.chunks_exact(4).enumerate() {
            let value = u32::from_ne_bytes(word.try_into().unwrap());
            assert_eq!(value, pattern(i).wrapping_mul(2), "word {i}");
        }
        let busy = pool.usage()?;
        eprintln!("pool in use: {busy:?}");
        assert!(
            busy.used >= bytes as u64 && busy.reserved >= busy.used,
            "{busy:?}"
        );
        allocation.free_async(&stream)?;
        stream.synchronize()?;
        let freed = pool.usage()?;
        assert_eq!(freed.used, 0, "{freed:?}");
        assert!(
            freed.reserved > 0,
            "the threshold keeps the memory: {freed:?}"
        );
        assert!(freed.used_high >= bytes as u64, "{freed:?}");
        pool.trim_to(0)?;
        assert_eq!(pool.usage()?.reserved, 0, "trimmed");
        pool.reset_high_watermarks()?;
        assert_eq!(pool.usage()?.used_high, 0);

        // The device's default pool.
        let default_pool = MemoryPool::default_for_device(ctx.device())?;
        let small = StreamAllocation::new(4096, &stream)?;
        stream.synchronize()?;
        let in_use = default_pool.usage()?;
        assert!(in_use.used >= 4096, "{in_use:?}");
        small.free_async(&stream)?;
        stream.synchronize()?;
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Tensor maps and Hopper's bulk tensor copy.

const TMA_COPY: &str = r#"
struct alignas(64) TensorMapBytes { unsigned long long opaque[16]; };

#define BOX_W 32
#define BOX_H 16

extern "C" __global__ void copy_tile(const __grid_constant__ TensorMapBytes map, float* out,
                                     int x0, int y0) {
  __shared__ alignas(128) float tile[BOX_H * BOX_W];
  __shared__ alignas(8) unsigned long long barrier;
  unsigned int bar = (unsigned int)__cvta_generic_to_shared(&barrier);
  unsigned int dst = (unsigned int)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"((unsigned int)sizeof(tile)) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];"
        :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x0), "r"(y0), "r"(bar)
        : "memory");
  }
  unsigned int done = 0;
  // Bounded, so that a copy that never completes fails the test instead of hanging it.
  for (long long tries = 0; !done && tries < (1ll << 24); ++tries) {
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar) : "memory");
  }
  for (int i = threadIdx.x; i < BOX_H * BOX_W; i += blockDim.x) out[i] = done ? tile[i] : -1.0f;
}
"#;

#[test]
fn a_tiled_tensor_map_drives_a_bulk_tensor_copy() {
    on_gpu("tensor maps", |ctx| {
        if ctx.compute_capability()? < (9, 0) {
            return Err(Error::InvalidArgument(
                "bulk tensor copies need compute capability 9.0".into(),
            ));
        }
        let (width, height) = (100usize, 64usize);
        let mut tensor = MemoryBlock::<f32>::alloc(width * height)?;
        for y in 0..height {
            for x in 0..width {
                tensor[y * width + x] = (y * 1000 + x) as f32;
            }
        }
        tensor.sync(Direction::HostToDevice)?;
        let layout = TensorLayout::dense(
            TensorDataType::F32,
            tensor.device_ptr(),
            &[width as u64, height as u64],
        );
        let map = TensorMap::encode_tiled(&layout, &[32, 16])?;
        let program = Program::from_cuda_c(TMA_COPY, "tma-copy")?;
        let f = program.function("copy_tile")?;
        // One tile inside, one hanging over the right and bottom edges (zero-filled).
        for (x0, y0) in [(8i32, 4i32), (80, 56)] {
            let out = MemoryBlock::<f32>::alloc(32 * 16)?;
            // SAFETY: the kernel's parameters: the 128-byte map by value, the output block
            // and the tile's corner; the tensor the map points to lives until the copy.
            unsafe {
                launch_unchecked(
                    &f,
                    &LaunchConfig::grid(1).block(128),
                    &[
                        KernelArg::raw(Type::Struct("CUtensorMap".into()), map.as_bytes()),
                        KernelArg::block(&out),
                        KernelArg::value(&x0),
                        KernelArg::value(&y0),
                    ],
                )
            }?;
            let mut out = out;
            out.sync(Direction::DeviceToHost)?;
            for ty in 0..16 {
                for tx in 0..32 {
                    let (x, y) = (x0 as usize + tx, y0 as usize + ty);
                    let expected = if x < width && y < height {
                        (y * 1000 + x) as f32
                    } else {
                        0.0
                    };
                    assert_eq!(
                        out[ty * 32 + tx],
                        expected,
                        "tile ({x0}, {y0}) at ({x}, {y})"
                    );
                }
            }
        }
        // The same checks refuse a bad box before the driver; im2col encodes on the device.
        assert!(matches!(
            TensorMap::encode_tiled(&layout, &[3, 16]),
            Err(driver::Error::InvalidArgument(_))
        ));
        let nhwc = MemoryBlock::<u16>::alloc(2 * 8 * 8 * 16)?;
        let im2col = TensorMap::encode_im2col(
            &TensorLayout::dense(TensorDataType::F16, nhwc.device_ptr(), &[16, 8, 8, 2]),
            &Im2colBox {
                lower_corner: vec![-1, -1],
                upper_corner: vec![1, 1],
                channels_per_pixel: 16,
                pixels_per_column: 32,
            },
        )?;
        assert_ne!(im2col.as_bytes(), &[0u8; 128]);
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Green contexts.

const SM_IDS: &str = r#"
extern "C" __global__ void record_sm(unsigned int* sm_of_block, int spin) {
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  long long start = clock64();
  while (clock64() - start < spin) { }
  if (threadIdx.x == 0) sm_of_block[blockIdx.x] = sm;
}
"#;

#[test]
fn a_green_context_runs_work_on_its_sms_only() {
    on_gpu("green contexts", |ctx| {
        let whole = SmResource::of_device(ctx.device())?;
        let (groups, remaining) = whole.split_by_count(1, 16)?;
        assert_eq!(groups.len(), 1);
        let group = groups[0];
        eprintln!(
            "device SMs {}, group {}, remaining {}",
            whole.sm_count(),
            group.sm_count(),
            remaining.sm_count()
        );
        assert!(group.sm_count() >= 16 && group.sm_count() < whole.sm_count());
        let green = GreenContext::new(&group)?;
        assert_eq!(green.sm_resource()?.sm_count(), group.sm_count());
        let blocks = 4 * whole.sm_count() as usize;
        let used: std::collections::BTreeSet<u32> = green.with_current(|| -> Result<_> {
            let stream = green.stream()?;
            let program = Program::from_cuda_c(SM_IDS, "record-sm")?;
            let f = program.function("record_sm")?;
            let out = MemoryBlock::<u32>::alloc(blocks)?;
            let spin = 200_000i32;
            // SAFETY: the kernel's parameters; the block lives until the synchronisation.
            unsafe {
                launch_unchecked(
                    &f,
                    &LaunchConfig::grid(blocks as u32).block(64).stream(&stream),
                    &[KernelArg::block(&out), KernelArg::value(&spin)],
                )
            }?;
            stream.synchronize()?;
            let mut out = out;
            out.sync(Direction::DeviceToHost)?;
            Ok(out.as_slice().iter().copied().collect())
        })?;
        eprintln!("blocks ran on {} distinct SMs: {used:?}", used.len());
        assert!(
            !used.is_empty() && used.len() <= group.sm_count() as usize,
            "{} SMs used by a {}-SM green context",
            used.len(),
            group.sm_count()
        );
        // The ordinary context is current again.
        assert_eq!(driver::current_context(), Some(ctx.raw()));
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Child processes.

/// Kills the child if the test fails before waiting for it.
struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// This test binary, running only the test `name`, with `env` set.
fn child_test(name: &str, env: &[(&str, String)]) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args([name, "--exact", "--nocapture", "--test-threads", "1"]);
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

// ---------------------------------------------------------------------------------------
// IPC.

const IPC_BYTES: usize = 64 * 1024;

#[test]
fn ipc_memory_and_events_are_shared_with_a_child_process() {
    on_gpu("IPC", |_| {
        let mut memory = DeviceMemory::alloc(IPC_BYTES)?;
        memory.copy_from_host(&words_bytes(0, IPC_BYTES / 4))?;
        let event = IpcEventHandle::interprocess_event()?;
        let mem_handle = IpcMemHandle::of(&memory)?;
        let event_handle = IpcEventHandle::of(&event)?;
        let status = child_test(
            "ipc_child_side",
            &[
                ("CHORUS_IPC_MEMORY", mem_handle.to_hex()),
                ("CHORUS_IPC_EVENT", event_handle.to_hex()),
            ],
        )
        .status()
        .map_err(|e| Error::InvalidArgument(format!("cannot run the child: {e}")))?;
        assert!(status.success(), "the child side failed: {status}");
        event.synchronize()?;
        let mut back = vec![0u8; IPC_BYTES];
        memory.copy_to_host(&mut back)?;
        assert!(
            back == words_bytes(IPC_BYTES / 4, IPC_BYTES / 4),
            "the child's writes are visible"
        );
        Ok(())
    });
}

/// The child side of the IPC test: opens the parent's memory and event, checks the memory,
/// writes the next pattern and records the event. Nothing in a plain run.
#[test]
fn ipc_child_side() {
    let (Ok(memory), Ok(event)) = (
        std::env::var("CHORUS_IPC_MEMORY"),
        std::env::var("CHORUS_IPC_EVENT"),
    ) else {
        return;
    };
    assert!(gpu_available_or_skip("ipc_child_side"));
    with_cuda(0, |_| -> Result<()> {
        let mut shared = IpcMemHandle::from_hex(&memory)?.open()?;
        assert!(shared.len() >= IPC_BYTES, "{} bytes shared", shared.len());
        let mut seen = vec![0u8; IPC_BYTES];
        shared.copy_to_host(0, &mut seen)?;
        assert!(seen == words_bytes(0, IPC_BYTES / 4), "the parent's data");
        shared.copy_from_host(0, &words_bytes(IPC_BYTES / 4, IPC_BYTES / 4))?;
        let event = IpcEventHandle::from_hex(&event)?.open()?;
        event.record(&Stream::null())?;
        event.synchronize()?;
        Ok(())
    })
    .unwrap_or_else(|e| panic!("child: {e}"));
}

// ---------------------------------------------------------------------------------------
// External memory and semaphores.

#[cfg(unix)]
#[test]
fn exported_memory_imports_as_external_memory() {
    on_gpu("external memory", |ctx| {
        let granularity = allocation_granularity(ctx.device(), false)?;
        let physical = PhysicalMemory::new(granularity, Shareable::PosixFd)?;
        let for_external = physical.export_fd()?;
        let for_vmm = physical.export_fd()?;
        let range = VirtualRange::reserve(granularity)?;
        let mut mapping = range.map(0, physical)?;
        let data = words_bytes(11, granularity / 4);
        mapping.copy_from_host(0, &data)?;

        // The same memory imported back through the VMM API.
        let imported = PhysicalMemory::import_fd(&for_vmm, granularity)?;
        let second_range = VirtualRange::reserve(granularity)?;
        let second = second_range.map(0, imported)?;
        let mut again = vec![0u8; granularity];
        second.copy_to_host(0, &mut again)?;
        assert!(again == data, "the VMM import sees the exporter's data");

        // As external memory (an opaque file descriptor), written through and read back.
        let external = driver::ExternalMemory::import_fd(for_external, granularity as u64, false)?;
        let mut buffer = external.mapped_buffer(0, granularity as u64)?;
        let mut seen = vec![0u8; granularity];
        buffer.copy_to_host(0, &mut seen)?;
        assert!(seen == data, "external memory sees the exporter's data");
        buffer.copy_from_host(64, b"written through the import")?;
        let mut back = vec![0u8; 26];
        mapping.copy_to_host(64, &mut back)?;
        assert_eq!(back, b"written through the import");
        second.copy_to_host(64, &mut back)?;
        assert_eq!(back, b"written through the import");

        // A file descriptor that is no semaphore is refused with the driver's error.
        let not_a_semaphore = std::os::fd::OwnedFd::from(
            std::fs::File::open("/dev/null").map_err(|e| io_error("/dev/null", e))?,
        );
        match driver::ExternalSemaphore::import_fd(not_a_semaphore, driver::SemaphoreFdKind::Opaque)
        {
            Err(e @ driver::Error::Driver { .. }) => eprintln!("semaphore import refused: {e}"),
            other => panic!("importing /dev/null as a semaphore: {other:?}"),
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Checkpoint and restore.

const CHECKPOINT_BYTES: usize = 1 << 20;

/// The supervising side holds no CUDA context (as NVIDIA's `cuda-checkpoint` tool): only
/// the driver is initialised.
#[test]
fn a_child_process_is_checkpointed_and_restored() {
    if !gpu_available_or_skip("checkpoint") {
        return;
    }
    let supervise = || -> Result<()> {
        let mut child = ChildGuard(Some(
            child_test(
                "checkpoint_child_side",
                &[("CHORUS_CHECKPOINT_CHILD", "1".into())],
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| io_error("running the child", e))?,
        ));
        let process = child.0.as_mut().unwrap();
        let pid = process.id();
        // A step that never returns must not hang the test: the child is killed, which ends
        // the reads of its output (and the driver's wait on it).
        let (finished, watchdog) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if watchdog
                .recv_timeout(std::time::Duration::from_secs(45))
                .is_err()
            {
                eprintln!("checkpoint: 45 s without finishing; killing child {pid}");
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        });
        let step = |what: &str| eprintln!("checkpoint [{pid}]: {what}");
        let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
        let mut ready = false;
        for line in lines.by_ref() {
            let line = line.map_err(|e| io_error("the child's output", e))?;
            // The test harness prints "test checkpoint_child_side ... " before the test's own
            // output, on the same line.
            if line.trim_end().ends_with("READY") {
                ready = true;
                break;
            }
        }
        assert!(ready, "the child never got ready");
        step("child ready");
        assert_eq!(driver::process_state(pid)?, ProcessState::Running);
        step(&format!(
            "running; restore thread {:?}",
            driver::restore_thread_id(pid)
        ));
        driver::lock_process(pid, 10_000)?;
        assert_eq!(driver::process_state(pid)?, ProcessState::Locked);
        step("locked");
        driver::checkpoint_process(pid)?;
        assert_eq!(driver::process_state(pid)?, ProcessState::Checkpointed);
        step("checkpointed");
        driver::restore_process(pid)?;
        assert_eq!(driver::process_state(pid)?, ProcessState::Locked);
        step("restored");
        driver::unlock_process(pid)?;
        assert_eq!(driver::process_state(pid)?, ProcessState::Running);
        step("unlocked");
        let mut stdin = process.stdin.take().unwrap();
        writeln!(stdin, "GO").map_err(|e| io_error("the child's input", e))?;
        drop(stdin);
        let verified = lines.any(|l| l.is_ok_and(|l| l.trim_end().ends_with("VERIFIED")));
        let status = process
            .wait()
            .map_err(|e| io_error("waiting for the child", e))?;
        let _ = finished.send(());
        child.0 = None;
        step(&format!("child verified: {verified}, {status}"));
        assert!(
            verified && status.success(),
            "the child after restore: {status}"
        );
        Ok(())
    };
    supervise().unwrap_or_else(|e| panic!("checkpoint: {e}"));
}

/// The child side of the checkpoint test: fills device memory, says READY, waits for a line
/// on stdin (while the parent checkpoints and restores it), then checks the memory and runs a
/// kernel. Nothing in a plain run.
#[test]
fn checkpoint_child_side() {
    if std::env::var("CHORUS_CHECKPOINT_CHILD").is_err() {
        return;
    }
    assert!(gpu_available_or_skip("checkpoint_child_side"));
    with_cuda(0, |_| -> Result<()> {
        let mut memory = DeviceMemory::alloc(CHECKPOINT_BYTES)?;
        let data = words_bytes(3, CHECKPOINT_BYTES / 4);
        memory.copy_from_host(&data)?;
        let program = Program::from_cuda_c(DOUBLE_WORDS, "double-words")?;
        let f = program.function("double_words")?;
        synchronize_context()?;
        println!("READY");
        std::io::stdout().flush().ok();
        eprintln!("checkpoint child: waiting");
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| io_error("stdin", e))?;
        eprintln!("checkpoint child: resumed");
        let mut back = vec![0u8; CHECKPOINT_BYTES];
        memory.copy_to_host(&mut back)?;
        assert!(back == data, "device memory survived the checkpoint");
        let count = (CHECKPOINT_BYTES / 4) as i32;
        // SAFETY: the kernel's parameters; the memory lives until the copy below.
        unsafe {
            launch_unchecked(
                &f,
                &LaunchConfig::grid((count as u32).div_ceil(256)).block(256),
                &[
                    KernelArg::device_ptr(memory.ptr()),
                    KernelArg::value(&count),
                ],
            )
        }?;
        memory.copy_to_host(&mut back)?;
        for (i, word) in back.chunks_exact(4).enumerate() {
            let value = u32::from_ne_bytes(word.try_into().unwrap());
            assert_eq!(
                value,
                pattern(3 + i).wrapping_mul(2),
                "word {i} after restore"
            );
        }
        println!("VERIFIED");
        Ok(())
    })
    .unwrap_or_else(|e| panic!("child: {e}"));
}

// ---------------------------------------------------------------------------------------
// Compile tier (no GPU): relocatable output of NVRTC.

#[test]
fn nvrtc_emits_relocatable_ptx_cubin_and_lto_ir() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC does not load");
        return;
    }
    let ptx = nvrtc_compile_relocatable(LINK_MAIN, "main", RelocatableOutput::Ptx, (9, 0), &[])
        .expect("relocatable PTX");
    let text = String::from_utf8_lossy(&ptx);
    assert!(
        text.contains(".extern .func") && text.contains("scale_add"),
        "an external declaration: {text}"
    );
    let cubin =
        nvrtc_compile_relocatable(LINK_LIBRARY, "lib", RelocatableOutput::Cubin, (9, 0), &[])
            .expect("relocatable cubin");
    assert_eq!(&cubin[..4], b"\x7fELF");
    let lto = nvrtc_compile_relocatable(LINK_LIBRARY, "lib", RelocatableOutput::LtoIr, (9, 0), &[])
        .expect("LTO-IR");
    assert!(!lto.is_empty() && lto[..4] != cubin[..4]);
    assert_eq!(
        RelocatableOutput::LtoIr.link_input_kind(),
        LinkInputKind::LtoIr
    );
    // The GPU tests' kernels compile for sm_90 (the bulk tensor copy's inline PTX included).
    for (source, name) in [
        (TRIPLE, "triple"),
        (DOUBLE_WORDS, "double"),
        (TMA_COPY, "tma"),
        (SM_IDS, "sm-ids"),
    ] {
        let image = nvrtc_compile(source, name, ImageKind::Cubin, &["-arch=sm_90".into()]);
        assert!(image.is_ok(), "{name}: {image:?}");
    }
    // Without -rdc the extern call cannot compile to a cubin alone: that is what the linker is for.
    let whole = nvrtc_compile(LINK_MAIN, "main", ImageKind::Cubin, &["-arch=sm_90".into()]);
    assert!(whole.is_err(), "an unresolved extern function without -rdc");
}

/// The ELF header fields of a cubin that say what it is for: `e_machine` (190, EM_CUDA) and
/// `e_flags` (which carry the SM architecture).
fn cubin_machine_and_flags(cubin: &[u8]) -> (u16, u32) {
    assert!(cubin.len() > 64, "a cubin has a 64-byte ELF header");
    assert_eq!(&cubin[..4], b"\x7fELF");
    assert_eq!(cubin[4], 2, "a 64-bit ELF");
    let machine = u16::from_le_bytes([cubin[18], cubin[19]]);
    let flags = u32::from_le_bytes(cubin[48..52].try_into().unwrap());
    (machine, flags)
}

/// nvJitLink runs on the host: the LTO-IR link is checked here without a GPU (the cubin's
/// header and architecture, against NVRTC's own cubin of the same target).
#[test]
fn nvjitlink_links_lto_ir_into_a_cubin_for_its_architecture() {
    if !nvrtc_available() {
        eprintln!("skipped: NVRTC does not load");
        return;
    }
    if let Err(e) = driver::jitlink_library() {
        if testing::gpu_required() {
            panic!("CHORUS_REQUIRE_GPU=1 but nvJitLink does not load: {e}");
        }
        eprintln!("skipped: {e}");
        return;
    }
    for arch in [(9, 0), (8, 0)] {
        let (library, main) = lto_modules(arch).expect("LTO-IR");
        let linked = jit_link_lto(arch, &library, &main).expect("nvJitLink");
        assert!(linked.ptx.is_none());
        let cubin = linked.cubin.expect("a cubin");
        let reference = nvrtc_compile(
            TRIPLE,
            "triple",
            ImageKind::Cubin,
            &[format!("-arch=sm_{}{}", arch.0, arch.1)],
        )
        .expect("NVRTC cubin");
        let (machine, flags) = cubin_machine_and_flags(&cubin);
        assert_eq!(machine, 190, "EM_CUDA");
        assert_eq!(
            flags & 0xffff,
            cubin_machine_and_flags(&reference).1 & 0xffff,
            "the architecture of sm_{}{} in e_flags ({flags:#x})",
            arch.0,
            arch.1
        );
        let text = String::from_utf8_lossy(&cubin);
        assert!(
            text.contains("apply_scale_add"),
            "the kernel is in the cubin"
        );
        // The library's counter stays a symbol the host can look up (run_linked reads it).
        assert!(
            text.contains("scale_add_calls"),
            "the device variable is in the cubin"
        );
    }
    // The two architectures' cubins differ in e_flags: the architecture is really there.
    let cubins: Vec<u32> = [(9, 0), (8, 0)]
        .into_iter()
        .map(|arch| {
            let (library, main) = lto_modules(arch).unwrap();
            let cubin = jit_link_lto(arch, &library, &main).unwrap().cubin.unwrap();
            cubin_machine_and_flags(&cubin).1
        })
        .collect();
    assert_ne!(cubins[0] & 0xffff, cubins[1] & 0xffff);

    // Linked PTX (-lto -ptx): the caller with the library's function inlined or defined.
    let (library, main) = lto_modules((9, 0)).unwrap();
    let mut linker = JitLinker::new(&JitLinkOptions {
        ptx: true,
        ..JitLinkOptions::lto((9, 0))
    })
    .unwrap();
    linker
        .add(LinkInputKind::LtoIr, &library, "library.ltoir")
        .unwrap();
    linker
        .add(LinkInputKind::LtoIr, &main, "main.ltoir")
        .unwrap();
    let linked = linker.complete().unwrap();
    let ptx = linked.ptx.expect("PTX");
    assert!(linked.cubin.is_none());
    assert!(
        ptx.contains(".entry apply_scale_add") && !ptx.contains(".extern .func"),
        "one linked program: {ptx}"
    );

    // LTO-IR without -lto is refused with nvJitLink's error, not a panic.
    let mut linker = JitLinker::new(&JitLinkOptions {
        lto: false,
        ..JitLinkOptions::lto((9, 0))
    })
    .unwrap();
    let added = linker
        .add(LinkInputKind::LtoIr, &main, "main.ltoir")
        .and_then(|()| linker.complete().map(|_| ()));
    match added {
        Err(driver::Error::Link { name, log, .. }) => {
            eprintln!("LTO-IR without -lto: {name}: {log}")
        }
        other => panic!("LTO-IR without -lto: {other:?}"),
    }
    // An option nvJitLink does not know is its error too.
    let e = JitLinker::new(&JitLinkOptions {
        extra: vec!["-no-such-option".into()],
        ..JitLinkOptions::lto((9, 0))
    })
    .unwrap_err();
    assert!(matches!(e, driver::Error::Link { .. }), "{e:?}");
}
