//! Adding a dialect is implementing `Dialect`: a trivial C dialect (no qualifiers, no GPU
//! intrinsics) prints a module through the shared printer, and refuses what it lacks at a span.

use chorus_lang::cfamily::{Dialect, Helper, IndexSpelling, PrintOptions, print_module};
use chorus_lang::ir::{FunctionKind, GlobalQualifier, IndexVar, LaunchBounds};
use chorus_lang::types::{ScalarType, Type, VectorType};

/// Plain C: kernels are ordinary functions over one thread, with no shared memory.
struct PlainC;

impl Dialect for PlainC {
    fn name(&self) -> &'static str {
        "plain C"
    }
    fn reserved_words(&self) -> &'static [&'static str] {
        &["sqrtf", "sinf", "printf"]
    }
    fn headers(&self) -> &'static [&'static str] {
        &["math.h"]
    }
    fn type_header(&self, _: &Type) -> Option<&'static str> {
        None
    }
    fn intrinsic_header(&self, intrinsic: &str) -> Option<&'static str> {
        intrinsic.ends_with('f').then_some("math.h")
    }
    fn type_name(&self, ty: &Type) -> Option<&'static str> {
        match ty {
            Type::Void => Some("void"),
            Type::Bool => Some("_Bool"),
            Type::Scalar(ScalarType::Int) => Some("int"),
            Type::Scalar(ScalarType::Float) => Some("float"),
            _ => None,
        }
    }
    fn vector_constructor(&self, _: VectorType) -> Option<&'static str> {
        None
    }
    fn linkage(&self) -> &'static str {
        ""
    }
    fn function_qualifier(&self, kind: FunctionKind) -> &'static str {
        match kind {
            FunctionKind::Kernel => "",
            FunctionKind::Device => "static ",
        }
    }
    fn global_qualifier(&self, qualifier: GlobalQualifier) -> Option<&'static str> {
        (qualifier == GlobalQualifier::Device).then_some("static")
    }
    fn global_has_initializer(&self, _: &[GlobalQualifier]) -> bool {
        true
    }
    fn restrict(&self) -> &'static str {
        " restrict"
    }
    fn launch_bounds(&self, _: &LaunchBounds) -> Option<String> {
        None
    }
    fn index_variable(&self, var: IndexVar) -> Option<IndexSpelling> {
        // One thread: every index is 0 and every dimension 1.
        let text = match var {
            IndexVar::ThreadIdx(_) | IndexVar::BlockIdx(_) => "0",
            IndexVar::BlockDim(_) | IndexVar::GridDim(_) => "1",
            _ => return None,
        };
        Some(IndexSpelling::Expr {
            text: text.into(),
            unsigned: false,
        })
    }
    fn warp_width(&self) -> u32 {
        1
    }
    fn shared_array(&self, _: &str, _: &str, _: &str) -> Option<String> {
        None
    }
    fn dynamic_shared_array(&self, _: &str) -> Option<String> {
        None
    }
    fn call(&self, intrinsic: &str, args: &[&str]) -> Option<String> {
        // C's math library and printf; nothing of CUDA's.
        let known = ["sqrtf", "sinf", "printf", "fminf", "fmaxf"];
        known
            .contains(&intrinsic)
            .then(|| format!("{intrinsic}({})", args.join(", ")))
    }
    fn helper_definition(&self, _: Helper, _: &str) -> Option<String> {
        None
    }
}

fn print(text: &str) -> chorus_lang::Result<String> {
    let module = chorus_lang::compile_str(text, "plain.lisp")?;
    print_module(&module, &PlainC, &PrintOptions::default()).map(|p| p.code)
}

#[test]
fn a_trivial_c_dialect_prints_through_the_shared_printer() {
    let code = print(
        "(defglobal scale 2.0)
         (defkernel twice (float ((x float))) (return (* scale x)))
         (defkernel fill (void ((a float*) (n int)))
           (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
             (when (< i n) (set (aref a i) (sqrt (twice (sin 1.0)))))))",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        code,
        "#include <math.h>\n\
         \n\
         static float scale = 2.0f;\n\
         \n\
         static float twice(float x);\n\
         void fill(float* a, int n);\n\
         \n\
         static float twice(float x)\n\
         {\n  return (scale * x);\n}\n\
         \n\
         void fill(float* a, int n)\n\
         {\n  {\n    int i = ((1 * 0) + 0);\n    if (i < n) {\n      \
         a[i] = sqrtf(twice(sinf(1.0f)));\n    }\n  }\n}\n"
    );
}

#[test]
fn what_the_dialect_lacks_is_an_error_at_its_span() {
    let error = print(
        "(defkernel k (void ((a int*)))
           (syncthreads)
           (set (aref a 0) 1))",
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "plain.lisp:2:12: `__syncthreads` is not available in plain C"
    );
    let error = print("(defkernel k (void ((a double*))) (set (aref a 0) 1.0d0))").unwrap_err();
    assert!(
        error
            .message
            .contains("the type `double` is not available in plain C"),
        "{error}"
    );
}
