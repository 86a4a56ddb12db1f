//! The Rust items `defkernel!` generates from a checked module.
//!
//! * one hidden `static` [`chorus::Program`] holding the kernel text and its file name; it is
//!   compiled for the selected backend on first use;
//! * for each kernel, a function named by its snake-case name (`vec-add` → `vec_add`) whose parameters follow the kernel's, plus a
//!   final `chorus::Launch`, and an accessor `<name>_program()` for the program (its kernel text,
//!   CUDA C, globals);
//! * for each `defkernel-struct`, a `#[repr(C)]` struct with the device layout, explicit padding
//!   fields (so it is `Pod`), `new`, and a `KernelValue` impl; its layout is asserted at compile
//!   time against the checker's.
//!
//! Device functions get no Rust function: only device code calls them.

use crate::rebuild::Rebuilt;
use chorus_lang::ir::{Function, FunctionKind, Module, StructDef};
use chorus_lang::types::{ScalarType, Type, VectorType};
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};
use std::hash::{Hash, Hasher};

/// Every item for `module`, whose text is `source`.
pub fn items(module: &Module, source: &Rebuilt) -> TokenStream {
    let program = program_ident(source);
    let text = &source.text;
    let file = &source.file;
    let mut out = quote! {
        #[doc(hidden)]
        static #program: ::chorus::Program = ::chorus::Program::__from_macro(#text, #file);
    };
    for def in &module.structs {
        out.extend(struct_item(module, def));
    }
    let mut kernels: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for function in module
        .functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Kernel)
    {
        let rust_name = snake_name(&function.name);
        if let Some(other) = kernels.insert(rust_name.clone(), &function.name) {
            let message = format!(
                "kernels `{other}` and `{}` would both be the Rust function `{rust_name}`; \
                 rename one",
                function.name
            );
            return quote!(::core::compile_error!(#message););
        }
        out.extend(kernel_item(module, function, &program));
    }
    out
}

/// The snake-case Rust spelling of a kernel-language name (`vec-add` → `vec_add`, `#:g1` →
/// `g1`, `λ` → `_u3bb`), before Rust keywords are dealt with by [`rust_ident`].
fn snake_name(name: &str) -> String {
    chorus_lang::cfamily::legal_identifier(name, &std::collections::HashSet::new())
}

/// [`snake_name`] of each of `names`, made unique with `_1`, `_2` … suffixes.
fn unique_snake_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut used = std::collections::HashSet::new();
    names
        .map(|name| {
            let base = snake_name(name);
            let mut candidate = base.clone();
            let mut n = 0;
            while !used.insert(candidate.clone()) {
                n += 1;
                candidate = format!("{base}_{n}");
            }
            candidate
        })
        .collect()
}

/// The name of the hidden program static: unique per invocation, because the text holds the
/// positions of its tokens.
fn program_ident(source: &Rebuilt) -> Ident {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    source.text.hash(&mut hasher);
    source.file.hash(&mut hasher);
    format_ident!("__CHORUS_PROGRAM_{:016X}", hasher.finish())
}

/// A Rust identifier for a snake-case name: Rust keywords become raw identifiers, and the few
/// that cannot be raw get a `_` suffix.
fn rust_ident(name: &str) -> Ident {
    const CANNOT_BE_RAW: &[&str] = &["self", "super", "crate", "_"];
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "box", "const", "dyn", "else", "enum", "extern", "fn", "gen",
        "impl", "in", "let", "loop", "macro", "match", "mod", "move", "mut", "priv", "pub", "ref",
        "static", "trait", "try", "type", "typeof", "unsafe", "unsized", "use", "where", "yield",
        "abstract", "become", "final", "override", "loop",
    ];
    if CANNOT_BE_RAW.contains(&name) {
        format_ident!("{name}_")
    } else if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// The CamelCase Rust name of a structure (`my_pair` → `MyPair`).
pub fn struct_ident(snake: &str) -> Ident {
    let mut name = String::new();
    for word in snake.split('_').filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert(0, 'S');
    }
    Ident::new(&name, Span::call_site())
}

/// The Rust type that holds a value of `ty` in memory (a `KernelValue`), or `None` where there is
/// none (`void`).
fn value_type(module: &Module, ty: &Type) -> Option<TokenStream> {
    Some(match ty {
        Type::Void => return None,
        Type::Bool => quote!(::chorus::Bool8),
        Type::Scalar(s) => scalar_type(*s),
        Type::Vector(v) => {
            let name = vector_ident(*v);
            quote!(::chorus::#name)
        }
        // A pointer inside a structure or a memory block is a device address.
        Type::Pointer(_) => quote!(u64),
        Type::Struct(name) => {
            let def = module.struct_def(name)?;
            let ident = struct_ident(&snake_name(&def.name));
            quote!(#ident)
        }
        Type::CurandStateXorwow => quote!(::chorus::CurandStateXorwow),
        // Handles the host only makes through `chorus::Texture`/`chorus::Surface`, passed as
        // their `as_arg()`.
        Type::TextureObject | Type::SurfaceObject => return None,
        // A tensor map is passed as `chorus::Arg::tensor_map(&map)`; an accumulator is never a
        // kernel's parameter (the checker refuses it).
        Type::TensorMap | Type::WgmmaAccumulator(_) => return None,
    })
}

fn scalar_type(s: ScalarType) -> TokenStream {
    match s {
        ScalarType::Int8 => quote!(i8),
        ScalarType::UInt8 => quote!(u8),
        ScalarType::Int16 => quote!(i16),
        ScalarType::UInt16 => quote!(u16),
        ScalarType::Int => quote!(i32),
        ScalarType::UInt => quote!(u32),
        ScalarType::Int64 => quote!(i64),
        ScalarType::UInt64 => quote!(u64),
        ScalarType::SizeT => quote!(::chorus::SizeT),
        ScalarType::Half => quote!(::chorus::f16),
        ScalarType::BFloat16 => quote!(::chorus::bf16),
        ScalarType::Fp8 => quote!(::chorus::Fp8E4M3),
        ScalarType::Fp4 => quote!(::chorus::Fp4E2M1),
        ScalarType::Float => quote!(f32),
        ScalarType::Double => quote!(f64),
    }
}

fn vector_ident(v: VectorType) -> Ident {
    let name = match v {
        VectorType::Int2 => "Int2",
        VectorType::Int4 => "Int4",
        VectorType::UInt2 => "UInt2",
        VectorType::UInt4 => "UInt4",
        VectorType::Half2 => "Half2",
        VectorType::Float2 => "Float2",
        VectorType::Float3 => "Float3",
        VectorType::Float4 => "Float4",
        VectorType::Double2 => "Double2",
        VectorType::Double3 => "Double3",
        VectorType::Double4 => "Double4",
    };
    Ident::new(name, Span::call_site())
}

/// How a kernel parameter is taken and turned into a `chorus::Arg`.
struct ParamShape {
    /// The Rust parameter type.
    ty: TokenStream,
    /// The expression that makes the `Arg` from the parameter `name`.
    arg: TokenStream,
    /// True when the Rust type fixes the argument's kernel type (a value of the parameter's
    /// own type, or a `DevicePtr` of its element); false for a `chorus::Arg`, which the launch
    /// checks.
    typed: bool,
}

fn param_shape(module: &Module, ty: &Type, name: &Ident) -> ParamShape {
    let untyped = || ParamShape {
        ty: quote!(::chorus::Arg<'_>),
        arg: quote!(#name),
        typed: false,
    };
    match ty {
        Type::Bool => ParamShape {
            ty: quote!(bool),
            arg: quote!(::chorus::Arg::value(::chorus::Bool8::from(#name))),
            typed: true,
        },
        Type::Pointer(pointee) => match &**pointee {
            // `void*` and pointers to pointers have no element type on the host: the caller
            // passes a `chorus::Arg`, checked when the kernel is launched.
            Type::Void | Type::Pointer(_) => untyped(),
            element => match value_type(module, element) {
                Some(element) => ParamShape {
                    ty: quote!(impl ::chorus::DevicePtr<#element>),
                    arg: quote!(::chorus::DevicePtr::kernel_arg(&#name)),
                    typed: true,
                },
                None => untyped(),
            },
        },
        other => match value_type(module, other) {
            Some(rust) => ParamShape {
                ty: rust,
                arg: quote!(::chorus::Arg::value(#name)),
                typed: true,
            },
            None => untyped(),
        },
    }
}

/// The kernel's signature as the kernel language writes it: `(void ((a float*) (n int)))`.
fn kernel_signature(function: &Function) -> String {
    let params: Vec<String> = function
        .params
        .iter()
        .map(|p| {
            let local = &function.locals[p.local.0 as usize];
            let restrict = if p.restrict { " :restrict" } else { "" };
            format!("({} {}{restrict})", local.name, local.ty)
        })
        .collect();
    format!("({} ({}))", function.ret, params.join(" "))
}

fn kernel_item(module: &Module, function: &Function, program: &Ident) -> TokenStream {
    let snake = snake_name(&function.name);
    let name = rust_ident(&snake);
    let accessor = format_ident!("{snake}_program");
    let kernel_name = &*function.name;
    let locals: Vec<_> = function
        .params
        .iter()
        .map(|p| &function.locals[p.local.0 as usize])
        .collect();
    let param_names = unique_snake_names(locals.iter().map(|l| &*l.name));
    let launch = if param_names.iter().any(|n| n == "launch") {
        format_ident!("launch_")
    } else {
        format_ident!("launch")
    };
    let mut params = Vec::new();
    let mut args = Vec::new();
    let mut typed_values = true;
    for (local, param_name) in locals.iter().zip(&param_names) {
        let ident = rust_ident(param_name);
        let shape = param_shape(module, &local.ty, &ident);
        let ty = shape.ty;
        params.push(quote!(#ident: #ty));
        args.push(shape.arg);
        typed_values &= shape.typed;
    }
    let doc = format!(
        "Launches the kernel `{kernel_name}` `{}`, defined at {}:{}.\n\n\
         It runs on the current backend (`chorus::backend()`), for which the program is compiled \
         on first use. Pointer parameters take memory blocks of that backend \
         (`&chorus::MemoryBlock<T>`) or device addresses.",
        kernel_signature(function),
        function.span.file,
        function.span.line,
    );
    let accessor_doc = format!(
        "The program that holds the kernel `{kernel_name}` (and every definition of its \
         `defkernel!` block): its kernel text, CUDA C, globals."
    );
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments, dead_code)]
        #[track_caller]
        pub fn #name(#(#params,)* #launch: ::chorus::Launch<'_>) -> ::chorus::Result<()> {
            // The kernel's index in its program, found by name at the first launch only.
            static __CHORUS_KERNEL_INDEX: ::std::sync::OnceLock<usize> =
                ::std::sync::OnceLock::new();
            // Where every parameter is statically typed (derived from the kernel's own
            // signature), the launch skips the run-time check of value types; pointers are
            // still checked.
            #program.__launch_resolved(
                &__CHORUS_KERNEL_INDEX,
                #kernel_name,
                #typed_values,
                &[#(#args),*],
                #launch,
            )
        }

        #[doc = #accessor_doc]
        #[allow(dead_code)]
        pub fn #accessor() -> &'static ::chorus::Program {
            &#program
        }
    }
}

fn struct_item(module: &Module, def: &StructDef) -> TokenStream {
    let name = struct_ident(&snake_name(&def.name));
    let kernel_name = &*def.name;
    // Real fields with their Rust types and sizes, in offset order.
    let mut declarations = Vec::new();
    let mut constructor_fields = Vec::new();
    let mut real = Vec::new();
    let mut asserts = Vec::new();
    let mut end = 0usize;
    let mut pad_count = 0usize;
    let mut pad =
        |declarations: &mut Vec<TokenStream>, constructor: &mut Vec<TokenStream>, len: usize| {
            let ident = format_ident!("__chorus_pad{pad_count}");
            pad_count += 1;
            let len = Literal::usize_unsuffixed(len);
            declarations.push(quote!(#ident: [u8; #len]));
            constructor.push(quote!(#ident: [0; #len]));
        };
    let field_names = unique_snake_names(def.fields.iter().map(|f| &*f.name));
    for (field, field_name) in def.fields.iter().zip(&field_names) {
        let ident = rust_ident(field_name);
        let Some(ty) = value_type(module, &field.ty) else {
            // The checker refuses `void` fields; texture and surface handles have no host type
            // (the backend makes them).
            let message = format!(
                "field `{}` of structure `{kernel_name}` has no host type",
                field.name
            );
            return quote!(::core::compile_error!(#message););
        };
        let Some((size, _)) = module.layout(&field.ty) else {
            let message = format!(
                "field `{}` of structure `{kernel_name}` has no layout",
                field.name
            );
            return quote!(::core::compile_error!(#message););
        };
        if field.offset > end {
            pad(
                &mut declarations,
                &mut constructor_fields,
                field.offset - end,
            );
        }
        let doc = format!("`{}`: `{}`.", field.name, field.ty);
        declarations.push(quote!(#[doc = #doc] pub #ident: #ty));
        constructor_fields.push(quote!(#ident));
        let offset = field.offset;
        asserts.push(quote! {
            assert!(::core::mem::offset_of!(#name, #ident) == #offset);
            assert!(::core::mem::size_of::<#ty>() == #size);
        });
        real.push((ident, ty, field.name.to_string()));
        end = field.offset + size;
    }
    if def.size > end {
        pad(&mut declarations, &mut constructor_fields, def.size - end);
    }
    let size = def.size;
    let align = def.align;
    let field_names: Vec<_> = real.iter().map(|(ident, _, _)| ident).collect();
    let field_types: Vec<_> = real.iter().map(|(_, ty, _)| ty).collect();
    let field_labels: Vec<_> = real.iter().map(|(_, _, label)| label).collect();
    let span_file = &*def.span.file;
    let span_line = def.span.line;
    let span_column = def.span.column;
    let doc = format!(
        "The host side of `(defkernel-struct {kernel_name} …)` ({}:{}): the device's layout \
         ({size} bytes, {align}-aligned), with explicit padding so that it is `Pod`.",
        def.span.file, def.span.line
    );
    quote! {
        #[doc = #doc]
        #[repr(C)]
        #[derive(Clone, Copy)]
        #[allow(dead_code)]
        pub struct #name {
            #(#declarations,)*
        }

        #[allow(dead_code)]
        impl #name {
            /// A value from its fields (padding is zero).
            #[allow(clippy::too_many_arguments)]
            pub const fn new(#(#field_names: #field_types),*) -> #name {
                #name { #(#constructor_fields),* }
            }
        }

        // The layout the checker computed, asserted at compile time. Fields and padding cover
        // every byte, so the struct has no implicit padding and `Pod` is sound.
        const _: () = {
            assert!(::core::mem::size_of::<#name>() == #size);
            assert!(::core::mem::align_of::<#name>() == #align);
            #(#asserts)*
        };

        // SAFETY: `repr(C)`, every field is `Pod` (a `KernelValue` or a byte array), and the
        // assertions above show there is no implicit padding.
        unsafe impl ::chorus::__private::bytemuck::Zeroable for #name {}
        // SAFETY: as above.
        unsafe impl ::chorus::__private::bytemuck::Pod for #name {}
        // SAFETY: the size, alignment and field offsets equal the device layout (asserted above).
        unsafe impl ::chorus::KernelValue for #name {
            fn kernel_type() -> ::chorus::lang::Type {
                ::chorus::lang::Type::Struct(::std::sync::Arc::from(#kernel_name))
            }

            fn struct_defs() -> ::std::vec::Vec<::chorus::lang::ir::StructDef> {
                let mut defs = ::std::vec::Vec::new();
                #(
                    for def in <#field_types as ::chorus::KernelValue>::struct_defs() {
                        if !defs.iter().any(|d: &::chorus::lang::ir::StructDef| d.name == def.name) {
                            defs.push(def);
                        }
                    }
                )*
                defs.push(::chorus::lang::ir::StructDef {
                    name: ::std::sync::Arc::from(#kernel_name),
                    fields: ::std::vec![#(
                        ::chorus::lang::ir::StructField {
                            name: ::std::sync::Arc::from(#field_labels),
                            ty: <#field_types as ::chorus::KernelValue>::kernel_type(),
                            offset: ::core::mem::offset_of!(#name, #field_names),
                        }
                    ),*],
                    size: #size,
                    align: #align,
                    span: ::chorus::lang::Span {
                        file: ::std::sync::Arc::from(#span_file),
                        line: #span_line,
                        column: #span_column,
                        end_line: #span_line,
                        end_column: #span_column,
                    },
                });
                defs
            }
        }

        impl ::core::default::Default for #name {
            fn default() -> #name {
                ::chorus::__private::bytemuck::Zeroable::zeroed()
            }
        }

        impl ::core::fmt::Debug for #name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#name))
                    #(.field(#field_labels, &self.#field_names))*
                    .finish()
            }
        }

        impl ::core::cmp::PartialEq for #name {
            fn eq(&self, other: &#name) -> bool {
                true #(&& self.#field_names == other.#field_names)*
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_names_are_camel_case() {
        assert_eq!(struct_ident("pair").to_string(), "Pair");
        assert_eq!(struct_ident("my_pair").to_string(), "MyPair");
        assert_eq!(struct_ident("_foo").to_string(), "Foo");
        assert_eq!(struct_ident("_1x").to_string(), "S1x");
    }

    #[test]
    fn kernels_whose_rust_names_collide_are_a_compile_error() {
        let text = "(defkernel a-b (void ((x int*))) (set (aref x 0) 1))
                    (defkernel a_b (void ((x int*))) (set (aref x 0) 2))";
        let module = chorus_lang::compile_str(text, "k.lisp").unwrap();
        let source = Rebuilt {
            text: text.into(),
            file: "k.lisp".into(),
            tokens: Vec::new(),
        };
        let out = items(&module, &source).to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(
            out.contains("kernels `a-b` and `a_b` would both be the Rust function `a_b`"),
            "{out}"
        );
    }

    #[test]
    fn rust_names_come_from_source_names() {
        assert_eq!(snake_name("vec-add-kernel"), "vec_add_kernel");
        assert_eq!(snake_name("#:g3"), "g3");
        assert_eq!(
            unique_snake_names(["a-b", "a_b", "x"].into_iter()),
            ["a_b", "a_b_1", "x"]
        );
    }

    #[test]
    fn keywords_become_raw_identifiers() {
        assert_eq!(rust_ident("type").to_string(), "r#type");
        assert_eq!(rust_ident("self").to_string(), "self_");
        assert_eq!(rust_ident("a").to_string(), "a");
    }
}
