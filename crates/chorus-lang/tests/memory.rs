//! Memory per input byte: the front end's peak memory stays a bounded multiple of the input
//! size, and an input over the size limit is an error, not an abort.

use chorus_lang::compile_str;

/// The process's peak resident memory in bytes (Linux: `VmHWM` of `/proc/self/status`).
fn peak_rss() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Kernel text of about `bytes` bytes: many small kernels of ordinary statements.
fn big_kernel_file(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 1024);
    let mut k = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "(defkernel kernel-{k} (void ((a float*) (b float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (when (< i n)
      (set (aref a i) (+ (* 2.0 (aref b i)) (aref a i) 1.0)))))
"
        ));
        k += 1;
    }
    text
}

/// Run alone (`cargo test -p chorus-lang --test memory -- --ignored --nocapture`): the peak is
/// the whole process's.
#[test]
#[ignore = "a measurement: run alone, it reads the process's peak memory"]
fn peak_memory_per_input_byte() {
    let megabytes: usize = std::env::var("CHORUS_MEASURE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let text = big_kernel_file(megabytes << 20);
    let before = peak_rss().expect("Linux /proc");
    let module = compile_str(&text, "big.lisp").expect("compiles");
    let after = peak_rss().expect("Linux /proc");
    let ratio = (after - before) as f64 / text.len() as f64;
    println!(
        "{} bytes of text, {} functions: peak {} MiB before, {} MiB after: {ratio:.1}x",
        text.len(),
        module.functions.len(),
        before >> 20,
        after >> 20
    );
}

#[test]
#[ignore = "a measurement: run alone"]
fn peak_memory_by_stage() {
    let text = big_kernel_file(2 << 20);
    let rss = || peak_rss().unwrap() >> 20;
    let current = || {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .unwrap()
            .to_string()
    };
    println!("start {} MiB {}", rss(), current());
    let forms = chorus_lang::read_str(&text, "big.lisp").unwrap();
    println!("read {} MiB {}", rss(), current());
    let expanded = chorus_lang::Expander::new().expand_unit(&forms).unwrap();
    println!("expanded {} MiB {}", rss(), current());
    let module = chorus_lang::check::check_module(&expanded).unwrap();
    println!("checked {} MiB {}", rss(), current());
    chorus_lang::check::validate(&module, &chorus_lang::target::Target::default_cuda()).unwrap();
    println!("validated {} MiB {}", rss(), current());

    drop(forms);
    drop(expanded);
    println!("dropped forms {} MiB {}", rss(), current());
}

#[test]
fn a_text_over_the_size_limit_is_an_error_at_its_start() {
    let text = big_kernel_file(4096);
    let error = chorus_lang::reader::read_str_limited(&text, "big.lisp", 1000).unwrap_err();
    assert_eq!(
        (&*error.span.file, error.span.line, error.span.column),
        ("big.lisp", 1, 1)
    );
    assert!(
        error.to_string().contains("more than the 1000 bytes"),
        "{error}"
    );
    assert!(chorus_lang::reader::read_str_limited(&text, "big.lisp", text.len()).is_ok());

    // The default limit, through compile_str: refused before any memory is spent on it.
    let huge = " ".repeat(chorus_lang::reader::MAX_SOURCE_BYTES + 1);
    let error = compile_str(&huge, "huge.lisp").unwrap_err();
    assert!(
        error.to_string().starts_with("huge.lisp:1:1: the text is"),
        "{error}"
    );
}
