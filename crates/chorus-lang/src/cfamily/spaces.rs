//! Address spaces of pointers, for dialects whose pointer types carry one (MSL's `device`,
//! `constant`, `threadgroup` and `thread`), and what each function uses implicitly (index
//! variables, dynamic shared memory, warp collectives) for dialects that pass those as
//! parameters.
//!
//! The kernel language has one kind of pointer; MSL has one per address space, and a pointer's
//! space is part of its type. [`infer`] gives every pointer-typed local and function result the
//! space of what it points into: a kernel's pointer parameters point into `device` memory,
//! `with-shared-memory` and `with-dynamic-shared-memory` variables into `threadgroup` memory,
//! `(pointer x)` of a local into `thread` memory, of a `:constant` global into `constant`
//! memory. Spaces flow through initializers, assignments, pointer arithmetic, casts, calls
//! (argument to parameter) and `return`s until nothing changes. A variable or parameter that
//! receives pointers into two spaces cannot be typed: an error at the form that made it so.
//! Pointers that nothing constrains (a null pointer, a pointer read from memory, a structure's
//! pointer field) are `device` pointers.

use super::Dialect;
use crate::error::{Error, Result};
use crate::ir::visit::{Node, for_each_node};
use crate::ir::{
    Builtin, Expr, ExprKind, FunctionKind, GlobalQualifier, IndexVar, LocalStorage, Module,
    StmtKind,
};
use crate::span::Span;

/// Where a pointer points, in a dialect with address spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddressSpace {
    /// Global memory: buffers the host allocates (MSL `device`).
    Device,
    /// Read-only program-scope data (MSL `constant`).
    Constant,
    /// Memory one block shares (MSL `threadgroup`).
    Threadgroup,
    /// A thread's own variables (MSL `thread`).
    Thread,
}

impl AddressSpace {
    /// The MSL keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            AddressSpace::Device => "device",
            AddressSpace::Constant => "constant",
            AddressSpace::Threadgroup => "threadgroup",
            AddressSpace::Thread => "thread",
        }
    }
}

/// What a function reads implicitly, itself or through the functions it calls: a dialect that
/// passes index variables or dynamic shared memory as parameters
/// ([`Dialect::implicit_parameters`]) declares only those.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionUses {
    /// The index variables read, without repetition, in order of first use.
    pub index_vars: Vec<IndexVar>,
    /// The built-ins called, without repetition, in order of first use.
    pub builtins: Vec<Builtin>,
    /// Whether it uses `with-dynamic-shared-memory`.
    pub dynamic_shared: bool,
    /// Whether it reads a `:constant` global (a dialect that passes the globals as parameters,
    /// [`Dialect::globals_parameter`], declares their structure only then).
    ///
    /// [`Dialect::globals_parameter`]: super::Dialect::globals_parameter
    pub constant_globals: bool,
    /// Whether it reads or writes a `:device` global, or takes one's address.
    pub device_globals: bool,
}

impl FunctionUses {
    /// True when the function reads `var`.
    pub fn reads(&self, var: IndexVar) -> bool {
        self.index_vars.contains(&var)
    }

    /// True when the function reads one of the index variables `pred` accepts.
    pub fn reads_any(&self, pred: impl Fn(IndexVar) -> bool) -> bool {
        self.index_vars.iter().any(|v| pred(*v))
    }

    /// True when the function calls `builtin`.
    pub fn calls(&self, builtin: Builtin) -> bool {
        self.builtins.contains(&builtin)
    }

    /// The spaces of the globals it uses, in the order their structures are passed
    /// ([`super::globals_structure`]): `constant`, then `device`.
    pub fn global_spaces(&self) -> Vec<AddressSpace> {
        [
            (self.constant_globals, AddressSpace::Constant),
            (self.device_globals, AddressSpace::Device),
        ]
        .into_iter()
        .filter_map(|(used, space)| used.then_some(space))
        .collect()
    }

    fn merge(&mut self, other: &FunctionUses) -> bool {
        let mut changed = false;
        for v in &other.index_vars {
            if !self.index_vars.contains(v) {
                self.index_vars.push(*v);
                changed = true;
            }
        }
        for b in &other.builtins {
            if !self.builtins.contains(b) {
                self.builtins.push(*b);
                changed = true;
            }
        }
        if other.dynamic_shared && !self.dynamic_shared {
            self.dynamic_shared = true;
            changed = true;
        }
        for (theirs, ours) in [
            (other.constant_globals, &mut self.constant_globals),
            (other.device_globals, &mut self.device_globals),
        ] {
            if theirs && !*ours {
                *ours = true;
                changed = true;
            }
        }
        changed
    }
}

/// What every function of `module` uses, with what its callees use.
pub fn function_uses(module: &Module) -> Vec<FunctionUses> {
    let mut uses: Vec<FunctionUses> = Vec::with_capacity(module.functions.len());
    let mut calls: Vec<Vec<usize>> = Vec::with_capacity(module.functions.len());
    for f in &module.functions {
        let mut own = FunctionUses::default();
        let mut callees = Vec::new();
        for_each_node(Node::Block(&f.body), |node, _| match node {
            Node::Expr(e) => match &e.kind {
                ExprKind::Index(v) if !own.index_vars.contains(v) => own.index_vars.push(*v),
                ExprKind::Builtin { op, .. } if !own.builtins.contains(op) => {
                    own.builtins.push(*op)
                }
                ExprKind::Call { function, .. } => callees.push(function.index()),
                ExprKind::Global(id) => {
                    match module
                        .globals
                        .get(id.index())
                        .map(|g| global_space(&g.qualifiers))
                    {
                        Some(AddressSpace::Constant) => own.constant_globals = true,
                        Some(AddressSpace::Device) => own.device_globals = true,
                        // `threadgroup` globals are in no structure: a dialect that passes
                        // globals refuses them.
                        _ => {}
                    }
                }
                _ => {}
            },
            Node::Stmt(s) => {
                if let StmtKind::DynamicShared { .. } = s.kind {
                    own.dynamic_shared = true;
                }
            }
            Node::Block(_) => {}
        });
        uses.push(own);
        calls.push(callees);
    }
    // Until nothing changes: each function takes on what its callees use.
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..uses.len() {
            for &callee in &calls[i] {
                if callee != i
                    && let Some(theirs) = uses.get(callee).cloned()
                {
                    changed |= uses[i].merge(&theirs);
                }
            }
        }
    }
    uses
}

/// The address space of every pointer-typed local and function result of a module.
#[derive(Clone, Debug, Default)]
pub struct Spaces {
    /// By function, by local: `None` for a local that is not a pointer or that nothing
    /// constrains (printed as `device`).
    locals: Vec<Vec<Option<AddressSpace>>>,
    /// By function: the space of a returned pointer.
    returns: Vec<Option<AddressSpace>>,
}

impl Spaces {
    /// The space a pointer-typed local of function `function` points into.
    pub fn local(&self, function: usize, local: crate::ir::LocalId) -> AddressSpace {
        self.locals
            .get(function)
            .and_then(|l| l.get(local.index()))
            .copied()
            .flatten()
            .unwrap_or(AddressSpace::Device)
    }

    /// The space a function's pointer result points into.
    pub fn result(&self, function: usize) -> AddressSpace {
        self.returns
            .get(function)
            .copied()
            .flatten()
            .unwrap_or(AddressSpace::Device)
    }

    /// The space the pointer value `e` (in function `function`) points into, if known.
    pub fn of_value(&self, module: &Module, function: usize, e: &Expr) -> Option<AddressSpace> {
        let f = module.functions.get(function)?;
        match &e.kind {
            ExprKind::Local(id) => match f.local(*id).map(|l| &l.storage) {
                Some(LocalStorage::Shared | LocalStorage::DynamicShared) => {
                    Some(AddressSpace::Threadgroup)
                }
                _ => self
                    .locals
                    .get(function)?
                    .get(id.index())
                    .copied()
                    .flatten(),
            },
            ExprKind::Global(id) => {
                let g = module.globals.get(id.index())?;
                // An array-like global decays to a pointer into its own space.
                if g.ty.pointer_depth() > 0 {
                    Some(AddressSpace::Device)
                } else {
                    Some(global_space(&g.qualifiers))
                }
            }
            ExprKind::Aref { base, .. } | ExprKind::Field { base, .. } => {
                if e.ty.pointer_depth() > 0 && matches!(e.kind, ExprKind::Aref { .. }) {
                    // A partly indexed multi-dimensional array: the array's space.
                    self.of_value(module, function, base)
                } else {
                    // A pointer read from memory.
                    Some(AddressSpace::Device)
                }
            }
            ExprKind::Builtin { op, args } => match op {
                Builtin::Add | Builtin::Sub => args
                    .iter()
                    .find(|a| a.ty.pointer_depth() > 0)
                    .and_then(|a| self.of_value(module, function, a)),
                _ => None,
            },
            ExprKind::Call {
                function: callee, ..
            } => self.returns.get(callee.index()).copied().flatten(),
            ExprKind::Cast { value, .. } => {
                if value.ty.pointer_depth() > 0 {
                    self.of_value(module, function, value)
                } else {
                    None
                }
            }
            ExprKind::Select {
                then, otherwise, ..
            } => self
                .of_value(module, function, then)
                .or_else(|| self.of_value(module, function, otherwise)),
            ExprKind::AddressOf(place) => Some(self.of_place(module, function, place)),
            ExprKind::Literal(_) | ExprKind::Index(_) | ExprKind::Construct(_) => None,
        }
    }

    /// The space of the storage the place `e` names.
    fn of_place(&self, module: &Module, function: usize, e: &Expr) -> AddressSpace {
        let Some(f) = module.functions.get(function) else {
            return AddressSpace::Thread;
        };
        match &e.kind {
            ExprKind::Local(id) => match f.local(*id).map(|l| &l.storage) {
                Some(LocalStorage::Shared | LocalStorage::DynamicShared) => {
                    AddressSpace::Threadgroup
                }
                _ => AddressSpace::Thread,
            },
            ExprKind::Global(id) => module
                .globals
                .get(id.index())
                .map_or(AddressSpace::Device, |g| global_space(&g.qualifiers)),
            ExprKind::Aref { base, .. } => self
                .of_value(module, function, base)
                .unwrap_or(AddressSpace::Device),
            ExprKind::Field { base, .. } => self.of_place(module, function, base),
            _ => AddressSpace::Thread,
        }
    }
}

/// The space of the storage of a global with `qualifiers`: `constant` for a `:constant` one,
/// `threadgroup` for a `:shared` one, else `device`.
pub fn global_space(qualifiers: &[GlobalQualifier]) -> AddressSpace {
    if qualifiers.contains(&GlobalQualifier::Constant) {
        AddressSpace::Constant
    } else if qualifiers.contains(&GlobalQualifier::Shared) {
        AddressSpace::Threadgroup
    } else {
        AddressSpace::Device
    }
}

/// A pointer's space must be one: records `space` for a slot, or fails at `span` when the slot
/// already has another.
fn join(
    slot: &mut Option<AddressSpace>,
    space: Option<AddressSpace>,
    span: &Span,
    what: &str,
    dialect: &dyn Dialect,
) -> Result<bool> {
    match (*slot, space) {
        (_, None) => Ok(false),
        (None, Some(s)) => {
            *slot = Some(s);
            Ok(true)
        }
        (Some(a), Some(b)) if a == b => Ok(false),
        (Some(a), Some(b)) => Err(Error::new(
            span,
            format!(
                "{what} would point into both {} and {} memory; {} gives every pointer one \
                 address space (use separate variables or functions)",
                a.keyword(),
                b.keyword(),
                dialect.name()
            ),
        )),
    }
}

/// Infers the address space of every pointer in `module` (see the module documentation).
pub fn infer(module: &Module, dialect: &dyn Dialect) -> Result<Spaces> {
    let mut spaces = Spaces {
        locals: module
            .functions
            .iter()
            .map(|f| vec![None; f.locals.len()])
            .collect(),
        returns: vec![None; module.functions.len()],
    };
    for (i, f) in module.functions.iter().enumerate() {
        for (l, local) in f.locals.iter().enumerate() {
            if matches!(
                local.storage,
                LocalStorage::Shared | LocalStorage::DynamicShared
            ) {
                spaces.locals[i][l] = Some(AddressSpace::Threadgroup);
            }
        }
        if f.kind == FunctionKind::Kernel {
            for p in &f.params {
                if f.local(p.local).is_some_and(|l| l.ty.pointer_depth() > 0) {
                    spaces.locals[i][p.local.index()] = Some(AddressSpace::Device);
                }
            }
        }
    }
    // Each round can only fill slots, and a slot is filled once: the loop ends.
    loop {
        let mut changed = false;
        for (i, f) in module.functions.iter().enumerate() {
            // Collected first: the walk borrows the function, the updates borrow `spaces`.
            let mut flows: Vec<(Flow, Option<AddressSpace>, Span)> = Vec::new();
            for_each_node(Node::Block(&f.body), |node, _| match node {
                Node::Stmt(s) => match &s.kind {
                    StmtKind::Declare { local, init } if init.ty.pointer_depth() > 0 => {
                        flows.push((
                            Flow::Local(local.index()),
                            spaces.of_value(module, i, init),
                            s.span.clone(),
                        ))
                    }
                    StmtKind::Assign { place, value } if value.ty.pointer_depth() > 0 => {
                        if let ExprKind::Local(local) = place.kind {
                            flows.push((
                                Flow::Local(local.index()),
                                spaces.of_value(module, i, value),
                                s.span.clone(),
                            ));
                        }
                    }
                    StmtKind::For { init, step, .. } => {
                        for (local, value) in init.iter().chain(step) {
                            if value.ty.pointer_depth() > 0 {
                                flows.push((
                                    Flow::Local(local.index()),
                                    spaces.of_value(module, i, value),
                                    value.span.clone(),
                                ));
                            }
                        }
                    }
                    StmtKind::Return(Some(value)) if value.ty.pointer_depth() > 0 => flows.push((
                        Flow::Return(i),
                        spaces.of_value(module, i, value),
                        s.span.clone(),
                    )),
                    _ => {}
                },
                Node::Expr(e) => {
                    if let ExprKind::Call { function, args } = &e.kind
                        && let Some(callee) = module.functions.get(function.index())
                    {
                        for (p, a) in callee.params.iter().zip(args) {
                            if a.ty.pointer_depth() > 0 {
                                flows.push((
                                    Flow::Param(function.index(), p.local.index()),
                                    spaces.of_value(module, i, a),
                                    a.span.clone(),
                                ));
                            }
                        }
                    }
                }
                Node::Block(_) => {}
            });
            for (flow, space, span) in flows {
                let (slot, what) = match flow {
                    Flow::Local(l) => (&mut spaces.locals[i][l], "this pointer variable"),
                    Flow::Param(callee, l) => (
                        &mut spaces.locals[callee][l],
                        "a pointer parameter of the function called here",
                    ),
                    Flow::Return(f) => (&mut spaces.returns[f], "this function's pointer result"),
                };
                changed |= join(slot, space, &span, what, dialect)?;
            }
        }
        if !changed {
            return Ok(spaces);
        }
    }
}

/// Where a pointer value flows.
enum Flow {
    /// Into a local of the function being walked.
    Local(usize),
    /// Into parameter local `.1` of function `.0`.
    Param(usize, usize),
    /// Out of function `.0`.
    Return(usize),
}
