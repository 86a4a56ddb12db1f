//! nvJPEG: JPEG decoding (one image or a batch, to interleaved or planar RGB) and encoding
//! (quality, chroma subsampling) on the GPU, into and out of pitched device images
//! ([`Image`], [`ImageView`]).
//!
//! A [`Jpeg`] holds an nvJPEG handle of one backend ([`Backend`]: the default hybrid decoder,
//! the GPU one, or the hardware JPEG engines of A100/H100-class GPUs), a decode state and, made
//! on first use, an encoder state and parameters, all bound to a context and a stream. Decodes
//! and encodes go on that stream; a decode returns once the host part is done, the image is
//! ready when the stream is (`Image::download` waits for it). Corrupt or unsupported input is
//! an [`Error::Status`] (`NVJPEG_STATUS_BAD_JPEG`, `NVJPEG_STATUS_JPEG_NOT_SUPPORTED`), never
//! a panic.
//!
//! The bindings are generated (`nvjpeg/sys.rs`, see `bindgen/regenerate.sh`) and loaded at run
//! time after [`LIBRARY`]'s probe.

pub mod sys;

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::image::{ImageShape, ImageView, ImageViewMut};
use crate::library::{Library, found_by_system_loader};
use chorus_driver::Stream;
use std::ffi::c_int;
use std::sync::OnceLock;

pub use crate::image::Image;

/// The nvJPEG library, probed on first use.
pub static LIBRARY: Library = Library::new("nvJPEG", "nvjpeg", &[], SYMBOLS, || {
    found_by_system_loader("nvjpeg")
});

/// True when nvJPEG can be used.
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

/// Every entry point this module calls.
const SYMBOLS: &[&str] = &[
    "nvjpegGetProperty",
    "nvjpegCreateSimple",
    "nvjpegCreateEx",
    "nvjpegDestroy",
    "nvjpegJpegStateCreate",
    "nvjpegJpegStateDestroy",
    "nvjpegGetImageInfo",
    "nvjpegDecode",
    "nvjpegDecodeBatchedInitialize",
    "nvjpegDecodeBatched",
    "nvjpegEncoderStateCreate",
    "nvjpegEncoderStateDestroy",
    "nvjpegEncoderParamsCreate",
    "nvjpegEncoderParamsDestroy",
    "nvjpegEncoderParamsSetQuality",
    "nvjpegEncoderParamsSetSamplingFactors",
    "nvjpegEncoderParamsSetOptimizedHuffman",
    "nvjpegEncodeImage",
    "nvjpegEncodeRetrieveBitstream",
];

fn loaded() -> Result<&'static sys::Nvjpeg> {
    static LOADED: OnceLock<Result<sys::Nvjpeg>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let file = LIBRARY.open()?;
            let not_found = |why: String| Error::LibraryNotFound {
                library: LIBRARY.display_name,
                searched: why,
            };
            // SAFETY: the file was probed with every symbol of the table.
            unsafe { sys::Nvjpeg::from_library(file) }.map_err(|e| not_found(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// nvJPEG's name and description of a status.
fn status_text(status: sys::nvjpegStatus_t) -> (&'static str, &'static str) {
    match status {
        sys::NVJPEG_STATUS_SUCCESS => ("NVJPEG_STATUS_SUCCESS", "success"),
        sys::NVJPEG_STATUS_NOT_INITIALIZED => (
            "NVJPEG_STATUS_NOT_INITIALIZED",
            "the handle or state was not initialised",
        ),
        sys::NVJPEG_STATUS_INVALID_PARAMETER => {
            ("NVJPEG_STATUS_INVALID_PARAMETER", "a parameter is invalid")
        }
        sys::NVJPEG_STATUS_BAD_JPEG => (
            "NVJPEG_STATUS_BAD_JPEG",
            "the bitstream is not a valid JPEG (corrupt or truncated)",
        ),
        sys::NVJPEG_STATUS_JPEG_NOT_SUPPORTED => (
            "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
            "the JPEG's kind is not supported by nvJPEG (or by this backend)",
        ),
        sys::NVJPEG_STATUS_ALLOCATOR_FAILURE => (
            "NVJPEG_STATUS_ALLOCATOR_FAILURE",
            "a memory allocation failed",
        ),
        sys::NVJPEG_STATUS_EXECUTION_FAILED => (
            "NVJPEG_STATUS_EXECUTION_FAILED",
            "a GPU kernel or copy failed",
        ),
        sys::NVJPEG_STATUS_ARCH_MISMATCH => (
            "NVJPEG_STATUS_ARCH_MISMATCH",
            "the device cannot run this (for the hardware backend: it has no JPEG engine)",
        ),
        sys::NVJPEG_STATUS_INTERNAL_ERROR => ("NVJPEG_STATUS_INTERNAL_ERROR", "an internal error"),
        sys::NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED => (
            "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
            "this call is not supported by the backend",
        ),
        sys::NVJPEG_STATUS_INCOMPLETE_BITSTREAM => (
            "NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
            "the bitstream ends early",
        ),
        _ => ("NVJPEG_STATUS_UNKNOWN", "an unknown status"),
    }
}

/// An nvJPEG status as an error naming `call`.
pub fn check(call: &'static str, status: sys::nvjpegStatus_t) -> Result<()> {
    if status == sys::NVJPEG_STATUS_SUCCESS {
        return Ok(());
    }
    let (name, message) = status_text(status);
    Err(Error::Status {
        library: "nvJPEG",
        call,
        code: status as i64,
        name: name.to_owned(),
        message: message.to_owned(),
    })
}

/// Calls an nvJPEG entry point of the table and checks its status.
macro_rules! jpeg {
    ($lib:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the table is loaded with the symbol (probed); each call site passes live
        // handles and memory it checked against the image's size.
        check(stringify!($f), unsafe { $lib.$f($($arg),*) })
    };
}

/// nvJPEG's version, `(major, minor, patch)` (`nvjpegGetProperty`).
pub fn version() -> Result<(i32, i32, i32)> {
    let lib = loaded()?;
    let mut v = [0; 3];
    for (i, property) in [sys::MAJOR_VERSION, sys::MINOR_VERSION, sys::PATCH_LEVEL]
        .into_iter()
        .enumerate()
    {
        jpeg!(lib, nvjpegGetProperty(property, &mut v[i]))?;
    }
    Ok((v[0], v[1], v[2]))
}

/// The decoder implementation of a [`Jpeg`] handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// nvJPEG's choice (`NVJPEG_BACKEND_DEFAULT`: Huffman decoding on the CPU, the rest on the GPU).
    Default,
    /// Huffman decoding on the GPU too (`NVJPEG_BACKEND_GPU_HYBRID`; best for batches of large
    /// images).
    GpuHybrid,
    /// The GPU's JPEG engines (`NVJPEG_BACKEND_HARDWARE`: A100, H100 and H200 have them); batched
    /// decodes of baseline JPEGs only. `NVJPEG_STATUS_ARCH_MISMATCH` where the GPU has none.
    Hardware,
}

impl Backend {
    fn raw(self) -> sys::nvjpegBackend_t {
        match self {
            Backend::Default => sys::NVJPEG_BACKEND_DEFAULT,
            Backend::GpuHybrid => sys::NVJPEG_BACKEND_GPU_HYBRID,
            Backend::Hardware => sys::NVJPEG_BACKEND_HARDWARE,
        }
    }
}

/// Chroma subsampling of a JPEG (as found by [`Jpeg::image_info`], or asked of the encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subsampling {
    /// 4:4:4 (no subsampling).
    S444,
    /// 4:2:2 (half horizontal chroma).
    S422,
    /// 4:2:0 (half horizontal and vertical chroma).
    S420,
    /// 4:4:0 (half vertical chroma).
    S440,
    /// 4:1:1.
    S411,
    /// 4:1:0.
    S410,
    /// Grey (one component).
    Gray,
    /// Anything else.
    Unknown,
}

impl Subsampling {
    fn raw(self) -> sys::nvjpegChromaSubsampling_t {
        match self {
            Subsampling::S444 => sys::NVJPEG_CSS_444,
            Subsampling::S422 => sys::NVJPEG_CSS_422,
            Subsampling::S420 => sys::NVJPEG_CSS_420,
            Subsampling::S440 => sys::NVJPEG_CSS_440,
            Subsampling::S411 => sys::NVJPEG_CSS_411,
            Subsampling::S410 => sys::NVJPEG_CSS_410,
            Subsampling::Gray => sys::NVJPEG_CSS_GRAY,
            Subsampling::Unknown => sys::NVJPEG_CSS_UNKNOWN,
        }
    }

    fn from_raw(raw: sys::nvjpegChromaSubsampling_t) -> Subsampling {
        match raw {
            sys::NVJPEG_CSS_444 => Subsampling::S444,
            sys::NVJPEG_CSS_422 => Subsampling::S422,
            sys::NVJPEG_CSS_420 => Subsampling::S420,
            sys::NVJPEG_CSS_440 => Subsampling::S440,
            sys::NVJPEG_CSS_411 => Subsampling::S411,
            sys::NVJPEG_CSS_410 => Subsampling::S410,
            sys::NVJPEG_CSS_GRAY => Subsampling::Gray,
            _ => Subsampling::Unknown,
        }
    }
}

/// What [`Jpeg::image_info`] reads from a JPEG's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    /// Colour components (1 for grey, 3 for YCbCr).
    pub components: usize,
    /// The chroma subsampling.
    pub subsampling: Subsampling,
    /// The image's width in pixels (of component 0).
    pub width: usize,
    /// The image's height in pixels (of component 0).
    pub height: usize,
}

/// How decoded pixels are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One 3-channel image of interleaved R, G, B (`NVJPEG_OUTPUT_RGBI`).
    Interleaved,
    /// Three 1-channel images R, G, B (`NVJPEG_OUTPUT_RGB`).
    Planar,
}

impl Layout {
    fn raw(self) -> sys::nvjpegOutputFormat_t {
        match self {
            Layout::Interleaved => sys::NVJPEG_OUTPUT_RGBI,
            Layout::Planar => sys::NVJPEG_OUTPUT_RGB,
        }
    }
}

/// A decoded image: interleaved, or three planes.
#[derive(Debug)]
pub enum Decoded {
    /// A `width × height × 3` image.
    Interleaved(Image<u8>),
    /// The R, G and B planes, each `width × height × 1`.
    Planar([Image<u8>; 3]),
}

impl Decoded {
    /// The pixels as interleaved RGB rows (unpadded), after the context's work finished.
    pub fn download_rgb(&mut self) -> Result<Vec<u8>> {
        match self {
            Decoded::Interleaved(image) => image.download(),
            Decoded::Planar(planes) => {
                let [r, g, b] = planes;
                let (r, g, b) = (r.download()?, g.download()?, b.download()?);
                Ok(r.iter()
                    .zip(&g)
                    .zip(&b)
                    .flat_map(|((&r, &g), &b)| [r, g, b])
                    .collect())
            }
        }
    }

    /// Width and height.
    pub fn size(&self) -> (usize, usize) {
        let image = match self {
            Decoded::Interleaved(image) => image,
            Decoded::Planar(planes) => &planes[0],
        };
        (image.width(), image.height())
    }
}

/// Encoder settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeParams {
    /// 1 to 100.
    pub quality: u8,
    /// The chroma subsampling of the output (4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1, 4:1:0 or grey).
    pub subsampling: Subsampling,
    /// Huffman tables optimised for the image (smaller files, slower encoding).
    pub optimized_huffman: bool,
}

impl Default for EncodeParams {
    fn default() -> Self {
        EncodeParams {
            quality: 90,
            subsampling: Subsampling::S420,
            optimized_huffman: false,
        }
    }
}

/// An nvJPEG handle with its decode state (and encoder, made on first use), bound to a context
/// and a stream.
#[derive(Debug)]
pub struct Jpeg<'s> {
    bound: Bound<'s>,
    lib: &'static sys::Nvjpeg,
    backend: Backend,
    handle: sys::nvjpegHandle_t,
    /// The state of single decodes.
    state: sys::nvjpegJpegState_t,
    /// The state of batched decodes (made on first use; kept apart from single decodes'), and
    /// the (batch size, output format) it was initialised for.
    batch_state: Option<sys::nvjpegJpegState_t>,
    batched: Option<(usize, sys::nvjpegOutputFormat_t)>,
    encoder: Option<(sys::nvjpegEncoderState_t, sys::nvjpegEncoderParams_t)>,
}

impl std::fmt::Debug for sys::Nvjpeg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("nvJPEG table")
    }
}

impl<'s> Jpeg<'s> {
    /// A handle of the default backend on `stream` of the current context.
    pub fn new(stream: &'s Stream) -> Result<Jpeg<'s>> {
        Jpeg::with_backend(stream, Backend::Default)
    }

    /// A handle of `backend` on `stream` of the current context. Errors: nvJPEG missing
    /// ([`Error::LibraryNotFound`]), no context, a stream of another context, a backend the
    /// device lacks (`NVJPEG_STATUS_ARCH_MISMATCH`, `NVJPEG_STATUS_JPEG_NOT_SUPPORTED`).
    pub fn with_backend(stream: &'s Stream, backend: Backend) -> Result<Jpeg<'s>> {
        let lib = loaded()?;
        let bound = Bound::current(stream)?;
        let mut handle = std::ptr::null_mut();
        jpeg!(
            lib,
            nvjpegCreateEx(
                backend.raw(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                &mut handle
            )
        )?;
        let mut state = std::ptr::null_mut();
        if let Err(e) = jpeg!(lib, nvjpegJpegStateCreate(handle, &mut state)) {
            // SAFETY: the handle was just made and is not used again.
            unsafe { lib.nvjpegDestroy(handle) };
            return Err(e);
        }
        Ok(Jpeg {
            bound,
            lib,
            backend,
            handle,
            state,
            batch_state: None,
            batched: None,
            encoder: None,
        })
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The stream the work goes on.
    pub fn stream(&self) -> &'s Stream {
        self.bound.stream()
    }

    /// The components, subsampling and size of a JPEG, from its header. Corrupt data is
    /// `NVJPEG_STATUS_BAD_JPEG`.
    pub fn image_info(&self, data: &[u8]) -> Result<ImageInfo> {
        if data.is_empty() {
            return Err(Error::invalid("image_info", "no JPEG data (0 bytes)"));
        }
        let mut components: c_int = 0;
        let mut subsampling = sys::NVJPEG_CSS_UNKNOWN;
        let (mut widths, mut heights) = ([0 as c_int; 4], [0 as c_int; 4]);
        jpeg!(
            self.lib,
            nvjpegGetImageInfo(
                self.handle,
                data.as_ptr(),
                data.len(),
                &mut components,
                &mut subsampling,
                widths.as_mut_ptr(),
                heights.as_mut_ptr()
            )
        )?;
        if widths[0] <= 0 || heights[0] <= 0 {
            return Err(Error::Status {
                library: "nvJPEG",
                call: "nvjpegGetImageInfo",
                code: sys::NVJPEG_STATUS_BAD_JPEG as i64,
                name: "NVJPEG_STATUS_BAD_JPEG".into(),
                message: format!("the header gives a size of {} × {}", widths[0], heights[0]),
            });
        }
        Ok(ImageInfo {
            components: components.max(0) as usize,
            subsampling: Subsampling::from_raw(subsampling),
            width: widths[0] as usize,
            height: heights[0] as usize,
        })
    }

    /// Decodes one JPEG to RGB in new images of its size (the hardware backend decodes it as a
    /// batch of one, its only mode).
    pub fn decode(&mut self, data: &[u8], layout: Layout) -> Result<Decoded> {
        let info = self.image_info(data)?;
        let mut out = new_output(info, layout)?;
        self.decode_into(data, &mut out)?;
        Ok(out)
    }

    /// Decodes one JPEG into `out`, which must be of its size and of the layout wanted.
    pub fn decode_into(&mut self, data: &[u8], out: &mut Decoded) -> Result<()> {
        let info = self.image_info(data)?;
        let (target, format) = destination(out, info)?;
        if self.backend == Backend::Hardware {
            return self.decode_batched_raw(&[data], &mut [target], format);
        }
        self.bound.enter()?;
        let mut target = target;
        jpeg!(
            self.lib,
            nvjpegDecode(
                self.handle,
                self.state,
                data.as_ptr(),
                data.len(),
                format,
                &mut target,
                self.stream().raw().cast()
            )
        )
    }

    /// Decodes a batch of JPEGs (of any sizes) to RGB in new images, in one batched call.
    pub fn decode_batch(&mut self, images: &[&[u8]], layout: Layout) -> Result<Vec<Decoded>> {
        let mut outs = images
            .iter()
            .map(|data| new_output(self.image_info(data)?, layout))
            .collect::<Result<Vec<_>>>()?;
        self.decode_batch_into(images, &mut outs)?;
        Ok(outs)
    }

    /// Decodes a batch of JPEGs into `outs` (one each, of its size; one layout for all).
    pub fn decode_batch_into(&mut self, images: &[&[u8]], outs: &mut [Decoded]) -> Result<()> {
        if images.is_empty() || images.len() != outs.len() {
            return Err(Error::invalid(
                "decode_batch",
                format!(
                    "{} JPEGs into {} images: at least one, one image each",
                    images.len(),
                    outs.len()
                ),
            ));
        }
        let mut targets = Vec::with_capacity(images.len());
        let mut format = None;
        for (data, out) in images.iter().zip(outs.iter_mut()) {
            let info = self.image_info(data)?;
            let (target, f) = destination(out, info)?;
            if format.is_some_and(|g| g != f) {
                return Err(Error::invalid(
                    "decode_batch",
                    "the outputs mix interleaved and planar images",
                ));
            }
            format = Some(f);
            targets.push(target);
        }
        self.decode_batched_raw(
            images,
            &mut targets,
            format.unwrap_or(sys::NVJPEG_OUTPUT_RGBI),
        )
    }

    fn decode_batched_raw(
        &mut self,
        images: &[&[u8]],
        targets: &mut [sys::nvjpegImage_t],
        format: sys::nvjpegOutputFormat_t,
    ) -> Result<()> {
        self.bound.enter()?;
        let state = match self.batch_state {
            Some(state) => state,
            None => {
                let mut state = std::ptr::null_mut();
                jpeg!(self.lib, nvjpegJpegStateCreate(self.handle, &mut state))?;
                self.batch_state = Some(state);
                state
            }
        };
        let n = images.len();
        if self.batched != Some((n, format)) {
            let batch = c_int::try_from(n)
                .map_err(|_| Error::invalid("decode_batch", format!("{n} images")))?;
            jpeg!(
                self.lib,
                nvjpegDecodeBatchedInitialize(self.handle, state, batch, 1, format)
            )?;
            self.batched = Some((n, format));
        }
        let data: Vec<*const u8> = images.iter().map(|d| d.as_ptr()).collect();
        let lengths: Vec<usize> = images.iter().map(|d| d.len()).collect();
        let result = jpeg!(
            self.lib,
            nvjpegDecodeBatched(
                self.handle,
                state,
                data.as_ptr(),
                lengths.as_ptr(),
                targets.as_mut_ptr(),
                self.stream().raw().cast()
            )
        );
        if result.is_err() {
            // A failed batch can leave the state mid-batch: initialise it again next time.
            self.batched = None;
        }
        result
    }

    fn encoder(&mut self) -> Result<(sys::nvjpegEncoderState_t, sys::nvjpegEncoderParams_t)> {
        if let Some(e) = self.encoder {
            return Ok(e);
        }
        self.bound.enter()?;
        let stream = self.stream().raw().cast();
        let mut state = std::ptr::null_mut();
        jpeg!(
            self.lib,
            nvjpegEncoderStateCreate(self.handle, &mut state, stream)
        )?;
        let mut params = std::ptr::null_mut();
        if let Err(e) = jpeg!(
            self.lib,
            nvjpegEncoderParamsCreate(self.handle, &mut params, stream)
        ) {
            // SAFETY: just made, not used again.
            unsafe { self.lib.nvjpegEncoderStateDestroy(state) };
            return Err(e);
        }
        self.encoder = Some((state, params));
        Ok((state, params))
    }

    /// Encodes an interleaved RGB image (3-channel `u8`) to a JPEG.
    pub fn encode(&mut self, src: ImageView<'_, u8>, params: EncodeParams) -> Result<Vec<u8>> {
        let s = src.shape();
        if s.channels != 3 {
            return Err(Error::invalid(
                "encode",
                format!("interleaved RGB has 3 channels, not {}", s.channels),
            ));
        }
        let mut source = empty_image();
        source.channel[0] = src.ptr() as usize as *mut u8;
        source.pitch[0] = s.pitch;
        self.encode_raw(&source, sys::NVJPEG_INPUT_RGBI, s, params)
    }

    /// Encodes planar RGB (three 1-channel `u8` images of one size) to a JPEG.
    pub fn encode_planar(
        &mut self,
        planes: [ImageView<'_, u8>; 3],
        params: EncodeParams,
    ) -> Result<Vec<u8>> {
        let s = planes[0].shape();
        for p in &planes {
            let q = p.shape();
            if q.channels != 1 || (q.width, q.height) != (s.width, s.height) {
                return Err(Error::invalid(
                    "encode_planar",
                    format!(
                        "planes of 1 channel and one size: {} × {} × {} and {} × {} × {}",
                        s.width, s.height, s.channels, q.width, q.height, q.channels
                    ),
                ));
            }
        }
        let mut source = empty_image();
        for (i, p) in planes.iter().enumerate() {
            source.channel[i] = p.ptr() as usize as *mut u8;
            source.pitch[i] = p.shape().pitch;
        }
        self.encode_raw(&source, sys::NVJPEG_INPUT_RGB, s, params)
    }

    fn encode_raw(
        &mut self,
        source: &sys::nvjpegImage_t,
        format: sys::nvjpegInputFormat_t,
        shape: ImageShape,
        params: EncodeParams,
    ) -> Result<Vec<u8>> {
        if !(1..=100).contains(&params.quality) || params.subsampling == Subsampling::Unknown {
            return Err(Error::invalid(
                "encode",
                format!(
                    "quality {} (1 to 100) and subsampling {:?} (a known one)",
                    params.quality, params.subsampling
                ),
            ));
        }
        let (state, enc) = self.encoder()?;
        self.bound.enter()?;
        let stream = self.stream().raw().cast();
        let lib = self.lib;
        jpeg!(
            lib,
            nvjpegEncoderParamsSetQuality(enc, c_int::from(params.quality), stream)
        )?;
        jpeg!(
            lib,
            nvjpegEncoderParamsSetSamplingFactors(enc, params.subsampling.raw(), stream)
        )?;
        jpeg!(
            lib,
            nvjpegEncoderParamsSetOptimizedHuffman(
                enc,
                c_int::from(params.optimized_huffman),
                stream
            )
        )?;
        jpeg!(
            lib,
            nvjpegEncodeImage(
                self.handle,
                state,
                enc,
                source,
                format,
                shape.width as c_int,
                shape.height as c_int,
                stream
            )
        )?;
        let mut length = 0usize;
        jpeg!(
            lib,
            nvjpegEncodeRetrieveBitstream(
                self.handle,
                state,
                std::ptr::null_mut(),
                &mut length,
                stream
            )
        )?;
        self.stream().synchronize()?;
        let mut out = vec![0u8; length];
        jpeg!(
            lib,
            nvjpegEncodeRetrieveBitstream(
                self.handle,
                state,
                out.as_mut_ptr(),
                &mut length,
                stream
            )
        )?;
        out.truncate(length);
        Ok(out)
    }
}

impl Drop for Jpeg<'_> {
    fn drop(&mut self) {
        // Pending work may still use the states; the context may be gone (then nothing helps).
        if self.bound.enter().is_err() {
            return;
        }
        let _ = self.stream().synchronize();
        // SAFETY: the handles were made by this handle and are not used after this.
        unsafe {
            if let Some((state, params)) = self.encoder.take() {
                self.lib.nvjpegEncoderParamsDestroy(params);
                self.lib.nvjpegEncoderStateDestroy(state);
            }
            if let Some(state) = self.batch_state.take() {
                self.lib.nvjpegJpegStateDestroy(state);
            }
            self.lib.nvjpegJpegStateDestroy(self.state);
            self.lib.nvjpegDestroy(self.handle);
        }
    }
}

fn empty_image() -> sys::nvjpegImage_t {
    sys::nvjpegImage_t {
        channel: [std::ptr::null_mut(); 4],
        pitch: [0; 4],
    }
}

fn new_output(info: ImageInfo, layout: Layout) -> Result<Decoded> {
    Ok(match layout {
        Layout::Interleaved => Decoded::Interleaved(Image::new(info.width, info.height, 3)?),
        Layout::Planar => Decoded::Planar([
            Image::new(info.width, info.height, 1)?,
            Image::new(info.width, info.height, 1)?,
            Image::new(info.width, info.height, 1)?,
        ]),
    })
}

/// The `nvjpegImage_t` and output format of `out`, after checking it has the JPEG's size.
fn destination(
    out: &mut Decoded,
    info: ImageInfo,
) -> Result<(sys::nvjpegImage_t, sys::nvjpegOutputFormat_t)> {
    let check = |view: &ImageViewMut<'_, u8>, channels: usize| -> Result<()> {
        let s = view.shape();
        if (s.width, s.height, s.channels) != (info.width, info.height, channels) {
            return Err(Error::invalid(
                "decode",
                format!(
                    "a {} × {} JPEG into an image of {} × {} × {} (it needs {channels} channels)",
                    info.width, info.height, s.width, s.height, s.channels
                ),
            ));
        }
        Ok(())
    };
    let mut target = empty_image();
    let layout = match out {
        Decoded::Interleaved(image) => {
            let view = image.view_mut();
            check(&view, 3)?;
            target.channel[0] = view.ptr() as usize as *mut u8;
            target.pitch[0] = view.shape().pitch;
            Layout::Interleaved
        }
        Decoded::Planar(planes) => {
            for (i, plane) in planes.iter_mut().enumerate() {
                let view = plane.view_mut();
                check(&view, 1)?;
                target.channel[i] = view.ptr() as usize as *mut u8;
                target.pitch[i] = view.shape().pitch;
            }
            Layout::Planar
        }
    };
    Ok((target, layout.raw()))
}
