//! GPU tests of kernels written in the kernel language: read, checked, printed as CUDA C,
//! compiled, loaded and launched with checked arguments. They skip, saying why, when no CUDA
//! driver loads, and fail instead when `CHORUS_REQUIRE_GPU=1`.

use bytemuck::{Pod, Zeroable};
use chorus_cuda::testing::{gpu_available_or_skip, on_gpu};
use chorus_cuda::*;
use chorus_lang::host::{Float3, Int2, KernelValue, bf16, f16};
use chorus_lang::types::Type;

const VEC_ADD: &str = "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n)
        (set (aref c i)
             (+ (aref a i) (aref b i))))))";

fn seed_vec_add(program: &Program, n: usize, stream: Option<&Stream>) -> Result<()> {
    let f = program.function("vec-add-kernel")?;
    let mut a = MemoryBlock::<f32>::alloc(n)?;
    let mut b = MemoryBlock::<f32>::alloc(n)?;
    let mut c = MemoryBlock::<f32>::alloc(n)?;
    for i in 0..n {
        a[i] = (i % 97) as f32 * 0.25;
        b[i] = 3.0 - (i % 13) as f32;
    }
    a.sync(Direction::HostToDevice)?;
    b.sync(Direction::HostToDevice)?;
    let threads_per_block = 256u32;
    let blocks_per_grid = (n as u32).div_ceil(threads_per_block);
    let count = n as i32;
    let mut config = LaunchConfig::grid(blocks_per_grid).block(threads_per_block);
    if let Some(s) = stream {
        config = config.stream(s);
    }
    launch(
        &f,
        &config,
        &[
            KernelArg::block(&a),
            KernelArg::block(&b),
            KernelArg::block(&c),
            KernelArg::value(&count),
        ],
    )?;
    if let Some(s) = stream {
        s.synchronize()?;
    }
    c.sync(Direction::DeviceToHost)?;
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i} of {n}");
    }
    Ok(())
}

#[test]
fn seed_vec_add_multiple_and_not_multiple_of_the_block() {
    on_gpu("vec-add", |_| {
        let program = Program::from_text(VEC_ADD, "vec-add.lisp")?;
        seed_vec_add(&program, 1024, None)?;
        seed_vec_add(&program, 1000, None)?;
        let stream = Stream::new()?;
        seed_vec_add(&program, 3000, Some(&stream))
    });
}

#[test]
fn argument_mismatches_are_clear_errors() {
    on_gpu("mismatch", |_| {
        let program = Program::from_text(VEC_ADD, "vec-add.lisp")?;
        let f = program.function("vec-add-kernel")?;
        // Uploaded: the launch with a raw pointer below runs and reads it (compute-sanitizer's
        // initcheck reported the 8 reads of the device copy `alloc` leaves uninitialised).
        let mut a = MemoryBlock::<f32>::alloc(4)?;
        a.sync(Direction::HostToDevice)?;
        let ints = MemoryBlock::<i32>::alloc(4)?;
        let n = 4i32;
        let cfg = LaunchConfig::grid(1).block(4);
        let e = launch(
            &f,
            &cfg,
            &[
                KernelArg::block(&a),
                KernelArg::value(&n),
                KernelArg::block(&a),
                KernelArg::value(&n),
            ],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument 2 of vec-add-kernel: expected float*, got int"
        );
        let e = launch(
            &f,
            &cfg,
            &[
                KernelArg::block(&a),
                KernelArg::block(&ints),
                KernelArg::block(&a),
                KernelArg::value(&n),
            ],
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument 2 of vec-add-kernel: expected float*, got int*"
        );
        let e = launch(&f, &cfg, &[KernelArg::block(&a)]).unwrap_err();
        assert_eq!(e.to_string(), "vec-add-kernel takes 4 arguments, got 1");
        // A raw device pointer is accepted for any pointer parameter.
        launch(
            &f,
            &cfg,
            &[
                // SAFETY: the address is of a live block of the launch's context (the launch then fails its check).
                unsafe { KernelArg::device_ptr(a.device_ptr()) },
                KernelArg::block(&a),
                KernelArg::block(&a),
                KernelArg::value(&n),
            ],
        )?;
        Ok(synchronize_context()?)
    });
}

#[test]
fn defglobal_and_global_ref() {
    on_gpu("globals", |_| {
        let program = Program::from_text(
            "(defglobal counter 0)
             (defglobal scale 2.5 :constant)
             (defkernel bump (void ((out float*)))
               (set counter (+ counter 1))
               (set (aref out 0) scale))",
            "globals.lisp",
        )?;
        assert_eq!(program.global_ref::<i32>("counter")?, 0);
        program.set_global_ref("counter", 42i32)?;
        assert_eq!(program.global_ref::<i32>("counter")?, 42);
        let mut out = MemoryBlock::<f32>::alloc(1)?;
        launch(
            &program.function("bump")?,
            &LaunchConfig::grid(1),
            &[KernelArg::block(&out)],
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], 2.5);
        assert_eq!(program.global_ref::<i32>("counter")?, 43);
        assert_eq!(program.global_ref::<f32>("scale")?, 2.5);
        let e = program.global_ref::<f32>("counter").unwrap_err();
        assert_eq!(e.to_string(), "global counter has type int, not float");
        Ok(())
    });
}

#[test]
fn float3_device_functions_and_atomics() {
    on_gpu("float3", |_| {
        let program = Program::from_text(
            "(defkernel twice (int ((x int))) (return (* 2 x)))
             (defkernel sum3 (void ((v float3) (out float*) (i int*)))
               (set (aref out 0) (+ (float3-x v) (float3-y v) (float3-z v)))
               (set (aref i 0) (twice 21)))
             (defkernel count (void ((a int*)))
               (atomic-add (pointer (aref a 0)) 1))",
            "float3.lisp",
        )?;
        let mut out = MemoryBlock::<f32>::alloc(1)?;
        let mut i = MemoryBlock::<i32>::alloc(1)?;
        let v = Float3::new(1.0, 2.0, 3.0);
        launch(
            &program.function("sum3")?,
            &LaunchConfig::grid(1),
            &[
                KernelArg::value(&v),
                KernelArg::block(&out),
                KernelArg::block(&i),
            ],
        )?;
        out.sync(Direction::DeviceToHost)?;
        i.sync(Direction::DeviceToHost)?;
        assert_eq!((out[0], i[0]), (6.0, 42));
        let mut a = MemoryBlock::<i32>::alloc(1)?;
        a.sync(Direction::HostToDevice)?;
        launch(
            &program.function("count")?,
            &LaunchConfig::grid(1).block(256),
            &[KernelArg::block(&a)],
        )?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a[0], 256);
        Ok(())
    });
}

#[test]
fn do_for_while_switch() {
    on_gpu("loops", |_| {
        let program = Program::from_text(
            "(defkernel loops (void ((out int*)))
               (let ((s 0))
                 (do ((i 0 (+ i 1))) ((> i 15)) (set s (+ s i)))
                 (set (aref out 0) s))
               (let ((w 0))
                 (while (< w 5) (set w (+ w 1)))
                 (set (aref out 1) w))
               (for (j 0 (< j 10) (+ j 1))
                 (set (aref out 2) j)
                 (if (= j 3) (break)))
               (switch (aref out 3)
                 (1 (set (aref out 4) 10))
                 (t (set (aref out 4) 30))))",
            "loops.lisp",
        )?;
        let mut out = MemoryBlock::<i32>::from_slice(&[0, 0, 0, 1, 0])?;
        out.sync(Direction::HostToDevice)?;
        launch(
            &program.function("loops")?,
            &LaunchConfig::grid(1),
            &[KernelArg::block(&out)],
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out.as_slice(), &[120, 5, 3, 1, 10]);
        Ok(())
    });
}

#[test]
fn dynamic_shared_memory_shuffles_and_cuda_asm() {
    on_gpu("shared", |_| {
        let program = Program::from_text(
            "(defkernel fill (void ((a int*)))
               (with-dynamic-shared-memory ((s int))
                 (set (aref s thread-idx-x) (* 3 thread-idx-x))
                 (syncthreads)
                 (set (aref a thread-idx-x) (aref s (- 31 thread-idx-x)))))
             (defkernel warp-sum (void ((out int*)))
               (let ((v thread-idx-x))
                 (do ((o 16 (/ o 2))) ((= o 0))
                   (set v (+ v (shfl-down-sync (uint -1) v o))))
                 (if (= thread-idx-x 0) (set (aref out 0) v))))
             (defkernel asm-store (void ((out int*)))
               (cuda-asm \"asm volatile(\\\"st.global.u32 [%0], 42;\\\" :: \\\"l\\\"(out));\"))",
            "shared.lisp",
        )?;
        let mut a = MemoryBlock::<i32>::alloc(32)?;
        launch(
            &program.function("fill")?,
            &LaunchConfig::grid(1).block(32).shared_mem(32 * 4),
            &[KernelArg::block(&a)],
        )?;
        a.sync(Direction::DeviceToHost)?;
        for i in 0..32 {
            assert_eq!(a[i], 3 * (31 - i as i32));
        }
        let mut out = MemoryBlock::<i32>::alloc(1)?;
        launch(
            &program.function("warp-sum")?,
            &LaunchConfig::grid(1).block(32),
            &[KernelArg::block(&out)],
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], (0..32).sum::<i32>());
        launch(
            &program.function("asm-store")?,
            &LaunchConfig::grid(1),
            &[KernelArg::block(&out)],
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], 42);
        Ok(())
    });
}

#[test]
fn half_and_bfloat16_add() {
    on_gpu("half", |_| {
        let program = Program::from_text(
            "(defkernel hadd (void ((h half*) (b bfloat16*)))
               (set (aref h 2) (+ (aref h 0) (aref h 1)))
               (set (aref b 2) (+ (aref b 0) (aref b 1))))",
            "half.lisp",
        )?;
        let mut h = MemoryBlock::from_slice(&[f16::from_f32(1.5), f16::from_f32(2.25), f16::ZERO])?;
        let mut b =
            MemoryBlock::from_slice(&[bf16::from_f32(3.0), bf16::from_f32(4.5), bf16::ZERO])?;
        h.sync(Direction::HostToDevice)?;
        b.sync(Direction::HostToDevice)?;
        launch(
            &program.function("hadd")?,
            &LaunchConfig::grid(1),
            &[KernelArg::block(&h), KernelArg::block(&b)],
        )?;
        h.sync(Direction::DeviceToHost)?;
        b.sync(Direction::DeviceToHost)?;
        assert_eq!((h[2].to_f32(), b[2].to_f32()), (3.75, 7.5));
        Ok(())
    });
}

/// The host side of `(defkernel-struct pair (x int) (y int))`.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
struct Pair {
    x: i32,
    y: i32,
}
// SAFETY: two ints, as the kernel's `pair`.
unsafe impl KernelValue for Pair {
    fn kernel_type() -> Type {
        Type::Struct("pair".into())
    }
}

#[test]
fn int2_and_struct_arguments() {
    on_gpu("structs", |_| {
        let program = Program::from_text(
            "(defkernel-struct pair (x int) (y int))
             (defkernel pairs (void ((v int2) (p pair) (out int*)))
               (set (aref out 0) (+ (* (int2-x v) (int2-y v)) (- (pair-x p) (pair-y p)))))",
            "structs.lisp",
        )?;
        let mut out = MemoryBlock::<i32>::alloc(1)?;
        let (v, p) = (Int2::new(6, 7), Pair { x: 10, y: 4 });
        launch(
            &program.function("pairs")?,
            &LaunchConfig::grid(1),
            &[
                KernelArg::value(&v),
                KernelArg::value(&p),
                KernelArg::block(&out),
            ],
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out[0], 48);
        Ok(())
    });
}

#[test]
fn cluster_indexes() {
    on_gpu("clusters", |ctx| {
        if ctx.compute_capability()?.0 < 9 {
            eprintln!("skipped: clusters need sm_90");
            return Ok(());
        }
        let program = Program::from_text(
            "(defkernel ranks (void ((out int*)))
               (if (= thread-idx-x 0)
                   (set (aref out block-idx-x)
                        (+ (* (int (cluster-rank)) 100) (* cluster-dim-x 10) cluster-idx-x))))",
            "clusters.lisp",
        )?;
        let mut out = MemoryBlock::<i32>::alloc(8)?;
        launch(
            &program.function("ranks")?,
            &LaunchConfig::grid(8).block(32).cluster(4),
            &[KernelArg::block(&out)],
        )?;
        out.sync(Direction::DeviceToHost)?;
        let expected: Vec<i32> = (0..8).map(|b| (b % 4) * 100 + 40 + b / 4).collect();
        assert_eq!(out.as_slice(), &expected[..]);
        Ok(())
    });
}

#[test]
fn kernel_manager_states() {
    on_gpu("manager", |_| {
        let forms = |text: &str| chorus_lang::read_str(text, "manager.lisp").unwrap();
        let mut m = KernelManager::new("manager-test");
        for form in forms(VEC_ADD) {
            m.define_form(form)?;
        }
        assert_eq!(m.state(), State::Initial);
        m.compile_module()?;
        assert_eq!(m.state(), State::Compiled);
        assert!(matches!(
            m.compile_module(),
            Err(Error::IllegalTransition { .. })
        ));
        assert!(matches!(
            m.load_function(),
            Err(Error::IllegalTransition { .. })
        ));
        m.load_module()?;
        assert_eq!(m.state(), State::ModuleLoaded);
        m.load_function()?;
        assert_eq!(m.state(), State::FunctionLoaded);
        m.unload()?;
        assert_eq!(m.state(), State::Compiled);
        let old = m.ensure_function("vec-add-kernel")?;
        assert_eq!(m.state(), State::FunctionLoaded);
        // The same definition again keeps the state.
        for form in forms(VEC_ADD) {
            m.define_form(form)?;
        }
        assert_eq!(m.state(), State::FunctionLoaded);
        // A changed one returns to Initial, and the kernel taken before still runs.
        m.define_global(forms("(defglobal g 5)").remove(0))?;
        assert_eq!(m.state(), State::Initial);
        // `from_slice` fills the host copy only: uploaded so that the kernel reads defined
        // values (initcheck's other 4 reports).
        let mut a = MemoryBlock::<f32>::from_slice(&[1.0, 2.0])?;
        a.sync(Direction::HostToDevice)?;
        let n = 2i32;
        launch(
            &old,
            &LaunchConfig::grid(1).block(2),
            &[
                KernelArg::block(&a),
                KernelArg::block(&a),
                KernelArg::block(&a),
                KernelArg::value(&n),
            ],
        )?;
        synchronize_context()?;
        assert_eq!(m.global_ref::<i32>("g")?, 5);
        assert_eq!(m.state(), State::ModuleLoaded);
        m.ensure_function("vec-add-kernel")?;
        assert!(matches!(
            m.ensure_function("nope"),
            Err(Error::NotFound { .. })
        ));
        Ok(())
    });
}

#[test]
fn default_manager_unloads_with_the_context() {
    if !gpu_available_or_skip("default manager") {
        return;
    }
    {
        let mut m = default_manager();
        for form in chorus_lang::read_str(VEC_ADD, "vec-add.lisp").unwrap() {
            m.define_form(form).unwrap();
        }
    }
    with_cuda(0, |_| {
        default_manager().ensure_function("vec-add-kernel")?;
        assert_eq!(default_manager().state(), State::FunctionLoaded);
        Ok::<_, Error>(())
    })
    .unwrap();
    assert_eq!(
        default_manager().state(),
        State::Compiled,
        "with_cuda unloaded its module"
    );
}
