//! Texture and surface objects in the kernel language: the types, the built-ins' checking
//! (element types written in the call, boundary modes, located errors), validation against
//! targets, and the CUDA C they print as.

use chorus_lang::compile_str;
use chorus_lang::cuda::print_module;
use chorus_lang::target::{Capability, Target};
use chorus_lang::types::Type;

const KERNELS: &str = r#"
(defkernel sample (void ((out float4*) (tex texture-object) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n)
        (set (aref out i) (tex2d float4 tex (+ (float i) 0.5) 0.25)))))

(defkernel fetch (void ((out int*) (tex texture-object) (n int)))
  (let ((i thread-idx-x))
    (if (< i n)
        (set (aref out i) (tex1d-fetch int tex i)))))

(defkernel volume (void ((out float*) (tex texture-object)))
  (set (aref out 0) (+ (tex1d float tex 0.5) (tex3d float tex 0.5 0.5 0.5))))

(defkernel copy-surface (void ((src surface-object) (dst surface-object)))
  (let ((x thread-idx-x) (y thread-idx-y))
    (surf2d-write (surf2d-read uchar4-stand-in src (* x 4) y :clamp) dst (* x 4) y :zero)))
"#;

fn kernels() -> String {
    // `uchar4` is not a language type; a uint surface of one channel reads as uint.
    KERNELS.replace("uchar4-stand-in", "uint")
}

#[test]
fn texture_and_surface_objects_are_types_of_eight_bytes() {
    assert_eq!(
        Type::parse("texture-object", |_| false),
        Some(Type::TextureObject)
    );
    assert_eq!(
        Type::parse("surface-object*", |_| false),
        Some(Type::SurfaceObject.pointer_to())
    );
    assert_eq!(Type::TextureObject.to_string(), "texture-object");
    let cuda = Target::default_cuda();
    assert_eq!(cuda.layout(&Type::TextureObject, &[]), Some((8, 8)));
    assert_eq!(cuda.layout(&Type::SurfaceObject, &[]), Some((8, 8)));
}

#[test]
fn reads_are_typed_by_the_element_type_written_first() {
    let module = compile_str(&kernels(), "t.lisp").unwrap();
    let printed = print_module(&module).unwrap().code;
    assert!(printed.contains("tex2D<float4>("), "{printed}");
    assert!(printed.contains("tex1Dfetch<int>("), "{printed}");
    assert!(printed.contains("tex1D<float>("), "{printed}");
    assert!(printed.contains("tex3D<float>("), "{printed}");
    assert!(printed.contains("surf2Dread<unsigned int>("), "{printed}");
    assert!(printed.contains("cudaBoundaryModeClamp"), "{printed}");
    assert!(printed.contains("surf2Dwrite("), "{printed}");
    assert!(printed.contains("cudaBoundaryModeZero"), "{printed}");
    assert!(printed.contains("cudaTextureObject_t"), "{printed}");
    assert!(printed.contains("cudaSurfaceObject_t"), "{printed}");
}

#[test]
fn the_default_boundary_mode_is_trap() {
    let text =
        "(defkernel k (void ((s surface-object))) (surf1d-write (surf1d-read float s 0) s 4))";
    let printed = print_module(&compile_str(text, "t.lisp").unwrap())
        .unwrap()
        .code;
    assert_eq!(
        printed.matches("cudaBoundaryModeTrap").count(),
        2,
        "{printed}"
    );
}

/// The error of compiling `text`, and whether it lies at the first occurrence of `at`.
fn error_at(text: &str, at: &str) -> String {
    let e = compile_str(text, "t.lisp").unwrap_err();
    let offset = text.find(at).expect("the marked text");
    let line = text[..offset].matches('\n').count() + 1;
    let column = offset - text[..offset].rfind('\n').map_or(0, |n| n + 1) + 1;
    assert_eq!(
        (e.span.line as usize, e.span.column as usize),
        (line, column),
        "{}",
        e.message
    );
    e.message
}

#[test]
fn mistakes_are_errors_at_their_forms() {
    let m = error_at(
        "(defkernel k (void ((o float*) (tx texture-object)))\n  (set (aref o 0) (tex2d tx 0.5 0.5)))",
        "tx 0.5",
    );
    assert!(m.contains("element type"), "{m}");
    let m = error_at(
        "(defkernel k (void ((o double*) (tx texture-object))) (set (aref o 0) (tex1d double tx 0.5)))",
        "double tx",
    );
    assert!(m.contains("one of int8"), "{m}");
    let m = error_at(
        "(defkernel k (void ((o float*) (tx texture-object))) (set (aref o 0) (surf1d-read float tx 0)))",
        "(surf1d-read",
    );
    assert!(m.contains("surface-object"), "{m}");
    let m = error_at(
        "(defkernel k (void ((o float*) (tx texture-object))) (set (aref o 0) (tex2d float tx 0.5)))",
        "(tex2d",
    );
    assert!(m.contains("takes 3 arguments"), "{m}");
    let m = error_at(
        "(defkernel k (void ((s surface-object))) (surf1d-write 1.0 s 0 :wrap))",
        ":wrap",
    );
    assert!(m.contains("unknown boundary mode `:wrap`"), "{m}");
    let m = error_at(
        "(defkernel k (void ((s surface-object) (v double3))) (surf1d-write v s 0))",
        "v s 0",
    );
    assert!(m.contains("`surf1d-write` writes one of"), "{m}");
    let m = error_at(
        "(defkernel k (void ((s surface-object) (v int64))) (surf1d-write v s 0))",
        "v s 0",
    );
    assert!(m.contains("got an int64 (convert it first)"), "{m}");
}

#[test]
fn targets_without_textures_refuse_them_at_their_use() {
    let module = chorus_lang::compile_str_for(&kernels(), "t.lisp", &Target::cpu()).unwrap();
    assert!(Target::cpu().has(Capability::Textures));
    assert!(Target::cuda(7, 0).has(Capability::Textures));
    let metal = Target::metal(8).unwrap();
    assert!(!metal.has(Capability::Textures));
    let e = chorus_lang::check::validate(&module, &metal).unwrap_err();
    assert!(
        e.message.contains("texture and surface objects"),
        "{}",
        e.message
    );
}
