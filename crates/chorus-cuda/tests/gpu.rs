//! GPU tests of the runtime with hand-written CUDA C. They skip, saying why, when no CUDA
//! driver loads, and fail instead when `CHORUS_REQUIRE_GPU=1`.

use chorus_cuda::testing::{gpu_available_or_skip, on_gpu};
use chorus_cuda::*;
use chorus_lang::host::{Float3, Int2, bf16, f16};
use chorus_lang::types::Type;

const VEC_ADD: &str = r#"extern "C" __global__ void vec_add_kernel(float* a, float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
  }
}
"#;

fn vec_add(n: usize) -> Result<()> {
    let program = Program::from_cuda_c(VEC_ADD, "vec-add")?;
    let f = program.function("vec_add_kernel")?;
    let mut a = MemoryBlock::<f32>::alloc(n)?;
    let mut b = MemoryBlock::<f32>::alloc(n)?;
    let mut c = MemoryBlock::<f32>::alloc(n)?;
    for i in 0..n {
        a[i] = i as f32 * 0.5;
        b[i] = 1000.0 - i as f32;
        c[i] = f32::NAN;
    }
    a.sync(Direction::HostToDevice)?;
    b.sync(Direction::HostToDevice)?;
    c.sync(Direction::HostToDevice)?;
    let threads = 256;
    let blocks = n.div_ceil(threads) as u32;
    let count = n as i32;
    // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
    unsafe {
        launch_unchecked(
            &f,
            &LaunchConfig::grid(blocks).block(threads as u32),
            &[
                KernelArg::block(&a),
                KernelArg::block(&b),
                KernelArg::block(&c),
                KernelArg::value(&count),
            ],
        )
    }?;
    c.sync(Direction::DeviceToHost)?;
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i} of {n}");
    }
    Ok(())
}

#[test]
fn vec_add_multiple_and_not_multiple_of_the_block() {
    on_gpu("vec_add", |_| {
        vec_add(1024)?;
        vec_add(1000)
    });
}

#[test]
fn devices_and_attributes() {
    on_gpu("devices", |ctx| {
        let list = devices()?;
        assert!(!list.is_empty());
        let d = &list[0];
        assert!(d.total_memory > 0 && !d.name.is_empty());
        assert_eq!(ctx.compute_capability()?, d.compute_capability);
        assert_eq!(current_compute_capability(), Some(d.compute_capability));
        let warp = device_attribute(0, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
        assert_eq!(warp, 32);
        let (free, total) = memory_info()?;
        assert!(free <= total && total > 0);
        assert!(!ctx.can_access_peer(ctx)?, "a device is not its own peer");
        let (major, _) = driver_version()?;
        assert!(major >= 12);
        eprintln!("device 0: {d:?}, driver CUDA {:?}", driver_version()?);
        Ok(())
    });
}

#[test]
fn primary_context() {
    if !gpu_available_or_skip("primary") {
        return;
    }
    with_primary_cuda(0, |ctx| {
        assert!(ctx.is_primary());
        let mut block = MemoryBlock::<i32>::from_slice(&[1, 2, 3])?;
        block.sync(Direction::HostToDevice)?;
        block.as_mut_slice().fill(0);
        block.sync(Direction::DeviceToHost)?;
        assert_eq!(block.as_slice(), &[1, 2, 3]);
        Ok::<_, Error>(())
    })
    .unwrap();
}

#[test]
fn globals_round_trip() {
    on_gpu("globals", |_| {
        let program = Program::from_cuda_c(
            "__device__ int x = 7;\n__constant__ float k = 2.5f;\nextern \"C\" __global__ void bump() { x += 1; }\n",
            "globals",
        )?;
        assert_eq!(program.global_ref::<i32>("x")?, 7);
        program.set_global_ref("x", 42i32)?;
        assert_eq!(program.global_ref::<i32>("x")?, 42);
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe { launch_unchecked(&program.function("bump")?, &LaunchConfig::grid(1), &[]) }?;
        assert_eq!(program.global_ref::<i32>("x")?, 43);
        assert_eq!(program.global_ref::<f32>("k")?, 2.5);
        let e = program.global_ref::<f64>("x").unwrap_err();
        assert!(matches!(e, Error::GlobalType { .. }), "{e}");
        let e = program.global_ref::<i32>("nope").unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }), "{e}");
        Ok(())
    });
}

#[test]
fn vector_and_struct_arguments() {
    on_gpu("vector args", |_| {
        let program = Program::from_cuda_c(
            "struct pair { int x; int y; };\n\
             extern \"C\" __global__ void sum3(float3 v, float* out) { out[0] = v.x + v.y + v.z; }\n\
             extern \"C\" __global__ void sum2(int2 v, pair p, int* out) { out[0] = v.x * v.y + p.x - p.y; }\n",
            "vectors",
        )?;
        let mut out = MemoryBlock::<f32>::alloc(1)?;
        let v = Float3::new(1.0, 2.0, 3.0);
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("sum3")?,
                &LaunchConfig::grid(1),
                &[KernelArg::value(&v), KernelArg::block(&out)],
            )
        }?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], 6.0);
        let mut out = MemoryBlock::<i32>::alloc(1)?;
        let v = Int2::new(6, 7);
        let pair = [10i32, 4];
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("sum2")?,
                &LaunchConfig::grid(1),
                &[
                    KernelArg::value(&v),
                    KernelArg::raw(Type::Struct("pair".into()), bytemuck::cast_slice(&pair)),
                    KernelArg::block(&out),
                ],
            )
        }?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], 48);
        Ok(())
    });
}

#[test]
fn device_functions_atomics_and_loops() {
    on_gpu("atomics", |_| {
        let program = Program::from_cuda_c(
            "__device__ int twice(int x) { return 2 * x; }\n\
             extern \"C\" __global__ void count(int* atomic, int* plain) { atomicAdd(atomic, 1); *plain += 1; }\n\
             extern \"C\" __global__ void loops(int* out) {\n\
               int s = 0; for (int i = 0; i < 16; i++) s += i; out[0] = twice(s);\n\
               int w = 0; while (w < 5) w++; out[1] = w;\n\
               switch (out[2]) { case 1: out[3] = 10; break; default: out[3] = 30; }\n\
             }\n",
            "atomics",
        )?;
        let mut counters = MemoryBlock::<i32>::alloc(2)?;
        counters.sync(Direction::HostToDevice)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("count")?,
                &LaunchConfig::grid(1).block(256),
                &[
                    KernelArg::device_ptr(counters.device_ptr()),
                    KernelArg::device_ptr(counters.device_ptr() + 4),
                ],
            )
        }?;
        counters.sync(Direction::DeviceToHost)?;
        assert_eq!(counters[0], 256);
        let mut out = MemoryBlock::<i32>::from_slice(&[0, 0, 1, 0])?;
        out.sync(Direction::HostToDevice)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("loops")?,
                &LaunchConfig::grid(1),
                &[KernelArg::block(&out)],
            )
        }?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out.as_slice(), &[240, 5, 1, 10]);
        Ok(())
    });
}

#[test]
fn shared_memory_shuffles_and_inline_asm() {
    on_gpu("shared", |_| {
        let program = Program::from_cuda_c(
            "extern \"C\" __global__ void fill(int* a) {\n\
               extern __shared__ int s[];\n\
               s[threadIdx.x] = threadIdx.x * 3; __syncthreads();\n\
               a[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];\n\
             }\n\
             extern \"C\" __global__ void warp_sum(int* out) {\n\
               int v = threadIdx.x;\n\
               for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);\n\
               unsigned lane; asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n\
               if (lane == 0) out[0] = v;\n\
             }\n",
            "shared",
        )?;
        let mut a = MemoryBlock::<i32>::alloc(64)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("fill")?,
                &LaunchConfig::grid(1).block(64).shared_mem(64 * 4),
                &[KernelArg::block(&a)],
            )
        }?;
        a.sync(Direction::DeviceToHost)?;
        for i in 0..64 {
            assert_eq!(a[i], (63 - i as i32) * 3);
        }
        let mut out = MemoryBlock::<i32>::alloc(1)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("warp_sum")?,
                &LaunchConfig::grid(1).block(32),
                &[KernelArg::block(&out)],
            )
        }?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], (0..32).sum::<i32>());
        Ok(())
    });
}

#[test]
fn half_and_bfloat16() {
    on_gpu("half", |_| {
        let program = Program::from_cuda_c(
            "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\
             extern \"C\" __global__ void add(__half* h, __nv_bfloat16* b) {\n\
               h[2] = __hadd(h[0], h[1]); b[2] = __hadd(b[0], b[1]);\n\
             }\n",
            "halves",
        )?;
        let mut h = MemoryBlock::from_slice(&[f16::from_f32(1.5), f16::from_f32(2.25), f16::ZERO])?;
        let mut b =
            MemoryBlock::from_slice(&[bf16::from_f32(3.0), bf16::from_f32(4.5), bf16::ZERO])?;
        h.sync(Direction::HostToDevice)?;
        b.sync(Direction::HostToDevice)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("add")?,
                &LaunchConfig::grid(1),
                &[KernelArg::block(&h), KernelArg::block(&b)],
            )
        }?;
        h.sync(Direction::DeviceToHost)?;
        b.sync(Direction::DeviceToHost)?;
        assert_eq!(h[2].to_f32(), 3.75);
        assert_eq!(b[2].to_f32(), 7.5);
        Ok(())
    });
}

#[test]
fn streams_events_timers_and_graphs() {
    on_gpu("streams", |_| {
        let program = Program::from_cuda_c(
            "extern \"C\" __global__ void inc(int* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1; }\n",
            "inc",
        )?;
        let f = program.function("inc")?;
        let n = 4096i32;
        let mut a = MemoryBlock::<i32>::alloc_pinned(n as usize)?;
        assert_eq!(a.kind(), BlockKind::Pinned);
        let stream = Stream::new()?;
        // SAFETY: the host copy is next touched after `stream.synchronize()` below.
        unsafe { a.sync_async(Direction::HostToDevice, &stream) }?;
        let timer = Timer::new()?;
        with_stream(&stream, || -> Result<()> {
            timer.start()?;
            // The current stream is used when the launch names none.
            // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
            unsafe {
                launch_unchecked(
                    &f,
                    &LaunchConfig::grid(16).block(256),
                    &[KernelArg::block(&a), KernelArg::value(&n)],
                )
            }?;
            Ok(timer.stop()?)
        })?;
        // SAFETY: as above: the host copy is read after `stream.synchronize()`.
        unsafe { a.sync_async(Direction::DeviceToHost, &stream) }?;
        stream.synchronize()?;
        assert!(stream.is_idle()?);
        assert!(a.as_slice().iter().all(|&x| x == 1));
        assert!(timer.elapsed_ms()? >= 0.0);

        let graph = Graph::capture(&stream, || -> Result<()> {
            for _ in 0..3 {
                // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
                unsafe {
                    launch_unchecked(
                        &f,
                        &LaunchConfig::grid(16).block(256),
                        &[KernelArg::block(&a), KernelArg::value(&n)],
                    )
                }?;
            }
            Ok(())
        })?;
        let exec = graph.instantiate()?;
        for _ in 0..5 {
            exec.launch(&stream)?;
        }
        stream.synchronize()?;
        a.sync(Direction::DeviceToHost)?;
        assert!(
            a.as_slice().iter().all(|&x| x == 16),
            "1 + 5 replays of 3 launches"
        );
        assert!(Graph::capture(&Stream::null(), || Ok::<_, Error>(())).is_err());
        Ok(())
    });
}

#[test]
fn cluster_launch() {
    on_gpu("cluster", |ctx| {
        if ctx.compute_capability()?.0 < 9 {
            eprintln!("skipped: clusters need sm_90");
            return Ok(());
        }
        let program = Program::from_cuda_c(
            "extern \"C\" __global__ void ranks(unsigned* out) {\n\
               unsigned rank, size; asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(rank));\n\
               asm(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(size));\n\
               if (threadIdx.x == 0) out[blockIdx.x] = rank * 100 + size;\n\
             }\n",
            "clusters",
        )?;
        let mut out = MemoryBlock::<u32>::alloc(8)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("ranks")?,
                &LaunchConfig::grid(8).block(32).cluster(4),
                &[KernelArg::block(&out)],
            )
        }?;
        out.sync(Direction::DeviceToHost)?;
        let expected: Vec<u32> = (0..8).map(|b| (b % 4) * 100 + 4).collect();
        assert_eq!(out.as_slice(), &expected[..]);
        Ok(())
    });
}

#[test]
fn memset_copies_pinned_and_managed_memory() {
    on_gpu("memory", |_| {
        let mut a = MemoryBlock::<u32>::alloc(64)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe { memset_device(a.device_ptr(), MemsetValue::U32(0xdead_beef), 64) }?;
        a.sync(Direction::DeviceToHost)?;
        assert!(a.as_slice().iter().all(|&x| x == 0xdead_beef));
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe { memset_device(a.device_ptr(), MemsetValue::U16(0x1234), 128) }?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a[5], 0x1234_1234);
        a.memset_device_bytes(0x01)?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a[63], 0x0101_0101);

        // A 4 × 3 rectangle out of an 8-wide source into a 5-wide destination.
        let mut src = MemoryBlock::<i32>::alloc(8 * 3)?;
        for i in 0..24 {
            src[i] = i as i32;
        }
        src.sync(Direction::HostToDevice)?;
        let mut dst = MemoryBlock::<i32>::alloc(5 * 3)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe { memset_device(dst.device_ptr(), MemsetValue::U32(u32::MAX), 15) }?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            memcpy_device_to_device_2d(dst.device_ptr(), 5 * 4, src.device_ptr(), 8 * 4, 4 * 4, 3)
        }?;
        dst.sync(Direction::DeviceToHost)?;
        assert_eq!(
            dst.as_slice(),
            &[0, 1, 2, 3, -1, 8, 9, 10, 11, -1, 16, 17, 18, 19, -1]
        );
        assert!(
            // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
            unsafe { memcpy_device_to_device_2d(dst.device_ptr(), 4, src.device_ptr(), 32, 16, 3) }
                .is_err()
        );

        let mut copy = MemoryBlock::<i32>::alloc(24)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe { memcpy_device_to_device(copy.device_ptr(), src.device_ptr(), 24 * 4) }?;
        copy.sync(Direction::DeviceToHost)?;
        assert_eq!(copy.as_slice(), src.as_slice());

        let mut managed = MemoryBlock::<i32>::alloc_managed(256)?;
        managed[3] = 5;
        let program = Program::from_cuda_c(
            "extern \"C\" __global__ void dbl(int* a) { a[threadIdx.x] *= 2; }",
            "dbl",
        )?;
        managed.sync(Direction::HostToDevice)?;
        // SAFETY: the arguments are the CUDA C kernel's parameters, in order, and the pointers are of live blocks.
        unsafe {
            launch_unchecked(
                &program.function("dbl")?,
                &LaunchConfig::grid(1).block(256),
                &[KernelArg::block(&managed)],
            )
        }?;
        managed.sync(Direction::DeviceToHost)?;
        assert_eq!(managed[3], 10);
        assert_eq!(managed.get(256), None);
        assert!(matches!(
            managed.at(300),
            Err(DriverError::IndexOutOfRange {
                index: 300,
                len: 256
            })
        ));

        let mut raw = DeviceMemory::alloc(16)?;
        raw.copy_from_host(&[7u8; 16])?;
        let mut back = [0u8; 16];
        raw.copy_to_host(&mut back)?;
        assert_eq!(back, [7u8; 16]);
        assert!(raw.copy_from_host(&[0u8; 17]).is_err());
        Ok(())
    });
}

#[test]
fn allocation_errors() {
    on_gpu("oversize", |_| {
        let (_, total) = memory_info()?;
        let e = MemoryBlock::<u8>::alloc(total * 2).unwrap_err();
        assert!(matches!(e, DriverError::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("out of device memory"), "{e}");
        assert!(matches!(
            MemoryBlock::<f32>::alloc(0),
            Err(DriverError::InvalidArgument(_))
        ));
        Ok(())
    });
}

#[test]
fn unsupported_ptx_version_falls_back_to_cubin() {
    on_gpu("ptx fallback", |_| {
        let image = compile::compile(VEC_ADD, "vec-add", Some(ImageKind::Ptx))?;
        let text = String::from_utf8(image.bytes.to_vec()).unwrap();
        let version_line = text
            .lines()
            .find(|l| l.starts_with(".version"))
            .unwrap()
            .to_owned();
        let raised = text.replace(&version_line, ".version 99.9");
        let e = Module::load(raised.as_bytes(), ImageKind::Ptx).unwrap_err();
        assert!(
            e.is_driver_error("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
            "{e}"
        );
        let mut fallback_used = false;
        let (module, kind) = Module::load_ptx_or_cubin(raised.as_bytes(), || {
            fallback_used = true;
            Ok(
                compile::compile(VEC_ADD, "vec-add", Some(ImageKind::Cubin))?
                    .bytes
                    .to_vec(),
            )
        })?;
        assert!(fallback_used);
        assert_eq!(kind, ImageKind::Cubin);
        module.function("vec_add_kernel")?;
        Ok(())
    });
}

#[test]
fn function_attributes_and_occupancy() {
    on_gpu("attributes", |_| {
        let program = Program::from_cuda_c(VEC_ADD, "vec-add")?;
        let f = program.function("vec_add_kernel")?;
        assert!(f.num_regs()? > 0);
        assert!(f.max_threads_per_block()? >= 256);
        assert_eq!(f.shared_size_bytes()?, 0);
        assert!(f.max_active_blocks_per_multiprocessor(256, 0)? >= 1);
        let (grid, block) = f.suggested_block_size(0)?;
        assert!(grid >= 1 && (32..=1024).contains(&block));
        assert!(matches!(
            program.function("missing"),
            Err(Error::NotFound { .. })
        ));
        Ok(())
    });
}

#[test]
fn both_compilers_run_kernels() {
    on_gpu("compilers", |_| {
        for compiler in [CompilerChoice::Nvrtc, CompilerChoice::Nvcc] {
            let s = Settings {
                compiler,
                ..settings()
            };
            if compile::Compiler::from_settings(&s).is_err() {
                eprintln!("skipped: {compiler:?} not found");
                continue;
            }
            let tagged = format!("// {compiler:?}\n{VEC_ADD}");
            let image = compile::compile_with(&s, &tagged, "vec-add", None)?;
            let module = Module::load(&image.bytes, image.kind)?;
            module.function("vec_add_kernel")?;
        }
        Ok(())
    });
}
