//! The overload table of the built-in functions, as data.
//!
//! Every built-in called by name (`(+ a b)`, `(atomic-add p v)`, `(shfl-sync m v l)`) has a list
//! of [`Signature`]s: the IR operation, the parameter types and the result type. The checker
//! resolves a call against this list (exact match first, then the cheapest implicit conversions,
//! see [`super::convert`]) and inserts implicit casts so that the arguments of every
//! [`ExprKind::Builtin`](crate::ir::ExprKind::Builtin) have **exactly** the parameter types of
//! one signature listed here. Back ends (the CUDA C printer, the CPU executor) may therefore
//! switch on `(op, argument types)` and rely on this table being complete.
//!
//! Operators that take any number of arguments (`+ - * / logand logior logxor min max`) are
//! listed with their binary signatures and fold **left** (`(- 2 3 4)` is `((2 - 3) - 4)`), see
//! [`folds_left`]. `-` and `/` with one argument are [`Builtin::Neg`] and [`Builtin::Recip`].
//!
//! `and` and `or` are listed with their binary signature; they take any number of `bool`s, fold
//! left and short-circuit. Not in this table, because they are not calls of a fixed signature:
//! casts (`(float x)`, `(uint -1)`, `float-to-half` …, see [`cast_target`]), vector and
//! structure constructors, accessors, `aref`, `pointer`, `if`, `printf` and `cuda-asm`.
//!
//! Two deliberate results, kept from cl-cuda: `floor` returns `int` (the `sph` example relies on
//! it), while `ceil`, `round` and `trunc` return their floating type.
//!
//! Two remainders, because kernel `mod` keeps cl-cuda's meaning while macro-time `mod` is Common
//! Lisp's:
//!
//! | kernel built-in | meaning | `(… -7 3)` | `(… 7 -3)` | C |
//! |---|---|---|---|---|
//! | `mod`, `rem` | truncating: the sign of the dividend | -1 | 1 | `%`, `fmodf`/`fmod` |
//! | `floor-mod` | flooring: the sign of the divisor (Lisp's `mod`) | 2 | -2 | a helper |
//!
//! At macro time (`defkernelmacro` bodies) `mod` and `rem` are Common Lisp's: `(mod -7 3)` is 2
//! and `(rem -7 3)` is -1. So a kernel wanting Lisp's `mod` writes `floor-mod`. All three take
//! integers, `float` and `double`; an integer divisor of zero faults on the CPU executor and is
//! undefined on a GPU, as C's `%`.

use crate::ir::tensor::TensorOp;
use crate::ir::{AtomicOp, Builtin, MathFn, WarpReduceOp};
use crate::types::{ScalarType, Type, VectorType};
use std::collections::HashMap;
use std::fmt;
use std::sync::LazyLock;

/// One overload of a built-in.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The IR operation a call resolved to this overload becomes.
    pub op: Builtin,
    /// Parameter types, in order.
    pub params: Vec<Type>,
    /// Result type (`Void` for statements such as `syncthreads`).
    pub result: Type,
}

impl fmt::Display for Signature {
    /// `(int, int) → int`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{p}")?;
        }
        write!(f, ") → {}", self.result)
    }
}

/// The overloads of the built-in `name` (`"+"`, `"atomic-add"`), in order of preference (ties in
/// overload resolution go to the earlier one). Empty for a name that is not a table built-in.
///
/// ```
/// use chorus_lang::check::builtins::signatures;
/// use chorus_lang::ir::{AtomicOp, Builtin};
///
/// let cas = signatures("atomic-cas");
/// assert!(cas.iter().all(|s| s.op == Builtin::Atomic(AtomicOp::Cas)));
/// assert_eq!(cas[0].to_string(), "(int*, int, int) → int");
/// assert!(signatures("no-such-built-in").is_empty());
/// ```
pub fn signatures(name: &str) -> &'static [Signature] {
    TABLE.map.get(name).map(Vec::as_slice).unwrap_or(&[])
}

/// Every name in the table, in the order the table defines them.
pub fn names() -> impl Iterator<Item = &'static str> {
    TABLE.names.iter().copied()
}

/// Every `(name, signature)` whose operation is `op`: what a back end must implement for it.
pub fn signatures_of(op: Builtin) -> impl Iterator<Item = (&'static str, &'static Signature)> {
    TABLE
        .names
        .iter()
        .flat_map(|n| TABLE.map[n].iter().map(move |s| (*n, s)))
        .filter(move |(_, s)| s.op == op)
}

/// True for the operators that take any number (at least one) of arguments and fold left over
/// their binary signatures.
pub fn folds_left(name: &str) -> bool {
    matches!(
        name,
        "+" | "-" | "*" | "/" | "logand" | "logior" | "logxor" | "min" | "max"
    )
}

/// The named conversions between `float` and the reduced-precision types: name, source, target.
pub const CONVERSIONS: [(&str, ScalarType, ScalarType); 4] = [
    ("float-to-half", ScalarType::Float, ScalarType::Half),
    ("half-to-float", ScalarType::Half, ScalarType::Float),
    ("float-to-bfloat16", ScalarType::Float, ScalarType::BFloat16),
    ("bfloat16-to-float", ScalarType::BFloat16, ScalarType::Float),
];

/// The explicit conversions written as calls: every scalar type name (`(float x)`, `(uint -1)`,
/// `(half f)`), and the [`CONVERSIONS`]. Gives the target type and, for a named conversion, the
/// one source type it accepts.
pub fn cast_target(name: &str) -> Option<(ScalarType, Option<ScalarType>)> {
    match CONVERSIONS.iter().find(|(n, ..)| *n == name) {
        Some(&(_, source, target)) => Some((target, Some(source))),
        None => ScalarType::from_name(name).map(|t| (t, None)),
    }
}

/// The number types arithmetic is defined on: every integer type, `float`, `double`, `half` and
/// `bfloat16` (`fp8` and `fp4` are storage types: convert them first).
pub const ARITHMETIC_SCALARS: [ScalarType; 13] = [
    ScalarType::Int8,
    ScalarType::UInt8,
    ScalarType::Int16,
    ScalarType::UInt16,
    ScalarType::Int,
    ScalarType::UInt,
    ScalarType::Int64,
    ScalarType::UInt64,
    ScalarType::SizeT,
    ScalarType::Float,
    ScalarType::Double,
    ScalarType::Half,
    ScalarType::BFloat16,
];

/// The element types a texture or surface access reads or writes.
pub const ELEMENT_TYPES: [Type; 13] = [
    Type::Scalar(ScalarType::Int8),
    Type::Scalar(ScalarType::UInt8),
    Type::Scalar(ScalarType::Int16),
    Type::Scalar(ScalarType::UInt16),
    Type::Scalar(ScalarType::Int),
    Type::Scalar(ScalarType::UInt),
    Type::Scalar(ScalarType::Float),
    Type::Vector(VectorType::Int2),
    Type::Vector(VectorType::Int4),
    Type::Vector(VectorType::UInt2),
    Type::Vector(VectorType::UInt4),
    Type::Vector(VectorType::Float2),
    Type::Vector(VectorType::Float4),
];

/// The texture and surface built-ins by name.
const TEXTURE_NAMES: [&str; 10] = [
    "tex1d-fetch",
    "tex1d",
    "tex2d",
    "tex3d",
    "surf1d-read",
    "surf2d-read",
    "surf3d-read",
    "surf1d-write",
    "surf2d-write",
    "surf3d-write",
];

/// True for the texture and surface built-ins, whose reads name their element type first
/// (`check/texture.rs`).
pub fn is_texture_builtin(name: &str) -> bool {
    TEXTURE_NAMES.contains(&name)
}

/// The overloads by name, and the names in definition order.
struct Table {
    names: Vec<&'static str>,
    map: HashMap<&'static str, Vec<Signature>>,
}

/// Built on first use.
static TABLE: LazyLock<Table> = LazyLock::new(build);

/// `Type::Scalar(t)` (short, so that the table reads as data).
fn s(t: ScalarType) -> Type {
    Type::Scalar(t)
}

/// `Type::Vector(t)`.
fn v(t: VectorType) -> Type {
    Type::Vector(t)
}

/// A pointer to `t`.
fn ptr(t: Type) -> Type {
    t.pointer_to()
}

/// One signature.
fn sig(op: Builtin, params: &[Type], result: Type) -> Signature {
    Signature {
        op,
        params: params.to_vec(),
        result,
    }
}

/// Every integer type.
const INTEGERS: [ScalarType; 9] = [
    ScalarType::Int8,
    ScalarType::UInt8,
    ScalarType::Int16,
    ScalarType::UInt16,
    ScalarType::Int,
    ScalarType::UInt,
    ScalarType::Int64,
    ScalarType::UInt64,
    ScalarType::SizeT,
];

/// `float` and `double`.
const FLOATS: [ScalarType; 2] = [ScalarType::Float, ScalarType::Double];

/// Vectors of `float` and `double` (the ones cl-cuda scales and dots).
const REAL_VECTORS: [VectorType; 6] = [
    VectorType::Float2,
    VectorType::Float3,
    VectorType::Float4,
    VectorType::Double2,
    VectorType::Double3,
    VectorType::Double4,
];

/// The table: every built-in called by name, with its overloads in order of preference.
fn build() -> Table {
    use ScalarType::*;
    let mut t = Table {
        names: Vec::new(),
        map: HashMap::new(),
    };
    let mut add = |name: &'static str, sigs: Vec<Signature>| {
        if !t.map.contains_key(name) {
            t.names.push(name);
        }
        t.map.entry(name).or_default().extend(sigs);
    };
    let homogeneous = |op: Builtin, types: &[ScalarType], arity: usize| -> Vec<Signature> {
        types
            .iter()
            .map(|&x| sig(op, &vec![s(x); arity], s(x)))
            .collect()
    };

    // Arithmetic: scalars of one type, vectors component-wise, vector scaling (cl-cuda's
    // float3_scale, _scale_flipped, _scale_inverted), half2 component-wise for all four.
    for (name, op) in [
        ("+", Builtin::Add),
        ("-", Builtin::Sub),
        ("*", Builtin::Mul),
        ("/", Builtin::Div),
    ] {
        let mut sigs = homogeneous(op, &ARITHMETIC_SCALARS, 2);
        for vt in VectorType::ALL {
            let (vec, elem) = (v(vt), s(vt.element()));
            let componentwise =
                matches!(op, Builtin::Add | Builtin::Sub) || vt == VectorType::Half2;
            if componentwise {
                sigs.push(sig(op, &[vec.clone(), vec.clone()], vec.clone()));
            }
            match op {
                Builtin::Mul if vt != VectorType::Half2 => {
                    sigs.push(sig(op, &[vec.clone(), elem.clone()], vec.clone()));
                    sigs.push(sig(op, &[elem, vec.clone()], vec));
                }
                Builtin::Div if vt != VectorType::Half2 => {
                    sigs.push(sig(op, &[vec.clone(), elem], vec));
                }
                _ => {}
            }
        }
        add(name, sigs);
    }
    // Unary minus and reciprocal (cl-cuda's int_negate, float_recip, float3_negate …).
    let mut neg = homogeneous(Builtin::Neg, &ARITHMETIC_SCALARS, 1);
    neg.extend(
        VectorType::ALL
            .iter()
            .filter(|vt| vt.element() != UInt)
            .map(|&vt| sig(Builtin::Neg, &[v(vt)], v(vt))),
    );
    add("-", neg);
    let mut recip = homogeneous(Builtin::Recip, &[Int, Float, Double, Half, BFloat16], 1);
    recip.extend(
        REAL_VECTORS
            .iter()
            .map(|&vt| sig(Builtin::Recip, &[v(vt)], v(vt))),
    );
    add("/", recip);

    let integers_and_floats: Vec<ScalarType> =
        INTEGERS.iter().chain(FLOATS.iter()).copied().collect();
    add("mod", homogeneous(Builtin::Rem, &integers_and_floats, 2));
    add("rem", homogeneous(Builtin::Rem, &integers_and_floats, 2));
    add(
        "floor-mod",
        homogeneous(Builtin::FloorMod, &integers_and_floats, 2),
    );
    add("min", homogeneous(Builtin::Min, &ARITHMETIC_SCALARS, 2));
    add("max", homogeneous(Builtin::Max, &ARITHMETIC_SCALARS, 2));
    add(
        "abs",
        homogeneous(
            Builtin::Abs,
            &[Int8, Int16, Int, Int64, Float, Double, Half, BFloat16],
            1,
        ),
    );

    // Comparisons: any number type (half and bfloat16 through __heq …); = and /= also on bool.
    for (name, op) in [
        ("=", Builtin::Eq),
        ("/=", Builtin::Ne),
        ("<", Builtin::Lt),
        (">", Builtin::Gt),
        ("<=", Builtin::Le),
        (">=", Builtin::Ge),
    ] {
        let mut sigs: Vec<Signature> = ARITHMETIC_SCALARS
            .iter()
            .map(|&x| sig(op, &[s(x), s(x)], Type::Bool))
            .collect();
        if matches!(op, Builtin::Eq | Builtin::Ne) {
            sigs.push(sig(op, &[Type::Bool, Type::Bool], Type::Bool));
        }
        add(name, sigs);
    }
    add("not", vec![sig(Builtin::Not, &[Type::Bool], Type::Bool)]);
    // `and` and `or` take any number of bools and short-circuit; the checker folds them left
    // into these binary operations (`(and)` is `t`, `(or)` is `nil`, one operand is itself).
    add(
        "and",
        vec![sig(Builtin::And, &[Type::Bool, Type::Bool], Type::Bool)],
    );
    add(
        "or",
        vec![sig(Builtin::Or, &[Type::Bool, Type::Bool], Type::Bool)],
    );

    // Bitwise operations on integers.
    add("logand", homogeneous(Builtin::BitAnd, &INTEGERS, 2));
    add("logior", homogeneous(Builtin::BitOr, &INTEGERS, 2));
    add("logxor", homogeneous(Builtin::BitXor, &INTEGERS, 2));
    add("xor", homogeneous(Builtin::BitXor, &INTEGERS, 2));
    add("lognot", homogeneous(Builtin::BitNot, &INTEGERS, 1));
    // Shifts: the result has the left operand's type; the count is that type or an int.
    for (name, op) in [("shl", Builtin::Shl), ("shr", Builtin::Shr)] {
        let mut sigs = homogeneous(op, &INTEGERS, 2);
        sigs.extend(
            INTEGERS
                .iter()
                .filter(|&&x| x != Int)
                .map(|&x| sig(op, &[s(x), s(Int)], s(x))),
        );
        add(name, sigs);
    }

    // Floating math: float → float (the `…f` C function), double → double.
    let unary_math: [(&'static str, MathFn); 31] = [
        ("exp", MathFn::Exp),
        ("exp2", MathFn::Exp2),
        ("expm1", MathFn::Expm1),
        ("log", MathFn::Log),
        ("log2", MathFn::Log2),
        ("log10", MathFn::Log10),
        ("log1p", MathFn::Log1p),
        ("sin", MathFn::Sin),
        ("cos", MathFn::Cos),
        ("tan", MathFn::Tan),
        ("asin", MathFn::Asin),
        ("acos", MathFn::Acos),
        ("atan", MathFn::Atan),
        ("sinh", MathFn::Sinh),
        ("cosh", MathFn::Cosh),
        ("tanh", MathFn::Tanh),
        ("sqrt", MathFn::Sqrt),
        ("rsqrt", MathFn::Rsqrt),
        ("cbrt", MathFn::Cbrt),
        ("ceil", MathFn::Ceil),
        ("round", MathFn::Round),
        ("trunc", MathFn::Trunc),
        ("erf", MathFn::Erf),
        ("erfc", MathFn::Erfc),
        ("__exp", MathFn::FastExp),
        ("__sin", MathFn::FastSin),
        ("__cos", MathFn::FastCos),
        ("__log", MathFn::FastLog),
        ("__log2", MathFn::FastLog2),
        ("floor", MathFn::Floor),
        // `atan` also takes two arguments (Common Lisp's (atan y x)), below.
        ("atan2", MathFn::Atan2),
    ];
    for (name, f) in unary_math {
        let sigs = match f {
            // cl-cuda: floor returns int (C's implicit conversion of floorf's result).
            MathFn::Floor => FLOATS
                .iter()
                .map(|&x| sig(Builtin::Math(f), &[s(x)], s(Int)))
                .collect(),
            // The float-only intrinsics (__expf exists for double only as exp).
            MathFn::FastSin | MathFn::FastCos | MathFn::FastLog | MathFn::FastLog2 => {
                vec![sig(Builtin::Math(f), &[s(Float)], s(Float))]
            }
            MathFn::Atan2 => homogeneous(Builtin::Math(f), &FLOATS, 2),
            _ => homogeneous(Builtin::Math(f), &FLOATS, 1),
        };
        add(name, sigs);
    }
    add(
        "atan",
        homogeneous(Builtin::Math(MathFn::Atan2), &FLOATS, 2),
    );
    add("expt", homogeneous(Builtin::Math(MathFn::Pow), &FLOATS, 2));
    // CL-Cuda's earlier spelling, kept by its nbody example: `rsqrt` of a float.
    add(
        "rsqrtf",
        vec![sig(Builtin::Math(MathFn::Rsqrt), &[s(Float)], s(Float))],
    );
    add(
        "hypot",
        homogeneous(Builtin::Math(MathFn::Hypot), &FLOATS, 2),
    );
    add("fma", homogeneous(Builtin::Fma, &FLOATS, 3));
    add("__divide", homogeneous(Builtin::FastDivide, &FLOATS, 2));
    add(
        "__saturate",
        vec![sig(Builtin::Saturate, &[s(Float)], s(Float))],
    );
    add(
        "double-to-int-rn",
        vec![sig(Builtin::DoubleToIntRn, &[s(Double)], s(Int))],
    );
    add(
        "dot",
        REAL_VECTORS
            .iter()
            .map(|&vt| sig(Builtin::Dot, &[v(vt), v(vt)], s(vt.element())))
            .collect(),
    );

    // Integer intrinsics: __clz/__clzll, __popc/__popcll, __ffs/__ffsll return int; __brev keeps
    // the operand's type.
    for (name, op) in [
        ("clz", Builtin::Clz),
        ("popc", Builtin::Popc),
        ("ffs", Builtin::Ffs),
    ] {
        add(
            name,
            [Int, UInt, Int64, UInt64]
                .iter()
                .map(|&x| sig(op, &[s(x)], s(Int)))
                .collect(),
        );
    }
    add(
        "brev",
        homogeneous(Builtin::Brev, &[UInt, Int, UInt64, Int64], 1),
    );

    // Synchronisation and fences.
    add(
        "syncthreads",
        vec![sig(Builtin::SyncThreads, &[], Type::Void)],
    );
    add(
        "syncwarp",
        vec![
            sig(Builtin::SyncWarp, &[], Type::Void),
            sig(Builtin::SyncWarp, &[s(UInt)], Type::Void),
        ],
    );
    add(
        "threadfence",
        vec![sig(Builtin::ThreadFence, &[], Type::Void)],
    );
    add(
        "threadfence-block",
        vec![sig(Builtin::ThreadFenceBlock, &[], Type::Void)],
    );
    add(
        "threadfence-system",
        vec![sig(Builtin::ThreadFenceSystem, &[], Type::Void)],
    );

    // Warp collectives; the mask comes first, as a uint ((uint -1) is every lane).
    const SHUFFLED: [ScalarType; 7] = [Int, UInt, Int64, UInt64, Float, Double, Half];
    for (name, op) in [
        ("shfl-sync", Builtin::ShflSync),
        ("shfl-up-sync", Builtin::ShflUpSync),
        ("shfl-down-sync", Builtin::ShflDownSync),
        ("shfl-xor-sync", Builtin::ShflXorSync),
    ] {
        let mut sigs = Vec::new();
        for x in SHUFFLED {
            sigs.push(sig(op, &[s(UInt), s(x), s(Int)], s(x)));
            sigs.push(sig(op, &[s(UInt), s(x), s(Int), s(Int)], s(x)));
        }
        add(name, sigs);
    }
    let predicate = |op: Builtin, result: Type| {
        vec![
            sig(op, &[s(UInt), Type::Bool], result.clone()),
            sig(op, &[s(UInt), s(Int)], result),
        ]
    };
    add("ballot-sync", predicate(Builtin::BallotSync, s(UInt)));
    add("all-sync", predicate(Builtin::AllSync, s(Int)));
    add("any-sync", predicate(Builtin::AnySync, s(Int)));
    add("activemask", vec![sig(Builtin::ActiveMask, &[], s(UInt))]);
    const MATCHED: [ScalarType; 6] = [Int, UInt, Int64, UInt64, Float, Double];
    add(
        "match-any-sync",
        MATCHED
            .iter()
            .map(|&x| sig(Builtin::MatchAnySync, &[s(UInt), s(x)], s(UInt)))
            .collect(),
    );
    add(
        "match-all-sync",
        MATCHED
            .iter()
            .map(|&x| {
                sig(
                    Builtin::MatchAllSync,
                    &[s(UInt), s(x), ptr(s(Int))],
                    s(UInt),
                )
            })
            .collect(),
    );
    for (name, op) in [
        ("reduce-add-sync", WarpReduceOp::Add),
        ("reduce-min-sync", WarpReduceOp::Min),
        ("reduce-max-sync", WarpReduceOp::Max),
        ("reduce-and-sync", WarpReduceOp::And),
        ("reduce-or-sync", WarpReduceOp::Or),
        ("reduce-xor-sync", WarpReduceOp::Xor),
    ] {
        let op = Builtin::WarpReduce(op);
        add(
            name,
            vec![
                sig(op, &[s(UInt), s(Int)], s(Int)),
                sig(op, &[s(UInt), s(UInt)], s(UInt)),
            ],
        );
    }

    // Atomics, with the overload sets CUDA defines (sm_70 and newer).
    let atomic = |op: AtomicOp, types: &[ScalarType]| -> Vec<Signature> {
        types
            .iter()
            .map(|&x| {
                let params = if op == AtomicOp::Cas {
                    vec![ptr(s(x)), s(x), s(x)]
                } else {
                    vec![ptr(s(x)), s(x)]
                };
                Signature {
                    op: Builtin::Atomic(op),
                    params,
                    result: s(x),
                }
            })
            .collect()
    };
    add(
        "atomic-add",
        atomic(
            AtomicOp::Add,
            &[Int, UInt, UInt64, Float, Double, Half, BFloat16],
        ),
    );
    add("atomic-sub", atomic(AtomicOp::Sub, &[Int, UInt]));
    add(
        "atomic-exch",
        atomic(AtomicOp::Exch, &[Int, UInt, UInt64, Float]),
    );
    add(
        "atomic-min",
        atomic(AtomicOp::Min, &[Int, UInt, Int64, UInt64]),
    );
    add(
        "atomic-max",
        atomic(AtomicOp::Max, &[Int, UInt, Int64, UInt64]),
    );
    add("atomic-inc", atomic(AtomicOp::Inc, &[UInt]));
    add("atomic-dec", atomic(AtomicOp::Dec, &[UInt]));
    add(
        "atomic-cas",
        atomic(AtomicOp::Cas, &[Int, UInt, UInt64, UInt16]),
    );
    add("atomic-and", atomic(AtomicOp::And, &[Int, UInt, UInt64]));
    add("atomic-or", atomic(AtomicOp::Or, &[Int, UInt, UInt64]));
    add("atomic-xor", atomic(AtomicOp::Xor, &[Int, UInt, UInt64]));

    // Thread-block clusters (sm_90).
    add(
        "cluster-rank",
        vec![sig(Builtin::ClusterRank, &[], s(UInt))],
    );
    add(
        "cluster-barrier",
        vec![sig(Builtin::ClusterBarrier, &[], Type::Void)],
    );
    add(
        "threadfence-cluster",
        vec![sig(Builtin::ThreadFenceCluster, &[], Type::Void)],
    );

    // cuRAND XORWOW: seed, subsequence, offset, state.
    let state = ptr(Type::CurandStateXorwow);
    add(
        "curand-init-xorwow",
        vec![
            sig(
                Builtin::CurandInit,
                &[s(Int), s(Int), s(Int), state.clone()],
                Type::Void,
            ),
            sig(
                Builtin::CurandInit,
                &[s(UInt64), s(UInt64), s(UInt64), state.clone()],
                Type::Void,
            ),
        ],
    );
    add(
        "curand-uniform-float-xorwow",
        vec![sig(
            Builtin::CurandUniform,
            std::slice::from_ref(&state),
            s(Float),
        )],
    );
    add(
        "curand-uniform-double-xorwow",
        vec![sig(
            Builtin::CurandUniform,
            std::slice::from_ref(&state),
            s(Double),
        )],
    );
    add(
        "curand-normal-float-xorwow",
        vec![sig(
            Builtin::CurandNormal,
            std::slice::from_ref(&state),
            s(Float),
        )],
    );
    add(
        "curand-normal-double-xorwow",
        vec![sig(Builtin::CurandNormal, &[state], s(Double))],
    );

    // Textures and surfaces (`check/texture.rs` reads the element type written in the call and
    // picks among these by result type; surface coordinates are ints, `x` in bytes).
    let elements = &ELEMENT_TYPES;
    let tex = Type::TextureObject;
    add(
        "tex1d-fetch",
        elements
            .iter()
            .map(|t| sig(Builtin::TexFetch, &[tex.clone(), s(Int)], t.clone()))
            .collect(),
    );
    for (name, dims) in [("tex1d", 1u8), ("tex2d", 2), ("tex3d", 3)] {
        let mut params = vec![tex.clone()];
        params.extend(std::iter::repeat_n(s(Float), usize::from(dims)));
        add(
            name,
            elements
                .iter()
                .map(|t| sig(Builtin::Tex(dims), &params, t.clone()))
                .collect(),
        );
    }
    for (read, write, dims) in [
        ("surf1d-read", "surf1d-write", 1u8),
        ("surf2d-read", "surf2d-write", 2),
        ("surf3d-read", "surf3d-write", 3),
    ] {
        let mut coords = vec![Type::SurfaceObject];
        coords.extend(std::iter::repeat_n(s(Int), usize::from(dims)));
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for mode in crate::ir::SurfaceBoundary::ALL {
            for t in elements {
                reads.push(sig(Builtin::SurfRead(dims, mode), &coords, t.clone()));
                let mut params = vec![t.clone()];
                params.extend(coords.iter().cloned());
                writes.push(sig(Builtin::SurfWrite(dims, mode), &params, Type::Void));
            }
        }
        add(read, reads);
        add(write, writes);
    }
    // Hopper: wgmma, TMA, mbarriers (`check/hopper.rs`).
    super::hopper::add_signatures(&mut |name, overloads| {
        let sigs = overloads
            .into_iter()
            .map(|(op, params, result)| Signature { op, params, result })
            .collect();
        add(name, sigs);
    });
    t
}

/// True when a call of `op` does something besides computing its value (so it may stand alone
/// as a statement).
pub fn has_effect(op: Builtin) -> bool {
    matches!(
        op,
        Builtin::SyncThreads
            | Builtin::SyncWarp
            | Builtin::ThreadFence
            | Builtin::ThreadFenceBlock
            | Builtin::ThreadFenceSystem
            | Builtin::ThreadFenceCluster
            | Builtin::ClusterBarrier
            | Builtin::Atomic(_)
            | Builtin::MatchAllSync
            | Builtin::CurandInit
            | Builtin::CurandUniform
            | Builtin::CurandNormal
            | Builtin::SurfWrite(..)
            | Builtin::Tensor(
                TensorOp::CpAsync { .. }
                    | TensorOp::CpAsyncCommit
                    | TensorOp::CpAsyncWait(_)
                    | TensorOp::CpAsyncWaitAll
            )
    ) || matches!(op, Builtin::Hopper(h) if super::hopper::has_effect(h))
}

/// A short list of the accepted signatures for an error message: overloads that differ only in
/// one type are grouped (`(T, T) → T for T in int, uint, float`).
pub fn describe(sigs: &[Signature]) -> String {
    // Group by the signature with its most frequent base type written as T.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for sg in sigs {
        let key_ty = most_frequent_base(sg);
        let shape = replace_type_word(&sg.to_string(), &key_ty, "T");
        match groups.iter_mut().find(|(sh, _)| *sh == shape) {
            Some((_, tys)) => tys.push(key_ty),
            None => groups.push((shape, vec![key_ty])),
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(shape, tys)| {
            if tys.len() == 1 {
                replace_type_word(&shape, "T", &tys[0])
            } else {
                format!("{shape} for T in {}", tys.join(", "))
            }
        })
        .collect();
    parts.join("; ")
}

/// The base type (stars removed) that occurs most often in a signature.
fn most_frequent_base(sg: &Signature) -> String {
    let bases: Vec<String> = sg
        .params
        .iter()
        .chain(std::iter::once(&sg.result))
        .map(|t| t.to_string().trim_end_matches('*').to_string())
        .collect();
    let count = |b: &String| bases.iter().filter(|x| *x == b).count();
    bases
        .iter()
        .max_by_key(|b| (count(b), b.as_str() != "void" && b.as_str() != "bool"))
        .cloned()
        .unwrap_or_default()
}

/// Replaces whole type words `from` in `text` (so `int` does not match inside `uint` or `int*`
/// does not lose its star).
fn replace_type_word(text: &str, from: &str, to: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = String::new();
    let mut rest = text;
    while let Some(pos) = rest.find(from) {
        let before_ok = rest[..pos].chars().last().is_none_or(|c| !is_word(c));
        let after = &rest[pos + from.len()..];
        let after_ok = after.chars().next().is_none_or(|c| !is_word(c));
        out.push_str(&rest[..pos]);
        if before_ok && after_ok {
            out.push_str(to);
        } else {
            out.push_str(from);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_groups_homogeneous_overloads() {
        let text = describe(signatures("mod"));
        assert!(
            text.starts_with("(T, T) → T for T in int8, uint8"),
            "{text}"
        );
        assert_eq!(describe(signatures("double-to-int-rn")), "(double) → int");
    }

    #[test]
    fn every_name_has_signatures() {
        for name in names() {
            assert!(!signatures(name).is_empty(), "{name}");
        }
        assert!(signatures("nosuch").is_empty());
        assert!(signatures_of(Builtin::Atomic(AtomicOp::Cas)).count() >= 4);
    }
}
