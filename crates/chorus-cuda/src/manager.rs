//! The kernel manager: the seed's four states and their transitions.
//!
//! ```text
//!            compile_module      load_module       load_function
//!   Initial ───────────────> Compiled ─────────> ModuleLoaded ─────────> FunctionLoaded
//!      ^                        ^  <──────────────────┴──── unload ────────────┘
//!      └──── define_* (only when a definition changed) ── from any state
//! ```
//!
//! Unlike cl-cuda, a definition made while a module is loaded does not fail and does not
//! unload anything a kernel is using: each manager owns its own module, and [`Function`]s
//! handed out keep their module loaded until they are dropped. The manager simply forgets the
//! module and returns to `Initial`; the next `ensure_function` compiles (through the cache) and
//! loads a new one.

use crate::compile::{CompiledImage, compile_and_load};
use crate::error::{Error, Result};
use crate::module::{Function, Module, Signature};
pub use crate::state::State;
use chorus_lang::host::KernelValue;
use chorus_lang::{Form, ir};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What a definition defines (the head of its form).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DefinitionKind {
    /// `(defkernel name …)`.
    Function,
    /// `(defkernelmacro name …)`.
    Macro,
    /// `(defkernel-symbol-macro name …)`.
    SymbolMacro,
    /// `(defglobal name …)`.
    Global,
    /// `(defkernel-struct name …)`.
    Struct,
}

impl DefinitionKind {
    /// The form head that introduces it.
    pub fn head(self) -> &'static str {
        match self {
            DefinitionKind::Function => "defkernel",
            DefinitionKind::Macro => "defkernelmacro",
            DefinitionKind::SymbolMacro => "defkernel-symbol-macro",
            DefinitionKind::Global => "defglobal",
            DefinitionKind::Struct => "defkernel-struct",
        }
    }
}

#[derive(Clone, Debug)]
struct Definition {
    kind: DefinitionKind,
    name: String,
    form: Form,
}

#[derive(Debug)]
struct Compiled {
    ir: Arc<ir::Module>,
    source: String,
    /// The C names of the module's kernels and globals.
    names: Arc<chorus_lang::cfamily::NameTable>,
}

/// Definitions of one compilation unit, and the module they compile to.
#[derive(Debug, Default)]
pub struct KernelManager {
    name: String,
    definitions: Vec<Definition>,
    compiled: Option<Compiled>,
    loaded: Option<(Module, CompiledImage)>,
    functions: Option<HashMap<String, Function>>,
}

impl KernelManager {
    /// An empty manager; `name` names its compilation unit in messages.
    pub fn new(name: &str) -> KernelManager {
        KernelManager {
            name: name.to_owned(),
            ..KernelManager::default()
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        match (&self.compiled, &self.loaded, &self.functions) {
            (None, _, _) => State::Initial,
            (Some(_), None, _) => State::Compiled,
            (Some(_), Some(_), None) => State::ModuleLoaded,
            (Some(_), Some(_), Some(_)) => State::FunctionLoaded,
        }
    }

    /// `(defkernel …)`: defines or redefines a kernel or device function.
    pub fn define_function(&mut self, form: Form) -> Result<()> {
        self.define(DefinitionKind::Function, form)
    }

    /// `(defkernelmacro …)`.
    pub fn define_macro(&mut self, form: Form) -> Result<()> {
        self.define(DefinitionKind::Macro, form)
    }

    /// `(defkernel-symbol-macro …)`.
    pub fn define_symbol_macro(&mut self, form: Form) -> Result<()> {
        self.define(DefinitionKind::SymbolMacro, form)
    }

    /// `(defglobal …)`.
    pub fn define_global(&mut self, form: Form) -> Result<()> {
        self.define(DefinitionKind::Global, form)
    }

    /// `(defkernel-struct …)`.
    pub fn define_struct(&mut self, form: Form) -> Result<()> {
        self.define(DefinitionKind::Struct, form)
    }

    /// Defines whatever `form` defines, by its head.
    pub fn define_form(&mut self, form: Form) -> Result<()> {
        let head = form
            .as_call()
            .map(|(h, _)| h.to_owned())
            .unwrap_or_default();
        let kind = [
            DefinitionKind::Function,
            DefinitionKind::Macro,
            DefinitionKind::SymbolMacro,
            DefinitionKind::Global,
            DefinitionKind::Struct,
        ]
        .into_iter()
        .find(|k| k.head() == head)
        .ok_or_else(|| chorus_lang::Error::new(&form.span, "expected a definition (defkernel, defkernelmacro, defkernel-symbol-macro, defglobal or defkernel-struct)"))?;
        self.define(kind, form)
    }

    /// Records a definition; returns to `Initial` when it is new or differs from the previous
    /// one of that name (ignoring source positions), and keeps the state otherwise.
    fn define(&mut self, kind: DefinitionKind, form: Form) -> Result<()> {
        let name = match form.as_call() {
            Some((head, [name, ..])) if head == kind.head() => name.as_symbol().map(str::to_owned),
            _ => None,
        }
        .ok_or_else(|| {
            chorus_lang::Error::new(&form.span, format!("expected ({} NAME …)", kind.head()))
        })?;
        match self
            .definitions
            .iter_mut()
            .find(|d| d.kind == kind && d.name == name)
        {
            Some(existing) if existing.form.same(&form) => return Ok(()),
            Some(existing) => existing.form = form,
            None => self.definitions.push(Definition { kind, name, form }),
        }
        self.compiled = None;
        self.loaded = None;
        self.functions = None;
        Ok(())
    }

    /// True when a definition of that kind and name exists.
    pub fn is_defined(&self, kind: DefinitionKind, name: &str) -> bool {
        self.definitions
            .iter()
            .any(|d| d.kind == kind && d.name == name)
    }

    fn illegal(&self, action: &'static str) -> Error {
        Error::IllegalTransition {
            action,
            state: self.state(),
        }
    }

    /// I → II: expands, checks and prints the definitions and compiles the CUDA C (through the
    /// cache). Illegal in any other state.
    pub fn compile_module(&mut self) -> Result<()> {
        if self.state() != State::Initial {
            return Err(self.illegal("compile-module"));
        }
        let forms: Vec<Form> = self.definitions.iter().map(|d| d.form.clone()).collect();
        let ir = crate::frontend::compile_forms(&forms)?;
        let printed = crate::frontend::print_for_arch(&ir, crate::compile::target_arch())?;
        let source = printed.code;
        // Compile now (a compile error belongs to this step); loading reuses the cached image.
        crate::compile::compile(&source, &self.name, None)?;
        self.compiled = Some(Compiled {
            ir: Arc::new(ir),
            source,
            names: Arc::new(printed.names),
        });
        Ok(())
    }

    /// II → III: loads the compiled image into the current context.
    pub fn load_module(&mut self) -> Result<()> {
        let (State::Compiled, Some(compiled)) = (self.state(), &self.compiled) else {
            return Err(self.illegal("load-module"));
        };
        self.loaded = Some(compile_and_load(&compiled.source, &self.name)?);
        Ok(())
    }

    /// III → IV: looks up every kernel of the module.
    pub fn load_function(&mut self) -> Result<()> {
        if self.state() != State::ModuleLoaded {
            return Err(self.illegal("load-function"));
        }
        let (Some(compiled), Some((module, _))) = (&self.compiled, &self.loaded) else {
            return Err(self.illegal("load-function"));
        };
        let mut functions = HashMap::new();
        for (i, f) in compiled.ir.functions.iter().enumerate() {
            if f.kind == ir::FunctionKind::Kernel {
                let signature = Signature {
                    module: compiled.ir.clone(),
                    function: ir::FunctionId(i as u32),
                };
                let c_name = compiled.names.function_by_id(ir::FunctionId(i as u32));
                functions.insert(
                    f.name.to_string(),
                    module.function(c_name)?.with_signature(signature),
                );
            }
        }
        self.functions = Some(functions);
        Ok(())
    }

    /// III or IV → II: forgets the functions and the module (unloaded once no [`Function`]
    /// taken from it is alive).
    pub fn unload(&mut self) -> Result<()> {
        if !matches!(self.state(), State::ModuleLoaded | State::FunctionLoaded) {
            return Err(self.illegal("unload"));
        }
        self.functions = None;
        self.loaded = None;
        Ok(())
    }

    /// Chains the transitions up to `FunctionLoaded` and returns the kernel `name`.
    pub fn ensure_function(&mut self, name: &str) -> Result<Function> {
        self.ensure_module()?;
        if self.state() == State::ModuleLoaded {
            self.load_function()?;
        }
        self.functions
            .as_ref()
            .and_then(|f| f.get(name))
            .cloned()
            .ok_or_else(|| Error::NotFound {
                what: "kernel",
                name: name.to_owned(),
            })
    }

    fn ensure_module(&mut self) -> Result<()> {
        // A module loaded in another context (one since destroyed, or another device's) is
        // useless here: forget it and load again.
        let current = chorus_driver::current_context();
        if self
            .loaded
            .as_ref()
            .is_some_and(|(m, _)| Some(m.context()) != current)
        {
            self.functions = None;
            self.loaded = None;
        }
        if self.state() == State::Initial {
            self.compile_module()?;
        }
        if self.state() == State::Compiled {
            self.load_module()?;
        }
        Ok(())
    }

    /// The generated CUDA C, once compiled.
    pub fn source(&self) -> Option<&str> {
        self.compiled.as_ref().map(|c| c.source.as_str())
    }

    /// Reads global `name` (compiling and loading first if needed); `T` must be its type.
    pub fn global_ref<T: KernelValue>(&mut self, name: &str) -> Result<T> {
        self.program()?.global_ref(name)
    }

    /// Writes global `name` (compiling and loading first if needed).
    pub fn set_global_ref<T: KernelValue>(&mut self, name: &str, value: T) -> Result<()> {
        self.program()?.set_global_ref(name, value)
    }

    fn program(&mut self) -> Result<crate::Program> {
        self.ensure_module()?;
        match (&self.compiled, &self.loaded) {
            (Some(c), Some((module, image))) => Ok(crate::Program::from_parts(
                module.clone(),
                Some((c.ir.clone(), c.names.clone())),
                c.source.as_str().into(),
                image.clone(),
            )),
            _ => Err(self.illegal("global-ref")),
        }
    }

    /// Unloads when the module was loaded in `context` (a context about to be destroyed).
    pub(crate) fn unload_in(&mut self, context: cudarc::driver::sys::CUcontext) {
        if self
            .loaded
            .as_ref()
            .is_some_and(|(m, _)| m.context() == context)
        {
            self.functions = None;
            self.loaded = None;
        }
    }
}

static DEFAULT: Mutex<Option<KernelManager>> = Mutex::new(None);

/// A lock on the process-wide default manager (the seed's `*kernel-manager*`), safe to use
/// from several threads one at a time.
pub fn default_manager() -> DefaultManager {
    // The driver knows nothing of managers: it calls back as a context is released.
    static RELEASE_HOOK: std::sync::Once = std::sync::Once::new();
    RELEASE_HOOK.call_once(|| chorus_driver::on_context_release(unload_default_in));
    let mut guard = DEFAULT.lock().unwrap_or_else(PoisonError::into_inner);
    guard.get_or_insert_with(|| KernelManager::new("chorus-default"));
    DefaultManager(guard)
}

/// The lock [`default_manager`] returns; derefs to the [`KernelManager`].
pub struct DefaultManager(MutexGuard<'static, Option<KernelManager>>);

impl std::ops::Deref for DefaultManager {
    type Target = KernelManager;
    fn deref(&self) -> &KernelManager {
        self.0.as_ref().expect("initialised by default_manager")
    }
}

impl std::ops::DerefMut for DefaultManager {
    fn deref_mut(&mut self) -> &mut KernelManager {
        self.0.as_mut().expect("initialised by default_manager")
    }
}

/// Called as a context is destroyed: the default manager forgets modules loaded in it.
fn unload_default_in(context: chorus_driver::sys::CUcontext) {
    // `try_lock`: the thread dropping the context may hold the manager itself; then the
    // manager notices the stale module at its next use (`ensure_module`).
    let mut guard = match DEFAULT.try_lock() {
        Ok(guard) => guard,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    if let Some(m) = guard.as_mut() {
        m.unload_in(context);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_lang::Span;

    fn sym(s: &str) -> Form {
        Form::symbol(s, Span::generated())
    }

    fn defglobal(name: &str, value: i128) -> Form {
        Form::list(
            vec![
                sym("defglobal"),
                sym(name),
                Form::int(value, Span::generated()),
            ],
            Span::generated(),
        )
    }

    #[test]
    fn illegal_transitions_are_errors() {
        let mut m = KernelManager::new("t");
        assert_eq!(m.state(), State::Initial);
        for (result, action) in [
            (m.load_module(), "load-module"),
            (m.load_function(), "load-function"),
            (m.unload(), "unload"),
        ] {
            let e = result.unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::IllegalTransition {
                        state: State::Initial,
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains(action), "{e}");
        }
    }

    #[test]
    fn definitions_are_checked_and_recorded() {
        let mut m = KernelManager::new("t");
        m.define_global(defglobal("x", 1)).unwrap();
        assert!(m.is_defined(DefinitionKind::Global, "x"));
        let e = m
            .define_function(defglobal("y", 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected (defkernel NAME"), "{e}");
        m.define_form(defglobal("z", 2)).unwrap();
        assert!(m.is_defined(DefinitionKind::Global, "z"));
        assert!(m.define_form(sym("nonsense")).is_err());
    }
}
