//! The file layout, declarations and statements.

use super::CudaSource;
use super::helpers::{Header, Helper};
use crate::ir::{
    Block, Expr, ExprKind, Function, FunctionKind, Global, GlobalQualifier, LocalId, Module, Stmt,
    StmtKind, SwitchCase,
};
use crate::types::{Type, VectorType};
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write;

/// The name of the `extern __shared__` array that dynamic shared memory variables point into.
const DYNAMIC_SHARED: &str = "chorus_dyn_smem";

/// What the text printed so far needs at the top of the file.
#[derive(Default)]
pub(super) struct Needs {
    pub headers: BTreeSet<Header>,
    pub helpers: BTreeSet<Helper>,
}

/// Prints one module.
pub(super) struct ModulePrinter<'m> {
    emitter: Emitter<'m>,
}

/// The printing state: the module, what the printed text needs, and the function (if any) whose
/// body is being printed.
pub(super) struct Emitter<'m> {
    pub module: &'m Module,
    pub needs: Needs,
    /// Printing a global initializer: constructors become brace lists and half literals raw bits.
    pub constant: bool,
    function: Option<&'m Function>,
    /// C names a temporary of the current function must not take: its locals, the module's
    /// functions, globals and structures, and the temporaries made so far.
    names: HashSet<String>,
    out: String,
    depth: usize,
}

impl<'m> ModulePrinter<'m> {
    pub(super) fn new(module: &'m Module) -> ModulePrinter<'m> {
        ModulePrinter {
            emitter: Emitter {
                module,
                needs: Needs::default(),
                constant: false,
                function: None,
                names: HashSet::new(),
                out: String::new(),
                depth: 0,
            },
        }
    }

    pub(super) fn print(mut self) -> CudaSource {
        let e = &mut self.emitter;
        let module = e.module;
        // Sections are printed first so that what they use is known before the top is written.
        let structs = e.structs();
        let globals: Vec<String> = module.globals.iter().map(|g| e.global(g)).collect();
        let prototypes: Vec<String> = module
            .functions
            .iter()
            .map(|f| format!("extern \"C\" {};", e.signature(f)))
            .collect();
        let definitions: Vec<String> = module.functions.iter().map(|f| e.definition(f)).collect();

        let mut sections: Vec<String> = Vec::new();
        if !e.needs.headers.is_empty() {
            sections.push(
                e.needs
                    .headers
                    .iter()
                    .map(|h| format!("#include <{}>\n", h.file_name()))
                    .collect(),
            );
        }
        if !e.needs.helpers.is_empty() {
            let helpers: Vec<String> = e.needs.helpers.iter().map(|h| h.definition()).collect();
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
        sections.extend(definitions);
        CudaSource {
            code: sections.join("\n"),
            headers: e.needs.headers.iter().copied().collect(),
        }
    }
}

impl<'m> Emitter<'m> {
    /// Records the headers `ty` needs.
    pub(super) fn note_type(&mut self, ty: &Type) {
        match ty {
            Type::Scalar(s) => self.needs.headers.extend(Header::for_scalar(*s)),
            Type::Vector(VectorType::Half2) => {
                self.needs.headers.insert(Header::Fp16);
            }
            Type::Pointer(t) => self.note_type(t),
            Type::CurandStateXorwow => {
                self.needs.headers.insert(Header::CurandKernel);
            }
            Type::Void | Type::Bool | Type::Vector(_) | Type::Struct(_) => {}
        }
    }

    /// The C spelling of `ty` (structures by their C name in the module).
    pub(super) fn c_type(&mut self, ty: &Type) -> String {
        self.note_type(ty);
        match ty {
            Type::Pointer(t) => format!("{}*", self.c_type(t)),
            Type::Struct(name) => match self.module.struct_def(name) {
                Some(def) => def.c_name.clone(),
                None => ty.c_name(),
            },
            other => other.c_name(),
        }
    }

    /// The C name of a local of the current function (`local7` for an id the IR's invariants
    /// rule out, which C then rejects: the printer never panics).
    pub(super) fn local_name(&self, id: LocalId) -> String {
        match self.function.and_then(|f| f.locals.get(id.0 as usize)) {
            Some(local) => local.c_name.clone(),
            None => format!("local{}", id.0),
        }
    }

    fn local_type(&self, id: LocalId) -> Type {
        self.function
            .and_then(|f| f.locals.get(id.0 as usize))
            .map(|l| l.ty.clone())
            .unwrap_or(Type::Void)
    }

    /// `struct` definitions, each after the ones it contains by value; forward declarations
    /// first when a structure points to one.
    fn structs(&mut self) -> String {
        let structs = &self.module.structs;
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
                let _ = writeln!(out, "struct {};", s.c_name);
            }
            out.push('\n');
        }
        let mut done = vec![false; structs.len()];
        let mut order = Vec::new();
        fn visit(i: usize, module: &Module, done: &mut [bool], order: &mut Vec<usize>) {
            if done[i] {
                return;
            }
            done[i] = true;
            for field in &module.structs[i].fields {
                if let Type::Struct(name) = &field.ty
                    && let Some(j) = module.structs.iter().position(|s| &s.name == name)
                {
                    visit(j, module, done, order);
                }
            }
            order.push(i);
        }
        for i in 0..structs.len() {
            visit(i, self.module, &mut done, &mut order);
        }
        let texts: Vec<String> = order
            .into_iter()
            .map(|i| {
                let s = &structs[i];
                let mut text = format!("struct {} {{\n", s.c_name);
                for field in &s.fields {
                    let t = self.c_type(&field.ty);
                    let _ = writeln!(text, "  {t} {};", field.c_name);
                }
                text.push_str("};\n");
                text
            })
            .collect();
        out.push_str(&texts.join("\n"));
        out
    }

    /// One global: `extern "C" __device__ int foo = 0;`.
    fn global(&mut self, g: &Global) -> String {
        let pointer = matches!(g.ty, Type::Pointer(_));
        let mut qualifiers: Vec<&str> = Vec::new();
        for q in &g.qualifiers {
            let text = match q {
                GlobalQualifier::Device => "__device__",
                GlobalQualifier::Constant => "__constant__",
                GlobalQualifier::Shared => "__shared__",
                GlobalQualifier::Managed => "__managed__",
                // `__restrict__` qualifies a pointer, after its `*`; it means nothing elsewhere.
                GlobalQualifier::Restrict => continue,
            };
            if !qualifiers.contains(&text) {
                qualifiers.push(text);
            }
        }
        let restrict = if pointer && g.qualifiers.contains(&GlobalQualifier::Restrict) {
            " __restrict__"
        } else {
            ""
        };
        let t = self.c_type(&g.ty);
        let declaration = format!("{} {t}{restrict} {}", qualifiers.join(" "), g.c_name);
        if g.qualifiers.contains(&GlobalQualifier::Shared) {
            // CUDA forbids initializers on shared variables, and a shared variable has no
            // symbol the host could look up.
            return format!("{declaration};\n");
        }
        self.constant = true;
        self.function = None;
        let init = self.converted(&g.init);
        self.constant = false;
        format!("extern \"C\" {declaration} = {};\n", init.text)
    }

    /// `__global__ void __launch_bounds__(32) fill(int* a)`.
    fn signature(&mut self, f: &'m Function) -> String {
        let mut text = String::new();
        match f.kind {
            FunctionKind::Kernel => text.push_str("__global__ "),
            FunctionKind::Device => text.push_str("__device__ "),
        }
        text.push_str(&self.c_type(&f.ret));
        if let Some(lb) = f.launch_bounds {
            let mut args = vec![lb.max_threads.to_string()];
            if lb.min_blocks.is_some() || lb.max_cluster.is_some() {
                args.push(lb.min_blocks.unwrap_or(0).to_string());
            }
            if let Some(c) = lb.max_cluster {
                args.push(c.to_string());
            }
            let _ = write!(text, " __launch_bounds__({})", args.join(", "));
        }
        let params: Vec<String> = f
            .params
            .iter()
            .map(|p| {
                let local = &f.locals[p.local.0 as usize];
                let t = self.c_type(&local.ty);
                let restrict = if p.restrict && local.ty.pointer_depth() > 0 {
                    " __restrict__"
                } else {
                    ""
                };
                format!("{t}{restrict} {}", local.c_name)
            })
            .collect();
        let _ = write!(text, " {}({})", f.c_name, params.join(", "));
        text
    }

    fn definition(&mut self, f: &'m Function) -> String {
        let signature = self.signature(f);
        self.function = Some(f);
        // Temporaries must not shadow a local or any module-level name the body may use.
        let module = self.module;
        self.names = f.locals.iter().map(|l| l.c_name.clone()).collect();
        self.names
            .extend(module.functions.iter().map(|g| g.c_name.clone()));
        self.names
            .extend(module.globals.iter().map(|g| g.c_name.clone()));
        self.names
            .extend(module.structs.iter().map(|s| s.c_name.clone()));
        self.out = format!("{signature}\n{{\n");
        self.depth = 1;
        self.stmts(&f.body);
        self.out.push_str("}\n");
        self.function = None;
        std::mem::take(&mut self.out)
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
        match &stmt.kind {
            StmtKind::Block(block) => {
                self.line("{");
                self.braced_body(block);
                self.line("}");
            }
            StmtKind::Declare { local, init } => {
                let t = self.c_type(&self.local_type(*local));
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
                self.line(&format!("__shared__ {t} {name}{dims};"));
            }
            StmtKind::DynamicShared { locals } => {
                self.line(&format!(
                    "extern __shared__ __align__(16) unsigned char {DYNAMIC_SHARED}[];"
                ));
                for local in locals {
                    let t = self.c_type(&self.local_type(*local));
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
                self.line(&format!("printf({});", parts.join(", ")));
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
        let s = self.value(scrutinee);
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
                let mut name = format!("{}_next", self.local_name(*local));
                while self.names.contains(&name) {
                    name.push('_');
                }
                self.names.insert(name.clone());
                temps[k] = Some(name);
            }
        }
        let wrap = !one_declaration || temps.iter().any(Option::is_some);
        let mut header_init = String::new();
        if wrap {
            self.line("{");
            self.depth += 1;
            for (local, value) in init {
                let t = self.c_type(&self.local_type(*local));
                let name = self.local_name(*local);
                let v = self.converted(value);
                self.line(&format!("{t} {name} = {};", v.text));
            }
            for ((local, _), temp) in step.iter().zip(&temps) {
                if let Some(temp) = temp {
                    let t = self.c_type(&self.local_type(*local));
                    self.line(&format!("{t} {temp};"));
                }
            }
        } else if let Some(t) = types.first() {
            let t = self.c_type(t);
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
    let any = |es: &[Expr]| es.iter().any(|x| reads_local(x, id));
    match &e.kind {
        ExprKind::Local(l) => *l == id,
        ExprKind::Literal(_) | ExprKind::Global(_) | ExprKind::Index(_) => false,
        ExprKind::Aref { base, indices } => reads_local(base, id) || any(indices),
        ExprKind::Field { base, .. } => reads_local(base, id),
        ExprKind::Builtin { args, .. } | ExprKind::Call { args, .. } => any(args),
        ExprKind::Cast { value, .. } => reads_local(value, id),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => reads_local(cond, id) || reads_local(then, id) || reads_local(otherwise, id),
        ExprKind::AddressOf(place) => reads_local(place, id),
        ExprKind::Construct(parts) => any(parts),
    }
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
