//! Printer hardening (issue 9): deep expressions print without overflowing a 2 MiB stack (or
//! fail at a span), `#line` directives point compilers back to the kernel text, and naming is
//! linear in the number of names.

use chorus_lang::cuda::{print_module, print_module_for_compiler};

/// Runs `f` on a thread with a 2 MiB stack, where `Program::cuda_source` and launches run.
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

/// Checks `text` on a big stack (the front end's own limits are tested elsewhere; dropping a
/// deep IR recurses too), then prints it on a 2 MiB one, and drops the IR on the big stack.
fn print_on_2_mib_stack(text: &str) -> chorus_lang::Result<String> {
    let big = |f: Box<dyn FnOnce() + Send + '_>| {
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn_scoped(scope, f)
                .unwrap()
                .join()
                .unwrap()
        })
    };
    let mut module = None;
    big(Box::new(|| {
        module = Some(chorus_lang::compile_str(text, "deep.lisp"))
    }));
    let module = module.unwrap()?;
    let printed = on_2_mib_stack(|| print_module(&module).map(|p| p.code));
    big(Box::new(move || drop(module)));
    printed
}

fn cuda(text: &str) -> chorus_lang::Result<String> {
    let module = chorus_lang::compile_str(text, "deep.lisp")?;
    print_module(&module).map(|p| p.code)
}

#[test]
fn a_flat_sum_of_10_000_operands_prints_on_a_2_mib_stack() {
    let text = format!(
        "(defkernel f (int ()) (return (+ {})))",
        "1 ".repeat(10_000)
    );
    let code = print_on_2_mib_stack(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(code.contains("(((1 + 1) + 1) + 1)"), "{}", &code[..200]);
}

#[test]
fn statements_nested_1280_deep_print_on_a_2_mib_stack() {
    let bindings: String = (1..1280)
        .map(|i| format!("(x{i} (+ x{} 1)) ", i - 1))
        .collect();
    let text = format!(
        "(defkernel f (void ((a int*))) (let* ((x0 0) {bindings}) (set (aref a 0) x1279)))"
    );
    let code = print_on_2_mib_stack(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(code.contains("a[0] = x1279;"));
}

#[test]
fn a_sum_deeper_than_the_print_limit_is_an_error_at_its_span() {
    let text = format!(
        "(defkernel f (int ())\n  (return (+ {})))",
        "1 ".repeat(25_000)
    );
    let error = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn_scoped(scope, || cuda(&text).unwrap_err())
            .unwrap()
            .join()
            .unwrap()
    });
    assert_eq!(error.span.line, 2, "{error}");
    assert!(error.message.contains("too deep to print"), "{error}");
}

#[test]
fn line_directives_name_the_kernel_text() {
    let module = chorus_lang::compile_str(
        "(defkernel fill (void ((a int*)))\n  (set (aref a 0) 1)\n  (set (aref a 1) 2))",
        "dir/k \"1\".lisp",
    )
    .unwrap();
    let code = print_module_for_compiler(&module).unwrap().code;
    assert!(
        code.contains("#line 1 \"dir/k \\\"1\\\".lisp\"\n__global__ void fill(int* a)"),
        "{code}"
    );
    assert!(
        code.contains("#line 2 \"dir/k \\\"1\\\".lisp\"\n  a[0] = 1;\n#line 3"),
        "{code}"
    );
    assert!(!print_module(&module).unwrap().code.contains("#line"));
}

/// 20 000 kernels, 20 000 sibling `let`s of one name and 200 000 parameters (the issue's
/// figures were 288 s, 39 s and 46 s): each compiles and prints in time linear in its size
/// (twice the size takes under 2.6 times as long), and 20 000 kernels in under 5 s even in a debug
/// build. A measurement, so ignored; `cfamily::names` has a linear-time unit test.
#[test]
#[ignore]
fn naming_is_linear() {
    let time = |text: String| {
        let start = std::time::Instant::now();
        let module = chorus_lang::compile_str(&text, "many.lisp").unwrap();
        print_module(&module).unwrap();
        start.elapsed()
    };
    let kernels = |n: usize| -> String {
        (0..n)
            .map(|i| format!("(defkernel k{i} (void ((a int*))) (set (aref a 0) {i}))\n"))
            .collect()
    };
    let lets = |n: usize| -> String {
        let lets: String = (0..n)
            .map(|i| format!("(let ((x {i})) (set (aref a 0) x))"))
            .collect();
        format!("(defkernel f (void ((a int*))) {lets})")
    };
    let params = |n: usize| -> String {
        let params: String = (0..n).map(|i| format!("(p{i} int) ")).collect();
        format!("(defkernel f (void ((a int*) {params})) (set (aref a 0) 1))")
    };
    type Make<'a> = &'a dyn Fn(usize) -> String;
    let cases: [(&str, usize, Make); 3] = [
        ("kernels", 20_000, &kernels),
        ("sibling lets", 20_000, &lets),
        ("parameters", 200_000, &params),
    ];
    for (what, n, make) in cases {
        let half = time(make(n / 2));
        let full = time(make(n));
        println!("{n} {what}: {full:?} ({} half as many: {half:?})", n / 2);
        assert!(
            full.as_secs_f64() < 2.6 * half.as_secs_f64(),
            "{what}: {half:?} for {}, {full:?} for {n}",
            n / 2
        );
        if what == "kernels" {
            assert!(full.as_secs() < 5, "{n} kernels: {full:?}");
        }
    }
}
