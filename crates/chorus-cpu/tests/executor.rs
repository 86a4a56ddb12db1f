//! Behaviour of the CPU executor that the shared corpus cannot check: faults, refusals, launch
//! validation, `printf` output, host access to globals, and coverage of the checker's overload
//! table.

use chorus_cpu::{CpuModule, DeviceBuffer, Error, KernelArg, LaunchConfig};
use chorus_lang::ir::Builtin;
use chorus_lang::types::Type;
use std::io::Write;
use std::sync::{Arc, Mutex};

fn module(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

fn prepare(text: &str) -> Result<CpuModule, Error> {
    let ir = chorus_lang::compile_str(text, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir))
}

/// A writer that keeps what it is given.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn out_of_bounds_reads_name_kernel_thread_and_index() {
    let m = module(
        "(defkernel copy (void ((a float*) (b float*) (n int)))
           (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
             (set (aref b i) (aref a (+ i 1)))))",
    );
    let a = DeviceBuffer::from_slice(&[0.0f32; 64]).unwrap();
    let b = DeviceBuffer::alloc(64 * 4).unwrap();
    let err = m
        .launch(
            "copy",
            &LaunchConfig::linear(2, 32),
            &[
                KernelArg::Buffer(&a),
                KernelArg::Buffer(&b),
                KernelArg::value(64i32),
            ],
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            Error::Fault {
                block: [1, 0, 0],
                thread: [31, 0, 0],
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("kernel `copy`")
            && text.contains("element index 64")
            && text.contains("read"),
        "{text}"
    );
    assert!(text.starts_with("test.lisp:3:"), "{text}");
}

#[test]
fn integer_division_by_zero_is_a_fault_not_a_panic() {
    let m = module(
        "(defkernel div (void ((a int*)))
           (set (aref a thread-idx-x) (/ 100 (- thread-idx-x 3))))",
    );
    let a = DeviceBuffer::alloc(4 * 8).unwrap();
    let err = m
        .launch("div", &LaunchConfig::linear(1, 8), &[KernelArg::Buffer(&a)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Fault {
                thread: [3, 0, 0],
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("division by zero"), "{err}");
}

#[test]
fn runaway_recursion_is_a_fault() {
    let m = module(
        "(defkernel down (int ((n int))) (return (+ 1 (down (+ n 1)))))
         (defkernel k (void ((a int*))) (set (aref a 0) (down 0)))",
    );
    let a = DeviceBuffer::alloc(4).unwrap();
    let err = m
        .launch("k", &LaunchConfig::linear(1, 1), &[KernelArg::Buffer(&a)])
        .unwrap_err();
    assert!(err.to_string().contains("nested deeper than"), "{err}");
}

#[test]
fn null_pointers_fault() {
    let m = module("(defkernel k (void ((a int*))) (set (aref a 0) 1))");
    let err = m
        .launch(
            "k",
            &LaunchConfig::linear(1, 1),
            &[KernelArg::Value {
                ty: Type::INT.pointer_to(),
                bytes: vec![0; 8],
            }],
        )
        .unwrap_err();
    assert!(err.to_string().contains("null pointer"), "{err}");
}

#[test]
fn inline_asm_and_clusters_are_refused_when_prepared() {
    let err = prepare("(defkernel k (void ((a int*))) (cuda-asm \"trap;\"))").unwrap_err();
    assert!(
        matches!(err, Error::Unsupported { .. }) && err.to_string().contains("cuda-asm"),
        "{err}"
    );
    assert!(err.to_string().starts_with("test.lisp:1:"), "{err}");
    let err =
        prepare("(defkernel k (void ((a uint*))) (set (aref a 0) (cluster-rank)))").unwrap_err();
    assert!(err.to_string().contains("cluster"), "{err}");
    let err =
        prepare("(defkernel k (void ((a int*))) (set (aref a 0) cluster-idx-x))").unwrap_err();
    assert!(err.to_string().contains("cluster"), "{err}");
}

#[test]
fn hopper_builtins_are_refused_when_prepared() {
    let text = "(defkernel k (void ((m tensor-map) (a float*)))
                  (with-shared-memory ((s float 64) (bar uint64))
                    (mbarrier-init (pointer bar) 1)
                    (tma-load-1d s (pointer bar) (pointer m) 0)
                    (wgmma-fence)))";
    let err = prepare(text).unwrap_err();
    assert!(
        matches!(err, Error::Unsupported { .. })
            && err.to_string().starts_with("test.lisp:1:1:")
            && err
                .to_string()
                .contains("`tensor-map` needs tensor memory access (TMA)"),
        "{err}"
    );
    // Past validation (a target that claims everything), the executor still refuses each, at
    // its call.
    let mut everything = chorus_lang::target::Target::cpu();
    everything.capabilities = chorus_lang::target::Capabilities::all();
    let ir = chorus_lang::compile_str(
        "(defkernel k (void ((a float*)))\n  (wgmma-fence))",
        "test.lisp",
    )
    .unwrap();
    let err = CpuModule::for_target(Arc::new(ir), &everything).unwrap_err();
    assert_eq!(
        err.to_string(),
        "test.lisp:2:3: the CPU executor cannot run this: the Hopper built-in `wgmma-fence` \
         (TMA, mbarrier transactions and wgmma need an sm_90 CUDA device)"
    );
}

#[test]
fn launches_are_validated_against_the_signature_and_cuda_limits() {
    let m = module(
        "(defkernel k (void ((a float*) (n int)))
           (declare (launch-bounds 128))
           (set (aref a 0) (float n)))
         (defkernel helper (int ((x int))) (return x))",
    );
    let a = DeviceBuffer::alloc(4).unwrap();
    let ok = [KernelArg::Buffer(&a), KernelArg::value(1i32)];
    let one = LaunchConfig::linear(1, 1);
    let msg = |r: Result<(), Error>| r.unwrap_err().to_string();
    assert!(msg(m.launch("nope", &one, &ok)).contains("no kernel `nope`"));
    assert!(msg(m.launch("helper", &one, &ok)).contains("device function"));
    assert!(msg(m.launch("k", &one, &ok[..1])).contains("takes 2 argument(s), 1 were given"));
    assert!(
        msg(m.launch("k", &one, &[KernelArg::value(1i32), KernelArg::value(1i32)]))
            .contains("is a `float*`, but a `int` was given")
    );
    assert!(
        msg(m.launch("k", &one, &[KernelArg::Buffer(&a), KernelArg::Buffer(&a)]))
            .contains("but a buffer was given")
    );
    assert!(
        msg(m.launch(
            "k",
            &one,
            &[KernelArg::Buffer(&a), KernelArg::value(1.0f32)]
        ))
        .contains("is a `int`, but a `float`")
    );
    assert!(msg(m.launch("k", &LaunchConfig::linear(0, 1), &ok)).contains("at least 1"));
    assert!(
        msg(m.launch(
            "k",
            &LaunchConfig {
                grid: [1; 3],
                block: [32, 32, 2],
                shared_mem: 0
            },
            &ok
        ))
        .contains("limit of 1024")
    );
    assert!(msg(m.launch("k", &LaunchConfig::linear(1, 256), &ok)).contains("launch bounds"));
    assert!(
        msg(m.launch(
            "k",
            &LaunchConfig {
                shared_mem: 1 << 20,
                ..one
            },
            &ok
        ))
        .contains("dynamic shared memory")
    );
    m.launch("k", &one, &ok).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0]);
}

#[test]
fn printf_prints_each_warp_in_lane_order() {
    let m = module(
        "(defkernel hello (void ((n int)))
           (if (= (mod thread-idx-x 2) 0)
               (printf \"%d:%03d|%.1f|%x\\n\" block-idx-x thread-idx-x (* 0.5 (float n)) (* 255 thread-idx-x))))",
    );
    let out = Capture::default();
    m.set_printf_output(Box::new(out.clone()));
    let mut m = m;
    m.set_workers(1);
    m.launch(
        "hello",
        &LaunchConfig::linear(2, 6),
        &[KernelArg::value(3i32)],
    )
    .unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        text,
        "0:000|1.5|0\n0:002|1.5|1fe\n0:004|1.5|3fc\n1:000|1.5|0\n1:002|1.5|1fe\n1:004|1.5|3fc\n"
    );
}

#[test]
fn globals_are_typed_on_the_host() {
    let m = module(
        "(defglobal x 0)
         (defglobal v (float3 1.0 2.0 3.0) :constant)
         (defkernel bump (void ()) (set x (+ x 1)))",
    );
    assert_eq!(m.global_ref::<i32>("x").unwrap(), 0);
    m.set_global_ref("x", 41i32).unwrap();
    m.launch("bump", &LaunchConfig::linear(1, 1), &[]).unwrap();
    assert_eq!(m.global_ref::<i32>("x").unwrap(), 42);
    let v: chorus_lang::host::Float3 = m.global_ref("v").unwrap();
    assert_eq!(v, chorus_lang::host::Float3::new(1.0, 2.0, 3.0));
    assert!(
        m.global_ref::<f32>("x")
            .unwrap_err()
            .to_string()
            .contains("is a `int`, not a `float`")
    );
    assert!(matches!(
        m.global_bytes("nope"),
        Err(Error::NoSuchGlobal(_))
    ));
    assert!(
        m.set_global_bytes("x", &[0; 8])
            .unwrap_err()
            .to_string()
            .contains("4 bytes")
    );
}

#[test]
fn warps_that_finish_early_do_not_block_a_barrier() {
    // Warp 1 returns before the barrier the others wait at (legal since Volta).
    let m = module(
        "(defkernel k (void ((a int*)))
           (with-shared-memory ((s int 96))
             (if (and (>= thread-idx-x 32) (< thread-idx-x 64))
                 (return))
             (set (aref s thread-idx-x) thread-idx-x)
             (syncthreads)
             (set (aref a thread-idx-x) (aref s (- 95 thread-idx-x)))))",
    );
    let a = DeviceBuffer::from_slice(&[-1i32; 96]).unwrap();
    m.launch("k", &LaunchConfig::linear(1, 96), &[KernelArg::Buffer(&a)])
        .unwrap();
    let v = a.to_vec::<i32>().unwrap();
    assert_eq!(v[0], 95);
    assert_eq!(v[40], -1);
    assert_eq!(v[95], 0);
}

#[test]
fn results_do_not_depend_on_the_number_of_workers() {
    let text = "(defkernel k (void ((bins uint*) (out int*)))
           (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
             (atomic-add (pointer (aref bins (mod (* i 7) 13))) (uint 1))
             (set (aref out i) (* i i))))";
    let mut results = Vec::new();
    for workers in [1, 3] {
        let mut m = module(text);
        m.set_workers(workers);
        let bins = DeviceBuffer::alloc(13 * 4).unwrap();
        let out = DeviceBuffer::alloc(64 * 64 * 4).unwrap();
        m.launch(
            "k",
            &LaunchConfig::linear(64, 64),
            &[KernelArg::Buffer(&bins), KernelArg::Buffer(&out)],
        )
        .unwrap();
        results.push((bins.to_bytes(), out.to_bytes()));
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn curand_subsequences_match_skipping_on_the_host() {
    // Subsequence 1 with offset 0 differs from subsequence 0; offset skips are exact steps.
    let m = module(
        "(defkernel k (void ((s curand-state-xorwow*) (out uint*)))
           (curand-init-xorwow 7 thread-idx-x (* 3 thread-idx-x) (pointer (aref s thread-idx-x)))
           (set (aref out thread-idx-x) (uint (* 4294967296.0d0 (curand-uniform-double-xorwow (pointer (aref s thread-idx-x)))))))",
    );
    let s = DeviceBuffer::alloc(48 * 4).unwrap();
    let out = DeviceBuffer::alloc(4 * 4).unwrap();
    m.launch(
        "k",
        &LaunchConfig::linear(1, 4),
        &[KernelArg::Buffer(&s), KernelArg::Buffer(&out)],
    )
    .unwrap();
    let v = out.to_vec::<u32>().unwrap();
    assert!(v.windows(2).all(|w| w[0] != w[1]), "{v:?}");
    // The stored state of thread 0 is the seed-scrambled state stepped twice.
    let state: Vec<chorus_lang::host::CurandStateXorwow> = s.to_vec().unwrap();
    assert_eq!(state[0].boxmuller_flag, 0);
    assert_ne!(state[0].v, state[1].v);
}

/// A zeroed image whose texture and surface objects fit the texture or surface built-in `sig`:
/// its format is the element type's, its dimensions the built-in's.
fn texture_objects_for(
    sig: &chorus_lang::check::builtins::Signature,
) -> (
    DeviceBuffer,
    chorus_cpu::TextureObject,
    chorus_cpu::SurfaceObject,
) {
    use chorus_cpu::{
        ChannelFormat, ChannelType, ImageLayout, SurfaceObject, TextureDesc, TextureObject,
    };
    use chorus_lang::types::ScalarType;
    let element = match sig.op {
        Builtin::SurfWrite(..) => sig.params[0].clone(),
        _ => sig.result.clone(),
    };
    let (scalar, channels) = match element {
        Type::Vector(v) if matches!(v.len(), 2 | 4) => (v.element(), v.len() as u8),
        Type::Scalar(s) => (s, 1),
        // Not a texture or surface built-in: any image will do, it is not passed.
        _ => (ScalarType::Float, 1),
    };
    let channel = match scalar {
        ScalarType::Int8 => ChannelType::I8,
        ScalarType::UInt8 => ChannelType::U8,
        ScalarType::Int16 => ChannelType::I16,
        ScalarType::UInt16 => ChannelType::U16,
        ScalarType::Int => ChannelType::I32,
        ScalarType::UInt => ChannelType::U32,
        _ => ChannelType::F32,
    };
    let format = ChannelFormat::new(channel, channels).unwrap();
    let dims = match sig.op {
        Builtin::Tex(d) | Builtin::SurfRead(d, _) | Builtin::SurfWrite(d, _) => d,
        _ => 1,
    };
    let extent = |d: u8| if dims >= d { 4 } else { 0 };
    let array = ImageLayout::array(format, 4, extent(2), extent(3)).unwrap();
    let image = if sig.op == Builtin::TexFetch {
        ImageLayout::linear(format, 4).unwrap()
    } else {
        array
    };
    let buffer = DeviceBuffer::alloc(array.bytes()).unwrap();
    (
        buffer,
        TextureObject::new(image, TextureDesc::default()).unwrap(),
        SurfaceObject::new(array).unwrap(),
    )
}

/// Every overload of the checker's table, called with arguments of exactly its parameter types
/// (zero values, pointers to zeroed buffers), prepares and runs: nothing is left unimplemented,
/// and nothing panics (integer division by zero faults, as it should).
#[test]
fn every_builtin_signature_of_the_checker_runs() {
    let mut count = 0;
    let mut failures = Vec::new();
    for name in chorus_lang::check::builtins::names() {
        for sig in chorus_lang::check::builtins::signatures(name) {
            // The CPU has none of the Hopper built-ins (see
            // `hopper_builtins_are_refused_when_prepared`), and some of them take constants.
            if matches!(sig.op, Builtin::Hopper(_)) {
                continue;
            }
            let params: Vec<String> = sig
                .params
                .iter()
                .enumerate()
                .map(|(i, t)| format!("(p{i} {t})"))
                .collect();
            let mut args: Vec<String> = (0..sig.params.len()).map(|i| format!("p{i}")).collect();
            // Texture reads name their element type first; surface accesses end with their
            // boundary mode.
            if chorus_lang::check::builtins::is_texture_builtin(name) {
                if sig.result != Type::Void {
                    args.insert(0, sig.result.to_string());
                }
                if let Builtin::SurfRead(_, b) | Builtin::SurfWrite(_, b) = sig.op {
                    args.push(b.keyword().to_string());
                }
            }
            let call = format!("({name} {})", args.join(" "));
            let stmt = if sig.result == Type::Void {
                call
            } else {
                format!("(let ((r {call})) (return))")
            };
            let text = format!("(defkernel k (void ({})) {stmt})", params.join(" "));
            let images = texture_objects_for(sig);
            let ir = chorus_lang::compile_str(&text, "sig.lisp")
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            let m = match CpuModule::new(Arc::new(ir.clone())) {
                Ok(m) => m,
                Err(Error::Unsupported { what, .. }) if what.contains("cluster") => continue,
                Err(e) => {
                    failures.push(format!("{name} {sig}: {e}"));
                    continue;
                }
            };
            let buffers: Vec<DeviceBuffer> = sig
                .params
                .iter()
                .map(|_| DeviceBuffer::alloc(64).unwrap())
                .collect();
            let launch_args: Vec<KernelArg<'_>> = sig
                .params
                .iter()
                .zip(&buffers)
                .map(|(t, b)| match t {
                    Type::Pointer(_) => KernelArg::Buffer(b),
                    Type::TextureObject => KernelArg::Texture(&images.0, &images.1),
                    Type::SurfaceObject => KernelArg::Surface(&images.0, &images.2),
                    _ => KernelArg::Value {
                        ty: t.clone(),
                        bytes: vec![0; ir.layout(t).expect("a sized type").0],
                    },
                })
                .collect();
            match m.launch("k", &LaunchConfig::linear(1, 1), &launch_args) {
                Ok(()) => {}
                Err(Error::Fault { message, .. }) if message.contains("division by zero") => {}
                Err(e) => failures.push(format!("{name} {sig}: {e}")),
            }
            count += 1;
        }
    }
    assert!(count > 400, "only {count} signatures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn address_taken_locals_get_a_frame_per_call_even_in_recursion() {
    // Each activation's `acc` lives in local memory; deeper calls must not overwrite it.
    let m = module(
        "(defkernel (add-to :device) (void ((p int*) (v int)))
           (set (aref p 0) (+ (aref p 0) v)))
         (defkernel sum-down (int ((n int)))
           (let ((acc 0))
             (add-to (pointer acc) n)
             (if (> n 0)
                 (add-to (pointer acc) (sum-down (- n 1))))
             (return acc)))
         (defkernel k (void ((out int*)))
           (set (aref out thread-idx-x) (sum-down thread-idx-x)))",
    );
    let out = DeviceBuffer::alloc(40 * 4).unwrap();
    m.launch(
        "k",
        &LaunchConfig::linear(1, 40),
        &[KernelArg::Buffer(&out)],
    )
    .unwrap();
    let want: Vec<i32> = (0..40).map(|t| t * (t + 1) / 2).collect();
    assert_eq!(out.to_vec::<i32>().unwrap(), want);
}

#[test]
fn shared_arrays_of_device_functions_are_per_block() {
    let m = module(
        "(defkernel (block-total :device) (int ((v int)))
           (with-shared-memory ((s int 64))
             (set (aref s thread-idx-x) v)
             (syncthreads)
             (let ((total 0))
               (for (i 0 (< i block-dim-x) (+ i 1))
                 (set total (+ total (aref s i))))
               (syncthreads)
               (return total))))
         (defkernel k (void ((out int*)))
           (set (aref out (+ (* block-idx-x block-dim-x) thread-idx-x))
                (block-total (+ block-idx-x 1))))",
    );
    let out = DeviceBuffer::alloc(8 * 64 * 4).unwrap();
    m.launch(
        "k",
        &LaunchConfig::linear(8, 64),
        &[KernelArg::Buffer(&out)],
    )
    .unwrap();
    let v = out.to_vec::<i32>().unwrap();
    for b in 0..8 {
        assert!(
            v[b * 64..b * 64 + 64]
                .iter()
                .all(|&x| x == 64 * (b as i32 + 1)),
            "block {b}"
        );
    }
}

#[test]
fn inline_if_with_calls_evaluates_only_the_taken_arm() {
    // The untaken arm would divide by zero.
    let m = module(
        "(defkernel inv (int ((x int))) (return (/ 100 x)))
         (defkernel k (void ((out int*)))
           (let ((x (- thread-idx-x 4)))
             (set (aref out thread-idx-x) (if (= x 0) -1 (inv x)))))",
    );
    let out = DeviceBuffer::alloc(8 * 4).unwrap();
    m.launch("k", &LaunchConfig::linear(1, 8), &[KernelArg::Buffer(&out)])
        .unwrap();
    assert_eq!(
        out.to_vec::<i32>().unwrap(),
        vec![-25, -33, -50, -100, -1, 100, 50, 33]
    );
}

#[test]
fn switch_on_narrow_and_wide_integers() {
    let m = module(
        "(defkernel k (void ((a int8*) (b uint64*) (out int*)))
           (let ((i thread-idx-x) (r 0))
             (switch (aref a i)
               (-1 (set r 1))
               (127 (set r 2))
               (t (set r 3)))
             (switch (aref b i)
               (9223372036854775807 (set r (+ r 10)))
               (0 (set r (+ r 20))))
             (set (aref out i) r)))",
    );
    let a = DeviceBuffer::from_slice(&[-1i8, 127, 5, -1]).unwrap();
    let b = DeviceBuffer::from_slice(&[i64::MAX as u64, 0, 7, 0]).unwrap();
    let out = DeviceBuffer::alloc(16).unwrap();
    m.launch(
        "k",
        &LaunchConfig::linear(1, 4),
        &[
            KernelArg::Buffer(&a),
            KernelArg::Buffer(&b),
            KernelArg::Buffer(&out),
        ],
    )
    .unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), vec![11, 22, 3, 21]);
}

#[test]
fn misaligned_and_offset_buffers() {
    let m = module("(defkernel k (void ((a int*))) (set (aref a thread-idx-x) thread-idx-x))");
    let b = DeviceBuffer::alloc(64).unwrap();
    // An argument 8 bytes into the buffer: writes land after them.
    m.launch(
        "k",
        &LaunchConfig::linear(1, 4),
        &[KernelArg::BufferAt(&b, 8)],
    )
    .unwrap();
    assert_eq!(&b.to_vec::<i32>().unwrap()[..6], &[0, 0, 0, 1, 2, 3]);
    // Two bytes in, every int access is misaligned, as it would be on the GPU.
    let err = m
        .launch(
            "k",
            &LaunchConfig::linear(1, 4),
            &[KernelArg::BufferAt(&b, 2)],
        )
        .unwrap_err();
    assert!(err.to_string().contains("misaligned write"), "{err}");
}

#[test]
fn coalesced_strided_and_masked_accesses_read_and_write_the_right_elements() {
    // Whole-warp contiguous, masked contiguous (first active lane not 0), reversed, strided,
    // 2-byte sign-extending and 8-byte accesses: the executor's fast paths must agree with
    // the per-lane meaning of each.
    let m = module(
        "(defkernel k (void ((a int*) (out int*) (s int16*) (souts int16*) (d double*) (outd double*)))
           (let ((i thread-idx-x))
             (if (= (mod i 3) 1) (set (aref out i) (aref a i)))
             (set (aref out (+ 64 i)) (aref a (- 63 i)))
             (if (< i 32) (set (aref out (+ 128 i)) (aref a (* 2 i))))
             (if (> i 40) (set (aref souts i) (+ (aref s i) (aref s (- i 1)))))
             (set (aref outd i) (* 2.0 (aref d i)))))",
    );
    let a: Vec<i32> = (0..64).map(|i| i * 7 - 100).collect();
    let s: Vec<i16> = (0..64i32).map(|i| (i * 1000 - 30000) as i16).collect();
    let d: Vec<f64> = (0..64).map(|i| i as f64 * 0.25 - 3.0).collect();
    let (da, ds, dd) = (
        DeviceBuffer::from_slice(&a).unwrap(),
        DeviceBuffer::from_slice(&s).unwrap(),
        DeviceBuffer::from_slice(&d).unwrap(),
    );
    let out = DeviceBuffer::from_slice(&[-1i32; 160]).unwrap();
    let souts = DeviceBuffer::from_slice(&[-1i16; 64]).unwrap();
    let outd = DeviceBuffer::alloc(64 * 8).unwrap();
    m.launch(
        "k",
        &LaunchConfig::linear(1, 64),
        &[
            KernelArg::Buffer(&da),
            KernelArg::Buffer(&out),
            KernelArg::Buffer(&ds),
            KernelArg::Buffer(&souts),
            KernelArg::Buffer(&dd),
            KernelArg::Buffer(&outd),
        ],
    )
    .unwrap();
    let mut want = vec![-1i32; 160];
    for i in 0..64 {
        if i % 3 == 1 {
            want[i] = a[i];
        }
        want[64 + i] = a[63 - i];
    }
    for i in 0..32 {
        want[128 + i] = a[2 * i];
    }
    assert_eq!(out.to_vec::<i32>().unwrap(), want);
    let want_s: Vec<i16> = (0..64)
        .map(|i| {
            if i > 40 {
                s[i].wrapping_add(s[i - 1])
            } else {
                -1
            }
        })
        .collect();
    assert_eq!(souts.to_vec::<i16>().unwrap(), want_s);
    let want_d: Vec<f64> = d.iter().map(|x| 2.0 * x).collect();
    assert_eq!(outd.to_vec::<f64>().unwrap(), want_d);
}

#[test]
fn a_masked_contiguous_access_faults_at_its_first_out_of_bounds_lane() {
    // Lanes 8..=11 are active and consecutive; lane 10 is the first past the end.
    let m = module(
        "(defkernel k (void ((a int*) (n int)))
           (let ((i thread-idx-x))
             (if (and (>= i 8) (< i 12)) (set (aref a i) n))))",
    );
    let a = DeviceBuffer::alloc(10 * 4).unwrap();
    let err = m
        .launch(
            "k",
            &LaunchConfig::linear(1, 32),
            &[KernelArg::Buffer(&a), KernelArg::value(5i32)],
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Fault {
                thread: [10, 0, 0],
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("write"), "{err}");
    // Nothing past the end was written, and the in-bounds lanes before the fault did write
    // (lanes run in order, as before the fast path).
    assert_eq!(a.to_vec::<i32>().unwrap()[8..], [5, 5]);
}
