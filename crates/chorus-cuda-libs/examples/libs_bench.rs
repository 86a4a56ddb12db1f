//! The benchmark: each library call through Chorus against the same C entry point called
//! directly (cudarc's raw binding, which is the C call with no layer on top), in one run on one
//! device, with the same data. GPU time from events over repeated calls; host overhead of a small
//! (64³) SGEMM from the wall clock. Prints one line per case with both times and their ratio
//! (Chorus's speed relative to the direct call; the issue asks ≥ 0.98, and ≤ 1.1× the direct
//! call's host time for 64³).
//!
//! Stage and run on the GPU machine: `device-stage-pkg NAME -p chorus-cuda-libs --example
//! libs_bench`, then `run.sh --bin libs_bench` (a release build; nothing here is a test).

#![allow(clippy::too_many_arguments)]

use chorus_cuda_libs::cublas::{Blas, MathMode};
use chorus_cuda_libs::cublaslt::{BlasLt, Fp8Scales, Matmul};
use chorus_cuda_libs::cufft::{Direction, FftKind, Plan, PlanShape, Precision};
use chorus_cuda_libs::cusparse::{Sparse, SparseMatrix};
use chorus_cuda_libs::{AsDeviceSlice, C32, F8E4M3, Transpose};
use chorus_driver::{Context, Event, MemoryBlock, Stream};
use cudarc::{cublas, cufft, cusparse};
use half::bf16;
use std::process::ExitCode;

type Failure = Box<dyn std::error::Error>;

/// Milliseconds per call of `f` on `stream`: `warm` calls, then `reps` between two events.
fn gpu_ms(
    stream: &Stream,
    reps: usize,
    mut f: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    for _ in 0..3 {
        f()?;
    }
    let (start, stop) = (Event::new()?, Event::new()?);
    start.record(stream)?;
    for _ in 0..reps {
        f()?;
    }
    stop.record(stream)?;
    stop.synchronize()?;
    Ok(stop.elapsed_ms_since(&start)? as f64 / reps as f64)
}

/// One line: both times, the rates of `work` (in units of `scale` per second) and the ratio.
fn report(name: &str, chorus_ms: f64, direct_ms: f64, work: f64, scale: f64, unit: &str) {
    let rate = |ms: f64| work / (ms * 1e-3) / scale;
    println!(
        "{name:28} chorus {chorus_ms:9.4} ms ({:8.1} {unit})   direct {direct_ms:9.4} ms ({:8.1} {unit})   speed ratio {:.3}",
        rate(chorus_ms),
        rate(direct_ms),
        direct_ms / chorus_ms
    );
}

fn status(call: &str, ok: bool) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(format!("{call} failed").into())
    }
}

fn filled<T: bytemuck::Pod>(
    n: usize,
    value: impl Fn(usize) -> T,
) -> Result<MemoryBlock<T>, Failure> {
    let mut block = MemoryBlock::<T>::alloc(n)?;
    for (i, v) in block.as_mut_slice().iter_mut().enumerate() {
        *v = value(i);
    }
    block.sync(chorus_driver::Direction::HostToDevice)?;
    Ok(block)
}

fn gemms(stream: &Stream, n: usize) -> Result<(), Failure> {
    let mut blas = Blas::new(stream)?;
    blas.set_math_mode(MathMode::Default)?;
    let raw = blas.raw();
    let small = |i: usize| ((i % 13) as f32 - 6.0) / 8.0;
    let a = filled(n * n, small)?;
    let b = filled(n * n, small)?;
    let mut c = MemoryBlock::<f32>::alloc(n * n)?;
    let flops = 2.0 * (n as f64).powi(3);
    let ni = n as i32;
    let (one, zero) = (1.0f32, 0.0f32);
    let op = cublas::sys::cublasOperation_t::CUBLAS_OP_N;
    let chorus = gpu_ms(stream, 10, || {
        Ok(blas.gemm(
            Transpose::No,
            Transpose::No,
            n,
            n,
            n,
            1.0f32,
            &a,
            n,
            &b,
            n,
            0.0,
            &mut c,
            n,
        )?)
    })?;
    let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), c.device_ptr());
    let direct = gpu_ms(stream, 10, || {
        // SAFETY: the handle is live; the three n×n matrices are allocated above.
        let s = unsafe {
            cublas::sys::cublasSgemm_v2(
                raw,
                op,
                op,
                ni,
                ni,
                ni,
                &one,
                pa as *const f32,
                ni,
                pb as *const f32,
                ni,
                &zero,
                pc as *mut f32,
                ni,
            )
        };
        status(
            "cublasSgemm_v2",
            s == cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
        )
    })?;
    report(
        &format!("SGEMM FP32 {n}³"),
        chorus,
        direct,
        flops,
        1e12,
        "TFLOP/s",
    );
    // BF16 in and out, f32 accumulation.
    let a16 = filled(n * n, |i| bf16::from_f32(small(i)))?;
    let b16 = filled(n * n, |i| bf16::from_f32(small(i)))?;
    let mut c16 = MemoryBlock::<bf16>::alloc(n * n)?;
    let chorus = gpu_ms(stream, 20, || {
        Ok(blas.gemm_ex(
            Transpose::No,
            Transpose::No,
            n,
            n,
            n,
            1.0,
            &a16,
            n,
            &b16,
            n,
            0.0,
            &mut c16,
            n,
        )?)
    })?;
    let (pa, pb, pc) = (a16.device_ptr(), b16.device_ptr(), c16.device_ptr());
    let dt = cublas::sys::cudaDataType_t::CUDA_R_16BF;
    let direct = gpu_ms(stream, 20, || {
        // SAFETY: as above, bf16 matrices.
        let s = unsafe {
            cublas::sys::cublasGemmEx(
                raw,
                op,
                op,
                ni,
                ni,
                ni,
                (&one as *const f32).cast(),
                pa as *const _,
                dt,
                ni,
                pb as *const _,
                dt,
                ni,
                (&zero as *const f32).cast(),
                pc as *mut _,
                dt,
                ni,
                cublas::sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas::sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        status(
            "cublasGemmEx",
            s == cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
        )
    })?;
    report(
        &format!("GEMM BF16 (gemmEx) {n}³"),
        chorus,
        direct,
        flops,
        1e12,
        "TFLOP/s",
    );
    // Host overhead of a 64³ SGEMM: wall clock of many calls, waiting at the end.
    let m = 64;
    let (sa, sb) = (filled(m * m, small)?, filled(m * m, small)?);
    let mut sc = MemoryBlock::<f32>::alloc(m * m)?;
    let calls = 20_000;
    let wall = |f: &mut dyn FnMut() -> Result<(), Failure>| -> Result<f64, Failure> {
        for _ in 0..100 {
            f()?;
        }
        stream.synchronize()?;
        let start = std::time::Instant::now();
        for _ in 0..calls {
            f()?;
        }
        stream.synchronize()?;
        Ok(start.elapsed().as_secs_f64() * 1e6 / calls as f64)
    };
    let chorus_us = wall(&mut || {
        Ok(blas.gemm(
            Transpose::No,
            Transpose::No,
            m,
            m,
            m,
            1.0f32,
            &sa,
            m,
            &sb,
            m,
            0.0,
            &mut sc,
            m,
        )?)
    })?;
    let (pa, pb, pc, mi) = (sa.device_ptr(), sb.device_ptr(), sc.device_ptr(), m as i32);
    let direct_us = wall(&mut || {
        // SAFETY: as above, 64×64 matrices.
        let s = unsafe {
            cublas::sys::cublasSgemm_v2(
                raw,
                op,
                op,
                mi,
                mi,
                mi,
                &one,
                pa as *const f32,
                mi,
                pb as *const f32,
                mi,
                &zero,
                pc as *mut f32,
                mi,
            )
        };
        status(
            "cublasSgemm_v2",
            s == cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
        )
    })?;
    println!(
        "SGEMM 64³ per call (wall)    chorus {chorus_us:9.3} µs   direct {direct_us:9.3} µs   time ratio {:.3} (the issue asks ≤ 1.1)",
        chorus_us / direct_us
    );
    Ok(())
}

fn fp8(stream: &Stream, n: usize) -> Result<(), Failure> {
    let lt = BlasLt::new(stream)?;
    let a = filled(n * n, |i| F8E4M3::from_f32(((i % 7) as f32 - 3.0) / 4.0))?;
    let b = filled(n * n, |i| F8E4M3::from_f32(((i % 5) as f32 - 2.0) / 4.0))?;
    let mut d = MemoryBlock::<bf16>::alloc(n * n)?;
    let (sa, sb) = (filled(1, |_| 1.0f32)?, filled(1, |_| 1.0f32)?);
    let scales = Fp8Scales {
        a: sa.as_device_slice()?,
        b: sb.as_device_slice()?,
    };
    let shape = Matmul::new(Transpose::Yes, Transpose::No, n, n, n);
    let chorus = gpu_ms(stream, 20, || {
        Ok(lt.matmul(&shape, 1.0, &a, &b, 0.0, &mut d, None, Some(scales))?)
    })?;
    let flops = 2.0 * (n as f64).powi(3);
    println!(
        "{:28} chorus {chorus:9.4} ms ({:8.1} TFLOP/s)   (cuBLASLt alone: 1407 TFLOP/s on this H200)",
        format!("FP8 E4M3 cuBLASLt {n}³"),
        flops / (chorus * 1e-3) / 1e12
    );
    Ok(())
}

fn fft(stream: &Stream, n: usize) -> Result<(), Failure> {
    let x = filled(n, |i| C32::new((i % 17) as f32, (i % 5) as f32))?;
    let mut y = MemoryBlock::<C32>::alloc(n)?;
    let mut plan = Plan::new(
        PlanShape::new(&[n], FftKind::C2C, Precision::Single, 1),
        stream,
    )?;
    let chorus = gpu_ms(stream, 50, || {
        Ok(plan.c2c(&x, &mut y, Direction::Forward)?)
    })?;
    let mut raw = 0;
    // SAFETY: the library is loaded (the plan above); `raw` receives a new plan.
    let s =
        unsafe { cufft::sys::cufftPlan1d(&mut raw, n as i32, cufft::sys::cufftType::CUFFT_C2C, 1) };
    status("cufftPlan1d", s == cufft::sys::cufftResult::CUFFT_SUCCESS)?;
    // SAFETY: a live plan and this context's stream.
    unsafe { cufft::sys::cufftSetStream(raw, stream.raw() as cufft::sys::cudaStream_t) };
    let (px, py) = (x.device_ptr(), y.device_ptr());
    let direct = gpu_ms(stream, 50, || {
        // SAFETY: n complex numbers each side.
        let s = unsafe { cufft::sys::cufftExecC2C(raw, px as *mut _, py as *mut _, -1) };
        status("cufftExecC2C", s == cufft::sys::cufftResult::CUFFT_SUCCESS)
    })?;
    // SAFETY: made above, destroyed once.
    unsafe { cufft::sys::cufftDestroy(raw) };
    let flops = 5.0 * n as f64 * (n as f64).log2();
    report(
        &format!("C2C FFT f32 2^{}", n.trailing_zeros()),
        chorus,
        direct,
        flops,
        1e9,
        "GFLOP/s",
    );
    Ok(())
}

fn spmv(stream: &Stream, side: usize) -> Result<(), Failure> {
    let rows = side * side;
    let (mut offsets, mut cols) = (vec![0i32], Vec::new());
    for r in 0..rows {
        let (i, j) = (r / side, r % side);
        for (ok, c) in [
            (i > 0, r.wrapping_sub(side)),
            (j > 0, r.wrapping_sub(1)),
            (true, r),
            (j + 1 < side, r + 1),
            (i + 1 < side, r + side),
        ] {
            if ok {
                cols.push(c as i32);
            }
        }
        offsets.push(cols.len() as i32);
    }
    let nnz = cols.len();
    let values = filled(nnz, |i| if i % 5 == 2 { 4.0f32 } else { -1.0 })?;
    let (offsets, cols) = (filled(rows + 1, |i| offsets[i])?, filled(nnz, |i| cols[i])?);
    let x = filled(rows, |i| (i % 11) as f32)?;
    let mut y = MemoryBlock::<f32>::alloc(rows)?;
    let sparse = Sparse::new(stream)?;
    let a = SparseMatrix::csr(rows, rows, &offsets, &cols, &values)?;
    let chorus = gpu_ms(stream, 50, || {
        Ok(sparse.spmv(Transpose::No, 1.0f32, &a, &x, 0.0, &mut y)?)
    })?;
    // The direct call as C code writes it: vector descriptors and the buffer made once.
    use cusparse::sys as sp;
    let (mut vx, mut vy) = (std::ptr::null_mut(), std::ptr::null_mut());
    let dt = sp::cudaDataType::CUDA_R_32F;
    let alg = sp::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;
    let opn = sp::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
    let (one, zero) = (1.0f32, 0.0f32);
    let (h, m) = (sparse.raw(), a.raw());
    let mut size = 0usize;
    // SAFETY: live handle and descriptors over the blocks above.
    unsafe {
        sp::cusparseCreateDnVec(&mut vx, rows as i64, x.device_ptr() as *mut _, dt);
        sp::cusparseCreateDnVec(&mut vy, rows as i64, y.device_ptr() as *mut _, dt);
        sp::cusparseSpMV_bufferSize(
            h,
            opn,
            (&one as *const f32).cast(),
            m,
            vx,
            (&zero as *const f32).cast(),
            vy,
            dt,
            alg,
            &mut size,
        );
    }
    let buffer = chorus_driver::DeviceMemory::alloc(size.max(1))?;
    let direct = gpu_ms(stream, 50, || {
        // SAFETY: as above, with a buffer of the size asked.
        let s = unsafe {
            sp::cusparseSpMV(
                h,
                opn,
                (&one as *const f32).cast(),
                m,
                vx,
                (&zero as *const f32).cast(),
                vy,
                dt,
                alg,
                buffer.ptr() as *mut _,
            )
        };
        status(
            "cusparseSpMV",
            s == sp::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS,
        )
    })?;
    // SAFETY: made above, destroyed once.
    unsafe {
        sp::cusparseDestroyDnVec(vx);
        sp::cusparseDestroyDnVec(vy);
    }
    report(
        &format!("SpMV CSR f32, {nnz} nnz"),
        chorus,
        direct,
        2.0 * nnz as f64,
        1e9,
        "GFLOP/s",
    );
    Ok(())
}

fn run() -> Result<(), Failure> {
    let ctx = Context::new(0)?;
    let (major, minor) = ctx.compute_capability()?;
    println!(
        "libs_bench: {} (compute capability {major}.{minor})",
        chorus_driver::device_name(0)?
    );
    let stream = Stream::new()?;
    gemms(&stream, 8192)?;
    if (major, minor) >= (8, 9) {
        fp8(&stream, 8192)?;
    }
    fft(&stream, 1 << 24)?;
    spmv(&stream, 4096)?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("libs_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
