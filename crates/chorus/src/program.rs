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
    Value { ty: Type, bytes: ValueBytes },
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
            bytes: ValueBytes::new(bytemuck::bytes_of(&value)),
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

/// The bytes of a value argument: inline for the values kernels take nearly always (scalars,
/// vectors, small structures), so that making an argument allocates nothing; on the heap past
/// that.
#[derive(Debug)]
pub(crate) enum ValueBytes {
    Inline {
        len: u8,
        bytes: [u8; ValueBytes::INLINE],
    },
    Heap(Box<[u8]>),
}

impl ValueBytes {
    /// The most bytes kept inline (a `double4` is 32).
    const INLINE: usize = 32;

    fn new(value: &[u8]) -> ValueBytes {
        if value.len() <= ValueBytes::INLINE {
            let mut bytes = [0; ValueBytes::INLINE];
            bytes[..value.len()].copy_from_slice(value);
            ValueBytes::Inline {
                len: value.len() as u8,
                bytes,
            }
        } else {
            ValueBytes::Heap(value.into())
        }
    }
}

impl std::ops::Deref for ValueBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ValueBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            ValueBytes::Heap(bytes) => bytes,
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
    /// Per backend (indexed by [`backend_slot`]), the compiled program once it exists: a launch
    /// reads it without a lock.
    compiled: [OnceLock<Compiled>; Backend::ALL.len()],
    /// Held while a program is compiled, so that two threads do not compile the same one; a
    /// failed compilation is not remembered, and the next launch tries again.
    compiling: Mutex<()>,
}

/// The index of `backend` in [`Program`]'s per-backend slots.
const fn backend_slot(backend: Backend) -> usize {
    backend as usize
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
            compiled: [const { OnceLock::new() }; Backend::ALL.len()],
            compiling: Mutex::new(()),
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
        chorus_lang::cuda::print_module(self.module()?)
            .map(|printed| printed.code)
            .map_err(Error::Lang)
    }

    /// The kernel `name` (its kernel-language name, `vec-add-kernel`, or its C name).
    pub fn kernel(&self, name: &str) -> Result<&Function> {
        let index = self.kernel_index(name)?;
        Ok(&self.module()?.functions[index])
    }

    /// The index in the module's functions of the kernel `name`.
    fn kernel_index(&self, name: &str) -> Result<usize> {
        let module = self.module()?;
        let is_kernel = |i: &usize| module.functions[*i].kind == FunctionKind::Kernel;
        module
            .functions
            .iter()
            .position(|f| &*f.name == name)
            .filter(is_kernel)
            .or_else(|| {
                // A C name: the CUDA printer's (found only when asked by one, which is rare).
                let printed = chorus_lang::cuda::print_module(module).ok()?;
                let c_names = printed.names.functions();
                c_names.iter().position(|c| c == name).filter(is_kernel)
            })
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
            .position(|g| &*g.name == name)
            .or_else(|| {
                let printed = chorus_lang::cuda::print_module(module).ok()?;
                printed.names.globals().iter().position(|c| c == name)
            })
            .map(|i| &module.globals[i])
            .ok_or_else(|| Error::NoSuchGlobal {
                name: name.to_string(),
                file: self.file.to_string(),
                known: names(module.globals.iter().map(|g| &*g.name)),
            })
    }

    /// The program compiled and loaded for `backend`, made on first use.
    fn compiled(&self, backend: Backend) -> Result<&Compiled> {
        let slot = &self.compiled[backend_slot(backend)];
        if let Some(compiled) = slot.get() {
            return Ok(compiled);
        }
        let module = self.module()?;
        // A poisoned lock only means another launch panicked; it guards no data.
        let _compiling = self.compiling.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(compiled) = slot.get() {
            return Ok(compiled);
        }
        let compiled = Compiled::new(backend, module.clone(), &self.file)?;
        Ok(slot.get_or_init(|| compiled))
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
        let index = self.kernel_index(kernel)?;
        self.launch_resolved(backend, index, args, &launch, Checks::All)
    }

    /// The launch of a `defkernel!` function: `kernel` is resolved to its index once, into
    /// `slot` (the function's own static), rather than by name at every launch.
    ///
    /// When `typed_values` is true, the caller promises that every value argument was made by
    /// [`Arg::value`] from a Rust parameter whose type the generator derived from the kernel's
    /// own parameter, so their types (and sizes) are not checked again. Pointer arguments are
    /// still checked (their element, and that their memory belongs to the launch's backend):
    /// `DevicePtr` is a trait anyone can implement, and those checks are enum compares.
    #[doc(hidden)]
    pub fn __launch_resolved(
        &self,
        slot: &OnceLock<usize>,
        kernel: &str,
        typed_values: bool,
        args: &[Arg<'_>],
        launch: Launch<'_>,
    ) -> Result<()> {
        let backend = check_backend()?;
        let index = match slot.get() {
            Some(&index) => index,
            None => {
                let index = self.kernel_index(kernel)?;
                *slot.get_or_init(|| index)
            }
        };
        let checks = if typed_values {
            Checks::Pointers
        } else {
            Checks::All
        };
        self.launch_resolved(backend, index, args, &launch, checks)
    }

    /// Launches the kernel at `index` of the module on `backend`, after the `checks`.
    fn launch_resolved(
        &self,
        backend: Backend,
        index: usize,
        args: &[Arg<'_>],
        launch: &Launch<'_>,
        checks: Checks,
    ) -> Result<()> {
        let function = &self.module()?.functions[index];
        check_args(function, args, backend, checks)?;
        let (grid, block) = launch.checked()?;
        if let Some(stream) = launch.stream_ref()
            && stream.backend() != backend
        {
            return Err(Error::InvalidLaunch(format!(
                "a stream of the {} backend cannot run a launch on the {backend} backend",
                stream.backend()
            )));
        }
        self.compiled(backend)?
            .launch((index, function), args, checks, (grid, block), launch)
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

/// Which of a launch's arguments are checked against the kernel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Every argument: its kind, its type, and (by the backend) a value's size.
    All,
    /// The count and the pointer parameters; value arguments for value parameters are known to
    /// have the parameter's type, by construction (the functions `defkernel!` generates).
    Pointers,
}

/// Checks `args` against the parameters of `function`, for a launch on `backend`.
fn check_args(
    function: &Function,
    args: &[Arg<'_>],
    backend: Backend,
    checks: Checks,
) -> Result<()> {
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
            // A value for a pointer parameter is refused below whatever `checks` says.
            (ty, ArgKind::Value { .. })
                if checks == Checks::Pointers && !matches!(ty, Type::Pointer(_)) =>
            {
                None
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::with_backend;
    use crate::dispatch::with_cuda_args;
    use std::hint::black_box;
    use std::time::Instant;

    const TEXT: &str =
        "(defkernel touch (void ((a int*) (n int) (x float)))\n  (set (aref a 0) n))";

    /// Nanoseconds per call of `f`, over `calls` calls.
    fn ns_per_call(calls: u32, mut f: impl FnMut(u32)) -> f64 {
        let start = Instant::now();
        for i in 0..calls {
            f(i);
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(calls)
    }

    /// The host cost of a launch's preparation, without a GPU: everything `launch` does before
    /// it calls the driver, for a CUDA launch of `(int* a, int n, float x)` with a device
    /// address. The CPU backend's (always present) compiled slot stands in for the CUDA one;
    /// the driver calls themselves (`cuCtxGetCurrent`, `cuLaunchKernel`) are not timed.
    /// `cargo test -p chorus --release --lib preparation_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check"]
    fn preparation_cost() {
        let program = Program::new(TEXT, "bench.lisp").unwrap();
        let module = program.module().unwrap().clone();
        let slot = OnceLock::new();
        with_backend(Backend::Cpu, || program.load().unwrap());
        let calls = 2_000_000;
        let prepare = |checks: Checks, by_name: bool, i: u32| {
            let args = [
                Arg::device_address(0x1000, Type::Scalar(ScalarType::Int)),
                Arg::value(i as i32),
                Arg::value(1.5f32),
            ];
            let launch = Launch::grid(1).block(32);
            let _ = check_backend().unwrap();
            let index = if by_name {
                program.kernel_index("touch").unwrap()
            } else {
                *slot.get_or_init(|| program.kernel_index("touch").unwrap())
            };
            let function = &program.module().unwrap().functions[index];
            check_args(function, &args, Backend::Cuda, checks).unwrap();
            let dims = launch.checked().unwrap();
            let compiled = program.compiled(Backend::Cpu).unwrap();
            with_cuda_args(&module, &args, checks, |cuda_args| {
                black_box((compiled as *const Compiled, dims, cuda_args));
                Ok(())
            })
            .unwrap();
        };
        let parts = [
            ns_per_call(calls, |i| {
                black_box([Arg::value(i as i32), Arg::value(1.5f32)]);
            }),
            ns_per_call(calls, |_| {
                black_box(check_backend().unwrap());
            }),
            ns_per_call(calls, |_| {
                black_box(program.kernel_index(black_box("touch")).unwrap());
            }),
            ns_per_call(calls, |_| {
                black_box(program.compiled(Backend::Cpu).unwrap() as *const Compiled);
            }),
            ns_per_call(calls, |i| {
                let args = [
                    Arg::device_address(0x1000, Type::Scalar(ScalarType::Int)),
                    Arg::value(i as i32),
                    Arg::value(1.5f32),
                ];
                with_cuda_args(&module, &args, Checks::Pointers, |a| {
                    black_box(a);
                    Ok(())
                })
                .unwrap();
            }),
        ];
        let labels = [
            "two value arguments",
            "check_backend",
            "kernel lookup by name",
            "compiled program",
            "driver argument list",
        ];
        for (label, ns) in labels.iter().zip(parts) {
            println!("{label:>40}: {ns:6.1} ns");
        }
        let by_name = ns_per_call(calls, |i| prepare(Checks::All, true, i));
        let typed = ns_per_call(calls, |i| prepare(Checks::Pointers, false, i));
        println!("Program::launch by name, prepared up to the driver: {by_name:.1} ns per launch");
        println!("defkernel! function, prepared up to the driver:   {typed:.1} ns per launch");
    }

    #[test]
    fn typed_launches_still_check_pointers_and_backends() {
        let program = Program::new(TEXT, "typed.lisp").unwrap();
        let function = program.kernel("touch").unwrap();
        let int = Type::Scalar(ScalarType::Int);
        let float = Type::Scalar(ScalarType::Float);
        let good = [
            Arg::device_address(0x1000, int.clone()),
            Arg::value(1i32),
            Arg::value(1.5f32),
        ];
        check_args(function, &good, Backend::Cuda, Checks::Pointers).unwrap();
        // An address is refused off CUDA, and one of the wrong element type anywhere.
        let off_cuda = check_args(function, &good, Backend::Cpu, Checks::Pointers).unwrap_err();
        assert!(
            off_cuda.to_string().contains("only the CUDA backend"),
            "{off_cuda}"
        );
        let wrong_element = [
            Arg::device_address(0x1000, float),
            Arg::value(1i32),
            Arg::value(1.5f32),
        ];
        let error =
            check_args(function, &wrong_element, Backend::Cuda, Checks::Pointers).unwrap_err();
        assert!(
            error.to_string().contains("elements are not int"),
            "{error}"
        );
        // A value where a pointer belongs is refused even when values are not checked.
        let value_for_pointer = [Arg::value(7u64), Arg::value(1i32), Arg::value(1.5f32)];
        assert!(
            check_args(
                function,
                &value_for_pointer,
                Backend::Cuda,
                Checks::Pointers
            )
            .is_err()
        );
        // The count is checked.
        assert!(check_args(function, &good[..2], Backend::Cuda, Checks::Pointers).is_err());
        // Memory of another backend is refused.
        let block = with_backend(Backend::Cpu, || crate::MemoryBlock::<i32>::alloc(4)).unwrap();
        let cpu_memory = [block.as_arg(), Arg::value(1i32), Arg::value(1.5f32)];
        let error = check_args(function, &cpu_memory, Backend::Cuda, Checks::Pointers).unwrap_err();
        assert!(
            error.to_string().contains("runs on the CUDA backend"),
            "{error}"
        );
        // The full check still compares value types.
        let wrong_value = [
            Arg::device_address(0x1000, int),
            Arg::value(1.0f32),
            Arg::value(1.5f32),
        ];
        assert!(check_args(function, &wrong_value, Backend::Cuda, Checks::All).is_err());
    }

    #[test]
    fn small_values_stay_inline_and_large_ones_are_kept_whole() {
        let small = ValueBytes::new(&[1, 2, 3]);
        assert!(matches!(small, ValueBytes::Inline { len: 3, .. }));
        assert_eq!(&*small, &[1, 2, 3]);
        let large: Vec<u8> = (0..40).collect();
        let value = ValueBytes::new(&large);
        assert!(matches!(value, ValueBytes::Heap(_)));
        assert_eq!(&*value, large.as_slice());
        assert_eq!(&*ValueBytes::new(&[0; 32]), &[0; 32]);
    }

    #[test]
    fn resolved_launches_find_the_kernel_once_and_report_unknown_names() {
        let program = Program::new(TEXT, "resolved.lisp").unwrap();
        with_backend(Backend::Cpu, || {
            let a = crate::MemoryBlock::<i32>::alloc(4).unwrap();
            let slot = OnceLock::new();
            let args = [a.as_arg(), Arg::value(3i32), Arg::value(0.5f32)];
            program
                .__launch_resolved(&slot, "touch", true, &args, Launch::default())
                .unwrap();
            assert_eq!(slot.get(), Some(&program.kernel_index("touch").unwrap()));
            let unknown = OnceLock::new();
            let error = program
                .__launch_resolved(&unknown, "nope", true, &args, Launch::default())
                .unwrap_err();
            assert!(matches!(error, Error::NoSuchKernel { .. }), "{error}");
            assert!(unknown.get().is_none());
            let bad_grid = program.__launch_resolved(&slot, "touch", true, &args, Launch::grid(0));
            assert!(matches!(bad_grid, Err(Error::InvalidLaunch(_))));
        });
    }
}
