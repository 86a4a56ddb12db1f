//! Enough stack for the passes that recurse over forms: the macro expander and the checker.
//!
//! Macros can nest forms far deeper than text does, and macro-time Lisp can recurse, so deep but
//! legal input needs a big stack: [`on_big_stack`] runs a pass on a fresh thread with a
//! [`BIG_STACK_SIZE`] stack. Starting that thread costs more than the whole front end takes for
//! a small kernel, so a pass first tries the caller's thread with `try_on_small_stack` when it
//! can tell that its recursion stays shallow: it calls `leave_small_stack` before it recurses
//! deeper than [`SMALL_STACK_DEPTH`] or runs code whose stack use it cannot bound (macro-time
//! Lisp, a macro written in Rust by a user), which abandons the attempt; the pass then starts
//! again from the beginning on a big stack.

use std::cell::Cell;

/// How deeply a pass may recurse over forms on the caller's thread. Safe for the 2 MiB stacks of
/// spawned threads (the default of `std::thread` and of `cargo test`), in debug builds too; the
/// tests check it on such a thread.
pub const SMALL_STACK_DEPTH: usize = 200;

/// The stack of the big-stack thread: enough for forms nested as deeply as the macro expander
/// allows ([`crate::expand::MAX_FORM_DEPTH`]) and for macro-time recursion up to its limits.
pub const BIG_STACK_SIZE: usize = 256 << 20;

thread_local! {
    /// Whether this thread is running a pass attempt of [`try_on_small_stack`].
    static ON_SMALL_STACK: Cell<bool> = const { Cell::new(false) };
}

/// The payload that unwinds an abandoned small-stack attempt.
struct NeedsBigStack;

/// Whether the current pass runs on the caller's (small) stack, so must not recurse deeply.
pub(crate) fn on_small_stack() -> bool {
    ON_SMALL_STACK.get()
}

/// Abandons the current small-stack attempt, if there is one (see [`try_on_small_stack`]).
pub(crate) fn leave_small_stack() {
    if on_small_stack() {
        // `resume_unwind` does not run the panic hook: nothing is printed.
        std::panic::resume_unwind(Box::new(NeedsBigStack));
    }
}

/// Runs `f` on the caller's thread; `None` if `f` called [`leave_small_stack`] (whatever `f`
/// changed is the caller's to undo before it runs the pass again on a big stack), or if no
/// attempt can be made: one is already running on this thread, or panics abort.
pub(crate) fn try_on_small_stack<T>(f: impl FnOnce() -> T) -> Option<T> {
    if cfg!(not(panic = "unwind")) || on_small_stack() {
        return None;
    }
    /// Clears the flag however the attempt ends.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            ON_SMALL_STACK.set(false);
        }
    }
    ON_SMALL_STACK.set(true);
    let _reset = Reset;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) if payload.is::<NeedsBigStack>() => None,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Runs `f` on a new thread named `name` with a [`BIG_STACK_SIZE`] stack; a panic in `f` goes on
/// in the caller. An error if no such thread can be started.
pub fn on_big_stack<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name(name.into())
            .stack_size(BIG_STACK_SIZE)
            .spawn_scoped(scope, f)?;
        Ok(handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// Runs `f` on a thread with a 2 MiB stack, the smallest a pass may meet on the caller's
/// thread (`std::thread`'s and `cargo test`'s default).
#[cfg(test)]
pub(crate) fn on_2_mib_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(scope, f)
            .expect("a test thread starts")
            .join()
            .expect("the test thread does not panic")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::Expander;
    use crate::reader::read_str;

    /// A kernel whose body nests `depth` `progn`s around a `when` and a `let*`, so that the
    /// walker nests `depth` + 7 calls of `walk` (the innermost at depth `depth` + 6).
    fn nested_kernel(depth: usize) -> String {
        format!(
            "(defkernel f (void ((a int*))) {}(when (< 0 1) (let* ((x 1) (y x)) (set (aref a 0) y))){})",
            "(progn ".repeat(depth),
            ")".repeat(depth)
        )
    }

    #[test]
    fn expansion_stays_on_a_2_mib_stack_up_to_the_limit() {
        let forms = read_str(&nested_kernel(SMALL_STACK_DEPTH - 7), "deep.lisp").unwrap();
        let expanded = on_2_mib_stack(|| {
            try_on_small_stack(|| Expander::new().expand_unit_here(&forms))
                .expect("the expander does not leave the small stack")
        });
        let expanded = expanded.unwrap();
        let big = expansion_on_big_stack_for_tests(&forms);
        assert_eq!(expanded.len(), 1);
        assert_eq!(expanded[0].to_string(), big[0].to_string());
    }

    /// The expansion of `forms` on a big stack, as the small-stack attempt must produce it.
    fn expansion_on_big_stack_for_tests(forms: &[crate::Form]) -> Vec<crate::Form> {
        on_big_stack("test", || Expander::new().expand_unit_here(forms))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn expansion_beyond_the_limit_leaves_the_small_stack() {
        let forms = read_str(&nested_kernel(SMALL_STACK_DEPTH - 6), "deep.lisp").unwrap();
        let attempt = try_on_small_stack(|| Expander::new().expand_unit_here(&forms));
        assert!(attempt.is_none());
        assert!(
            !on_small_stack(),
            "the flag is cleared after an abandoned attempt"
        );
        assert!(Expander::new().expand_unit(&forms).is_ok());
    }

    #[test]
    fn macro_time_lisp_leaves_the_small_stack() {
        let forms = read_str(
            "(defkernelmacro twice (x) `(* 2 ,x))
             (defkernel f (int ()) (return (twice 3)))",
            "lisp.lisp",
        )
        .unwrap();
        let mut expander = Expander::new();
        assert!(try_on_small_stack(|| expander.expand_unit_here(&forms)).is_none());
        let expanded = Expander::new().expand_unit(&forms).unwrap();
        assert_eq!(
            expanded[0].to_string(),
            "(defkernel f (int ()) (return (* 2 3)))"
        );
    }

    #[test]
    fn other_panics_go_on() {
        let caught = std::panic::catch_unwind(|| try_on_small_stack(|| panic!("boom")));
        assert!(caught.is_err());
        assert!(!on_small_stack());
    }

    #[test]
    fn attempts_do_not_nest() {
        let inner = try_on_small_stack(|| try_on_small_stack(|| 1));
        assert_eq!(inner, Some(None));
    }
}
