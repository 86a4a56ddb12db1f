//! The file layout, declarations and statements.
//!
//! Printing recurses over statements and expressions: the text's braces, indentation and
//! parentheses follow the tree's shape, which the call stack holds for free. Before it prints,
//! [`print`] measures the module's depth with [`crate::ir::visit`] (no recursion) and moves to a
//! big stack when the module nests deeply; questions about the IR that print nothing (does a
//! `for` step read another loop variable?) walk with the visitor too.

use super::helpers::Helper;
use super::names::Namer;
use super::spaces::{self, AddressSpace, FunctionUses, Spaces};
use super::{Dialect, NameTable, PrintOptions, PrintedModule, unsupported};
use crate::error::{Error, Result};
use crate::ir::visit::{Node, Visit, Visitor, for_each_node, walk_expr};
use crate::ir::{
    Block, Expr, ExprKind, Function, FunctionKind, Global, LocalId, Module, Stmt, StmtKind,
    SwitchCase,
};
use crate::span::Span;
use crate::stack;
use crate::types::Type;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::sync::Arc;

/// The name of the dynamic shared memory array that dynamic shared memory variables point into.
pub(super) const DYNAMIC_SHARED: &str = "chorus_dyn_smem";

/// How deeply statements and expressions may nest for the printer: more than the expander lets
/// forms nest ([`crate::expand::MAX_FORM_DEPTH`]), so that a long flat `(+ 1 … 1)`, which the
/// checker folds into a chain of binary additions, still prints. Deeper IR is an error at the
/// deepest expression rather than a stack overflow.
pub const MAX_PRINT_DEPTH: usize = 20_000;

/// What the text printed so far needs at the top of the file.
#[derive(Default)]
pub(super) struct Needs {
    /// Headers, by their position in [`Dialect::headers`].
    pub headers: BTreeSet<(usize, &'static str)>,
    pub helpers: BTreeSet<Helper>,
}

/// The emitted names of a module's definitions.
struct ModuleNames {
    structs: HashMap<Arc<str>, String>,
    /// Field names, by structure index.
    fields: Vec<Vec<String>>,
    globals: Vec<String>,
    functions: Vec<String>,
}

/// Prints `module` (see [`super::print_module`]): on the caller's thread when its statements
/// and expressions nest shallowly, else on a big stack; an error when they nest deeper than
/// [`MAX_PRINT_DEPTH`].
pub(super) fn print(
    module: &Module,
    dialect: &(dyn Dialect + Sync),
    options: &PrintOptions,
) -> Result<PrintedModule> {
    let (depth, deepest) = max_depth(module);
    if depth > MAX_PRINT_DEPTH {
        return Err(Error::new(
            &deepest,
            format!(
                "this expression nests more than {MAX_PRINT_DEPTH} deep (counting the statements \
                 around it), too deep to print; split it with `let`"
            ),
        ));
    }
    let spaces = if dialect.address_spaces() {
        Some(spaces::infer(module, dialect)?)
    } else {
        None
    };
    if depth <= stack::SMALL_STACK_DEPTH {
        return ModulePrinter::new(module, dialect, options, spaces).print();
    }
    stack::on_big_stack("chorus-print", || {
        ModulePrinter::new(module, dialect, options, spaces).print()
    })
    .map_err(|e| Error::new(&deepest, format!("cannot start a thread to print on: {e}")))?
}

/// The deepest nesting of statements and expressions in `module`, and where it is: a global's
/// initializer and a function's body are at depth 1, the body's statements at 2 and so on (the
/// depth of [`crate::ir::visit`] plus one). Of several nodes equally deep, the last in the
/// module's order.
fn max_depth(module: &Module) -> (usize, Span) {
    let mut best = (0, Span::generated());
    let mut deepest = |node: Node, depth: usize| {
        let span = match node {
            Node::Block(_) => return,
            Node::Stmt(s) => &s.span,
            Node::Expr(e) => &e.span,
        };
        if depth + 1 >= best.0 {
            best = (depth + 1, span.clone());
        }
    };
    for g in &module.globals {
        for_each_node(Node::Expr(&g.init), &mut deepest);
    }
    for f in &module.functions {
        for_each_node(Node::Block(&f.body), &mut deepest);
    }
    best
}

/// Prints one module.
struct ModulePrinter<'m> {
    emitter: Emitter<'m>,
}

/// The printing state: the module, the dialect, what the printed text needs, the names, and
/// the function (if any) whose body is being printed.
pub(super) struct Emitter<'m> {
    pub module: &'m Module,
    pub dialect: &'m dyn Dialect,
    pub needs: Needs,
    /// Printing a global initializer: constructors become brace lists and half literals raw bits.
    pub constant: bool,
    function: Option<&'m Function>,
    namer: Namer,
    names: ModuleNames,
    /// The current function's local names, by [`LocalId`].
    locals: Vec<String>,
    /// The first error met; printing goes on (with placeholder text) and returns it at the end.
    error: Option<Error>,
    /// The form being printed, for errors.
    pub span: Span,
    line_directives: bool,
    /// The kernel-text line the last `#line` directive named.
    last_directive: Option<(Arc<str>, u32)>,
    out: String,
    depth: usize,
    /// Pointer address spaces, for a dialect that has them ([`Dialect::address_spaces`]).
    spaces: Option<Spaces>,
    /// What each function uses implicitly, by function index.
    uses: Vec<FunctionUses>,
    /// The index of the function being printed.
    function_index: usize,
    /// The address space of the pointer type [`Emitter::c_type`] spells next.
    pub pointer_space: AddressSpace,
}

impl<'m> ModulePrinter<'m> {
    fn new(
        module: &'m Module,
        dialect: &'m dyn Dialect,
        options: &PrintOptions,
        spaces: Option<Spaces>,
    ) -> ModulePrinter<'m> {
        let mut namer = Namer::new(dialect.reserved_words());
        // Structures first, then globals, then functions, each in definition order.
        let structs = module
            .structs
            .iter()
            .map(|s| (s.name.clone(), namer.module_name(&s.name)))
            .collect();
        let globals = module
            .globals
            .iter()
            .map(|g| namer.module_name(&g.name))
            .collect();
        let functions = module
            .functions
            .iter()
            .map(|f| namer.module_name(&f.name))
            .collect();
        let fields = module
            .structs
            .iter()
            .map(|s| {
                namer.begin_struct();
                s.fields.iter().map(|f| namer.field_name(&f.name)).collect()
            })
            .collect();
        ModulePrinter {
            emitter: Emitter {
                module,
                dialect,
                needs: Needs::default(),
                constant: false,
                function: None,
                namer,
                names: ModuleNames {
                    structs,
                    fields,
                    globals,
                    functions,
                },
                locals: Vec::new(),
                error: None,
                span: Span::generated(),
                line_directives: options.line_directives,
                last_directive: None,
                out: String::new(),
                depth: 0,
                spaces,
                uses: spaces::function_uses(module),
                function_index: 0,
                pointer_space: AddressSpace::Device,
            },
        }
    }

    fn print(mut self) -> Result<PrintedModule> {
        let e = &mut self.emitter;
        let module = e.module;
        // Sections are printed first so that what they use is known before the top is written.
        let structs = e.structs();
        let globals: Vec<String> = if e.globals_passed() {
            [AddressSpace::Constant, AddressSpace::Device]
                .into_iter()
                .filter_map(|space| e.globals_structure(space))
                .collect()
        } else {
            module
                .globals
                .iter()
                .enumerate()
                .map(|(i, g)| e.global(i, g))
                .collect()
        };
        let linkage = e.dialect.linkage();
        let prototypes: Vec<String> = module
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| format!("{linkage}{};", e.signature(i, f)))
            .collect();
        // The definitions go straight into the text's one string (they end it): the printed
        // text is then held once, not once in pieces and once joined.
        // It grows by a quarter at a time rather than doubling: deep nesting prints about five
        // to ten bytes of indented C per byte of kernel text, and a doubled string's spare
        // half would be as big again.
        let mut definitions = String::new();
        for (i, f) in module.functions.iter().enumerate() {
            let definition = e.definition(i, f);
            let needed = definition.len() + 1;
            if definitions.capacity() - definitions.len() < needed {
                definitions.reserve_exact(needed.max(definitions.len() / 4));
            }
            if i > 0 {
                definitions.push('\n');
            }
            definitions.push_str(&definition);
        }
        let helpers: Vec<String> = e
            .needs
            .helpers
            .clone()
            .into_iter()
            .map(|h| e.helper_definition(h))
            .collect();
        if let Some(error) = e.error.take() {
            return Err(error);
        }

        let mut sections: Vec<String> = Vec::new();
        let prelude = e.dialect.prelude();
        if !e.needs.headers.is_empty() || !prelude.is_empty() {
            let mut top: String = e
                .needs
                .headers
                .iter()
                .map(|(_, h)| format!("#include <{h}>\n"))
                .collect();
            top.push_str(prelude);
            sections.push(top);
        }
        if !helpers.is_empty() {
            sections.push(helpers.join("\n"));
        }
        if !structs.is_empty() {
            sections.push(structs);
        }
        if !globals.is_empty() {
            sections.push(globals.concat());
        }
        if !prototypes.is_empty() {
            sections.push(prototypes.iter().map(|p| format!("{p}\n")).collect());
        }
        let mut code = definitions;
        if !sections.is_empty() {
            let mut head = sections.join("\n");
            if !code.is_empty() {
                head.push('\n');
            }
            code.insert_str(0, &head);
        }
        code.shrink_to_fit();
        let ModuleNames {
            globals, functions, ..
        } = std::mem::replace(
            &mut e.names,
            ModuleNames {
                structs: HashMap::new(),
                fields: Vec::new(),
                globals: Vec::new(),
                functions: Vec::new(),
            },
        );
        Ok(PrintedModule {
            code,
            headers: e.needs.headers.iter().map(|(_, h)| *h).collect(),
            names: NameTable::new(module, functions, globals),
        })
    }
}

impl<'m> Emitter<'m> {
    /// Records `error` if it is the first; the caller goes on with placeholder text.
    pub(super) fn fail(&mut self, error: Error) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    /// Records that the dialect cannot express `what` at the current form.
    pub(super) fn unsupported(&mut self, what: &str) {
        let error = unsupported(&self.span, self.dialect, what);
        self.fail(error);
    }

    /// Records that the printed text includes `header`.
    pub(super) fn include(&mut self, header: &'static str) {
        let rank = self
            .dialect
            .headers()
            .iter()
            .position(|h| *h == header)
            .unwrap_or(usize::MAX);
        self.needs.headers.insert((rank, header));
    }

    /// Records the headers `ty` needs.
    pub(super) fn note_type(&mut self, ty: &Type) {
        match ty {
            Type::Pointer(t) => self.note_type(t),
            Type::Struct(_) => {}
            other => {
                if let Some(header) = self.dialect.type_header(other) {
                    self.include(header);
                }
            }
        }
    }

    /// The spelling of `ty` (structures by their emitted name).
    pub(super) fn c_type(&mut self, ty: &Type) -> String {
        self.note_type(ty);
        match ty {
            Type::Pointer(t) if self.spaces.is_some() => {
                // The outermost pointer takes the space asked for; pointers stored in memory
                // point into device memory.
                let space = std::mem::replace(&mut self.pointer_space, AddressSpace::Device);
                let pointee = self.c_type(t);
                self.pointer_space = space;
                self.dialect
                    .pointer_type(&pointee, space, t.pointer_depth() == 0)
            }
            Type::Pointer(t) => format!("{}*", self.c_type(t)),
            Type::Struct(name) => match self.names.structs.get(name) {
                Some(emitted) => emitted.clone(),
                None => {
                    self.unsupported(&format!("the unknown structure `{name}`"));
                    "void".into()
                }
            },
            Type::TensorMap | Type::WgmmaAccumulator(_) => {
                let (helpers, name) = super::hopper::type_spelling(ty).unwrap_or_default();
                self.needs
                    .helpers
                    .extend(helpers.into_iter().map(Helper::Hopper));
                name
            }
            other => match self.dialect.type_name(other) {
                Some(name) => name.to_string(),
                None => {
                    self.unsupported(&format!("the type `{other}`"));
                    "void".into()
                }
            },
        }
    }

    /// The spelling of `ty` where a pointer points into `space`.
    pub(super) fn c_type_in(&mut self, ty: &Type, space: AddressSpace) -> String {
        let outer = std::mem::replace(&mut self.pointer_space, space);
        let t = self.c_type(ty);
        self.pointer_space = outer;
        t
    }

    /// The spelling of the type of local `id` of the current function.
    fn local_c_type(&mut self, id: LocalId) -> String {
        let space = self.local_space(self.function_index, id);
        self.c_type_in(&self.local_type(id), space)
    }

    /// The address space a pointer-typed local of function `function` points into.
    fn local_space(&self, function: usize, id: LocalId) -> AddressSpace {
        self.spaces
            .as_ref()
            .map_or(AddressSpace::Device, |s| s.local(function, id))
    }

    /// The address space the pointer value `e` of the current function points into.
    pub(super) fn value_space(&self, e: &Expr) -> AddressSpace {
        self.spaces
            .as_ref()
            .and_then(|s| s.of_value(self.module, self.function_index, e))
            .unwrap_or(AddressSpace::Device)
    }

    /// What function `index` uses implicitly.
    pub(super) fn uses_of(&self, index: usize) -> Option<&FunctionUses> {
        self.uses.get(index)
    }

    /// Whether the dialect passes the globals as parameters ([`Dialect::globals_parameter`]).
    pub(super) fn globals_passed(&self) -> bool {
        self.dialect
            .globals_parameter(AddressSpace::Constant, None)
            .is_some()
    }

    /// The structure type and parameter holding global `id` when the dialect passes globals
    /// ([`super::globals_structure`]); `None` for a global no structure holds (`:shared`).
    pub(super) fn global_structure(&self, id: usize) -> Option<(&'static str, &'static str)> {
        let g = self.module.globals.get(id)?;
        super::globals_structure(super::spaces::global_space(&g.qualifiers))
    }

    /// The emitted name of a local of the current function (`local7` for an id the IR's
    /// invariants rule out, which C then rejects: the printer never panics).
    pub(super) fn local_name(&self, id: LocalId) -> String {
        match self.locals.get(id.index()) {
            Some(name) => name.clone(),
            None => format!("local{}", id.0),
        }
    }

    /// The emitted name of a global.
    pub(super) fn global_name(&self, id: crate::ir::GlobalId) -> String {
        self.names
            .globals
            .get(id.index())
            .cloned()
            .unwrap_or_else(|| format!("global{}", id.0))
    }

    /// The emitted name of a function.
    pub(super) fn function_name(&self, id: crate::ir::FunctionId) -> String {
        self.names
            .functions
            .get(id.index())
            .cloned()
            .unwrap_or_else(|| format!("function{}", id.0))
    }

    /// The emitted name of field `index` of structure `name` (`field3` for one the IR's
    /// invariants rule out).
    pub(super) fn struct_field_name(&self, name: &str, index: usize) -> String {
        self.module
            .structs
            .iter()
            .position(|s| &*s.name == name)
            .and_then(|i| self.names.fields[i].get(index))
            .cloned()
            .unwrap_or_else(|| format!("field{index}"))
    }

    /// The definition of a helper, with its qualifiers.
    fn helper_definition(&mut self, helper: Helper) -> String {
        let name = helper.name();
        match self.dialect.helper_definition(helper, &name) {
            Some(text) => text,
            None => {
                self.unsupported(&format!("the helper `{name}`"));
                String::new()
            }
        }
    }

    fn local_type(&self, id: LocalId) -> Type {
        self.function
            .and_then(|f| f.local(id))
            .map(|l| l.ty.clone())
            .unwrap_or(Type::Void)
    }

    /// `struct` definitions, each after the ones it contains by value; forward declarations
    /// first when a structure points to one.
    fn structs(&mut self) -> String {
        let module = self.module;
        let structs = &module.structs;
        let mut out = String::new();
        let points_to_struct = structs.iter().flat_map(|s| &s.fields).any(|f| {
            let mut t = &f.ty;
            while let Type::Pointer(inner) = t {
                t = inner;
            }
            f.ty.pointer_depth() > 0 && matches!(t, Type::Struct(_))
        });
        if points_to_struct {
            for s in structs {
                let _ = writeln!(out, "struct {};", self.names.structs[&s.name]);
            }
            out.push('\n');
        }
        let index: HashMap<&str, usize> = structs
            .iter()
            .enumerate()
            .map(|(i, s)| (&*s.name, i))
            .collect();
        let mut done = vec![false; structs.len()];
        let mut order = Vec::new();
        // Iterative depth-first order: a structure after those it holds by value.
        for root in 0..structs.len() {
            let mut pending = vec![(root, false)];
            while let Some((i, children_done)) = pending.pop() {
                if children_done {
                    order.push(i);
                    continue;
                }
                if done[i] {
                    continue;
                }
                done[i] = true;
                pending.push((i, true));
                for field in structs[i].fields.iter().rev() {
                    if let Type::Struct(name) = &field.ty
                        && let Some(&j) = index.get(&**name)
                        && !done[j]
                    {
                        pending.push((j, false));
                    }
                }
            }
        }
        let texts: Vec<String> = order
            .into_iter()
            .map(|i| {
                let s = &structs[i];
                self.span = s.span.clone();
                let mut text = format!("struct {} {{\n", self.names.structs[&s.name]);
                for (k, field) in s.fields.iter().enumerate() {
                    let t = self.c_type(&field.ty);
                    let _ = writeln!(text, "  {t} {};", self.names.fields[i][k]);
                }
                text.push_str("};\n");
                text
            })
            .collect();
        out.push_str(&texts.join("\n"));
        out
    }

    /// The qualifiers of global `g` as the dialect spells them, without repetition; one the
    /// dialect lacks is an error at the global.
    fn global_qualifiers(&mut self, g: &Global) -> Vec<&'static str> {
        self.span = g.span.clone();
        let mut qualifiers: Vec<&str> = Vec::new();
        for q in &g.qualifiers {
            if *q == crate::ir::GlobalQualifier::Restrict {
                // A restrict qualifier qualifies a pointer, after its `*`; it means nothing
                // elsewhere.
                continue;
            }
            match self.dialect.global_qualifier(*q) {
                Some(text) => {
                    if !qualifiers.contains(&text) {
                        qualifiers.push(text);
                    }
                }
                None => self.unsupported(&format!("the global qualifier `{q:?}`")),
            }
        }
        qualifiers
    }

    /// For a dialect that passes the globals as parameters ([`Dialect::globals_parameter`]):
    /// the structure holding those in `space` ([`super::globals_structure`]), a field per
    /// global with its printed name, in the module's order
    /// (`struct chorus_globals_t {\n  int bar;\n};`); `None` when no global is in `space`. The
    /// initializers are the host's to store (the structure's first value). A global that no
    /// structure holds (`:shared`) is an error at it, with the `constant` structure.
    fn globals_structure(&mut self, space: AddressSpace) -> Option<String> {
        let (ty, _) = super::globals_structure(space)?;
        let mut fields = String::new();
        for (id, g) in self.module.globals.iter().enumerate() {
            let held = self.global_structure(id).map(|(t, _)| t);
            if held.is_none() && space == AddressSpace::Constant {
                self.span = g.span.clone();
                self.unsupported("a `:shared` global (threadgroup memory at program scope)");
            }
            if held != Some(ty) {
                continue;
            }
            self.global_qualifiers(g);
            let t = self.c_type(&g.ty);
            let _ = writeln!(fields, "  {t} {};", self.names.globals[id]);
        }
        (!fields.is_empty()).then(|| format!("struct {ty} {{\n{fields}}};\n"))
    }

    /// One global: `extern "C" __device__ int foo = 0;`.
    fn global(&mut self, id: usize, g: &Global) -> String {
        let pointer = matches!(g.ty, Type::Pointer(_));
        let qualifiers = self.global_qualifiers(g);
        let restrict = if pointer && g.qualifiers.contains(&crate::ir::GlobalQualifier::Restrict) {
            self.dialect.restrict()
        } else {
            ""
        };
        let t = self.c_type(&g.ty);
        let name = self.names.globals[id].clone();
        let declaration = format!("{} {t}{restrict} {name}", qualifiers.join(" "));
        if !self.dialect.global_has_initializer(&g.qualifiers) {
            return format!("{declaration};\n");
        }
        self.constant = true;
        self.function = None;
        let init = self.converted(&g.init);
        self.constant = false;
        format!("{}{declaration} = {};\n", self.dialect.linkage(), init.text)
    }

    /// `__global__ void __launch_bounds__(32) fill(int* a)`; names the function's locals.
    fn signature(&mut self, index: usize, f: &'m Function) -> String {
        self.span = f.span.clone();
        self.function_index = index;
        self.name_locals(f);
        let mut text = String::from(self.dialect.function_qualifier(f.kind));
        let result_space = self
            .spaces
            .as_ref()
            .map_or(AddressSpace::Device, |s| s.result(index));
        let ret = self.c_type_in(&f.ret, result_space);
        text.push_str(&ret);
        if let Some(lb) = f.launch_bounds {
            match self.dialect.launch_bounds(&lb) {
                Some(bounds) if self.dialect.launch_bounds_first() => {
                    text = format!("{bounds} {text}");
                }
                Some(bounds) => {
                    text.push(' ');
                    text.push_str(&bounds);
                }
                None => self.unsupported("`launch-bounds`"),
            }
        }
        let mut params: Vec<String> = Vec::new();
        for (i, p) in f.params.iter().enumerate() {
            let ty = f.local(p.local).map_or(Type::Void, |l| l.ty.clone());
            let space = self.local_space(index, p.local);
            let t = self.c_type_in(&ty, space);
            let restrict = if p.restrict && ty.pointer_depth() > 0 {
                self.dialect.restrict()
            } else {
                ""
            };
            let name = self.local_name(p.local);
            let grid_constant = super::hopper::kernel_parameter_prefix(&ty);
            let t = format!("{grid_constant}{t}{restrict}");
            params.push(match f.kind {
                FunctionKind::Kernel => self.dialect.kernel_parameter(i, &t, &name),
                FunctionKind::Device => format!("{t} {name}"),
            });
        }
        if let Some(uses) = self.uses.get(index) {
            let own = match f.kind {
                FunctionKind::Kernel => Some(f.params.len()),
                FunctionKind::Device => None,
            };
            // Each structure after the one before it: the constant one, then the device one.
            for (i, space) in uses.global_spaces().into_iter().enumerate() {
                if let Some(globals) = self.dialect.globals_parameter(space, own.map(|n| n + i)) {
                    params.push(globals);
                }
            }
            params.extend(self.dialect.implicit_parameters(f.kind, uses));
        }
        let _ = write!(
            text,
            " {}({})",
            self.names.functions[index],
            params.join(", ")
        );
        text
    }

    /// Names the locals of `f` (parameters first, as the IR lists them).
    fn name_locals(&mut self, f: &Function) {
        self.namer.begin_function();
        self.locals = f
            .locals
            .iter()
            .map(|l| self.namer.local_name(&l.name))
            .collect();
    }

    fn definition(&mut self, index: usize, f: &'m Function) -> String {
        self.last_directive = None;
        let directive = self.directive(&f.span);
        let signature = self.signature(index, f);
        self.function = Some(f);
        self.function_index = index;
        self.out = format!("{directive}{signature}\n{{\n");
        self.depth = 1;
        self.stmts(&f.body);
        self.out.push_str("}\n");
        self.function = None;
        std::mem::take(&mut self.out)
    }

    /// A `#line` directive for `span`, when they are asked for and the line changed.
    fn directive(&mut self, span: &Span) -> String {
        if !self.line_directives || span.line == 0 {
            return String::new();
        }
        let here = (span.file.clone(), span.line);
        if self.last_directive.as_ref() == Some(&here) {
            return String::new();
        }
        self.last_directive = Some(here);
        format!("#line {} {}\n", span.line, c_string(&span.file))
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn stmts(&mut self, block: &Block) {
        for stmt in &block.stmts {
            self.stmt(stmt);
        }
    }

    /// `{`, the block indented, `}` (the caller has written what precedes the brace).
    fn braced_body(&mut self, block: &Block) {
        self.depth += 1;
        self.stmts(block);
        self.depth -= 1;
    }

    fn stmt(&mut self, stmt: &Stmt) {
        self.span = stmt.span.clone();
        let directive = self.directive(&stmt.span);
        self.out.push_str(&directive);
        match &stmt.kind {
            StmtKind::Block(block) => {
                self.line("{");
                self.braced_body(block);
                self.line("}");
            }
            StmtKind::Declare { local, init } => {
                let t = self.local_c_type(*local);
                let name = self.local_name(*local);
                let init = self.converted(init);
                self.line(&format!("{t} {name} = {};", init.text));
            }
            StmtKind::SharedArray {
                local,
                element,
                dims,
                ..
            } => {
                let t = self.c_type(element);
                let name = self.local_name(*local);
                let dims: String = dims
                    .iter()
                    .map(|d| format!("[{}]", self.value(d).text))
                    .collect();
                match self.dialect.shared_array(&t, &name, &dims) {
                    Some(text) => self.line(&text),
                    None => self.unsupported("`with-shared-memory`"),
                }
            }
            StmtKind::DynamicShared { locals } => {
                match self.dialect.dynamic_shared_array(DYNAMIC_SHARED) {
                    // Empty: the dialect declares it elsewhere (MSL: a kernel parameter).
                    Some(text) if text.is_empty() => {}
                    Some(text) => self.line(&text),
                    None => self.unsupported("`with-dynamic-shared-memory`"),
                }
                for local in locals {
                    let t = self.local_c_type(*local);
                    let name = self.local_name(*local);
                    self.line(&format!("{t} {name} = ({t}){DYNAMIC_SHARED};"));
                }
            }
            StmtKind::Assign { place, value } => {
                let p = self.exact(place);
                let v = self.converted(value);
                self.line(&format!("{} = {};", p.text, v.text));
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(cond, then, otherwise.as_ref(), ""),
            StmtKind::While { cond, body } => {
                let c = self.exact(cond);
                self.line(&format!("while ({}) {{", c.bare()));
                self.braced_body(body);
                self.line("}");
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
            } => self.for_stmt(init, cond.as_ref(), step, body),
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Switch {
                scrutinee,
                cases,
                default,
            } => self.switch_stmt(scrutinee, cases, default.as_ref()),
            StmtKind::Return(None) => self.line("return;"),
            StmtKind::Return(Some(value)) => {
                let v = self.converted(value);
                self.line(&format!("return {};", v.text));
            }
            StmtKind::Expr(e) => {
                let c = self.expr(e);
                self.line(&format!("{};", c.bare()));
            }
            StmtKind::Printf { format, args } => {
                let mut parts = vec![c_string(format)];
                parts.extend(args.iter().map(|a| self.exact(a).text));
                let call = self.call_text("printf", &parts);
                self.line(&format!("{call};"));
            }
            StmtKind::Asm(text) => {
                // Verbatim; a missing `;` is supplied so that the next statement stays separate.
                let trimmed = text.trim_end();
                if trimmed.ends_with(';') || trimmed.ends_with('}') {
                    self.line(trimmed);
                } else {
                    self.line(&format!("{trimmed};"));
                }
            }
        }
    }

    /// `if (c) {…} else if (d) {…} else {…}`; `prefix` is `"} else "` for a chained `if`.
    fn if_stmt(&mut self, cond: &Expr, then: &Block, otherwise: Option<&Block>, prefix: &str) {
        let c = self.exact(cond);
        self.line(&format!("{prefix}if ({}) {{", c.bare()));
        self.braced_body(then);
        match otherwise {
            None => self.line("}"),
            Some(block) => {
                if let [
                    Stmt {
                        kind:
                            StmtKind::If {
                                cond,
                                then,
                                otherwise,
                            },
                        ..
                    },
                ] = block.stmts.as_slice()
                {
                    self.if_stmt(cond, then, otherwise.as_ref(), "} else ");
                } else {
                    self.line("} else {");
                    self.braced_body(block);
                    self.line("}");
                }
            }
        }
    }

    fn switch_stmt(&mut self, scrutinee: &Expr, cases: &[SwitchCase], default: Option<&Block>) {
        // Exact, not only the right value: C converts the labels to the condition's type, so
        // `switch (threadIdx.x)` (unsigned in C, int here) would refuse `case -1:`.
        let s = self.exact(scrutinee);
        self.line(&format!("switch ({}) {{", s.bare()));
        self.depth += 1;
        for case in cases {
            for (i, value) in case.values.iter().enumerate() {
                let label = self
                    .literal(crate::ir::Literal::Int(*value), &scrutinee.ty)
                    .text;
                let open = if i + 1 == case.values.len() { " {" } else { "" };
                self.line(&format!("case {label}:{open}"));
            }
            self.braced_body(&case.body);
            // No fall-through: every clause ends the switch, unless it already leaves.
            let leaves = matches!(
                case.body.stmts.last().map(|s| &s.kind),
                Some(StmtKind::Break | StmtKind::Return(_) | StmtKind::Continue)
            );
            if !leaves {
                self.depth += 1;
                self.line("break;");
                self.depth -= 1;
            }
            self.line("}");
        }
        if let Some(block) = default {
            self.line("default: {");
            self.braced_body(block);
            self.line("}");
        }
        self.depth -= 1;
        self.line("}");
    }

    /// `for` and `do`. One header `for (int a = 0, b = 0; c; a = …, b = …)` when the variables
    /// share a non-pointer type; otherwise the variables are declared in a block around the loop.
    /// The steps are parallel: a step whose variable a later step reads goes through a
    /// temporary.
    fn for_stmt(
        &mut self,
        init: &[(LocalId, Expr)],
        cond: Option<&Expr>,
        step: &[(LocalId, Expr)],
        body: &Block,
    ) {
        let types: Vec<Type> = init.iter().map(|(l, _)| self.local_type(*l)).collect();
        let one_declaration = types.windows(2).all(|w| w[0] == w[1])
            && types.first().is_none_or(|t| t.pointer_depth() == 0);
        // Temporaries for steps whose variable a later step reads.
        let mut temps: Vec<Option<String>> = vec![None; step.len()];
        for (k, (local, _)) in step.iter().enumerate() {
            if step[k + 1..].iter().any(|(_, e)| reads_local(e, *local)) {
                let base = format!("{}_next", self.local_name(*local));
                temps[k] = Some(self.namer.temporary(&base));
            }
        }
        let wrap = !one_declaration || temps.iter().any(Option::is_some);
        let mut header_init = String::new();
        if wrap {
            self.line("{");
            self.depth += 1;
            for (local, value) in init {
                let t = self.local_c_type(*local);
                let name = self.local_name(*local);
                let v = self.converted(value);
                self.line(&format!("{t} {name} = {};", v.text));
            }
            for ((local, _), temp) in step.iter().zip(&temps) {
                if let Some(temp) = temp {
                    let t = self.local_c_type(*local);
                    self.line(&format!("{t} {temp};"));
                }
            }
        } else if let Some((first, _)) = init.first() {
            let t = self.local_c_type(*first);
            let mut parts = Vec::new();
            for (local, value) in init {
                let v = self.converted(value);
                parts.push(format!("{} = {}", self.local_name(*local), v.text));
            }
            header_init = format!("{t} {}", parts.join(", "));
        }
        let c = cond.map(|c| self.exact(c).text).unwrap_or_default();
        let mut steps = Vec::new();
        for ((local, value), temp) in step.iter().zip(&temps) {
            let v = self.converted(value).text;
            match temp {
                Some(temp) => steps.push(format!("{temp} = {v}")),
                None => steps.push(format!("{} = {v}", self.local_name(*local))),
            }
        }
        for ((local, _), temp) in step.iter().zip(&temps) {
            if let Some(temp) = temp {
                steps.push(format!("{} = {temp}", self.local_name(*local)));
            }
        }
        let c = if c.is_empty() {
            String::new()
        } else {
            format!(" {c}")
        };
        self.line(&format!("for ({header_init};{c}; {}) {{", steps.join(", ")));
        self.braced_body(body);
        self.line("}");
        if wrap {
            self.depth -= 1;
            self.line("}");
        }
    }
}

/// True when `e` reads the local `id`.
fn reads_local(e: &Expr, id: LocalId) -> bool {
    /// Stops the walk at the first read of the local.
    struct Reads(LocalId);
    impl Visitor<'_> for Reads {
        type Error = ();
        fn enter_expr(&mut self, e: &Expr, _depth: usize) -> std::result::Result<Visit, ()> {
            match e.kind {
                ExprKind::Local(l) if l == self.0 => Err(()),
                _ => Ok(Visit::Children),
            }
        }
    }
    walk_expr(e, &mut Reads(id)).is_err()
}

/// A C string literal holding `text`: quotes, backslashes and control characters escaped, bytes
/// outside ASCII as octal escapes, `?` escaped so that no trigraph can form.
fn c_string(text: &str) -> String {
    let mut out = String::from("\"");
    for byte in text.bytes() {
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            b'?' => out.push_str("\\?"),
            0x20..=0x7e => out.push(byte as char),
            other => {
                let _ = write!(out, "\\{other:03o}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::c_string;

    #[test]
    fn c_strings_are_escaped() {
        assert_eq!(c_string("chorus %d\n"), "\"chorus %d\\n\"");
        assert_eq!(c_string("a\"b\\c?\t"), "\"a\\\"b\\\\c\\?\\t\"");
        assert_eq!(c_string("é\u{1}"), "\"\\303\\251\\001\"");
    }
}
