//! Programs: kernel text compiled for each device on its first use there, launched by name with
//! arguments checked against the kernel's parameters.

use crate::args::{Arg, Checks, check_args};
use crate::backend::current_device;
use crate::dispatch;
use crate::error::{Error, Result, Unavailable};
use crate::hal::{CompiledImpl, LaunchShape, StreamImpl};
use crate::kind::{Backend, Device};
use crate::launch::Launch;
use crate::occupancy::Occupancy;
use chorus_lang::host::KernelValue;
use chorus_lang::ir::{Function, FunctionKind, Global, Module};
use chorus_lang::library::Library;
use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// Where the program's text lives: in the binary (`defkernel!`) or on the heap.
type Text = Cow<'static, str>;

/// Kernel text and what it compiles to: the checked module, and per device the compiled and
/// loaded program, made on the first use on that device (cl-cuda's kernel manager, one per
/// compilation unit). Globals live on each device separately.
///
/// A `defkernel!` block makes one `Program` (reached through the generated `<kernel>_program()`);
/// [`Program::new`] makes one from text at run time.
pub struct Program {
    text: Text,
    file: Text,
    /// Whether `text` is a whole source file (read by [`Program::from_file`]): its host code is
    /// skipped ([`chorus_lang::source`]).
    whole_file: bool,
    /// The shipped macro libraries defined before `text`'s own macros
    /// ([`Program::with_libraries`]).
    libraries: Vec<Library>,
    module: OnceLock<std::result::Result<Arc<Module>, chorus_lang::Error>>,
    /// Per backend (by [`Backend::slot`]), per device (by its ordinal), the compiled program
    /// once it exists: a launch reads it without a lock.
    compiled: [OnceLock<PerDevice>; Backend::ALL.len()],
    /// Held while a program is compiled, so that two threads do not compile the same one; a
    /// failed compilation is not remembered, and the next launch tries again.
    compiling: Mutex<()>,
}

/// One backend's compiled programs, one slot per device.
type PerDevice = Box<[OnceLock<Box<dyn CompiledImpl>>]>;

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

    /// A program of `text` with the macros of the shipped `libraries` defined first (the
    /// tensor-core macros: [`chorus_lang::library`]). Each library is read as its own file, so
    /// errors in `text` name `file`'s own lines, as they would not if the texts were joined.
    ///
    /// ```
    /// use chorus::Program;
    /// use chorus::lang::library::Library;
    ///
    /// let text = "(defkernel fill (void ((a float*)))\n  (tc-unroll (i 0 4) (set (aref a i) 1.0)))";
    /// let program = Program::with_libraries(&[Library::TensorCore], text, "fill.lisp").unwrap();
    /// assert!(program.cuda_source().unwrap().contains("a[3] = 1.0f"));
    /// // A mistake on line 2 of k.lisp is reported there, not some hundred lines further.
    /// let e = Program::with_libraries(&[Library::TensorCore], "\n(defkernel k (void ()) (tc-unroll))", "k.lisp").unwrap_err();
    /// assert!(e.to_string().starts_with("k.lisp:2:24: macro `tc-unroll` takes"), "{e}");
    /// ```
    pub fn with_libraries(
        libraries: &[Library],
        text: impl Into<String>,
        file: impl Into<String>,
    ) -> Result<Program> {
        let mut program = Program::unchecked(Cow::Owned(text.into()), Cow::Owned(file.into()));
        program.libraries = libraries.to_vec();
        program.module()?;
        Ok(program)
    }

    /// A program of the file at `path`, which may be a whole CL-Cuda or Chorus Lisp source: its
    /// kernel definitions are compiled and its host code (`in-package`, `defun`, `defvar`, …)
    /// is skipped, as `chorus compile` does ([`chorus_lang::source`] has the rules). It is read,
    /// expanded and checked now.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Program> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut program =
            Program::unchecked(Cow::Owned(text), Cow::Owned(path.display().to_string()));
        program.whole_file = true;
        program.module()?;
        Ok(program)
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
            whole_file: false,
            libraries: Vec::new(),
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
            .get_or_init(|| {
                let mut expander = chorus_lang::library::expander_with(&self.libraries)?;
                let target = chorus_lang::target::Target::default_cuda();
                if self.whole_file {
                    chorus_lang::compile_source_with(&mut expander, &self.text, &self.file, &target)
                        .map(|(m, _)| Arc::new(m))
                } else {
                    chorus_lang::compile_str_with(&mut expander, &self.text, &self.file, &target)
                        .map(Arc::new)
                }
            })
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
                known: module
                    .functions
                    .iter()
                    .filter(|f| f.kind == FunctionKind::Kernel)
                    .map(|f| f.name.to_string())
                    .collect(),
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
                known: module.globals.iter().map(|g| g.name.to_string()).collect(),
            })
    }

    /// The program compiled and loaded on `device`, made on first use there.
    fn compiled(&self, device: Device) -> Result<&dyn CompiledImpl> {
        let per_device = &self.compiled[device.backend().slot()];
        let slots = match per_device.get() {
            Some(slots) => slots,
            None => {
                let count = dispatch::device_count(device.backend())?;
                per_device.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect())
            }
        };
        let Some(slot) = slots.get(device.index()) else {
            return Err(Error::DeviceUnavailable {
                device,
                reason: Unavailable::NoSuchDevice {
                    index: device.index(),
                    count: slots.len(),
                },
            });
        };
        if let Some(compiled) = slot.get() {
            return Ok(&**compiled);
        }
        let module = self.module()?;
        // A poisoned lock only means another launch panicked; it guards no data.
        let _compiling = self.compiling.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(compiled) = slot.get() {
            return Ok(&**compiled);
        }
        let compiled = dispatch::device(device)?.compile(module, &self.file)?;
        Ok(&**slot.get_or_init(|| compiled))
    }

    /// Compiles and loads the program on the current device now, rather than at its first
    /// launch (the kernel manager's compile and load steps), so that a timed loop times only
    /// launches.
    pub fn load(&self) -> Result<()> {
        self.load_on(current_device()?)
    }

    /// Compiles and loads the program on `device` now.
    pub fn load_on(&self, device: Device) -> Result<()> {
        self.compiled(device).map(drop)
    }

    /// Launches the kernel `kernel` with `args`, which must match its parameters in number and
    /// type, on the launch's device ([`Launch`] says which). The program is compiled for the
    /// device first if it has not been yet.
    #[track_caller]
    pub fn launch(&self, kernel: &str, args: &[Arg<'_>], launch: Launch<'_>) -> Result<()> {
        let device = launch_device(&launch)?;
        let index = self.kernel_index(kernel)?;
        self.launch_resolved(device, index, args, &launch, Checks::All)
    }

    /// How many blocks of `launch`'s shape (its block, dynamic shared memory and cluster; the
    /// grid only has to be a whole number of clusters) of kernel `kernel` its device runs at
    /// once: what a persistent kernel sizes its grid by. The program is compiled for the device
    /// first if it has not been yet. The CUDA backend answers with its occupancy calculator
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`, `cuOccupancyMaxActiveClusters`), the CPU
    /// executor with its worker threads (one block each; clusters of one block only); HIP and
    /// Metal return [`Error::OccupancyUnsupported`].
    ///
    /// ```no_run
    /// # fn main() -> chorus::Result<()> {
    /// # let program = chorus::Program::new("(defkernel k (void ()) (return))", "k.lisp")?;
    /// use chorus::Launch;
    /// let pairs = Launch::grid(2).block(384).shared_mem(197_632).cluster(2);
    /// let occupancy = program.occupancy("k", &pairs)?;
    /// let grid = 2 * occupancy.clusters.unwrap_or(1); // every pair that runs at once
    /// # let _ = grid;
    /// # Ok(())
    /// # }
    /// ```
    pub fn occupancy(&self, kernel: &str, launch: &Launch<'_>) -> Result<Occupancy> {
        let device = launch_device(launch)?;
        let index = self.kernel_index(kernel)?;
        let shape = launch_shape(device, launch, None)?;
        self.compiled(device)?
            .occupancy(index, &shape)?
            .ok_or(Error::OccupancyUnsupported {
                backend: device.backend(),
            })
    }

    /// The launch of a `defkernel!` function: `kernel` is resolved to its index once, into
    /// `slot` (the function's own static), rather than by name at every launch.
    ///
    /// When `typed_values` is true, the caller promises that every value argument was made by
    /// [`Arg::value`] from a Rust parameter whose type the generator derived from the kernel's
    /// own parameter, so their types (and sizes) are not checked again. Pointer arguments are
    /// still checked (their element, and that their memory is on the launch's device):
    /// `DevicePtr` is a trait anyone can implement, and those checks are compares.
    #[doc(hidden)]
    #[track_caller]
    pub fn __launch_resolved(
        &self,
        slot: &OnceLock<usize>,
        kernel: &str,
        typed_values: bool,
        args: &[Arg<'_>],
        launch: Launch<'_>,
    ) -> Result<()> {
        let device = launch_device(&launch)?;
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
        self.launch_resolved(device, index, args, &launch, checks)
    }

    /// Launches the kernel at `index` of the module on `device`, after the `checks`.
    #[track_caller]
    fn launch_resolved(
        &self,
        device: Device,
        index: usize,
        args: &[Arg<'_>],
        launch: &Launch<'_>,
        checks: Checks,
    ) -> Result<()> {
        let module = self.module()?;
        let target = dispatch::device(device)?.target();
        let args = check_args(
            target,
            module,
            &module.functions[index],
            args,
            device,
            checks,
        )?;
        let stream = match launch.stream_ref() {
            Some(stream) if stream.inner.device != device => {
                return Err(Error::StreamDevice {
                    stream_device: stream.inner.device,
                    launch_device: device,
                });
            }
            Some(stream) => Some(&*stream.inner.stream),
            None => None,
        };
        let mut shape = launch_shape(device, launch, stream)?;
        // A cluster of one block is no cluster: launched without one, on every backend.
        shape.cluster = shape.cluster.filter(|cluster| cluster.volume() > 1);
        self.compiled(device)?.launch(index, args, &shape)
    }

    /// The value of the global `name` on the current device (cl-cuda's `global-ref`). `T` must
    /// be the global's type.
    pub fn global_ref<T: KernelValue>(&self, name: &str) -> Result<T> {
        self.global_ref_on(current_device()?, name)
    }

    /// The value of the global `name` on `device`.
    pub fn global_ref_on<T: KernelValue>(&self, device: Device, name: &str) -> Result<T> {
        let global = self.global(name)?;
        check_global_type::<T>(global)?;
        let mut value = T::zeroed();
        self.compiled(device)?
            .read_global(global, bytemuck::bytes_of_mut(&mut value))?;
        Ok(value)
    }

    /// Sets the global `name` on the current device (`(setf (global-ref …) …)`). `T` must be
    /// the global's type.
    pub fn set_global_ref<T: KernelValue>(&self, name: &str, value: T) -> Result<()> {
        self.set_global_ref_on(current_device()?, name, value)
    }

    /// Sets the global `name` on `device`.
    pub fn set_global_ref_on<T: KernelValue>(
        &self,
        device: Device,
        name: &str,
        value: T,
    ) -> Result<()> {
        let global = self.global(name)?;
        check_global_type::<T>(global)?;
        self.compiled(device)?
            .write_global(global, bytemuck::bytes_of(&value))
    }
}

/// The checked shape of `launch` on `device`, on `stream` (the backend's stream, if any): every
/// extent at least 1, the cluster (if any) dividing the grid and of more than one block only on
/// CUDA; the caller's location names the launch in fault reports.
#[track_caller]
fn launch_shape<'a>(
    device: Device,
    launch: &Launch<'_>,
    stream: Option<&'a dyn StreamImpl>,
) -> Result<LaunchShape<'a>> {
    let (grid, block) = launch.checked()?;
    let cluster = launch.checked_cluster(grid)?;
    if cluster.is_some_and(|c| c.volume() > 1) && device.backend() != Backend::Cuda {
        return Err(Error::ClustersUnsupported {
            backend: device.backend(),
        });
    }
    Ok(LaunchShape {
        grid,
        block,
        shared_mem: launch.shared_mem_bytes(),
        stream,
        cluster,
        site: std::panic::Location::caller(),
    })
}

/// The device a launch runs on: the one it names, else its stream's, else the current one.
fn launch_device(launch: &Launch<'_>) -> Result<Device> {
    match (launch.device(), launch.stream_ref()) {
        (Some(device), _) => Ok(device),
        (None, Some(stream)) => Ok(stream.device()),
        (None, None) => current_device(),
    }
}

fn check_global_type<T: KernelValue>(global: &Global) -> Result<()> {
    if T::kernel_type() == global.ty {
        Ok(())
    } else {
        Err(Error::GlobalType {
            name: global.name.to_string(),
            expected: global.ty.clone(),
            found: T::kernel_type(),
            rust_type: std::any::type_name::<T>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::with_backend;
    use crate::error::ArgumentKind;
    use crate::memory::MemoryBlock;
    use chorus_lang::target::Target;
    use chorus_lang::types::{ScalarType, Type};
    use std::hint::black_box;
    use std::time::Instant;

    const TEXT: &str =
        "(defkernel touch (void ((a int*) (n int) (x float)))\n  (set (aref a 0) n))";

    fn cpu() -> Device {
        Device::new(Backend::Cpu, 0).unwrap()
    }

    /// A CUDA device handle for the checks, which need no driver.
    fn cuda() -> Device {
        Device::handle(Backend::Cuda, 0)
    }

    /// Nanoseconds per call of `f`, over `calls` calls.
    fn ns_per_call(calls: u32, mut f: impl FnMut(u32)) -> f64 {
        let start = Instant::now();
        for i in 0..calls {
            f(i);
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(calls)
    }

    /// The host cost of a launch's preparation, without a GPU: everything `launch` does before
    /// the backend's launch, for a CUDA launch of `(int* a, int n, float x)` with a device
    /// address. The CPU device's compiled program stands in for the CUDA one.
    /// `cargo test -p chorus --release --lib preparation_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check"]
    fn preparation_cost() {
        let program = Program::new(TEXT, "bench.lisp").unwrap();
        let slot = OnceLock::new();
        program.load_on(cpu()).unwrap();
        let calls = 2_000_000;
        let prepare = |checks: Checks, by_name: bool, i: u32| {
            let args = [
                Arg::device_address(0x1000, Type::Scalar(ScalarType::Int)),
                Arg::value(i as i32),
                Arg::value(1.5f32),
            ];
            let launch = Launch::grid(1).block(32);
            let _ = with_backend(Backend::Cpu, current_device).unwrap();
            let index = if by_name {
                program.kernel_index("touch").unwrap()
            } else {
                *slot.get_or_init(|| program.kernel_index("touch").unwrap())
            };
            let module = program.module().unwrap();
            let checked = check_args(
                &Target::cpu(),
                module,
                &module.functions[index],
                &args,
                cuda(),
                checks,
            )
            .unwrap();
            let dims = launch.checked().unwrap();
            let compiled = program.compiled(cpu()).unwrap();
            black_box((compiled as *const dyn CompiledImpl, dims, checked));
        };
        let parts = [
            ns_per_call(calls, |i| {
                black_box([Arg::value(i as i32), Arg::value(1.5f32)]);
            }),
            ns_per_call(calls, |_| {
                black_box(with_backend(Backend::Cpu, current_device).unwrap());
            }),
            ns_per_call(calls, |_| {
                black_box(program.kernel_index(black_box("touch")).unwrap());
            }),
            ns_per_call(calls, |_| {
                black_box(program.compiled(cpu()).unwrap() as *const dyn CompiledImpl);
            }),
        ];
        let labels = [
            "two value arguments",
            "current device",
            "kernel lookup by name",
            "compiled program",
        ];
        for (label, ns) in labels.iter().zip(parts) {
            println!("{label:>40}: {ns:6.1} ns");
        }
        let by_name = ns_per_call(calls, |i| prepare(Checks::All, true, i));
        let typed = ns_per_call(calls, |i| prepare(Checks::Pointers, false, i));
        println!("Program::launch by name, prepared up to the backend: {by_name:.1} ns per launch");
        println!("defkernel! function, prepared up to the backend:   {typed:.1} ns per launch");
    }

    #[test]
    fn typed_launches_still_check_pointers_and_devices() {
        let program = Program::new(TEXT, "typed.lisp").unwrap();
        let module = program.module().unwrap();
        let function = program.kernel("touch").unwrap();
        let check = |args: &[Arg<'_>], device: Device, checks: Checks| {
            check_args(&Target::cpu(), module, function, args, device, checks).map(drop)
        };
        let int = Type::Scalar(ScalarType::Int);
        let float = Type::Scalar(ScalarType::Float);
        let good = [
            Arg::device_address(0x1000, int.clone()),
            Arg::value(1i32),
            Arg::value(1.5f32),
        ];
        check(&good, cuda(), Checks::Pointers).unwrap();
        // An address is refused off CUDA, and one of the wrong element type anywhere.
        let off_cuda = check(&good, cpu(), Checks::Pointers).unwrap_err();
        assert!(
            matches!(
                &off_cuda,
                Error::AddressUnsupported { kernel, index: 1, parameter, backend: Backend::Cpu }
                    if kernel == "touch" && parameter == "a"
            ),
            "{off_cuda}"
        );
        let wrong_element = [
            Arg::device_address(0x1000, float.clone()),
            Arg::value(1i32),
            Arg::value(1.5f32),
        ];
        let error = check(&wrong_element, cuda(), Checks::Pointers).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::ArgumentType { index: 1, expected, found: ArgumentKind::Address(element), .. }
                    if *expected == int.clone().pointer_to() && *element == float
            ),
            "{error}"
        );
        // A value where a pointer belongs is refused even when values are not checked.
        let value_for_pointer = [Arg::value(7u64), Arg::value(1i32), Arg::value(1.5f32)];
        let error = check(&value_for_pointer, cuda(), Checks::Pointers).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::ArgumentType {
                    index: 1,
                    found: ArgumentKind::Value(_),
                    ..
                }
            ),
            "{error}"
        );
        // The count is checked.
        let error = check(&good[..2], cuda(), Checks::Pointers).unwrap_err();
        assert!(
            matches!(&error, Error::ArgumentCount { kernel, expected: 3, found: 2 } if kernel == "touch"),
            "{error}"
        );
        // Memory of another device is refused.
        let block = MemoryBlock::<i32>::alloc_on(cpu(), 4).unwrap();
        let cpu_memory = [block.as_arg(), Arg::value(1i32), Arg::value(1.5f32)];
        let error = check(&cpu_memory, cuda(), Checks::Pointers).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::ArgumentDevice { index: 1, argument_device, launch_device, .. }
                    if *argument_device == cpu() && *launch_device == cuda()
            ),
            "{error}"
        );
        check(&cpu_memory, cpu(), Checks::All).unwrap();
        // The full check still compares value types and sizes.
        let wrong_value = [
            Arg::device_address(0x1000, int.clone()),
            Arg::value(1.0f32),
            Arg::value(1.5f32),
        ];
        let error = check(&wrong_value, cuda(), Checks::All).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::ArgumentType { index: 2, parameter, expected, found: ArgumentKind::Value(found), .. }
                    if parameter == "n" && *expected == int && *found == float
            ),
            "{error}"
        );
        let short_value = [
            Arg::device_address(0x1000, int.clone()),
            Arg(crate::hal::ArgRef::Value {
                ty: int.clone(),
                bytes: crate::hal::ValueBytes::new(&[1, 2]),
            }),
            Arg::value(1.5f32),
        ];
        let error = check(&short_value, cuda(), Checks::All).unwrap_err();
        assert!(
            matches!(
                &error,
                Error::ArgumentSize { index: 2, ty, expected: 4, found: 2, .. } if *ty == int
            ),
            "{error}"
        );
    }

    #[test]
    fn small_values_stay_inline_and_large_ones_are_kept_whole() {
        use crate::hal::ValueBytes;
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
            let a = MemoryBlock::<i32>::alloc(4).unwrap();
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
            assert!(matches!(
                bad_grid,
                Err(Error::ZeroExtent {
                    dimension: "grid",
                    ..
                })
            ));
        });
    }

    #[test]
    fn a_device_that_does_not_exist_is_reported() {
        let program = Program::new(TEXT, "devices.lisp").unwrap();
        let missing = Device::handle(Backend::Cpu, 3);
        let error = program.load_on(missing).unwrap_err();
        assert!(
            matches!(
                error,
                Error::DeviceUnavailable {
                    device,
                    reason: Unavailable::NoSuchDevice { index: 3, count: 1 },
                } if device == missing
            ),
            "{error}"
        );
        assert!(Device::new(Backend::Cpu, 3).is_err());
        assert!(MemoryBlock::<i32>::alloc_on(missing, 1).is_err());
    }
}
