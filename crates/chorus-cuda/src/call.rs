//! Calling the driver from this crate: `cu!` is the driver layer's `ensure_driver` then
//! `check`, with the `CUresult` turned into this crate's [`crate::Error`].

/// Calls a driver function through [`chorus_driver::ensure_driver`] and turns its `CUresult`
/// into a `Result` naming the entry point (`cu!(cuModuleUnload(m))`).
macro_rules! cu {
    ($f:ident ( $($arg:expr),* $(,)? )) => {{
        ::chorus_driver::ensure_driver()?;
        // SAFETY: the driver is loaded and initialised (checked above); each call site passes
        // arguments that satisfy the entry point's contract.
        ::chorus_driver::check(stringify!($f), unsafe { ::chorus_driver::sys::$f($($arg),*) })
            .map_err($crate::error::Error::from)
    }};
}
pub(crate) use cu;

/// Calls a driver function in a `Drop` (the driver is loaded: the object being dropped was made
/// through it); a failure is logged, not returned.
macro_rules! cu_drop {
    ($f:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: as in `cu!`; the handle released here was created by this crate.
        let result = unsafe { ::chorus_driver::sys::$f($($arg),*) };
        if let Err(e) = ::chorus_driver::check(stringify!($f), result) {
            ::tracing::debug!(target: "chorus_cuda", "{e}");
        }
    }};
}
pub(crate) use cu_drop;
