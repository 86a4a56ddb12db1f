//! The identifier sweep (issue 8, item 2): names that are legal in the kernel language but
//! special in C, C++ or CUDA, in every position a name can take. Every one either is rejected by
//! the front end at its span, or prints as C a compiler accepts. Shared by chorus-lang's
//! `tests/names.rs` (printing) and chorus-cuda's compiler tier (nvcc and NVRTC).

/// Identifiers by class.
pub fn identifier_classes() -> Vec<(&'static str, Vec<String>)> {
    let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    vec![
        (
            "C and C++ keywords",
            words(chorus_lang::cfamily::C_KEYWORDS),
        ),
        (
            "CUDA qualifiers and intrinsics",
            words(&[
                "__global__",
                "__device__",
                "__shared__",
                "__constant__",
                "__managed__",
                "__restrict__",
                "__launch_bounds__",
                "__host__",
                "__forceinline__",
                "__noinline__",
                "__syncthreads",
                "__syncwarp",
                "__shfl_sync",
                "__ballot_sync",
                "__threadfence",
                "__ldg",
                "__float2half",
                "__half",
                "__nv_bfloat16",
                "atomicAdd",
                "atomicCAS",
                "threadIdx",
                "blockIdx",
                "blockDim",
                "gridDim",
                "warpSize",
                "asm",
                "printf",
                "chorus_float3_add",
                "chorus-lane-id",
                "chorus_dyn_smem",
                "_Bool",
                "_X",
                "__x",
                "main",
            ]),
        ),
        (
            "vector and builtin type names",
            words(&[
                "uint3",
                "dim3",
                "float4",
                "int2",
                "char4",
                "double2",
                "half2",
                "longlong2",
                "ulonglong4",
                "short2",
                "size_t",
                "uint32_t",
                "nullptr_t",
                "texture",
                "std",
                "cuda",
            ]),
        ),
        (
            "device math and C library",
            words(&[
                "norm",
                "norm3d",
                "rnorm",
                "min",
                "max",
                "abs",
                "sin",
                "sinf",
                "sqrt",
                "rsqrtf",
                "fmaf",
                "exp",
                "expf",
                "pow",
                "hypot",
                "erfinv",
                "j0",
                "y1",
                "signbit",
                "isnan",
                "fmod",
                "floor",
                "round",
                "curand",
                "curand_init",
                "curand_uniform",
                "malloc",
                "free",
                "memcpy",
                "rand",
                "random",
                "exit",
                "assert",
                "clock",
                "make_float3",
                "llabs",
                "fabsf",
            ]),
        ),
        (
            "non-ASCII names",
            words(&["λ", "café", "π", "变量", "naïve", "Ω-kernel", "x′", "ÿ"]),
        ),
        (
            "names that differ only in punctuation or case",
            words(&[
                "a-b", "a_b", "A-B", "a*", "a_p", "1x", "%x", "_1x", "x-1", "x_1",
            ]),
        ),
    ]
}

/// The positions a name can take, each as a module of one or many uses of the identifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    Local,
    Parameter,
    Kernel,
    DeviceFunction,
    Global,
    Struct,
    Field,
}

impl Position {
    pub const ALL: [Position; 7] = [
        Position::Local,
        Position::Parameter,
        Position::Kernel,
        Position::DeviceFunction,
        Position::Global,
        Position::Struct,
        Position::Field,
    ];

    /// The definitions that put the `i`th identifier `name` in this position (with a use of it,
    /// and calls of intrinsics whose names it could shadow).
    fn definitions(self, i: usize, name: &str) -> String {
        match self {
            Position::Local => format!(
                "(defkernel local-{i} (void ((out float*) (n int)))
                   (let (({name} (+ n 1)))
                     (set (aref out 0) (+ (sin (* 1.0 {name})) (sqrt 2.0) (floor 1.5)))
                     (set (aref out 1) (min (abs (* 1.0 {name})) (max 2.0 (dot (float3 1.0 2.0 3.0) (float3 n 1.0 1.0)))))
                     (atomic-add (pointer (aref out 2)) 1.0)
                     (syncthreads)))\n"
            ),
            Position::Parameter => format!(
                "(defkernel parameter-{i} (void (({name} float*) (n int)))
                   (set (aref {name} 0) (+ (sin (* 1.0 n)) (sqrt 2.0)))
                   (atomic-add (pointer (aref {name} 1)) 1.0))\n"
            ),
            Position::Kernel => format!(
                "(defkernel {name} (void ((out float*)))
                   (set (aref out 0) (sin 1.0)))\n"
            ),
            Position::DeviceFunction => format!(
                "(defkernel {name} (float ((x float)))
                   (return (sqrt (* x x))))
                 (defkernel call-{i} (void ((out float*)))
                   (set (aref out 0) ({name} 2.0)))\n"
            ),
            Position::Global => format!(
                "(defglobal {name} 1.5)
                 (defkernel read-{i} (void ((out float*)))
                   (set (aref out 0) (+ {name} (sin 1.0))))\n"
            ),
            Position::Struct => format!(
                "(defkernel-struct {name} (x int) (y float))
                 (defkernel use-{i} (void ((p {name}*) (out float*)))
                   (set (aref out 0) ({name}-y (aref p 0))))\n"
            ),
            Position::Field => format!(
                "(defkernel-struct holder-{i} ({name} float) (other int))
                 (defkernel use-{i} (void ((p holder-{i}*) (out float*)))
                   (set (aref out 0) (holder-{i}-{name} (aref p 0))))\n"
            ),
        }
    }
}

/// An identifier in a position the front end refused, and its error.
pub type Rejected = (String, chorus_lang::Error);

/// Whether the front end accepts `text`; its error (which always has a span) when not.
fn accepts(text: &str) -> Result<(), chorus_lang::Error> {
    chorus_lang::compile_str(text, "sweep.lisp").map(|_| ())
}

/// One module per position holding every identifier the front end accepts there, named
/// `identifier-sweep-<position>.lisp`, and the identifiers it rejected (with the error).
pub fn sweep_modules() -> (Vec<(String, String)>, Vec<Rejected>) {
    let mut modules = Vec::new();
    let mut rejected = Vec::new();
    let mut all: Vec<String> = identifier_classes()
        .into_iter()
        .flat_map(|(_, names)| names)
        .collect();
    let mut seen = std::collections::HashSet::new();
    // The reader folds case (`A-B` is `a-b`): one of each.
    all.retain(|name| seen.insert(name.to_lowercase()));
    for position in Position::ALL {
        let mut text = String::new();
        for (i, name) in all.iter().enumerate() {
            let definitions = position.definitions(i, name);
            match accepts(&definitions) {
                Ok(()) => text.push_str(&definitions),
                Err(e) => rejected.push((format!("{name} as {position:?}"), e)),
            }
        }
        let file = format!("identifier-sweep-{position:?}.lisp").to_lowercase();
        modules.push((file, text));
    }
    (modules, rejected)
}
