//! Expressions: literals, conversions, operators and built-ins.

use super::IndexSpelling;
use super::helpers::{Helper, Operands, VectorOp};
use super::printer::Emitter;
use crate::host::{Fp4E2M1, Fp8E4M3};
use crate::ir::{
    AtomicOp, Builtin, Expr, ExprKind, IndexVar, Literal, MathFn, SurfaceBoundary, WarpReduceOp,
};
use crate::types::{ScalarType, Type, VectorType};

/// How an expression's text binds, which decides where it needs parentheses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Prec {
    /// An identifier, a non-negative literal, a call or a postfix expression (`a[i]`, `v.x`).
    Atom,
    /// One parenthesised group: `(a + b)`, `(c ? a : b)`.
    Paren,
    /// A prefix operator or a cast: `-(x)`, `(float)(i)`, `-1`.
    Unary,
}

/// How the C value of an expression relates to the value the language gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Repr {
    /// The C type is the IR type's spelling: C and the language agree.
    Exact,
    /// The value is the language's, but C types it `unsigned int` where the language says `int`
    /// (the index variables: `threadIdx.x`).
    Widened,
    /// The value agrees with the language's only modulo 2^N, N the IR type's width: unsigned
    /// arithmetic on index variables, or 8- and 16-bit arithmetic that C promoted to `int`.
    Ring,
}

/// A printed expression.
#[derive(Clone, Debug)]
pub(super) struct CExpr {
    pub text: String,
    pub prec: Prec,
    pub repr: Repr,
}

impl CExpr {
    fn new(text: impl Into<String>, prec: Prec) -> CExpr {
        CExpr {
            text: text.into(),
            prec,
            repr: Repr::Exact,
        }
    }

    fn atom(text: impl Into<String>) -> CExpr {
        CExpr::new(text, Prec::Atom)
    }

    fn paren(text: impl Into<String>) -> CExpr {
        CExpr::new(text, Prec::Paren)
    }

    fn unary(text: impl Into<String>) -> CExpr {
        CExpr::new(text, Prec::Unary)
    }

    fn with_repr(mut self, repr: Repr) -> CExpr {
        self.repr = repr;
        self
    }

    /// The text as the operand of a postfix operator (`x[i]`, `x.y`).
    fn postfix_operand(&self) -> String {
        match self.prec {
            Prec::Unary => format!("({})", self.text),
            _ => self.text.clone(),
        }
    }

    /// The text in one pair of parentheses: the operand of a prefix operator or a cast.
    fn parenthesised(&self) -> String {
        match self.prec {
            Prec::Paren => self.text.clone(),
            _ => format!("({})", self.text),
        }
    }

    /// The text without its outer parentheses, for `if (…)`, `while (…)`, `switch (…)` and
    /// expression statements.
    pub(super) fn bare(&self) -> &str {
        match self.prec {
            Prec::Paren => &self.text[1..self.text.len() - 1],
            _ => &self.text,
        }
    }
}

/// The 8- and 16-bit integers, which C promotes to `int` before any arithmetic.
fn is_small_integer(s: ScalarType) -> bool {
    matches!(
        s,
        ScalarType::Int8 | ScalarType::UInt8 | ScalarType::Int16 | ScalarType::UInt16
    )
}

/// The scalars C knows without a header and converts implicitly with its usual rules.
fn is_standard(ty: &Type) -> bool {
    match ty {
        Type::Bool => true,
        Type::Scalar(s) => !s.is_extended_float(),
        _ => false,
    }
}

/// `half` or `bfloat16`: the types with `__h…` arithmetic.
fn is_half_like(ty: &Type) -> bool {
    matches!(ty, Type::Scalar(ScalarType::Half | ScalarType::BFloat16))
}

/// Width in bits of an integer type.
fn bits(s: ScalarType) -> u32 {
    (s.size() * 8) as u32
}

/// C's usual arithmetic conversions on two standard scalars (`bool` promotes like a small
/// integer; `size_t` is `unsigned long`, ranked between `int` and `long long`).
fn usual_arithmetic(a: &Type, b: &Type) -> Option<ScalarType> {
    fn promote(t: &Type) -> Option<ScalarType> {
        match t {
            Type::Bool => Some(ScalarType::Int),
            Type::Scalar(s) if s.is_extended_float() => None,
            Type::Scalar(s) if is_small_integer(*s) => Some(ScalarType::Int),
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }
    fn rank(s: ScalarType) -> u8 {
        match s {
            ScalarType::Int | ScalarType::UInt => 1,
            ScalarType::SizeT => 2,
            _ => 3,
        }
    }
    let (a, b) = (promote(a)?, promote(b)?);
    if a == ScalarType::Double || b == ScalarType::Double {
        return Some(ScalarType::Double);
    }
    if a == ScalarType::Float || b == ScalarType::Float {
        return Some(ScalarType::Float);
    }
    if a == b {
        return Some(a);
    }
    if a.is_signed_integer() == b.is_signed_integer() {
        return Some(if rank(a) >= rank(b) { a } else { b });
    }
    let (unsigned, signed) = if a.is_signed_integer() {
        (b, a)
    } else {
        (a, b)
    };
    if rank(unsigned) >= rank(signed) {
        Some(unsigned)
    } else if bits(signed) > bits(unsigned) {
        Some(signed)
    } else {
        // `long long` against `unsigned long`: the unsigned type of the signed one's rank.
        Some(ScalarType::UInt64)
    }
}

/// The type C gives a printed expression whose IR type is `ty`, when the two agree in value.
fn c_type_of(c: &CExpr, ty: &Type) -> Option<Type> {
    match c.repr {
        Repr::Exact => Some(ty.clone()),
        Repr::Widened => Some(Type::UINT),
        Repr::Ring => None,
    }
}

/// Converts a literal to another scalar type, as C would.
fn convert_literal(lit: Literal, to: &Type) -> Option<Literal> {
    let as_f64 = |l: Literal| match l {
        Literal::Bool(b) => f64::from(u8::from(b)),
        Literal::Int(v) => v as f64,
        Literal::Float(v) => v,
    };
    match to {
        Type::Bool => Some(Literal::Bool(match lit {
            Literal::Bool(b) => b,
            Literal::Int(v) => v != 0,
            Literal::Float(v) => v != 0.0,
        })),
        Type::Scalar(s) if s.is_integer() => match lit {
            Literal::Bool(b) => Some(Literal::Int(i128::from(b))),
            Literal::Int(v) => Some(Literal::Int(v)),
            // C truncates toward zero; out-of-range values are left to an explicit cast.
            Literal::Float(v) if v.is_finite() && v.abs() < 9.0e18 => {
                Some(Literal::Int(v.trunc() as i128))
            }
            Literal::Float(_) => None,
        },
        Type::Scalar(ScalarType::Float) => Some(Literal::Float(f64::from(as_f64(lit) as f32))),
        Type::Scalar(ScalarType::Double | ScalarType::Half | ScalarType::BFloat16) => {
            Some(Literal::Float(as_f64(lit)))
        }
        _ => None,
    }
}

/// `value` wrapped to the `bits`-bit two's complement range (signed or not).
fn wrap_integer(value: i128, bits: u32, signed: bool) -> i128 {
    let modulus = 1i128 << bits;
    let v = value.rem_euclid(modulus);
    if signed && v >= modulus / 2 {
        v - modulus
    } else {
        v
    }
}

/// The C function names of a math function: (float, double, half and bfloat16 if CUDA has
/// one for them).
fn math_names(f: MathFn) -> (&'static str, &'static str, Option<&'static str>) {
    match f {
        MathFn::Exp => ("expf", "exp", Some("hexp")),
        MathFn::Exp2 => ("exp2f", "exp2", Some("hexp2")),
        MathFn::Expm1 => ("expm1f", "expm1", None),
        MathFn::Log => ("logf", "log", Some("hlog")),
        MathFn::Log2 => ("log2f", "log2", Some("hlog2")),
        MathFn::Log10 => ("log10f", "log10", Some("hlog10")),
        MathFn::Log1p => ("log1pf", "log1p", None),
        MathFn::Sin => ("sinf", "sin", Some("hsin")),
        MathFn::Cos => ("cosf", "cos", Some("hcos")),
        MathFn::Tan => ("tanf", "tan", None),
        MathFn::Asin => ("asinf", "asin", None),
        MathFn::Acos => ("acosf", "acos", None),
        MathFn::Atan => ("atanf", "atan", None),
        MathFn::Atan2 => ("atan2f", "atan2", None),
        MathFn::Sinh => ("sinhf", "sinh", None),
        MathFn::Cosh => ("coshf", "cosh", None),
        MathFn::Tanh => ("tanhf", "tanh", None),
        MathFn::Sqrt => ("sqrtf", "sqrt", Some("hsqrt")),
        MathFn::Rsqrt => ("rsqrtf", "rsqrt", Some("hrsqrt")),
        MathFn::Cbrt => ("cbrtf", "cbrt", None),
        MathFn::Pow => ("powf", "pow", None),
        MathFn::Hypot => ("hypotf", "hypot", None),
        MathFn::Floor => ("floorf", "floor", Some("hfloor")),
        MathFn::Ceil => ("ceilf", "ceil", Some("hceil")),
        MathFn::Round => ("roundf", "round", None),
        MathFn::Trunc => ("truncf", "trunc", Some("htrunc")),
        MathFn::Erf => ("erff", "erf", None),
        MathFn::Erfc => ("erfcf", "erfc", None),
        // CUDA has fast intrinsics for float only; double uses the accurate function.
        MathFn::FastExp => ("__expf", "exp", None),
        MathFn::FastSin => ("__sinf", "sin", None),
        MathFn::FastCos => ("__cosf", "cos", None),
        MathFn::FastLog => ("__logf", "log", None),
        MathFn::FastLog2 => ("__log2f", "log2", None),
    }
}

fn atomic_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "atomicAdd",
        AtomicOp::Sub => "atomicSub",
        AtomicOp::Exch => "atomicExch",
        AtomicOp::Min => "atomicMin",
        AtomicOp::Max => "atomicMax",
        AtomicOp::Inc => "atomicInc",
        AtomicOp::Dec => "atomicDec",
        AtomicOp::Cas => "atomicCAS",
        AtomicOp::And => "atomicAnd",
        AtomicOp::Or => "atomicOr",
        AtomicOp::Xor => "atomicXor",
    }
}

fn warp_reduce_name(op: WarpReduceOp) -> &'static str {
    match op {
        WarpReduceOp::Add => "__reduce_add_sync",
        WarpReduceOp::Min => "__reduce_min_sync",
        WarpReduceOp::Max => "__reduce_max_sync",
        WarpReduceOp::And => "__reduce_and_sync",
        WarpReduceOp::Or => "__reduce_or_sync",
        WarpReduceOp::Xor => "__reduce_xor_sync",
    }
}

/// A call `name(a, b, …)` of a function the module or the printer defines.
fn plain_call(name: &str, args: &[CExpr]) -> CExpr {
    let args: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    CExpr::atom(format!("{name}({})", args.join(", ")))
}

impl Emitter<'_> {
    /// The dialect's call of intrinsic `intrinsic` (the printer's CUDA name) on printed
    /// arguments, including the header that declares it; a refusal is recorded as an error.
    pub(super) fn call_text(&mut self, intrinsic: &str, args: &[String]) -> String {
        if let Some(header) = self.dialect.intrinsic_header(intrinsic) {
            self.include(header);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        match self.dialect.call(intrinsic, &refs) {
            Some(text) => text,
            None => {
                self.unsupported(&format!("`{intrinsic}`"));
                format!("{intrinsic}()")
            }
        }
    }

    /// [`Emitter::call_text`] on printed expressions.
    fn call(&mut self, intrinsic: &str, args: &[CExpr]) -> CExpr {
        let texts: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
        CExpr::atom(self.call_text(intrinsic, &texts))
    }

    /// Prints `e`; the result may be [`Repr::Widened`] or [`Repr::Ring`].
    pub(super) fn expr(&mut self, e: &Expr) -> CExpr {
        let outer = std::mem::replace(&mut self.span, e.span.clone());
        let c = self.expr_here(e);
        self.span = outer;
        c
    }

    fn expr_here(&mut self, e: &Expr) -> CExpr {
        self.note_type(&e.ty);
        match &e.kind {
            ExprKind::Literal(lit) => self.literal(*lit, &e.ty),
            ExprKind::Local(id) => CExpr::atom(self.local_name(*id)),
            ExprKind::Global(id) => match self.global_structure(id.index()) {
                Some((_, structure)) if self.globals_passed() => {
                    CExpr::atom(format!("{structure}.{}", self.global_name(*id)))
                }
                // A `:shared` global where globals are passed: the globals' structures
                // report it.
                _ => CExpr::atom(self.global_name(*id)),
            },
            ExprKind::Index(var) => self.index_var(*var),
            ExprKind::Aref { base, indices } => {
                let mut text = self.exact(base).postfix_operand();
                for index in indices {
                    let i = self.value(index);
                    text.push('[');
                    text.push_str(&i.text);
                    text.push(']');
                }
                CExpr::atom(text)
            }
            ExprKind::Field { base, index } => {
                let field = self.field_name(&base.ty, *index);
                let base = self.exact(base).postfix_operand();
                CExpr::atom(format!("{base}.{field}"))
            }
            ExprKind::Builtin { op, args } => self.builtin(*op, args, &e.ty),
            ExprKind::Call { function, args } => {
                let name = self.function_name(*function);
                let mut args: Vec<CExpr> = args.iter().map(|a| self.converted(a)).collect();
                if let Some(uses) = self.uses_of(function.index()) {
                    if self.globals_passed() {
                        for space in uses.global_spaces() {
                            if let Some((_, structure)) = super::globals_structure(space) {
                                args.push(CExpr::atom(structure.to_string()));
                            }
                        }
                    }
                    let implicit = self.dialect.implicit_arguments(uses);
                    args.extend(implicit.into_iter().map(CExpr::atom));
                }
                plain_call(&name, &args)
            }
            ExprKind::Cast { value, implicit } => {
                if *implicit
                    && let ExprKind::Literal(lit) = value.kind
                    && let Some(converted) = convert_literal(lit, &e.ty)
                {
                    return self.literal(converted, &e.ty);
                }
                self.conversion(value, &e.ty)
            }
            ExprKind::Select {
                cond,
                then,
                otherwise,
            } => {
                let c = self.exact(cond);
                let a = self.exact(then);
                let b = self.exact(otherwise);
                CExpr::paren(format!("({} ? {} : {})", c.text, a.text, b.text))
            }
            ExprKind::AddressOf(place) => {
                let p = self.exact(place);
                CExpr::unary(format!("&{}", p.parenthesised()))
            }
            ExprKind::Construct(parts) => self.construct(&e.ty, parts),
        }
    }

    /// Prints `e` so that C types it exactly as the IR does.
    pub(super) fn exact(&mut self, e: &Expr) -> CExpr {
        let c = self.expr(e);
        self.make_exact(c, &e.ty)
    }

    /// Prints `e` so that its C value is the language's (its C type may be `unsigned int` for an
    /// `int`): for indices and the arguments of functions with one signature.
    pub(super) fn value(&mut self, e: &Expr) -> CExpr {
        let c = self.expr(e);
        match c.repr {
            Repr::Ring => self.make_exact(c, &e.ty),
            _ => c,
        }
    }

    /// Prints `e` where C converts it to `e.ty` itself (an initializer, an assignment, a return
    /// value, an argument of a device function): an implicit conversion between standard scalars
    /// is left to C, and a [`Repr::Ring`] value needs no cast.
    pub(super) fn converted(&mut self, e: &Expr) -> CExpr {
        if let ExprKind::Cast {
            value,
            implicit: true,
        } = &e.kind
            && is_standard(&value.ty)
            && is_standard(&e.ty)
            && !matches!(value.kind, ExprKind::Literal(_))
        {
            let inner = self.expr(value);
            if inner.repr != Repr::Ring {
                self.note_type(&e.ty);
                return inner;
            }
        }
        self.expr(e)
    }

    fn make_exact(&mut self, c: CExpr, ty: &Type) -> CExpr {
        if c.repr == Repr::Exact {
            return c;
        }
        let t = self.c_type(ty);
        CExpr::unary(format!("({t}){}", c.parenthesised()))
    }

    fn index_var(&mut self, var: IndexVar) -> CExpr {
        match self.dialect.index_variable(var) {
            Some(IndexSpelling::Expr { text, unsigned }) => {
                let c = CExpr::atom(text);
                if unsigned {
                    c.with_repr(Repr::Widened)
                } else {
                    c
                }
            }
            Some(IndexSpelling::Helper(helper)) => CExpr::atom(self.use_helper(helper) + "()"),
            None => {
                self.unsupported(&format!("the index variable {var:?}"));
                CExpr::atom("0")
            }
        }
    }

    /// The C name of field `index` of `base`. An index the IR's invariants rule out gets a name
    /// C rejects (`field3`) rather than a panic: the printer never fails.
    fn field_name(&mut self, base: &Type, index: usize) -> String {
        match base {
            Type::Vector(v) => v
                .components()
                .get(index)
                .copied()
                .unwrap_or("x")
                .to_string(),
            Type::Struct(name) => self.struct_field_name(name, index),
            _ => format!("field{index}"),
        }
    }

    /// A literal of type `ty`.
    pub(super) fn literal(&mut self, lit: Literal, ty: &Type) -> CExpr {
        self.note_type(ty);
        let Type::Scalar(s) = ty else {
            return match lit {
                Literal::Bool(b) => CExpr::atom(if b { "true" } else { "false" }),
                Literal::Int(v) => signed_text(v.to_string()),
                Literal::Float(v) => float_text(v, "", "__builtin_huge_val()"),
            };
        };
        let value = match lit {
            Literal::Bool(b) => f64::from(u8::from(b)),
            Literal::Int(v) => v as f64,
            Literal::Float(v) => v,
        };
        let int_value = match lit {
            Literal::Bool(b) => i128::from(b),
            Literal::Int(v) => v,
            Literal::Float(v) => v as i128,
        };
        match s {
            ScalarType::Int => {
                let v = wrap_integer(int_value, 32, true);
                if v == i128::from(i32::MIN) {
                    CExpr::paren("(-2147483647 - 1)")
                } else {
                    signed_text(v.to_string())
                }
            }
            ScalarType::UInt => CExpr::atom(format!("{}u", wrap_integer(int_value, 32, false))),
            ScalarType::Int64 => {
                let (ll, _) = self.dialect.long_suffixes();
                let v = wrap_integer(int_value, 64, true);
                if v == i128::from(i64::MIN) {
                    CExpr::paren(format!("(-9223372036854775807{ll} - 1{ll})"))
                } else {
                    signed_text(format!("{v}{ll}"))
                }
            }
            ScalarType::UInt64 => {
                let (_, ull) = self.dialect.long_suffixes();
                CExpr::atom(format!("{}{ull}", wrap_integer(int_value, 64, false)))
            }
            ScalarType::SizeT => {
                let (_, ull) = self.dialect.long_suffixes();
                CExpr::unary(format!(
                    "(size_t)({}{ull})",
                    wrap_integer(int_value, 64, false)
                ))
            }
            ScalarType::Int8 | ScalarType::UInt8 | ScalarType::Int16 | ScalarType::UInt16 => {
                let v = wrap_integer(int_value, bits(*s), s.is_signed_integer());
                let t = self.c_type(ty);
                CExpr::unary(format!("({t})({v})"))
            }
            ScalarType::Float => float_text(f64::from(value as f32), "f", "__builtin_huge_valf()"),
            ScalarType::Double => float_text(value, "", "__builtin_huge_val()"),
            ScalarType::Half | ScalarType::BFloat16 => {
                let (bits, raw, from_float) = if *s == ScalarType::Half {
                    (
                        half::f16::from_f64(value).to_bits(),
                        "__half_raw",
                        "__float2half",
                    )
                } else {
                    (
                        half::bf16::from_f64(value).to_bits(),
                        "__nv_bfloat16_raw",
                        "__float2bfloat16",
                    )
                };
                let exact = if *s == ScalarType::Half {
                    half::f16::from_bits(bits).to_f32()
                } else {
                    half::bf16::from_bits(bits).to_f32()
                };
                let f = float_text(f64::from(exact), "f", "__builtin_huge_valf()");
                if self.constant {
                    // Initializers of device variables must be constant: the bits.
                    CExpr::atom(format!("{raw}{{0x{bits:04X}}}"))
                } else {
                    CExpr::atom(self.call_text(from_float, &[f.text]))
                }
            }
            ScalarType::Fp8 | ScalarType::Fp4 => {
                if self.constant {
                    // No constructor of these types is constexpr: give the bits.
                    let bits = if *s == ScalarType::Fp4 {
                        Fp4E2M1::from_f64(value).0
                    } else {
                        Fp8E4M3::from_f64(value).0
                    };
                    let t = self.c_type(ty);
                    CExpr::atom(format!(
                        "__builtin_bit_cast({t}, (unsigned char)(0x{bits:02X}))"
                    ))
                } else {
                    let f = float_text(f64::from(value as f32), "f", "__builtin_huge_valf()");
                    let t = self.c_type(ty);
                    CExpr::atom(format!("{t}({})", f.text))
                }
            }
        }
    }

    /// The conversion of `value` to `to` (an explicit cast, or an implicit one C would not
    /// perform the same way).
    fn conversion(&mut self, value: &Expr, to: &Type) -> CExpr {
        let from = &value.ty;
        if from == to {
            return self.expr(value);
        }
        // Truncating to a narrower or equal integer type agrees with any value that is right
        // modulo 2^N.
        let truncates = matches!((from, to), (Type::Scalar(f), Type::Scalar(t))
            if f.is_integer() && t.is_integer() && t.size() <= f.size());
        let c = if truncates {
            self.expr(value)
        } else {
            self.value(value)
        };
        // A pointer cast keeps the pointer's address space (where the dialect has them).
        let space = self.value_space(value);
        let outer = std::mem::replace(&mut self.pointer_space, space);
        let converted = self.convert(c, from, to);
        self.pointer_space = outer;
        converted
    }

    /// Converts the printed value `c` of type `from` (exact in value) to `to`.
    fn convert(&mut self, c: CExpr, from: &Type, to: &Type) -> CExpr {
        self.note_type(to);
        let (Type::Scalar(_) | Type::Bool, Type::Scalar(_) | Type::Bool) = (from, to) else {
            // Pointers (and anything else) convert with a C cast.
            let t = self.c_type(to);
            return CExpr::unary(format!("({t}){}", c.parenthesised()));
        };
        let from_scalar = from.scalar();
        let to_scalar = to.scalar();
        // From a reduced-precision float: through float, which holds every value exactly.
        let (c, from) = match from_scalar {
            Some(ScalarType::Half) => (
                CExpr::atom(self.call_text("__half2float", &[c.text])),
                Type::FLOAT,
            ),
            Some(ScalarType::BFloat16) => (
                CExpr::atom(self.call_text("__bfloat162float", &[c.text])),
                Type::FLOAT,
            ),
            Some(ScalarType::Fp8 | ScalarType::Fp4) => (
                CExpr::unary(format!("(float){}", c.parenthesised())),
                Type::FLOAT,
            ),
            _ => (c, from.clone()),
        };
        if &from == to {
            return c;
        }
        let from_s = from.scalar();
        match to_scalar {
            Some(target @ (ScalarType::Half | ScalarType::BFloat16)) => {
                let half = target == ScalarType::Half;
                let name = match from_s {
                    Some(ScalarType::Float) => {
                        if half {
                            "__float2half"
                        } else {
                            "__float2bfloat16"
                        }
                    }
                    Some(ScalarType::Double) => {
                        if half {
                            "__double2half"
                        } else {
                            "__double2bfloat16"
                        }
                    }
                    Some(ScalarType::Int) => {
                        if half {
                            "__int2half_rn"
                        } else {
                            "__int2bfloat16_rn"
                        }
                    }
                    Some(ScalarType::UInt) => {
                        if half {
                            "__uint2half_rn"
                        } else {
                            "__uint2bfloat16_rn"
                        }
                    }
                    Some(ScalarType::Int64) => {
                        if half {
                            "__ll2half_rn"
                        } else {
                            "__ll2bfloat16_rn"
                        }
                    }
                    Some(ScalarType::UInt64 | ScalarType::SizeT) => {
                        if half {
                            "__ull2half_rn"
                        } else {
                            "__ull2bfloat16_rn"
                        }
                    }
                    Some(ScalarType::Int8 | ScalarType::Int16) => {
                        if half {
                            "__short2half_rn"
                        } else {
                            "__short2bfloat16_rn"
                        }
                    }
                    // uint8, uint16 and bool.
                    _ => {
                        if half {
                            "__ushort2half_rn"
                        } else {
                            "__ushort2bfloat16_rn"
                        }
                    }
                };
                CExpr::atom(self.call_text(name, &[c.text]))
            }
            Some(ScalarType::Fp8 | ScalarType::Fp4) => {
                // The constructors take float or double; integers go through float, which is
                // exact over the whole fp8/fp4 range.
                let arg = if matches!(from_s, Some(ScalarType::Float | ScalarType::Double)) {
                    c.text
                } else {
                    format!("(float){}", c.parenthesised())
                };
                let t = self.c_type(to);
                CExpr::atom(format!("{t}({arg})"))
            }
            _ => {
                let t = self.c_type(to);
                let float_to_integer = matches!(from_s, Some(ScalarType::Float))
                    && to_scalar.is_some_and(|s| s.is_integer());
                if float_to_integer && let Some(text) = self.dialect.float_to_integer(&t, &c.text) {
                    return CExpr::atom(text);
                }
                CExpr::unary(format!("({t}){}", c.parenthesised()))
            }
        }
    }

    /// A vector or structure built from its parts.
    fn construct(&mut self, ty: &Type, parts: &[Expr]) -> CExpr {
        let args: Vec<CExpr> = parts.iter().map(|p| self.exact(p)).collect();
        let list: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        if self.constant {
            return CExpr::atom(format!("{{ {} }}", list.join(", ")));
        }
        match ty {
            Type::Vector(v) => match self.dialect.vector_constructor(*v) {
                Some(make) => self.call(make, &args),
                None => {
                    self.unsupported(&format!("constructing a `{ty}`"));
                    CExpr::atom("0")
                }
            },
            other => {
                let t = self.c_type(other);
                CExpr::atom(format!("{t}{{ {} }}", list.join(", ")))
            }
        }
    }

    /// `(a OP b)`. `ring` says the operator agrees with the language modulo 2^N (`+ - * & | ^
    /// <<` on integers), so [`Repr::Ring`] operands are fine; otherwise both must be exact.
    fn infix(&mut self, symbol: &str, a: &Expr, b: &Expr, result: &Type, ring: bool) -> CExpr {
        let operand = |this: &mut Self, e: &Expr| if ring { this.expr(e) } else { this.exact(e) };
        let (ca, cb) = {
            // An implicit conversion of one side that C's usual arithmetic conversions perform
            // anyway is left out: `(x + 1.0f)`, not `(x + (float)(1))`.
            let cb = operand(self, b);
            match self.elide_for_peer(a, &cb, &b.ty) {
                Some(ca) => (ca, cb),
                None => {
                    let ca = operand(self, a);
                    match self.elide_for_peer(b, &ca, &a.ty) {
                        Some(cb) => (ca, cb),
                        None => (ca, cb),
                    }
                }
            }
        };
        let text = format!("({} {symbol} {})", ca.text, cb.text);
        let promoted = result.scalar().is_some_and(is_small_integer);
        let inexact = ca.repr != Repr::Exact || cb.repr != Repr::Exact;
        let repr = if promoted || (ring && inexact && result.is_integer()) {
            Repr::Ring
        } else {
            Repr::Exact
        };
        CExpr::paren(text).with_repr(repr)
    }

    /// If `side` is an implicit conversion between standard scalars that C performs by itself
    /// when the other operand is `peer` (of IR type `peer_ty`), the unconverted operand.
    fn elide_for_peer(&mut self, side: &Expr, peer: &CExpr, peer_ty: &Type) -> Option<CExpr> {
        let ExprKind::Cast {
            value,
            implicit: true,
        } = &side.kind
        else {
            return None;
        };
        if !is_standard(&value.ty) || !is_standard(&side.ty) || peer.repr != Repr::Exact {
            return None;
        }
        if matches!(value.kind, ExprKind::Literal(_)) || peer_ty != &side.ty {
            // Literals are converted in place (`1.0f`), which reads better.
            return None;
        }
        let inner = self.expr(value);
        let inner_c_type = c_type_of(&inner, &value.ty)?;
        (usual_arithmetic(&inner_c_type, peer_ty)? == side.ty.scalar()?).then_some(inner)
    }

    /// A prefix operator applied to `x` (always parenthesised: `-(x)`, `!(b)`, `~(m)`).
    fn prefix(&mut self, symbol: &str, x: &Expr, result: &Type, ring: bool) -> CExpr {
        let c = if ring { self.expr(x) } else { self.exact(x) };
        let promoted = result.scalar().is_some_and(is_small_integer);
        let repr = if promoted || (ring && c.repr != Repr::Exact && result.is_integer()) {
            Repr::Ring
        } else {
            Repr::Exact
        };
        CExpr::unary(format!("{symbol}{}", c.parenthesised())).with_repr(repr)
    }

    /// A call of an intrinsic whose arguments must have their exact types (it is overloaded).
    fn exact_call(&mut self, name: &str, args: &[Expr]) -> CExpr {
        let args: Vec<CExpr> = args.iter().map(|a| self.exact(a)).collect();
        self.call(name, &args)
    }

    /// A call of a function with one signature: C converts the arguments.
    fn value_call(&mut self, name: &str, args: &[Expr]) -> CExpr {
        let args: Vec<CExpr> = args.iter().map(|a| self.value(a)).collect();
        self.call(name, &args)
    }

    fn use_helper(&mut self, helper: Helper) -> String {
        self.needs.helpers.insert(helper);
        helper.name()
    }

    /// A helper call on vectors.
    fn helper_call(&mut self, helper: Helper, args: &[Expr]) -> CExpr {
        let name = self.use_helper(helper);
        let args: Vec<CExpr> = args.iter().map(|a| self.exact(a)).collect();
        plain_call(&name, &args)
    }

    /// A result whose C type is `c_type` while the IR says `ir`: the value agrees modulo 2^N.
    fn returned_as(c: CExpr, c_type: &Type, ir: &Type) -> CExpr {
        if c_type == ir {
            c
        } else {
            c.with_repr(Repr::Ring)
        }
    }

    fn builtin(&mut self, op: Builtin, args: &[Expr], result: &Type) -> CExpr {
        let arg_ty = args.first().map(|a| a.ty.clone()).unwrap_or(Type::Void);
        match op {
            Builtin::Add | Builtin::Sub | Builtin::Mul | Builtin::Div => {
                self.arithmetic(op, &args[0], &args[1], result)
            }
            Builtin::Rem => match arg_ty.scalar() {
                Some(ScalarType::Float) => self.exact_call("fmodf", args),
                Some(ScalarType::Double) => self.exact_call("fmod", args),
                Some(s) if s.is_integer() => self.infix("%", &args[0], &args[1], result, false),
                _ => self.through_float(args, result, |a| format!("fmodf({})", a.join(", "))),
            },
            Builtin::FloorMod => match arg_ty.scalar() {
                // Unsigned: truncating and flooring agree.
                Some(s) if s.is_integer() && !s.is_signed_integer() => {
                    self.infix("%", &args[0], &args[1], result, false)
                }
                Some(s) => self.helper_call(Helper::FloorMod(s), args),
                None => self.helper_call(Helper::FloorMod(ScalarType::Int), args),
            },
            Builtin::Neg => match &arg_ty {
                Type::Vector(VectorType::Half2) => self.exact_call("__hneg2", args),
                Type::Vector(v) => self.helper_call(Helper::VectorNeg(*v), args),
                t if is_half_like(t) => self.exact_call("__hneg", args),
                t => self.prefix("-", &args[0], result, t.is_integer()),
            },
            Builtin::Recip => match &arg_ty {
                Type::Vector(v) => self.helper_call(Helper::VectorRecip(*v), args),
                t if is_half_like(t) => self.exact_call("hrcp", args),
                t => {
                    let one = self.literal(Literal::Int(1), t);
                    let x = self.exact(&args[0]);
                    let promoted = t.scalar().is_some_and(is_small_integer);
                    let c = CExpr::paren(format!("({} / {})", one.text, x.text));
                    if promoted { c.with_repr(Repr::Ring) } else { c }
                }
            },
            Builtin::Min | Builtin::Max => {
                let max = op == Builtin::Max;
                match arg_ty.scalar() {
                    Some(ScalarType::Float) => {
                        self.exact_call(if max { "fmaxf" } else { "fminf" }, args)
                    }
                    Some(ScalarType::Double) => {
                        self.exact_call(if max { "fmax" } else { "fmin" }, args)
                    }
                    Some(ScalarType::Half | ScalarType::BFloat16) => {
                        self.exact_call(if max { "__hmax" } else { "__hmin" }, args)
                    }
                    Some(s) => {
                        let c = self.exact_call(if max { "max" } else { "min" }, args);
                        if is_small_integer(s) {
                            c.with_repr(Repr::Ring)
                        } else {
                            c
                        }
                    }
                    None => self.exact_call(if max { "max" } else { "min" }, args),
                }
            }
            Builtin::Abs => match arg_ty.scalar() {
                Some(ScalarType::Float) => self.exact_call("fabsf", args),
                Some(ScalarType::Double) => self.exact_call("fabs", args),
                Some(ScalarType::Half | ScalarType::BFloat16) => self.exact_call("__habs", args),
                Some(ScalarType::Int64) => self.exact_call("llabs", args),
                Some(s) if s.is_signed_integer() => {
                    let c = self.exact_call("abs", args);
                    if is_small_integer(s) {
                        c.with_repr(Repr::Ring)
                    } else {
                        c
                    }
                }
                // The absolute value of an unsigned number is the number.
                _ => self.expr(&args[0]),
            },
            Builtin::Eq | Builtin::Ne | Builtin::Lt | Builtin::Gt | Builtin::Le | Builtin::Ge => {
                let (symbol, half) = match op {
                    Builtin::Eq => ("==", "__heq"),
                    Builtin::Ne => ("!=", "__hne"),
                    Builtin::Lt => ("<", "__hlt"),
                    Builtin::Gt => (">", "__hgt"),
                    Builtin::Le => ("<=", "__hle"),
                    _ => (">=", "__hge"),
                };
                if is_half_like(&arg_ty) {
                    self.exact_call(half, args)
                } else {
                    self.infix(symbol, &args[0], &args[1], result, false)
                }
            }
            Builtin::Not => self.prefix("!", &args[0], result, false),
            Builtin::And => self.infix("&&", &args[0], &args[1], result, false),
            Builtin::Or => self.infix("||", &args[0], &args[1], result, false),
            Builtin::BitAnd => self.infix("&", &args[0], &args[1], result, true),
            Builtin::BitOr => self.infix("|", &args[0], &args[1], result, true),
            Builtin::BitXor => self.infix("^", &args[0], &args[1], result, true),
            Builtin::BitNot => self.prefix("~", &args[0], result, true),
            Builtin::Shl | Builtin::Shr => {
                // The shifted value may be right modulo 2^N for `<<` only; the count must be
                // right in value.
                let shl = op == Builtin::Shl;
                let a = if shl {
                    self.expr(&args[0])
                } else {
                    self.exact(&args[0])
                };
                let n = self.value(&args[1]);
                let promoted = result.scalar().is_some_and(is_small_integer);
                let repr = if promoted || a.repr != Repr::Exact {
                    Repr::Ring
                } else {
                    Repr::Exact
                };
                let symbol = if shl { "<<" } else { ">>" };
                CExpr::paren(format!("({} {symbol} {})", a.text, n.text)).with_repr(repr)
            }
            Builtin::Math(f) => self.math(f, args, result),
            Builtin::Fma => match &arg_ty {
                Type::Vector(VectorType::Half2) => self.exact_call("__hfma2", args),
                t if is_half_like(t) => self.exact_call("__hfma", args),
                Type::Scalar(ScalarType::Double) => self.exact_call("fma", args),
                _ => self.exact_call("fmaf", args),
            },
            Builtin::Dot => match &arg_ty {
                Type::Vector(v) => self.helper_call(Helper::VectorDot(*v), args),
                _ => self.infix("*", &args[0], &args[1], result, false),
            },
            Builtin::FastDivide => match arg_ty.scalar() {
                Some(ScalarType::Float) => self.exact_call("__fdividef", args),
                _ => self.infix("/", &args[0], &args[1], result, false),
            },
            Builtin::Saturate => match arg_ty.scalar() {
                Some(ScalarType::Double) => {
                    let x = self.exact(&args[0]);
                    let inner = self.call_text("fmax", &[x.text, "0.0".into()]);
                    CExpr::atom(self.call_text("fmin", &[inner, "1.0".into()]))
                }
                Some(ScalarType::Float) => self.exact_call("__saturatef", args),
                _ => self.through_float(args, result, |a| format!("__saturatef({})", a[0])),
            },
            Builtin::DoubleToIntRn => self.value_call("__double2int_rn", args),
            Builtin::Clz | Builtin::Popc | Builtin::Brev | Builtin::Ffs => {
                let wide = arg_ty.scalar().is_some_and(|s| s.size() == 8);
                let (name, c_result) = match (op, wide) {
                    (Builtin::Clz, false) => ("__clz", Type::INT),
                    (Builtin::Clz, true) => ("__clzll", Type::INT),
                    (Builtin::Popc, false) => ("__popc", Type::INT),
                    (Builtin::Popc, true) => ("__popcll", Type::INT),
                    (Builtin::Brev, false) => ("__brev", Type::UINT),
                    (Builtin::Brev, true) => ("__brevll", Type::Scalar(ScalarType::UInt64)),
                    (_, false) => ("__ffs", Type::INT),
                    (_, true) => ("__ffsll", Type::INT),
                };
                let c = self.value_call(name, args);
                Self::returned_as(c, &c_result, result)
            }
            Builtin::SyncThreads => self.call("__syncthreads", &[]),
            Builtin::SyncWarp => self.value_call("__syncwarp", args),
            Builtin::ThreadFence => self.call("__threadfence", &[]),
            Builtin::ThreadFenceBlock => self.call("__threadfence_block", &[]),
            Builtin::ThreadFenceSystem => self.call("__threadfence_system", &[]),
            Builtin::ShflSync
            | Builtin::ShflUpSync
            | Builtin::ShflDownSync
            | Builtin::ShflXorSync => {
                let name = match op {
                    Builtin::ShflSync => "__shfl_sync",
                    Builtin::ShflUpSync => "__shfl_up_sync",
                    Builtin::ShflDownSync => "__shfl_down_sync",
                    _ => "__shfl_xor_sync",
                };
                // The value picks the overload; the mask, lane and width are plain integers.
                let mut printed = vec![self.value(&args[0]), self.exact(&args[1])];
                printed.extend(args[2..].iter().map(|a| self.value(a)));
                let c = self.call(name, &printed);
                let promoted = result.scalar().is_some_and(is_small_integer);
                if promoted { c.with_repr(Repr::Ring) } else { c }
            }
            Builtin::BallotSync => {
                let c = self.value_call("__ballot_sync", args);
                Self::returned_as(c, &Type::UINT, result)
            }
            Builtin::AllSync => {
                let c = self.value_call("__all_sync", args);
                Self::returned_as(c, &Type::INT, result)
            }
            Builtin::AnySync => {
                let c = self.value_call("__any_sync", args);
                Self::returned_as(c, &Type::INT, result)
            }
            Builtin::ActiveMask => {
                Self::returned_as(self.call("__activemask", &[]), &Type::UINT, result)
            }
            Builtin::MatchAnySync | Builtin::MatchAllSync => {
                let name = if op == Builtin::MatchAnySync {
                    "__match_any_sync"
                } else {
                    "__match_all_sync"
                };
                let mut printed = vec![self.value(&args[0])];
                printed.extend(args[1..].iter().map(|a| self.exact(a)));
                let c = self.call(name, &printed);
                Self::returned_as(c, &Type::UINT, result)
            }
            Builtin::WarpReduce(r) => {
                let name = warp_reduce_name(r);
                let bitwise = matches!(r, WarpReduceOp::And | WarpReduceOp::Or | WarpReduceOp::Xor);
                let mask = self.value(&args[0]);
                // add, min and max have int and unsigned overloads; and, or and xor unsigned only.
                let v = if bitwise {
                    self.value(&args[1])
                } else {
                    self.exact(&args[1])
                };
                let c_result = if bitwise {
                    Type::UINT
                } else {
                    args[1].ty.clone()
                };
                let c = self.call(name, &[mask, v]);
                Self::returned_as(c, &c_result, result)
            }
            Builtin::Atomic(a) => self.atomic(a, args, result),
            Builtin::Hopper(h) => {
                let printed: Vec<String> = args
                    .iter()
                    .map(|a| self.exact(a).postfix_operand())
                    .collect();
                let (helpers, text) = super::hopper::call(h, args, &printed, result);
                for helper in helpers {
                    self.use_helper(Helper::Hopper(helper));
                }
                CExpr::atom(text)
            }
            Builtin::ClusterRank => Self::returned_as(
                self.call("__clusterRelativeBlockRank", &[]),
                &Type::UINT,
                result,
            ),
            Builtin::ClusterBarrier => CExpr::atom(self.use_helper(Helper::ClusterBarrier) + "()"),
            Builtin::ThreadFenceCluster => self.call("__threadfence_cluster", &[]),
            Builtin::CurandInit => self.value_call("curand_init", args),
            Builtin::CurandUniform | Builtin::CurandNormal => {
                let double = result == &Type::DOUBLE;
                let name = match (op, double) {
                    (Builtin::CurandUniform, false) => "curand_uniform",
                    (Builtin::CurandUniform, true) => "curand_uniform_double",
                    (_, false) => "curand_normal",
                    (_, true) => "curand_normal_double",
                };
                self.exact_call(name, args)
            }
            Builtin::TexFetch | Builtin::Tex(_) => {
                // CUDA's templates: `tex2D<float4>(tex, x, y)`.
                let name = match op {
                    Builtin::Tex(1) => "tex1D",
                    Builtin::Tex(2) => "tex2D",
                    Builtin::Tex(_) => "tex3D",
                    _ => "tex1Dfetch",
                };
                let element = self.c_type(result);
                self.value_call(&format!("{name}<{element}>"), args)
            }
            Builtin::SurfRead(dims, mode) => {
                let element = self.c_type(result);
                let mut printed: Vec<CExpr> = args.iter().map(|a| self.value(a)).collect();
                printed.push(CExpr::atom(boundary_mode(mode).to_string()));
                self.call(&format!("surf{dims}Dread<{element}>"), &printed)
            }
            Builtin::Tensor(t) => self.helper_call(Helper::Tensor(t), args),
            Builtin::SurfWrite(dims, mode) => {
                // The value's type picks the overload.
                let mut printed = vec![self.exact(&args[0])];
                printed.extend(args[1..].iter().map(|a| self.value(a)));
                printed.push(CExpr::atom(boundary_mode(mode).to_string()));
                self.call(&format!("surf{dims}Dwrite"), &printed)
            }
        }
    }

    fn arithmetic(&mut self, op: Builtin, a: &Expr, b: &Expr, result: &Type) -> CExpr {
        let vop = match op {
            Builtin::Add => VectorOp::Add,
            Builtin::Sub => VectorOp::Sub,
            Builtin::Mul => VectorOp::Mul,
            _ => VectorOp::Div,
        };
        let half2 = |name: &str| match vop {
            VectorOp::Add => format!("__hadd{name}"),
            VectorOp::Sub => format!("__hsub{name}"),
            VectorOp::Mul => format!("__hmul{name}"),
            VectorOp::Div => {
                if name.is_empty() {
                    "__hdiv".into()
                } else {
                    "__h2div".into()
                }
            }
        };
        match (&a.ty, &b.ty) {
            (Type::Vector(VectorType::Half2), Type::Vector(VectorType::Half2)) => {
                self.exact_call(&half2("2"), &[a.clone(), b.clone()])
            }
            (Type::Vector(VectorType::Half2), s) if is_half_like(s) => {
                let v = self.exact(a);
                let s = self.exact(b);
                let s = self.call_text("__half2half2", &[s.text]);
                CExpr::atom(self.call_text(&half2("2"), &[v.text, s]))
            }
            (s, Type::Vector(VectorType::Half2)) if is_half_like(s) => {
                let s = self.exact(a);
                let v = self.exact(b);
                let s = self.call_text("__half2half2", &[s.text]);
                CExpr::atom(self.call_text(&half2("2"), &[s, v.text]))
            }
            (Type::Vector(v), Type::Vector(_)) => self.helper_call(
                Helper::VectorBinary(vop, *v, Operands::VectorVector),
                &[a.clone(), b.clone()],
            ),
            (Type::Vector(v), _) => self.helper_call(
                Helper::VectorBinary(vop, *v, Operands::VectorScalar),
                &[a.clone(), b.clone()],
            ),
            (_, Type::Vector(v)) => self.helper_call(
                Helper::VectorBinary(vop, *v, Operands::ScalarVector),
                &[a.clone(), b.clone()],
            ),
            (t, _) if is_half_like(t) => self.exact_call(&half2(""), &[a.clone(), b.clone()]),
            _ => {
                let symbol = match vop {
                    VectorOp::Add => "+",
                    VectorOp::Sub => "-",
                    VectorOp::Mul => "*",
                    VectorOp::Div => "/",
                };
                let ring = result.is_integer() && vop != VectorOp::Div;
                self.infix(symbol, a, b, result, ring)
            }
        }
    }

    fn math(&mut self, f: MathFn, args: &[Expr], result: &Type) -> CExpr {
        let (float_name, double_name, half_name) = math_names(f);
        let arg_ty = args[0].ty.clone();
        let c = match arg_ty.scalar() {
            Some(ScalarType::Double) => self.exact_call(double_name, args),
            Some(ScalarType::Half | ScalarType::BFloat16) => {
                if let Some(name) = half_name {
                    self.exact_call(name, args)
                } else {
                    let name = float_name.to_string();
                    return self
                        .through_float(args, result, |a| format!("{name}({})", a.join(", ")));
                }
            }
            _ => self.exact_call(float_name, args),
        };
        if &arg_ty == result {
            c
        } else {
            // `floor` typed `int`: C's floorf returns float.
            self.convert(c, &arg_ty, result)
        }
    }

    /// A float function applied to reduced-precision arguments: each converted to float, the
    /// result converted back to `result`.
    fn through_float(
        &mut self,
        args: &[Expr],
        result: &Type,
        f: impl Fn(&[String]) -> String,
    ) -> CExpr {
        let floats: Vec<String> = args
            .iter()
            .map(|a| {
                let c = self.value(a);
                self.convert(c, &a.ty, &Type::FLOAT).text
            })
            .collect();
        let c = CExpr::atom(f(&floats));
        self.convert(c, &Type::FLOAT, result)
    }

    fn atomic(&mut self, op: AtomicOp, args: &[Expr], result: &Type) -> CExpr {
        let name = atomic_name(op);
        let pointee = args[0].ty.pointee().cloned().unwrap_or(Type::Void);
        if pointee == Type::Scalar(ScalarType::SizeT) {
            // CUDA has no atomics on unsigned long: size_t goes through unsigned long long.
            let p = self.exact(&args[0]);
            let mut printed = vec![CExpr::unary(format!(
                "(unsigned long long*){}",
                p.parenthesised()
            ))];
            for a in &args[1..] {
                let v = self.value(a);
                printed.push(CExpr::unary(format!(
                    "(unsigned long long){}",
                    v.parenthesised()
                )));
            }
            return self.call(name, &printed).with_repr(Repr::Ring);
        }
        let c = self.exact_call(name, args);
        Self::returned_as(c, &pointee, result)
    }
}

/// A literal whose text may start with `-`.
fn signed_text(text: String) -> CExpr {
    if text.starts_with('-') {
        CExpr::unary(text)
    } else {
        CExpr::atom(text)
    }
}

/// A floating literal without loss (`1.0f`, `0.005f`, `1e-10f`, `1.0`).
fn float_text(value: f64, suffix: &str, infinity: &str) -> CExpr {
    if value.is_nan() {
        let nan = if suffix.is_empty() {
            "__builtin_nan(\"\")"
        } else {
            "__builtin_nanf(\"\")"
        };
        return CExpr::atom(nan);
    }
    if value.is_infinite() {
        return if value > 0.0 {
            CExpr::atom(infinity)
        } else {
            CExpr::unary(format!("-{infinity}"))
        };
    }
    // `{:?}` is the shortest text that reads back to the same value, always with `.` or `e`.
    let text = if suffix == "f" {
        format!("{:?}", value as f32)
    } else {
        format!("{value:?}")
    };
    signed_text(format!("{text}{suffix}"))
}

/// CUDA's `cudaSurfaceBoundaryMode` for `mode`.
fn boundary_mode(mode: SurfaceBoundary) -> &'static str {
    match mode {
        SurfaceBoundary::Trap => "cudaBoundaryModeTrap",
        SurfaceBoundary::Clamp => "cudaBoundaryModeClamp",
        SurfaceBoundary::Zero => "cudaBoundaryModeZero",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_arithmetic_conversions() {
        let s = |t| Type::Scalar(t);
        assert_eq!(
            usual_arithmetic(&Type::INT, &Type::FLOAT),
            Some(ScalarType::Float)
        );
        assert_eq!(
            usual_arithmetic(&Type::INT, &Type::UINT),
            Some(ScalarType::UInt)
        );
        assert_eq!(
            usual_arithmetic(&Type::UINT, &s(ScalarType::Int64)),
            Some(ScalarType::Int64)
        );
        assert_eq!(
            usual_arithmetic(&s(ScalarType::Int8), &s(ScalarType::Int16)),
            Some(ScalarType::Int)
        );
        assert_eq!(
            usual_arithmetic(&s(ScalarType::SizeT), &Type::INT),
            Some(ScalarType::SizeT)
        );
        assert_eq!(
            usual_arithmetic(&s(ScalarType::SizeT), &s(ScalarType::Int64)),
            Some(ScalarType::UInt64)
        );
        assert_eq!(
            usual_arithmetic(&Type::FLOAT, &Type::DOUBLE),
            Some(ScalarType::Double)
        );
        assert_eq!(usual_arithmetic(&s(ScalarType::Half), &Type::FLOAT), None);
    }

    #[test]
    fn float_literals_are_printed_without_loss() {
        assert_eq!(float_text(1.0, "f", "").text, "1.0f");
        assert_eq!(float_text(f64::from(0.005f32), "f", "").text, "0.005f");
        assert_eq!(float_text(f64::from(1e-10f32), "f", "").text, "1e-10f");
        assert_eq!(float_text(1e-10, "", "").text, "1e-10");
        assert_eq!(float_text(0.1, "", "").text, "0.1");
        assert_eq!(float_text(-2.5, "", "").prec, Prec::Unary);
        for v in [0.1f32, 1.0e38, 3.4028235e38, 1.0e-45, 16777217.0, 0.3] {
            let text = float_text(f64::from(v), "f", "").text;
            assert_eq!(
                text.trim_end_matches('f').parse::<f32>().unwrap(),
                v,
                "{text}"
            );
        }
    }

    #[test]
    fn integers_wrap_to_their_width() {
        assert_eq!(wrap_integer(-1, 32, false), 4294967295);
        assert_eq!(wrap_integer(128, 8, true), -128);
        assert_eq!(wrap_integer(-1, 64, false), 18446744073709551615);
    }
}
