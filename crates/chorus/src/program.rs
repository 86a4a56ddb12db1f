//! Programs: kernel text compiled for a backend on first use, launched by name with arguments
//! checked against the kernel's parameters.

use crate::backend::{Backend, check_backend};
use crate::dispatch::{Compiled, DeviceMemory};
use crate::error::{Error, Result};
use crate::launch::Launch;
use chorus_lang::host::KernelValue;
use chorus_lang::ir::{Function, FunctionKind, Global, Module};
use chorus_lang::types::{ScalarType, Type};
use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// One kernel argument: a value, a memory block's device copy, or a raw device address.
///
/// Made by [`Arg::value`], [`crate::MemoryBlock::as_arg`] and [`crate::DevicePtr::kernel_arg`];
/// checked against the kernel's parameter types when the kernel is launched.
#[derive(Debug)]
pub struct Arg<'a>(pub(crate) ArgKind<'a>);

#[derive(Debug)]
pub(crate) enum ArgKind<'a> {
    /// A value passed by copy: its kernel type and its bytes.
    Value { ty: Type, bytes: Vec<u8> },
    /// A memory block's device copy, of elements of `element`.
    Memory {
        memory: &'a DeviceMemory,
        element: Type,
    },
    /// A raw device address of elements of `element`.
    Address { address: u64, element: Type },
}

impl<'a> Arg<'a> {
    /// `value`, passed by copy (`int`, `float3`, a `defkernel-struct`, …).
    pub fn value<T: KernelValue>(value: T) -> Arg<'static> {
        Arg(ArgKind::Value {
            ty: T::kernel_type(),
            bytes: bytemuck::bytes_of(&value).to_vec(),
        })
    }

    pub(crate) fn memory(memory: &'a DeviceMemory, element: Type) -> Arg<'a> {
        Arg(ArgKind::Memory { memory, element })
    }

    pub(crate) fn device_address(address: u64, element: Type) -> Arg<'static> {
        Arg(ArgKind::Address { address, element })
    }

    /// What the argument is, for error messages (`a float value`, `a memory block of int`).
    pub fn describe(&self) -> String {
        match &self.0 {
            ArgKind::Value { ty, .. } => format!("a {ty} value"),
            ArgKind::Memory { memory, element } => {
                format!(
                    "a memory block of {element} on the {} backend",
                    memory.backend()
                )
            }
            ArgKind::Address { element, .. } => format!("a device address of {element}"),
        }
    }
}

/// Where the program's text lives: in the binary (`defkernel!`) or on the heap.
type Text = Cow<'static, str>;

/// Kernel text and what it compiles to: the checked module, and per backend the compiled and
/// loaded program, made on first use (cl-cuda's kernel manager, one per compilation unit).
///
/// A `defkernel!` block makes one `Program` (reached through the generated `<kernel>_program()`);
/// [`Program::new`] makes one from text at run time.
pub struct Program {
    text: Text,
    file: Text,
    module: OnceLock<std::result::Result<Arc<Module>, chorus_lang::Error>>,
    compiled: Mutex<Vec<(Backend, Arc<Compiled>)>>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// A program of `text`, which is read, expanded and checked now (errors name `file`).
    pub fn new(text: impl Into<String>, file: impl Into<String>) -> Result<Program> {
        let program = Program::unchecked(Cow::Owned(text.into()), Cow::Owned(file.into()));
        program.module()?;
        Ok(program)
    }

    /// A program of the kernel text in the file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Program> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            context: format!("reading {}", path.display()),
            source: e,
        })?;
        Program::new(text, path.display().to_string())
    }

    /// The program of a `defkernel!` block: its rebuilt text, already checked at compile time.
    #[doc(hidden)]
    pub const fn __from_macro(text: &'static str, file: &'static str) -> Program {
        Program::unchecked(Cow::Borrowed(text), Cow::Borrowed(file))
    }

    const fn unchecked(text: Text, file: Text) -> Program {
        Program {
            text,
            file,
            module: OnceLock::new(),
            compiled: Mutex::new(Vec::new()),
        }
    }

    /// The kernel text. For a `defkernel!` block, its tokens at their lines and columns in the
    /// Rust file.
    pub fn source(&self) -> &str {
        &self.text
    }

    /// The file name that spans in errors name.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The checked module (the typed IR every backend compiles).
    pub fn module(&self) -> Result<&Arc<Module>> {
        self.module
            .get_or_init(|| chorus_lang::compile_str(&self.text, &self.file).map(Arc::new))
            .as_ref()
            .map_err(|e| Error::Lang(e.clone()))
    }

    /// The CUDA C the CUDA backend compiles (deterministic and readable).
    pub fn cuda_source(&self) -> Result<String> {
        Ok(chorus_lang::cuda::print_module(self.module()?))
    }

    /// The kernel `name` (its kernel-language name, `vec-add-kernel`, or its C name).
    pub fn kernel(&self, name: &str) -> Result<&Function> {
        let module = self.module()?;
        module
            .functions
            .iter()
            .filter(|f| f.kind == FunctionKind::Kernel)
            .find(|f| &*f.name == name || f.c_name == name)
            .ok_or_else(|| Error::NoSuchKernel {
                name: name.to_string(),
                file: self.file.to_string(),
                known: names(
                    module
                        .functions
                        .iter()
                        .filter(|f| f.kind == FunctionKind::Kernel)
                        .map(|f| &*f.name),
                ),
            })
    }

    fn global(&self, name: &str) -> Result<&Global> {
        let module = self.module()?;
        module
            .globals
            .iter()
            .find(|g| &*g.name == name || g.c_name == name)
            .ok_or_else(|| Error::NoSuchGlobal {
                name: name.to_string(),
                file: self.file.to_string(),
                known: names(module.globals.iter().map(|g| &*g.name)),
            })
    }

    /// The program compiled and loaded for `backend`, made on first use.
    fn compiled(&self, backend: Backend) -> Result<Arc<Compiled>> {
        let module = self.module()?;
        // A poisoned lock only means another launch panicked; the list itself is consistent.
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = compiled.iter().find(|(b, _)| *b == backend) {
            return Ok(c.clone());
        }
        let c = Arc::new(Compiled::new(backend, module.clone(), &self.file)?);
        compiled.push((backend, c.clone()));
        Ok(c)
    }

    /// Compiles and loads the program for the current backend now, rather than at its first
    /// launch (the kernel manager's compile and load steps), so that a timed loop times only
    /// launches.
    pub fn load(&self) -> Result<()> {
        self.compiled(check_backend()?).map(drop)
    }

    /// Launches the kernel `kernel` on the current backend ([`crate::backend`]) with `args`,
    /// which must match its parameters in number and type. The program is compiled for the
    /// backend first if it has not been yet.
    pub fn launch(&self, kernel: &str, args: &[Arg<'_>], launch: Launch<'_>) -> Result<()> {
        let backend = check_backend()?;
        let function = self.kernel(kernel)?;
        check_args(function, args, backend)?;
        let (grid, block) = launch.checked()?;
        if let Some(stream) = launch.stream_ref()
            && stream.backend() != backend
        {
            return Err(Error::InvalidLaunch(format!(
                "a stream of the {} backend cannot run a launch on the {backend} backend",
                stream.backend()
            )));
        }
        self.compiled(backend)?.launch(
            function,
            args,
            grid,
            block,
            launch.shared_mem_bytes(),
            launch.stream_ref(),
        )
    }

    /// The value of the global `name` on the current backend's device (cl-cuda's `global-ref`).
    /// `T` must be the global's type.
    pub fn global_ref<T: KernelValue>(&self, name: &str) -> Result<T> {
        let backend = check_backend()?;
        let global = self.global(name)?;
        check_global_type::<T>(global)?;
        self.compiled(backend)?.read_global::<T>(global)
    }

    /// Sets the global `name` on the current backend's device (`(setf (global-ref …) …)`).
    /// `T` must be the global's type.
    pub fn set_global_ref<T: KernelValue>(&self, name: &str, value: T) -> Result<()> {
        let backend = check_backend()?;
        let global = self.global(name)?;
        check_global_type::<T>(global)?;
        self.compiled(backend)?.write_global(global, value)
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

fn check_global_type<T: KernelValue>(global: &Global) -> Result<()> {
    if T::kernel_type() == global.ty {
        Ok(())
    } else {
        Err(Error::TypeMismatch(format!(
            "global `{}` is {}, not {} (the Rust type {})",
            global.name,
            global.ty,
            T::kernel_type(),
            std::any::type_name::<T>()
        )))
    }
}

/// Checks `args` against the parameters of `function`, for a launch on `backend`.
fn check_args(function: &Function, args: &[Arg<'_>], backend: Backend) -> Result<()> {
    if args.len() != function.params.len() {
        return Err(Error::TypeMismatch(format!(
            "kernel `{}` takes {} arguments, got {}",
            function.name,
            function.params.len(),
            args.len()
        )));
    }
    for (index, (param, arg)) in function.params.iter().zip(args).enumerate() {
        let local = &function.locals[param.local.0 as usize];
        let problem = match (&local.ty, &arg.0) {
            (ty, ArgKind::Value { ty: given, .. }) if ty == given => None,
            (Type::Pointer(pointee), ArgKind::Memory { memory, element }) => {
                if !pointee_accepts(pointee, element) {
                    Some(format!(
                        "{}, whose elements are not {pointee}",
                        arg.describe()
                    ))
                } else if memory.backend() != backend {
                    Some(format!(
                        "{}, but the launch runs on the {backend} backend",
                        arg.describe()
                    ))
                } else {
                    None
                }
            }
            (Type::Pointer(pointee), ArgKind::Address { element, .. }) => {
                if !pointee_accepts(pointee, element) {
                    Some(format!(
                        "{}, whose elements are not {pointee}",
                        arg.describe()
                    ))
                } else if backend != Backend::Cuda {
                    Some(format!(
                        "{}, which only the CUDA backend can pass",
                        arg.describe()
                    ))
                } else {
                    None
                }
            }
            _ => Some(arg.describe()),
        };
        if let Some(got) = problem {
            return Err(Error::TypeMismatch(format!(
                "argument {} (`{}`) of kernel `{}`: expected {}, got {got}",
                index + 1,
                local.name,
                function.name,
                local.ty
            )));
        }
    }
    Ok(())
}

/// True when memory of `element` may be passed for a pointer to `pointee`: the same type, any
/// memory for `void*`, and device addresses (`uint64`) for pointers to pointers.
fn pointee_accepts(pointee: &Type, element: &Type) -> bool {
    pointee == element
        || *pointee == Type::Void
        || (matches!(pointee, Type::Pointer(_)) && *element == Type::Scalar(ScalarType::UInt64))
}
