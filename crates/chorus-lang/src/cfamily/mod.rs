//! The C-family printer: one typed [`ir::Module`] in, one C-like source file out, for any
//! [`Dialect`] (CUDA C today; MSL and HIP next).
//!
//! The shared part prints what every C-family language writes the same way: the file layout,
//! statements, expressions with their parentheses, literals, C's usual arithmetic conversions,
//! the names (a [`Namer`] per printed module, fed the dialect's reserved words). A [`Dialect`]
//! supplies the rest: its headers, type spellings, qualifiers, kernel signatures and parameter
//! bindings, index variables, shared memory, intrinsics and device math, atomics, warp
//! operations, helper functions and reserved words. The printer's vocabulary of intrinsics is
//! CUDA's (`__syncthreads`, `atomicAdd`, `sinf`, `__shfl_sync` …): a dialect maps each to a call of
//! its own in [`Dialect::call`] or refuses it, and a refusal is an [`Error`] at the form that
//! needed it. Printing never panics.
//!
//! The CUDA dialect ([`cuda::Cuda`]) documents the output in detail. To add a dialect, write a
//! type implementing [`Dialect`] (a module beside `cuda.rs`, with its reserved words) and call
//! [`print_module`] with it; `tests/dialect.rs` does so for a minimal C dialect.

pub mod cuda;
mod expr;
mod helpers;
pub mod hip;
mod hopper;
pub mod msl;
pub mod names;
mod printer;
pub mod spaces;
mod tensor;

use crate::error::{Error, Result};
use crate::ir::{self, FunctionId, GlobalId, GlobalQualifier, IndexVar, LaunchBounds};
use crate::target::{Target, TargetKind};
use crate::types::{Type, VectorType};
use std::collections::HashMap;
use std::sync::Arc;

pub use helpers::{Helper, Operands, VectorOp};
pub use hopper::{ARCH_SPECIFIC_GUARD, HopperHelper};
pub use names::{C_KEYWORDS, HELPER_PREFIX, Namer, legal_identifier};
pub use spaces::{AddressSpace, FunctionUses};

/// The structure type holding a module's `:constant` globals, for a dialect that passes them as
/// a parameter ([`Dialect::globals_parameter`]); its fields have the globals' printed names.
pub const GLOBALS_TYPE: &str = "chorus_globals_t";

/// The parameter holding a module's `:constant` globals ([`Dialect::globals_parameter`]).
pub const GLOBALS: &str = "chorus_globals";

/// The structure type holding a module's `:device` globals (device memory the kernels write),
/// for a dialect that passes globals as parameters ([`Dialect::globals_parameter`]).
pub const DEVICE_GLOBALS_TYPE: &str = "chorus_device_globals_t";

/// The parameter holding a module's `:device` globals ([`Dialect::globals_parameter`]).
pub const DEVICE_GLOBALS: &str = "chorus_device_globals";

/// The structure type and parameter name of the globals whose storage is in `space`
/// ([`spaces::global_space`]), for a dialect that passes globals as parameters: `constant`
/// ones in [`GLOBALS_TYPE`] [`GLOBALS`], `device` ones in [`DEVICE_GLOBALS_TYPE`]
/// [`DEVICE_GLOBALS`]; `None` for `threadgroup` and `thread`, which no structure the host
/// passes can hold.
pub fn globals_structure(space: AddressSpace) -> Option<(&'static str, &'static str)> {
    match space {
        AddressSpace::Constant => Some((GLOBALS_TYPE, GLOBALS)),
        AddressSpace::Device => Some((DEVICE_GLOBALS_TYPE, DEVICE_GLOBALS)),
        AddressSpace::Threadgroup | AddressSpace::Thread => None,
    }
}

/// How a dialect spells an index variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexSpelling {
    /// An expression (`threadIdx.x`, or an MSL kernel parameter bound to an attribute);
    /// `unsigned` when its C type is `unsigned int` while the language's is `int`.
    Expr {
        /// The text.
        text: String,
        /// Whether C types it `unsigned int`.
        unsigned: bool,
    },
    /// A call of a printer helper (`chorus_lane_id()`).
    Helper(Helper),
}

/// A C-family language: everything the shared printer does not know.
///
/// Methods returning `Option` return `None` for what the dialect cannot express; the printer
/// turns that into an [`Error`] at the span of the form that needed it.
pub trait Dialect {
    /// The dialect's name in messages (`CUDA C`).
    fn name(&self) -> &'static str;

    /// Identifiers a name from kernel text must not take, beyond [`C_KEYWORDS`] and names
    /// starting with `__` or [`HELPER_PREFIX`]: the dialect's intrinsics, builtin types, device
    /// math and C library functions. Lower case only: the namer lower-cases every name.
    fn reserved_words(&self) -> &'static [&'static str];

    /// The headers the dialect may include, in the order it includes them (file names as
    /// written between `<` and `>`).
    fn headers(&self) -> &'static [&'static str];

    /// The header that declares `ty`, if one must be included for it.
    fn type_header(&self, ty: &Type) -> Option<&'static str>;

    /// The header that declares intrinsic `intrinsic` (the printer's CUDA name), if one must be
    /// included for it.
    fn intrinsic_header(&self, intrinsic: &str) -> Option<&'static str>;

    /// Text after the includes (`using namespace metal;`); empty by default.
    fn prelude(&self) -> &'static str {
        ""
    }

    /// The spelling of a type other than a pointer or structure (`float`, `__half`, `float4`).
    fn type_name(&self, ty: &Type) -> Option<&'static str>;

    /// The constructor of a vector (`make_float3`).
    fn vector_constructor(&self, vector: VectorType) -> Option<&'static str>;

    /// What precedes module-level definitions the host looks up by name (`extern "C" `): they
    /// must keep the names of the [`NameTable`] in the object file.
    fn linkage(&self) -> &'static str;

    /// The qualifiers before a kernel's or device function's result type (`__global__`).
    fn function_qualifier(&self, kind: ir::FunctionKind) -> &'static str;

    /// The qualifier of a global variable (`__constant__`); `None` when the dialect has no such
    /// storage. [`GlobalQualifier::Restrict`] is asked for through [`Dialect::restrict`].
    fn global_qualifier(&self, qualifier: GlobalQualifier) -> Option<&'static str>;

    /// Whether globals of this qualifier can have an initializer (CUDA's `__shared__` cannot).
    fn global_has_initializer(&self, qualifiers: &[GlobalQualifier]) -> bool;

    /// The qualifier written after a restricted pointer's `*` (` __restrict__`, with its space).
    fn restrict(&self) -> &'static str;

    /// The launch-bounds annotation written after a kernel's result type.
    fn launch_bounds(&self, bounds: &LaunchBounds) -> Option<String>;

    /// Whether the launch-bounds annotation comes before the function's qualifiers (MSL's
    /// `[[max_total_threads_per_threadgroup(N)]] kernel void f(…)`) rather than after its result
    /// type (CUDA's `__global__ void __launch_bounds__(N) f(…)`). False by default.
    fn launch_bounds_first(&self) -> bool {
        false
    }

    /// Parameter `index` of a kernel, given its type's spelling (with any restrict qualifier)
    /// and name. CUDA writes `float* a`; MSL binds buffers, `device float* a [[buffer(0)]]`.
    fn kernel_parameter(&self, index: usize, ty: &str, name: &str) -> String {
        let _ = index;
        format!("{ty} {name}")
    }

    /// Parameters a kernel gets beyond its own, for what the dialect passes as arguments rather
    /// than globals (MSL's `uint3 tid [[thread_position_in_threadgroup]]`); none by default.
    fn kernel_extra_parameters(&self) -> Vec<String> {
        Vec::new()
    }

    /// Parameters a function gets beyond its own, given what it uses itself or through its
    /// callees: for what the dialect passes as arguments rather than reads from globals (MSL's
    /// `uint3 chorus_tid [[thread_position_in_threadgroup]]` on a kernel, `uint3 chorus_tid`
    /// on a device function that reads `thread-idx-x`). By default a kernel gets
    /// [`Dialect::kernel_extra_parameters`] and a device function nothing.
    fn implicit_parameters(&self, kind: ir::FunctionKind, uses: &FunctionUses) -> Vec<String> {
        let _ = uses;
        match kind {
            ir::FunctionKind::Kernel => self.kernel_extra_parameters(),
            ir::FunctionKind::Device => Vec::new(),
        }
    }

    /// The arguments a call passes for the callee's [`Dialect::implicit_parameters`] (device
    /// functions only: kernels are not called); none by default.
    fn implicit_arguments(&self, callee: &FunctionUses) -> Vec<String> {
        let _ = callee;
        Vec::new()
    }

    /// The parameter through which functions reach the module's globals in `space`, for a
    /// dialect whose host cannot write program-scope variables (MSL's `constant` ones are fixed
    /// when the library is compiled, and it has no mutable ones): the globals are then the
    /// fields of one structure per space ([`globals_structure`]: the `:constant` ones, the
    /// `:device` ones) that the host passes by reference, and a function that reads or writes
    /// one (itself or through its callees, [`FunctionUses::global_spaces`]) takes each structure
    /// it needs as a parameter, the constant one first, after its own parameters and before the
    /// other implicit ones; calls pass them on. `buffer` is `Some(i)` for a kernel, the buffer
    /// index the structure is bound at (after the kernel's own parameters: MSL's
    /// `[[buffer(i)]]`), `None` for a device function. `None` (the default): globals are
    /// program-scope variables with their initializers. The printer asks with
    /// [`AddressSpace::Constant`] and no buffer to learn whether the dialect passes globals.
    fn globals_parameter(&self, space: AddressSpace, buffer: Option<usize>) -> Option<String> {
        let _ = (space, buffer);
        None
    }

    /// Whether pointer types carry an address space (MSL). When they do, the printer infers one
    /// for every pointer ([`spaces`]) and spells pointer types with [`Dialect::pointer_type`];
    /// a pointer that would need two is an error at its form. False by default.
    fn address_spaces(&self) -> bool {
        false
    }

    /// The spelling of a pointer to `pointee` (already spelled) in `space`; `innermost` when the
    /// pointee is not itself a pointer. Asked only when [`Dialect::address_spaces`] holds.
    fn pointer_type(&self, pointee: &str, space: AddressSpace, innermost: bool) -> String {
        let _ = (space, innermost);
        format!("{pointee}*")
    }

    /// The spelling of an index variable.
    fn index_variable(&self, var: IndexVar) -> Option<IndexSpelling>;

    /// The number of lanes in a warp (32 on CUDA, 64 on AMD's wavefronts).
    fn warp_width(&self) -> u32;

    /// The declaration of a static shared array (`__shared__ float b[16][16];`), given the
    /// element type's spelling, the name and the dimensions as text (`[16][16]`).
    fn shared_array(&self, element: &str, name: &str, dims: &str) -> Option<String>;

    /// The declaration of the dynamic shared memory array named `name`, an array of bytes; empty
    /// when the dialect declares it elsewhere (MSL: a kernel parameter).
    fn dynamic_shared_array(&self, name: &str) -> Option<String>;

    /// A call of intrinsic `intrinsic` (the printer's CUDA name: `atomicAdd`, `sinf`,
    /// `__shfl_sync`, `__syncthreads` …) with the printed arguments. CUDA calls it as named; a
    /// dialect may rename it, reorder or drop arguments, or refuse it.
    fn call(&self, intrinsic: &str, args: &[&str]) -> Option<String>;

    /// The suffixes of signed and unsigned 64-bit integer literals: `("ll", "ull")` by default;
    /// MSL has no `long long`, and its `long` is 64-bit (`("l", "ul")`).
    fn long_suffixes(&self) -> (&'static str, &'static str) {
        ("ll", "ull")
    }

    /// A conversion of the float `value` to the integer type spelled `integer`, where a C cast
    /// would not give CUDA's result (toward zero, saturating at the type's range, NaN to 0):
    /// MSL leaves out-of-range conversions undefined. `None` (the default) keeps the C cast.
    fn float_to_integer(&self, integer: &str, value: &str) -> Option<String> {
        let _ = (integer, value);
        None
    }

    /// The definition of helper `helper`, named `name`, ending in a newline.
    fn helper_definition(&self, helper: Helper, name: &str) -> Option<String>;
}

/// What the printer emits besides the text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Write `#line N "file"` before each statement and function, so that a C compiler's
    /// diagnostics name the kernel text's lines. Off by default (the text stays readable).
    pub line_directives: bool,
}

/// A printed module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintedModule {
    /// The source text.
    pub code: String,
    /// The headers the text includes, in the order it includes them (file names as written
    /// between `<` and `>`). A compiler must be able to find them (NVRTC needs the toolkit's
    /// include directory for `curand_kernel.h`).
    pub headers: Vec<&'static str>,
    /// The names the module's kernels, device functions and globals have in the text.
    pub names: NameTable,
}

/// From kernel-language names to emitted names, for the functions and globals of a printed
/// module: what the runtime looks up (`cuModuleGetFunction`, `cuModuleGetGlobal`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameTable {
    functions: Vec<String>,
    globals: Vec<String>,
    function_index: HashMap<Arc<str>, usize>,
    global_index: HashMap<Arc<str>, usize>,
}

impl NameTable {
    /// The emitted name of the function named `name` in the kernel text.
    pub fn function(&self, name: &str) -> Option<&str> {
        self.function_index
            .get(name)
            .map(|&i| self.functions[i].as_str())
    }

    /// The emitted name of the global named `name` in the kernel text.
    pub fn global(&self, name: &str) -> Option<&str> {
        self.global_index
            .get(name)
            .map(|&i| self.globals[i].as_str())
    }

    /// The emitted name of function `id` (empty for an id outside the module).
    pub fn function_by_id(&self, id: FunctionId) -> &str {
        self.functions.get(id.index()).map_or("", String::as_str)
    }

    /// The emitted name of global `id` (empty for an id outside the module).
    pub fn global_by_id(&self, id: GlobalId) -> &str {
        self.globals.get(id.index()).map_or("", String::as_str)
    }

    /// The emitted names of the functions, in the module's order.
    pub fn functions(&self) -> &[String] {
        &self.functions
    }

    /// The emitted names of the globals, in the module's order.
    pub fn globals(&self) -> &[String] {
        &self.globals
    }

    fn new(module: &ir::Module, functions: Vec<String>, globals: Vec<String>) -> NameTable {
        let function_index = module
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        let global_index = module
            .globals
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), i))
            .collect();
        NameTable {
            functions,
            globals,
            function_index,
            global_index,
        }
    }
}

/// Prints `module` for `dialect`. An error names the form the dialect cannot express, or an
/// expression nested too deeply to print.
pub fn print_module(
    module: &ir::Module,
    dialect: &(dyn Dialect + Sync),
    options: &PrintOptions,
) -> Result<PrintedModule> {
    printer::print(module, dialect, options)
}

/// Prints `module` for `target`: validates it against the target first (a feature the target
/// lacks or a limit it exceeds is an error at its span, before any C is written), then prints it
/// with the target's dialect, whose warp width is the target's. A module checked once prints for
/// every target whose validation it passes. Targets with no C-family dialect in this build (HIP,
/// until its back end adds one; the CPU executor, which reads the IR) are an
/// error at the module's first definition.
pub fn print_for_target(
    module: &ir::Module,
    target: &Target,
    options: &PrintOptions,
) -> Result<PrintedModule> {
    crate::check::validate(module, target)?;
    let hip = hip::Hip::for_target(target);
    let dialect: &(dyn Dialect + Sync) = match (target.kind, &hip) {
        (TargetKind::Cuda, _) => &cuda::Cuda,
        (TargetKind::Metal, _) => &msl::Msl,
        (TargetKind::Hip, Some(hip)) => hip,
        (TargetKind::Hip | TargetKind::Cpu, _) => {
            let span = module
                .functions
                .first()
                .map(|f| &f.span)
                .or(module.globals.first().map(|g| &g.span))
                .or(module.structs.first().map(|s| &s.span))
                .cloned()
                .unwrap_or_else(|| crate::span::Span::point(Arc::from("<module>"), 1, 1));
            return Err(Error::new(
                &span,
                format!("this build has no C-family dialect for the {target}"),
            ));
        }
    };
    debug_assert_eq!(dialect.warp_width(), target.warp_width);
    print_module(module, dialect, options)
}

/// An error at `span` saying the dialect cannot express `what`.
fn unsupported(span: &crate::span::Span, dialect: &dyn Dialect, what: &str) -> Error {
    Error::new(
        span,
        format!("{what} is not available in {}", dialect.name()),
    )
}

#[cfg(test)]
mod tests;
