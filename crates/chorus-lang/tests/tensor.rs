//! The warp-level tensor-core built-ins (`mma-sync`, `ldmatrix`, `cp-async`): checking with
//! located errors, validation against targets (sm_80 / sm_89, refused on HIP, Metal and older
//! CUDA at the call), and the inline PTX the CUDA printer emits. The corpus kernels
//! (`chorus-cpu/tests/corpus/tensor/`) run in chorus-cpu's and the GPU's corpus tests.

use chorus_lang::check::validate;
use chorus_lang::compile_str;
use chorus_lang::cuda::print_module;
use chorus_lang::library::{Library, expander_with};
use chorus_lang::target::{Capability, Target};

/// The corpus kernels, by file name.
fn corpus() -> Vec<(String, String)> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../chorus-cpu/tests/corpus/tensor");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the tensor corpus")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "lisp"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect()
}

#[test]
fn the_corpus_prints_inline_ptx_for_every_instruction() {
    let mut all = String::new();
    for (name, text) in corpus() {
        let module = compile_str(&text, &name).unwrap_or_else(|e| panic!("{e}"));
        all.push_str(&print_module(&module).unwrap().code);
    }
    for wanted in [
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32",
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32",
        "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
        "cp.async.cg.shared.global [%0], [%1], 16;",
        "cp.async.ca.shared.global [%0], [%1], 8;",
        "cp.async.ca.shared.global [%0], [%1], 4;",
        "cp.async.commit_group;",
        "cp.async.wait_group 1;",
        "cp.async.wait_all;",
        "cvt.rn.bf16x2.f32 %0, %1, %2;",
        "cvt.rn.f16x2.f32 %0, %1, %2;",
        "__shared__ __align__(16) unsigned short",
    ] {
        assert!(all.contains(wanted), "no `{wanted}` in:\n{all}");
    }
}

const MMA: &str = "(defkernel k (void ((a uint4*) (b uint2*) (c float4*)))
  (set (aref c 0) (mma-sync :m16n8k16 :bf16 (aref a 0) (aref b 0) (aref c 0))))";

const FP8: &str = "(defkernel k (void ((a uint4*) (b uint2*) (c float4*)))
  (set (aref c 0) (mma-sync :m16n8k32 :e4m3 (aref a 0) (aref b 0) (aref c 0))))";

const COPY: &str = "(defkernel k (void ((a uint*)))
  (with-shared-memory ((s uint 4))
    (cp-async (pointer (aref s 0)) a 16)
    (cp-async-commit)
    (cp-async-wait 0)))";

#[test]
fn targets_without_tensor_cores_refuse_them_at_the_call() {
    let module = compile_str(MMA, "m.lisp").unwrap();
    assert!(validate(&module, &Target::cuda(8, 0)).is_ok());
    let e = validate(&module, &Target::cuda(7, 5)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "m.lisp:2:19: `mma-sync` needs warp-level tensor cores (mma.sync, ldmatrix), which the CUDA target sm_75 does not have"
    );
    for target in [
        Target::hip("gfx942").unwrap(),
        Target::hip("gfx1100").unwrap(),
        Target::metal(9).unwrap(),
    ] {
        let e = validate(&module, &target).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("m.lisp:2:19: `mma-sync` needs warp-level tensor cores"),
            "{e}"
        );
    }
    let fp8 = compile_str(FP8, "f.lisp").unwrap();
    assert!(validate(&fp8, &Target::cuda(8, 9)).is_ok());
    let e = validate(&fp8, &Target::cuda(8, 6)).unwrap_err();
    assert!(e.to_string().contains("needs fp8 tensor cores"), "{e}");
    let copy = compile_str(COPY, "c.lisp").unwrap();
    let e = validate(&copy, &Target::cuda(7, 0)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("c.lisp:3:5: `cp-async` needs asynchronous copies"),
        "{e}"
    );
    assert!(Target::cpu().has(Capability::TensorCores) && Target::cpu().has(Capability::AsyncCopy));
    assert!(!Target::hip("gfx90a").unwrap().has(Capability::AsyncCopy));
}

/// The error for `body` inside a kernel with fragment parameters.
fn error(body: &str) -> String {
    let text = format!(
        "(defkernel k (void ((a uint4*) (b uint2*) (c float4*) (f float*) (i int4*)))\n  {body})"
    );
    match compile_str(&text, "e.lisp") {
        Ok(_) => panic!("`{body}` compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn wrong_uses_are_located_errors() {
    assert_eq!(
        error("(set (aref c 0) (mma-sync :m16n8k16 :bf16 (aref b 0) (aref b 0) (aref c 0)))"),
        "e.lisp:2:45: `mma-sync :m16n8k16 :bf16` needs its a fragment as uint4, got a uint2"
    );
    assert_eq!(
        error("(set (aref c 0) (mma-sync :m16n8k32 :bf16 (aref a 0) (aref b 0) (aref c 0)))"),
        "e.lisp:2:19: `mma-sync` has no :m16n8k32 shape for :bf16; it has :m16n8k16, :m16n8k8"
    );
    assert!(
        error("(set (aref c 0) (mma-sync :m16n8k16 :bf8 (aref a 0) (aref b 0) (aref c 0)))")
            .starts_with("e.lisp:2:39: `mma-sync`: unknown keyword `:bf8`")
    );
    assert!(
        error("(set (aref c 0) (mma-sync (aref a 0) (aref b 0) (aref c 0)))")
            .contains("`mma-sync` needs a shape and an input type first")
    );
    // Integer accumulators are int4.
    assert!(
        error("(set (aref c 0) (mma-sync :m16n8k32 :s8 (aref a 0) (aref b 0) (aref c 0)))")
            .contains("needs its c fragment as int4, got a float4")
    );
    assert!(
        error("(ldmatrix :x3 f)").starts_with("e.lisp:2:13: `ldmatrix`: unknown keyword `:x3`")
    );
    assert!(error("(ldmatrix :x4 1)").contains("`ldmatrix` needs a pointer here, got an int"));
    assert!(error("(ldmatrix f)").contains("`ldmatrix` needs the number of matrices first"));
    assert_eq!(
        error("(cp-async f f 12)"),
        "e.lisp:2:17: `cp-async` copies 4, 8 or 16 bytes, not 12"
    );
    assert!(error("(cp-async f f 8 :cg)").contains("`cp-async :cg` copies 16 bytes only"));
    assert!(error("(cp-async f f 16 :cx)").contains("unknown cache mode `:cx`"));
    assert!(error("(cp-async-wait 9)").contains("an integer constant from 0 to 7"));
    assert!(error("(cp-async-commit 1)").contains("`cp-async-commit` takes no arguments"));
    assert!(
        error("(pack-bf16x2 1.0)")
            .contains("`pack-bf16x2` takes two floats, the low half first: (pack-bf16x2 lo hi)")
    );
    assert!(error("(pack-f16x2 f 1.0)").contains(
        "no overload of `pack-f16x2` takes (float*, float); accepted: (float, float) → uint"
    ),);
}

#[test]
fn fragments_are_vector_values_that_print_as_helper_calls() {
    let printed = print_module(&compile_str(MMA, "m.lisp").unwrap())
        .unwrap()
        .code;
    assert!(
        printed.contains("static __device__ __forceinline__ float4 chorus_mma_m16n8k16_bf16(uint4 a, uint2 b, float4 c)"),
        "{printed}"
    );
    assert!(printed.contains("chorus_mma_m16n8k16_bf16("), "{printed}");
    let printed = print_module(&compile_str(COPY, "c.lisp").unwrap())
        .unwrap()
        .code;
    assert!(
        printed.contains("__cvta_generic_to_shared(dst)"),
        "{printed}"
    );
    assert!(printed.contains("chorus_cp_async_wait_0();"), "{printed}");
}

/// The hgemm example's kernel, written with the tensor-core macro library: the library's macros
/// defined first, the kernel file read as itself.
fn hgemm_module() -> chorus_lang::Result<chorus_lang::ir::Module> {
    let mut expander = expander_with(&[Library::TensorCore])?;
    chorus_lang::compile_str_with(
        &mut expander,
        include_str!("../../../examples/kernels/hgemm.lisp"),
        "hgemm.lisp",
        &Target::default_cuda(),
    )
}

#[test]
fn errors_in_a_unit_after_a_library_name_the_units_own_lines() {
    let mut expander = expander_with(&[Library::TensorCore]).unwrap();
    let text =
        "(defkernel k (void ((a float*)))\n  (tc-unroll (i 0 2)\n    (set (aref a i) (+ 1.0 a))))";
    let e = chorus_lang::compile_str_with(&mut expander, text, "k.lisp", &Target::default_cuda())
        .unwrap_err();
    assert_eq!((e.span.file.as_ref(), e.span.line), ("k.lisp", 3), "{e}");
}

#[test]
fn the_macro_library_writes_the_hgemm_main_loop() {
    let module = hgemm_module().unwrap_or_else(|e| panic!("{e}"));
    let code = print_module(&module).unwrap().code;
    // Each `define-hgemm` kernel's definition, from its `__global__` line to the next one.
    let bodies: Vec<&str> = code.split("\n__global__ void").skip(1).collect();
    // (name, stages, cp.async per thread and tile, k16 steps a tile, fetches): 128×128×32
    // with 128 threads copies 4 + 4 chunks a tile; 128×256 and 256×128 with 256 threads, 2 + 4
    // and 4 + 2; 128×128×64, 8 + 8. Fetches: the k16 steps' ldmatrix groups, one more (before
    // the loop) with double-buffered fragments. (`hgemm_interleaved` is `hgemm` with the copies
    // placed later, `hgemm_prefetch` with tc-pipeline-fragments.)
    let kernels = [
        ("hgemm(", 3, 8, 2, 2),
        ("hgemm_wide(", 4, 6, 2, 2),
        ("hgemm_tall(", 4, 6, 2, 2),
        ("hgemm_k64(", 3, 16, 4, 4),
        ("hgemm_interleaved(", 3, 8, 2, 2),
        ("hgemm_prefetch(", 3, 8, 2, 3),
        ("hgemm_wide_prefetch(", 4, 6, 2, 3),
    ];
    assert_eq!(bodies.len(), kernels.len(), "{code}");
    for (body, (name, stages, copies, steps, fetches)) in bodies.iter().zip(kernels) {
        assert!(body.contains(name), "{name} out of order in\n{code}");
        // Every warp: 32 mma.sync per k16 step, 4 + 4 ldmatrix per fetch.
        let count = |call: &str| body.matches(call).count();
        assert_eq!(count("chorus_mma_m16n8k16_bf16("), 32 * steps, "{name}");
        assert_eq!(count("chorus_ldmatrix_x4("), 4 * fetches, "{name}");
        assert_eq!(count("chorus_ldmatrix_x4_trans("), 4 * fetches, "{name}");
        // The prologue's stages − 1 tiles and the loop's one.
        assert_eq!(
            body.matches("chorus_cp_async_cg_16(").count(),
            stages * copies,
            "{name}"
        );
        assert!(
            body.contains(&format!("chorus_cp_async_wait_{}();", stages - 2)),
            "{name}"
        );
        assert!(body.contains("extern __shared__"), "{name}");
    }
    // In the main loop (after its barrier), `hgemm` issues the next tile's copies before its
    // first ldmatrix; `hgemm_interleaved` (tc-pipeline's :issue-in-compute) after it.
    let copies_first = |body: &str| {
        let main_loop = &body[body.find("__syncthreads();").expect("a barrier")..];
        let copy = main_loop.find("chorus_cp_async_cg_16(").expect("a copy");
        copy < main_loop.find("chorus_ldmatrix_x4(").expect("an ldmatrix")
    };
    assert!(copies_first(bodies[0]), "hgemm");
    assert!(!copies_first(bodies[4]), "hgemm_interleaved");
    // The main loop's barrier: before a tile's first mma in `hgemm` (all 64 after it), before
    // its last k16 step's 32 in `hgemm_prefetch`, whose operands were loaded before it.
    let mma_after_last_barrier = |body: &str| {
        let after = &body[body.rfind("__syncthreads();").expect("a barrier")..];
        after.matches("chorus_mma_m16n8k16_bf16(").count()
    };
    assert_eq!(mma_after_last_barrier(bodies[0]), 64, "hgemm");
    assert_eq!(mma_after_last_barrier(bodies[5]), 32, "hgemm_prefetch");
    assert_eq!(mma_after_last_barrier(bodies[6]), 32, "hgemm_wide_prefetch");
    assert!(validate(&module, &Target::cuda(8, 0)).is_ok());
    assert!(validate(&module, &Target::cuda(7, 5)).is_err());
}
