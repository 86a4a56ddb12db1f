//! Launch arguments checked against a kernel's signature (no GPU needed).

use chorus_cuda::{Error, KernelArg, Signature, check_arguments};
use chorus_lang::host::{Float3, Int2};
use chorus_lang::types::Type;
use std::sync::Arc;

fn signature(text: &str, kernel: &str) -> Signature {
    let module = chorus_lang::compile_str(text, "args.lisp").unwrap();
    let (function, _) = module.function(kernel).unwrap();
    Signature {
        module: Arc::new(module),
        function,
    }
}

const VEC_ADD: &str = "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n) (set (aref c i) (+ (aref a i) (aref b i))))))";

#[test]
fn matching_arguments_pass() {
    let s = signature(VEC_ADD, "vec-add-kernel");
    let n = 4i32;
    let args = [
        // SAFETY: only checked against signatures, never launched: the addresses are never used.
        unsafe { KernelArg::typed_pointer(0x1000, Type::FLOAT) },
        // SAFETY: only checked against signatures, never launched: the addresses are never used.
        unsafe { KernelArg::device_ptr(0x2000) },
        // SAFETY: only checked against signatures, never launched: the addresses are never used.
        unsafe { KernelArg::typed_pointer(0x3000, Type::FLOAT) },
        KernelArg::value(&n),
    ];
    check_arguments(&s, &args).unwrap();
}

#[test]
fn mismatches_name_the_argument_and_both_types() {
    let s = signature(VEC_ADD, "vec-add-kernel");
    let n = 4i32;
    // SAFETY: only checked against signatures, never launched: the addresses are never used.
    let p = unsafe { KernelArg::typed_pointer(0x1000, Type::FLOAT) };
    let e = check_arguments(
        &s,
        &[
            p.clone(),
            KernelArg::value(&n),
            p.clone(),
            KernelArg::value(&n),
        ],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "argument 2 of vec-add-kernel: expected float*, got int"
    );
    let e = check_arguments(
        &s,
        &[p.clone(), p.clone(), p.clone(), KernelArg::value(&1.0f32)],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "argument 4 of vec-add-kernel: expected int, got float"
    );
    let e = check_arguments(
        &s,
        // SAFETY: only checked against signatures, never launched: the addresses are never used.
        &[p.clone(), p.clone(), p.clone(), unsafe {
            KernelArg::device_ptr(0)
        }],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "argument 4 of vec-add-kernel: expected int, got a device pointer"
    );
    let e = check_arguments(&s, std::slice::from_ref(&p)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::ArgumentCount {
                expected: 4,
                got: 1,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn vectors_and_structs_are_checked_by_type_and_size() {
    let s = signature(
        "(defkernel-struct pair (x int) (y int))
         (defkernel k (void ((v float3) (w int2) (p pair)))
           (set (pair-x p) (+ (int2-x w) (int (float3-x v)))))",
        "k",
    );
    let (v, w) = (Float3::new(1.0, 2.0, 3.0), Int2::new(1, 2));
    let pair = [1i32, 2];
    // SAFETY: only checked against signatures, never launched: the addresses are never used.
    let good = unsafe { KernelArg::raw(Type::Struct("pair".into()), bytemuck::cast_slice(&pair)) };
    check_arguments(
        &s,
        &[KernelArg::value(&v), KernelArg::value(&w), good.clone()],
    )
    .unwrap();
    let short = [1i32];
    // SAFETY: only checked against signatures, never launched: the addresses are never used.
    let bad = unsafe { KernelArg::raw(Type::Struct("pair".into()), bytemuck::cast_slice(&short)) };
    let e = check_arguments(&s, &[KernelArg::value(&v), KernelArg::value(&w), bad]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "argument 3 of k: expected pair, got pair of 4 bytes"
    );
    let e = check_arguments(&s, &[KernelArg::value(&w), KernelArg::value(&w), good]).unwrap_err();
    assert_eq!(e.to_string(), "argument 1 of k: expected float3, got int2");
}
