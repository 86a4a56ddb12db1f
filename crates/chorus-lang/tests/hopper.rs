//! The Hopper built-ins (wgmma, TMA, mbarriers, setmaxnreg): their types, the constants they
//! need, the `tensor-map` rules, and the capability errors on targets without them, each at
//! its line and column. The printed CUDA C is `cuda_snapshots::builtin_hopper`'s snapshot; the
//! compiler tier (chorus-cuda) compiles it with nvcc for sm_90a.

use chorus_lang::check::builtins::signatures;
use chorus_lang::target::Target;
use chorus_lang::{Type, compile_str, compile_str_for};

/// `tests/cuda/hopper.lisp`: every Hopper built-in family.
const HOPPER: &str = include_str!("cuda/hopper.lisp");

/// The error of compiling `src` for `target`, as `LINE:COLUMN: message`.
fn error_for(src: &str, target: &Target) -> String {
    match compile_str_for(src, "h.lisp", target) {
        Ok(_) => panic!("expected {target} to refuse:\n{src}"),
        Err(e) => format!("{}:{}: {}", e.span.line, e.span.column, e.message),
    }
}

/// The error of compiling `src` for sm_90.
fn error(src: &str) -> String {
    error_for(src, &Target::cuda(9, 0))
}

/// A kernel around `body`, with an accumulator `acc` (m64n64), shared `a` (bf16) and `bar`,
/// and the parameters `map` (a tensor map) and `out`; `body` starts at line 5, column 3.
fn kernel(body: &str) -> String {
    format!(
        "(defkernel k (void ((map tensor-map) (out float*)))\n\
         (with-shared-memory ((a bfloat16 4096) (bar uint64))\n\
         (let ((acc (wgmma-f32-m64n64)))\n\
         (wgmma-fence)\n  {body})))"
    )
}

#[test]
fn the_hopper_file_compiles_for_sm_90_only() {
    compile_str_for(HOPPER, "hopper.lisp", &Target::cuda(9, 0)).unwrap();
    compile_str(HOPPER, "hopper.lisp").unwrap();
    // TMA and mbarriers exist from sm_90, wgmma on sm_90 alone (sm_90a).
    let e = error_for(HOPPER, &Target::cuda(8, 9));
    assert!(
        e.ends_with("needs tensor memory access (TMA) and transaction mbarriers, which the CUDA target sm_89 does not have"),
        "{e}"
    );
    let e = error_for(HOPPER, &Target::cuda(10, 0));
    assert!(
        e.starts_with("19:5: `setmaxnreg-inc` needs warpgroup MMA (wgmma)"),
        "{e}"
    );
    for target in [
        Target::cpu(),
        Target::hip("gfx942").unwrap(),
        Target::metal(9).unwrap(),
    ] {
        let e = error_for(HOPPER, &target);
        assert!(
            e.starts_with("4:1: `tensor-map` needs tensor memory access"),
            "{e}"
        );
    }
}

#[test]
fn results_are_typed() {
    let result = |name: &str| signatures(name)[0].result.clone();
    assert_eq!(result("wgmma-acc-ref"), Type::FLOAT);
    assert_eq!(result("wgmma-descriptor").to_string(), "uint64");
    assert_eq!(result("mbarrier-try-wait"), Type::Bool);
    assert_eq!(result("shared-address"), Type::UINT);
    assert_eq!(result("wgmma-f32-m64n256"), Type::WgmmaAccumulator(256));
    assert_eq!(
        chorus_lang::check::ACCUMULATOR_NAMES.len(),
        (8..=256).step_by(8).count()
    );
    // An accumulator is not a number, nor the pointer the wgmma takes.
    assert_eq!(
        error(&kernel("(set (aref out 0) acc)")),
        "5:21: cannot store a wgmma-f32-m64n64 in float element (aref out 0); a wgmma-f32-m64n64 cannot be used where a float is expected"
    );
    let e = error(&kernel("(wgmma-mma-async-bf16 acc 0 0 0)"));
    assert!(
        e.starts_with(
            "5:3: no overload of `wgmma-mma-async-bf16` takes (wgmma-f32-m64n64, int, int, int)"
        ),
        "{e}"
    );
    // The accumulator's shape is its type: an m64n64 is not an m64n128.
    let e = error(&kernel("(let ((b (wgmma-f32-m64n128))) (set acc b))"));
    assert!(e.contains("wgmma-f32-m64n128"), "{e}");
    // fp8 has no transposes.
    assert_eq!(
        error(&kernel("(wgmma-mma-async-e4m3 (pointer acc) 0 0 0 0 0)")),
        "5:3: `wgmma-mma-async-e4m3` takes 4 arguments, got 6"
    );
}

#[test]
fn immediates_must_be_constants_in_range() {
    let cases = [
        (
            "(wgmma-wait-group (int (aref out 0)))",
            "5:21: `wgmma-wait-group`: the number of groups left pending must be an integer constant (PTX encodes it in the instruction); compute it with a macro or a symbol macro",
        ),
        (
            "(tma-store-wait 300)",
            "5:19: `tma-store-wait`: the number of groups left pending must be 0 to 255; got 300",
        ),
        (
            "(setmaxnreg-inc 20)",
            "5:19: `setmaxnreg-inc`: the register count must be a multiple of 8 from 24 to 256; got 20",
        ),
        (
            "(setmaxnreg-dec 100)",
            "5:19: `setmaxnreg-dec`: the register count must be a multiple of 8 from 24 to 256; got 100",
        ),
        (
            "(set (aref out 0) (float (wgmma-descriptor a 16 1024 48)))",
            "5:56: `wgmma-descriptor`: the swizzle in bytes must be 0 (none), 32, 64 or 128; got 48",
        ),
        (
            "(wgmma-mma-async-bf16 (pointer acc) 0 0 1 0 2)",
            "5:47: `wgmma-mma-async-bf16`: transpose-b must be 0 (K-major) or 1 (MN-major); got 2",
        ),
        (
            "(set (aref out 0) (wgmma-acc-ref acc 32))",
            "5:40: `wgmma-acc-ref`: an accumulator `wgmma-f32-m64n64` has registers 0 to 31; got 32",
        ),
        (
            "(set (aref out 0) (wgmma-acc-ref acc (int (aref out 1))))",
            "5:40: `wgmma-acc-ref`: the register number must be an integer constant (PTX encodes it in the instruction); compute it with a macro or a symbol macro",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(error(&kernel(body)), expected, "{body}");
    }
    // Constant expressions and symbol macros are constants.
    let src = kernel(
        "(symbol-macrolet ((stages 2)) (wgmma-wait-group (- stages 1)) (setmaxnreg-inc (* 8 30)))",
    );
    compile_str(&src, "h.lisp").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_tensor_map_is_only_a_kernel_parameter() {
    assert_eq!(
        error("(defkernel (f :device) (void ((m tensor-map)))\n  (return))"),
        "1:1: the parameter `m` of device function `f` is a `tensor-map`: a tensor map can only be a kernel's parameter; take a `tensor-map*` and pass `(pointer map)`"
    );
    assert_eq!(
        error(&kernel(
            "(let ((copy map)) (prefetch-tensor-map (pointer copy)))"
        )),
        "5:15: `copy` would be a copy of a `tensor-map`, which the TMA cannot use: a tensor map can only be a kernel's parameter; bind `(pointer map)`, a `tensor-map*`"
    );
    assert_eq!(
        error("(defkernel k (void ((acc wgmma-f32-m64n8)))\n  (return))"),
        "1:1: kernel `k` takes the accumulator `acc` as a parameter: accumulators live in registers; declare it in the kernel with `(wgmma-f32-m64n8)`"
    );
    // A pointer to it may go anywhere.
    let src = "(defkernel (pf :device) (void ((m tensor-map*)))\n  (prefetch-tensor-map m))\n\
               (defkernel k (void ((m tensor-map)))\n  (pf (pointer m)))";
    compile_str(src, "h.lisp").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn swizzles_move_16_byte_chunks_by_the_row() {
    // Offsets through a shared array's size, which the checker folds to a constant. Byte 1440
    // is in 128-byte row 11 at 16-byte chunk 2 (of 8): the 128-byte swizzle XORs the chunk
    // with 11 % 8 = 3, giving chunk 1, 1424; the 64-byte one XORs chunk 2 % 4 with 11 % 4 = 3
    // (1424 again), the 32-byte one chunk 0 % 2 with 11 % 2 = 1: 1456.
    for (swizzle, offset, want) in [
        ("swizzle-128b", 1440, 1424),
        ("swizzle-128b", 128, 144),
        ("swizzle-128b", 15, 15),
        ("swizzle-64b", 1440, 1424),
        ("swizzle-64b", 256 + 48, 256 + 16),
        ("swizzle-32b", 1440, 1456),
        ("swizzle-32b", 144, 128),
    ] {
        let src = format!(
            "(defkernel k (void ((a int*)))\n  (with-shared-memory ((s uint8 ({swizzle} {offset})))\n    (set (aref a 0) (aref s 0))))"
        );
        let m = compile_str(&src, "h.lisp").unwrap_or_else(|e| panic!("{e}"));
        let body = &m.functions[0].body.stmts;
        let chorus_lang::ir::StmtKind::Block(b) = &body[0].kind else {
            panic!("{body:?}")
        };
        let chorus_lang::ir::StmtKind::SharedArray { sizes, .. } = &b.stmts[0].kind else {
            panic!("{b:?}")
        };
        assert_eq!(sizes, &[want], "({swizzle} {offset})");
    }
    assert_eq!(
        error("(defkernel k (void ((a int*)))\n  (set (aref a 0) (swizzle-128b 1 2)))"),
        "2:19: expected (swizzle-128b byte-offset), found `(swizzle-128b 1 2)`"
    );
}
