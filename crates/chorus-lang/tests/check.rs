//! The checker on valid programs: the IR it produces, written out by a compact dump
//! (`dump`) so that each test states the IR it expects.

use chorus_lang::check::builtins;
use chorus_lang::ir::{
    Block, Expr, ExprKind, Function, FunctionKind, GlobalQualifier, Literal, LocalId, LocalStorage,
    Module, StmtKind,
};
use chorus_lang::{Type, compile_str};
use std::fmt::Write;

fn check(text: &str) -> Module {
    match compile_str(text, "test.lisp") {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    }
}

/// The C names the CUDA printer gives a module's definitions: its namer, fed in its order
/// (structures, globals, functions; then each function's locals and each structure's fields).
struct CNames {
    globals: Vec<String>,
    functions: Vec<String>,
    fields: Vec<Vec<String>>,
    locals: Vec<Vec<String>>,
}

fn c_names(m: &Module) -> CNames {
    let mut namer = chorus_lang::cfamily::Namer::new(chorus_lang::cuda::RESERVED);
    for s in &m.structs {
        namer.module_name(&s.name);
    }
    let globals = m
        .globals
        .iter()
        .map(|g| namer.module_name(&g.name))
        .collect();
    let functions = m
        .functions
        .iter()
        .map(|f| namer.module_name(&f.name))
        .collect();
    let fields = m
        .structs
        .iter()
        .map(|s| {
            namer.begin_struct();
            s.fields.iter().map(|f| namer.field_name(&f.name)).collect()
        })
        .collect();
    let locals = m
        .functions
        .iter()
        .map(|f| {
            namer.begin_function();
            f.locals.iter().map(|l| namer.local_name(&l.name)).collect()
        })
        .collect();
    CNames {
        globals,
        functions,
        fields,
        locals,
    }
}

/// The C name of local `id` of `f`.
fn local_c(m: &Module, f: &Function, id: LocalId) -> String {
    let index = m
        .functions
        .iter()
        .position(|g| std::ptr::eq(g, f))
        .expect("a function of the module");
    c_names(m).locals[index][id.index()].clone()
}

/// The IR of every function, one statement per line.
fn dump(m: &Module) -> String {
    let mut out = String::new();
    for f in &m.functions {
        dump_function(m, f, &mut out);
    }
    out
}

/// The IR of the only function of `text`'s module.
fn body(text: &str) -> String {
    let m = check(text);
    dump(&m)
}

fn dump_function(m: &Module, f: &Function, out: &mut String) {
    let kind = match f.kind {
        FunctionKind::Kernel => "kernel",
        FunctionKind::Device => "device",
    };
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| {
            let l = &f[p.local];
            format!(
                "{} {}{}",
                l.ty,
                local_c(m, f, p.local),
                if p.restrict { " restrict" } else { "" }
            )
        })
        .collect();
    let index = m.functions.iter().position(|g| std::ptr::eq(g, f)).unwrap();
    let name = &c_names(m).functions[index];
    write!(out, "{kind} {} {name}({})", f.ret, params.join(", ")).unwrap();
    if let Some(lb) = f.launch_bounds {
        write!(
            out,
            " launch-bounds {} {:?} {:?}",
            lb.max_threads, lb.min_blocks, lb.max_cluster
        )
        .unwrap();
    }
    out.push('\n');
    dump_block(m, f, &f.body, 1, out);
}

fn dump_block(m: &Module, f: &Function, b: &Block, depth: usize, out: &mut String) {
    for s in &b.stmts {
        let pad = "  ".repeat(depth);
        let e = |e: &Expr| expr(m, f, e);
        let local = |id: &LocalId| &f[*id];
        let name = |id: &LocalId| local_c(m, f, *id);
        match &s.kind {
            StmtKind::Block(inner) => {
                writeln!(out, "{pad}{{").unwrap();
                dump_block(m, f, inner, depth + 1, out);
                writeln!(out, "{pad}}}").unwrap();
            }
            StmtKind::Declare { local: id, init } => {
                let l = local(id);
                writeln!(out, "{pad}{} {} = {}", l.ty, name(id), e(init)).unwrap();
            }
            StmtKind::SharedArray {
                local: id,
                element,
                dims,
                sizes,
            } => {
                let l = local(id);
                assert_eq!(l.storage, LocalStorage::Shared);
                let dims: Vec<String> = dims.iter().map(e).collect();
                writeln!(
                    out,
                    "{pad}shared {element} {}{sizes:?} dims {dims:?} : {}",
                    name(id),
                    l.ty
                )
                .unwrap();
            }
            StmtKind::DynamicShared { locals } => {
                let names: Vec<String> = locals
                    .iter()
                    .map(|l| {
                        assert_eq!(local(l).storage, LocalStorage::DynamicShared);
                        format!("{} {}", local(l).ty, name(l))
                    })
                    .collect();
                writeln!(out, "{pad}dynamic-shared {}", names.join(", ")).unwrap();
            }
            StmtKind::Assign { place, value } => {
                assert_eq!(place.ty, value.ty, "assignment types");
                writeln!(out, "{pad}{} = {}", e(place), e(value)).unwrap();
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                writeln!(out, "{pad}if {}", e(cond)).unwrap();
                dump_block(m, f, then, depth + 1, out);
                if let Some(o) = otherwise {
                    writeln!(out, "{pad}else").unwrap();
                    dump_block(m, f, o, depth + 1, out);
                }
            }
            StmtKind::While { cond, body } => {
                writeln!(out, "{pad}while {}", e(cond)).unwrap();
                dump_block(m, f, body, depth + 1, out);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                let init: Vec<String> = init
                    .iter()
                    .map(|(l, v)| format!("{} {} = {}", local(l).ty, name(l), e(v)))
                    .collect();
                let step: Vec<String> = step
                    .iter()
                    .map(|(l, v)| format!("{} = {}", name(l), e(v)))
                    .collect();
                let cond = cond.as_ref().map(e).unwrap_or_default();
                writeln!(
                    out,
                    "{pad}for ({}; {cond}; {})",
                    init.join(", "),
                    step.join(", ")
                )
                .unwrap();
                dump_block(m, f, body, depth + 1, out);
            }
            StmtKind::Break => writeln!(out, "{pad}break").unwrap(),
            StmtKind::Continue => writeln!(out, "{pad}continue").unwrap(),
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                writeln!(out, "{pad}switch {}", e(scrutinee)).unwrap();
                for c in cases {
                    writeln!(out, "{pad}case {:?}", c.values).unwrap();
                    dump_block(m, f, &c.body, depth + 1, out);
                }
                if let Some(d) = default {
                    writeln!(out, "{pad}default").unwrap();
                    dump_block(m, f, d, depth + 1, out);
                }
            }
            StmtKind::Return(v) => match v {
                Some(v) => writeln!(out, "{pad}return {}", e(v)).unwrap(),
                None => writeln!(out, "{pad}return").unwrap(),
            },
            StmtKind::Expr(v) => writeln!(out, "{pad}{}", e(v)).unwrap(),
            StmtKind::Printf { format, args } => {
                let args: Vec<String> = args.iter().map(e).collect();
                writeln!(out, "{pad}printf {format:?} {}", args.join(" ")).unwrap();
            }
            StmtKind::Asm(text) => writeln!(out, "{pad}asm {text:?}").unwrap(),
        }
    }
}

/// An expression as a compact S-expression; every operator shows its result type.
fn expr(m: &Module, f: &Function, e: &Expr) -> String {
    let sub = |x: &Expr| expr(m, f, x);
    let list = |xs: &[Expr]| xs.iter().map(sub).collect::<Vec<_>>().join(" ");
    match &e.kind {
        ExprKind::Literal(Literal::Bool(b)) => b.to_string(),
        ExprKind::Literal(Literal::Int(v)) if e.ty == Type::INT => v.to_string(),
        ExprKind::Literal(Literal::Int(v)) => format!("{v}:{}", e.ty),
        // Single-precision literals hold an f32 value; print it as one.
        ExprKind::Literal(Literal::Float(v)) if e.ty == Type::FLOAT => {
            format!("{:?}:float", *v as f32)
        }
        ExprKind::Literal(Literal::Float(v)) => format!("{v:?}:{}", e.ty),
        ExprKind::Local(l) => local_c(m, f, *l),
        ExprKind::Global(g) => format!("@{}", c_names(m).globals[g.index()]),
        ExprKind::Index(v) => format!("{v:?}"),
        ExprKind::Aref { base, indices } => {
            let idx: String = indices.iter().map(|i| format!("[{}]", sub(i))).collect();
            format!("{}{idx}", sub(base))
        }
        ExprKind::Field { base, index } => {
            let name = match &base.ty {
                Type::Vector(v) => v.components()[*index].to_string(),
                Type::Struct(s) => {
                    let i = m.structs.iter().position(|d| d.name == *s).unwrap();
                    c_names(m).fields[i][*index].clone()
                }
                other => panic!("field of {other}"),
            };
            format!("{}.{name}", sub(base))
        }
        ExprKind::Builtin { op, args } => {
            // The IR invariant: the arguments have exactly the types of one table signature.
            let types: Vec<Type> = args.iter().map(|a| a.ty.clone()).collect();
            assert!(
                builtins::names()
                    .flat_map(builtins::signatures)
                    .any(|s| s.op == *op && s.params == types && s.result == e.ty),
                "{op:?} {types:?} -> {} is not in the table",
                e.ty
            );
            format!("({op:?}:{} {})", e.ty, list(args))
        }
        ExprKind::Call { function, args } => {
            format!(
                "(call {} {})",
                c_names(m).functions[function.index()],
                list(args)
            )
        }
        ExprKind::Cast { value, implicit } => {
            let kind = if *implicit { "implicit" } else { "cast" };
            format!("({kind} {} {})", e.ty, sub(value))
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            format!("(? {} {} {})", sub(cond), sub(then), sub(otherwise))
        }
        ExprKind::AddressOf(v) => format!("&{}", sub(v)),
        ExprKind::Construct(parts) => format!("{{{} {}}}", e.ty, list(parts)),
    }
}

/// Compares a dump with the expected text, ignoring the common indentation of the latter.
#[track_caller]
fn assert_ir(actual: &str, expected: &str) {
    let lines: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    let indent = lines
        .iter()
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let expected: String = lines
        .iter()
        .map(|l| format!("{}\n", &l[indent..]))
        .collect();
    assert_eq!(actual, expected, "\nactual:\n{actual}");
}

#[test]
fn vec_add() {
    let ir = body(
        "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
           (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
             (if (< i n)
                 (set (aref c i)
                      (+ (aref a i) (aref b i))))))",
    );
    assert_ir(
        &ir,
        "
        kernel void vec_add_kernel(float* a, float* b, float* c, int n)
          {
            int i = (Add:int (Mul:int BlockDim(X) BlockIdx(X)) ThreadIdx(X))
            if (Lt:bool i n)
              c[i] = (Add:float a[i] b[i])
          }
        ",
    );
}

#[test]
fn if_with_return_in_a_device_function() {
    let ir = body(
        "(defkernel sign (int ((a int)))
           (if (= a 0)
               (return 0)
               (return 1)))",
    );
    assert_ir(
        &ir,
        "
        device int sign(int a)
          if (Eq:bool a 0)
            return 0
          else
            return 1
        ",
    );
}

#[test]
fn let_binds_in_parallel_and_shadows_with_fresh_names() {
    let ir = body(
        "(defkernel swap (void ((x int) (y float)))
           (let ((x y) (y x))
             (let ((x 1))
               (set y x))))",
    );
    assert_ir(
        &ir,
        "
        kernel void swap(int x, float y)
          {
            float x_1 = y
            int y_1 = x
            {
              int x_2 = 1
              y_1 = x_2
            }
          }
        ",
    );
}

#[test]
fn empty_let_is_a_block() {
    let ir = body("(defkernel k (void ((a int*))) (let () (set (aref a 0) 1)))");
    assert_ir(&ir, "kernel void k(int* a)\n  {\n    a[0] = 1\n  }");
}

#[test]
fn do_with_two_variables_steps_in_parallel() {
    let ir = body(
        "(defkernel k (void ((out int*)))
           (do ((a 0 (+ a 1))
                (b 0 (+ a b)))
               ((> a 15))
             (set (aref out a) b)))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(int* out)
          for (int a = 0, int b = 0; (Not:bool (Gt:bool a 15)); a = (Add:int a 1), b = (Add:int a b))
            out[a] = b
        ",
    );
}

#[test]
fn do_result_forms_run_after_the_loop_and_see_the_variables() {
    let ir = body(
        "(defkernel count-to (int ((n int)))
           (do ((i 0 (+ i 1))) ((>= i n) (return i))))",
    );
    assert_ir(
        &ir,
        "
        device int count_to(int n)
          {
            int i = 0
            for (; (Not:bool (Ge:bool i n)); i = (Add:int i 1))
            return i
          }
        ",
    );
}

#[test]
fn with_shared_memory_one_and_two_dimensions() {
    let ir = body(
        "(defkernel k (void ((out float*)))
           (with-shared-memory ((a int 16)
                                (b float 16 (+ 16 2))
                                (c float))
             (set (aref a thread-idx-x) 1)
             (set (aref b 1 thread-idx-x) 2.0)
             (set c (aref b 0 1))
             (set (aref out 0) c)))",
    );
    assert_ir(
        &ir,
        r#"
        kernel void k(float* out)
          {
            shared int a[16] dims ["16"] : int*
            shared float b[16, 18] dims ["16", "(Add:int 16 2)"] : float**
            shared float c[] dims [] : float
            a[ThreadIdx(X)] = 1
            b[1][ThreadIdx(X)] = 2.0:float
            c = b[0][1]
            out[0] = c
          }
        "#,
    );
}

#[test]
fn set_on_variable_accessor_and_aref() {
    let ir = body(
        "(defkernel k (void ((v float4*) (z float*)))
           (let ((x 0.0) (y (aref v 0)))
             (set x 1.0)
             (set (float4-y y) 1.0)
             (set (float4-x (aref v 0)) x)
             (set (aref z 0) (float4-w y))))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(float4* v, float* z)
          {
            float x = 0.0:float
            float4 y = v[0]
            x = 1.0:float
            y.y = 1.0:float
            v[0].x = x
            z[0] = y.w
          }
        ",
    );
}

#[test]
fn progn_flattens_and_for_switch_break_continue() {
    let ir = body(
        "(defkernel k (void ((a int*) (b int*) (n int)))
           (progn
             (for (i 0 (< i n) (+ i 1))
               (set (aref a i) i)
               (if (= i 2) (break))
               (if (= i 1) (continue)))
             (switch (aref a 0)
               (1 (set (aref b 0) 10))
               ((values 2 3) (set (aref b 0) 20))
               ((4 5) (set (aref b 0) 25))
               (t (set (aref b 0) 30)))))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(int* a, int* b, int n)
          for (int i = 0; (Lt:bool i n); i = (Add:int i 1))
            a[i] = i
            if (Eq:bool i 2)
              break
            if (Eq:bool i 1)
              continue
          switch a[0]
          case [1]
            b[0] = 10
          case [2, 3]
            b[0] = 20
          case [4, 5]
            b[0] = 25
          default
            b[0] = 30
        ",
    );
}

#[test]
fn while_loop() {
    let ir = body(
        "(defkernel k (void ((a int*)))
           (let ((i 0))
             (while (< i 10)
               (set i (+ i 1)))
             (set (aref a 0) i)))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(int* a)
          {
            int i = 0
            while (Lt:bool i 10)
              i = (Add:int i 1)
            a[0] = i
          }
        ",
    );
}

#[test]
fn dynamic_shared_memory_with_launch_bounds_and_restrict() {
    let ir = body(
        "(defkernel fill (void ((a int* :restrict)))
           (declare (launch-bounds 32 4))
           (with-dynamic-shared-memory ((s int) (t2 float))
             (set (aref s thread-idx-x) thread-idx-x)
             (syncthreads)
             (set (aref a thread-idx-x) (aref s thread-idx-x))))",
    );
    assert_ir(
        &ir,
        "
        kernel void fill(int* a restrict) launch-bounds 32 Some(4) None
          {
            dynamic-shared int* s, float* t2
            s[ThreadIdx(X)] = ThreadIdx(X)
            (SyncThreads:void )
            a[ThreadIdx(X)] = s[ThreadIdx(X)]
          }
        ",
    );
}

#[test]
fn device_functions_are_called_for_values_and_effects() {
    let m = check(
        "(defkernel k (void ((a float*)))
           (store a (twice 1.5))
           (set (aref a 1) (twice 2)))
         (defkernel twice (float ((x float))) (return (* 2 x)))
         (defkernel (store :device) (void ((p float*) (v float)))
           (set (aref p 0) v))",
    );
    assert_ir(
        &dump(&m),
        "
        kernel void k(float* a)
          (call store a (call twice 1.5:float))
          a[1] = (call twice 2.0:float)
        device float twice(float x)
          return (Mul:float 2.0:float x)
        device void store(float* p, float v)
          p[0] = v
        ",
    );
}

#[test]
fn defkernel_struct_layout_accessors_and_constructor() {
    let m = check(
        "(defkernel-struct pair (x int) (y int))
         (defkernel-struct particle (tag uint8) (pos float4) (p pair) (next particle*) (d double3))
         (defkernel k (void ((ps particle*) (q pair)))
           (let ((p (make-pair 1 (pair-y q))))
             (set (pair-x p) 3)
             (set (pair-y (particle-p (aref ps 0))) (pair-x p))
             (set (particle-next (aref ps 0)) ps)))",
    );
    let pair = m.struct_def("pair").unwrap();
    assert_eq!((pair.size, pair.align), (8, 4));
    assert_eq!(
        pair.fields.iter().map(|f| f.offset).collect::<Vec<_>>(),
        [0, 4]
    );
    let particle = m.struct_def("particle").unwrap();
    assert_eq!(
        particle.fields.iter().map(|f| f.offset).collect::<Vec<_>>(),
        [0, 16, 32, 40, 48]
    );
    assert_eq!((particle.size, particle.align), (80, 16));
    assert_eq!(m.layout(&Type::Struct("particle".into())), Some((80, 16)));
    assert_ir(
        &dump(&m),
        "
        kernel void k(particle* ps, pair q)
          {
            pair p = {pair 1 q.y}
            p.x = 3
            ps[0].p.y = p.x
            ps[0].next = ps
          }
        ",
    );
}

#[test]
fn defglobal_types_qualifiers_and_constant_folding() {
    let m = check(
        "(defglobal foo 0)
         (defglobal bar 0 :constant)
         (defglobal origin (float3 1.0 (- 2.0) 3) (:device :constant))
         (defglobal big 5000000000)
         (defglobal mask (uint -1) :managed)
         (defglobal cells (* 16 16))
         (defkernel k (void ((out int*)))
           (set foo (+ foo 1))
           (set (aref out 0) (+ foo bar cells)))",
    );
    let names = c_names(&m);
    let g: Vec<String> = m
        .globals
        .iter()
        .zip(&names.globals)
        .map(|(g, c_name)| {
            let init = match &g.init.kind {
                ExprKind::Literal(l) => format!("{l:?}"),
                ExprKind::Construct(parts) => format!(
                    "{:?}",
                    parts
                        .iter()
                        .map(|p| match p.kind {
                            ExprKind::Literal(l) => l,
                            _ => panic!("not folded"),
                        })
                        .collect::<Vec<_>>()
                ),
                other => panic!("not folded: {other:?}"),
            };
            format!("{} {c_name} {:?} {init}", g.ty, g.qualifiers)
        })
        .collect();
    assert_eq!(
        g,
        [
            "int foo [Device] Int(0)",
            "int bar [Constant] Int(0)",
            "float3 origin [Device, Constant] [Float(1.0), Float(-2.0), Float(3.0)]",
            "int64 big [Device] Int(5000000000)",
            "uint mask [Managed] Int(4294967295)",
            "int cells [Device] Int(256)",
        ]
    );
    assert_eq!(m.globals[1].qualifiers, [GlobalQualifier::Constant]);
    assert_ir(
        &dump(&m),
        "
        kernel void k(int* out)
          @foo = (Add:int @foo 1)
          out[0] = (Add:int (Add:int @foo @bar) @cells)
        ",
    );
}

/// Every signature of the overload table, called with arguments of exactly its parameter
/// types, resolves to itself.
#[test]
fn every_built_in_signature_resolves_to_itself() {
    let mut count = 0;
    for name in builtins::names() {
        for sig in builtins::signatures(name) {
            let params: Vec<String> = sig
                .params
                .iter()
                .enumerate()
                .map(|(i, t)| format!("(p{i} {t})"))
                .collect();
            // Arguments that must be constants (the Hopper built-ins' immediates) are literals.
            let mut args: Vec<String> = (0..sig.params.len())
                .map(|i| match chorus_lang::check::constant_argument(sig.op, i) {
                    Some(v) => v.to_string(),
                    None => format!("p{i}"),
                })
                .collect();
            // Texture reads name their element type first; surface accesses end with their
            // boundary mode.
            if builtins::is_texture_builtin(name) {
                if sig.result != Type::Void {
                    args.insert(0, sig.result.to_string());
                }
                if let chorus_lang::ir::Builtin::SurfRead(_, b)
                | chorus_lang::ir::Builtin::SurfWrite(_, b) = sig.op
                {
                    args.push(b.keyword().to_string());
                }
            }
            let call = format!("({name} {})", args.join(" "));
            let stmt = if sig.result == Type::Void {
                call
            } else {
                format!("(let ((r {call})) (return))")
            };
            let text = format!(
                "(defkernel (f :device) (void ({})) {stmt})",
                params.join(" ")
            );
            let m = check(&text);
            let mut stmts = &m.functions[0].body.stmts;
            if let StmtKind::Block(b) = &stmts[0].kind {
                stmts = &b.stmts;
            }
            let e = match &stmts[0].kind {
                StmtKind::Expr(e) | StmtKind::Declare { init: e, .. } => e,
                other => panic!("{other:?}"),
            };
            let ExprKind::Builtin { op, args } = &e.kind else {
                panic!("{text}: {e:?}")
            };
            assert_eq!(*op, sig.op, "{text}");
            assert_eq!(e.ty, sig.result, "{text}");
            let types: Vec<Type> = args.iter().map(|a| a.ty.clone()).collect();
            assert_eq!(types, sig.params, "{text}");
            count += 1;
        }
    }
    assert!(count > 400, "{count} signatures");
}

#[test]
fn every_family_resolves_from_natural_calls() {
    let ir = body(
        "(defkernel k (void ((a int*) (f float*) (d double*) (u uint*) (h half*)
                             (v float3) (st curand-state-xorwow*)))
           (let ((i thread-idx-x) (x (aref f 0)))
             (set (aref f 0) (+ (sqrt x) (__sin x) (expt x 2) (floor x) (fma x x 1)))
             (set (aref d 0) (sin 1.0d0))
             (set (aref a 0) (+ (clz i) (popc i) (shl i 2) (logand i 7 3) (lognot i) (mod i 3)))
             (set (aref u 0) (shfl-down-sync (uint -1) (aref u 0) 16))
             (set (aref f 1) (shfl-xor-sync (activemask) x 1 32))
             (set (aref u 1) (ballot-sync (uint -1) (> i 0)))
             (set (aref a 1) (reduce-add-sync (uint -1) i))
             (atomic-add (pointer (aref f 2)) 1)
             (set (aref a 2) (atomic-cas a 0 i))
             (atomic-inc u 10)
             (set (aref h 0) (+ (aref h 1) 1))
             (set (aref f 3) (dot v (* 2 v)))
             (set v (- (/ v 2)))
             (curand-init-xorwow 1 i 0 (pointer (aref st i)))
             (set (aref f 4) (curand-uniform-float-xorwow (pointer (aref st i))))
             (syncwarp)
             (threadfence)
             (cluster-barrier)
             (set (aref u 2) (cluster-rank))))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(int* a, float* f, double* d, uint* u, half* h, float3 v, curand-state-xorwow* st)
          {
            int i = ThreadIdx(X)
            float x = f[0]
            f[0] = (Add:float (Add:float (Add:float (Add:float (Math(Sqrt):float x) (Math(FastSin):float x)) (Math(Pow):float x 2.0:float)) (implicit float (Math(Floor):int x))) (Fma:float x x 1.0:float))
            d[0] = (Math(Sin):double 1.0:double)
            a[0] = (Add:int (Add:int (Add:int (Add:int (Add:int (Clz:int i) (Popc:int i)) (Shl:int i 2)) (BitAnd:int (BitAnd:int i 7) 3)) (BitNot:int i)) (Rem:int i 3))
            u[0] = (ShflDownSync:uint (cast uint -1) u[0] 16)
            f[1] = (ShflXorSync:float (ActiveMask:uint ) x 1 32)
            u[1] = (BallotSync:uint (cast uint -1) (Gt:bool i 0))
            a[1] = (WarpReduce(Add):int (cast uint -1) i)
            (Atomic(Add):float &f[2] 1.0:float)
            a[2] = (Atomic(Cas):int a 0 i)
            (Atomic(Inc):uint u 10:uint)
            h[0] = (Add:half h[1] 1.0:half)
            f[3] = (Dot:float v (Mul:float3 2.0:float v))
            v = (Neg:float3 (Div:float3 v 2.0:float))
            (CurandInit:void 1 i 0 &st[i])
            f[4] = (CurandUniform:float &st[i])
            (SyncWarp:void )
            (ThreadFence:void )
            (ClusterBarrier:void )
            u[2] = (ClusterRank:uint )
          }
        ",
    );
}

#[test]
fn implicit_conversions_are_explicit_in_the_ir() {
    let ir = body(
        "(defkernel k (void ((i int) (u uint) (b uint8) (l int64) (x float) (y double) (o double*)))
           (let ((s (+ i 1.5))
                 (c (< i 1.0))
                 (w (+ u 1))
                 (p (+ b i))
                 (q (+ l i))
                 (r (* x y))
                 (z (- 2 3 4))
                 (m (if (> i 0) 1 2.5))
                 (big (+ 2000000000 5ll))
                 (v (* x 1.0d0)))
             (set x 1)
             (set y x)
             (set l i)
             (set (aref o 0) (+ s (sqrt i)))
             (printf \"%f %d %d\\n\" x c b)))",
    );
    assert_ir(
        &ir,
        r#"
        kernel void k(int i, uint u, uint8 b, int64 l, float x, double y, double* o)
          {
            float s = (Add:float (implicit float i) 1.5:float)
            bool c = (Lt:bool (implicit float i) 1.0:float)
            uint w = (Add:uint u 1:uint)
            int p = (Add:int (implicit int b) i)
            int64 q = (Add:int64 l (implicit int64 i))
            double r = (Mul:double (implicit double x) y)
            int z = (Sub:int (Sub:int 2 3) 4)
            float m = (? (Gt:bool i 0) 1.0:float 2.5:float)
            int64 big = (Add:int64 2000000000:int64 5:int64)
            double v = (Mul:double (implicit double x) 1.0:double)
            x = 1.0:float
            y = (implicit double x)
            l = (implicit int64 i)
            o[0] = (implicit double (Add:float s (Math(Sqrt):float (implicit float i))))
            printf "%f %d %d\n" (implicit double x) (implicit int c) (implicit int b)
          }
        "#,
    );
}

#[test]
fn casts_and_constructors() {
    let ir = body(
        "(defkernel k (void ((x float) (h half*) (o int2*) (b bool)))
           (set (aref h 0) (float-to-half x))
           (set (aref h 1) (half 1.5))
           (set (aref h 2) (float-to-half 1))
           (set x (half-to-float (aref h 0)))
           (set (aref o 0) (int2 (int x) (int b)))
           (set (aref o 1) (int2 (int2-y (aref o 0)) 7)))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(float x, half* h, int2* o, bool b)
          h[0] = (cast half x)
          h[1] = (cast half 1.5:float)
          h[2] = (cast half 1.0:float)
          x = (cast float h[0])
          o[0] = {int2 (cast int x) (cast int b)}
          o[1] = {int2 o[0].y 7}
        ",
    );
}

#[test]
fn names_are_unique_readable_c_identifiers() {
    use chorus_lang::{Form, FormKind, read_str, reader::GENSYM_PREFIX};
    // The expander's gensyms (`#:g12`) cannot be read; rename `gensym-…` symbols into them.
    fn gensyms(f: &mut Form) {
        match &mut f.kind {
            FormKind::Symbol(s) if s.starts_with("gensym-") => {
                *s = format!("{GENSYM_PREFIX}{}", &s["gensym-".len()..]);
            }
            FormKind::List(items) => items.iter_mut().for_each(gensyms),
            _ => {}
        }
    }
    let mut forms = read_str(
        "(defglobal sin-table 1.0)
         (defkernel vec-add (void ((vec_add int*) (%in int) (float int)))
           (let ((gensym-g12 %in) (sin 2) (sin-table 3))
             (let ((gensym-g12 gensym-g12))
               (set (aref vec_add 0) (+ gensym-g12 sin sin-table float)))))",
        "t.lisp",
    )
    .unwrap();
    forms.iter_mut().for_each(gensyms);
    let m = chorus_lang::compile_forms(&forms).unwrap();
    assert_eq!(c_names(&m).globals[0], "sin_table");
    assert_ir(
        &dump(&m),
        "
        kernel void vec_add(int* vec_add_1, int _in, int float_)
          {
            int g12 = _in
            int sin_1 = 2
            int sin_table_1 = 3
            {
              int g12_1 = g12
              vec_add_1[0] = (Add:int (Add:int (Add:int g12_1 sin_1) sin_table_1) float_)
            }
          }
        ",
    );
}

#[test]
fn structure_globals_and_reduced_precision_arithmetic() {
    let m = check(
        "(defkernel-struct pair (x int) (y float))
         (defglobal origin (make-pair 1 (- 2)) :constant)
         (defkernel k (void ((h half2*) (b bfloat16*) (o bool*) (a and-or-test*)))
           (set (aref h 0) (* (+ (aref h 0) (aref h 1)) (aref h 2)))
           (set (aref o 0) (and (< (aref b 0) (aref b 1)) (>= (aref b 0) 1.0) (or)))
           (set (aref b 2) (- (aref b 0)))
           (set (aref o 1) (= (pair-x origin) 1)))
         (defkernel-struct and-or-test (v int))",
    );
    let init = &m.globals[0].init;
    let ExprKind::Construct(parts) = &init.kind else {
        panic!("{init:?}")
    };
    let values: Vec<Literal> = parts
        .iter()
        .map(|p| match p.kind {
            ExprKind::Literal(l) => l,
            _ => panic!("not folded: {p:?}"),
        })
        .collect();
    assert_eq!(values, [Literal::Int(1), Literal::Float(-2.0)]);
    assert_ir(
        &dump(&m),
        "
        kernel void k(half2* h, bfloat16* b, bool* o, and-or-test* a)
          h[0] = (Mul:half2 (Add:half2 h[0] h[1]) h[2])
          o[0] = (And:bool (And:bool (Lt:bool b[0] b[1]) (Ge:bool b[0] 1.0:bfloat16)) false)
          b[2] = (Neg:bfloat16 b[0])
          o[1] = (Eq:bool @origin.x 1)
        ",
    );
}

/// Checks the IR invariants back ends rely on, over a whole module.
fn validate(m: &Module) {
    for f in &m.functions {
        validate_block(m, f, &f.body);
    }
}

fn validate_block(m: &Module, f: &Function, b: &Block) {
    let local_ty = |id: &chorus_lang::ir::LocalId| &f[*id].ty;
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Block(inner) => validate_block(m, f, inner),
            StmtKind::Declare { local, init } => {
                assert_eq!(local_ty(local), &init.ty);
                validate_expr(m, init);
            }
            StmtKind::Assign { place, value } => {
                assert_eq!(place.ty, value.ty);
                validate_expr(m, place);
                validate_expr(m, value);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                assert_eq!(cond.ty, Type::Bool);
                validate_expr(m, cond);
                validate_block(m, f, then);
                if let Some(o) = otherwise {
                    validate_block(m, f, o);
                }
            }
            StmtKind::While { cond, body } => {
                assert_eq!(cond.ty, Type::Bool);
                validate_block(m, f, body);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => {
                for (l, e) in init.iter().chain(step) {
                    assert_eq!(local_ty(l), &e.ty);
                    validate_expr(m, e);
                }
                assert!(cond.as_ref().is_none_or(|c| c.ty == Type::Bool));
                validate_block(m, f, body);
            }
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => {
                assert!(scrutinee.ty.is_integer());
                cases.iter().for_each(|c| validate_block(m, f, &c.body));
                if let Some(d) = default {
                    validate_block(m, f, d);
                }
            }
            StmtKind::Return(Some(v)) => {
                assert_eq!(v.ty, f.ret);
                validate_expr(m, v);
            }
            StmtKind::Expr(e) => validate_expr(m, e),
            _ => {}
        }
    }
}

fn validate_expr(m: &Module, e: &Expr) {
    match &e.kind {
        ExprKind::Builtin { op, args } => {
            let types: Vec<Type> = args.iter().map(|a| a.ty.clone()).collect();
            assert!(
                builtins::names()
                    .flat_map(builtins::signatures)
                    .any(|s| s.op == *op && s.params == types && s.result == e.ty),
                "{op:?} {types:?} -> {}",
                e.ty
            );
            args.iter().for_each(|a| validate_expr(m, a));
        }
        ExprKind::Call { function, args } => {
            let callee = &m[*function];
            assert_eq!(e.ty, callee.ret);
            for (a, p) in args.iter().zip(&callee.params) {
                assert_eq!(a.ty, callee[p.local].ty);
                validate_expr(m, a);
            }
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            assert_eq!(cond.ty, Type::Bool);
            assert_eq!(then.ty, e.ty);
            assert_eq!(otherwise.ty, e.ty);
            [cond, then, otherwise]
                .iter()
                .for_each(|x| validate_expr(m, x));
        }
        ExprKind::Aref { base, indices } => {
            assert!(indices.iter().all(|i| i.ty.is_integer()));
            validate_expr(m, base);
        }
        ExprKind::Cast { value, .. } => validate_expr(m, value),
        ExprKind::Literal(Literal::Int(_)) => assert!(e.ty.is_integer(), "{e:?}"),
        ExprKind::Literal(Literal::Float(_)) => {
            assert!(e.ty.scalar().is_some_and(|s| !s.is_integer()), "{e:?}")
        }
        _ => {}
    }
}

/// Random arithmetic over typed variables: whatever the checker accepts satisfies the IR
/// invariants, and whatever it rejects it rejects with an error rather than a panic.
fn typed_expression() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        proptest::sample::select(vec![
            "i",
            "u",
            "l",
            "x",
            "y",
            "h",
            "b",
            "s",
            "(aref pf 0)",
            "thread-idx-x"
        ])
        .prop_map(str::to_string),
        (-5i64..70000).prop_map(|v| v.to_string()),
        (-3.0f64..3.0).prop_map(|v| format!("{v:.3}")),
        Just("2.5d0".to_string()),
        Just("t".to_string()),
    ];
    leaf.prop_recursive(5, 64, 3, |inner| {
        let ops: Vec<(&str, usize)> = vec![
            ("+", 2),
            ("-", 2),
            ("-", 1),
            ("*", 3),
            ("/", 2),
            ("min", 2),
            ("max", 2),
            ("<", 2),
            ("=", 2),
            (">=", 2),
            ("mod", 2),
            ("sqrt", 1),
            ("floor", 1),
            ("expt", 2),
            ("float", 1),
            ("int", 1),
            ("uint", 1),
            ("double", 1),
            ("half", 1),
            ("not", 1),
            ("and", 2),
            ("logand", 2),
            ("shl", 2),
            ("if", 3),
            ("abs", 1),
            ("fma", 3),
            ("atomic-add", 2),
        ];
        (
            proptest::sample::select(ops),
            proptest::collection::vec(inner, 3),
        )
            .prop_map(|((op, arity), args)| format!("({op} {})", args[..arity].join(" ")))
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    #[test]
    fn accepted_programs_satisfy_the_ir_invariants(e in typed_expression(), target in 0usize..4) {
        let place = ["(aref pf 1)", "(aref pi 1)", "l", "(aref ph 0)"][target];
        let src = format!(
            "(defkernel k (void ((i int) (u uint) (l int64) (x float) (y double) (h half)
                                 (b bool) (s int8) (pf float*) (pi int*) (ph half*)))
               (let ((v {e}))
                 (set {place} {e})))"
        );
        if let Ok(m) = compile_str(&src, "p.lisp") {
            validate(&m);
        }
    }
}

#[test]
fn macros_expand_before_checking() {
    let ir = body(
        "(defkernelmacro inc (place &optional (delta 1))
           `(set ,place (+ ,place ,delta)))
         (defkernel-symbol-macro the-answer 42)
         (defkernel k (void ((a int*) (n int)))
           (let* ((i thread-idx-x) (j (+ i 1)))
             (when (< j n) (inc (aref a i)))
             (unless (< j n) (inc (aref a 0) the-answer))
             (symbol-macrolet ((x 1.0))
               (set (aref a 1) (floor x)))
             (macrolet ((square (v) (if (numberp v) (* v v) `(* ,v ,v))))
               (set (aref a 2) (square 2)))))",
    );
    assert_ir(
        &ir,
        "
        kernel void k(int* a, int n)
          {
            int i = ThreadIdx(X)
            {
              int j = (Add:int i 1)
              if (Lt:bool j n)
                a[i] = (Add:int a[i] 1)
              if (Not:bool (Lt:bool j n))
                a[0] = (Add:int a[0] 42)
              {
                a[1] = (Math(Floor):int 1.0:float)
              }
              {
                a[2] = 4
              }
            }
          }
        ",
    );
}

#[test]
fn gensyms_from_macros_become_readable_names() {
    let ir = body(
        "(defkernelmacro swap (a b)
           (let ((tmp (gensym \"tmp\")))
             `(let ((,tmp ,a)) (set ,a ,b) (set ,b ,tmp))))
         (defkernel k (void ((p int*) (tmp int)))
           (swap (aref p 0) (aref p 1))
           (swap (aref p 1) tmp))",
    );
    // Each expansion declares its own local; neither is confused with the parameter `tmp`.
    assert_ir(
        &ir,
        "
        kernel void k(int* p, int tmp)
          {
            int tmp1 = p[0]
            p[0] = p[1]
            p[1] = tmp1
          }
          {
            int tmp2 = p[1]
            p[1] = tmp
            tmp = tmp2
          }
        ",
    );
}

/// A particle-simulation unit in the style of cl-cuda's sph example: kernel macros (one that
/// shadows `and`), symbol macros, float4 arithmetic, `floor` to a cell index, a shared array
/// passed to a device function, gensyms and atomics. It checks, and its IR keeps the invariants.
#[test]
fn a_simulation_style_unit_checks() {
    let m = check(
        "(defkernelmacro and (&rest args)
           (case (length args)
             (0 t)
             (1 (car args))
             (t `(if ,(car args) (and ,@(cdr args)) nil))))
         (defkernelmacro inc (place val) `(set ,place (+ ,place ,val)))
         (defkernelmacro pow (x n) `(* ,@(loop repeat n collect x)))
         (defkernelmacro do-range ((var from to) &body body)
           `(do ((,var ,from (+ ,var 1))) ((> ,var ,to)) ,@body))
         (defkernelmacro with-index ((i n) &body body)
           `(let ((,i (+ (* block-idx-x block-dim-x) thread-idx-x)))
              (when (< ,i ,n) ,@body)))
         (defkernel-symbol-macro h 0.01)
         (defkernel-symbol-macro gravity (float4 0.0 -9.8 0.0 0.0))
         (defkernel norm (float ((x float4)))
           (return (sqrt (dot x x))))
         (defkernel cell-of (int ((x float) (origin float) (delta float)))
           (return (floor (/ (- x origin) delta))))
         (defkernel in-grid (bool ((info float*) (i int) (j int)))
           (return (and (<= 0 i) (< i (floor (aref info 0))) (<= 0 j) (< j (floor (aref info 1))))))
         (defkernel kernel-weight (float ((r float)))
           (return (* (/ 315.0 (* 64.0 3.1415927 (pow h 9))) (pow (- (* h h) (* r r)) 3))))
         (defkernel insert (void ((cells int*) (info float*) (pos float4*) (n int)))
           (with-index (p n)
             (with-shared-memory ((shared-info float 4))
               (do-range (k 0 3) (set (aref shared-info k) (aref info k)))
               (syncthreads)
               (let ((i (cell-of (float4-x (aref pos p)) (aref shared-info 2) (aref shared-info 3)))
                     (j (cell-of (float4-y (aref pos p)) (aref shared-info 2) (aref shared-info 3))))
                 (when (in-grid shared-info i j)
                   (let ((slot (atomic-add (pointer (aref cells i)) 1)))
                     (set (aref cells (+ i slot 1)) p)))))))
         (defkernel step (void ((x float4*) (v float4*) (rho float*) (n int)))
           (with-index (i n)
             (symbol-macrolet ((xi (aref x i)) (vi (aref v i)))
               (let ((acc (+ (/ (* (kernel-weight (norm xi)) xi) (aref rho i)) gravity)))
                 (when (< 200.0 (norm acc))
                   (set acc (* acc (/ 200.0 (norm acc)))))
                 (inc vi (* acc 0.004))
                 (inc xi (/ (* vi 0.004) 0.004))))))",
    );
    validate(&m);
    let names = c_names(&m).functions;
    assert_eq!(
        names,
        [
            "norm_1",
            "cell_of",
            "in_grid",
            "kernel_weight",
            "insert",
            "step"
        ]
    );
    let ir = dump(&m);
    assert!(
        ir.contains("return (Math(Floor):int (Div:float (Sub:float x origin) delta))"),
        "{ir}"
    );
    assert!(
        ir.contains("int slot = (Atomic(Add):int &cells[i] 1)"),
        "{ir}"
    );
    assert!(ir.contains("(call in_grid shared_info i j)"), "{ir}");
    assert!(
        ir.contains("v[i] = (Add:float4 v[i] (Mul:float4 acc 0.004:float))"),
        "{ir}"
    );
    // The shadowing `and` expands to nested value ifs.
    assert!(
        ir.contains("return (? (Le:bool 0 i) (? (Lt:bool i (Math(Floor):int info[0]))"),
        "{ir}"
    );
}

#[test]
fn functions_that_always_return_are_accepted() {
    check(
        "(defkernel a (int ((x int))) (if (> x 0) (return 1) (return 0)))
         (defkernel b (int ((x int))) (switch x (1 (return 1)) (t (let ((y 2)) (return y)))))
         (defkernel c (int ((x int))) (while t (if (> x 0) (return x)) (set x (+ x 1))))
         (defkernel d (int ((x int))) (while t (do ((i 0 (+ i 1))) ((> i x)) (break)) (return 0)))
         (defkernel e (float ((x int))) (progn (set x 1) (return 1)))",
    );
}

#[test]
fn kernel_mod_and_rem_truncate_while_floor_mod_floors() {
    let ir = body(
        "(defkernel remainders (void ((a int*) (x float) (u uint)))
           (set (aref a 0) (mod (aref a 1) 3))
           (set (aref a 2) (rem (aref a 3) 3))
           (set (aref a 4) (floor-mod (aref a 5) 3))
           (set (aref a 6) (int (floor-mod x 2.0)))
           (set (aref a 7) (int (floor-mod u 2u))))",
    );
    assert!(ir.contains("Rem:int"), "{ir}");
    assert!(ir.contains("FloorMod:int"), "{ir}");
    assert!(ir.contains("FloorMod:float"), "{ir}");
    assert!(ir.contains("FloorMod:uint"), "{ir}");
    assert_eq!(ir.matches("Rem:int").count(), 2, "{ir}");
    let text = builtins::describe(builtins::signatures("floor-mod"));
    assert!(
        text.starts_with("(T, T) → T for T in int8, uint8"),
        "{text}"
    );
    assert!(text.contains("double"), "{text}");
}

#[test]
fn floor_mod_folds_with_the_divisors_sign_in_constant_expressions() {
    // Array sizes are folded: 2 (floored) and 1 (truncated, from `(rem 7 -3)`).
    let ir = body(
        "(defkernel sizes (void ())
           (with-shared-memory ((f int (floor-mod -7 3)) (r int (rem 7 -3)))
             (set (aref f 0) (aref r 0))))",
    );
    assert!(ir.contains("int f[2]"), "{ir}");
    assert!(ir.contains("int r[1]"), "{ir}");
}
