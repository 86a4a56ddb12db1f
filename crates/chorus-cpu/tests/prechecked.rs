//! `CpuModule::launch_prechecked`: arguments the caller has checked run without a second check,
//! and arguments that do not fit still end in an error, never in host memory.

use chorus_cpu::{CpuModule, DeviceBuffer, Error, LaunchConfig, PrecheckedArg};
use std::sync::Arc;

const ADD_OFFSET: &str = "(defkernel helper (int ((x int))) (return x))
     (defkernel add-offset (void ((a int*) (n int)))
       (set (aref a thread-idx-x) (+ (aref a thread-idx-x) n)))";

fn module() -> CpuModule {
    let ir = chorus_lang::compile_str(ADD_OFFSET, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

fn kernel_index(m: &CpuModule) -> usize {
    m.module()
        .functions
        .iter()
        .position(|f| &*f.name == "add-offset")
        .expect("the kernel is in the module")
}

#[test]
fn prechecked_arguments_run_the_kernel() {
    let m = module();
    let a = DeviceBuffer::from_slice(&[1i32, 2, 3, 4]).unwrap();
    let n = 10i32.to_le_bytes();
    m.launch_prechecked(
        kernel_index(&m),
        &LaunchConfig::linear(1, 4),
        &[PrecheckedArg::Buffer(&a, 0), PrecheckedArg::Bytes(&n)],
    )
    .unwrap();
    assert_eq!(a.to_vec::<i32>().unwrap(), [11, 12, 13, 14]);
}

#[test]
fn arguments_that_do_not_fit_are_errors_not_host_accesses() {
    let m = module();
    let kernel = kernel_index(&m);
    let a = DeviceBuffer::from_slice(&[1i32, 2, 3, 4]).unwrap();
    let config = LaunchConfig::linear(1, 4);
    let n = 10i32.to_le_bytes();

    // Too few arguments, or a value too short for its parameter: a launch error.
    let error = m
        .launch_prechecked(kernel, &config, &[PrecheckedArg::Buffer(&a, 0)])
        .unwrap_err();
    assert!(
        matches!(&error, Error::Launch { kernel, .. } if kernel == "add-offset"),
        "{error}"
    );
    let error = m
        .launch_prechecked(
            kernel,
            &config,
            &[PrecheckedArg::Buffer(&a, 0), PrecheckedArg::Bytes(&[1])],
        )
        .unwrap_err();
    assert!(error.to_string().contains("too few"), "{error}");

    // Bytes for the pointer parameter make a pointer into no allocation of the launch: it
    // faults when used, inside the executor's checked memory.
    let error = m
        .launch_prechecked(
            kernel,
            &config,
            &[
                PrecheckedArg::Bytes(&0x1234_5678_9abc_u64.to_le_bytes()),
                PrecheckedArg::Bytes(&n),
            ],
        )
        .unwrap_err();
    assert!(matches!(error, Error::Fault { .. }), "{error}");

    // An offset past the buffer, a device function and a kernel number the module lacks.
    let error = m
        .launch_prechecked(
            kernel,
            &config,
            &[PrecheckedArg::Buffer(&a, 17), PrecheckedArg::Bytes(&n)],
        )
        .unwrap_err();
    assert!(error.to_string().contains("beyond"), "{error}");
    let helper = m
        .module()
        .functions
        .iter()
        .position(|f| &*f.name == "helper")
        .unwrap();
    let args = [PrecheckedArg::Buffer(&a, 0), PrecheckedArg::Bytes(&n)];
    let error = m.launch_prechecked(helper, &config, &args).unwrap_err();
    assert!(matches!(error, Error::NoSuchKernel(_)), "{error}");
    let error = m.launch_prechecked(99, &config, &args).unwrap_err();
    assert!(matches!(error, Error::NoSuchKernel(_)), "{error}");
    assert_eq!(a.to_vec::<i32>().unwrap(), [1, 2, 3, 4]);
}
