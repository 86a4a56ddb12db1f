//! The portable API and `defkernel!` on the CPU backend, which every machine has.

use chorus::{Arg, Backend, Direction, Error, Launch, MemoryBlock, Program, with_backend};

const SEED_LINE: u32 = line!() + 2;
chorus::defkernel! {
    (defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref c i)
                 (+ (aref a i) (aref b i))))))
}

chorus::defkernel! {
    // A structure with padding on the device: int8 at 0, 7 bytes of padding, double at 8,
    // float3 at 16, int at 28, float4 at 32 (16-aligned): 48 bytes.
    (defkernel-struct mixed
      (tag int8)
      (weight double)
      (position float3)
      (count int)
      (color float4))

    (defkernel-struct pair (x int) (y int))

    (defglobal scale 1.0)

    (defkernel fill-pairs (void ((out pair*) (base pair) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref out i) (make-pair (+ (pair-x base) i) (* (pair-y base) i))))))

    (defkernel unpack-mixed (void ((m mixed) (flags bool*) (out double*)))
      (set (aref out 0) (* scale (mixed-weight m)))
      (set (aref out 1) (float3-y (mixed-position m)))
      (set (aref out 2) (mixed-count m))
      (set (aref out 3) (float4-w (mixed-color m)))
      (set (aref out 4) (mixed-tag m))
      (set (aref flags 0) (> (mixed-count m) 2)))
}

chorus::defkernel! {
    // `'set` is a lifetime token to Rust and `(quote set)` to the reader; `'*` does not lex as
    // Rust, so it is written `(quote *)`.
    (defkernelmacro twice (place)
      (list 'set place (list (quote *) 2 place)))
    (defkernel-symbol-macro lane thread-idx-x)
    (defkernel double-all (void ((a int*)))
      (twice (aref a lane)))
}

chorus::defkernel! {
    // Parameters named like Rust keywords, and host types of every kind.
    (defkernel keywords (void ((type int) (ref int*)))
      (set (aref ref 0) type))
    // Tokens Rust splits: `/=`, `<=`, `1.5d0`, `-3`, `%tmp`, `int*`, `:restrict`.
    (defkernel split-tokens (void ((out double*) (flags int* :restrict)))
      (let ((%tmp -3))
        (set (aref out 0) (+ 1.5d0 %tmp))
        (set (aref flags 0) (if (/= %tmp 3) 1 0))
        (set (aref flags 1) (if (<= %tmp -3) 1 0))))
    // `void*` has no element type on the host: its parameter takes a `chorus::Arg`.
    (defkernel takes-void (void ((p void*) (out int*)))
      (set (aref out 0) 7))
    (defkernel host-types (void ((v float3) (h half) (big uint64) (out double*)))
      (set (aref out 0) (+ (float3-x v) (float3-z v) (half-to-float h)))
      (set (aref out 1) big))
}

const OVERRUN_LINE: u32 = line!() + 4;
chorus::defkernel! {
    (defkernel overrun (void ((a int*) (n int)))
      (let ((i thread-idx-x))
        (set (aref a (+ i n)) 1)))
}

fn on_cpu<R>(f: impl FnOnce() -> chorus::Result<R>) -> R {
    with_backend(Backend::Cpu, f).expect("runs on the CPU backend")
}

#[test]
fn the_seeds_vec_add_runs_through_the_macro() {
    on_cpu(|| {
        for (n, block) in [(1024usize, 256usize), (1000, 256), (1, 32)] {
            let a = MemoryBlock::from_slice(&(0..n).map(|i| i as f32 * 0.5).collect::<Vec<_>>())?;
            let b =
                MemoryBlock::from_slice(&(0..n).map(|i| 1.0 / (i + 1) as f32).collect::<Vec<_>>())?;
            let mut c = MemoryBlock::<f32>::alloc(n)?;
            vec_add_kernel(
                &a,
                &b,
                &mut c,
                n as i32,
                Launch::grid(n.div_ceil(block)).block(block),
            )?;
            c.sync(Direction::DeviceToHost)?;
            for i in 0..n {
                assert_eq!(c[i], a[i] + b[i], "element {i} of {n}");
            }
        }
        Ok(())
    })
}

#[test]
fn kernel_macros_written_in_rust_tokens_expand() {
    on_cpu(|| {
        let mut a = MemoryBlock::from_slice(&[1, -2, 30])?;
        double_all(&a, Launch::grid(1).block(3))?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a.as_slice(), &[2, -4, 60]);
        Ok(())
    })
}

#[test]
fn parameters_take_their_host_types() {
    on_cpu(|| {
        let mut r = MemoryBlock::<i32>::alloc(1)?;
        keywords(41, &r, Launch::default())?;
        r.sync(Direction::DeviceToHost)?;
        assert_eq!(r[0], 41);

        let mut out = MemoryBlock::<f64>::alloc(1)?;
        let mut flags = MemoryBlock::<i32>::alloc(2)?;
        split_tokens(&out, &flags, Launch::default())?;
        out.sync(Direction::DeviceToHost)?;
        flags.sync(Direction::DeviceToHost)?;
        assert_eq!((out[0], flags.as_slice()), (-1.5, &[1, 1][..]));

        let anything = MemoryBlock::<chorus::Float4>::alloc(1)?;
        takes_void(anything.as_arg(), &flags, Launch::default())?;
        flags.sync(Direction::DeviceToHost)?;
        assert_eq!(flags[0], 7);

        let mut out = MemoryBlock::<f64>::alloc(2)?;
        let v = chorus::Float3::new(1.5, -7.0, 2.0);
        host_types(
            v,
            chorus::f16::from_f32(0.25),
            1 << 40,
            &out,
            Launch::default(),
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out.as_slice(), &[3.75, (1u64 << 40) as f64]);
        Ok(())
    })
}

#[test]
fn the_host_copy_changes_only_on_sync() {
    on_cpu(|| {
        let a = MemoryBlock::from_slice(&[1.0f32, 2.0])?;
        let mut c = MemoryBlock::from_slice(&[7.0f32, 7.0])?;
        vec_add_kernel(&a, &a, &c, 2, Launch::grid(1).block(2))?;
        assert_eq!(c.as_slice(), &[7.0, 7.0]);
        c.sync(Direction::DeviceToHost)?;
        assert_eq!(c.as_slice(), &[2.0, 4.0]);
        Ok(())
    })
}

#[test]
fn the_kernel_text_keeps_the_rust_files_positions() {
    let program = vec_add_kernel_program();
    let kernel = program.kernel("vec-add-kernel").unwrap();
    assert_eq!(kernel.span.line, SEED_LINE);
    assert_eq!(kernel.span.column, 5);
    assert!(program.file().ends_with("cpu.rs"), "{}", program.file());
    assert!(
        program
            .source()
            .lines()
            .nth(SEED_LINE as usize - 1)
            .unwrap()
            .starts_with("    (defkernel vec-add-kernel")
    );
    assert!(
        program.kernel("vec_add_kernel").is_ok(),
        "the C name finds the kernel too"
    );
}

#[test]
fn the_cuda_c_is_available_to_users() {
    let cuda = vec_add_kernel_program().cuda_source().unwrap();
    assert!(cuda.contains("vec_add_kernel"), "{cuda}");
    assert!(cuda.contains("__global__"), "{cuda}");
}

#[test]
fn generated_structs_have_the_device_layout() {
    let module = unpack_mixed_program().module().unwrap();
    for (name, size, align, offsets) in [
        (
            "mixed",
            size_of::<Mixed>(),
            align_of::<Mixed>(),
            vec![
                std::mem::offset_of!(Mixed, tag),
                std::mem::offset_of!(Mixed, weight),
                std::mem::offset_of!(Mixed, position),
                std::mem::offset_of!(Mixed, count),
                std::mem::offset_of!(Mixed, color),
            ],
        ),
        (
            "pair",
            size_of::<Pair>(),
            align_of::<Pair>(),
            vec![std::mem::offset_of!(Pair, x), std::mem::offset_of!(Pair, y)],
        ),
    ] {
        let def = module.struct_def(name).unwrap();
        assert_eq!((size, align), (def.size, def.align), "{name}");
        assert_eq!(
            offsets,
            def.fields.iter().map(|f| f.offset).collect::<Vec<_>>(),
            "{name}"
        );
    }
    assert_eq!((size_of::<Mixed>(), align_of::<Mixed>()), (48, 16));
    assert_eq!(Pair::new(1, 2), Pair { x: 1, y: 2 });
    assert_eq!(format!("{:?}", Pair::new(1, 2)), "Pair { x: 1, y: 2 }");
    assert_eq!(Mixed::default().weight, 0.0);
}

#[test]
fn structs_pass_by_value_and_through_pointers() {
    on_cpu(|| {
        let n = 40;
        let mut out = MemoryBlock::<Pair>::alloc(n)?;
        fill_pairs(&out, Pair::new(100, 3), n as i32, Launch::grid(2).block(32))?;
        out.sync(Direction::DeviceToHost)?;
        for i in 0..n {
            assert_eq!(out[i], Pair::new(100 + i as i32, 3 * i as i32));
        }

        let m = Mixed::new(
            -5,
            2.5,
            chorus::Float3::new(1.0, 2.0, 3.0),
            7,
            chorus::Float4::new(0.0, 0.0, 0.0, 9.0),
        );
        let mut values = MemoryBlock::<f64>::alloc(5)?;
        let mut flags = MemoryBlock::<chorus::Bool8>::alloc(1)?;
        unpack_mixed_program().set_global_ref("scale", 2.0f32)?;
        unpack_mixed(m, &flags, &values, Launch::default())?;
        values.sync(Direction::DeviceToHost)?;
        flags.sync(Direction::DeviceToHost)?;
        assert_eq!(values.as_slice(), &[5.0, 2.0, 7.0, 9.0, -5.0]);
        assert!(bool::from(flags[0]));
        assert_eq!(unpack_mixed_program().global_ref::<f32>("scale")?, 2.0);
        Ok(())
    })
}

#[test]
fn launch_arguments_are_checked_against_the_kernel() {
    on_cpu(|| {
        let program = vec_add_kernel_program();
        let floats = MemoryBlock::<f32>::alloc(4)?;
        let ints = MemoryBlock::<i32>::alloc(4)?;
        let launch = || Launch::grid(1).block(4);

        let few = program
            .launch("vec-add-kernel", &[floats.as_arg()], launch())
            .unwrap_err();
        assert!(
            few.to_string().contains("takes 4 arguments, got 1"),
            "{few}"
        );

        let args = [
            floats.as_arg(),
            ints.as_arg(),
            floats.as_arg(),
            Arg::value(4i32),
        ];
        let wrong = program
            .launch("vec-add-kernel", &args, launch())
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("argument 2 (`b`)") && wrong.contains("expected float*"),
            "{wrong}"
        );

        let args = [
            floats.as_arg(),
            floats.as_arg(),
            floats.as_arg(),
            Arg::value(4u32),
        ];
        let wrong = program
            .launch("vec-add-kernel", &args, launch())
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("argument 4 (`n`)") && wrong.contains("a uint value"),
            "{wrong}"
        );

        let args = [
            floats.as_arg(),
            floats.as_arg(),
            floats.as_arg(),
            Arg::value(4i32),
        ];
        let missing = program
            .launch("no-such-kernel", &args, launch())
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("no kernel named `no-such-kernel`")
                && missing.contains("vec-add-kernel"),
            "{missing}"
        );

        let zero = program
            .launch("vec-add-kernel", &args, Launch::grid(0).block(4))
            .unwrap_err();
        assert!(
            matches!(zero, Error::ZeroExtent { dimension: "grid", extents } if extents.x == 0),
            "{zero}"
        );
        Ok(())
    })
}

#[test]
fn globals_are_typed() {
    on_cpu(|| {
        let wrong = unpack_mixed_program()
            .set_global_ref("scale", 1i32)
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("global `scale` is float, not int"),
            "{wrong}"
        );
        let missing = unpack_mixed_program()
            .global_ref::<f32>("nope")
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("no global named `nope`") && missing.contains("scale"),
            "{missing}"
        );
        Ok(())
    })
}

#[test]
fn memory_blocks_refuse_what_cannot_be_allocated() {
    on_cpu(|| {
        let empty = MemoryBlock::<f32>::alloc(0).unwrap_err().to_string();
        assert!(empty.contains("at least one element"), "{empty}");
        let huge = MemoryBlock::<f64>::alloc(usize::MAX / 2).unwrap_err();
        assert!(
            matches!(
                huge,
                Error::MemoryBlockTooLarge { .. } | Error::HostMemory { .. } | Error::Cpu { .. }
            ),
            "{huge}"
        );
        let block = MemoryBlock::<i32>::alloc(3)?;
        assert_eq!((block.len(), block.backend()), (3, Backend::Cpu));
        assert_eq!(block.device_address(), None);
        Ok(())
    })
}

#[test]
fn programs_from_text_report_errors_with_their_spans() {
    let error = Program::new(
        "(defkernel k (void ((a float*)))\n  (set (aref a 0) undefined-thing))",
        "k.lisp",
    )
    .unwrap_err();
    let Error::Lang(lang) = &error else {
        panic!("expected a language error, got {error}")
    };
    assert_eq!((&*lang.span.file, lang.span.line), ("k.lisp", 2));
    assert!(error.to_string().starts_with("k.lisp:2:"), "{error}");
}

#[test]
fn programs_from_text_launch_on_the_cpu() {
    on_cpu(|| {
        let program = Program::new(
            "(defkernel square (void ((a int*) (n int)))
               (let ((i thread-idx-x))
                 (if (< i n) (set (aref a i) (* (aref a i) (aref a i))))))",
            "square.lisp",
        )?;
        let mut a = MemoryBlock::from_slice(&[1, 2, 3, 4, 5])?;
        program.launch(
            "square",
            &[a.as_arg(), Arg::value(5i32)],
            Launch::grid(1).block(8),
        )?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a.as_slice(), &[1, 4, 9, 16, 25]);
        Ok(())
    })
}

#[test]
fn blocks_of_one_backend_are_refused_by_another() {
    let block = with_backend(Backend::Cpu, || MemoryBlock::<f32>::alloc(4)).unwrap();
    let error = with_backend(Backend::Metal, || {
        vec_add_kernel(&block, &block, &block, 4, Launch::grid(1).block(4))
    })
    .unwrap_err();
    assert!(
        matches!(
            error,
            Error::BackendUnavailable {
                backend: Backend::Metal,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn streams_belong_to_their_backend() {
    on_cpu(|| {
        let stream = chorus::Stream::new()?;
        assert_eq!(stream.backend(), Backend::Cpu);
        let a = MemoryBlock::from_slice(&[1.0f32, 2.0])?;
        let mut c = MemoryBlock::<f32>::alloc(2)?;
        vec_add_kernel(&a, &a, &c, 2, Launch::grid(1).block(2).stream(&stream))?;
        stream.synchronize()?;
        chorus::synchronize()?;
        c.sync(Direction::DeviceToHost)?;
        assert_eq!(c.as_slice(), &[2.0, 4.0]);
        assert_eq!(chorus::current_device()?.backend(), Backend::Cpu);
        Ok(())
    })
}

/// The CPU executor finishes each launch before it returns, so a stream waiting for another
/// (`Stream::wait_for`) has nothing to wait for; the work of both is in order all the same.
#[test]
fn a_cpu_stream_waits_for_another() {
    on_cpu(|| {
        let (first, second) = (chorus::Stream::new()?, chorus::Stream::new()?);
        let a = MemoryBlock::from_slice(&[1.0f32, 2.0])?;
        let b = MemoryBlock::<f32>::alloc(2)?;
        let mut c = MemoryBlock::<f32>::alloc(2)?;
        vec_add_kernel(&a, &a, &b, 2, Launch::grid(1).block(2).stream(&first))?;
        second.wait_for(&first)?;
        vec_add_kernel(&b, &b, &c, 2, Launch::grid(1).block(2).stream(&second))?;
        first.wait_for(&second)?;
        c.sync(Direction::DeviceToHost)?;
        assert_eq!(c.as_slice(), &[4.0, 8.0]);
        Ok(())
    })
}

#[test]
fn a_program_loads_before_its_first_launch() {
    on_cpu(|| {
        let program = Program::new(
            "(defkernel k (void ((a int*))) (set (aref a 0) 5))",
            "k.lisp",
        )?;
        program.load()?;
        let mut a = MemoryBlock::<i32>::alloc(1)?;
        program.launch("k", &[a.as_arg()], Launch::default())?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a[0], 5);
        Ok(())
    })
}

#[test]
fn run_time_faults_name_the_rust_source_position() {
    let error = with_backend(Backend::Cpu, || {
        let a = MemoryBlock::<i32>::alloc(4)?;
        overrun(&a, 2, Launch::grid(1).block(4))
    })
    .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, Error::Cpu { .. }), "{message}");
    assert!(
        message.contains(&format!("cpu.rs:{OVERRUN_LINE}:")),
        "{message}"
    );
}

#[test]
fn clusters_are_refused_and_occupancy_is_the_worker_threads_off_cuda() {
    on_cpu(|| {
        let n = 256usize;
        let a = MemoryBlock::from_slice(&vec![1.0f32; n])?;
        let b = MemoryBlock::from_slice(&vec![2.0f32; n])?;
        let mut c = MemoryBlock::<f32>::alloc(n)?;
        let launch = Launch::grid(4).block(64);
        // A cluster of one block is no cluster: it runs.
        vec_add_kernel(&a, &b, &mut c, n as i32, launch.clone().cluster(1))?;
        c.sync(Direction::DeviceToHost)?;
        assert!(c.as_slice().iter().all(|&x| x == 3.0));
        let e = vec_add_kernel(&a, &b, &mut c, n as i32, launch.clone().cluster(2)).unwrap_err();
        assert!(
            matches!(
                e,
                chorus::Error::ClustersUnsupported {
                    backend: Backend::Cpu
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("thread-block clusters"), "{e}");
        // The shape is checked first, whatever the backend.
        let e = vec_add_kernel(&a, &b, &mut c, n as i32, launch.clone().cluster(3)).unwrap_err();
        assert!(matches!(e, chorus::Error::ClusterShape { .. }), "{e}");
        // The executor runs one block on each worker thread at once; clusters only of one.
        let program = chorus::Program::new(
            "(defkernel touch (void ((a float*))) (set (aref a thread-idx-x) 1.0))",
            "touch.lisp",
        )?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let occupancy = program.occupancy("touch", &launch)?;
        assert_eq!(
            occupancy,
            chorus::Occupancy {
                blocks_per_multiprocessor: 1,
                multiprocessors: workers,
                clusters: None
            }
        );
        let single = program.occupancy("touch", &launch.clone().cluster(1))?;
        assert_eq!(single.clusters, Some(workers));
        let e = program.occupancy("touch", &launch.cluster(2)).unwrap_err();
        assert!(
            matches!(
                e,
                chorus::Error::ClustersUnsupported {
                    backend: Backend::Cpu
                }
            ),
            "{e}"
        );
        Ok(())
    })
}
