//! Printer tests on IR built by hand: the parts of the output that do not depend on the checker.

use super::{PrintOptions, cuda::Cuda};
use crate::ir::*;
use crate::span::Span;
use crate::types::{ScalarType, Type};

/// The CUDA C of `module`; a printing error fails the test.
fn print_module(module: &Module) -> String {
    match super::print_module(module, &Cuda, &PrintOptions::default()) {
        Ok(printed) => printed.code,
        Err(e) => panic!("{e}"),
    }
}

fn e(kind: ExprKind, ty: Type) -> Expr {
    Expr {
        kind,
        ty,
        span: Span::generated(),
    }
}

fn s(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::generated(),
    }
}

fn local(id: u32, ty: Type) -> Expr {
    e(ExprKind::Local(LocalId(id)), ty)
}

fn int(v: i128) -> Expr {
    e(ExprKind::Literal(Literal::Int(v)), Type::INT)
}

fn op(op: Builtin, args: Vec<Expr>, ty: Type) -> Expr {
    e(ExprKind::Builtin { op, args }, ty)
}

fn var(name: &str, ty: Type) -> Local {
    Local {
        name: name.into(),
        ty,
        storage: LocalStorage::Register,
    }
}

fn kernel(name: &str, params: Vec<Local>, mut locals: Vec<Local>, body: Vec<Stmt>) -> Function {
    let n = params.len();
    let mut all = params;
    all.append(&mut locals);
    Function {
        name: name.into(),
        kind: FunctionKind::Kernel,
        ret: Type::Void,
        params: (0..n)
            .map(|i| Param {
                local: LocalId(i as u32),
                restrict: false,
            })
            .collect(),
        launch_bounds: None,
        locals: all,
        body: Block { stmts: body },
        span: Span::generated(),
    }
}

fn module(functions: Vec<Function>) -> Module {
    Module {
        structs: vec![],
        globals: vec![],
        functions,
    }
}

fn index(v: IndexVar) -> Expr {
    e(ExprKind::Index(v), Type::INT)
}

/// The seed's vec-add-kernel, as the checker gives it.
fn vec_add() -> Module {
    let fp = Type::FLOAT.pointer_to();
    let aref = |base: u32| {
        e(
            ExprKind::Aref {
                base: Box::new(local(base, fp.clone())),
                indices: vec![local(4, Type::INT)],
            },
            Type::FLOAT,
        )
    };
    let i_init = op(
        Builtin::Add,
        vec![
            op(
                Builtin::Mul,
                vec![
                    index(IndexVar::BlockDim(Axis::X)),
                    index(IndexVar::BlockIdx(Axis::X)),
                ],
                Type::INT,
            ),
            index(IndexVar::ThreadIdx(Axis::X)),
        ],
        Type::INT,
    );
    let body = vec![s(StmtKind::Block(Block {
        stmts: vec![
            s(StmtKind::Declare {
                local: LocalId(4),
                init: i_init,
            }),
            s(StmtKind::If {
                cond: op(
                    Builtin::Lt,
                    vec![local(4, Type::INT), local(3, Type::INT)],
                    Type::Bool,
                ),
                then: Block {
                    stmts: vec![s(StmtKind::Assign {
                        place: aref(2),
                        value: op(Builtin::Add, vec![aref(0), aref(1)], Type::FLOAT),
                    })],
                },
                otherwise: None,
            }),
        ],
    }))];
    module(vec![kernel(
        "vec-add-kernel",
        vec![
            var("a", fp.clone()),
            var("b", fp.clone()),
            var("c", fp.clone()),
            var("n", Type::INT),
        ],
        vec![var("i", Type::INT)],
        body,
    )])
}

#[test]
fn vec_add_prints_as_cl_cuda_did() {
    assert_eq!(
        print_module(&vec_add()),
        "extern \"C\" __global__ void vec_add_kernel(float* a, float* b, float* c, int n);\n\
         \n\
         __global__ void vec_add_kernel(float* a, float* b, float* c, int n)\n\
         {\n\
         \x20 {\n\
         \x20   int i = ((blockDim.x * blockIdx.x) + threadIdx.x);\n\
         \x20   if (i < n) {\n\
         \x20     c[i] = (a[i] + b[i]);\n\
         \x20   }\n\
         \x20 }\n\
         }\n"
    );
}

#[test]
fn index_variables_are_cast_only_where_unsigned_arithmetic_differs() {
    // (< (- thread-idx-x 1) n) and (aref a (- thread-idx-x 1)) and (set (aref a thread-idx-x) …)
    let tid = || index(IndexVar::ThreadIdx(Axis::X));
    let minus_one = || op(Builtin::Sub, vec![tid(), int(1)], Type::INT);
    let ip = Type::INT.pointer_to();
    let body = vec![
        s(StmtKind::If {
            cond: op(
                Builtin::Lt,
                vec![minus_one(), local(1, Type::INT)],
                Type::Bool,
            ),
            then: Block {
                stmts: vec![s(StmtKind::Assign {
                    place: e(
                        ExprKind::Aref {
                            base: Box::new(local(0, ip.clone())),
                            indices: vec![minus_one()],
                        },
                        Type::INT,
                    ),
                    value: minus_one(),
                })],
            },
            otherwise: None,
        }),
        s(StmtKind::Assign {
            place: e(
                ExprKind::Aref {
                    base: Box::new(local(0, ip.clone())),
                    indices: vec![tid()],
                },
                Type::INT,
            ),
            value: op(Builtin::Div, vec![tid(), int(2)], Type::INT),
        }),
    ];
    let m = module(vec![kernel(
        "k",
        vec![var("a", ip), var("n", Type::INT)],
        vec![],
        body,
    )]);
    let text = print_module(&m);
    assert!(text.contains("if ((int)(threadIdx.x - 1) < n) {"), "{text}");
    assert!(
        text.contains("a[(int)(threadIdx.x - 1)] = (threadIdx.x - 1);"),
        "{text}"
    );
    assert!(
        text.contains("a[threadIdx.x] = ((int)(threadIdx.x) / 2);"),
        "{text}"
    );
}

#[test]
fn implicit_conversions_fold_into_literals_and_are_left_to_c_where_c_agrees() {
    let x = || local(0, Type::FLOAT);
    let n = || local(1, Type::INT);
    let cast = |v: Expr, ty: Type| {
        e(
            ExprKind::Cast {
                value: Box::new(v),
                implicit: true,
            },
            ty,
        )
    };
    let h = Type::Scalar(ScalarType::Half);
    let body = vec![
        // (set x (+ x 1)) → x = (x + 1.0f);
        s(StmtKind::Assign {
            place: x(),
            value: op(
                Builtin::Add,
                vec![x(), cast(int(1), Type::FLOAT)],
                Type::FLOAT,
            ),
        }),
        // (set x (+ n x)) → x = (n + x);
        s(StmtKind::Assign {
            place: x(),
            value: op(Builtin::Add, vec![cast(n(), Type::FLOAT), x()], Type::FLOAT),
        }),
        // (set x n) → x = n;
        s(StmtKind::Assign {
            place: x(),
            value: cast(n(), Type::FLOAT),
        }),
        // a half variable from n: __int2half_rn(n)
        s(StmtKind::Declare {
            local: LocalId(2),
            init: cast(n(), h.clone()),
        }),
        // printf of a float: promoted explicitly.
        s(StmtKind::Printf {
            format: "x=%f\n".into(),
            args: vec![cast(x(), Type::DOUBLE)],
        }),
    ];
    let m = module(vec![kernel(
        "k",
        vec![var("x", Type::FLOAT), var("n", Type::INT)],
        vec![var("h", h)],
        body,
    )]);
    let text = print_module(&m);
    assert!(text.starts_with("#include <cuda_fp16.h>\n"), "{text}");
    assert!(text.contains("x = (x + 1.0f);"), "{text}");
    assert!(text.contains("x = (n + x);"), "{text}");
    assert!(text.contains("x = n;"), "{text}");
    assert!(text.contains("__half h = __int2half_rn(n);"), "{text}");
    assert!(text.contains("printf(\"x=%f\\n\", (double)(x));"), "{text}");
}

#[test]
fn multi_binding_do_is_valid_c() {
    // (do ((a 0 (+ a 1)) (b 0 (+ b a))) ((> a 15)) …): b's step reads a, so a goes through a
    // temporary; the seed's `for ( int a = 0, int b = 0; …)` is not C.
    let a = || local(0, Type::INT);
    let b = || local(1, Type::INT);
    let stop = op(
        Builtin::Not,
        vec![op(Builtin::Gt, vec![a(), int(15)], Type::Bool)],
        Type::Bool,
    );
    let f = |steps: Vec<(LocalId, Expr)>| {
        let body = vec![s(StmtKind::For {
            init: vec![(LocalId(0), int(0)), (LocalId(1), int(0))],
            cond: Some(stop.clone()),
            step: steps,
            body: Block::default(),
        })];
        print_module(&module(vec![kernel(
            "k",
            vec![],
            vec![var("a", Type::INT), var("b", Type::INT)],
            body,
        )]))
    };
    let independent = f(vec![
        (LocalId(0), op(Builtin::Add, vec![a(), int(1)], Type::INT)),
        (LocalId(1), op(Builtin::Add, vec![b(), int(1)], Type::INT)),
    ]);
    assert!(
        independent.contains("for (int a = 0, b = 0; !(a > 15); a = (a + 1), b = (b + 1)) {"),
        "{independent}"
    );
    let dependent = f(vec![
        (LocalId(0), op(Builtin::Add, vec![a(), int(1)], Type::INT)),
        (LocalId(1), op(Builtin::Add, vec![b(), a()], Type::INT)),
    ]);
    assert!(
        dependent.contains("  {\n    int a = 0;\n    int b = 0;\n    int a_next;\n"),
        "{dependent}"
    );
    assert!(
        dependent.contains("for (; !(a > 15); a_next = (a + 1), b = (b + a), a = a_next) {"),
        "{dependent}"
    );
}

#[test]
fn loop_temporaries_shadow_no_module_name() {
    // (do ((a 0 (+ a 1)) (b 0 (+ b a))) (nil) …) in a module with a global `a-next`.
    let a = || local(0, Type::INT);
    let b = || local(1, Type::INT);
    let body = vec![s(StmtKind::For {
        init: vec![(LocalId(0), int(0)), (LocalId(1), int(0))],
        cond: None,
        step: vec![
            (LocalId(0), op(Builtin::Add, vec![a(), int(1)], Type::INT)),
            (LocalId(1), op(Builtin::Add, vec![b(), a()], Type::INT)),
        ],
        body: Block::default(),
    })];
    let mut m = module(vec![kernel(
        "k",
        vec![],
        vec![var("a", Type::INT), var("b", Type::INT)],
        body,
    )]);
    m.globals.push(Global {
        name: "a-next".into(),
        ty: Type::INT,
        qualifiers: vec![GlobalQualifier::Device],
        init: int(0),
        span: Span::generated(),
    });
    let text = print_module(&m);
    assert!(
        text.contains("extern \"C\" __device__ int a_next = 0;"),
        "{text}"
    );
    assert!(text.contains("    int a_next_;\n"), "{text}");
    assert!(
        text.contains("for (;; a_next_ = (a + 1), b = (b + a), a = a_next_) {"),
        "{text}"
    );
}
