//! The kernel programs of every example (`examples/*.rs`), for the tests that print them for
//! other targets (the MSL shim, the AMD compiler tier): the workloads (`kernels/prelude.lisp`
//! followed by `kernels/NAME.lisp`), the tensor-core examples (the macro library, then
//! `kernels/hgemm.lisp` or `kernels/attention.lisp`), `hgemm-hopper`'s whole program (the
//! library, the prelude, `hgemm-hopper.lisp` and `hgemm-tma.lisp`), each
//! `chorus::defkernel! { … }` block of an example's source (one program per block, as the macro
//! makes), and the text `shared-memory.rs` builds at run time.

#![allow(dead_code)]

const PRELUDE: &str = include_str!("../../../../examples/kernels/prelude.lisp");

/// The workload kernel files.
const WORKLOADS: &[(&str, &str)] = &[
    (
        "diffuse0",
        include_str!("../../../../examples/kernels/diffuse0.lisp"),
    ),
    (
        "diffuse1",
        include_str!("../../../../examples/kernels/diffuse1.lisp"),
    ),
    (
        "nbody",
        include_str!("../../../../examples/kernels/nbody.lisp"),
    ),
    ("sph", include_str!("../../../../examples/kernels/sph.lisp")),
    (
        "reduction",
        include_str!("../../../../examples/kernels/reduction.lisp"),
    ),
    (
        "transpose",
        include_str!("../../../../examples/kernels/transpose.lisp"),
    ),
    (
        "sgemm",
        include_str!("../../../../examples/kernels/sgemm.lisp"),
    ),
    (
        "scan",
        include_str!("../../../../examples/kernels/scan.lisp"),
    ),
    // hgemm-hopper's and fp8-gemm's kernels (one file, one kernel macro).
    ("hgemm-hopper", HGEMM_HOPPER),
];

const HGEMM_HOPPER: &str = include_str!("../../../../examples/kernels/hgemm-hopper.lisp");
/// The mma.sync GEMMs fed by `hgemm-hopper.lisp`'s pipeline (after it and the tensor-core
/// library).
const HGEMM_TMA: &str = include_str!("../../../../examples/kernels/hgemm-tma.lisp");

/// The examples written with the tensor-core macro library (`chorus_lang::library`), which
/// their programs define first.
const TENSOR_CORE_EXAMPLES: &[(&str, &str)] = &[
    (
        "hgemm",
        include_str!("../../../../examples/kernels/hgemm.lisp"),
    ),
    (
        "attention",
        include_str!("../../../../examples/kernels/attention.lisp"),
    ),
];

/// The examples whose kernels are written in `defkernel!` blocks.
const RUST_EXAMPLES: &[(&str, &str)] = &[
    (
        "vector-add",
        include_str!("../../../../examples/vector-add.rs"),
    ),
    (
        "defglobal",
        include_str!("../../../../examples/defglobal.rs"),
    ),
    (
        "launch-overhead",
        include_str!("../../../../examples/launch-overhead.rs"),
    ),
    (
        "texture-rotate",
        include_str!("../../../../examples/texture-rotate.rs"),
    ),
    (
        "cublas-gemm",
        include_str!("../../../../examples/cublas-gemm.rs"),
    ),
    (
        "cufft-convolution",
        include_str!("../../../../examples/cufft-convolution.rs"),
    ),
    (
        "curand-pi",
        include_str!("../../../../examples/curand-pi.rs"),
    ),
    (
        "cusolver-eigen",
        include_str!("../../../../examples/cusolver-eigen.rs"),
    ),
    (
        "cusparse-spmv",
        include_str!("../../../../examples/cusparse-spmv.rs"),
    ),
    (
        "cudnn-conv",
        include_str!("../../../../examples/cudnn-conv.rs"),
    ),
    (
        "nccl-allreduce",
        include_str!("../../../../examples/nccl-allreduce.rs"),
    ),
];

/// Every example's kernel programs, named (`sgemm`, `cublas-gemm`, `cublas-gemm-2` for a
/// file's second block, `shared-memory`).
pub fn example_programs() -> Vec<(String, String)> {
    let mut programs: Vec<(String, String)> = WORKLOADS
        .iter()
        .map(|(n, text)| (n.to_string(), format!("{PRELUDE}\n{text}")))
        .collect();
    // Joined here, as one text (the tests name modules, not lines of the example's file).
    let library = chorus_lang::library::TENSOR_CORE;
    for (name, text) in TENSOR_CORE_EXAMPLES {
        programs.push((name.to_string(), format!("{library}\n{text}")));
    }
    // hgemm-hopper's program: its wgmma kernels and the mma.sync ones its pipeline feeds.
    programs.push((
        "hgemm-tma".into(),
        format!("{library}\n{PRELUDE}\n{HGEMM_HOPPER}\n{HGEMM_TMA}"),
    ));
    for (name, rust) in RUST_EXAMPLES {
        for (i, block) in defkernel_blocks(rust).into_iter().enumerate() {
            let label = if i == 0 {
                name.to_string()
            } else {
                format!("{name}-{}", i + 1)
            };
            programs.push((label, block));
        }
    }
    programs.push(("shared-memory".into(), shared_memory_text(3)));
    programs
}

/// The text inside each of a Rust file's `chorus::defkernel! { … }` blocks.
pub fn defkernel_blocks(rust: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut rest = rust;
    while let Some(at) = rest.find("defkernel! {") {
        let start = at + "defkernel! {".len();
        let mut depth = 1;
        let mut end = None;
        for (i, c) in rest[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end.expect("a closed defkernel! block");
        blocks.push(rest[start..end].to_string());
        rest = &rest[end..];
    }
    assert!(!blocks.is_empty(), "no defkernel! block");
    blocks
}

/// The kernels `examples/shared-memory.rs` generates (`add-global-N`, `add-shared-N` with a
/// 16-float shared tile), with `n` unrolled statements instead of 1000–4000: the same forms.
pub fn shared_memory_text(n: usize) -> String {
    let add = "(set (aref a i) (+ (aref a i) 1.0))\n".repeat(n);
    let add_shared = "(set (aref s thread-idx-x) (+ (aref s thread-idx-x) 1.0))\n".repeat(n);
    format!(
        "(defkernel add-global-{n} (void ((a float*)))\n\
         (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))\n{add}))\n\
         (defkernel add-shared-{n} (void ((a float*)))\n\
         (with-shared-memory ((s float 16))\n\
         (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))\n\
         (set (aref s thread-idx-x) (aref a i))\n(syncthreads)\n{add_shared}\
         (syncthreads)\n(set (aref a i) (aref s thread-idx-x)))))\n"
    )
}
