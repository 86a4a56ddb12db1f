//! The CUDA C printer, end to end from kernel text: snapshots of every statement and built-in
//! family (`tests/cuda/*.lisp`, also compiled by nvcc in chorus-cuda's compiler tier), the seed's
//! examples against the C the seed shows, and the built-in coverage of `tests/corpus/everything.lisp`.

use chorus_lang::cuda::print_module;
use std::path::{Path, PathBuf};

fn cuda_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda")
}

/// The CUDA C of kernel text; a compile error fails the test with its `FILE:LINE:COL` message.
fn cuda(text: &str, file: &str) -> String {
    match chorus_lang::compile_str(text, file) {
        Ok(module) => match print_module(&module) {
            Ok(printed) => printed.code,
            Err(e) => panic!("{e}"),
        },
        Err(e) => panic!("{e}"),
    }
}

fn cuda_file(name: &str) -> String {
    let path = cuda_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    cuda(&text, &format!("tests/cuda/{name}"))
}

macro_rules! snapshots {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                insta::assert_snapshot!(stringify!($test), cuda_file($file));
            }
        )*

        /// Every kernel file has a snapshot test (the compiler tier compiles the same files).
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
    vec_add => "vec-add.lisp",
    statement_if => "if.lisp",
    statement_let => "let.lisp",
    statement_do => "do.lisp",
    statement_for_while => "for-while.lisp",
    statement_switch => "switch.lisp",
    statement_shared_memory => "shared-memory.lisp",
    statement_dynamic_shared_memory => "dynamic-shared.lisp",
    statement_set_progn_return => "set-progn-return.lisp",
    statement_printf_asm => "printf-asm.lisp",
    structs_and_globals => "struct-global.lisp",
    builtin_arithmetic => "arithmetic.lisp",
    builtin_remainders => "remainders.lisp",
    builtin_compare_logic_bitwise => "compare-logic-bitwise.lisp",
    builtin_math => "math.lisp",
    builtin_integer_intrinsics => "int-intrinsics.lisp",
    builtin_vectors => "vectors.lisp",
    builtin_extended_floats => "extended-floats.lisp",
    builtin_warp => "warp.lisp",
    builtin_atomics => "atomics.lisp",
    builtin_cluster_and_fences => "cluster.lisp",
    builtin_hopper => "hopper.lisp",
    builtin_curand => "curand.lisp",
    builtin_integer_types => "integer-types.lisp",
    edge_cases => "edge-cases.lisp",
}

/// C tokens: identifiers and numbers, string literals, and single punctuation characters, so
/// that two texts compare equal "up to whitespace".
fn tokens(c: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = c.chars().peekable();
    while let Some(&ch) = chars.peek() {
        if ch.is_whitespace() {
            chars.next();
        } else if ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                    word.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(word);
        } else if ch == '"' {
            let mut s = String::from(chars.next().unwrap());
            while let Some(c) = chars.next() {
                s.push(c);
                if c == '\\' {
                    s.extend(chars.next());
                } else if c == '"' {
                    break;
                }
            }
            out.push(s);
        } else {
            out.push(chars.next().unwrap().to_string());
        }
    }
    out
}

/// The seed's README writes single-float literals as `1.0` where the compiler prints `1.0f`
/// (cl-cuda printed `1.0f` too, inventory §2.3): the comparison reads both as one token.
fn seed_tokens(c: &str) -> Vec<String> {
    tokens(c)
        .into_iter()
        .map(|t| {
            let is_float = t.starts_with(|c: char| c.is_ascii_digit()) && t.contains('.');
            match t.strip_suffix('f') {
                Some(number) if is_float => number.to_string(),
                _ => t,
            }
        })
        .collect()
}

/// Asserts that the C of `kernel` contains `expected`, up to whitespace.
fn assert_prints(kernel: &str, expected: &str) {
    let c = cuda(kernel, "<seed>");
    let (have, want) = (seed_tokens(&c), seed_tokens(expected));
    assert!(
        have.windows(want.len()).any(|w| w == want.as_slice()),
        "expected\n{expected}\nin\n{c}"
    );
}

#[test]
fn seed_if() {
    assert_prints(
        "(defkernel f (int ((a int)))
           (if (= a 0)
               (return 0)
               (return 1)))",
        "if (a == 0) {\n  return 0;\n} else {\n  return 1;\n}",
    );
}

#[test]
fn seed_let() {
    assert_prints(
        "(defkernel f (int ()) (let ((i 0)) (return i)))",
        "{\n  int i = 0;\n  return i;\n}",
    );
}

#[test]
fn seed_symbol_macrolet() {
    assert_prints(
        "(defkernel f (float ()) (symbol-macrolet ((x 1.0)) (return x)))",
        "{\n  return 1.0;\n}",
    );
}

#[test]
fn seed_macrolet() {
    assert_prints(
        "(defkernel f (int ())
           (macrolet ((square (a)
                        (if (numberp a)
                            (* a a)
                            `(* ,a ,a))))
             (return (square 2))))",
        "{\n  return 4;\n}",
    );
}

#[test]
fn seed_with_shared_memory() {
    assert_prints(
        "(defkernel f (void ())
           (with-shared-memory ((a int 16)
                                (b float 16 16))
             (return)))",
        "{\n  __shared__ __align__(16) int a[16];\n  __shared__ __align__(16) float b[16][16];\n  return;\n}",
    );
}

#[test]
fn seed_set() {
    assert_prints(
        "(defkernel f (void ((z float*)))
           (let ((x 0.0) (y (float4 0.0 0.0 0.0 0.0)))
             (set x 1.0)
             (set (float4-x y) 1.0)
             (set (aref z 0) 1.0)))",
        "x = 1.0;\ny.x = 1.0;\nz[0] = 1.0;",
    );
}

const DEVICE_STATEMENTS: &str = "(defkernel do-some-statement (int ()) (return 0))
     (defkernel do-some-statements (int ()) (return 0))
     (defkernel do-more-statements (int ()) (return 0))";

#[test]
fn seed_progn_and_return() {
    assert_prints(
        &format!(
            "{DEVICE_STATEMENTS}
             (defkernel f (int ())
               (progn
                 (do-some-statements)
                 (do-more-statements))
               (return 0))"
        ),
        "do_some_statements();\ndo_more_statements();\nreturn 0;",
    );
}

/// The seed prints `for ( int a = 0, int b = 0; ! (a > 15); a = a + 1, b = b + 1 )`, which is
/// not C (a declaration cannot follow the comma; nvcc rejects it). Chorus declares both
/// variables in one declaration.
#[test]
fn seed_do_gives_valid_c() {
    let kernel = format!(
        "{DEVICE_STATEMENTS}
         (defkernel f (void ())
           (do ((a 0 (+ a 1))
                (b 0 (+ b 1)))
               ((> a 15))
             (do-some-statement)))"
    );
    let seed = "for ( int a = 0, int b = 0; ! (a > 15); a = a + 1, b = b + 1 )\n{\n  do_some_statement();\n}";
    let c = cuda(&kernel, "<seed>");
    let (have, invalid) = (tokens(&c), tokens(seed));
    assert!(
        !have.windows(invalid.len()).any(|w| w == invalid.as_slice()),
        "{c}"
    );
    assert_prints(
        &kernel,
        "for (int a = 0, b = 0; !(a > 15); a = (a + 1), b = (b + 1)) {\n  do_some_statement();\n}",
    );
}

#[test]
fn seed_for_break() {
    assert_prints(
        "(defkernel f (void ((a int*) (n int)))
           (for (i 0 (< i n) (+ i 1))
             (set (aref a i) i)
             (if (= i 2)
                 (break))))",
        "for ( int i = 0; (i < n); i = (i + 1) ) {\n  a[i] = i;\n  if (i == 2) {\n    break;\n  }\n}",
    );
}

#[test]
fn seed_switch() {
    assert_prints(
        "(defkernel f (void ((a int*) (b int*)))
           (switch (aref a 0)
             (1 (set (aref b 0) 10))
             (t (set (aref b 0) 30))))",
        "switch (a[0]) {\n  case 1: {\n    b[0] = 10;\n    break;\n  }\n  \
         default: {\n    b[0] = 30;\n  }\n}",
    );
}

#[test]
fn seed_dynamic_shared_memory_and_launch_bounds() {
    let kernel = "(defkernel fill (void ((a int*)))
                    (declare (launch-bounds 32))
                    (with-dynamic-shared-memory ((s int))
                      (set (aref s thread-idx-x) thread-idx-x)
                      (syncthreads)
                      (set (aref a thread-idx-x) (aref s thread-idx-x))))";
    assert_prints(
        kernel,
        "extern \"C\" __global__ void __launch_bounds__(32) fill(int* a);",
    );
    assert_prints(
        kernel,
        "extern __shared__ __align__(16) unsigned char chorus_dyn_smem[];\n\
         int* s = (int*)chorus_dyn_smem;\n\
         s[threadIdx.x] = threadIdx.x;\n__syncthreads();\na[threadIdx.x] = s[threadIdx.x];",
    );
}

#[test]
fn seed_restrict() {
    assert_prints(
        "(defkernel store (void ((x int* :restrict)))
           (set (aref x 0) 1))",
        "__global__ void store(int* __restrict__ x)\n{\n  x[0] = 1;\n}",
    );
}

#[test]
fn seed_defkernel_struct() {
    assert_prints(
        "(defkernel-struct pair
           (x int)
           (y int))
         (defkernel f (void ((p pair*))) (set (pair-x (aref p 0)) 1))",
        "struct pair {\n  int x;\n  int y;\n};",
    );
}

#[test]
fn seed_defglobal() {
    let kernel = "(defglobal pi 3.14159 :constant)
                  (defglobal x 0)
                  (defkernel f (void ((out float*))) (set (aref out 0) (+ pi x)))";
    assert_prints(kernel, "extern \"C\" __constant__ float pi = 3.14159f;");
    assert_prints(kernel, "extern \"C\" __device__ int x = 0;");
}

/// Names of the lists' heads in `form`, recursively.
fn call_heads(form: &chorus_lang::Form, heads: &mut std::collections::BTreeSet<String>) {
    if let Some(items) = form.as_list() {
        if let Some(head) = items.first().and_then(chorus_lang::Form::as_symbol) {
            heads.insert(head.to_string());
        }
        for item in items {
            call_heads(item, heads);
        }
    }
}

/// The kinds of statement in `block`, recursively, by name.
fn statement_kinds(
    block: &chorus_lang::ir::Block,
    kinds: &mut std::collections::BTreeSet<&'static str>,
) {
    use chorus_lang::ir::StmtKind;
    for stmt in &block.stmts {
        let name = match &stmt.kind {
            StmtKind::Block(b) => {
                statement_kinds(b, kinds);
                "block"
            }
            StmtKind::Declare { .. } => "declare",
            StmtKind::SharedArray { .. } => "shared-array",
            StmtKind::DynamicShared { .. } => "dynamic-shared",
            StmtKind::Assign { .. } => "assign",
            StmtKind::If {
                then, otherwise, ..
            } => {
                statement_kinds(then, kinds);
                if let Some(b) = otherwise {
                    statement_kinds(b, kinds);
                }
                "if"
            }
            StmtKind::While { body, .. } => {
                statement_kinds(body, kinds);
                "while"
            }
            StmtKind::For { body, .. } => {
                statement_kinds(body, kinds);
                "for"
            }
            StmtKind::Break => "break",
            StmtKind::Continue => "continue",
            StmtKind::Switch { cases, default, .. } => {
                for case in cases {
                    statement_kinds(&case.body, kinds);
                }
                if let Some(b) = default {
                    statement_kinds(b, kinds);
                }
                "switch"
            }
            StmtKind::Return(_) => "return",
            StmtKind::Expr(_) => "expression",
            StmtKind::Printf { .. } => "printf",
            StmtKind::Asm(_) => "asm",
        };
        kinds.insert(name);
    }
}

#[test]
fn everything_uses_every_statement_form_and_95_percent_of_the_builtins() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/everything.lisp");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut heads = std::collections::BTreeSet::new();
    for form in chorus_lang::read_str(&text, "everything.lisp").unwrap() {
        call_heads(&form, &mut heads);
    }
    // The Hopper built-ins need sm_90a and have no CPU semantics, so the shared corpus leaves
    // them out: `hopper.lisp` covers them (`the_hopper_file_uses_every_hopper_builtin`).
    let table: std::collections::BTreeSet<&str> = chorus_lang::check::builtins::names()
        .filter(|n| !is_hopper(n))
        .collect();
    let missing: Vec<&str> = table
        .iter()
        .copied()
        .filter(|n| !heads.contains(*n))
        .collect();
    let covered = table.len() - missing.len();
    println!(
        "everything.lisp uses {covered} of the {} built-ins in the checker's table; missing: {missing:?}",
        table.len()
    );
    assert!(
        covered * 100 >= table.len() * 95,
        "{covered} of {}; missing {missing:?}",
        table.len()
    );

    for form in [
        "defkernel",
        "defkernel-struct",
        "defglobal",
        "defkernelmacro",
        "defkernel-symbol-macro",
        "declare",
        "if",
        "when",
        "unless",
        "let",
        "let*",
        "symbol-macrolet",
        "macrolet",
        "do",
        "for",
        "while",
        "break",
        "continue",
        "switch",
        "progn",
        "set",
        "return",
        "with-shared-memory",
        "with-dynamic-shared-memory",
        "printf",
        "cuda-asm",
    ] {
        assert!(
            heads.contains(form),
            "everything.lisp does not use `{form}`"
        );
    }

    let module = chorus_lang::compile_str(&text, "tests/corpus/everything.lisp")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut kinds = std::collections::BTreeSet::new();
    for function in &module.functions {
        statement_kinds(&function.body, &mut kinds);
    }
    let all = [
        "block",
        "declare",
        "shared-array",
        "dynamic-shared",
        "assign",
        "if",
        "while",
        "for",
        "break",
        "continue",
        "switch",
        "return",
        "expression",
        "printf",
        "asm",
    ];
    assert_eq!(
        kinds,
        all.into_iter().collect(),
        "statement kinds in the IR of everything.lisp"
    );
    let c = print_module(&module).unwrap_or_else(|e| panic!("{e}")).code;
    for needed in [
        "#include <cuda_fp16.h>",
        "#include <curand_kernel.h>",
        "struct body {",
        "__launch_bounds__(128, 2)",
    ] {
        assert!(c.contains(needed), "{needed} missing from\n{c}");
    }
}

/// True for the Hopper built-ins (`check/hopper.rs`).
fn is_hopper(name: &str) -> bool {
    chorus_lang::check::builtins::signatures(name)
        .iter()
        .all(|s| matches!(s.op, chorus_lang::ir::Builtin::Hopper(_)))
}

#[test]
fn the_hopper_file_uses_every_hopper_builtin() {
    let text = std::fs::read_to_string(cuda_dir().join("hopper.lisp")).unwrap();
    let mut heads = std::collections::BTreeSet::new();
    for form in chorus_lang::read_str(&text, "hopper.lisp").unwrap() {
        call_heads(&form, &mut heads);
    }
    // One accumulator shape stands for the 32 (their constructors differ only in N).
    let missing: Vec<&str> = chorus_lang::check::builtins::names()
        .filter(|n| is_hopper(n) && !heads.contains(*n))
        .filter(|n| !n.starts_with(chorus_lang::types::WGMMA_ACCUMULATOR_PREFIX))
        .collect();
    assert!(missing.is_empty(), "hopper.lisp does not use {missing:?}");
}
