//! Driver entry points that not every supported driver has (green contexts came with CUDA
//! 12.4, checkpointing with 12.8).
//!
//! cudarc resolves a binding's symbol at its first call and panics when it is missing, and the
//! loader's probe ([`crate::loader::driver`]) checks only the entry points every driver in
//! use has. So each feature built on newer ones asks here first: [`require`] answers
//! [`Error::Unsupported`] naming the missing entry points instead of a panic. Entry points
//! that cudarc's bindings lack altogether (checkpointing) are looked up with [`symbol`].

use crate::call::ensure_driver;
use crate::error::{Error, Result};
use crate::loader;
use libloading::Library;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Another reference to the loaded driver library, opened once.
fn driver_library() -> Option<&'static Library> {
    static LIBRARY: OnceLock<Option<Library>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            loader::reopen(
                &cudarc::get_lib_name_candidates("cuda"),
                loader::driver().path.as_deref(),
            )
        })
        .as_ref()
}

/// The entry points of `symbols` the loaded driver lacks (all of them when it cannot be
/// reopened).
fn missing(symbols: &[&'static str]) -> Vec<&'static str> {
    let Some(library) = driver_library() else {
        return symbols.to_vec();
    };
    symbols
        .iter()
        .copied()
        .filter(|s| {
            // SAFETY: only the address is looked up; nothing is called.
            unsafe { library.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err()
        })
        .collect()
}

/// The driver loads (else [`Error::SdkNotFound`]) and has every one of `symbols` (else
/// [`Error::Unsupported`] for `feature`, naming the missing ones and the driver's CUDA
/// version). Answered once per feature: every call for one feature passes the same list.
pub(crate) fn require(feature: &'static str, symbols: &[&'static str]) -> Result<()> {
    static KNOWN: Mutex<Option<HashMap<&'static str, Option<String>>>> = Mutex::new(None);
    ensure_driver()?;
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    let why = known
        .get_or_insert_with(HashMap::new)
        .entry(feature)
        .or_insert_with(|| {
            let lacking = missing(symbols);
            (!lacking.is_empty()).then(|| {
                let version = crate::call::driver_version()
                    .map(|(major, minor)| format!("CUDA {major}.{minor}"))
                    .unwrap_or_else(|_| "of unknown version".to_owned());
                format!("the driver ({version}) lacks {}", lacking.join(", "))
            })
        });
    match why {
        None => Ok(()),
        Some(reason) => Err(Error::Unsupported {
            feature,
            reason: reason.clone(),
        }),
    }
}

/// The address of the driver's entry point `name`, one of `feature`'s `entry_points` (all
/// of which are [required](require)), as a function pointer of type `F`, for entry points
/// cudarc has no binding of; [`Error::Unsupported`] for `feature` when absent.
///
/// # Safety
///
/// `F` must be an `unsafe extern "C" fn` type with the entry point's exact C signature.
pub(crate) unsafe fn symbol<F: Copy>(
    feature: &'static str,
    entry_points: &[&'static str],
    name: &'static str,
) -> Result<F> {
    require(feature, entry_points)?;
    let library = driver_library().ok_or_else(|| Error::Unsupported {
        feature,
        reason: "the driver library could not be reopened".into(),
    })?;
    // SAFETY: present (checked above); the caller vouches for the signature.
    let function =
        unsafe { library.get::<F>(name.as_bytes()) }.map_err(|e| Error::Unsupported {
            feature,
            reason: format!("{name}: {e}"),
        })?;
    Ok(*function)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_a_feature_is_sdk_not_found() {
        if !crate::sdk_not_found() {
            return;
        }
        assert!(matches!(
            require("green contexts", &["cuGreenCtxCreate"]),
            Err(Error::SdkNotFound { .. })
        ));
        // SAFETY: never called: the lookup fails first.
        let lookup =
            unsafe { symbol::<unsafe extern "C" fn()>("checkpoints", &["cuInit"], "cuInit") };
        assert!(matches!(lookup, Err(Error::SdkNotFound { .. })));
    }

    #[test]
    fn a_driver_that_cannot_be_reopened_lacks_every_entry_point() {
        if driver_library().is_some() {
            return;
        }
        assert_eq!(
            missing(&["cuInit", "cuGreenCtxCreate"]),
            ["cuInit", "cuGreenCtxCreate"]
        );
    }
}
