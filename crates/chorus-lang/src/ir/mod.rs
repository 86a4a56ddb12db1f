//! The typed intermediate representation.
//!
//! The checker produces one [`Module`] per compilation unit (a text file, a `defkernel!` block, a
//! module built at run time). Every expression carries its type; every implicit conversion the
//! language allows is an explicit [`ExprKind::Cast`] with `implicit: true`; every built-in call
//! names the operation ([`Builtin`]), not its C spelling. Back ends (the CUDA C printer, the CPU
//! executor, later MSL and HIP) read this and nothing else.
//!
//! Names are the kernel text's (and the expander's gensyms, `#:g12`): the IR knows nothing of C.
//! Each back end gives them legal, unique spellings of its own (see `crate::cfamily::Namer`).
//!
//! Invariants the checker guarantees, and back ends may rely on:
//! * operands of arithmetic and comparison built-ins have the types the overload table of the
//!   checker lists (after implicit casts), and `Expr::ty` is the result type;
//! * `break`/`continue` appear only inside loops (`continue` also not directly in a `switch`);
//! * locals are declared (by [`StmtKind::Declare`], a parameter, a `for` init, shared memory)
//!   before use, and [`LocalId`]s index [`Function::locals`];
//! * shared-memory array sizes are positive integer constants ([`StmtKind::SharedArray::sizes`]).
//!
//! Ids index their tables: `module[function_id]`, `module[global_id]`, `function[local_id]`
//! (panicking, as slice indexing does, for an id of another module), or the checked
//! [`Module::function_by_id`], [`Module::global_by_id`] and [`Function::local`]; a side table
//! of a pass is indexed with [`LocalId::index`] and its kin. Passes that read the IR walk it with
//! [`visit`].

use crate::span::Span;
use crate::types::Type;
use std::ops::Index;
use std::sync::Arc;

mod hopper;
pub mod tensor;
pub mod visit;

pub use hopper::{HopperOp, WgmmaInput};

/// Index into [`Function::locals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

/// Index into [`Module::globals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);

/// Index into [`Module::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunctionId(pub u32);

impl LocalId {
    /// The position in [`Function::locals`] (and in any table a pass keeps per local).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl GlobalId {
    /// The position in [`Module::globals`] (and in any table a pass keeps per global).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl FunctionId {
    /// The position in [`Module::functions`] (and in any table a pass keeps per function).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A checked compilation unit.
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// `defkernel-struct` definitions, in definition order.
    pub structs: Vec<StructDef>,
    /// `defglobal` definitions, in definition order.
    pub globals: Vec<Global>,
    /// Kernels and device functions, in definition order.
    pub functions: Vec<Function>,
}

impl Module {
    /// The function whose kernel-language name is `name`.
    pub fn function(&self, name: &str) -> Option<(FunctionId, &Function)> {
        self.functions
            .iter()
            .enumerate()
            .find(|(_, f)| &*f.name == name)
            .map(|(i, f)| (FunctionId(i as u32), f))
    }

    /// The global whose kernel-language name is `name`.
    pub fn global(&self, name: &str) -> Option<(GlobalId, &Global)> {
        self.globals
            .iter()
            .enumerate()
            .find(|(_, g)| &*g.name == name)
            .map(|(i, g)| (GlobalId(i as u32), g))
    }

    /// The function `id`, or `None` for an id of another module.
    pub fn function_by_id(&self, id: FunctionId) -> Option<&Function> {
        self.functions.get(id.index())
    }

    /// The global `id`, or `None` for an id of another module.
    pub fn global_by_id(&self, id: GlobalId) -> Option<&Global> {
        self.globals.get(id.index())
    }

    /// The structure named `name`.
    pub fn struct_def(&self, name: &str) -> Option<&StructDef> {
        self.structs.iter().find(|s| &*s.name == name)
    }

    /// Size and alignment of `ty` in this module (see [`Type::layout`]).
    pub fn layout(&self, ty: &Type) -> Option<(usize, usize)> {
        ty.layout(&self.structs)
    }
}

impl Index<FunctionId> for Module {
    type Output = Function;

    /// The function `id`; panics for an id of another module.
    fn index(&self, id: FunctionId) -> &Function {
        &self.functions[id.index()]
    }
}

impl Index<GlobalId> for Module {
    type Output = Global;

    /// The global `id`; panics for an id of another module.
    fn index(&self, id: GlobalId) -> &Global {
        &self.globals[id.index()]
    }
}

/// A `defkernel-struct`. Its field offsets, size and alignment are C-family layouts
/// ([`crate::target::LayoutRules::C`]: CUDA, HIP, the CPU executor); another target's layout
/// (Metal's) comes from [`crate::target::Target::struct_layout`].
#[derive(Clone, Debug)]
pub struct StructDef {
    /// Kernel-language name (`pair`).
    pub name: Arc<str>,
    /// Fields in order.
    pub fields: Vec<StructField>,
    /// Size in bytes, C layout (each field at the next multiple of its alignment, the size
    /// rounded up to the alignment).
    pub size: usize,
    /// Alignment in bytes (the largest field alignment).
    pub align: usize,
    /// Where it was defined.
    pub span: Span,
}

/// One field of a structure.
#[derive(Clone, Debug)]
pub struct StructField {
    /// Kernel-language name.
    pub name: Arc<str>,
    /// Field type.
    pub ty: Type,
    /// Byte offset in the structure.
    pub offset: usize,
}

/// A variable qualifier of `defglobal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GlobalQualifier {
    /// `:device` → `__device__` (the default).
    Device,
    /// `:constant` → `__constant__`.
    Constant,
    /// `:shared` → `__shared__`.
    Shared,
    /// `:managed` → `__managed__`.
    Managed,
    /// `:restrict` → `__restrict__`.
    Restrict,
}

/// A `defglobal`.
#[derive(Clone, Debug)]
pub struct Global {
    /// Kernel-language name.
    pub name: Arc<str>,
    /// Type, inferred from the initializer.
    pub ty: Type,
    /// Qualifiers; never empty (`[Device]` by default).
    pub qualifiers: Vec<GlobalQualifier>,
    /// Constant initializer: a literal or a vector/structure constructor of literals.
    pub init: Expr,
    /// Where it was defined.
    pub span: Span,
}

/// Kernel or device function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// `__global__`: a `void` function launched from the host.
    Kernel,
    /// `__device__`: called from device code; may return a value or `void`.
    Device,
}

/// `(declare (launch-bounds max-threads [min-blocks [max-cluster]]))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchBounds {
    /// Maximum threads per block.
    pub max_threads: u32,
    /// Minimum resident blocks per multiprocessor.
    pub min_blocks: Option<u32>,
    /// Maximum blocks per cluster (sm_90).
    pub max_cluster: Option<u32>,
}

/// A kernel or device function.
#[derive(Clone, Debug)]
pub struct Function {
    /// Kernel-language name (`vec-add-kernel`).
    pub name: Arc<str>,
    /// Kernel or device function.
    pub kind: FunctionKind,
    /// Result type (`Void` for every kernel).
    pub ret: Type,
    /// Parameters, in order. Each names a local in [`Function::locals`].
    pub params: Vec<Param>,
    /// `__launch_bounds__`, kernels only.
    pub launch_bounds: Option<LaunchBounds>,
    /// Every local of the function: parameters first, then the others in order of declaration.
    pub locals: Vec<Local>,
    /// The body.
    pub body: Block,
    /// Where it was defined.
    pub span: Span,
}

impl Function {
    /// The local `id`, or `None` for an id of another function.
    pub fn local(&self, id: LocalId) -> Option<&Local> {
        self.locals.get(id.index())
    }
}

impl Index<LocalId> for Function {
    type Output = Local;

    /// The local `id`; panics for an id of another function.
    fn index(&self, id: LocalId) -> &Local {
        &self.locals[id.index()]
    }
}

/// A parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// The local that holds it.
    pub local: LocalId,
    /// `:restrict` (pointers only): `__restrict__`.
    pub restrict: bool,
}

/// Where a local lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalStorage {
    /// An ordinary variable (a register, or the stack).
    Register,
    /// A `with-shared-memory` variable. Its [`Local::ty`] is the pointer type the kernel sees
    /// (`float**` for a 2-D array of float); the element type and sizes are in the declaring
    /// [`StmtKind::SharedArray`]. A scalar shared variable has no dimensions and its plain type.
    Shared,
    /// A `with-dynamic-shared-memory` variable: a pointer to the start of the block's dynamic
    /// shared memory.
    DynamicShared,
}

/// A local variable or parameter.
#[derive(Clone, Debug)]
pub struct Local {
    /// Kernel-language name (a gensym keeps its `#:` prefix; each back end's namer makes it
    /// legal and unique, since two locals of a function may share a name).
    pub name: Arc<str>,
    /// Type.
    pub ty: Type,
    /// Storage class.
    pub storage: LocalStorage,
}

/// A sequence of statements that forms one C scope.
#[derive(Clone, Debug, Default)]
pub struct Block {
    /// The statements.
    pub stmts: Vec<Stmt>,
}

/// A statement.
#[derive(Clone, Debug)]
pub struct Stmt {
    /// What it does.
    pub kind: StmtKind,
    /// The form it came from.
    pub span: Span,
}

/// One clause of a `switch`.
#[derive(Clone, Debug)]
pub struct SwitchCase {
    /// The case labels (integer constants of the scrutinee's type).
    pub values: Vec<i128>,
    /// The body; control leaves the switch at its end (no fall-through).
    pub body: Block,
}

/// The kinds of statement.
#[derive(Clone, Debug)]
pub enum StmtKind {
    /// A nested scope (`let`, `symbol-macrolet`, `macrolet`, `with-shared-memory` bodies).
    Block(Block),
    /// Declares a register local, with an initial value.
    Declare {
        /// The local.
        local: LocalId,
        /// Its initial value.
        init: Expr,
    },
    /// `__shared__ T name[d0][d1]…;` (or a scalar when `sizes` is empty).
    SharedArray {
        /// The local ([`LocalStorage::Shared`]).
        local: LocalId,
        /// Element type.
        element: Type,
        /// Dimension expressions as written (for printing: `(16 + 2)`).
        dims: Vec<Expr>,
        /// Their constant values.
        sizes: Vec<u64>,
    },
    /// Binds each local to the start of the block's dynamic shared memory (cast to its type).
    DynamicShared {
        /// The locals ([`LocalStorage::DynamicShared`]), all aliasing one base.
        locals: Vec<LocalId>,
    },
    /// `place = value;`. `place` is a local, a global, an `aref` or a field access.
    Assign {
        /// Where to store.
        place: Expr,
        /// What to store (already of the place's type).
        value: Expr,
    },
    /// `if`.
    If {
        /// A `bool` test.
        cond: Expr,
        /// Taken when true.
        then: Block,
        /// Taken when false.
        otherwise: Option<Block>,
    },
    /// `while`.
    While {
        /// A `bool` test, evaluated before each iteration.
        cond: Expr,
        /// The body.
        body: Block,
    },
    /// `for` and `do`: declares `init` locals, loops while `cond` holds (`None`: forever),
    /// and after each iteration (and on `continue`) evaluates every step value, then assigns
    /// them all: the steps are **parallel**, as Common Lisp's `do` requires.
    For {
        /// Loop variables and their initial values (evaluated in order, each seeing the earlier).
        init: Vec<(LocalId, Expr)>,
        /// Continuation test.
        cond: Option<Expr>,
        /// Step assignments, performed in parallel.
        step: Vec<(LocalId, Expr)>,
        /// The body.
        body: Block,
    },
    /// `break`.
    Break,
    /// `continue`.
    Continue,
    /// `switch` with no fall-through.
    Switch {
        /// An integer scrutinee.
        scrutinee: Expr,
        /// The clauses, in order.
        cases: Vec<SwitchCase>,
        /// The `t`/`otherwise`/`default` clause.
        default: Option<Block>,
    },
    /// `return` / `return value`.
    Return(Option<Expr>),
    /// An expression evaluated for its effect (a call, an atomic, `syncthreads`).
    Expr(Expr),
    /// `printf(format, args…)`. The format is a C format string; arguments are promoted as C
    /// varargs promote them (float to double) by the checker.
    Printf {
        /// The format string, escapes resolved.
        format: String,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// Inline CUDA C or PTX emitted verbatim (`cuda-asm`). Back ends that cannot run it (the
    /// CPU executor) refuse the module when it is prepared.
    Asm(String),
}

/// An expression.
#[derive(Clone, Debug)]
pub struct Expr {
    /// What it computes.
    pub kind: ExprKind,
    /// Its type.
    pub ty: Type,
    /// The form it came from.
    pub span: Span,
}

/// A literal value. Its type is the expression's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    /// `t` / `nil` as `bool`.
    Bool(bool),
    /// An integer of any integer type.
    Int(i128),
    /// A floating value of any floating type (`half` literals are rounded when printed).
    Float(f64),
}

/// The three axes of the index variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// `x`.
    X,
    /// `y`.
    Y,
    /// `z`.
    Z,
}

/// The index variables (`thread-idx-x` …); each has type `int`, as in cl-cuda.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexVar {
    /// `thread-idx-*` → `threadIdx.*`.
    ThreadIdx(Axis),
    /// `block-idx-*` → `blockIdx.*`.
    BlockIdx(Axis),
    /// `block-dim-*` → `blockDim.*`.
    BlockDim(Axis),
    /// `grid-dim-*` → `gridDim.*`.
    GridDim(Axis),
    /// `cluster-dim-*` → `__clusterDim().*` (sm_90).
    ClusterDim(Axis),
    /// `cluster-idx-*` → `__clusterIdx().*`.
    ClusterIdx(Axis),
    /// `block-in-cluster-*` → `__clusterRelativeBlockIdx().*`.
    BlockInCluster(Axis),
    /// `warp-size` → `warpSize` (32).
    WarpSize,
    /// `lane-id`: `threadIdx` linearised modulo 32 (a helper in C).
    LaneId,
}

/// The kinds of expression.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// A literal.
    Literal(Literal),
    /// A local variable or parameter.
    Local(LocalId),
    /// A `defglobal`.
    Global(GlobalId),
    /// An index variable.
    Index(IndexVar),
    /// `(aref a i j…)`: one index per level of pointer (`a[i][j]`). Indices are integers.
    Aref {
        /// The pointer (or shared array).
        base: Box<Expr>,
        /// The indices.
        indices: Vec<Expr>,
    },
    /// A vector component (`(float4-x v)` → `v.x`) or a structure field (`(pair-x p)` → `p.x`).
    Field {
        /// A vector or structure value.
        base: Box<Expr>,
        /// The component or field index (`x` = 0 … `w` = 3 for vectors).
        index: usize,
    },
    /// A built-in operation.
    Builtin {
        /// Which.
        op: Builtin,
        /// Its arguments, of the types the checker's overload table allows.
        args: Vec<Expr>,
    },
    /// A call of a device function of this module.
    Call {
        /// The callee.
        function: FunctionId,
        /// Arguments, of the parameter types.
        args: Vec<Expr>,
    },
    /// A conversion to [`Expr::ty`]. `implicit` marks conversions the checker inserted (int to
    /// float in `(+ 1 x)`); printers may leave those to C's usual conversions.
    Cast {
        /// The value converted.
        value: Box<Expr>,
        /// Inserted by the checker rather than written.
        implicit: bool,
    },
    /// `(if test a b)` in expression position: `(test ? a : b)`.
    Select {
        /// A `bool`.
        cond: Box<Expr>,
        /// When true.
        then: Box<Expr>,
        /// When false.
        otherwise: Box<Expr>,
    },
    /// `(pointer x)`: the address of a place.
    AddressOf(Box<Expr>),
    /// A vector or structure built from its components (`(float3 1.0 2.0 3.0)`,
    /// `(make-pair 1 2)`, `(half2 a b)`).
    Construct(Vec<Expr>),
}

/// Built-in operations. The checker's overload table says which argument types each accepts and
/// what it returns; the doc comment gives the C spelling for the common case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    // ---- arithmetic (scalars of one type; vectors component-wise; vector·scalar scaling)
    /// `+` (vectors: `float3_add`; half: `__hadd`).
    Add,
    /// `-` binary.
    Sub,
    /// `*` (vector × scalar and scalar × vector scale).
    Mul,
    /// `/` (vector ÷ scalar).
    Div,
    /// `mod` and `rem` → `%` (integers); `fmodf`/`fmod` for floats: the remainder of the
    /// truncating division, with the sign of the dividend (`(mod -7 3)` is -1 in kernels).
    Rem,
    /// `floor-mod`: the remainder of the flooring division, with the sign of the divisor, as
    /// Common Lisp's `mod` at macro time (`(floor-mod -7 3)` is 2); C has no operator for it,
    /// the printer calls a helper (`chorus_floor_mod_int`).
    FloorMod,
    /// unary `-`.
    Neg,
    /// unary `/`: `1 / x`.
    Recip,
    /// `min` / `fminf`.
    Min,
    /// `max` / `fmaxf`.
    Max,
    /// `abs` / `fabsf` / `fabs`.
    Abs,
    // ---- comparison (→ bool)
    /// `=` → `==`.
    Eq,
    /// `/=` → `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `>`.
    Gt,
    /// `<=`.
    Le,
    /// `>=`.
    Ge,
    // ---- logic (bool)
    /// `not` → `!`.
    Not,
    /// `and` → `&&` (short-circuit).
    And,
    /// `or` → `||` (short-circuit).
    Or,
    // ---- bitwise (integers)
    /// `logand` → `&`.
    BitAnd,
    /// `logior` → `|`.
    BitOr,
    /// `xor` / `logxor` → `^`.
    BitXor,
    /// `lognot` → `~`.
    BitNot,
    /// `shl` → `<<`.
    Shl,
    /// `shr` → `>>` (arithmetic for signed types).
    Shr,
    // ---- floating math (float → `…f` spelling, double → plain)
    /// A unary or binary math function.
    Math(MathFn),
    /// `fma` → `fmaf` / `fma`.
    Fma,
    /// `dot` on vectors → `float3_dot` ….
    Dot,
    /// `__divide` → `__fdividef` (float) / `/` (double).
    FastDivide,
    /// `__saturate` → `__saturatef`: clamp to [0, 1].
    Saturate,
    /// `double-to-int-rn` → `__double2int_rn`.
    DoubleToIntRn,
    // ---- integer intrinsics
    /// `clz` → `__clz` / `__clzll`.
    Clz,
    /// `popc` → `__popc` / `__popcll`.
    Popc,
    /// `brev` → `__brev` / `__brevll`.
    Brev,
    /// `ffs` → `__ffs` / `__ffsll`.
    Ffs,
    // ---- synchronisation and fences
    /// `syncthreads` → `__syncthreads()`.
    SyncThreads,
    /// `syncwarp mask` → `__syncwarp(mask)`.
    SyncWarp,
    /// `threadfence` → `__threadfence()`.
    ThreadFence,
    /// `threadfence-block` → `__threadfence_block()`.
    ThreadFenceBlock,
    /// `threadfence-system` → `__threadfence_system()`.
    ThreadFenceSystem,
    // ---- warp collectives (mask first)
    /// `shfl-sync mask v lane [width]`.
    ShflSync,
    /// `shfl-up-sync mask v delta [width]`.
    ShflUpSync,
    /// `shfl-down-sync mask v delta [width]`.
    ShflDownSync,
    /// `shfl-xor-sync mask v lanemask [width]`.
    ShflXorSync,
    /// `ballot-sync mask pred` → uint.
    BallotSync,
    /// `all-sync mask pred` → int.
    AllSync,
    /// `any-sync mask pred` → int.
    AnySync,
    /// `activemask` → uint.
    ActiveMask,
    /// `match-any-sync mask v` → uint.
    MatchAnySync,
    /// `match-all-sync mask v pred*` → uint (`*pred` set to 1 when all match).
    MatchAllSync,
    /// `reduce-OP-sync mask v`.
    WarpReduce(WarpReduceOp),
    // ---- atomics (first argument a pointer; returns the old value)
    /// `atomic-add` … on `*p`.
    Atomic(AtomicOp),
    // ---- clusters (sm_90)
    /// `cluster-rank` → `__clusterRelativeBlockRank()` (uint).
    ClusterRank,
    /// `cluster-barrier` → arrive + wait.
    ClusterBarrier,
    /// `threadfence-cluster` → `__threadfence_cluster()`.
    ThreadFenceCluster,
    // ---- cuRAND XORWOW
    /// `curand-init-xorwow seed sequence offset state*`.
    CurandInit,
    /// `curand-uniform-float-xorwow` / `-double-` (by result type): (0, 1].
    CurandUniform,
    /// `curand-normal-float-xorwow` / `-double-`: standard normal.
    CurandNormal,
    // ---- texture and surface objects (the result or value type picks the element type)
    /// `tex1d-fetch T tex i` → `tex1Dfetch<T>(tex, i)`: element `i` of a linear texture, no
    /// filtering.
    TexFetch,
    /// `texNd T tex x [y [z]]` → `tex1D<T>` / `tex2D<T>` / `tex3D<T>`: a filtered read at
    /// floating coordinates; the number is the dimension count (1, 2 or 3).
    Tex(u8),
    /// `surfNd-read T surf x [y [z]] [boundary]` → `surfNDread<T>`: `x` in bytes.
    SurfRead(u8, SurfaceBoundary),
    /// `surfNd-write value surf x [y [z]] [boundary]` → `surfNDwrite`: `x` in bytes.
    SurfWrite(u8, SurfaceBoundary),
    // ---- warp-level tensor cores (sm_80): mma.sync, ldmatrix, cp.async (`ir/tensor.rs`)
    /// A tensor-core operation: `mma-sync`, `ldmatrix`, `cp-async` and its groups.
    Tensor(tensor::TensorOp),
    /// A Hopper (sm_90) operation: wgmma, TMA, mbarriers (see [`HopperOp`]).
    Hopper(HopperOp),
}

/// What a surface access outside the surface does (CUDA's `cudaSurfaceBoundaryMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SurfaceBoundary {
    /// `:trap` (the default): the access faults.
    Trap,
    /// `:clamp`: the coordinates are clamped to the surface.
    Clamp,
    /// `:zero`: reads give zero, writes are dropped.
    Zero,
}

impl SurfaceBoundary {
    /// Every mode, in the order of CUDA's enumeration.
    pub const ALL: [SurfaceBoundary; 3] = [
        SurfaceBoundary::Zero,
        SurfaceBoundary::Clamp,
        SurfaceBoundary::Trap,
    ];

    /// The keyword that selects it (`:trap`).
    pub fn keyword(self) -> &'static str {
        match self {
            SurfaceBoundary::Trap => ":trap",
            SurfaceBoundary::Clamp => ":clamp",
            SurfaceBoundary::Zero => ":zero",
        }
    }
}

/// Floating-point math functions; float arguments use the `f`-suffixed C function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `exp`.
    Exp,
    /// `exp2`.
    Exp2,
    /// `expm1`.
    Expm1,
    /// `log`.
    Log,
    /// `log2`.
    Log2,
    /// `log10`.
    Log10,
    /// `log1p`.
    Log1p,
    /// `sin`.
    Sin,
    /// `cos`.
    Cos,
    /// `tan`.
    Tan,
    /// `asin`.
    Asin,
    /// `acos`.
    Acos,
    /// `atan`.
    Atan,
    /// `atan2` (binary).
    Atan2,
    /// `sinh`.
    Sinh,
    /// `cosh`.
    Cosh,
    /// `tanh`.
    Tanh,
    /// `sqrt`.
    Sqrt,
    /// `rsqrt`.
    Rsqrt,
    /// `cbrt`.
    Cbrt,
    /// `expt` → `pow` (binary).
    Pow,
    /// `hypot` (binary).
    Hypot,
    /// `floor`.
    Floor,
    /// `ceil`.
    Ceil,
    /// `round`.
    Round,
    /// `trunc`.
    Trunc,
    /// `erf`.
    Erf,
    /// `erfc`.
    Erfc,
    /// `__exp` → `__expf` (float) / `exp`.
    FastExp,
    /// `__sin` → `__sinf`.
    FastSin,
    /// `__cos` → `__cosf`.
    FastCos,
    /// `__log` → `__logf`.
    FastLog,
    /// `__log2` → `__log2f`.
    FastLog2,
}

/// The read-modify-write of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `atomicAdd`.
    Add,
    /// `atomicSub`.
    Sub,
    /// `atomicExch`.
    Exch,
    /// `atomicMin`.
    Min,
    /// `atomicMax`.
    Max,
    /// `atomicInc` (wraps at the operand).
    Inc,
    /// `atomicDec`.
    Dec,
    /// `atomicCAS ptr compare value`.
    Cas,
    /// `atomicAnd`.
    And,
    /// `atomicOr`.
    Or,
    /// `atomicXor`.
    Xor,
}

/// The operation of a `__reduce_*_sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpReduceOp {
    /// `__reduce_add_sync`.
    Add,
    /// `__reduce_min_sync`.
    Min,
    /// `__reduce_max_sync`.
    Max,
    /// `__reduce_and_sync`.
    And,
    /// `__reduce_or_sync`.
    Or,
    /// `__reduce_xor_sync`.
    Xor,
}

// Dropping without recursion. The derived drop of a tree recurses once per level, and the IR of
// legal input nests thousands of levels deep (a flat `(+ 1 … 1)` folds into a chain as long as
// it has operands), which overflows a 2 MiB thread. These impls move the children of a node onto
// a heap stack before the node goes, so each node is dropped with no children left and the drop
// runs in constant stack space whatever the depth.

/// A childless expression kind, to leave behind in a node whose children were taken.
fn leaf_kind() -> ExprKind {
    ExprKind::Literal(Literal::Bool(false))
}

/// Whether `kind` holds other expressions.
fn has_children(kind: &ExprKind) -> bool {
    !matches!(
        kind,
        ExprKind::Literal(_) | ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Index(_)
    )
}

/// Moves the kinds of the children of `kind` (consumed) onto `pending`; the child nodes, left
/// childless, are dropped here.
fn take_children(kind: ExprKind, pending: &mut Vec<ExprKind>) {
    let mut take = |mut child: Expr| {
        if has_children(&child.kind) {
            pending.push(std::mem::replace(&mut child.kind, leaf_kind()));
        }
    };
    match kind {
        ExprKind::Literal(_) | ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Index(_) => {}
        ExprKind::Aref { base, indices } => {
            take(*base);
            indices.into_iter().for_each(take);
        }
        ExprKind::Field { base, .. } => take(*base),
        ExprKind::Builtin { args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Construct(args) => args.into_iter().for_each(take),
        ExprKind::Cast { value, .. } | ExprKind::AddressOf(value) => take(*value),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            take(*cond);
            take(*then);
            take(*otherwise);
        }
    }
}

impl Drop for Expr {
    fn drop(&mut self) {
        if !has_children(&self.kind) {
            return;
        }
        let mut pending = vec![std::mem::replace(&mut self.kind, leaf_kind())];
        while let Some(kind) = pending.pop() {
            take_children(kind, &mut pending);
        }
    }
}

/// The blocks directly inside `stmt`.
fn nested_blocks(stmt: &mut Stmt) -> impl Iterator<Item = &mut Block> {
    let (first, second, cases): (Option<&mut Block>, Option<&mut Block>, &mut [SwitchCase]) =
        match &mut stmt.kind {
            StmtKind::Block(block)
            | StmtKind::While { body: block, .. }
            | StmtKind::For { body: block, .. } => (Some(block), None, &mut []),
            StmtKind::If {
                then, otherwise, ..
            } => (Some(then), otherwise.as_mut(), &mut []),
            StmtKind::Switch { cases, default, .. } => (default.as_mut(), None, cases),
            StmtKind::Declare { .. }
            | StmtKind::SharedArray { .. }
            | StmtKind::DynamicShared { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(_)
            | StmtKind::Expr(_)
            | StmtKind::Printf { .. }
            | StmtKind::Asm(_) => (None, None, &mut []),
        };
    first
        .into_iter()
        .chain(second)
        .chain(cases.iter_mut().map(|case| &mut case.body))
}

impl Drop for Block {
    fn drop(&mut self) {
        let mut stmts = std::mem::take(&mut self.stmts);
        let mut pending: Vec<Vec<Stmt>> = Vec::new();
        loop {
            for stmt in &mut stmts {
                for block in nested_blocks(stmt) {
                    if !block.stmts.is_empty() {
                        pending.push(std::mem::take(&mut block.stmts));
                    }
                }
            }
            // The nested blocks are empty now: dropping these statements does not recurse
            // into them (their expressions drop without recursion too).
            drop(stmts);
            match pending.pop() {
                Some(next) => stmts = next,
                None => break,
            }
        }
    }
}

/// A node still to shrink ([`Function::shrink_to_fit`]).
enum Shrinking<'a> {
    Block(&'a mut Block),
    Expr(&'a mut Expr),
}

impl Function {
    /// Gives back the spare capacity of every vector in the function (grown by pushes while it
    /// was checked), in place and in constant stack space: the IR then takes memory in
    /// proportion to the text, without the second copy of the function a clone would make.
    pub fn shrink_to_fit(&mut self) {
        self.params.shrink_to_fit();
        self.locals.shrink_to_fit();
        let mut pending = vec![Shrinking::Block(&mut self.body)];
        while let Some(node) = pending.pop() {
            match node {
                Shrinking::Block(block) => {
                    let stmts = &mut block.stmts;
                    stmts.shrink_to_fit();
                    for stmt in stmts.iter_mut() {
                        shrink_stmt(&mut stmt.kind, &mut pending);
                    }
                }
                Shrinking::Expr(expr) => shrink_expr(&mut expr.kind, &mut pending),
            }
        }
    }
}

/// Shrinks the vectors of one statement; queues its blocks and expressions.
fn shrink_stmt<'a>(kind: &'a mut StmtKind, pending: &mut Vec<Shrinking<'a>>) {
    let exprs = |list: &'a mut Vec<Expr>, pending: &mut Vec<Shrinking<'a>>| {
        list.shrink_to_fit();
        pending.extend(list.iter_mut().map(Shrinking::Expr));
    };
    match kind {
        StmtKind::Block(block) => pending.push(Shrinking::Block(block)),
        StmtKind::Declare { init, .. } => pending.push(Shrinking::Expr(init)),
        StmtKind::SharedArray { dims, sizes, .. } => {
            sizes.shrink_to_fit();
            exprs(dims, pending);
        }
        StmtKind::DynamicShared { locals } => locals.shrink_to_fit(),
        StmtKind::Assign { place, value } => {
            pending.push(Shrinking::Expr(place));
            pending.push(Shrinking::Expr(value));
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            pending.push(Shrinking::Expr(cond));
            pending.push(Shrinking::Block(then));
            pending.extend(otherwise.as_mut().map(Shrinking::Block));
        }
        StmtKind::While { cond, body } => {
            pending.push(Shrinking::Expr(cond));
            pending.push(Shrinking::Block(body));
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
        } => {
            init.shrink_to_fit();
            step.shrink_to_fit();
            let values = init.iter_mut().chain(step.iter_mut()).map(|(_, e)| e);
            pending.extend(values.chain(cond.as_mut()).map(Shrinking::Expr));
            pending.push(Shrinking::Block(body));
        }
        StmtKind::Switch {
            scrutinee,
            cases,
            default,
        } => {
            pending.push(Shrinking::Expr(scrutinee));
            cases.shrink_to_fit();
            for case in cases.iter_mut() {
                case.values.shrink_to_fit();
                pending.push(Shrinking::Block(&mut case.body));
            }
            pending.extend(default.as_mut().map(Shrinking::Block));
        }
        StmtKind::Return(value) => pending.extend(value.as_mut().map(Shrinking::Expr)),
        StmtKind::Expr(expr) => pending.push(Shrinking::Expr(expr)),
        StmtKind::Printf { format, args } => {
            format.shrink_to_fit();
            exprs(args, pending);
        }
        StmtKind::Asm(text) => text.shrink_to_fit(),
        StmtKind::Break | StmtKind::Continue => {}
    }
}

/// Shrinks the vectors of one expression; queues its operands.
fn shrink_expr<'a>(kind: &'a mut ExprKind, pending: &mut Vec<Shrinking<'a>>) {
    match kind {
        ExprKind::Literal(_) | ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Index(_) => {}
        ExprKind::Aref { base, indices } => {
            pending.push(Shrinking::Expr(base));
            indices.shrink_to_fit();
            pending.extend(indices.iter_mut().map(Shrinking::Expr));
        }
        ExprKind::Field { base, .. } => pending.push(Shrinking::Expr(base)),
        ExprKind::Builtin { args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Construct(args) => {
            args.shrink_to_fit();
            pending.extend(args.iter_mut().map(Shrinking::Expr));
        }
        ExprKind::Cast { value, .. } | ExprKind::AddressOf(value) => {
            pending.push(Shrinking::Expr(value));
        }
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            pending.push(Shrinking::Expr(cond));
            pending.push(Shrinking::Expr(then));
            pending.push(Shrinking::Expr(otherwise));
        }
    }
}
