//! CUDA arrays, texture objects and surface objects (`cuArray3DCreate`, `cuTexObjectCreate`,
//! `cuSurfObjectCreate`), each freed on drop.
//!
//! A [`CudaArray`] is 1-D, 2-D or 3-D memory laid out for the texture unit, filled and read
//! with [`CudaArray::copy_from_host`] / [`CudaArray::copy_to_host`] (`cuMemcpy2D`/`cuMemcpy3D`).
//! A [`TextureObject`] reads an array, 1-D linear memory or pitched 2-D memory through a
//! [`TextureDesc`] (address, filter and read modes, normalized coordinates, border colour); a
//! [`SurfaceObject`] reads and writes an array made with [`ArrayDesc::surface`]. Objects borrow
//! what they read, so the memory outlives them.
//!
//! Every argument is checked before the driver is called, with the rules CUDA documents (1, 2
//! or 4 channels; wrap and mirror only with normalized coordinates; normalized-float reads only
//! of 8- and 16-bit integers; linear filtering only of float results; linear memory only with
//! point filtering; pitches of at least a row and a multiple of the device's pitch alignment),
//! so a mistake is an [`Error::InvalidArgument`] that says which rule, not an
//! `CUDA_ERROR_INVALID_VALUE`.

use crate::call::{cu, cu_drop, ensure_driver};
use crate::context::{current_device, device_attribute};
use crate::error::{Error, Result};
use crate::loader;
use crate::memory::DeviceMemory;
pub use chorus_image::{
    AddressMode, ChannelFormat, ChannelType, FilterMode, ImageError, ReadMode, TextureDesc,
};
use cudarc::driver::sys::{self, CUarray, CUarray_format, CUdeviceptr};
use std::marker::PhantomData;
use std::sync::OnceLock;

/// The driver entry points this module calls, checked once before the first (a driver too old
/// for one is `Error::SdkNotFound`, never a panic in the bindings).
const TEXTURE_SYMBOLS: &[&str] = &[
    "cuArrayCreate_v2",
    "cuArray3DCreate_v2",
    "cuArrayDestroy",
    "cuMemcpy2D_v2",
    "cuMemcpy3D_v2",
    "cuTexObjectCreate",
    "cuTexObjectDestroy",
    "cuSurfObjectCreate",
    "cuSurfObjectDestroy",
];

/// Loads the driver and checks that it has this module's entry points.
fn ensure_texture_api() -> Result<()> {
    ensure_driver()?;
    static PROBE: OnceLock<loader::Probe> = OnceLock::new();
    let probe = PROBE.get_or_init(|| {
        loader::probe_library("cuda", &loader::driver_dirs(), TEXTURE_SYMBOLS, || {
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            unsafe { sys::is_culib_present() }
        })
    });
    match &probe.missing {
        Some(reason) => Err(Error::SdkNotFound {
            reason: reason.clone(),
        }),
        None => Ok(()),
    }
}

fn invalid<T>(message: impl Into<String>) -> Result<T> {
    Err(Error::InvalidArgument(message.into()))
}

/// The driver's array format of a channel type.
fn array_format(channel: ChannelType) -> CUarray_format {
    match channel {
        ChannelType::U8 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
        ChannelType::I8 => CUarray_format::CU_AD_FORMAT_SIGNED_INT8,
        ChannelType::U16 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
        ChannelType::I16 => CUarray_format::CU_AD_FORMAT_SIGNED_INT16,
        ChannelType::U32 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
        ChannelType::I32 => CUarray_format::CU_AD_FORMAT_SIGNED_INT32,
        ChannelType::F16 => CUarray_format::CU_AD_FORMAT_HALF,
        ChannelType::F32 => CUarray_format::CU_AD_FORMAT_FLOAT,
    }
}

/// A descriptor's broken rule as this crate's error.
fn image_error(e: ImageError) -> Error {
    Error::InvalidArgument(e.into())
}

/// Checks `desc` for a texture of `format` with `dims` dimensions (`linear`: 1-D linear
/// memory), as [`TextureDesc::check`] does, as an [`Error::InvalidArgument`].
fn check_desc(desc: &TextureDesc, format: ChannelFormat, dims: u32, linear: bool) -> Result<()> {
    desc.check(format, dims.min(3) as u8, linear)
        .map_err(image_error)
}

/// The shape and format of a [`CudaArray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArrayDesc {
    /// The element format.
    pub format: ChannelFormat,
    /// Elements per row (at least 1).
    pub width: usize,
    /// Rows; 0 for a 1-D array.
    pub height: usize,
    /// Slices; 0 for a 1-D or 2-D array.
    pub depth: usize,
    /// Whether surfaces may read and write it (`CUDA_ARRAY3D_SURFACE_LDST`).
    pub surface: bool,
}

impl ArrayDesc {
    /// A 1-D (`height == 0`), 2-D (`depth == 0`) or 3-D array of `format`, for textures only.
    pub fn new(format: ChannelFormat, width: usize, height: usize, depth: usize) -> ArrayDesc {
        ArrayDesc {
            format,
            width,
            height,
            depth,
            surface: false,
        }
    }

    /// The same array, readable and writable by surfaces too.
    #[must_use]
    pub fn surface(self) -> ArrayDesc {
        ArrayDesc {
            surface: true,
            ..self
        }
    }

    /// 1, 2 or 3.
    pub fn dims(&self) -> u32 {
        match (self.height, self.depth) {
            (0, _) => 1,
            (_, 0) => 2,
            _ => 3,
        }
    }

    /// Bytes of the whole array, rows packed (what the host copies hold).
    pub fn byte_len(&self) -> usize {
        self.format.element_bytes() * self.width * self.height.max(1) * self.depth.max(1)
    }

    fn check(&self) -> Result<()> {
        if self.width == 0 || (self.height == 0 && self.depth != 0) {
            return invalid(format!(
                "an array of {} × {} × {} elements: the width must be at least 1, and a 3-D array needs a height",
                self.width, self.height, self.depth
            ));
        }
        self.format
            .element_bytes()
            .checked_mul(self.width)
            .and_then(|b| b.checked_mul(self.height.max(1)))
            .and_then(|b| b.checked_mul(self.depth.max(1)))
            .map(|_| ())
            .ok_or_else(|| Error::InvalidArgument("the array's size overflows".into()))
    }
}

/// A CUDA array (`cuArray3DCreate`), destroyed on drop.
#[derive(Debug)]
pub struct CudaArray {
    handle: CUarray,
    desc: ArrayDesc,
}

// SAFETY: the handle is owned by this value; the driver's array calls are thread-safe.
unsafe impl Send for CudaArray {}
// SAFETY: shared access only reads (copies out, texture creation).
unsafe impl Sync for CudaArray {}

impl CudaArray {
    /// Allocates an array of `desc` in the current context (contents unspecified).
    pub fn new(desc: ArrayDesc) -> Result<CudaArray> {
        desc.check()?;
        ensure_texture_api()?;
        let mut handle = std::ptr::null_mut();
        if desc.depth == 0 && !desc.surface {
            let raw = sys::CUDA_ARRAY_DESCRIPTOR {
                Width: desc.width,
                Height: desc.height,
                Format: array_format(desc.format.channel()),
                NumChannels: u32::from(desc.format.channels()),
            };
            cu!(cuArrayCreate_v2(&mut handle, &raw))?;
        } else {
            let raw = sys::CUDA_ARRAY3D_DESCRIPTOR {
                Width: desc.width,
                Height: desc.height,
                Depth: desc.depth,
                Format: array_format(desc.format.channel()),
                NumChannels: u32::from(desc.format.channels()),
                Flags: if desc.surface {
                    sys::CUDA_ARRAY3D_SURFACE_LDST
                } else {
                    0
                },
            };
            cu!(cuArray3DCreate_v2(&mut handle, &raw))?;
        }
        Ok(CudaArray { handle, desc })
    }

    /// Its shape and format.
    pub fn desc(&self) -> &ArrayDesc {
        &self.desc
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUarray {
        self.handle
    }

    /// Copies `src` (exactly [`ArrayDesc::byte_len`] bytes, rows packed) into the array.
    pub fn copy_from_host(&mut self, src: &[u8]) -> Result<()> {
        self.check_host_len(src.len())?;
        let mut copy = self.copy_3d();
        copy.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
        copy.srcHost = src.as_ptr().cast();
        copy.srcPitch = copy.WidthInBytes;
        copy.srcHeight = copy.Height;
        copy.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_ARRAY;
        copy.dstArray = self.handle;
        self.run_copy(&copy)
    }

    /// Copies the array into `dst` (exactly [`ArrayDesc::byte_len`] bytes, rows packed).
    pub fn copy_to_host(&self, dst: &mut [u8]) -> Result<()> {
        self.check_host_len(dst.len())?;
        let mut copy = self.copy_3d();
        copy.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_ARRAY;
        copy.srcArray = self.handle;
        copy.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
        copy.dstHost = dst.as_mut_ptr().cast();
        copy.dstPitch = copy.WidthInBytes;
        copy.dstHeight = copy.Height;
        self.run_copy(&copy)
    }

    fn check_host_len(&self, len: usize) -> Result<()> {
        if len != self.desc.byte_len() {
            return invalid(format!(
                "a host copy of {len} bytes for an array of {} bytes",
                self.desc.byte_len()
            ));
        }
        Ok(())
    }

    /// A copy of the whole array, endpoints still to fill.
    fn copy_3d(&self) -> sys::CUDA_MEMCPY3D {
        sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            srcHost: std::ptr::null(),
            srcDevice: 0,
            srcArray: std::ptr::null_mut(),
            reserved0: std::ptr::null_mut(),
            srcPitch: 0,
            srcHeight: 0,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            dstHost: std::ptr::null_mut(),
            dstDevice: 0,
            dstArray: std::ptr::null_mut(),
            reserved1: std::ptr::null_mut(),
            dstPitch: 0,
            dstHeight: 0,
            WidthInBytes: self.desc.width * self.desc.format.element_bytes(),
            Height: self.desc.height.max(1),
            Depth: self.desc.depth.max(1),
        }
    }

    /// `cuMemcpy2D` for 1-D and 2-D arrays, `cuMemcpy3D` for 3-D ones.
    fn run_copy(&self, c: &sys::CUDA_MEMCPY3D) -> Result<()> {
        if self.desc.depth == 0 {
            let copy = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: c.srcMemoryType,
                srcHost: c.srcHost,
                srcDevice: 0,
                srcArray: c.srcArray,
                srcPitch: c.srcPitch,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: c.dstMemoryType,
                dstHost: c.dstHost,
                dstDevice: 0,
                dstArray: c.dstArray,
                dstPitch: c.dstPitch,
                WidthInBytes: c.WidthInBytes,
                Height: c.Height,
            };
            cu!(cuMemcpy2D_v2(&copy))
        } else {
            cu!(cuMemcpy3D_v2(c))
        }
    }
}

impl Drop for CudaArray {
    fn drop(&mut self) {
        cu_drop!(cuArrayDestroy(self.handle));
    }
}

/// The driver's descriptor of `desc` for a texture of `format` (`CUDA_TEXTURE_DESC`).
fn raw_desc(desc: &TextureDesc, format: ChannelFormat) -> sys::CUDA_TEXTURE_DESC {
    let mode = |m: AddressMode| match m {
        AddressMode::Wrap => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
        AddressMode::Clamp => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        AddressMode::Mirror => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
        AddressMode::Border => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
    };
    let filter = match desc.filter {
        FilterMode::Point => sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
        FilterMode::Linear => sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
    };
    let mut flags = 0;
    // Integer formats read as their type instead of promoted to floats; float and half
    // formats always read as floats.
    if desc.read_mode == ReadMode::ElementType && !format.channel().is_float() {
        flags |= sys::CU_TRSF_READ_AS_INTEGER;
    }
    if desc.normalized_coords {
        flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
    }
    sys::CUDA_TEXTURE_DESC {
        addressMode: desc.address.map(mode),
        filterMode: filter,
        flags,
        maxAnisotropy: 0,
        mipmapFilterMode: sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
        mipmapLevelBias: 0.0,
        minMipmapLevelClamp: 0.0,
        maxMipmapLevelClamp: 0.0,
        borderColor: desc.border_color,
        reserved: [0; 12],
    }
}

/// A resource description with everything zeroed but its type.
fn resource(kind: sys::CUresourcetype) -> sys::CUDA_RESOURCE_DESC {
    sys::CUDA_RESOURCE_DESC {
        resType: kind,
        res: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1 {
            reserved: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_5 { reserved: [0; 32] },
        },
        flags: 0,
    }
}

/// A texture object (`cuTexObjectCreate`), destroyed on drop; it borrows what it reads.
#[derive(Debug)]
pub struct TextureObject<'a> {
    handle: sys::CUtexObject,
    source: PhantomData<&'a ()>,
}

impl<'a> TextureObject<'a> {
    /// A texture reading `array` (1-D, 2-D or 3-D).
    pub fn from_array(array: &'a CudaArray, desc: &TextureDesc) -> Result<TextureObject<'a>> {
        check_desc(desc, array.desc.format, array.desc.dims(), false)?;
        let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
        res.res.array = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 {
            hArray: array.handle,
        };
        // SAFETY: the array lives as long as the texture (borrowed for 'a).
        unsafe { TextureObject::create(&res, array.desc.format, desc) }
    }

    /// A texture reading the first `width` elements of `format` of `memory` with `tex1d-fetch`.
    pub fn from_linear(
        memory: &'a DeviceMemory,
        format: ChannelFormat,
        width: usize,
        desc: &TextureDesc,
    ) -> Result<TextureObject<'a>> {
        check_fits(memory, width.checked_mul(format.element_bytes()))?;
        // SAFETY: `width` elements lie in `memory` (checked), which outlives the texture.
        unsafe { TextureObject::from_linear_raw(memory.ptr(), format, width, desc) }
    }

    /// As [`TextureObject::from_linear`], over a raw device address.
    ///
    /// # Safety
    ///
    /// `ptr` is an integer taken for a device address: `width` elements of `format` from it
    /// must be device memory of the current context that stays allocated, and is not written
    /// while kernels read it, for as long as the texture exists.
    pub unsafe fn from_linear_raw(
        ptr: CUdeviceptr,
        format: ChannelFormat,
        width: usize,
        desc: &TextureDesc,
    ) -> Result<TextureObject<'a>> {
        check_desc(desc, format, 1, true)?;
        if width == 0 {
            return invalid("a linear texture needs at least one element");
        }
        let alignment =
            current_attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)?;
        if alignment > 0 && !ptr.is_multiple_of(alignment as u64) {
            return invalid(format!(
                "a linear texture's address must be aligned to {alignment} bytes (the device's texture alignment), not {ptr:#x}"
            ));
        }
        let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR);
        res.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
            devPtr: ptr,
            format: array_format(format.channel()),
            numChannels: u32::from(format.channels()),
            sizeInBytes: width * format.element_bytes(),
        };
        // SAFETY: the caller vouches for the memory.
        unsafe { TextureObject::create(&res, format, desc) }
    }

    /// A texture reading `height` rows of `width` elements of `format` in `memory`, each row
    /// `pitch` bytes after the previous (`tex2d`).
    pub fn from_pitch2d(
        memory: &'a DeviceMemory,
        format: ChannelFormat,
        width: usize,
        height: usize,
        pitch: usize,
        desc: &TextureDesc,
    ) -> Result<TextureObject<'a>> {
        let last_row = width.checked_mul(format.element_bytes());
        let needed = height
            .checked_sub(1)
            .and_then(|h| h.checked_mul(pitch))
            .and_then(|b| b.checked_add(last_row?));
        check_fits(memory, needed)?;
        // SAFETY: the rows lie in `memory` (checked), which outlives the texture.
        unsafe { TextureObject::from_pitch2d_raw(memory.ptr(), format, width, height, pitch, desc) }
    }

    /// As [`TextureObject::from_pitch2d`], over a raw device address.
    ///
    /// # Safety
    ///
    /// As for [`TextureObject::from_linear_raw`], for the `height` rows of `width` elements at
    /// `ptr + row · pitch`.
    pub unsafe fn from_pitch2d_raw(
        ptr: CUdeviceptr,
        format: ChannelFormat,
        width: usize,
        height: usize,
        pitch: usize,
        desc: &TextureDesc,
    ) -> Result<TextureObject<'a>> {
        check_desc(desc, format, 2, false)?;
        if width == 0 || height == 0 {
            return invalid(format!(
                "a pitched texture of {width} × {height} elements: both must be at least 1"
            ));
        }
        let row = width * format.element_bytes();
        let alignment = current_attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT,
        )?;
        if pitch < row || (alignment > 0 && !pitch.is_multiple_of(alignment as usize)) {
            return invalid(format!(
                "a pitch of {pitch} bytes for rows of {row} bytes: it must hold a row and be a multiple of {alignment} (the device's texture pitch alignment)"
            ));
        }
        let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_PITCH2D);
        res.res.pitch2D = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 {
            devPtr: ptr,
            format: array_format(format.channel()),
            numChannels: u32::from(format.channels()),
            width,
            height,
            pitchInBytes: pitch,
        };
        // SAFETY: the caller vouches for the memory.
        unsafe { TextureObject::create(&res, format, desc) }
    }

    /// # Safety
    ///
    /// The resource `res` describes lives as long as the texture.
    unsafe fn create(
        res: &sys::CUDA_RESOURCE_DESC,
        format: ChannelFormat,
        desc: &TextureDesc,
    ) -> Result<TextureObject<'a>> {
        ensure_texture_api()?;
        let raw = raw_desc(desc, format);
        let mut handle = 0;
        cu!(cuTexObjectCreate(&mut handle, res, &raw, std::ptr::null()))?;
        Ok(TextureObject {
            handle,
            source: PhantomData,
        })
    }

    /// The handle kernels receive (a `texture-object` argument).
    pub fn raw(&self) -> u64 {
        self.handle
    }
}

impl Drop for TextureObject<'_> {
    fn drop(&mut self) {
        cu_drop!(cuTexObjectDestroy(self.handle));
    }
}

/// A surface object (`cuSurfObjectCreate`) over an array, destroyed on drop.
#[derive(Debug)]
pub struct SurfaceObject<'a> {
    handle: sys::CUsurfObject,
    source: PhantomData<&'a ()>,
}

impl<'a> SurfaceObject<'a> {
    /// A surface reading and writing `array`, which must have been made with
    /// [`ArrayDesc::surface`].
    pub fn from_array(array: &'a CudaArray) -> Result<SurfaceObject<'a>> {
        if !array.desc.surface {
            return invalid(
                "a surface needs an array made for surfaces (ArrayDesc::surface, CUDA_ARRAY3D_SURFACE_LDST)",
            );
        }
        ensure_texture_api()?;
        let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
        res.res.array = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 {
            hArray: array.handle,
        };
        let mut handle = 0;
        cu!(cuSurfObjectCreate(&mut handle, &res))?;
        Ok(SurfaceObject {
            handle,
            source: PhantomData,
        })
    }

    /// The handle kernels receive (a `surface-object` argument).
    pub fn raw(&self) -> u64 {
        self.handle
    }
}

impl Drop for SurfaceObject<'_> {
    fn drop(&mut self) {
        cu_drop!(cuSurfObjectDestroy(self.handle));
    }
}

/// An attribute of the current context's device.
fn current_attribute(attribute: sys::CUdevice_attribute) -> Result<i32> {
    device_attribute(current_device()?, attribute)
}

/// An error unless `bytes` (`None`: overflowed) fit in `memory`.
fn check_fits(memory: &DeviceMemory, bytes: Option<usize>) -> Result<()> {
    match bytes {
        Some(b) if b <= memory.len() => Ok(()),
        Some(b) => invalid(format!(
            "the texture reads {b} bytes, but the memory has {}",
            memory.len()
        )),
        None => invalid("the texture's size overflows"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32x1() -> ChannelFormat {
        ChannelFormat::scalar(ChannelType::F32)
    }

    #[test]
    fn descriptors_are_checked_before_the_driver() {
        // The rules are chorus_image's (tested there); here, that they come back as this
        // crate's InvalidArgument and that only the texture's own dimensions count.
        let desc = TextureDesc::default().with_address(AddressMode::Wrap);
        let e = check_desc(&desc, f32x1(), 2, false).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(
            e.to_string().contains("Wrap needs normalized coordinates"),
            "{e}"
        );
        let desc = TextureDesc {
            address: [AddressMode::Clamp, AddressMode::Mirror, AddressMode::Mirror],
            ..TextureDesc::default()
        };
        assert!(check_desc(&desc, f32x1(), 1, false).is_ok());
        let e = check_desc(
            &TextureDesc::default().with_read_mode(ReadMode::NormalizedFloat),
            f32x1(),
            1,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("8- or 16-bit integer"), "{e}");
        let linear = TextureDesc::default().with_filter(FilterMode::Linear);
        let ints = ChannelFormat::scalar(ChannelType::I32);
        assert!(check_desc(&linear, ints, 2, false).is_err());
        assert!(check_desc(&linear, f32x1(), 1, true).is_err());
        assert!(check_desc(&linear, f32x1(), 3, false).is_ok());
    }

    #[test]
    fn descriptors_become_the_drivers() {
        let u8x4 = ChannelFormat::new(ChannelType::U8, 4).unwrap();
        let raw = raw_desc(&TextureDesc::default(), u8x4);
        assert_eq!(raw.flags, sys::CU_TRSF_READ_AS_INTEGER);
        assert_eq!(
            raw.addressMode,
            [sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP; 3]
        );
        let desc = TextureDesc::default()
            .with_read_mode(ReadMode::NormalizedFloat)
            .with_normalized_coords(true)
            .with_filter(FilterMode::Linear)
            .with_address(AddressMode::Mirror)
            .with_border_color([0.25; 4]);
        let raw = raw_desc(&desc, u8x4);
        assert_eq!(raw.flags, sys::CU_TRSF_NORMALIZED_COORDINATES);
        assert_eq!(raw.filterMode, sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR);
        assert_eq!(
            raw.addressMode,
            [sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR; 3]
        );
        assert_eq!(raw.borderColor, [0.25; 4]);
        // Float formats always read as floats.
        let raw = raw_desc(&TextureDesc::default(), f32x1());
        assert_eq!(raw.flags, 0);
        assert_eq!(
            array_format(ChannelType::F16),
            CUarray_format::CU_AD_FORMAT_HALF
        );
        assert_eq!(
            array_format(ChannelType::I16),
            CUarray_format::CU_AD_FORMAT_SIGNED_INT16
        );
    }

    #[test]
    fn array_shapes_are_checked_before_the_driver() {
        assert!(ArrayDesc::new(f32x1(), 0, 4, 0).check().is_err());
        assert!(ArrayDesc::new(f32x1(), 4, 0, 4).check().is_err());
        assert!(ArrayDesc::new(f32x1(), usize::MAX, 2, 0).check().is_err());
        let d = ArrayDesc::new(f32x1(), 4, 3, 2);
        assert_eq!((d.dims(), d.byte_len()), (3, 96));
        assert_eq!(ArrayDesc::new(f32x1(), 4, 0, 0).dims(), 1);
        assert!(!d.surface && d.surface().surface);
    }

    #[test]
    fn without_a_driver_arrays_are_sdk_not_found() {
        if !crate::sdk_not_found() {
            return;
        }
        let e = CudaArray::new(ArrayDesc::new(f32x1(), 4, 4, 0)).unwrap_err();
        assert!(matches!(e, Error::SdkNotFound { .. }), "{e}");
    }
}
