//! Targets and validation: each capability is an error at the span of its use on a target that
//! lacks it (and fine on one that has it), the limits (static shared memory, kernel parameter
//! bytes and count, launch bounds, warp width) are the target's, host layouts differ between
//! the C family and Metal, and one checked module validates for several targets.

use chorus_lang::check::{check_module, validate};
use chorus_lang::ir::Module;
use chorus_lang::target::{Capabilities, Capability, LayoutRules, Target};
use chorus_lang::types::{Type, VectorType};
use chorus_lang::{Expander, compile_str, compile_str_for, read_str};

/// Checks `src` for the language only (no target).
fn checked(src: &str) -> Module {
    let forms = read_str(src, "t.lisp").unwrap_or_else(|e| panic!("{e}"));
    let expanded = Expander::new()
        .expand_unit(&forms)
        .unwrap_or_else(|e| panic!("{e}"));
    check_module(&expanded).unwrap_or_else(|e| panic!("{src}\n{e}"))
}

/// The error of validating `src` for `target`, as `LINE:COLUMN: message`.
#[track_caller]
fn invalid(src: &str, target: &Target) -> String {
    match validate(&checked(src), target) {
        Ok(()) => panic!("expected {target} to refuse:\n{src}"),
        Err(e) => format!("{}:{}: {}", e.span.line, e.span.column, e.message),
    }
}

/// The CPU target without `capability` (the CPU target has every other capability but inline
/// assembly and clusters).
fn cpu_without(capability: Capability) -> Target {
    let mut t = Target::cpu();
    t.capabilities = t.capabilities.without(capability);
    t
}

/// One use of each capability: the capability, the kernel text, and where the use is.
fn uses() -> Vec<(Capability, &'static str, &'static str)> {
    use Capability::*;
    vec![
        (
            Float64,
            "(defkernel k (void ((a int*)))\n  (set (aref a 0) (int (double (aref a 0)))))",
            "2:24",
        ),
        (
            Float16,
            "(defkernel k (void ((a float*)))\n  (set (aref a 0) (half-to-float (float-to-half (aref a 0)))))",
            "2:34",
        ),
        (
            BFloat16,
            "(defkernel k (void ((a float*)))\n  (set (aref a 0) (bfloat16-to-float (float-to-bfloat16 (aref a 0)))))",
            "2:38",
        ),
        (
            Fp8,
            "(defkernel k (void ((a float*)))\n  (set (aref a 0) (float (fp8 (aref a 0)))))",
            "2:26",
        ),
        (
            Fp4,
            "(defkernel k (void ((a float*)))\n  (set (aref a 0) (float (fp4 (aref a 0)))))",
            "2:26",
        ),
        (
            Atomic64,
            "(defkernel k (void ((p uint64*)))\n  (atomic-add p 1))",
            "2:3",
        ),
        (
            Atomic16,
            "(defkernel k (void ((p uint16*)))\n  (atomic-cas p 1 2))",
            "2:3",
        ),
        (
            FloatAtomics,
            "(defkernel k (void ((p float*)))\n  (atomic-add p 1.0))",
            "2:3",
        ),
        (
            DoubleAtomics,
            "(defkernel k (void ((p double*)))\n  (atomic-add p 1.0d0))",
            "2:3",
        ),
        (
            HalfAtomics,
            "(defkernel k (void ((p half*) (x half)))\n  (atomic-add p x))",
            "2:3",
        ),
        (
            Clusters,
            "(defkernel k (void ((a uint*)))\n  (set (aref a 0) (cluster-rank)))",
            "2:19",
        ),
        (
            DeviceRandom,
            "(defkernel k (void ((s curand-state-xorwow*)))\n  (return))",
            "1:1",
        ),
        (
            InlineAsm,
            "(defkernel k (void ())\n  (cuda-asm \"trap;\"))",
            "2:3",
        ),
        (
            Printf,
            "(defkernel k (void ((n int)))\n  (printf \"%d\\n\" n))",
            "2:3",
        ),
        (
            ManagedMemory,
            "(defglobal g 0 :managed)\n(defkernel k (void ()) (set g 1))",
            "1:1",
        ),
        (
            DeviceGlobals,
            "(defkernel k (void ()) (return))\n(defglobal g 0)",
            "2:1",
        ),
        (
            SharedGlobals,
            "(defglobal g 0 :constant)\n(defglobal h 0 :shared)",
            "2:1",
        ),
        (
            DynamicSharedMemory,
            "(defkernel k (void ())\n  (with-dynamic-shared-memory ((s float))\n    (set (aref s 0) 1.0)))",
            "2:3",
        ),
        (
            LaunchBounds,
            "(defkernel k (void ())\n  (declare (launch-bounds 128))\n  (return))",
            "1:1",
        ),
        (
            LaunchMinBlocks,
            "(defkernel k (void ())\n  (declare (launch-bounds 128 2))\n  (return))",
            "1:1",
        ),
        (
            WarpShuffle,
            "(defkernel k (void ((a float*)))\n  (set (aref a 0) (shfl-down-sync (uint -1) (aref a 0) 1)))",
            "2:19",
        ),
        (
            WarpVote,
            "(defkernel k (void ((a uint*)))\n  (set (aref a 0) (ballot-sync (uint -1) (> (aref a 0) 0))))",
            "2:19",
        ),
        (
            WarpMatch,
            "(defkernel k (void ((a uint*)))\n  (set (aref a 0) (match-any-sync (uint -1) (aref a 0))))",
            "2:19",
        ),
        (
            WarpReduce,
            "(defkernel k (void ((a uint*)))\n  (set (aref a 0) (reduce-add-sync (uint -1) (aref a 0))))",
            "2:19",
        ),
        (WarpSync, "(defkernel k (void ())\n  (syncwarp))", "2:3"),
        (
            SystemFence,
            "(defkernel k (void ())\n  (threadfence-system))",
            "2:3",
        ),
        (
            Recursion,
            "(defkernel (f :device) (int ((n int)))\n  (return (if (> n 0) (g (- n 1)) 0)))\n(defkernel (g :device) (int ((n int)))\n  (return (f n)))",
            "4:11",
        ),
        (
            Textures,
            "(defkernel k (void ((a float*) (tx texture-object)))\n  (set (aref a 0) (tex1d float tx 0.5)))",
            "1:1",
        ),
        (
            TensorCores,
            "(defkernel k (void ((a uint*) (p uint*)))\n  (set (aref a 0) (ldmatrix :x1 p)))",
            "2:19",
        ),
        (
            Fp8TensorCores,
            "(defkernel k (void ((a uint4*) (b uint2*) (c float4*)))\n  (set (aref c 0) (mma-sync :m16n8k32 :e5m2 (aref a 0) (aref b 0) (aref c 0))))",
            "2:19",
        ),
        (
            AsyncCopy,
            "(defkernel k (void ())\n  (cp-async-commit))",
            "2:3",
        ),
        (
            TensorMemoryAccess,
            "(defkernel k (void ())\n  (fence-proxy-async))",
            "2:3",
        ),
        (
            WarpgroupMma,
            "(defkernel k (void ())\n  (wgmma-fence))",
            "2:3",
        ),
    ]
}

/// A target with every capability.
fn everything() -> Target {
    let mut t = Target::cpu();
    t.capabilities = Capabilities::all();
    t
}

#[test]
fn each_capability_is_an_error_at_its_use_on_a_target_without_it() {
    assert_eq!(
        uses().len(),
        Capability::ALL.len(),
        "one use per capability"
    );
    for (capability, src, at) in uses() {
        validate(&checked(src), &everything()).unwrap_or_else(|e| panic!("{src}\n{e}"));
        let lacking = if matches!(
            capability,
            Capability::InlineAsm
                | Capability::Clusters
                | Capability::TensorMemoryAccess
                | Capability::WarpgroupMma
        ) {
            Target::cpu()
        } else {
            cpu_without(capability)
        };
        let error = invalid(src, &lacking);
        assert!(
            error.starts_with(&format!("{at}: ")),
            "{capability:?} at {at}: {error}"
        );
        let why = if capability == Capability::Recursion {
            "the CPU target does not have recursion".to_string()
        } else {
            format!("needs {capability}, which the CPU target does not have")
        };
        assert!(error.ends_with(&why), "{capability:?}: {error}");
    }
}

#[test]
fn capability_errors_name_the_feature() {
    let cases = [
        (
            Capability::InlineAsm,
            "2:3: `cuda-asm` needs inline assembly, which the CPU target does not have",
        ),
        (
            Capability::Atomic64,
            "2:3: `atomic-add` on `uint64` needs 64-bit integer atomics, which the CPU target does not have",
        ),
        (
            Capability::Float16,
            "2:34: `half` needs 16-bit floating point (half), which the CPU target does not have",
        ),
        (
            Capability::LaunchMinBlocks,
            "1:1: the second value of `launch-bounds` in `k` needs a minimum of resident blocks in launch bounds, which the CPU target does not have",
        ),
        (
            Capability::Recursion,
            "4:11: this call of `f` makes `g` recursive, and the CPU target does not have recursion",
        ),
    ];
    for (capability, expected) in cases {
        let (_, src, _) = uses().into_iter().find(|(c, ..)| *c == capability).unwrap();
        let target = if capability == Capability::InlineAsm {
            Target::cpu()
        } else {
            cpu_without(capability)
        };
        assert_eq!(invalid(src, &target), expected);
    }
}

#[test]
fn real_targets_refuse_what_their_devices_lack() {
    let find = |c: Capability| uses().into_iter().find(|(u, ..)| *u == c).unwrap().1;
    let metal = Target::metal(8).unwrap();
    let gfx942 = Target::hip("gfx942").unwrap();
    let cases: [(Capability, &Target, &str); 15] = [
        (
            Capability::Float64,
            &metal,
            "2:24: `double` needs 64-bit floating point, which the Metal target apple8 does not have",
        ),
        (
            Capability::Printf,
            &metal,
            "2:3: `printf` needs printf from device code, which the Metal target apple8 does not have",
        ),
        (
            Capability::Recursion,
            &metal,
            "4:11: this call of `f` makes `g` recursive, and the Metal target apple8 does not have recursion",
        ),
        (
            Capability::SharedGlobals,
            &metal,
            "2:1: the :shared global `h` needs shared-memory globals at program scope, which the Metal target apple8 does not have",
        ),
        (
            Capability::WarpMatch,
            &metal,
            "2:19: `match-any-sync` needs warp match operations, which the Metal target apple8 does not have",
        ),
        (
            Capability::InlineAsm,
            &gfx942,
            "2:3: `cuda-asm` needs inline assembly, which the HIP target gfx942 does not have",
        ),
        (
            Capability::Atomic16,
            &gfx942,
            "2:3: `atomic-cas` on `uint16` needs 16-bit atomics, which the HIP target gfx942 does not have",
        ),
        (
            Capability::BFloat16,
            &Target::cuda(7, 5),
            "2:38: `bfloat16` needs bfloat16 floating point, which the CUDA target sm_75 does not have",
        ),
        (
            Capability::Clusters,
            &Target::cuda(8, 0),
            "2:19: `cluster-rank` needs thread-block clusters, which the CUDA target sm_80 does not have",
        ),
        (
            Capability::WarpgroupMma,
            &Target::cuda(8, 9),
            "2:3: `wgmma-fence` needs warpgroup MMA (wgmma) and register reallocation (sm_90a), which the CUDA target sm_89 does not have",
        ),
        (
            Capability::WarpgroupMma,
            &Target::cuda(10, 0),
            "2:3: `wgmma-fence` needs warpgroup MMA (wgmma) and register reallocation (sm_90a), which the CUDA target sm_100 does not have",
        ),
        (
            Capability::WarpgroupMma,
            &gfx942,
            "2:3: `wgmma-fence` needs warpgroup MMA (wgmma) and register reallocation (sm_90a), which the HIP target gfx942 does not have",
        ),
        (
            Capability::TensorMemoryAccess,
            &Target::cuda(8, 0),
            "2:3: `fence-proxy-async` needs tensor memory access (TMA) and transaction mbarriers, which the CUDA target sm_80 does not have",
        ),
        (
            Capability::TensorMemoryAccess,
            &metal,
            "2:3: `fence-proxy-async` needs tensor memory access (TMA) and transaction mbarriers, which the Metal target apple8 does not have",
        ),
        (
            Capability::DoubleAtomics,
            &Target::cuda(5, 2),
            "2:3: `atomic-add` on `double` needs atomics on double, which the CUDA target sm_52 does not have",
        ),
    ];
    for (capability, target, expected) in cases {
        assert_eq!(
            invalid(find(capability), target),
            expected,
            "{capability:?}"
        );
    }
    // sm_90, the default CUDA target, has every feature of the language.
    for (capability, src, _) in uses() {
        validate(&checked(src), &Target::cuda(9, 0))
            .unwrap_or_else(|e| panic!("{capability:?} on sm_90: {e}"));
    }
}

#[test]
fn cluster_index_variables_and_cluster_launch_bounds_need_clusters() {
    let src = "(defkernel k (void ((a int*)))\n  (set (aref a 0) cluster-idx-y))";
    assert_eq!(
        invalid(src, &Target::cuda(8, 9)),
        "2:19: `cluster-idx-y` needs thread-block clusters, which the CUDA target sm_89 does not have"
    );
    let src = "(defkernel k (void ())\n  (declare (launch-bounds 128 1 2))\n  (return))";
    assert_eq!(
        invalid(src, &Target::cpu()),
        "1:1: the third value of `launch-bounds` in `k` needs thread-block clusters, which the CPU target does not have"
    );
}

/// A kernel with `floats` floats of static shared memory.
fn shared_kernel(floats: usize) -> String {
    format!(
        "(defkernel k (void ())\n  (with-shared-memory ((s float {floats}))\n    (syncthreads)))"
    )
}

#[test]
fn static_shared_memory_is_limited_by_the_target() {
    // 40 KiB: fine for CUDA and HIP, over Metal's 32 KiB.
    let forty = shared_kernel(10 * 1024);
    validate(&checked(&forty), &Target::default_cuda()).unwrap();
    validate(&checked(&forty), &Target::hip("gfx90a").unwrap()).unwrap();
    assert_eq!(
        invalid(&forty, &Target::metal(7).unwrap()),
        "2:24: `k` declares more than 32 KiB of static shared memory, Metal's limit; use \
         with-dynamic-shared-memory and :shared-mem for more"
    );
    // 56 KiB: over CUDA's 48 KiB (so compile_str, which validates for the default CUDA target,
    // refuses it) but within the 64 KiB of LDS of an AMD GPU.
    let fifty_six = shared_kernel(14 * 1024);
    let e = compile_str(&fifty_six, "t.lisp").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.lisp:2:24: `k` declares more than 48 KiB of static shared memory, CUDA's limit; use \
         with-dynamic-shared-memory and :shared-mem for more"
    );
    compile_str_for(&fifty_six, "t.lisp", &Target::hip("gfx942").unwrap()).unwrap();
    // The per-kernel total across callees is the target's too.
    let src = "(defkernel (helper :device) (void ())
  (with-shared-memory ((tile float 4096))
    (syncthreads)))
(defkernel k (void ())
  (with-shared-memory ((mine float 4096))
    (helper)))";
    validate(&checked(src), &Target::cpu()).unwrap();
    validate(&checked(src), &Target::metal(9).unwrap()).unwrap();
    let mut small = Target::cpu();
    small.max_static_shared_bytes = 30 * 1024;
    assert_eq!(
        invalid(src, &small),
        "4:1: kernel `k` needs 32768 bytes of static shared memory with the device functions it \
         calls, more than CPU's limit of 30 KiB; largest: `mine` in `k` (16384 bytes), \
         `tile` in `helper` (16384 bytes); use with-dynamic-shared-memory and :shared-mem for more"
    );
}

/// Structures of 512 bytes (`s0`: 16 `double4`s) to 4 KiB (`s3`), and a kernel taking an `int`
/// and `count` `s3` by value.
fn parameter_kernel(count: usize) -> String {
    let mut src = String::from("(defkernel-struct s0");
    for i in 0..16 {
        src.push_str(&format!(" (f{i} double4)"));
    }
    src.push_str(")\n(defkernel-struct s1 (a s0) (b s0))\n(defkernel-struct s2 (a s1) (b s1))\n");
    src.push_str("(defkernel-struct s3 (a s2) (b s2))\n");
    let params: Vec<String> = (0..count).map(|i| format!("(p{i} s3)")).collect();
    src.push_str(&format!(
        "(defkernel k (void ((n int) {}))\n  (return))",
        params.join(" ")
    ));
    src
}

#[test]
fn kernel_parameter_bytes_are_limited_by_the_target() {
    // 8 × 4096 + 16 (an int, then 16-byte aligned structures) = 32 784 > 32 764.
    let over = parameter_kernel(8);
    let e = compile_str(&over, "t.lisp").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.lisp:5:1: kernel `k` takes 32784 bytes of parameters, more than the CUDA target \
         sm_90's parameter space of 32764 bytes; pass large data through a pointer to device \
         memory"
    );
    // 7 × 4096 + 16 fits sm_90 but not the 4 KiB of older architectures.
    let under = parameter_kernel(7);
    compile_str(&under, "t.lisp").unwrap();
    assert!(invalid(&under, &Target::cuda(6, 1)).starts_with(
        "5:1: kernel `k` takes 28688 bytes of parameters, more than the CUDA target sm_61's \
         parameter space of 4096 bytes"
    ));
    // Metal counts its buffer arguments.
    let params: Vec<String> = (0..32).map(|i| format!("(p{i} float*)")).collect();
    let many = format!("(defkernel k (void ({}))\n  (return))", params.join(" "));
    validate(&checked(&many), &Target::default_cuda()).unwrap();
    assert!(invalid(&many, &Target::metal(8).unwrap()).starts_with(
        "1:1: kernel `k` takes 32 parameters, more than the Metal target apple8 allows (31)"
    ));
}

#[test]
fn launch_bounds_over_the_block_limit_are_errors() {
    let src = "(defkernel k (void ((a int*)))\n  (declare (launch-bounds 100000))\n  (return))";
    assert_eq!(
        compile_str(src, "t.lisp").unwrap_err().to_string(),
        "t.lisp:1:1: the launch bounds of `k` allow 100000 threads per block, more than the CUDA \
         target sm_90's limit of 1024"
    );
    compile_str(&src.replace("100000", "1024"), "t.lisp").unwrap();
    let mut narrow = Target::cpu();
    narrow.max_threads_per_block = 512;
    assert!(invalid(&src.replace("100000", "1024"), &narrow).contains("limit of 512"));
}

#[test]
fn warp_width_assumptions_are_checked() {
    // The language's lane masks are 32-bit: a 64-lane AMD wave needs 64-bit masks.
    let ballot = "(defkernel k (void ((a uint*)))\n  (set (aref a 0) (ballot-sync (uint -1) (> (aref a 0) 0))))";
    assert_eq!(
        invalid(ballot, &Target::hip("gfx942").unwrap()),
        "2:19: `ballot-sync` works on 32-bit lane masks (`uint`), but the HIP target gfx942 has \
         64-lane warps with 64-bit masks; only the constant full mask `(uint -1)` is accepted \
         there (it means the whole wave)"
    );
    // On 64-lane waves the full mask is widened to the whole wave; any other mask is refused
    // at the mask.
    let full = "(defkernel k (void ((a int*)))\n  (set (aref a 0) (shfl-down-sync (uint -1) (aref a 0) 16)))";
    validate(&checked(full), &Target::hip("gfx90a").unwrap()).unwrap();
    let partial = full.replace("(uint -1)", "(uint 255)");
    assert!(
        invalid(&partial, &Target::hip("gfx90a").unwrap()).starts_with("2:35: `shfl-down-sync`"),
        "{}",
        invalid(&partial, &Target::hip("gfx90a").unwrap())
    );
    // 32-lane RDNA waves are fine.
    validate(&checked(ballot), &Target::hip("gfx1100").unwrap()).unwrap();
    // A shuffle width wider than the warp.
    let shuffle = "(defkernel k (void ((a float*)))\n  (set (aref a 0) (shfl-xor-sync (uint -1) (aref a 0) 1 64)))";
    assert_eq!(
        invalid(shuffle, &Target::default_cuda()),
        "2:57: a shuffle width of 64 is more than the CUDA target sm_90's 32 lanes per warp"
    );
    validate(
        &checked(&shuffle.replace(" 64)", " 16)")),
        &Target::default_cuda(),
    )
    .unwrap();
}

#[test]
fn layouts_come_from_the_target() {
    let cuda = Target::default_cuda();
    let metal = Target::metal(8).unwrap();
    let cases = [
        (VectorType::Float3, (12, 4), Some((16, 16))),
        (VectorType::Float4, (16, 16), Some((16, 16))),
        (VectorType::Float2, (8, 8), Some((8, 8))),
        (VectorType::Int2, (8, 8), Some((8, 8))),
        (VectorType::Half2, (4, 4), Some((4, 4))),
        (VectorType::Double3, (24, 8), None),
    ];
    for (v, c, msl) in cases {
        let ty = Type::Vector(v);
        assert_eq!(cuda.layout(&ty, &[]), Some(c), "{v:?}");
        assert_eq!(Target::cpu().layout(&ty, &[]), Some(c), "{v:?}");
        assert_eq!(ty.layout(&[]), Some(c), "{v:?}");
        assert_eq!(metal.layout(&ty, &[]), msl, "{v:?}");
    }
    assert_eq!(metal.layout(&Type::DOUBLE, &[]), None);
    assert_eq!(metal.layout(&Type::CurandStateXorwow, &[]), None);
    assert_eq!(metal.layout(&Type::FLOAT.pointer_to(), &[]), Some((8, 8)));
    assert_eq!(LayoutRules::Msl.layout(&Type::Void, &[]), None);

    // A structure's offsets follow: C puts `w` right after the 12-byte float3, MSL after 16.
    let m = checked(
        "(defkernel-struct particle (p float3) (w float))
(defkernel-struct pair (a particle) (b half))
(defkernel k (void ((x particle*) (y pair*))) (return))",
    );
    let particle = m.struct_def("particle").unwrap();
    let c = cuda.struct_layout(particle, &m.structs).unwrap();
    assert_eq!((c.size, c.align, c.offsets.clone()), (16, 4, vec![0, 12]));
    let msl = metal.struct_layout(particle, &m.structs).unwrap();
    assert_eq!((msl.size, msl.align, msl.offsets), (32, 16, vec![0, 16]));
    let pair = m.struct_def("pair").unwrap();
    let msl = metal.struct_layout(pair, &m.structs).unwrap();
    assert_eq!((msl.size, msl.align, msl.offsets), (48, 16, vec![0, 32]));
    let c = cuda.struct_layout(pair, &m.structs).unwrap();
    assert_eq!((c.size, c.align, c.offsets), (20, 4, vec![0, 16]));
    // Module::layout keeps the C-family layouts the IR stores.
    let particle_ty = Type::Struct("particle".into());
    assert_eq!(m.layout(&particle_ty), Some((16, 4)));
    assert_eq!(metal.layout(&particle_ty, &m.structs), Some((32, 16)));
}

#[test]
fn one_checked_module_validates_for_several_targets() {
    let src = "(defkernel sum (void ((a float*) (out float*) (n int)))
  (with-shared-memory ((partial float 32))
    (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x))
          (v 0.0))
      (if (< i n) (set v (aref a i)))
      (set v (+ v (shfl-down-sync (uint -1) v 16)))
      (set (aref partial thread-idx-x) v)
      (syncthreads)
      (if (= thread-idx-x 0) (atomic-add out (aref partial 0))))))";
    let module = checked(src);
    let targets = [
        Target::default_cuda(),
        Target::cuda(7, 0),
        Target::cpu(),
        Target::hip("gfx1100").unwrap(),
        Target::metal(7).unwrap(),
    ];
    for t in &targets {
        validate(&module, t).unwrap_or_else(|e| panic!("{t}: {e}"));
    }
    // What the targets share is what such a module may use.
    let shared = targets.iter().fold(Capabilities::all(), |all, t| {
        all.intersection(t.capabilities)
    });
    for c in [Capability::WarpShuffle, Capability::FloatAtomics] {
        assert!(shared.contains(c), "{c:?}");
    }
    assert!(!shared.contains(Capability::Float64));
    // A wave64 target widens the shuffle's full 32-bit mask to the whole wave.
    validate(&module, &Target::hip("gfx90a").unwrap()).unwrap();
}

#[test]
fn validation_of_deep_expressions_needs_no_big_stack() {
    let operands = "1 ".repeat(6000);
    let src = format!("(defkernel k (void ((a int*)))\n  (set (aref a 0) (+ {operands})))");
    let module = checked(&src);
    let result = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            validate(&module, &Target::cpu())?;
            validate(&module, &Target::metal(8).unwrap())
        })
        .unwrap()
        .join()
        .unwrap();
    result.unwrap();
}

#[test]
fn printing_for_a_target_validates_first_and_picks_its_dialect() {
    use chorus_lang::cfamily::{PrintOptions, print_for_target};
    let src = "(defkernel k (void ((a int*)))\n  (cuda-asm \"membar.gl;\"))";
    let module = checked(src);
    let options = PrintOptions::default();
    let printed = print_for_target(&module, &Target::cuda(9, 0), &options).unwrap();
    assert!(printed.code.contains("membar.gl;"), "{}", printed.code);
    assert_eq!(printed.names.function("k"), Some("k"));
    // The CPU executor lacks inline assembly: validation refuses at the statement, before printing.
    let error = print_for_target(&module, &Target::cpu(), &options).unwrap_err();
    assert_eq!((error.span.line, error.span.column), (2, 3), "{error}");
    // A target this build has no dialect for is an error at the module's first definition.
    let plain = checked("(defkernel k (void ((a int*)))\n  (set (aref a 0) 1))");
    let error = print_for_target(&plain, &Target::cpu(), &options).unwrap_err();
    assert_eq!((error.span.line, error.span.column), (1, 1), "{error}");
    assert!(error.message.contains("no C-family dialect"), "{error}");
}
