//! The CUDA C back end: one typed [`ir::Module`] in, one `.cu` text out.
//!
//! [`print_module`] (or [`generate`], which also lists the system headers the text includes)
//! writes a deterministic, readable CUDA C file that nvcc and NVRTC (`--std=c++17`) accept, with
//! no include directory of Chorus's own. The file has, in this order:
//!
//! 1. `#include` lines, only for what the module uses: `<cuda_fp16.h>` (half, half2),
//!    `<cuda_bf16.h>`, `<cuda_fp8.h>`, `<cuda_fp4.h>`, `<curand_kernel.h>` (cuRAND state and calls);
//! 2. helper functions, only those used, as `static __device__ __forceinline__` definitions
//!    (vector arithmetic such as `chorus_float3_add`, `chorus_float3_dot`, `chorus_lane_id`,
//!    `chorus_cluster_barrier`);
//! 3. structures (`struct pair {\n  int x;\n  int y;\n};`), each after the structures it
//!    contains by value;
//! 4. globals, as `extern "C" __device__ int foo = 0;` (vector and structure initializers as
//!    brace lists); a `__shared__` global has no initializer, which CUDA forbids;
//! 5. an `extern "C"` prototype of every function, then the definitions in definition order,
//!    indented by two spaces.
//!
//! # Kernel names and C names
//!
//! Every name the kernel text defines reaches C through [`ir::c_identifier`]: lower case, every
//! character other than a letter, digit or `_` becomes `_` (`vec-add-kernel` → `vec_add_kernel`,
//! `%foo` → `_foo`), a trailing `*` becomes `_p`, a leading digit gets a `_` prefix and a C, C++
//! or CUDA reserved word gets a `_` suffix (`int` → `int_`). The checker then makes the names
//! unique (functions, globals and structures in the module; locals within their function) and
//! stores them in the IR (`c_name` fields); this printer writes those names and invents none of
//! its own except the ones below, all of which start with `chorus_`:
//!
//! * functions and globals keep their exact C name in the object file: both are declared
//!   `extern "C"`, so `cuModuleGetFunction` and `cuModuleGetGlobal` find `vec_add_kernel` and
//!   `foo` by those names (no C++ mangling, no package prefix);
//! * helpers are named `chorus_<what>` (`chorus_float3_add`), the dynamic shared memory array
//!   is `chorus_dyn_smem`, and the temporaries of a `do` whose steps read each other's variables
//!   are `<variable>_next` (made unique within the function).
//!
//! `cuda-asm` text is copied verbatim (with a `;` added when it ends in neither `;` nor `}`), so
//! it must use the C names above.
//!
//! # Statements
//!
//! As the seed shows them: `if (T) {…} else {…}` (an `if` alone in an `else` becomes `else if`),
//! a `{…}` block for each `let` (and `symbol-macrolet`, `macrolet`), `x = v;`, `return v;`,
//! `while (T) {…}`, `switch (E) { case 1: {… break;} default: {…} }` with no fall-through,
//! `__shared__ float b[16][16];`, `extern __shared__ __align__(16) unsigned char
//! chorus_dyn_smem[];` with `int* s = (int*)chorus_dyn_smem;` for dynamic shared memory,
//! `__launch_bounds__(N, M)` on the kernel, `printf("…", a);` with the format C-escaped. `for`
//! and `do` print as `for (int i = 0; (i < n); i = (i + 1)) {…}`. A `do` of several variables
//! declares them in one declaration when they share a type (`for (int a = 0, b = 0; …)`; the
//! seed's `for ( int a = 0, int b = 0; …)` is not C), else in a block around the loop; its steps
//! are parallel, so a step whose variable a later step reads goes through a temporary:
//! `x_next = y, y = (x + y), x = x_next`.
//!
//! # Expressions
//!
//! Expressions are fully parenthesised as cl-cuda printed them (`((blockDim.x * blockIdx.x) +
//! threadIdx.x)`, left folds, `(c ? a : b)`); the operand of a unary operator or cast is always
//! in parentheses (`-(x)`, `!(a > 15)`, `&(a[i])`, `(unsigned int)(-1)`). Conditions of `if`,
//! `while` and `switch` are written without a second pair of parentheses (`if (i < n) {`).
//!
//! Implicit conversions the checker inserted ([`ir::ExprKind::Cast`] with `implicit: true`) are
//! folded into literals (`(+ x 1)` on a float `x` prints `(x + 1.0f)`), left to C where C
//! performs exactly the same conversion (an initializer, an assignment, a `return`, a call of a
//! device function, the other operand of an arithmetic operator whose type is already the
//! target), and printed everywhere else (`printf` arguments, conversions to and from `half`,
//! arguments of CUDA's overloaded intrinsics).
//!
//! # Index variables
//!
//! The kernel language types `thread-idx-x` and the other index variables as `int`, while CUDA's
//! `threadIdx.x` is `unsigned int`. The printer writes them plain, as cl-cuda did
//! (`int i = ((blockDim.x * blockIdx.x) + threadIdx.x);`), and adds `(int)(…)` only where
//! unsigned arithmetic could give another result than the language's `int`: the operand of a
//! comparison, division, remainder, right shift, intrinsic or `printf`, and an index computed
//! with arithmetic (`a[(int)(threadIdx.x - 1)]`). Storing into an `int`, `+`, `-`, `*` and the
//! bitwise operators need no cast, since they agree modulo 2³². Arithmetic on the 8- and 16-bit
//! integer types, which C promotes to `int`, is handled the same way.

mod expr;
mod helpers;
mod printer;

use crate::ir;

pub use helpers::Header;

/// A generated CUDA C file and the system headers it includes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaSource {
    /// The CUDA C text.
    pub code: String,
    /// The headers the text includes, in the order it includes them. A compiler must be able to
    /// find them (NVRTC needs the toolkit's include directory for `curand_kernel.h`).
    pub headers: Vec<Header>,
}

/// Prints `module` as one CUDA C file (see the [module documentation](self)).
pub fn print_module(module: &ir::Module) -> String {
    generate(module).code
}

/// Prints `module` as one CUDA C file and says which system headers it includes.
pub fn generate(module: &ir::Module) -> CudaSource {
    printer::ModulePrinter::new(module).print()
}

#[cfg(test)]
mod tests;
