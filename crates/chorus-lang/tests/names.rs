//! Names belong to the back end: the CUDA dialect's namer makes every name the front end accepts
//! a legal, unique C identifier, and the printed module's name table finds kernels and globals.
//! (chorus-cuda's compiler tier compiles the same sweep with nvcc and NVRTC.)

#[path = "support/identifier_sweep.rs"]
mod identifier_sweep;

use chorus_lang::cfamily::C_KEYWORDS;
use chorus_lang::cuda::{RESERVED, print_module};
use chorus_lang::ir::{FunctionId, GlobalId};

fn printed(text: &str) -> chorus_lang::cfamily::PrintedModule {
    let module = chorus_lang::compile_str(text, "names.lisp").unwrap_or_else(|e| panic!("{e}"));
    print_module(&module).unwrap_or_else(|e| panic!("{e}"))
}

/// A C identifier no dialect word, implementation name or printer helper can clash with.
fn assert_safe_identifier(name: &str) {
    let mut chars = name.chars();
    assert!(
        chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_'),
        "`{name}` starts with a letter or `_`"
    );
    assert!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
        "`{name}` is lower-case ASCII"
    );
    assert!(!name.starts_with("__"), "`{name}` is reserved");
    assert!(!name.starts_with("chorus_"), "`{name}` is a helper name");
    assert!(!C_KEYWORDS.contains(&name), "`{name}` is a keyword");
    assert!(!RESERVED.contains(&name), "`{name}` is CUDA's");
}

#[test]
fn the_identifier_sweep_prints_legal_unique_names_or_is_rejected_at_a_span() {
    let (modules, rejected) = identifier_sweep::sweep_modules();
    for (what, error) in &rejected {
        assert!(
            error.span.line > 0 && &*error.span.file == "sweep.lisp",
            "{what}: rejected without a location: {error}"
        );
    }
    // Most identifiers are accepted in most positions: the sweep tests the printer.
    let distinct: std::collections::HashSet<String> = identifier_sweep::identifier_classes()
        .into_iter()
        .flat_map(|(_, names)| names)
        .collect();
    let total = distinct.len() * identifier_sweep::Position::ALL.len();
    assert!(
        rejected.len() * 3 < total,
        "{} of {total} rejected: {rejected:?}",
        rejected.len()
    );
    for (file, text) in &modules {
        let module = chorus_lang::compile_str(text, file).unwrap_or_else(|e| panic!("{e}"));
        let printed = print_module(&module).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut seen = std::collections::HashSet::new();
        for name in printed
            .names
            .functions()
            .iter()
            .chain(printed.names.globals())
        {
            assert_safe_identifier(name);
            assert!(seen.insert(name.clone()), "{file}: `{name}` twice");
        }
        for (i, f) in module.functions.iter().enumerate() {
            let c_name = printed.names.function_by_id(FunctionId(i as u32));
            assert_eq!(printed.names.function(&f.name), Some(c_name));
        }
        // No C keyword, CUDA name or implementation name is declared as a variable.
        for line in printed.code.lines() {
            for word in ["int", "float"] {
                // Declarations of locals have an initializer; fields (which may be named
                // `uint3`: members have their structure's scope) do not.
                if line.contains(" = ")
                    && let Some(rest) = line.trim_start().strip_prefix(&format!("{word} "))
                    && let Some(name) = rest.split([' ', '=', ';', '[']).next()
                    && !name.is_empty()
                    && !name.contains('(')
                {
                    assert_safe_identifier(name);
                }
            }
        }
    }
}

#[test]
fn the_name_table_maps_kernel_names_to_c_names() {
    let p = printed(
        "(defglobal sin 1.0)
         (defglobal scale-factor 2.0)
         (defkernel vec-add-kernel (void ((a float*))) (set (aref a 0) (+ sin scale-factor)))
         (defkernel norm (float ((x float))) (return x))
         (defkernel vec_add_kernel (void ((a float*))) (set (aref a 0) (norm 1.0)))",
    );
    assert_eq!(p.names.function("vec-add-kernel"), Some("vec_add_kernel"));
    assert_eq!(p.names.function("vec_add_kernel"), Some("vec_add_kernel_1"));
    assert_eq!(p.names.function("norm"), Some("norm_1"));
    assert_eq!(p.names.global("sin"), Some("sin_1"));
    assert_eq!(p.names.global("scale-factor"), Some("scale_factor"));
    assert_eq!(p.names.global_by_id(GlobalId(1)), "scale_factor");
    assert_eq!(p.names.function("nosuch"), None);
    assert!(
        p.code.contains("__device__ float norm_1(float x);"),
        "{}",
        p.code
    );
    assert!(p.code.contains("norm_1(1.0f)"), "{}", p.code);
}

#[test]
fn structures_whose_names_map_to_one_identifier_both_print() {
    // Once an error ("the same C name"); now the namer tells them apart.
    let p = printed(
        "(defkernel-struct a-b (x int))
         (defkernel-struct a_b (y int))
         (defkernel k (void ((p a-b*) (q a_b*))) (set (a-b-x (aref p 0)) (a_b-y (aref q 0))))",
    );
    assert!(p.code.contains("struct a_b {\n  int x;\n};"), "{}", p.code);
    assert!(
        p.code.contains("struct a_b_1 {\n  int y;\n};"),
        "{}",
        p.code
    );
    assert!(p.code.contains("(a_b* p, a_b_1* q)"), "{}", p.code);
}

#[test]
fn non_ascii_names_get_a_readable_ascii_spelling() {
    let p = printed("(defkernel λ-kernel (void ((π float*) (café float))) (set (aref π 0) café))");
    assert_eq!(p.names.function("λ-kernel"), Some("_u3bb_kernel"));
    assert!(
        p.code.contains("(float* _u3c0, float caf_ue9)"),
        "{}",
        p.code
    );
}
