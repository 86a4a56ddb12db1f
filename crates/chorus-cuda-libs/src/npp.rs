//! NPP: image processing on pitched device images ([`Image`], [`ImageView`], [`ImageViewMut`]):
//! resize (nearest, linear, cubic), colour conversion (RGB ↔ YUV, NV12 → RGB, RGB → grey), box
//! and Gaussian filters, arithmetic and logical operations, histograms.
//!
//! Every call is NPP's stream-context form (`nppi…_Ctx`) with an `NppStreamContext` filled from
//! the device of the handle's context and its stream, so the work is queued on that stream like
//! a kernel's; nothing here waits for it (histograms read back to the host wait for the stream).
//!
//! NPP lives in several library files (`libnppc` and one per function group); each is probed
//! on first use ([`LIBRARY`] and the statics next to it), and [`is_available`] needs them all.
//! The bindings are generated (`npp/sys.rs`, see `bindgen/regenerate.sh`) and loaded at run
//! time.
//!
//! Rounding (as NPP documents it, and as the tests measured): 8-bit results of the arithmetic
//! are `saturate(round(v · 2^-scale))` with ties to even; colour conversions compute in f32 with
//! the formulas of NPP's manual and round to nearest; filters and resizes are within one level of
//! the f64 result on 8-bit images (see the tests for the measured differences).

#![allow(clippy::too_many_arguments)] // NPP's calling convention: images, then sizes

pub mod sys;

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::image::{ImageShape, ImageView, ImageViewMut};
use crate::library::{Library, found_by_system_loader};
use chorus_driver::loader::{driver_dirs, probe_library};
use chorus_driver::{AsDeviceSliceMut, Stream, sys as cu};
use std::ffi::c_int;
use std::sync::OnceLock;

pub use crate::image::{Image, PITCH_ALIGNMENT};

/// `libnppc`, NPP's core (version, and what the others link against).
pub static LIBRARY: Library = Library::new("NPP", "nppc", &[], &["nppGetLibVersion"], || {
    found_by_system_loader("nppc")
});
/// `libnppig`: geometry (resize).
pub static GEOMETRY: Library = Library::new(
    "NPP geometry (nppig)",
    "nppig",
    &[&LIBRARY],
    GEOMETRY_SYMBOLS,
    || found_by_system_loader("nppig"),
);
/// `libnppicc`: colour conversion.
pub static COLOR: Library = Library::new(
    "NPP colour conversion (nppicc)",
    "nppicc",
    &[&LIBRARY],
    COLOR_SYMBOLS,
    || found_by_system_loader("nppicc"),
);
/// `libnppif`: filters.
pub static FILTERS: Library = Library::new(
    "NPP filters (nppif)",
    "nppif",
    &[&LIBRARY],
    FILTER_SYMBOLS,
    || found_by_system_loader("nppif"),
);
/// `libnppial`: arithmetic and logical operations.
pub static ARITHMETIC: Library = Library::new(
    "NPP arithmetic and logical (nppial)",
    "nppial",
    &[&LIBRARY],
    ARITHMETIC_SYMBOLS,
    || found_by_system_loader("nppial"),
);
/// `libnppist`: statistics (histograms).
pub static STATISTICS: Library = Library::new(
    "NPP statistics (nppist)",
    "nppist",
    &[&LIBRARY],
    STATISTICS_SYMBOLS,
    || found_by_system_loader("nppist"),
);

/// Every NPP library file this module loads.
pub const LIBRARIES: [&Library; 6] = [
    &LIBRARY,
    &GEOMETRY,
    &COLOR,
    &FILTERS,
    &ARITHMETIC,
    &STATISTICS,
];

const GEOMETRY_SYMBOLS: &[&str] = &[
    "nppiResize_8u_C1R_Ctx",
    "nppiResize_8u_C3R_Ctx",
    "nppiResize_32f_C1R_Ctx",
    "nppiResize_32f_C3R_Ctx",
];
const COLOR_SYMBOLS: &[&str] = &[
    "nppiRGBToYUV_8u_C3R_Ctx",
    "nppiYUVToRGB_8u_C3R_Ctx",
    "nppiNV12ToRGB_8u_P2C3R_Ctx",
    "nppiRGBToGray_8u_C3C1R_Ctx",
];
const FILTER_SYMBOLS: &[&str] = &[
    "nppiFilterBoxBorder_8u_C1R_Ctx",
    "nppiFilterBoxBorder_8u_C3R_Ctx",
    "nppiFilterBoxBorder_32f_C1R_Ctx",
    "nppiFilterGaussBorder_8u_C1R_Ctx",
    "nppiFilterGaussBorder_8u_C3R_Ctx",
    "nppiFilterGaussBorder_32f_C1R_Ctx",
];
const ARITHMETIC_SYMBOLS: &[&str] = &[
    "nppiAdd_8u_C1RSfs_Ctx",
    "nppiSub_8u_C1RSfs_Ctx",
    "nppiMul_8u_C1RSfs_Ctx",
    "nppiAbsDiff_8u_C1R_Ctx",
    "nppiAdd_32f_C1R_Ctx",
    "nppiSub_32f_C1R_Ctx",
    "nppiMul_32f_C1R_Ctx",
    "nppiDiv_32f_C1R_Ctx",
    "nppiAnd_8u_C1R_Ctx",
    "nppiOr_8u_C1R_Ctx",
    "nppiXor_8u_C1R_Ctx",
    "nppiNot_8u_C1R_Ctx",
];
const STATISTICS_SYMBOLS: &[&str] = &[
    "nppiHistogramEven_8u_C1R_Ctx",
    "nppiHistogramEvenGetBufferSize_8u_C1R_Ctx",
];

/// True when every NPP library file this module uses loaded with every entry point it calls.
pub fn is_available() -> bool {
    LIBRARIES.iter().all(|l| l.is_available())
}

/// `Ok` when NPP is available, else [`Error::LibraryNotFound`] for the first file missing.
pub fn ensure() -> Result<()> {
    LIBRARIES.iter().try_for_each(|l| l.ensure())
}

/// The loaded function tables, one per library file.
struct Loaded {
    core: sys::Nppc,
    geometry: sys::Nppig,
    color: sys::Nppicc,
    filters: sys::Nppif,
    arithmetic: sys::Nppial,
    statistics: sys::Nppist,
}

fn loaded() -> Result<&'static Loaded> {
    static LOADED: OnceLock<Result<Loaded>> = OnceLock::new();
    let table = |library: &'static Library| library.open();
    LOADED
        .get_or_init(|| {
            ensure()?;
            let fail = |library: &'static Library, e: libloading::Error| Error::LibraryNotFound {
                library: library.display_name,
                searched: e.to_string(),
            };
            // SAFETY: each file was probed with every symbol its table holds; the tables'
            // signatures are bindgen's from the headers of the same major version.
            unsafe {
                Ok(Loaded {
                    core: sys::Nppc::from_library(table(&LIBRARY)?)
                        .map_err(|e| fail(&LIBRARY, e))?,
                    geometry: sys::Nppig::from_library(table(&GEOMETRY)?)
                        .map_err(|e| fail(&GEOMETRY, e))?,
                    color: sys::Nppicc::from_library(table(&COLOR)?)
                        .map_err(|e| fail(&COLOR, e))?,
                    filters: sys::Nppif::from_library(table(&FILTERS)?)
                        .map_err(|e| fail(&FILTERS, e))?,
                    arithmetic: sys::Nppial::from_library(table(&ARITHMETIC)?)
                        .map_err(|e| fail(&ARITHMETIC, e))?,
                    statistics: sys::Nppist::from_library(table(&STATISTICS)?)
                        .map_err(|e| fail(&STATISTICS, e))?,
                })
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// NPP's version (`nppGetLibVersion`): `(major, minor, build)`.
pub fn version() -> Result<(i32, i32, i32)> {
    let lib = loaded()?;
    // SAFETY: loaded; the function returns a pointer to a static struct (or null).
    let v = unsafe { lib.core.nppGetLibVersion() };
    if v.is_null() {
        return Err(Error::invalid(
            "nppGetLibVersion",
            "NPP returned no version",
        ));
    }
    // SAFETY: non-null, static.
    let v = unsafe { &*v };
    Ok((v.major, v.minor, v.build))
}

/// An NPP status as an error naming `call` (negative statuses; positive ones are warnings, logged
/// and treated as success, as NPP intends).
pub fn check(call: &'static str, status: sys::NppStatus) -> Result<()> {
    if status == 0 {
        return Ok(());
    }
    let (name, message) = sys::status_name(status)
        .map(|(n, m)| (n.to_owned(), m.to_owned()))
        .unwrap_or_else(|| (format!("NppStatus({status})"), "unknown status".to_owned()));
    if status > 0 {
        tracing::warn!(target: "chorus_cuda_libs", "{call}: NPP warning {name}: {message}");
        return Ok(());
    }
    Err(Error::Status {
        library: "NPP",
        call,
        code: status as i64,
        name,
        message,
    })
}

/// Calls an NPP entry point of one of the tables and checks its status.
macro_rules! npp {
    ($table:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the table is loaded with the symbol (probed); each call site checked its
        // images against the sizes and steps passed.
        check(stringify!($f), unsafe { $table.$f($($arg),*) })
    };
}

/// One NPP operation over the pixel types and channel counts it is bound for: `$key` chooses the
/// entry point (each `pattern => function` arm), and every entry point takes the same `$args`
/// (pointers through [`ptr`] and [`ptr_mut`], whose pixel type each arm's signature infers).
/// A key no arm names is `$otherwise`.
macro_rules! by_kind {
    ($table:expr, $key:expr, { $($pat:pat => $f:ident),+ $(,)? }, $args:tt, $otherwise:expr) => {
        match $key {
            $($pat => npp!($table, $f $args),)+
            #[allow(unreachable_patterns)] // where the arms cover every key
            _ => Err($otherwise),
        }
    };
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for f32 {}
}

/// The kinds of pixel values NPP's calls here take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelKind {
    /// `Npp8u`.
    U8,
    /// `Npp32f`.
    F32,
}

/// A pixel value type: `u8` or `f32`.
pub trait Pixel: bytemuck::Pod + sealed::Sealed {
    /// Which.
    const KIND: PixelKind;
}

impl Pixel for u8 {
    const KIND: PixelKind = PixelKind::U8;
}

impl Pixel for f32 {
    const KIND: PixelKind = PixelKind::F32;
}

/// How [`Npp::resize`] samples the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpolation {
    /// Nearest neighbour (`NPPI_INTER_NN`).
    Nearest,
    /// Bilinear (`NPPI_INTER_LINEAR`).
    Linear,
    /// Bicubic (`NPPI_INTER_CUBIC`).
    Cubic,
}

impl Interpolation {
    fn raw(self) -> c_int {
        (match self {
            Interpolation::Nearest => sys::NPPI_INTER_NN,
            Interpolation::Linear => sys::NPPI_INTER_LINEAR,
            Interpolation::Cubic => sys::NPPI_INTER_CUBIC,
        }) as c_int
    }
}

/// The fixed masks of [`Npp::gaussian`], `n × n`. NPP's manual says their kernels use
/// σ = 0.4 + (n / 2) · 0.6 (what [`GaussMask::sigma`] returns), but the kernel NPP applies is
/// narrower: on the H200 its 5 × 5 did not fit σ = 1.6, and NPP's older `nppiFilterGauss`
/// documentation lists the fixed 5 × 5 mask `[2 7 12 7 2; 7 31 52 31 7; 12 52 127 52 12; …] / 571`
/// (row sums 30, 128, 255, 128, 30: σ ≈ 0.85 from the inner taps, 1.0 from the outer) and the
/// 3 × 3 `[1 2 1]ᵀ[1 2 1] / 16` (σ ≈ 0.85). The GPU test reads NPP's kernel from the filter's
/// impulse response and prints the σ that fits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaussMask {
    /// 3 × 3.
    Size3,
    /// 5 × 5.
    Size5,
    /// 7 × 7.
    Size7,
    /// 9 × 9.
    Size9,
    /// 11 × 11.
    Size11,
    /// 13 × 13.
    Size13,
    /// 15 × 15.
    Size15,
}

impl GaussMask {
    /// The mask's width (and height).
    pub fn size(self) -> usize {
        match self {
            GaussMask::Size3 => 3,
            GaussMask::Size5 => 5,
            GaussMask::Size7 => 7,
            GaussMask::Size9 => 9,
            GaussMask::Size11 => 11,
            GaussMask::Size13 => 13,
            GaussMask::Size15 => 15,
        }
    }

    /// The σ NPP's manual gives for the mask, 0.4 + (size / 2) · 0.6 (the kernel NPP applies
    /// is narrower: see [`GaussMask`]).
    pub fn sigma(self) -> f64 {
        0.4 + (self.size() / 2) as f64 * 0.6
    }

    fn raw(self) -> sys::NppiMaskSize {
        match self {
            GaussMask::Size3 => sys::NPP_MASK_SIZE_3_X_3,
            GaussMask::Size5 => sys::NPP_MASK_SIZE_5_X_5,
            GaussMask::Size7 => sys::NPP_MASK_SIZE_7_X_7,
            GaussMask::Size9 => sys::NPP_MASK_SIZE_9_X_9,
            GaussMask::Size11 => sys::NPP_MASK_SIZE_11_X_11,
            GaussMask::Size13 => sys::NPP_MASK_SIZE_13_X_13,
            GaussMask::Size15 => sys::NPP_MASK_SIZE_15_X_15,
        }
    }
}

/// The driver calls the stream context needs that `chorus-driver` does not check: probed once.
fn has_stream_flags() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        probe_library("cuda", &driver_dirs(), &["cuStreamGetFlags"], || {
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            unsafe { cu::is_culib_present() }
        })
        .present()
    })
}

/// An NPP handle: the stream context of a context's device and one of its streams. Every call
/// queues its work on that stream.
#[derive(Debug)]
pub struct Npp<'s> {
    bound: Bound<'s>,
    context: sys::NppStreamContext,
    lib: &'static Loaded,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NPP tables")
    }
}

impl<'s> Npp<'s> {
    /// A handle on `stream` of the current context, its `NppStreamContext` filled from the
    /// context's device (multiprocessors, threads, shared memory, compute capability) and the
    /// stream's flags. Errors: NPP missing ([`Error::LibraryNotFound`]), no context, a stream of
    /// another context.
    pub fn new(stream: &'s Stream) -> Result<Npp<'s>> {
        let lib = loaded()?;
        let bound = Bound::current(stream)?;
        let mut device = 0;
        // SAFETY: the driver is loaded (Bound ensured it) and a context is current.
        chorus_driver::check("cuCtxGetDevice", unsafe { cu::cuCtxGetDevice(&mut device) })?;
        let id = device as usize;
        use cu::CUdevice_attribute::*;
        let attr = |a| chorus_driver::device_attribute(id, a);
        let mut flags = 0u32;
        if !stream.raw().is_null() && has_stream_flags() {
            // SAFETY: probed symbol; the stream is live and of the current context.
            chorus_driver::check("cuStreamGetFlags", unsafe {
                cu::cuStreamGetFlags(stream.raw(), &mut flags)
            })?;
        }
        let context = sys::NppStreamContext {
            hStream: stream.raw().cast(),
            nCudaDeviceId: device,
            nMultiProcessorCount: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            nMaxThreadsPerMultiProcessor: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            nMaxThreadsPerBlock: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            nSharedMemPerBlock: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as usize,
            nCudaDevAttrComputeCapabilityMajor: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            nCudaDevAttrComputeCapabilityMinor: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            nStreamFlags: flags,
            nReserved0: 0,
        };
        Ok(Npp {
            bound,
            context,
            lib,
        })
    }

    /// The stream the work goes on.
    pub fn stream(&self) -> &'s Stream {
        self.bound.stream()
    }

    /// The stream context passed to NPP.
    pub fn stream_context(&self) -> &sys::NppStreamContext {
        &self.context
    }

    /// Resizes all of `src` to all of `dst` (any sizes; the same channels: 1 or 3, `u8` or
    /// `f32`).
    pub fn resize<T: Pixel>(
        &self,
        src: ImageView<'_, T>,
        dst: ImageViewMut<'_, T>,
        interpolation: Interpolation,
    ) -> Result<()> {
        let (s, d) = (src.shape(), dst.shape());
        if s.channels != d.channels {
            return Err(Error::invalid(
                "resize",
                format!("{} channels into {}", s.channels, d.channels),
            ));
        }
        self.bound.enter()?;
        let (ssize, dsize) = (size(s), size(d));
        let (srect, drect) = (rect(s), rect(d));
        let (sp, dp) = (src.ptr(), dst.ptr());
        let (ss, ds) = (s.pitch as c_int, d.pitch as c_int);
        let i = interpolation.raw();
        let ctx = self.context;
        use PixelKind::*;
        by_kind!(
            self.lib.geometry,
            (T::KIND, s.channels),
            {
                (U8, 1) => nppiResize_8u_C1R_Ctx,
                (U8, 3) => nppiResize_8u_C3R_Ctx,
                (F32, 1) => nppiResize_32f_C1R_Ctx,
                (F32, 3) => nppiResize_32f_C3R_Ctx,
            },
            (ptr(sp), ss, ssize, srect, ptr_mut(dp), ds, dsize, drect, i, ctx),
            unsupported("resize", T::KIND, s.channels)
        )
    }

    /// RGB to YUV (3-channel `u8`, the same size), with NPP's formulas: `Y = 0.299 R + 0.587 G
    /// + 0.114 B`, `U = 0.492 (B − Y) + 128`, `V = 0.877 (R − Y) + 128` (saturated).
    pub fn rgb_to_yuv(&self, src: ImageView<'_, u8>, dst: ImageViewMut<'_, u8>) -> Result<()> {
        let roi = same_size("rgb_to_yuv", src.shape(), dst.shape(), 3, 3)?;
        self.bound.enter()?;
        let (s, d) = (src.shape().pitch as c_int, dst.shape().pitch as c_int);
        npp!(
            self.lib.color,
            nppiRGBToYUV_8u_C3R_Ctx(p8(src.ptr()), s, m8(dst.ptr()), d, roi, self.context)
        )
    }

    /// YUV to RGB (3-channel `u8`, the same size): `R = Y + 1.140 V'`, `G = Y − 0.394 U' −
    /// 0.581 V'`, `B = Y + 2.032 U'` with `U' = U − 128`, `V' = V − 128` (saturated).
    pub fn yuv_to_rgb(&self, src: ImageView<'_, u8>, dst: ImageViewMut<'_, u8>) -> Result<()> {
        let roi = same_size("yuv_to_rgb", src.shape(), dst.shape(), 3, 3)?;
        self.bound.enter()?;
        let (s, d) = (src.shape().pitch as c_int, dst.shape().pitch as c_int);
        npp!(
            self.lib.color,
            nppiYUVToRGB_8u_C3R_Ctx(p8(src.ptr()), s, m8(dst.ptr()), d, roi, self.context)
        )
    }

    /// RGB to grey (3-channel to 1-channel `u8`): `0.299 R + 0.587 G + 0.114 B` (CCIR 601).
    pub fn rgb_to_gray(&self, src: ImageView<'_, u8>, dst: ImageViewMut<'_, u8>) -> Result<()> {
        let roi = same_size("rgb_to_gray", src.shape(), dst.shape(), 3, 1)?;
        self.bound.enter()?;
        let (s, d) = (src.shape().pitch as c_int, dst.shape().pitch as c_int);
        npp!(
            self.lib.color,
            nppiRGBToGray_8u_C3C1R_Ctx(p8(src.ptr()), s, m8(dst.ptr()), d, roi, self.context)
        )
    }

    /// NV12 (a `width × height` luma plane `y`, and a `width/2 × height/2` plane `uv` of
    /// interleaved U, V pairs, both with the same pitch) to interleaved RGB `dst` of
    /// `width × height` (even sizes). The colour formula is that of NPP's YUV family (its
    /// manual gives NV12ToRGB none of its own): [`Npp::yuv_to_rgb`]'s, analogue YUV with `Y`
    /// unscaled, not BT.601 YCbCr (NPP's `…_709CSC` and `…_709HDTV` variants, not bound here,
    /// are BT.709 YCbCr). The H200 run that showed neither BT.601 range fits is in the test.
    pub fn nv12_to_rgb(
        &self,
        y: ImageView<'_, u8>,
        uv: ImageView<'_, u8>,
        dst: ImageViewMut<'_, u8>,
    ) -> Result<()> {
        let (ys, uvs) = (y.shape(), uv.shape());
        let roi = same_size("nv12_to_rgb", ys, dst.shape(), 1, 3)?;
        if ys.width % 2 != 0 || ys.height % 2 != 0 {
            return Err(Error::invalid(
                "nv12_to_rgb",
                format!("NV12 needs even sizes, not {} × {}", ys.width, ys.height),
            ));
        }
        if uvs.channels != 2 || uvs.width != ys.width / 2 || uvs.height != ys.height / 2 {
            return Err(Error::invalid(
                "nv12_to_rgb",
                format!(
                    "the UV plane of a {} × {} image is {} × {} of 2 channels, not {} × {} of {}",
                    ys.width,
                    ys.height,
                    ys.width / 2,
                    ys.height / 2,
                    uvs.width,
                    uvs.height,
                    uvs.channels
                ),
            ));
        }
        if uvs.pitch != ys.pitch {
            return Err(Error::invalid(
                "nv12_to_rgb",
                format!(
                    "NPP takes one pitch for both planes: {} and {}",
                    ys.pitch, uvs.pitch
                ),
            ));
        }
        self.bound.enter()?;
        let planes = [p8(y.ptr()), p8(uv.ptr())];
        let (s, d) = (ys.pitch as c_int, dst.shape().pitch as c_int);
        npp!(
            self.lib.color,
            nppiNV12ToRGB_8u_P2C3R_Ctx(planes.as_ptr(), s, m8(dst.ptr()), d, roi, self.context)
        )
    }

    /// The mean of each `mask_width × mask_height` neighbourhood (centred: the anchor is
    /// `(mask_width / 2, mask_height / 2)`), the border replicated; `u8` (1 or 3 channels) or
    /// `f32` (1 channel), `dst` the size of `src`.
    pub fn box_filter<T: Pixel>(
        &self,
        src: ImageView<'_, T>,
        dst: ImageViewMut<'_, T>,
        mask_width: usize,
        mask_height: usize,
    ) -> Result<()> {
        let s = src.shape();
        let roi = same_size("box_filter", s, dst.shape(), s.channels, s.channels)?;
        if mask_width == 0 || mask_height == 0 || mask_width > s.width || mask_height > s.height {
            return Err(Error::invalid(
                "box_filter",
                format!(
                    "a {mask_width} × {mask_height} mask on a {} × {} image",
                    s.width, s.height
                ),
            ));
        }
        self.bound.enter()?;
        let mask = sys::NppiSize {
            width: mask_width as c_int,
            height: mask_height as c_int,
        };
        let anchor = sys::NppiPoint {
            x: (mask_width / 2) as c_int,
            y: (mask_height / 2) as c_int,
        };
        let origin = sys::NppiPoint { x: 0, y: 0 };
        let (sp, dp) = (src.ptr(), dst.ptr());
        let (ss, ds) = (s.pitch as c_int, dst.shape().pitch as c_int);
        let border = sys::NPP_BORDER_REPLICATE;
        let ctx = self.context;
        use PixelKind::*;
        by_kind!(
            self.lib.filters,
            (T::KIND, s.channels),
            {
                (U8, 1) => nppiFilterBoxBorder_8u_C1R_Ctx,
                (U8, 3) => nppiFilterBoxBorder_8u_C3R_Ctx,
                (F32, 1) => nppiFilterBoxBorder_32f_C1R_Ctx,
            },
            (ptr(sp), ss, roi, origin, ptr_mut(dp), ds, roi, mask, anchor, border, ctx),
            unsupported("box_filter", T::KIND, s.channels)
        )
    }

    /// A Gaussian blur with NPP's fixed `mask` (its σ: see [`GaussMask`]), the border
    /// replicated; `u8` (1 or 3 channels) or `f32` (1 channel), `dst` the size of `src`.
    pub fn gaussian<T: Pixel>(
        &self,
        src: ImageView<'_, T>,
        dst: ImageViewMut<'_, T>,
        mask: GaussMask,
    ) -> Result<()> {
        let s = src.shape();
        let roi = same_size("gaussian", s, dst.shape(), s.channels, s.channels)?;
        self.bound.enter()?;
        let origin = sys::NppiPoint { x: 0, y: 0 };
        let (sp, dp) = (src.ptr(), dst.ptr());
        let (ss, ds) = (s.pitch as c_int, dst.shape().pitch as c_int);
        let (m, border) = (mask.raw(), sys::NPP_BORDER_REPLICATE);
        let ctx = self.context;
        use PixelKind::*;
        by_kind!(
            self.lib.filters,
            (T::KIND, s.channels),
            {
                (U8, 1) => nppiFilterGaussBorder_8u_C1R_Ctx,
                (U8, 3) => nppiFilterGaussBorder_8u_C3R_Ctx,
                (F32, 1) => nppiFilterGaussBorder_32f_C1R_Ctx,
            },
            (ptr(sp), ss, roi, origin, ptr_mut(dp), ds, roi, m, border, ctx),
            unsupported("gaussian", T::KIND, s.channels)
        )
    }

    /// `dst = a op b`, value by value, over images of one shape (any channels: the operations
    /// do not mix channels, so rows are passed as `width · channels` single values).
    /// For `u8` the result is `saturate(round((a op b) · 2^-scale))`, ties to even (NPP's
    /// `Sfs` form; `scale` is 0 for plain saturating arithmetic); `f32` ignores `scale`.
    /// [`ImageOp::Div`] is `f32` only, [`ImageOp::AbsDiff`] `u8` only (without scaling).
    pub fn arith<T: Pixel>(
        &self,
        op: ImageOp,
        a: ImageView<'_, T>,
        b: ImageView<'_, T>,
        dst: ImageViewMut<'_, T>,
        scale: i32,
    ) -> Result<()> {
        let call = op.name();
        let roi = elementwise(call, a.shape(), b.shape(), dst.shape())?;
        self.bound.enter()?;
        let (sa, sb, sd) = (
            a.shape().pitch as c_int,
            b.shape().pitch as c_int,
            dst.shape().pitch as c_int,
        );
        // NPP's Sub and Div compute `src2 − src1` and `src2 / src1`: for them b goes first.
        let ((p1, s1), (p2, s2)) = match op {
            ImageOp::Sub | ImageOp::Div => ((b.ptr(), sb), (a.ptr(), sa)),
            _ => ((a.ptr(), sa), (b.ptr(), sb)),
        };
        let pd = dst.ptr();
        let t = &self.lib.arithmetic;
        let ctx = self.context;
        let not_bound = Error::invalid(
            call,
            format!("NPP's {call} is not bound for {:?} images", T::KIND),
        );
        use ImageOp::*;
        match T::KIND {
            // The `Sfs` forms: scaled by 2^-scale, saturated; AbsDiff has no scaled form.
            PixelKind::U8 if op == AbsDiff => npp!(
                t,
                nppiAbsDiff_8u_C1R_Ctx(p8(p1), s1, p8(p2), s2, m8(pd), sd, roi, ctx)
            ),
            PixelKind::U8 => by_kind!(
                t,
                op,
                {
                    Add => nppiAdd_8u_C1RSfs_Ctx,
                    Sub => nppiSub_8u_C1RSfs_Ctx,
                    Mul => nppiMul_8u_C1RSfs_Ctx,
                },
                (ptr(p1), s1, ptr(p2), s2, ptr_mut(pd), sd, roi, scale, ctx),
                not_bound
            ),
            PixelKind::F32 => by_kind!(
                t,
                op,
                {
                    Add => nppiAdd_32f_C1R_Ctx,
                    Sub => nppiSub_32f_C1R_Ctx,
                    Mul => nppiMul_32f_C1R_Ctx,
                    Div => nppiDiv_32f_C1R_Ctx,
                },
                (ptr(p1), s1, ptr(p2), s2, ptr_mut(pd), sd, roi, ctx),
                not_bound
            ),
        }
    }

    /// `dst = a op b` bit by bit (`u8` images of one shape, any channels).
    pub fn logical(
        &self,
        op: LogicalOp,
        a: ImageView<'_, u8>,
        b: ImageView<'_, u8>,
        dst: ImageViewMut<'_, u8>,
    ) -> Result<()> {
        let call = op.name();
        let roi = elementwise(call, a.shape(), b.shape(), dst.shape())?;
        self.bound.enter()?;
        let (pa, pb, pd) = (p8(a.ptr()), p8(b.ptr()), m8(dst.ptr()));
        let (sa, sb, sd) = (
            a.shape().pitch as c_int,
            b.shape().pitch as c_int,
            dst.shape().pitch as c_int,
        );
        let t = &self.lib.arithmetic;
        let ctx = self.context;
        match op {
            LogicalOp::And => npp!(t, nppiAnd_8u_C1R_Ctx(pa, sa, pb, sb, pd, sd, roi, ctx)),
            LogicalOp::Or => npp!(t, nppiOr_8u_C1R_Ctx(pa, sa, pb, sb, pd, sd, roi, ctx)),
            LogicalOp::Xor => npp!(t, nppiXor_8u_C1R_Ctx(pa, sa, pb, sb, pd, sd, roi, ctx)),
        }
    }

    /// `dst = !src` bit by bit (`u8` images of one shape, any channels).
    pub fn not(&self, src: ImageView<'_, u8>, dst: ImageViewMut<'_, u8>) -> Result<()> {
        let roi = elementwise("not", src.shape(), src.shape(), dst.shape())?;
        self.bound.enter()?;
        let (s, d) = (src.shape().pitch as c_int, dst.shape().pitch as c_int);
        npp!(
            self.lib.arithmetic,
            nppiNot_8u_C1R_Ctx(p8(src.ptr()), s, m8(dst.ptr()), d, roi, self.context)
        )
    }

    /// The histogram of a 1-channel `u8` image into `bins` equal bins between `lower`
    /// (included) and `upper` (excluded), counts written to `hist` on the device
    /// (`nppiHistogramEven`; its scratch buffer is allocated here).
    pub fn histogram_even(
        &self,
        src: ImageView<'_, u8>,
        hist: &mut impl AsDeviceSliceMut<i32>,
        lower: i32,
        upper: i32,
    ) -> Result<()> {
        let s = src.shape();
        if s.channels != 1 {
            return Err(Error::invalid(
                "histogram_even",
                format!("a histogram of 1-channel images, not {}", s.channels),
            ));
        }
        let mut out = hist.as_device_slice_mut()?;
        let bins = out.len();
        if bins == 0 || bins > 256 || lower >= upper {
            return Err(Error::invalid(
                "histogram_even",
                format!("{bins} bins over [{lower}, {upper}): 1 to 256 bins, lower < upper"),
            ));
        }
        self.bound.enter()?;
        let roi = size(s);
        let levels = (bins + 1) as c_int;
        let mut bytes = 0usize;
        let t = &self.lib.statistics;
        npp!(
            t,
            nppiHistogramEvenGetBufferSize_8u_C1R_Ctx(roi, levels, &mut bytes, self.context)
        )?;
        let mut scratch = chorus_driver::MemoryBlock::<u8>::alloc(bytes.max(1))?;
        let buffer = scratch.as_device_slice_mut()?.ptr() as usize as *mut u8;
        let dst = out.reborrow().ptr() as usize as *mut i32;
        npp!(
            t,
            nppiHistogramEven_8u_C1R_Ctx(
                p8(src.ptr()),
                s.pitch as c_int,
                roi,
                dst,
                levels,
                lower,
                upper,
                buffer,
                self.context
            )
        )?;
        // The scratch buffer is freed on drop, synchronously: wait for the stream first.
        self.stream().synchronize()?;
        Ok(())
    }

    /// As [`Npp::histogram_even`], read back to the host.
    pub fn histogram_even_host(
        &self,
        src: ImageView<'_, u8>,
        bins: usize,
        lower: i32,
        upper: i32,
    ) -> Result<Vec<i32>> {
        let mut hist = chorus_driver::MemoryBlock::<i32>::alloc(bins.max(1))?;
        if bins == 0 {
            return Err(Error::invalid("histogram_even", "0 bins"));
        }
        self.histogram_even(src, &mut hist, lower, upper)?;
        hist.sync(chorus_driver::Direction::DeviceToHost)?;
        Ok(hist.as_slice().to_vec())
    }
}

/// The arithmetic of [`Npp::arith`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageOp {
    /// `a + b`.
    Add,
    /// `a − b`.
    Sub,
    /// `a · b`.
    Mul,
    /// `a / b` (`f32` only).
    Div,
    /// `|a − b|` (`u8` only).
    AbsDiff,
}

impl ImageOp {
    fn name(self) -> &'static str {
        match self {
            ImageOp::Add => "add",
            ImageOp::Sub => "sub",
            ImageOp::Mul => "mul",
            ImageOp::Div => "div",
            ImageOp::AbsDiff => "abs_diff",
        }
    }
}

/// The bitwise operations of [`Npp::logical`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogicalOp {
    /// `a & b`.
    And,
    /// `a | b`.
    Or,
    /// `a ^ b`.
    Xor,
}

impl LogicalOp {
    fn name(self) -> &'static str {
        match self {
            LogicalOp::And => "and",
            LogicalOp::Or => "or",
            LogicalOp::Xor => "xor",
        }
    }
}

fn size(s: ImageShape) -> sys::NppiSize {
    sys::NppiSize {
        width: s.width as c_int,
        height: s.height as c_int,
    }
}

fn rect(s: ImageShape) -> sys::NppiRect {
    sys::NppiRect {
        x: 0,
        y: 0,
        width: s.width as c_int,
        height: s.height as c_int,
    }
}

/// The ROI of a call from an image of `src_channels` to one of `dst_channels` of the same size.
fn same_size(
    call: &'static str,
    src: ImageShape,
    dst: ImageShape,
    src_channels: usize,
    dst_channels: usize,
) -> Result<sys::NppiSize> {
    if src.channels != src_channels || dst.channels != dst_channels {
        return Err(Error::invalid(
            call,
            format!(
                "it takes {src_channels} channels to {dst_channels}, not {} to {}",
                src.channels, dst.channels
            ),
        ));
    }
    if (src.width, src.height) != (dst.width, dst.height) {
        return Err(Error::invalid(
            call,
            format!(
                "a {} × {} image into a {} × {} one",
                src.width, src.height, dst.width, dst.height
            ),
        ));
    }
    Ok(size(src))
}

/// The ROI of a value-by-value call: the images' rows as `width · channels` single values.
fn elementwise(
    call: &'static str,
    a: ImageShape,
    b: ImageShape,
    dst: ImageShape,
) -> Result<sys::NppiSize> {
    let dims = |s: ImageShape| (s.width, s.height, s.channels);
    if dims(a) != dims(b) || dims(a) != dims(dst) {
        return Err(Error::invalid(
            call,
            format!(
                "images of different shapes: {:?}, {:?} and {:?} (width, height, channels)",
                dims(a),
                dims(b),
                dims(dst)
            ),
        ));
    }
    Ok(sys::NppiSize {
        width: (a.width * a.channels) as c_int,
        height: a.height as c_int,
    })
}

fn unsupported(call: &'static str, kind: PixelKind, channels: usize) -> Error {
    Error::invalid(
        call,
        format!("NPP's {call} is not bound for {channels}-channel {kind:?} images"),
    )
}

fn p8(p: u64) -> *const u8 {
    ptr(p)
}
fn m8(p: u64) -> *mut u8 {
    ptr_mut(p)
}
/// A device address as NPP's pointer to pixels of the type its entry point takes.
fn ptr<T>(p: u64) -> *const T {
    p as usize as *const T
}
/// As [`ptr`], for an output.
fn ptr_mut<T>(p: u64) -> *mut T {
    p as usize as *mut T
}
