//! A generator of kernel-shaped S-expressions, shared by the property tests.

use proptest::prelude::*;

/// Kernel-shaped S-expressions from a small grammar: real form names, variables and literals,
/// nested at random, so that most inputs get deep into the checker before failing.
pub fn arbitrary_form() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("n".to_string()),
        Just("x".to_string()),
        Just("i".to_string()),
        Just("thread-idx-x".to_string()),
        Just("t".to_string()),
        Just("nil".to_string()),
        Just("float".to_string()),
        Just("int*".to_string()),
        Just(":restrict".to_string()),
        Just("\"%d\"".to_string()),
        (-3i64..300).prop_map(|v| v.to_string()),
        (-2.0f64..2.0).prop_map(|v| format!("{v:.2}")),
        Just("4294967296".to_string()),
        Just("()".to_string()),
        Just("s".to_string()),
        Just("sg".to_string()),
    ];
    let heads = [
        "if",
        "let",
        "do",
        "while",
        "for",
        "break",
        "continue",
        "switch",
        "with-shared-memory",
        "with-dynamic-shared-memory",
        "set",
        "progn",
        "return",
        "declare",
        "launch-bounds",
        "printf",
        "cuda-asm",
        "aref",
        "pointer",
        "and",
        "or",
        "values",
        "+",
        "-",
        "*",
        "/",
        "<",
        "=",
        "not",
        "mod",
        "float",
        "uint",
        "half",
        "float3",
        "float3-x",
        "atomic-add",
        "shfl-sync",
        "syncthreads",
        "sin",
        "floor",
        "f",
        "pair-x",
        "make-pair",
        "otherwise",
    ];
    leaf.prop_recursive(4, 48, 5, move |inner| {
        (
            proptest::sample::select(heads.to_vec()),
            prop::collection::vec(inner, 0..5),
        )
            .prop_map(|(head, args)| {
                let mut s = format!("({head}");
                for a in args {
                    s.push(' ');
                    s.push_str(&a);
                }
                s.push(')');
                s
            })
    })
}
