//! The kernel manager's compile step and its redefinition rules, with a compiler but no GPU
//! (NVRTC or nvcc found on this machine; skips, saying so, otherwise). The loaded states are
//! tested on the GPU in gpu_lang.rs.

use chorus_cuda::{Error, KernelManager, State};

fn forms(text: &str) -> Vec<chorus_lang::Form> {
    chorus_lang::read_str(text, "manager.lisp").unwrap()
}

const KERNEL: &str = "(defkernel fill (void ((a int*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n) (set (aref a i) i))))";

#[test]
fn compile_and_redefine() {
    if !(chorus_cuda::nvrtc_available() || chorus_cuda::nvcc_available()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but no CUDA compiler was found"
        );
        eprintln!("skipped: no NVRTC or nvcc found");
        return;
    }
    let mut m = KernelManager::new("manager");
    for form in forms(KERNEL) {
        m.define_form(form).unwrap();
    }
    assert_eq!(m.state(), State::Initial);
    assert_eq!(m.source(), None);
    m.compile_module().unwrap();
    assert_eq!(m.state(), State::Compiled);
    assert!(m.source().unwrap().contains("fill"), "{:?}", m.source());
    let e = m.compile_module().unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel manager: cannot compile-module in the compiled state"
    );
    assert!(matches!(
        m.load_function(),
        Err(Error::IllegalTransition {
            state: State::Compiled,
            ..
        })
    ));
    assert!(matches!(
        m.unload(),
        Err(Error::IllegalTransition {
            state: State::Compiled,
            ..
        })
    ));

    // The same definition read from elsewhere (other spans) changes nothing.
    for form in forms(&format!("\n\n   {KERNEL}")) {
        m.define_form(form).unwrap();
    }
    assert_eq!(m.state(), State::Compiled);

    // A new definition, or a changed one, needs a new compile.
    m.define_symbol_macro(forms("(defkernel-symbol-macro two 2)").remove(0))
        .unwrap();
    assert_eq!(m.state(), State::Initial);
    m.compile_module().unwrap();
    m.define_function(
        forms(&KERNEL.replace("(set (aref a i) i)", "(set (aref a i) two)")).remove(0),
    )
    .unwrap();
    assert_eq!(m.state(), State::Initial);
    m.compile_module().unwrap();
    assert_eq!(m.state(), State::Compiled);

    // Without a driver, loading fails and the manager stays compiled.
    if chorus_cuda::sdk_not_found() {
        assert!(matches!(m.load_module(), Err(Error::SdkNotFound { .. })));
        assert_eq!(m.state(), State::Compiled);
    }
}

#[test]
fn checker_errors_surface_with_positions() {
    let mut m = KernelManager::new("broken");
    m.define_form(
        forms("(defkernel bad (void ((a int*)))\n  (set (aref a 0) undefined-variable))").remove(0),
    )
    .unwrap();
    let e = m.compile_module().unwrap_err();
    assert!(matches!(e, Error::Language(_)), "{e}");
    assert!(e.to_string().starts_with("manager.lisp:2:"), "{e}");
    assert_eq!(m.state(), State::Initial);
}
