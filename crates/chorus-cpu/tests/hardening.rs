//! Regression tests for the executor defects of the hardening issue (#9): hostile `printf`
//! arguments, panics on worker threads, deep expressions, allocation ids, `:shared` globals,
//! bounds checks at huge offsets, launches from several host threads, and NUL in formats.

use chorus_cpu::{CpuModule, DeviceBuffer, Error, KernelArg, LaunchConfig};
use std::io::Write;
use std::sync::{Arc, Mutex};

fn module(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

/// A writer that keeps what it is given.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("capture lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("capture lock").clone()).expect("UTF-8 output")
    }
}

/// Runs `f` on a thread with a 2 MiB stack (`std::thread`'s default, where programs launch).
fn on_2_mib_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(scope, f)
            .expect("a test thread starts")
            .join()
            .expect("the test thread does not panic")
    })
}

#[test]
fn printf_precision_beyond_the_bound_is_clamped_not_a_panic() {
    let m = module(
        "(defkernel k (void ((x float)))
           (printf \"%.70000f|\\n\" x))",
    );
    let out = Capture::default();
    m.set_printf_output(Box::new(out.clone()));
    m.launch(
        "k",
        &LaunchConfig::linear(1, 1),
        &[KernelArg::value(1.5f32)],
    )
    .unwrap();
    let text = out.text();
    assert!(
        text.starts_with("1.5000"),
        "{}",
        &text[..20.min(text.len())]
    );
    assert!(
        text.len() <= chorus_cpu::MAX_PRINTF_FIELD + 8,
        "{}",
        text.len()
    );
}

#[test]
fn printf_widths_from_the_format_or_device_memory_are_clamped() {
    let m = module(
        "(defkernel k (void ((w int*)))
           (printf \"[%2147483647d]\\n\" 7)
           (printf \"[%*d]\\n\" (aref w 0) 8)
           (printf \"[%.*d]\\n\" (aref w 0) 9))",
    );
    let out = Capture::default();
    m.set_printf_output(Box::new(out.clone()));
    let w = DeviceBuffer::from_slice(&[i32::MAX]).unwrap();
    m.launch("k", &LaunchConfig::linear(1, 1), &[KernelArg::Buffer(&w)])
        .unwrap();
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{}", text.len());
    let bound = chorus_cpu::MAX_PRINTF_FIELD;
    assert_eq!(lines[0].len(), bound + 2);
    assert!(lines[0].ends_with(" 7]"));
    assert_eq!(lines[1].len(), bound + 2);
    assert!(lines[2].ends_with("09]") && lines[2].len() == bound + 2);
}

/// A printf writer that panics, as user code on a worker thread may.
struct Panicking;

impl Write for Panicking {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        panic!("the output writer gave up");
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_panic_on_a_worker_is_an_error_of_that_launch() {
    for workers in [1, 2] {
        let mut m = module(
            "(defkernel k (void ((n int)))
               (printf \"%d\\n\" n))",
        );
        m.set_workers(workers);
        m.set_printf_output(Box::new(Panicking));
        let err = m
            .launch("k", &LaunchConfig::linear(4, 32), &[KernelArg::value(1i32)])
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Launch { .. }), "{text}");
        assert!(
            text.contains("kernel `k`") || text.contains("launch of `k`"),
            "{text}"
        );
        assert!(text.contains("the output writer gave up"), "{text}");
        // The module is still usable.
        m.set_printf_output(Box::new(Capture::default()));
        m.launch("k", &LaunchConfig::linear(1, 1), &[KernelArg::value(1i32)])
            .unwrap();
    }
}

fn flat_sum(operands: usize) -> String {
    format!(
        "(defkernel k (void ((a int*))) (set (aref a 0) (+ {})))",
        "1 ".repeat(operands)
    )
}

#[test]
fn deep_expressions_lower_on_a_2_mib_stack() {
    let ir = chorus_lang::compile_str(&flat_sum(3_000), "deep.lisp").unwrap();
    let ir = Arc::new(ir);
    let sum = on_2_mib_stack(move || {
        let m = CpuModule::new(ir).unwrap_or_else(|e| panic!("{e}"));
        let a = DeviceBuffer::alloc(4).unwrap();
        m.launch("k", &LaunchConfig::linear(1, 1), &[KernelArg::Buffer(&a)])
            .unwrap();
        a.to_vec::<i32>().unwrap()[0]
    });
    assert_eq!(sum, 3_000);
}

#[test]
fn expressions_as_deep_as_the_budget_lower() {
    let depth = chorus_cpu::MAX_EXPRESSION_DEPTH - 10;
    let ir = Arc::new(chorus_lang::compile_str(&flat_sum(depth), "deep.lisp").unwrap());
    let sum = on_2_mib_stack({
        let ir = ir.clone();
        move || {
            let m = CpuModule::new(ir).unwrap_or_else(|e| panic!("{e}"));
            let a = DeviceBuffer::alloc(4).unwrap();
            m.launch("k", &LaunchConfig::linear(1, 1), &[KernelArg::Buffer(&a)])
                .unwrap();
            a.to_vec::<i32>().unwrap()[0]
        }
    });
    assert_eq!(sum as usize, depth);
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || drop(ir))
        .expect("a thread starts")
        .join()
        .expect("the IR drops");
}

#[test]
fn expressions_deeper_than_the_budget_are_a_located_error() {
    let depth = chorus_cpu::MAX_EXPRESSION_DEPTH + 10;
    let ir = Arc::new(chorus_lang::compile_str(&flat_sum(depth), "deep.lisp").unwrap());
    let err = on_2_mib_stack({
        let ir = ir.clone();
        move || CpuModule::new(ir).unwrap_err()
    });
    // Dropping an IR this deep recurses (the front end's to bound): do it on a big stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || drop(ir))
        .expect("a thread starts")
        .join()
        .expect("the IR drops");
    let text = err.to_string();
    assert!(matches!(err, Error::Unsupported { .. }), "{text}");
    assert!(text.starts_with("deep.lisp:1:"), "{text}");
    assert!(text.contains("nests more than"), "{text}");
}

#[test]
fn allocation_ids_are_recycled() {
    // More allocations than a pointer has ids for: each is freed before the next.
    for i in 0..(1u32 << 24) + 10 {
        let b = DeviceBuffer::alloc(8).unwrap_or_else(|e| panic!("allocation {i}: {e}"));
        drop(b);
    }
}

#[test]
fn a_shared_global_is_one_variable_per_block() {
    let mut m = module(
        "(defglobal total 0 :shared)
         (defkernel k (void ((out int*)))
           (if (= thread-idx-x 0) (set total 0))
           (syncthreads)
           (atomic-add (pointer total) 1)
           (syncthreads)
           (set (aref out (+ (* block-idx-x block-dim-x) thread-idx-x)) total))",
    );
    m.set_workers(4);
    let blocks = 512;
    let out = DeviceBuffer::alloc(blocks * 64 * 4).unwrap();
    m.launch(
        "k",
        &LaunchConfig::linear(blocks as u32, 64),
        &[KernelArg::Buffer(&out)],
    )
    .unwrap();
    let v = out.to_vec::<i32>().unwrap();
    let wrong = v.iter().filter(|&&x| x != 64).count();
    assert_eq!(wrong, 0, "{wrong} of {} elements are wrong", v.len());
    let err = m.global_bytes("total").unwrap_err();
    assert!(matches!(err, Error::GlobalAccess { .. }), "{err}");
}

fn write_at(index: i64) -> Result<(), Error> {
    let m = module(
        "(defkernel k (void ((a float*) (i int64)))
           (set (aref a i) 1.0))",
    );
    let a = DeviceBuffer::alloc(16 * 4).unwrap();
    let r = m.launch(
        "k",
        &LaunchConfig::linear(1, 1),
        &[KernelArg::Buffer(&a), KernelArg::value(index)],
    );
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0; 16], "index {index}");
    r
}

#[test]
fn bounds_checks_do_not_wrap_at_huge_offsets() {
    for index in [
        1i64 << 38,
        1 << 62,
        (1 << 38) + 1,
        -(1 << 38),
        i64::MIN,
        i64::MAX,
    ] {
        let err = write_at(index).expect_err("a huge index faults");
        assert!(matches!(err, Error::Fault { .. }), "{index}: {err}");
    }
}

#[test]
fn a_negative_index_is_named_as_negative() {
    let text = write_at(-1).unwrap_err().to_string();
    assert!(text.contains("element index -1"), "{text}");
}

#[test]
fn launches_from_several_host_threads_do_not_overlap() {
    let m = module(
        "(defkernel bump (void ((c int*)))
           (let ((v (aref c 0)) (spin 0))
             (for (i 0 (< i 400) (+ i 1))
               (set spin (+ spin i)))
             (set (aref c 0) (+ v 1 (* 0 spin)))))",
    );
    let c = DeviceBuffer::alloc(4).unwrap();
    let (threads, each) = (4, 50);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    m.launch(
                        "bump",
                        &LaunchConfig::linear(1, 1),
                        &[KernelArg::Buffer(&c)],
                    )
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(c.to_vec::<i32>().unwrap()[0], threads * each);
}

#[test]
fn printf_stops_at_a_nul_in_the_format() {
    let m = module(
        "(defkernel k (void ((n int)))
           (printf \"ab%d\\0cd%d\\n\" n n)
           (printf \"|\\n\"))",
    );
    let out = Capture::default();
    m.set_printf_output(Box::new(out.clone()));
    m.launch("k", &LaunchConfig::linear(1, 1), &[KernelArg::value(5i32)])
        .unwrap();
    assert_eq!(out.text(), "ab5|\n");
}
