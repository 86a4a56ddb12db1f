//! The `chorus` binary, run as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn chorus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"))
        .output()
        .expect("the chorus binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn compile_prints_the_cuda_c_of_the_seed_vector_addition() {
    let out = chorus(&["compile", "vec-add.lisp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!("vec_add_cu", stdout(&out));
}

#[test]
fn compile_writes_the_output_file() {
    let dir = std::env::temp_dir().join(format!("chorus-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("vec-add.cu");
    let out = chorus(&[
        "compile",
        data("vec-add.lisp").to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ]);
    let written = std::fs::read_to_string(&target);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        written.unwrap(),
        stdout(&chorus(&["compile", "vec-add.lisp"]))
    );
}

#[test]
fn a_type_error_prints_file_line_column_and_exits_with_1() {
    let out = chorus(&["compile", "type-error.lisp"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let message = stderr(&out);
    assert!(message.starts_with("type-error.lisp:3:"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let out = chorus(&["compile", "no-such-file.lisp"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("chorus: cannot read no-such-file.lisp:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_with_2() {
    for args in [
        &[][..],
        &["frobnicate"][..],
        &["compile"][..],
        &["compile", "a.lisp", "b.lisp"][..],
        &["compile", "vec-add.lisp", "-o"][..],
        &["compile", "vec-add.lisp", "--fast"][..],
        &["expand"][..],
    ] {
        let out = chorus(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains("usage: chorus compile FILE"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let help = chorus(&["help"]);
    assert!(help.status.success());
    assert!(stdout(&help).starts_with("usage: chorus compile FILE"));
}

#[test]
fn expand_prints_each_top_level_form_expanded() {
    let out = chorus(&["expand", "macros.lisp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "(defkernel count-up (void ((a int*)))\n  \
         (if (< thread-idx-x 4) (progn (set (aref a thread-idx-x) (+ (aref a thread-idx-x) 1)))))\n"
    );
}

#[test]
fn cache_path_and_clear_use_the_cache_directory() {
    let dir = std::env::temp_dir().join(format!("chorus-cli-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["a.ptx", "b.cubin", "keep.txt"] {
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(args)
            .env("CHORUS_CACHE_DIR", &dir)
            .output()
            .unwrap()
    };
    let path = run(&["cache", "path"]);
    let clear = run(&["cache", "clear"]);
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(stdout(&path), format!("{}\n", dir.display()));
    assert!(clear.status.success(), "{}", stderr(&clear));
    assert_eq!(
        stdout(&clear),
        format!("removed 2 cached image(s) from {}\n", dir.display())
    );
    assert_eq!(left, ["keep.txt"]);
    assert_eq!(run(&["cache", "purge"]).status.code(), Some(2));
}

/// Lists devices where a driver loads; elsewhere says why not and exits with 1.
#[test]
fn devices_lists_devices_or_says_why_not() {
    let out = chorus(&["devices"]);
    match out.status.code() {
        Some(0) => {
            let text = stdout(&out);
            assert!(text.starts_with("CUDA driver "), "{text}");
            let count: usize = text
                .split(", ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(text.lines().count(), 1 + count, "{text}");
        }
        Some(1) => assert!(stderr(&out).starts_with("chorus: "), "{}", stderr(&out)),
        other => panic!("exit status {other:?}: {}", stderr(&out)),
    }
    assert_eq!(chorus(&["devices", "extra"]).status.code(), Some(2));
}

#[test]
fn compile_reads_standard_input_for_a_dash() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["compile", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read_to_string(data("vec-add.lisp")).unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(stdout(&out), stdout(&chorus(&["compile", "vec-add.lisp"])));
}

#[test]
fn expand_reports_errors_with_their_position() {
    let dir = std::env::temp_dir().join(format!("chorus-cli-expand-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("unbalanced.lisp");
    std::fs::write(&file, "(defkernel f (void ())\n  (return)").unwrap();
    let out = chorus(&["expand", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let message = stderr(&out);
    assert!(
        message.starts_with(&format!("{}:", file.display())),
        "{message}"
    );
    assert_eq!(stdout(&out), "");
}
