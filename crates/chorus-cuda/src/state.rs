//! The states of a kernel manager (kept apart from the manager so that the crate's error can
//! name them without importing the manager).

use std::fmt;

/// The state of a [`KernelManager`](crate::KernelManager) (the seed's I–IV).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// I: definitions only; nothing compiled.
    Initial,
    /// II: the definitions are compiled to a module image.
    Compiled,
    /// III: the image is loaded as a `CUmodule`.
    ModuleLoaded,
    /// IV: the kernels' `CUfunction`s are looked up.
    FunctionLoaded,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Initial => "initial",
            State::Compiled => "compiled",
            State::ModuleLoaded => "module-loaded",
            State::FunctionLoaded => "function-loaded",
        })
    }
}
