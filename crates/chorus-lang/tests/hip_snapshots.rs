//! The HIP dialect, end to end from kernel text: every kernel file of `tests/cuda/` printed for
//! an RDNA target (gfx1030, 32-lane waves) and a CDNA target (gfx90a, 64-lane waves) through
//! `print_for_target`, each as its HIP C++ or as the located error of what the target lacks
//! (chorus-hip's compiler tiers compile the same output with the AMD compiler and with nvcc
//! through the HIP-on-CUDA header).

use chorus_lang::cfamily::{PrintOptions, print_for_target};
use chorus_lang::target::Target;
use std::path::{Path, PathBuf};

fn cuda_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda")
}

/// The HIP C++ of a kernel file for `arch`, or `error: FILE:LINE:COL: message`.
fn hip_file(name: &str, arch: &str) -> String {
    let path = cuda_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let module = chorus_lang::compile_str(&text, &format!("tests/cuda/{name}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let target = Target::hip(arch).unwrap();
    match print_for_target(&module, &target, &PrintOptions::default()) {
        Ok(printed) => printed.code,
        Err(e) => format!("error: {e}"),
    }
}

macro_rules! snapshots {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                let both = format!(
                    "// gfx1030 (RDNA2, wave32)\n{}\n// gfx90a (CDNA2, wave64)\n{}",
                    hip_file($file, "gfx1030"),
                    hip_file($file, "gfx90a")
                );
                insta::assert_snapshot!(stringify!($test), both);
            }
        )*

        /// Every kernel file has a snapshot test.
        #[test]
        fn every_kernel_file_has_a_snapshot() {
            let listed: std::collections::BTreeSet<&str> = [$($file),*].into_iter().collect();
            let present: std::collections::BTreeSet<String> = std::fs::read_dir(cuda_dir())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".lisp"))
                .collect();
            let present: std::collections::BTreeSet<&str> = present.iter().map(String::as_str).collect();
            assert_eq!(listed, present);
        }
    };
}

snapshots! {
    hip_vec_add => "vec-add.lisp",
    hip_statement_if => "if.lisp",
    hip_statement_let => "let.lisp",
    hip_statement_do => "do.lisp",
    hip_statement_for_while => "for-while.lisp",
    hip_statement_switch => "switch.lisp",
    hip_statement_shared_memory => "shared-memory.lisp",
    hip_statement_dynamic_shared_memory => "dynamic-shared.lisp",
    hip_statement_printf_asm => "printf-asm.lisp",
    hip_statement_set_progn_return => "set-progn-return.lisp",
    hip_structs_and_globals => "struct-global.lisp",
    hip_builtin_arithmetic => "arithmetic.lisp",
    hip_builtin_atomics => "atomics.lisp",
    hip_builtin_cluster_and_fences => "cluster.lisp",
    hip_builtin_hopper => "hopper.lisp",
    hip_builtin_compare_logic_bitwise => "compare-logic-bitwise.lisp",
    hip_builtin_curand => "curand.lisp",
    hip_edge_cases => "edge-cases.lisp",
    hip_builtin_extended_floats => "extended-floats.lisp",
    hip_builtin_integer_intrinsics => "int-intrinsics.lisp",
    hip_builtin_integer_types => "integer-types.lisp",
    hip_builtin_math => "math.lisp",
    hip_builtin_remainders => "remainders.lisp",
    hip_builtin_vectors => "vectors.lisp",
    hip_builtin_warp => "warp.lisp",
}

#[test]
fn cuda_output_is_unchanged_by_the_hip_dialect() {
    // print_for_target on a CUDA target is the CUDA dialect's output, byte for byte.
    let text = std::fs::read_to_string(cuda_dir().join("warp.lisp")).unwrap();
    let module = chorus_lang::compile_str(&text, "warp.lisp").unwrap();
    let printed =
        print_for_target(&module, &Target::default_cuda(), &PrintOptions::default()).unwrap();
    assert_eq!(
        printed.code,
        chorus_lang::cuda::print_module(&module).unwrap().code
    );
}

/// Warp operations HIP can express: the full mask on both wave widths (widened on 64 lanes),
/// partial masks on 32 lanes.
const HIP_WARP: &str = "(defkernel warp (void ((a int*) (u uint*) (f float*)))
  (let ((v (aref a thread-idx-x)))
    (set (aref a 0) (shfl-sync (uint -1) v 0))
    (set (aref a 1) (shfl-up-sync (uint -1) v 1 8))
    (set (aref a 2) (shfl-down-sync (uint -1) v 16))
    (set (aref f 0) (shfl-xor-sync (uint -1) (aref f 1) 1))
    (set (aref a 4) (all-sync (uint -1) (> v 0)))
    (set (aref a 5) (any-sync (uint -1) (> v 0)))
    (syncwarp (uint -1))
    (syncwarp)
    (set (aref a 6) (+ lane-id warp-size))))
(defkernel votes (void ((a int*) (u uint*)))
  (let ((v (aref a thread-idx-x)))
    (set (aref u 0) (ballot-sync (uint -1) (> v 0)))
    (set (aref u 1) (ballot-sync (uint 255) (> v 0)))
    (set (aref a 1) (all-sync (uint 255) (> v 0)))
    (set (aref a 2) (any-sync (uint 255) (> v 0)))
    (set (aref u 2) (activemask))))";

#[test]
fn hip_warp_operations() {
    let module = chorus_lang::compile_str(HIP_WARP, "warp.lisp").unwrap();
    let options = PrintOptions::default();
    let wave32 = print_for_target(&module, &Target::hip("gfx1030").unwrap(), &options).unwrap();
    insta::assert_snapshot!("hip_warp_wave32", wave32.code);
    // On 64-lane waves the first kernel prints; the second's ballot is refused at its span.
    let error = print_for_target(&module, &Target::hip("gfx90a").unwrap(), &options).unwrap_err();
    assert_eq!((error.span.line, error.span.column), (14, 21), "{error}");
    let first = chorus_lang::compile_str(
        &HIP_WARP[..HIP_WARP.find("(defkernel votes").unwrap()],
        "warp.lisp",
    )
    .unwrap();
    let wave64 = print_for_target(&first, &Target::hip("gfx942").unwrap(), &options).unwrap();
    insta::assert_snapshot!("hip_warp_wave64", wave64.code);
}
