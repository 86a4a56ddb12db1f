//! Green contexts: partitions of a device's SMs (`cuDeviceGetDevResource`,
//! `cuDevSmResourceSplitByCount`, `cuDevResourceGenerateDesc`, `cuGreenCtxCreate`). Work
//! launched in a green context's streams runs only on its SMs, so that two workloads can share
//! a GPU without competing for SMs.
//!
//! They need a CUDA 12.4 or newer driver; an older one answers [`Error::Unsupported`].

use crate::call::{cu, cu_drop};
use crate::context::{device_handle, run_release_hooks};
use crate::entry::require;
use crate::error::{Error, Result};
use crate::stream::Stream;
use cudarc::driver::sys::{self, CUdevResource, CUdevResourceType};

const FEATURE: &str = "green contexts";
const ENTRY_POINTS: &[&str] = &[
    "cuDeviceGetDevResource",
    "cuDevSmResourceSplitByCount",
    "cuDevResourceGenerateDesc",
    "cuGreenCtxCreate",
    "cuGreenCtxDestroy",
    "cuCtxFromGreenCtx",
    "cuGreenCtxGetDevResource",
    "cuGreenCtxStreamCreate",
];

fn require_green() -> Result<()> {
    require(FEATURE, ENTRY_POINTS)
}

/// A set of SMs of a device (an SM `CUdevResource`): the whole device's, or a group of a
/// [split](SmResource::split_by_count).
#[derive(Clone, Copy)]
pub struct SmResource {
    raw: CUdevResource,
    device: usize,
}

impl std::fmt::Debug for SmResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmResource")
            .field("device", &self.device)
            .field("sm_count", &self.sm_count())
            .finish()
    }
}

fn empty_resource() -> CUdevResource {
    // SAFETY: a C struct of an enum whose zero is `CU_DEV_RESOURCE_TYPE_INVALID`, bytes and
    // integers: the driver fills it.
    unsafe { std::mem::zeroed() }
}

/// The groups of a split: how many of `min_count` SMs fit `available` SMs, at most `wanted`.
fn groups_that_fit(available: u32, wanted: u32, min_count: u32) -> Result<u32> {
    if wanted == 0 || min_count == 0 {
        return Err(Error::InvalidArgument(
            "an SM split needs at least one group of at least one SM".into(),
        ));
    }
    let fit = available / min_count;
    if fit == 0 {
        return Err(Error::InvalidArgument(format!(
            "a group of {min_count} SMs does not fit the {available} SMs available"
        )));
    }
    Ok(fit.min(wanted))
}

impl SmResource {
    /// All SMs of device `id`.
    pub fn of_device(id: usize) -> Result<SmResource> {
        require_green()?;
        let mut raw = empty_resource();
        cu!(cuDeviceGetDevResource(
            device_handle(id)?,
            &mut raw,
            CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
        ))?;
        Ok(SmResource { raw, device: id })
    }

    /// The number of SMs.
    pub fn sm_count(&self) -> u32 {
        // SAFETY: an SM resource (its type says so: every constructor asks for one), whose
        // union holds the SM member.
        unsafe { self.raw.__bindgen_anon_1.sm.smCount }
    }

    /// The device ordinal.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Splits these SMs into up to `groups` groups of at least `min_count` SMs each
    /// (`cuDevSmResourceSplitByCount`; the driver rounds `min_count` up to its partition
    /// granularity, 8 SMs on Hopper). Returns the groups and the SMs left over.
    pub fn split_by_count(
        &self,
        groups: u32,
        min_count: u32,
    ) -> Result<(Vec<SmResource>, SmResource)> {
        let wanted = groups_that_fit(self.sm_count(), groups, min_count)?;
        require_green()?;
        let mut result = vec![empty_resource(); wanted as usize];
        let mut count = wanted;
        let mut remaining = empty_resource();
        cu!(cuDevSmResourceSplitByCount(
            result.as_mut_ptr(),
            &mut count,
            &self.raw,
            &mut remaining,
            0,
            min_count
        ))?;
        result.truncate(count as usize);
        let device = self.device;
        Ok((
            result
                .into_iter()
                .map(|raw| SmResource { raw, device })
                .collect(),
            SmResource {
                raw: remaining,
                device,
            },
        ))
    }
}

/// A green context (`cuGreenCtxCreate`): a context that runs work only on its SMs. Destroyed
/// on drop (after the [release hooks](crate::on_context_release) of its context have run).
///
/// Modules used in it must be loaded while it is current ([`GreenContext::with_current`]);
/// work goes into its streams ([`GreenContext::stream`]).
#[derive(Debug)]
pub struct GreenContext {
    raw: sys::CUgreenCtx,
    context: sys::CUcontext,
    device: usize,
}

// SAFETY: green context handles are usable from any thread.
unsafe impl Send for GreenContext {}
// SAFETY: as above; the methods only pass the handles to the driver.
unsafe impl Sync for GreenContext {}

impl GreenContext {
    /// A green context over `resource`'s SMs (one group of a split, usually).
    pub fn new(resource: &SmResource) -> Result<GreenContext> {
        require_green()?;
        let mut resources = [resource.raw];
        let mut desc = std::ptr::null_mut();
        cu!(cuDevResourceGenerateDesc(
            &mut desc,
            resources.as_mut_ptr(),
            1
        ))?;
        let mut raw = std::ptr::null_mut();
        let flags = sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM as u32;
        cu!(cuGreenCtxCreate(
            &mut raw,
            desc,
            device_handle(resource.device)?,
            flags
        ))?;
        let mut context = std::ptr::null_mut();
        if let Err(e) = cu!(cuCtxFromGreenCtx(&mut context, raw)) {
            cu_drop!(cuGreenCtxDestroy(raw));
            return Err(e);
        }
        Ok(GreenContext {
            raw,
            context,
            device: resource.device,
        })
    }

    /// The SMs it runs on.
    pub fn sm_resource(&self) -> Result<SmResource> {
        let mut raw = empty_resource();
        cu!(cuGreenCtxGetDevResource(
            self.raw,
            &mut raw,
            CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
        ))?;
        Ok(SmResource {
            raw,
            device: self.device,
        })
    }

    /// A new stream of this green context (non-blocking, default priority); destroyed on
    /// drop, which must come before the green context's.
    pub fn stream(&self) -> Result<Stream> {
        let mut raw = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        cu!(cuGreenCtxStreamCreate(&mut raw, self.raw, flags, 0))?;
        Ok(Stream::from_owned_raw(raw))
    }

    /// Runs `body` with this green context's context current on the calling thread (so that
    /// modules load into it), then restores the context that was current before.
    pub fn with_current<R, E: From<Error>>(
        &self,
        body: impl FnOnce() -> std::result::Result<R, E>,
    ) -> std::result::Result<R, E> {
        let previous = crate::context::current_context().unwrap_or(std::ptr::null_mut());
        cu!(cuCtxSetCurrent(self.context))?;
        let result = body();
        cu!(cuCtxSetCurrent(previous))?;
        result
    }

    /// The `CUcontext` of this green context, for calls through [`crate::sys`].
    pub fn raw_context(&self) -> sys::CUcontext {
        self.context
    }

    /// The device ordinal.
    pub fn device(&self) -> usize {
        self.device
    }
}

impl Drop for GreenContext {
    fn drop(&mut self) {
        run_release_hooks(self.context);
        cu_drop!(cuGreenCtxDestroy(self.raw));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_checked_before_the_driver() {
        assert_eq!(groups_that_fit(132, 2, 16).unwrap(), 2);
        assert_eq!(groups_that_fit(132, 20, 16).unwrap(), 8);
        let e = groups_that_fit(8, 1, 16).unwrap_err().to_string();
        assert!(e.contains("does not fit the 8 SMs"), "{e}");
        assert!(groups_that_fit(132, 0, 16).is_err());
        assert!(groups_that_fit(132, 1, 0).is_err());
    }

    #[test]
    fn without_a_driver_green_contexts_are_sdk_not_found() {
        if !crate::sdk_not_found() {
            return;
        }
        assert!(matches!(
            SmResource::of_device(0),
            Err(Error::SdkNotFound { .. })
        ));
    }
}
