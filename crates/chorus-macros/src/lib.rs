//! Proc macros of Chorus: [`defkernel!`](macro@defkernel).
//!
//! Use them through the `chorus` crate (`chorus::defkernel!`), whose items the generated code
//! names.

mod generate;
mod rebuild;

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// Kernel-language definitions written directly in Rust, read, expanded and type-checked at
/// compile time.
///
/// ```text
/// chorus::defkernel! {
///     (defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
///       (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
///         (if (< i n)
///             (set (aref c i)
///                  (+ (aref a i) (aref b i))))))
/// }
///
/// vec_add_kernel(&a, &b, &mut c, n, chorus::Launch::grid(n / 256).block(256))?;
/// ```
///
/// The body is the kernel text as the seed writes it: every `defkernel`, `defkernel-struct`,
/// `defglobal`, `defkernelmacro`, `defkernel-symbol-macro` form of one compilation unit. The
/// macro rebuilds the text from the Rust tokens by their lines and columns, so `vec-add-kernel`,
/// `float*` and `:restrict` read as one symbol each, exactly when their pieces touch in the
/// source, and every position in the kernel text is the same position in the Rust file. An
/// error of the reader, the macro expander or the checker is a compile error at the token it
/// names.
///
/// # What Rust's lexer does not accept
///
/// The body must lex as Rust tokens, which rules out a little of the kernel language's syntax:
///
/// * backquote (`` `(a ,b) ``): write `(quasiquote (a (unquote b)))`, or build the list with
///   `list`; `,x` and `,@x` themselves lex fine;
/// * `'` before anything but a name Rust could take for an identifier (`'(1 2)` and `'*` are
///   unterminated character literals to Rust): write `(quote (1 2))`, `(quote *)`; `'x` lexes
///   as a lifetime and reads as `(quote x)`, `#'f` as `(function f)`;
/// * `;` comments: Rust lexes the rest of the line, so an apostrophe there breaks it; use `//`
///   and `/* */` (doc comments work too), which are white space to the kernel text;
/// * `#|…|#` block comments: use `/* */`;
/// * a backslash outside string literals (`a\(b`): use `|a(b|`.
///
/// A symbol may contain any characters Rust lexes as punctuation or identifiers; string
/// literals are read with the kernel language's escapes.
///
/// # Generated items
///
/// * for each kernel `name`, a function `snake_name(params…, launch: chorus::Launch) ->
///   chorus::Result<()>`: a pointer parameter `T*` takes `impl chorus::DevicePtr<T>` (memory
///   blocks, or device pointers), `bool` a `bool`, every other parameter its host type (`int` is
///   `i32`, `float` `f32`, `half` `chorus::f16`, `float3` `chorus::Float3`, a structure its
///   generated struct); `void*` and pointers to pointers take a `chorus::Arg` that is checked
///   when the kernel is launched;
/// * for each kernel, `snake_name_program() -> &'static chorus::Program`: the program of the whole
///   block (its kernel text, its CUDA C, `global_ref` / `set_global_ref` for its globals);
/// * for each `defkernel-struct`, a `#[repr(C)]` struct in CamelCase (`pair` → `Pair`) with the
///   device's layout, private padding fields, `new(fields…)`, `Default`, `Debug`, `PartialEq`,
///   `bytemuck::Pod` and `chorus::KernelValue`.
///
/// Device functions get no Rust function.
#[proc_macro]
pub fn defkernel(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand(input.into()).into()
}

/// Rebuilds, compiles and generates; a front-end error becomes a `compile_error!`.
fn expand(input: TokenStream) -> TokenStream {
    let source = rebuild::rebuild(input);
    match chorus_lang::compile_str(&source.text, &source.file) {
        Ok(module) => generate::items(&module, &source),
        Err(error) => {
            // Errors in code a kernel macro generated may name another file (`<generated>`);
            // those point at the whole invocation.
            let span = if *error.span.file == *source.file {
                source.span_at(error.span.line, error.span.column)
            } else {
                None
            };
            let message = error.message;
            quote_spanned!(span.unwrap_or_else(Span::call_site)=> ::core::compile_error!(#message);)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(source: &str) -> TokenStream {
        expand(source.parse().expect("the test source lexes as Rust"))
    }

    /// The generated code without white space, for `contains` checks.
    fn squeezed(tokens: &TokenStream) -> String {
        tokens.to_string().split_whitespace().collect()
    }

    /// The 1-based line and column of the first token of `tokens`.
    fn position(tokens: &TokenStream) -> (usize, usize) {
        let start = tokens
            .clone()
            .into_iter()
            .next()
            .expect("some output")
            .span()
            .start();
        (start.line, start.column + 1)
    }

    #[test]
    fn checker_errors_point_at_their_token() {
        let out =
            expand_str("(defkernel k (void ((a float*)))\n  (set (aref a 0) undefined-thing))");
        assert!(
            squeezed(&out).starts_with("::core::compile_error!"),
            "{out}"
        );
        assert_eq!(position(&out), (2, 19));
    }

    #[test]
    fn reader_errors_point_at_their_token() {
        // `1/2` is one token to the reader (a ratio, which has no kernel type).
        let out = expand_str("(defkernel k (void ((a float*)))\n     (set (aref a 0) 1/2))");
        assert!(
            squeezed(&out).starts_with("::core::compile_error!"),
            "{out}"
        );
        assert_eq!(position(&out), (2, 22));
    }

    #[test]
    fn kernels_become_typed_functions() {
        let out = squeezed(&expand_str(
            "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
               (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
                 (if (< i n) (set (aref c i) (+ (aref a i) (aref b i))))))",
        ));
        assert!(
            out.contains(
                "pubfnvec_add_kernel(a:impl::chorus::DevicePtr<f32>,b:impl::chorus::DevicePtr<f32>,\
                 c:impl::chorus::DevicePtr<f32>,n:i32,launch:::chorus::Launch<'_>)->::chorus::Result<()>"
            ),
            "{out}"
        );
        // Resolved once into a static, launched without the run-time check of value types.
        assert!(
            out.contains(
                ".__launch_resolved(&__CHORUS_KERNEL_INDEX,\"vec-add-kernel\",true,\
                 &[::chorus::DevicePtr::kernel_arg(&a)"
            ),
            "{out}"
        );
        assert!(
            out.contains("pubfnvec_add_kernel_program()->&'static::chorus::Program"),
            "{out}"
        );
    }

    #[test]
    fn untyped_pointer_parameters_keep_every_check() {
        let out = squeezed(&expand_str(
            "(defkernel fill (void ((p void*) (n int)))\n  (return))",
        ));
        assert!(out.contains("p:::chorus::Arg<'_>"), "{out}");
        assert!(
            out.contains(".__launch_resolved(&__CHORUS_KERNEL_INDEX,\"fill\",false,"),
            "{out}"
        );
    }

    #[test]
    fn structs_get_padding_and_device_functions_nothing() {
        let out = squeezed(&expand_str(
            "(defkernel-struct my-pair (tag int8) (weight double))
             (defkernel twice (int ((x int))) (return (* 2 x)))
             (defkernel use-pair (void ((p my-pair) (out my-pair*) (flag bool)))
               (set (aref out 0) p))",
        ));
        assert!(
            out.contains("pubstructMyPair{#[doc=\"`tag`:`int8`.\"]pubtag:i8,__chorus_pad0:[u8;7],"),
            "{out}"
        );
        assert!(
            out.contains("assert!(::core::mem::size_of::<MyPair>()==16usize)"),
            "{out}"
        );
        assert!(
            out.contains("pubfnuse_pair(p:MyPair,out:impl::chorus::DevicePtr<MyPair>,flag:bool,"),
            "{out}"
        );
        assert!(
            out.contains("::chorus::Arg::value(::chorus::Bool8::from(flag))"),
            "{out}"
        );
        assert!(
            !out.contains("pubfntwice"),
            "device functions get no Rust function: {out}"
        );
    }

    #[test]
    fn a_parameter_named_launch_keeps_its_name() {
        let out = squeezed(&expand_str("(defkernel k (void ((launch int))) (return))"));
        assert!(
            out.contains("pubfnk(launch:i32,launch_:::chorus::Launch<'_>)"),
            "{out}"
        );
    }
}
