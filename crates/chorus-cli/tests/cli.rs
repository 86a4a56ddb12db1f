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
        &["cache"][..],
    ] {
        let out = chorus(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let message = stderr(&out);
        assert!(
            message.contains("Usage: chorus") || message.contains("try '--help'"),
            "{args:?}: {message}"
        );
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    let help = chorus(&["help"]);
    assert!(help.status.success());
    assert!(stdout(&help).contains("Usage: chorus <COMMAND>"));
}

#[test]
fn version_and_each_commands_help_print_and_exit_with_0() {
    let version = chorus(&["--version"]);
    assert!(version.status.success(), "{}", stderr(&version));
    assert_eq!(
        stdout(&version),
        format!("chorus {}\n", env!("CARGO_PKG_VERSION"))
    );
    for (command, usage) in [
        ("compile", "Usage: chorus compile [OPTIONS] <FILE>"),
        ("expand", "Usage: chorus expand [OPTIONS] <FILE>"),
        ("devices", "Usage: chorus devices"),
        ("cache", "Usage: chorus cache <COMMAND>"),
    ] {
        for help in [vec![command, "--help"], vec!["help", command]] {
            let out = chorus(&help);
            assert!(out.status.success(), "{help:?}: {}", stderr(&out));
            assert!(stdout(&out).contains(usage), "{help:?}: {}", stdout(&out));
            assert_eq!(stderr(&out), "", "{help:?}");
        }
    }
}

/// A fresh directory under the temp dir for one test (removed by the test).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn compile_refuses_an_output_that_is_the_input() {
    let dir = scratch("same-file");
    let kernel = dir.join("k.lisp");
    let text = std::fs::read_to_string(data("vec-add.lisp")).unwrap();
    std::fs::write(&kernel, &text).unwrap();
    let hard_link = dir.join("hard.lisp");
    std::fs::hard_link(&kernel, &hard_link).unwrap();
    #[cfg_attr(
        not(unix),
        expect(unused_mut, reason = "only Unix adds a symbolic link")
    )]
    let mut outputs = vec![
        kernel.clone(),
        dir.join(".").join("k.lisp"),
        dir.join("..").join(dir.file_name().unwrap()).join("k.lisp"),
        hard_link,
    ];
    #[cfg(unix)]
    {
        let link = dir.join("link.cu");
        std::os::unix::fs::symlink(&kernel, &link).unwrap();
        outputs.push(link);
    }
    let mut results = Vec::new();
    for output in &outputs {
        let out = chorus(&[
            "compile",
            kernel.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ]);
        results.push((output.clone(), out));
    }
    // The kernel file as standard input, written to itself.
    let stdin = std::fs::File::open(&kernel).unwrap();
    let from_stdin = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["compile", "-", "-o", kernel.to_str().unwrap()])
        .stdin(stdin)
        .output()
        .unwrap();
    results.push((kernel.clone(), from_stdin));
    let after = std::fs::read_to_string(&kernel).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(after, text, "the kernel file is untouched");
    for (output, out) in results {
        assert_eq!(out.status.code(), Some(1), "{}", output.display());
        assert!(
            stderr(&out).contains("is the input file"),
            "{}: {}",
            output.display(),
            stderr(&out)
        );
    }
}

#[test]
fn compile_replaces_the_output_whole_and_keeps_it_on_failure() {
    let dir = scratch("replace");
    let output = dir.join("out.cu");
    std::fs::write(&output, "old").unwrap();
    // A second name of the old output: an output rewritten in place would change it too; one
    // replaced by a rename leaves it alone.
    let other_name = dir.join("other-name.cu");
    std::fs::hard_link(&output, &other_name).unwrap();
    let out_path = output.to_str().unwrap();
    let failed = chorus(&["compile", "type-error.lisp", "-o", out_path]);
    let after_failure = std::fs::read_to_string(&output).unwrap();
    let written = chorus(&["compile", "vec-add.lisp", "-o", out_path]);
    let after_success = std::fs::read_to_string(&output).unwrap();
    let other = std::fs::read_to_string(&other_name).unwrap();
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(after_failure, "old");
    assert!(written.status.success(), "{}", stderr(&written));
    assert_eq!(after_success, stdout(&chorus(&["compile", "vec-add.lisp"])));
    assert_eq!(
        other, "old",
        "the output was replaced, not rewritten in place"
    );
    assert_eq!(left.len(), 2, "no temporary file is left: {left:?}");
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let dir = scratch("bom");
    let kernel = dir.join("bom.lisp");
    let text = std::fs::read_to_string(data("vec-add.lisp")).unwrap();
    std::fs::write(&kernel, format!("\u{feff}{text}")).unwrap();
    let broken = dir.join("bom-error.lisp");
    std::fs::write(&broken, "\u{feff}(defkernel f (void ()) (return 1))\n").unwrap();
    let out = chorus(&["compile", kernel.to_str().unwrap()]);
    let error = chorus(&["compile", broken.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), stdout(&chorus(&["compile", "vec-add.lisp"])));
    // Columns count from the first character after the mark.
    assert!(
        stderr(&error).starts_with(&format!("{}:1:", broken.display())),
        "{}",
        stderr(&error)
    );
    assert!(!stderr(&error).contains("1:1:"), "{}", stderr(&error));
}

#[test]
fn expanded_gensyms_read_back_and_compile() {
    let out = chorus(&["expand", "gensyms.lisp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expanded = stdout(&out);
    assert!(!expanded.contains("#:"), "{expanded}");
    // The program's own `g1` keeps its name; the gensyms get names of their own.
    assert!(expanded.contains("((x int*) (g1 int))"), "{expanded}");
    let dir = scratch("gensyms");
    let file = dir.join("expanded.lisp");
    std::fs::write(&file, &expanded).unwrap();
    let compiled = chorus(&["compile", file.to_str().unwrap()]);
    let expanded_again = chorus(&["expand", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(compiled.status.success(), "{}", stderr(&compiled));
    assert!(stdout(&compiled).contains("void swap_pairs(int* x, int g1)"));
    // Nothing is left to expand: the printed expansion is the program itself.
    assert_eq!(stdout(&expanded_again), expanded);
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

/// Runs `chorus ARGS` with `CHORUS_CACHE_DIR` set to `dir`.
fn chorus_with_cache(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(args)
        .env("CHORUS_CACHE_DIR", dir)
        .output()
        .unwrap()
}

#[test]
fn cache_path_and_clear_use_the_cache_directory_and_delete_only_chorus_entries() {
    let dir = scratch("cache");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let key = "ab".repeat(32);
    // The layout of the cache's entries: `KEY.EXT`, starting with the entry magic.
    let entries = [format!("{key}.ptx"), format!("{key}.cubin")];
    for entry in &entries {
        std::fs::write(dir.join(entry), b"CHORUSK\x01 rest of the entry").unwrap();
    }
    // A project's own files, some with the extensions the cache uses.
    let foreign = [
        "a.ptx",
        "b.cubin",
        "build.tmp",
        "keep.txt",
        &format!("{key}.ptx.notes.tmp"),
    ];
    for name in foreign {
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    let path = chorus_with_cache(&dir, &["cache", "path"]);
    let clear = chorus_with_cache(&dir, &["cache", "clear"]);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(stdout(&path), format!("{}\n", dir.display()));
    assert!(clear.status.success(), "{}", stderr(&clear));
    assert_eq!(
        stdout(&clear),
        format!("removed 2 cached image(s) from {}\n", dir.display())
    );
    let mut expected: Vec<String> = foreign.iter().map(|n| n.to_string()).collect();
    expected.sort();
    assert_eq!(left, expected);
    assert_eq!(
        chorus_with_cache(&dir, &["cache", "purge"]).status.code(),
        Some(2)
    );
}

#[cfg(unix)]
#[test]
fn cache_clear_refuses_a_directory_others_may_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("shared-cache");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let entry = dir.join(format!("{}.ptx", "cd".repeat(32)));
    std::fs::write(&entry, b"CHORUSK\x01 planted").unwrap();
    let clear = chorus_with_cache(&dir, &["cache", "clear"]);
    let kept = entry.exists();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(clear.status.code(), Some(1));
    assert!(
        stderr(&clear).contains("may be written by other users"),
        "{}",
        stderr(&clear)
    );
    assert!(kept);
}

/// Lists every backend: its devices, each with its target, or why it has none; the CPU is always
/// there, and the default device is marked. A selection that cannot run fails after the list.
#[test]
fn devices_lists_every_backend_and_marks_the_default() {
    let out = chorus(&["devices"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for backend in ["CUDA: ", "Metal: ", "HIP: ", "CPU: 1 device(s)"] {
        assert!(
            text.lines().any(|l| l.starts_with(backend)),
            "{backend}: {text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("  CPU device 0: ") && l.contains(", target cpu")),
        "{text}"
    );
    assert_eq!(text.matches("[default]").count(), 1, "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .arg("devices")
        .env("CHORUS_BACKEND", "cpu")
        .env("CHORUS_CPU_DEVICES", "2")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("CPU: 2 device(s)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("  CPU device 0: ") && l.ends_with("[default]")),
        "{text}"
    );
    // A selection that names a backend that cannot run: the list, then the reason, status 1.
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .arg("devices")
        .env("CHORUS_BACKEND", "metal")
        .output()
        .unwrap();
    if !stdout(&out).lines().any(|l| l.starts_with("Metal: 1")) {
        assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
        assert!(stdout(&out).contains("CPU: "), "{}", stdout(&out));
        assert!(
            stderr(&out).starts_with("chorus: the selected device: "),
            "{}",
            stderr(&out)
        );
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

#[test]
fn compile_takes_a_whole_source_file_and_lists_the_skipped_forms_with_verbose() {
    let out = chorus(&["compile", "--verbose", "whole-file.lisp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("__global__ void twice(float* a, int n)"));
    assert_eq!(
        stderr(&out),
        "whole-file.lisp:2:1: skipped in-package\n\
         whole-file.lisp:3:1: skipped defpackage whole-file\n\
         whole-file.lisp:4:1: skipped in-package\n\
         whole-file.lisp:6:1: skipped defvar *n*\n\
         whole-file.lisp:7:1: skipped defun init\n\
         whole-file.lisp:14:1: skipped defmacro host-only\n\
         whole-file.lisp:15:1: warning: the host macro `host-only` could not be expanded, so any \
         kernel it defines is missing: whole-file.lisp:14:37: in macro `host-only` (expanding the \
         call at whole-file.lisp:15:1): unknown macro-time function `host-function`; macro code \
         runs at expansion time and can call only the built-in list, number and string functions \
         and its own local functions (flet, labels)\n\
         whole-file.lisp:17:1: skipped defun main\n"
    );
    // Without --verbose only the warning is printed, and the CUDA C is the same.
    let quiet = chorus(&["compile", "whole-file.lisp"]);
    assert!(quiet.status.success());
    assert_eq!(stdout(&quiet), stdout(&out));
    assert_eq!(stderr(&quiet).lines().count(), 1);
    assert!(stderr(&quiet).starts_with("whole-file.lisp:15:1: warning: the host macro"));
}

#[test]
fn a_misspelled_kernel_definition_in_a_whole_file_is_an_error() {
    let dir = std::env::temp_dir().join(format!("chorus-cli-typo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("typo.lisp");
    std::fs::write(&file, "(in-package :x)\n(defkernal f (void ()) (return))\n").unwrap();
    let out = chorus(&["compile", "--verbose", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains(
            "typo.lisp:2:2: `defkernal` is not a kernel definition (did you mean `defkernel`?)"
        ),
        "{err}"
    );
}

#[test]
fn a_shipped_library_is_defined_before_the_file_and_errors_keep_their_own_lines() {
    let dir = scratch("library");
    let file = dir.join("tiles.lisp");
    // Line 3 calls the library's `tc-unroll`; line 5 holds a type error of the file's own.
    std::fs::write(
        &file,
        "(defkernel tiles (void ((a float*)))\n  (let ((t0 0))\n    (tc-unroll (i 0 4) (set (aref a i) 1.0))))\n\
         (defkernel broken (void ((a float*)))\n  (set (aref a 0) (aref a)))\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    // Without the library the call is unknown; with it, the file compiles up to its own error,
    // reported at the file's line 5, not shifted by the library's lines.
    let out = chorus(&["compile", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(":3:5:"), "{}", stderr(&out));
    let out = chorus(&["compile", "--library", "tensor-core", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("tiles.lisp:5:"), "{}", stderr(&out));
    std::fs::write(
        &file,
        "(defkernel tiles (void ((a float*)))\n  (tc-unroll (i 0 4) (set (aref a i) 1.0)))\n",
    )
    .unwrap();
    let out = chorus(&["compile", "-l", "tensor-core", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("a[3] = 1.0f"), "{}", stdout(&out));
    let out = chorus(&["expand", "-l", "tensor-core", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("tc-unroll"), "{}", stdout(&out));
    let out = chorus(&["compile", "-l", "tensr", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no library called `tensr` (the libraries are: tensor-core)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn compile_prints_hip_and_msl_for_other_targets_and_refuses_what_they_lack() {
    let out = chorus(&["compile", "--target", "hip:gfx90a", "vec-add.lisp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("#include <hip/hip_runtime.h>"),
        "{}",
        stdout(&out)
    );
    let out = chorus(&["compile", "-t", "metal", "vec-add.lisp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("#include <metal_stdlib>"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("kernel void"), "{}", stdout(&out));
    // The CUDA default and an explicit sm_90 print the same C.
    let default = chorus(&["compile", "vec-add.lisp"]);
    let sm90 = chorus(&["compile", "-t", "sm_90", "vec-add.lisp"]);
    assert_eq!(stdout(&default), stdout(&sm90));
    // What a target lacks is an error at its span, before any printing.
    let dir = scratch("targets");
    let file = dir.join("bf16.lisp");
    std::fs::write(
        &file,
        "(defkernel k (void ((a bfloat16*)))\n  (set (aref a 0) (float-to-bfloat16 1.0)))\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    assert!(chorus(&["compile", "-t", "sm_80", path]).status.success());
    let out = chorus(&["compile", "-t", "hip:gfx1030", path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bf16.lisp:1:") && stderr(&out).contains("needs bfloat16"),
        "{}",
        stderr(&out)
    );
    for (target, said) in [
        ("sm_9", "unknown target `sm_9`; the targets are cuda, sm_XY"),
        ("cpu", "there is no source to print for `cpu`"),
    ] {
        let out = chorus(&["compile", "-t", target, "vec-add.lisp"]);
        assert_eq!(out.status.code(), Some(1), "{target}");
        assert!(stderr(&out).contains(said), "{target}: {}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
