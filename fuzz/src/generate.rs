//! Structure-aware generation of kernel text: random modules that are mostly well-formed and
//! well-typed (so they get past the reader and the expander and exercise the checker, the
//! printer and the CPU executor), with hostile literals, odd identifiers, every statement and
//! many built-ins, macros, and now and then deep nesting or a deliberate mistake.
//!
//! Generated kernels always terminate: loops count up to a small constant and their counters
//! are never assigned by the body, and device functions only call functions defined before
//! them. So a launch that does not finish within the harness's time bound is a hang of the
//! executor, not of the kernel.

use crate::rng::Rng;
use std::fmt::Write;

/// The types the generator writes expressions of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Int,
    Float,
    Double,
    Bool,
}

/// A variable in scope.
#[derive(Clone, Debug)]
struct Var {
    name: String,
    ty: Ty,
    /// Loop counters and constant globals are never assigned, so loops stay bounded.
    assignable: bool,
}

/// A device function the kernel may call: its name, parameter types and result.
#[derive(Clone, Debug)]
struct Helper {
    name: String,
    params: Vec<Ty>,
    ret: Ty,
}

/// Names a kernel may use that stress the namers: C and CUDA keywords, names that mangle to
/// the same C identifier (`a-b` and `a_b`), CUDA's own built-in names, non-ASCII letters.
const ODD_NAMES: &[&str] = &[
    "a-b",
    "a_b",
    "a--b",
    "a__b",
    "auto",
    "register",
    "default",
    "signed",
    "int8_t",
    "threadIdx",
    "blockIdx",
    "printf",
    "main",
    "__global__",
    "_x",
    "x_",
    "x-",
    "*star*",
    "+plus+",
    "%pct",
    "?q",
    "x.y",
    "x->y",
    "λ",
    "π2",
    "A",
    "a",
    "nan",
    "inf",
    "float4-x",
    "ret",
    "result",
    "tmp",
];

/// Integer literals near the edges of the integer types, in every radix the reader takes.
const INT_LITERALS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "31",
    "32",
    "33",
    "63",
    "64",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "-2147483648",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "#xff",
    "#xFFFFFFFF",
    "#b101",
    "#o777",
    "#x-1",
    "+5",
    "-0",
    "1u",
    "1l",
    "0x10",
    "1_000",
];

/// Floating literals: signed zeros, denormals, the edges of `float` and `double`, exponents.
const FLOAT_LITERALS: &[&str] = &[
    "0.0",
    "-0.0",
    "1.0",
    "0.5",
    "1.5",
    "-2.25",
    "3.4028235e38",
    "3.5e38",
    "1e39",
    "1.4e-45",
    "1e-50",
    "1e30",
    "6.02e23",
    "1.0e0",
    ".5",
    "5.",
    "1d0",
    "1.7976931348623157d308",
    "1d309",
    "4.9d-324",
    "2.5f0",
    "1e",
    "1.0e+",
    "nan",
    "inf",
];

/// Format strings for `printf`: ordinary, and hostile (huge widths and precisions, `%n`, a
/// lone `%`, escapes, an embedded NUL).
const FORMATS: &[(&str, &[Ty])] = &[
    ("%d\\n", &[Ty::Int]),
    ("%d %f\\n", &[Ty::Int, Ty::Float]),
    (
        "%5.2f|%-8d|%x|%u\\n",
        &[Ty::Float, Ty::Int, Ty::Int, Ty::Int],
    ),
    (
        "%e %g %E %G\\n",
        &[Ty::Double, Ty::Double, Ty::Float, Ty::Float],
    ),
    ("%.70000f\\n", &[Ty::Float]),
    ("%2147483647d\\n", &[Ty::Int]),
    ("%*d\\n", &[Ty::Int, Ty::Int]),
    ("%.*f\\n", &[Ty::Int, Ty::Double]),
    ("%-+ #010.3f\\n", &[Ty::Float]),
    ("%%d %c\\n", &[Ty::Int]),
    ("no newline", &[]),
    ("%", &[]),
    ("%n", &[Ty::Int]),
    ("%d", &[]),
    ("%s\\n", &[Ty::Int]),
    ("before\\0after %d\\n", &[Ty::Int]),
    ("\\t\\\\ \\\"quoted\\\" %i\\n", &[Ty::Int]),
    ("%lld %hhd %zu\\n", &[Ty::Int, Ty::Int, Ty::Int]),
];

/// Macros every generated module may use, so the expander runs user macros: body splicing,
/// gensyms, macros expanding to macros.
const MACROS: &str = "(defkernelmacro fz-twice (&body body) `(progn ,@body ,@body))
(defkernelmacro fz-swap (a b) (let ((tmp (gensym))) `(let ((,tmp ,a)) (set ,a ,b) (set ,b ,tmp))))
(defkernelmacro fz-unless-zero (x &body body) `(unless (= ,x 0) ,@body))
(defkernelmacro fz-square (x) `(* ,x ,x))
";

/// Writes one random module (a few device functions, globals and kernels).
pub fn module(rng: &mut Rng) -> String {
    let mut g = Generator {
        rng: rng.clone(),
        out: String::new(),
        scope: Vec::new(),
        arrays: Vec::new(),
        helpers: Vec::new(),
        next_id: 0,
        fuel: 200 + rng.below(400),
        in_loop: false,
        in_helper: false,
        clean: rng.one_in(2),
    };
    g.top_level();
    *rng = g.rng;
    g.out
}

/// An array the generated code may index (0 to 63 are in bounds).
#[derive(Clone)]
struct Array {
    name: String,
    ty: Ty,
    /// In shared memory (`with-shared-memory`): a `cp-async` destination.
    shared: bool,
}

impl Array {
    fn global(name: &str, ty: Ty) -> Array {
        Array {
            name: name.into(),
            ty,
            shared: false,
        }
    }
}

struct Generator {
    rng: Rng,
    out: String,
    scope: Vec<Var>,
    /// Arrays in scope (`out`, `fout`, shared arrays of 64 elements).
    arrays: Vec<Array>,
    helpers: Vec<Helper>,
    next_id: usize,
    /// Bounds the size of the module: each statement and expression spends one.
    fuel: usize,
    in_loop: bool,
    /// In a device function, whose `return` needs a value.
    in_helper: bool,
    /// A clean module: no hostile literal, format, bound or nesting, so that (bar the
    /// generator's own type slips) it passes the checker and reaches the printer and the
    /// executor. Other modules each have a fair chance of an error somewhere.
    clean: bool,
}

impl Generator {
    fn top_level(&mut self) {
        if self.clean || self.rng.one_in(2) {
            self.out.push_str(MACROS);
        }
        let mut globals = Vec::new();
        for _ in 0..self.rng.below(3) {
            let name = self.fresh("g");
            let constant = self.rng.one_in(2);
            let value = self.literal(Ty::Int);
            let _ = writeln!(
                self.out,
                "(defglobal {name} {value}{})",
                if constant { " :constant" } else { "" }
            );
            globals.push(Var {
                name,
                ty: Ty::Int,
                assignable: !constant,
            });
        }
        for _ in 0..self.rng.below(3) {
            self.helper(&globals);
        }
        for _ in 0..1 + self.rng.below(2) {
            self.kernel(&globals);
        }
        if !self.clean && self.rng.one_in(10) {
            self.mistake();
        }
    }

    /// A fresh name: usually plain and unique, sometimes odd (and so possibly shadowing,
    /// colliding after mangling, or a keyword of C).
    fn fresh(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        if self.rng.one_in(if self.clean { 20 } else { 6 }) {
            let odd = *self.rng.pick(ODD_NAMES);
            if self.rng.one_in(2) {
                return odd.to_string();
            }
            return format!("{odd}{}", self.next_id);
        }
        format!("{prefix}{}", self.next_id)
    }

    fn helper(&mut self, globals: &[Var]) {
        let name = format!("fz-helper-{}", self.helpers.len());
        let ret = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Double]);
        let nparams = self.rng.below(4);
        let mut params = Vec::new();
        self.scope = globals.to_vec();
        self.arrays.clear();
        let mut list = String::new();
        for _ in 0..nparams {
            let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Double, Ty::Bool]);
            let pname = self.fresh("p");
            let _ = write!(list, "({pname} {}) ", type_name(ty));
            self.scope.push(Var {
                name: pname,
                ty,
                assignable: true,
            });
            params.push(ty);
        }
        let _ = writeln!(
            self.out,
            "(defkernel ({name} :device) ({} ({list}))",
            type_name(ret)
        );
        self.in_helper = true;
        for _ in 0..self.rng.below(3) {
            self.statement(1);
        }
        self.in_helper = false;
        self.out.push_str("  (return ");
        self.expr(ret, 0);
        self.out.push_str("))\n");
        self.helpers.push(Helper { name, params, ret });
    }

    fn kernel(&mut self, globals: &[Var]) {
        let name = self.fresh("k");
        self.scope = globals.to_vec();
        self.scope.push(Var {
            name: "n".into(),
            ty: Ty::Int,
            assignable: true,
        });
        self.arrays = vec![
            Array::global("out", Ty::Int),
            Array::global("fout", Ty::Float),
        ];
        let _ = writeln!(
            self.out,
            "(defkernel {name} (void ((out int*) (fout float*) (n int)))"
        );
        if self.rng.one_in(4) {
            let bound = *self
                .rng
                .pick(&["64", "128", "1024", "1025", "0", "100000", "-1"]);
            let _ = writeln!(self.out, "  (declare (launch-bounds {bound}))");
        }
        let statements = 1 + self.rng.below(6);
        for i in 0..statements {
            if i > 0 && self.rng.one_in(4) {
                // Only at the top of the body, where every thread reaches it.
                self.out.push_str("  (syncthreads)\n");
            }
            self.statement(0);
        }
        self.out.push_str(")\n");
    }

    /// A deliberate mistake, so near-well-formed text reaches the checker's errors.
    fn mistake(&mut self) {
        let text = *self.rng.pick(&[
            "(defkernel bad (void ((x int))) (set x 1.5 2))",
            "(defkernel bad (void ((x int))) (no-such-built-in x))",
            "(defkernel bad (int ((x int))) (return))",
            "(defkernel bad (void ((x nosuch))))",
            "(defkernel bad (void ((x int))) (break))",
            "(defkernel bad (void ((x int))) (let ((y)) y))",
            "(defkernel bad (void ((x int*))) (set (aref x 0 1) 1))",
            "(defkernel bad (void ((x int))) (switch x (0 1) (0 2)))",
            "(defkernel bad (void ((x int) (x int))))",
            "(defkernel bad (void ()) (with-shared-memory ((s int 100000000)) (set (aref s 0) 1)))",
        ]);
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn statement(&mut self, depth: usize) {
        self.fuel = self.fuel.saturating_sub(1);
        let indent = "  ".repeat(depth + 1);
        self.out.push_str(&indent);
        if self.fuel == 0 || depth > 5 {
            self.simple_statement();
            self.out.push('\n');
            return;
        }
        let scope_len = self.scope.len();
        let arrays_len = self.arrays.len();
        match self.rng.below(19) {
            0..=3 => self.simple_statement(),
            4 => {
                self.out.push_str("(let (");
                for _ in 0..1 + self.rng.below(3) {
                    let ty = self.value_type();
                    let name = self.fresh("v");
                    self.out.push('(');
                    self.out.push_str(&name);
                    self.out.push(' ');
                    self.expr(ty, 0);
                    self.out.push(')');
                    self.scope.push(Var {
                        name,
                        ty,
                        assignable: true,
                    });
                }
                self.out.push_str(")\n");
                self.body(depth);
            }
            5 => {
                self.out.push_str("(if ");
                self.expr(Ty::Bool, 0);
                self.out.push('\n');
                self.statement(depth + 1);
                if self.rng.one_in(2) {
                    self.statement(depth + 1);
                }
                self.out.push_str(&indent);
                self.out.push(')');
            }
            6 => {
                let head = *self.rng.pick(&["when", "unless"]);
                let _ = write!(self.out, "({head} ");
                self.expr(Ty::Bool, 0);
                self.out.push('\n');
                self.body(depth);
            }
            7 => {
                let i = self.fresh("i");
                let bound = 1 + self.rng.below(6);
                let _ = writeln!(self.out, "(for ({i} 0 (< {i} {bound}) (+ {i} 1))");
                self.counter(i);
                self.loop_body(depth);
            }
            8 => {
                let i = self.fresh("d");
                let bound = 1 + self.rng.below(5);
                let _ = writeln!(self.out, "(do (({i} 0 (+ {i} 1))) ((>= {i} {bound}))");
                self.counter(i);
                self.loop_body(depth);
            }
            9 => {
                let w = self.fresh("w");
                let bound = 1 + self.rng.below(5);
                let _ = writeln!(
                    self.out,
                    "(let (({w} 0)) (while (< {w} {bound}) (set {w} (+ {w} 1))"
                );
                self.counter(w);
                self.loop_body(depth);
                self.out.push(')');
            }
            10 => {
                self.out.push_str("(switch ");
                self.expr(Ty::Int, 0);
                self.out.push('\n');
                let mut labels: Vec<i64> = Vec::new();
                for _ in 0..1 + self.rng.below(3) {
                    let label = self.rng.below(5) as i64 - 1;
                    if labels.contains(&label) {
                        continue;
                    }
                    labels.push(label);
                    let _ = write!(self.out, "{indent}  ({label} ");
                    self.statement(depth + 1);
                    self.out.push_str(")\n");
                }
                if self.rng.one_in(2) {
                    let _ = write!(self.out, "{indent}  (t ");
                    self.statement(depth + 1);
                    self.out.push(')');
                }
                self.out.push(')');
            }
            11 => {
                let head = *self.rng.pick(&["progn", "fz-twice"]);
                let _ = writeln!(self.out, "({head}");
                self.body(depth);
            }
            12 => {
                let name = self.fresh("sm");
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float]);
                let len = *self.rng.pick(&["64", "1", "128"]);
                let _ = writeln!(
                    self.out,
                    "(with-shared-memory (({name} {} {len}))",
                    type_name(ty)
                );
                if len != "64" {
                    // Only 64-element arrays are indexed in bounds by `index`.
                    self.body(depth);
                } else {
                    self.arrays.push(Array {
                        name,
                        ty,
                        shared: true,
                    });
                    self.body(depth);
                }
            }
            13 if !self.arrays.is_empty() => {
                let Array {
                    name: array, ty, ..
                } = self.rng.pick(&self.arrays).clone();
                let ops: &[&str] = if ty == Ty::Float {
                    &[
                        "atomic-add",
                        "atomic-sub",
                        "atomic-max",
                        "atomic-min",
                        "atomic-exch",
                    ]
                } else {
                    &[
                        "atomic-add",
                        "atomic-sub",
                        "atomic-max",
                        "atomic-min",
                        "atomic-exch",
                        "atomic-and",
                        "atomic-or",
                        "atomic-xor",
                    ]
                };
                let op = *self.rng.pick(ops);
                let _ = write!(self.out, "({op} (pointer (aref {array} ");
                self.index();
                self.out.push_str(")) ");
                self.expr(ty, 1);
                self.out.push(')');
            }
            14 => {
                let formats = if self.clean { &FORMATS[..4] } else { FORMATS };
                let (format, args) = *self.rng.pick(formats);
                let _ = write!(self.out, "(printf \"{format}\"");
                for &ty in args {
                    self.out.push(' ');
                    self.expr(ty, 2);
                }
                self.out.push(')');
            }
            15 if self.in_loop => {
                let word = *self.rng.pick(&["(break)", "(continue)"]);
                self.out.push_str(word);
            }
            16 if !self.in_helper && self.rng.one_in(3) => self.out.push_str("(return)"),
            17 if self.assignable().len() >= 2 => {
                let vars = self.assignable();
                let a = self.rng.pick(&vars).clone();
                let b = self.rng.pick(&vars).clone();
                let _ = write!(self.out, "(fz-swap {} {})", a.name, b.name);
            }
            // cp-async from a global array into a shared one of its type, or a group operation:
            // the CPU executor tracks each copy until it is complete for the thread touching it.
            18 => {
                let shared: Vec<Array> = self.arrays.iter().filter(|a| a.shared).cloned().collect();
                match self.rng.below(4) {
                    0 | 1 if !shared.is_empty() => {
                        let Array {
                            name: array, ty, ..
                        } = self.rng.pick(&shared).clone();
                        let global = if ty == Ty::Float { "fout" } else { "out" };
                        let _ = write!(self.out, "(cp-async (pointer (aref {array} ");
                        self.index();
                        let _ = write!(self.out, ")) (pointer (aref {global} ");
                        self.index();
                        self.out.push_str(")) 4)");
                    }
                    2 => self.out.push_str("(cp-async-commit)"),
                    _ => {
                        let wait = *self.rng.pick(&[
                            "(cp-async-wait 0)",
                            "(cp-async-wait 1)",
                            "(cp-async-wait-all)",
                        ]);
                        self.out.push_str(wait);
                    }
                }
            }
            _ => self.simple_statement(),
        }
        self.scope.truncate(scope_len);
        self.arrays.truncate(arrays_len);
        self.out.push('\n');
    }

    fn counter(&mut self, name: String) {
        self.scope.push(Var {
            name,
            ty: Ty::Int,
            assignable: false,
        });
    }

    fn body(&mut self, depth: usize) {
        for _ in 0..1 + self.rng.below(3) {
            self.statement(depth + 1);
        }
        self.out.push_str(&"  ".repeat(depth + 1));
        self.out.push(')');
    }

    fn loop_body(&mut self, depth: usize) {
        let was = std::mem::replace(&mut self.in_loop, true);
        self.body(depth);
        self.in_loop = was;
    }

    /// The variables a statement may assign: those whose visible binding (the innermost of
    /// their name) is assignable. A loop counter that an odd name makes shadow a global of the
    /// same name hides it: `(set a …)` would assign the counter (seed 8 made a `while` loop
    /// that never ended that way).
    fn assignable(&self) -> Vec<Var> {
        self.scope
            .iter()
            .enumerate()
            .filter(|&(i, v)| v.assignable && !self.scope[i + 1..].iter().any(|w| w.name == v.name))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// An assignment or a store.
    fn simple_statement(&mut self) {
        let vars = self.assignable();
        if !vars.is_empty() && self.rng.one_in(2) {
            let var = self.rng.pick(&vars).clone();
            let _ = write!(self.out, "(set {} ", var.name);
            self.expr(var.ty, 0);
            self.out.push(')');
        } else if !self.arrays.is_empty() {
            let Array {
                name: array, ty, ..
            } = self.rng.pick(&self.arrays).clone();
            let _ = write!(self.out, "(set (aref {array} ");
            self.index();
            self.out.push_str(") ");
            self.expr(ty, 0);
            self.out.push(')');
        } else {
            self.out.push_str("(progn)");
        }
    }

    /// An index of a 64-element array: in bounds but for one in 50.
    fn index(&mut self) {
        if self.rng.one_in(50) {
            self.expr(Ty::Int, 2);
        } else {
            self.out.push_str("(logand ");
            self.expr(Ty::Int, 2);
            self.out.push_str(" 63)");
        }
    }

    fn value_type(&mut self) -> Ty {
        *self
            .rng
            .pick(&[Ty::Int, Ty::Int, Ty::Float, Ty::Float, Ty::Double, Ty::Bool])
    }

    fn literal(&mut self, ty: Ty) -> String {
        match ty {
            Ty::Int if !self.clean && self.rng.one_in(20) => {
                self.rng.pick(INT_LITERALS).to_string()
            }
            Ty::Int => (self.rng.below(20) as i64 - 5).to_string(),
            Ty::Float if !self.clean && self.rng.one_in(20) => {
                self.rng.pick(FLOAT_LITERALS).to_string()
            }
            Ty::Float => format!("{}.{}", self.rng.below(10), self.rng.below(100)),
            Ty::Double => format!("{}.{}d0", self.rng.below(100), self.rng.below(10)),
            Ty::Bool if !self.clean && self.rng.one_in(20) => {
                self.rng.pick(&["true", "false", "0"]).to_string()
            }
            Ty::Bool => self.rng.pick(&["t", "nil"]).to_string(),
        }
    }

    /// An expression of type `ty` (or now and then of the wrong type).
    fn expr(&mut self, ty: Ty, depth: usize) {
        self.fuel = self.fuel.saturating_sub(1);
        if self.rng.one_in(if self.clean { 2000 } else { 400 }) {
            self.deep(ty);
            return;
        }
        let vars: Vec<String> = self
            .scope
            .iter()
            .filter(|v| v.ty == ty)
            .map(|v| v.name.clone())
            .collect();
        if depth > 4 || self.fuel == 0 || self.rng.one_in(3) {
            if !vars.is_empty() && self.rng.one_in(2) {
                let var = self.rng.pick(&vars).clone();
                self.out.push_str(&var);
            } else {
                let lit = self.literal(ty);
                self.out.push_str(&lit);
            }
            return;
        }
        let d = depth + 1;
        if self.rng.one_in(8) {
            let candidates: Vec<Helper> = self
                .helpers
                .iter()
                .filter(|h| h.ret == ty)
                .cloned()
                .collect();
            if !candidates.is_empty() {
                let h = self.rng.pick(&candidates).clone();
                let _ = write!(self.out, "({}", h.name);
                for p in h.params {
                    self.out.push(' ');
                    self.expr(p, d);
                }
                self.out.push(')');
                return;
            }
        }
        if self.rng.one_in(10) {
            self.out.push_str("(if ");
            self.expr(Ty::Bool, d);
            self.out.push(' ');
            self.expr(ty, d);
            self.out.push(' ');
            self.expr(ty, d);
            self.out.push(')');
            return;
        }
        // Built-ins return many types (int64, uint, double): a conversion to the wanted type
        // keeps most modules well-typed, and leaving it out now and then tests the checker's
        // type errors.
        let convert = if ty == Ty::Bool || (!self.clean && self.rng.one_in(10)) {
            None
        } else {
            Some(type_name(ty))
        };
        if let Some(name) = convert {
            let _ = write!(self.out, "({name} ");
        }
        match ty {
            Ty::Int => self.int_expr(d),
            Ty::Float | Ty::Double => self.float_expr(ty, d),
            Ty::Bool => self.bool_expr(d),
        }
        if convert.is_some() {
            self.out.push(')');
        }
    }

    fn call(&mut self, head: &str, args: &[Ty], depth: usize) {
        let _ = write!(self.out, "({head}");
        for &ty in args {
            self.out.push(' ');
            self.expr(ty, depth);
        }
        self.out.push(')');
    }

    fn int_expr(&mut self, d: usize) {
        use Ty::*;
        match self.rng.below(16) {
            0 => {
                let head = *self
                    .rng
                    .pick(&["+", "*", "-", "logand", "logior", "logxor"]);
                let n = 1 + self.rng.below(4);
                self.call(head, &vec![Int; n], d);
            }
            1 => {
                let head = *self
                    .rng
                    .pick(&["/", "mod", "rem", "min", "max", "shl", "shr"]);
                self.call(head, &[Int, Int], d);
            }
            2 => {
                let head = *self
                    .rng
                    .pick(&["abs", "lognot", "popc", "clz", "ffs", "brev", "-"]);
                self.call(head, &[Int], d);
            }
            3 => {
                let head = *self.rng.pick(&["int", "int64", "uint", "int8", "uint16"]);
                let arg = *self.rng.pick(&[Int, Float, Double, Bool]);
                self.call(head, &[arg], d);
            }
            4 => {
                let word = *self.rng.pick(&[
                    "thread-idx-x",
                    "thread-idx-y",
                    "block-idx-x",
                    "block-dim-x",
                    "grid-dim-x",
                    "lane-id",
                    "warp-size",
                ]);
                self.out.push_str(word);
            }
            5 => {
                let arrays: Vec<String> = self
                    .arrays
                    .iter()
                    .filter(|a| a.ty == Int)
                    .map(|a| a.name.clone())
                    .collect();
                if arrays.is_empty() {
                    self.call("+", &[Int, Int], d);
                } else {
                    let array = self.rng.pick(&arrays).clone();
                    let _ = write!(self.out, "(aref {array} ");
                    self.index();
                    self.out.push(')');
                }
            }
            6 => {
                let head = *self.rng.pick(&[
                    "shfl-sync",
                    "shfl-down-sync",
                    "shfl-up-sync",
                    "shfl-xor-sync",
                ]);
                let _ = write!(self.out, "({head} #xffffffff ");
                self.expr(Int, d);
                let lane = *self.rng.pick(&["1", "16", "31", "32", "0", "-1"]);
                let _ = write!(self.out, " {lane})");
            }
            7 => {
                let head = *self.rng.pick(&["ballot-sync", "all-sync", "any-sync"]);
                self.out.push_str(&format!("({head} #xffffffff "));
                self.expr(Bool, d);
                self.out.push(')');
            }
            8 => {
                let head = *self.rng.pick(&[
                    "reduce-add-sync",
                    "reduce-min-sync",
                    "reduce-max-sync",
                    "match-any-sync",
                ]);
                self.out.push_str(&format!("({head} #xffffffff "));
                self.expr(Int, d);
                self.out.push(')');
            }
            9 => self.call("fz-square", &[Int], d),
            10 => {
                let head = *self.rng.pick(&["floor", "round", "double-to-int-rn"]);
                self.call(head, &[Double], d);
            }
            _ => {
                let head = *self.rng.pick(&["+", "-", "*"]);
                self.call(head, &[Int, Int], d);
            }
        }
    }

    fn float_expr(&mut self, ty: Ty, d: usize) {
        match self.rng.below(10) {
            0..=2 => {
                let head = *self.rng.pick(&["+", "-", "*", "/", "min", "max"]);
                let n = 1 + self.rng.below(3);
                self.call(head, &vec![ty; n], d);
            }
            3 | 4 => {
                let head = *self.rng.pick(&[
                    "sqrt", "sin", "cos", "tan", "exp", "log", "log2", "tanh", "rsqrt", "cbrt",
                    "floor", "ceil", "trunc", "round", "abs", "erf", "expm1", "log1p", "asin",
                ]);
                self.call(head, &[ty], d);
            }
            5 => {
                let head = *self.rng.pick(&["atan2", "expt", "hypot"]);
                self.call(head, &[ty, ty], d);
            }
            6 => self.call("fma", &[ty, ty, ty], d),
            7 => {
                let head = if ty == Ty::Float { "float" } else { "double" };
                let arg = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Double]);
                self.call(head, &[arg], d);
            }
            8 if ty == Ty::Float && self.arrays.iter().any(|a| a.name == "fout") => {
                let _ = write!(self.out, "(aref fout ");
                self.index();
                self.out.push(')');
            }
            _ => {
                let head = *self.rng.pick(&["+", "*"]);
                self.call(head, &[ty, ty], d);
            }
        }
    }

    fn bool_expr(&mut self, d: usize) {
        match self.rng.below(4) {
            0 | 1 => {
                let head = *self.rng.pick(&["<", "<=", ">", ">=", "=", "/="]);
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Double]);
                self.call(head, &[ty, ty], d);
            }
            2 => {
                let head = *self.rng.pick(&["and", "or"]);
                let n = 1 + self.rng.below(3);
                self.call(head, &vec![Ty::Bool; n], d);
            }
            _ => self.call("not", &[Ty::Bool], d),
        }
    }

    /// A deeply nested or very wide expression (up to a few hundred levels: below every
    /// pass's depth budget, so it must compile, print and run).
    fn deep(&mut self, ty: Ty) {
        let depth = 1 + self.rng.below(if self.clean { 200 } else { 300 });
        let (one, op) = match ty {
            Ty::Int => ("1", "+"),
            Ty::Float | Ty::Double => ("1.0", "*"),
            Ty::Bool => ("t", "and"),
        };
        let one = if ty == Ty::Double { "1d0" } else { one };
        if self.rng.one_in(2) {
            for _ in 0..depth {
                let _ = write!(self.out, "({op} {one} ");
            }
            self.out.push_str(one);
            self.out.push_str(&")".repeat(depth));
        } else {
            let _ = write!(self.out, "({op}");
            for _ in 0..depth * 4 {
                self.out.push(' ');
                self.out.push_str(one);
            }
            self.out.push(')');
        }
    }
}

fn type_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Int => "int",
        Ty::Float => "float",
        Ty::Double => "double",
        Ty::Bool => "bool",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generator() -> Generator {
        Generator {
            rng: Rng::new(1),
            out: String::new(),
            scope: Vec::new(),
            arrays: Vec::new(),
            helpers: Vec::new(),
            next_id: 0,
            fuel: 10,
            in_loop: false,
            in_helper: false,
            clean: true,
        }
    }

    fn var(name: &str, assignable: bool) -> Var {
        Var {
            name: name.into(),
            ty: Ty::Int,
            assignable,
        }
    }

    #[test]
    fn a_counter_hides_the_global_it_shadows_from_assignments() {
        let mut g = generator();
        // (defglobal a 5) (defglobal b 1), then a loop counted by `a` (an odd name).
        g.scope = vec![var("a", true), var("b", true), var("a", false)];
        let names: Vec<String> = g.assignable().into_iter().map(|v| v.name).collect();
        assert_eq!(names, ["b"]);
        // Inside the loop, a new assignable `a` is the one a statement sees, and may assign.
        g.scope.push(var("a", true));
        let names: Vec<String> = g.assignable().into_iter().map(|v| v.name).collect();
        assert_eq!(names, ["b", "a"]);
    }
}
