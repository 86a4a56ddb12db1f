//! The remainders on the executor: `mod` and `rem` truncate (C's `%`, the sign of the
//! dividend), `floor-mod` floors (Common Lisp's `mod`, the sign of the divisor), for negative
//! operands of signed, unsigned and floating types.

use chorus_cpu::{CpuModule, DeviceBuffer, Error, KernelArg, LaunchConfig};
use std::sync::Arc;

fn module(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

/// `[mod, rem, floor-mod]` of each pair, computed by a kernel over `T`.
fn remainders<T: chorus_lang::host::KernelValue + Copy>(ty: &str, pairs: &[(T, T)]) -> Vec<[T; 3]> {
    let m = module(&format!(
        "(defkernel r (void ((a {ty}*) (b {ty}*) (out {ty}*)))
           (let ((i thread-idx-x))
             (set (aref out (* 3 i)) (mod (aref a i) (aref b i)))
             (set (aref out (+ (* 3 i) 1)) (rem (aref a i) (aref b i)))
             (set (aref out (+ (* 3 i) 2)) (floor-mod (aref a i) (aref b i)))))"
    ));
    let a: Vec<T> = pairs.iter().map(|p| p.0).collect();
    let b: Vec<T> = pairs.iter().map(|p| p.1).collect();
    let (a, b) = (
        DeviceBuffer::from_slice(&a).unwrap(),
        DeviceBuffer::from_slice(&b).unwrap(),
    );
    let out = DeviceBuffer::alloc(3 * pairs.len() * size_of::<T>()).unwrap();
    m.launch(
        "r",
        &LaunchConfig::linear(1, pairs.len() as u32),
        &[
            KernelArg::Buffer(&a),
            KernelArg::Buffer(&b),
            KernelArg::Buffer(&out),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    out.to_vec::<T>()
        .unwrap()
        .chunks(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect()
}

#[test]
fn integer_remainders_of_negative_operands() {
    let pairs = [(-7, 3), (7, -3), (-7, -3), (7, 3), (-6, 3), (i32::MIN, -1)];
    assert_eq!(
        remainders::<i32>("int", &pairs),
        [
            [-1, -1, 2],
            [1, 1, -2],
            [-1, -1, -1],
            [1, 1, 1],
            [0, 0, 0],
            [0, 0, 0]
        ]
    );
    assert_eq!(
        remainders::<i64>("int64", &[(-7, 3), (7, -3)]),
        [[-1, -1, 2], [1, 1, -2]]
    );
    assert_eq!(
        remainders::<i8>("int8", &[(-128, 3), (127, -5)]),
        [[-2, -2, 1], [2, 2, -3]]
    );
    // Unsigned: flooring and truncating agree.
    assert_eq!(
        remainders::<u32>("uint", &[(7, 3), (u32::MAX, 10)]),
        [[1, 1, 1], [5, 5, 5]]
    );
}

#[test]
fn floating_remainders_of_negative_operands() {
    assert_eq!(
        remainders::<f32>("float", &[(-7.5, 2.0), (7.5, -2.0), (-4.0, 2.0)]),
        [[-1.5, -1.5, 0.5], [1.5, 1.5, -0.5], [-0.0, -0.0, -0.0]]
    );
    assert_eq!(
        remainders::<f64>("double", &[(-7.0, 3.0), (7.0, -3.0)]),
        [[-1.0, -1.0, 2.0], [1.0, 1.0, -2.0]]
    );
}

#[test]
fn an_integer_floor_mod_by_zero_faults() {
    let m = module(
        "(defkernel r (void ((a int*)))
           (set (aref a 0) (floor-mod (aref a 1) (aref a 2))))",
    );
    let a = DeviceBuffer::from_slice(&[0i32, 5, 0]).unwrap();
    let error = m
        .launch("r", &LaunchConfig::linear(1, 1), &[KernelArg::Buffer(&a)])
        .unwrap_err();
    assert!(matches!(&error, Error::Fault { .. }), "{error}");
    assert!(error.to_string().contains("division by zero"), "{error}");
}
