//! `Program::from_file` takes a whole CL-Cuda style source: its kernels run, its host code is
//! skipped, and its errors name the file, line and column.

use chorus::{Arg, Backend, Direction, Launch, MemoryBlock, Program, with_backend};

const SOURCE: &str = r#"(in-package :cl-user)
(defpackage #:scale-example (:use :cl :cl-cuda))
(in-package #:scale-example)

(defparameter *factor* 5/2)
(defun host-side (x) (format t "~a~%" #\x) (* x *factor*))

(defglobal cl-cuda::offset 0.0)

(cl-cuda:defkernel scale (void ((a cl-cuda:float*) (n cl-cuda:int) (k chorus:float)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (when (< i n)
      (set (aref a i) (+ offset (* k (aref a i)))))))
"#;

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-from-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_whole_source_file_runs_on_the_cpu() {
    let path = write("scale.lisp", SOURCE);
    with_backend(Backend::Cpu, || -> chorus::Result<()> {
        let program = Program::from_file(&path)?;
        program.set_global_ref("offset", 0.5f32)?;
        let mut a = MemoryBlock::from_slice(&[1.0f32, 2.0, 3.0, 4.0])?;
        program.launch(
            "scale",
            &[a.as_arg(), Arg::value(4i32), Arg::value(2.0f32)],
            Launch::grid(1).block(4),
        )?;
        a.sync(Direction::DeviceToHost)?;
        assert_eq!(a.as_slice(), &[2.5, 4.5, 6.5, 8.5]);
        Ok(())
    })
    .unwrap();
    // The same text given to Program::new is kernel text only: its host syntax is an error.
    let e = Program::new(SOURCE, "scale.lisp").unwrap_err().to_string();
    assert!(
        e.contains("scale.lisp:2:13: `#:` (uninterned symbols)"),
        "{e}"
    );
}

#[test]
fn errors_of_a_whole_file_name_the_file_line_and_column() {
    let path = write(
        "bad.lisp",
        "(in-package :x)\n(defkernel f (void ((a float*)))\n  (set (aref a 0) #\\a))\n",
    );
    let e = Program::from_file(&path).unwrap_err().to_string();
    assert!(e.contains("bad.lisp:3:19: `#\\a` (a character)"), "{e}");
}
