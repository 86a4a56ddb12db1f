//! Texture and surface objects on the CPU, with CUDA's semantics (CUDA C++ Programming Guide,
//! "Texture and Surface Memory" and the appendix "Texture Fetching").
//!
//! An image is a [`DeviceBuffer`](crate::DeviceBuffer) read through an [`ImageLayout`]: a CUDA
//! array (1-D, 2-D or 3-D, rows packed), 1-D linear memory, or pitched 2-D memory. A
//! [`TextureObject`] adds a [`TextureDesc`]; a [`SurfaceObject`] reads and writes raw elements.
//! The element formats and descriptors are `chorus-image`'s (one definition for the CUDA
//! driver layer, this executor and the facade), re-exported here.
//! Both are passed to a launch with the buffer that holds the image
//! ([`crate::KernelArg::Texture`], [`crate::KernelArg::Surface`]); the kernel receives a 64-bit
//! handle, as on a GPU, which the executor resolves to the objects of that launch.
//!
//! Texture reads, as the hardware does them:
//!
//! * Coordinates: with normalized coordinates `x ∈ [0, 1)` spans the `N` texels (`u = x · N`);
//!   otherwise `u = x`. Point filtering reads texel `⌊u⌋`. Linear filtering reads texels
//!   `i = ⌊u − 0.5⌋` and `i + 1` with weight `α = frac(u − 0.5)`, and `α` is rounded to 1.8
//!   fixed point (8 fractional bits, rounded to nearest), as the hardware stores it. Measured
//!   against an H200: 1-D filtering agrees to 6e-8 (three quarters of the values bit for bit:
//!   the order of the products differs); in 2-D and 3-D a weight can differ by one 1/256 step,
//!   so results agree within 1/256 of the texels' differences.
//! * A 1-D texture is read as a 2-D texture of height 1 at `y = 0`, as the texture unit does:
//!   linear filtering blends the row "above" half and half with the texels, which only shows
//!   under border addressing in y (half the border colour).
//! * Addressing of a texel index outside `[0, N)`: clamp to the edge; border (the border
//!   colour); wrap (`i mod N`) and mirror (reflected at each edge), which CUDA allows only with
//!   normalized coordinates ([`TextureObject::new`] refuses them otherwise). With wrap and
//!   mirror the coordinate itself is first folded into `[0, 1)` (mirror: reflected on odd
//!   periods).
//! * Read mode: the element type, or, for 8- and 16-bit integer formats, normalized float
//!   (`u8/255`, `i8/127` clamped at −1, `u16/65535`, `i16/32767` clamped at −1). Half formats
//!   read as float. Linear filtering needs a float result (a float or half format, or a
//!   normalized-float read).
//! * A kernel may read fewer components than the format has (the first ones), never more; a
//!   float result from an integer element read, or an integer result from a float read, faults.
//! * `tex1d-fetch` reads element `i` of a linear texture, with no filtering; outside the
//!   texture it reads zero. The other reads need an array or pitched texture of at least their
//!   dimensions; a read of the wrong kind faults (on a GPU it is undefined).
//!
//! Surface accesses take `x` in bytes: it must be a multiple of the element size, and the
//! kernel's type must be exactly one element (CUDA leaves other sizes undefined). Outside the
//! surface, the boundary mode decides: `:trap` faults, `:clamp` moves the access to the nearest
//! element, `:zero` reads zero and drops writes.

use crate::error::Error;
use crate::memory::Region;
pub use chorus_image::{
    AddressMode, ChannelFormat, ChannelType, FilterMode, ImageError, ReadMode, TextureDesc,
};
use chorus_lang::ir::SurfaceBoundary;
use std::sync::atomic::{AtomicU64, Ordering};

/// A descriptor's broken rule as this crate's error.
fn image_error(e: ImageError) -> Error {
    Error::Texture(e.into())
}

impl From<ImageError> for Error {
    fn from(e: ImageError) -> Error {
        image_error(e)
    }
}

/// Where the texels of an image lie in a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageLayout {
    format: ChannelFormat,
    /// 1, 2 or 3.
    dims: u8,
    extent: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
    /// Linear memory (read by `tex1d-fetch` only).
    linear: bool,
}

impl ImageLayout {
    /// A CUDA array of `width` × `height` × `depth` texels, rows packed: `height == 0` makes
    /// it 1-D and `depth == 0` 2-D, as `cuArray3DCreate` reads them.
    pub fn array(
        format: ChannelFormat,
        width: usize,
        height: usize,
        depth: usize,
    ) -> Result<ImageLayout, Error> {
        if width == 0 || (height == 0 && depth != 0) {
            return Err(Error::Texture(format!(
                "an array of {width} × {height} × {depth} texels: the width must be at least 1, and a 3-D array needs a height"
            )));
        }
        let dims = if height == 0 {
            1
        } else if depth == 0 {
            2
        } else {
            3
        };
        let row_pitch = width
            .checked_mul(format.element_bytes())
            .ok_or_else(|| Error::Texture("the array's size overflows".into()))?;
        let slice_pitch = row_pitch
            .checked_mul(height.max(1))
            .ok_or_else(|| Error::Texture("the array's size overflows".into()))?;
        slice_pitch
            .checked_mul(depth.max(1))
            .ok_or_else(|| Error::Texture("the array's size overflows".into()))?;
        Ok(ImageLayout {
            format,
            dims,
            extent: [width, height.max(1), depth.max(1)],
            row_pitch,
            slice_pitch,
            linear: false,
        })
    }

    /// `width` texels of linear memory (read with `tex1d-fetch`).
    pub fn linear(format: ChannelFormat, width: usize) -> Result<ImageLayout, Error> {
        let mut layout = ImageLayout::array(format, width, 0, 0)?;
        layout.linear = true;
        Ok(layout)
    }

    /// `height` rows of `width` texels, each row `row_pitch` bytes after the previous.
    pub fn pitch2d(
        format: ChannelFormat,
        width: usize,
        height: usize,
        row_pitch: usize,
    ) -> Result<ImageLayout, Error> {
        if height == 0 {
            return Err(Error::Texture(
                "a pitched 2-D image needs a height of at least 1".into(),
            ));
        }
        let mut layout = ImageLayout::array(format, width, height, 0)?;
        if row_pitch < layout.row_pitch || !row_pitch.is_multiple_of(format.element_bytes()) {
            return Err(Error::Texture(format!(
                "a row pitch of {row_pitch} bytes for rows of {} bytes: it must hold a row and be a multiple of the {}-byte texel",
                layout.row_pitch,
                format.element_bytes()
            )));
        }
        layout.row_pitch = row_pitch;
        layout.slice_pitch = row_pitch
            .checked_mul(height)
            .ok_or_else(|| Error::Texture("the image's size overflows".into()))?;
        Ok(layout)
    }

    /// The texel format.
    pub fn format(&self) -> ChannelFormat {
        self.format
    }

    /// 1, 2 or 3.
    pub fn dims(&self) -> u8 {
        self.dims
    }

    /// Width, height and depth in texels (1 for the dimensions it lacks).
    pub fn extent(&self) -> [usize; 3] {
        self.extent
    }

    /// Bytes from one row to the next.
    pub fn row_pitch(&self) -> usize {
        self.row_pitch
    }

    /// True for 1-D linear memory.
    pub fn is_linear(&self) -> bool {
        self.linear
    }

    /// The bytes a buffer needs to hold the image (the last row need not be padded).
    pub fn bytes(&self) -> usize {
        let [w, h, d] = self.extent;
        (d - 1) * self.slice_pitch + (h - 1) * self.row_pitch + w * self.format.element_bytes()
    }

    fn offset(&self, x: usize, y: usize, z: usize) -> usize {
        z * self.slice_pitch + y * self.row_pitch + x * self.format.element_bytes()
    }
}

/// Handles are unique per process, tagged so that an integer a kernel made up is unlikely to
/// be one.
fn next_handle() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    0x7e57_0000_0000_0000 | NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A texture object: an image and how it is sampled.
#[derive(Clone, Debug, PartialEq)]
pub struct TextureObject {
    handle: u64,
    image: ImageLayout,
    sampler: TextureDesc,
}

impl TextureObject {
    /// A texture over `image`, checked as CUDA checks `cudaCreateTextureObject`: wrap and
    /// mirror need normalized coordinates, normalized-float reads need an 8- or 16-bit integer
    /// format, linear filtering a float result, and linear memory point filtering with
    /// unnormalized coordinates.
    pub fn new(image: ImageLayout, sampler: TextureDesc) -> Result<TextureObject, Error> {
        sampler
            .check(image.format, image.dims, image.linear)
            .map_err(image_error)?;
        Ok(TextureObject {
            handle: next_handle(),
            image,
            sampler,
        })
    }

    /// The 64-bit value the kernel receives.
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// The image.
    pub fn image(&self) -> &ImageLayout {
        &self.image
    }

    /// The sampler.
    pub fn sampler(&self) -> &TextureDesc {
        &self.sampler
    }
}

/// A surface object: an array read and written by element.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceObject {
    handle: u64,
    image: ImageLayout,
}

impl SurfaceObject {
    /// A surface over `image`, which must be an array (as `cudaCreateSurfaceObject` needs).
    pub fn new(image: ImageLayout) -> Result<SurfaceObject, Error> {
        if image.linear {
            return Err(Error::Texture(
                "a surface needs an array, not linear memory".into(),
            ));
        }
        Ok(SurfaceObject {
            handle: next_handle(),
            image,
        })
    }

    /// The 64-bit value the kernel receives.
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// The image.
    pub fn image(&self) -> &ImageLayout {
        &self.image
    }
}

/// A texture or surface of a launch, with the memory of its image.
#[derive(Clone, Copy)]
pub(crate) enum Bound<'a> {
    Texture(&'a TextureObject, Region<'a>),
    Surface(&'a SurfaceObject, Region<'a>),
}

impl Bound<'_> {
    pub(crate) fn handle(&self) -> u64 {
        match self {
            Bound::Texture(t, _) => t.handle,
            Bound::Surface(s, _) => s.handle,
        }
    }
}

/// A component of what a kernel reads or writes: its scalar kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    /// `float`.
    Float,
    /// An integer of `bytes` bytes, signed or not.
    Int { bytes: u8, signed: bool },
}

impl Component {
    /// Bytes of one component.
    pub(crate) fn bytes(self) -> usize {
        match self {
            Component::Float => 4,
            Component::Int { bytes, .. } => usize::from(bytes),
        }
    }
}

/// A texel's channels: floats, or integers (exactly, widened to 64 bits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Texel {
    Float([f32; 4]),
    Int([i64; 4]),
}

/// Reads the texel at `(x, y, z)` (in range).
fn load_texel(image: &ImageLayout, region: &Region<'_>, x: usize, y: usize, z: usize) -> Texel {
    let format = image.format;
    let mut bytes = [0u8; 16];
    let n = format.element_bytes();
    region.read_bytes(image.offset(x, y, z), &mut bytes[..n]);
    let size = format.channel().size();
    let channel = |c: usize| -> u64 {
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(&bytes[c * size..(c + 1) * size]);
        u64::from_le_bytes(raw)
    };
    let count = usize::from(format.channels());
    match format.channel() {
        ChannelType::F32 => Texel::Float(std::array::from_fn(|c| {
            if c < count {
                f32::from_bits(channel(c) as u32)
            } else {
                0.0
            }
        })),
        ChannelType::F16 => Texel::Float(std::array::from_fn(|c| {
            if c < count {
                half::f16::from_bits(channel(c) as u16).to_f32()
            } else {
                0.0
            }
        })),
        t => Texel::Int(std::array::from_fn(|c| {
            if c >= count {
                return 0;
            }
            let raw = channel(c);
            match t {
                ChannelType::I8 => raw as u8 as i8 as i64,
                ChannelType::I16 => raw as u16 as i16 as i64,
                ChannelType::I32 => raw as u32 as i32 as i64,
                _ => raw as i64,
            }
        })),
    }
}

/// The texel in the sampler's read mode: normalized floats where asked.
fn read_texel(texture: &TextureObject, region: &Region<'_>, index: [Option<usize>; 3]) -> Texel {
    let sampler = &texture.sampler;
    let [Some(x), Some(y), Some(z)] = index else {
        // Outside, with border addressing.
        return match texel_class(texture) {
            TexelClass::Float => Texel::Float(sampler.border_color),
            TexelClass::Int => Texel::Int(sampler.border_color.map(|c| c as i64)),
        };
    };
    let texel = load_texel(&texture.image, region, x, y, z);
    match (texel, sampler.read_mode) {
        (Texel::Int(values), ReadMode::NormalizedFloat) => {
            let scale = match texture.image.format.channel() {
                ChannelType::U8 => 255.0,
                ChannelType::I8 => 127.0,
                ChannelType::U16 => 65535.0,
                _ => 32767.0,
            };
            Texel::Float(values.map(|v| (v as f32 / scale).max(-1.0)))
        }
        _ => texel,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TexelClass {
    Float,
    Int,
}

fn texel_class(texture: &TextureObject) -> TexelClass {
    if texture.image.format.channel().is_float()
        || texture.sampler.read_mode == ReadMode::NormalizedFloat
    {
        TexelClass::Float
    } else {
        TexelClass::Int
    }
}

/// Texel index `i` of a dimension of `n` texels under `mode`; `None` for the border.
fn address(i: i64, n: usize, mode: AddressMode) -> Option<usize> {
    let n = n as i64;
    if (0..n).contains(&i) {
        return Some(i as usize);
    }
    match mode {
        AddressMode::Clamp => Some(i.clamp(0, n - 1) as usize),
        AddressMode::Border => None,
        AddressMode::Wrap => Some(i.rem_euclid(n) as usize),
        AddressMode::Mirror => {
            let m = i.rem_euclid(2 * n);
            Some(if m >= n { 2 * n - 1 - m } else { m } as usize)
        }
    }
}

/// A coordinate folded into [0, 1) by wrap or mirror addressing (unchanged otherwise).
fn fold(x: f32, mode: AddressMode) -> f32 {
    match mode {
        AddressMode::Wrap => x - x.floor(),
        AddressMode::Mirror => {
            let period = x.floor();
            let frac = x - period;
            if (period as i64).rem_euclid(2) == 1 {
                1.0 - frac
            } else {
                frac
            }
        }
        _ => x,
    }
}

/// The interpolation weight `frac` in 1.8 fixed point, as the texture unit stores it.
fn fixed_weight(frac: f32) -> f32 {
    (frac * 256.0).round() / 256.0
}

/// A filtered read of `texture` at `coords` (its first `dims` used).
pub(crate) fn sample(
    texture: &TextureObject,
    region: &Region<'_>,
    dims: u8,
    coords: [f32; 3],
) -> Result<Texel, String> {
    let image = &texture.image;
    if image.linear {
        return Err(format!(
            "a {dims}-D texture read of a texture over linear memory (use tex1d-fetch)"
        ));
    }
    if dims != image.dims {
        return Err(format!(
            "a {dims}-D texture read of a {}-D texture",
            image.dims
        ));
    }
    let sampler = &texture.sampler;
    // The texture unit reads a 1-D texture as a 2-D one of height 1 at y = 0, so linear
    // filtering blends row −1 (the edge row, or the border colour under border addressing)
    // half and half with row 0: measured on an H200, and reproduced here.
    let (d, coords) = if dims == 1 {
        (2, [coords[0], 0.0, 0.0])
    } else {
        (usize::from(dims), coords)
    };
    // Per dimension: the first texel index and the weight of the next one.
    let mut first = [0i64; 3];
    let mut weight = [0f32; 3];
    for k in 0..d {
        let mode = sampler.address[k];
        let n = image.extent[k];
        let u = if sampler.normalized_coords {
            fold(coords[k], mode) * n as f32
        } else {
            coords[k]
        };
        match sampler.filter {
            FilterMode::Point => first[k] = floor_index(u),
            FilterMode::Linear => {
                let shifted = u - 0.5;
                let base = shifted.floor();
                first[k] = floor_index(shifted);
                weight[k] = fixed_weight(shifted - base);
            }
        }
    }
    let texel_at = |offsets: [i64; 3]| -> Texel {
        let mut index = [Some(0usize); 3];
        for k in 0..d {
            index[k] = address(first[k] + offsets[k], image.extent[k], sampler.address[k]);
        }
        read_texel(texture, region, index)
    };
    if sampler.filter == FilterMode::Point {
        return Ok(texel_at([0; 3]));
    }
    // Linear: the 2^d neighbours, weighted, accumulated in f32.
    let mut sum = [0f32; 4];
    for corner in 0..(1usize << d) {
        let offsets: [i64; 3] = std::array::from_fn(|k| ((corner >> k) & 1) as i64);
        let mut w = 1f32;
        for k in 0..d {
            w *= if offsets[k] == 1 {
                weight[k]
            } else {
                1.0 - weight[k]
            };
        }
        let Texel::Float(values) = texel_at(offsets) else {
            return Err("linear filtering of integer texels".into());
        };
        for c in 0..4 {
            sum[c] += w * values[c];
        }
    }
    Ok(Texel::Float(sum))
}

/// `⌊u⌋` as an index (NaN reads texel 0; huge values saturate, which every mode maps inside).
fn floor_index(u: f32) -> i64 {
    u.floor() as i64
}

/// Element `i` of a texture over linear memory; zero outside it.
pub(crate) fn fetch(texture: &TextureObject, region: &Region<'_>, i: i64) -> Result<Texel, String> {
    let image = &texture.image;
    if !image.linear {
        return Err("tex1d-fetch of a texture that is not over linear memory".into());
    }
    if !(0..image.extent[0] as i64).contains(&i) {
        return Ok(match texel_class(texture) {
            TexelClass::Float => Texel::Float([0.0; 4]),
            TexelClass::Int => Texel::Int([0; 4]),
        });
    }
    Ok(read_texel(
        texture,
        region,
        [Some(i as usize), Some(0), Some(0)],
    ))
}

/// The canonical register bits of the first `count` components of `texel`, read as
/// `component`.
pub(crate) fn texel_bits(
    texture: &TextureObject,
    texel: Texel,
    component: Component,
    count: usize,
) -> Result<[u64; 4], String> {
    let channels = usize::from(texture.image.format.channels());
    if count > channels {
        return Err(format!(
            "a read of {count} components from a texture of {channels} channel(s)"
        ));
    }
    match (texel, component) {
        (Texel::Float(v), Component::Float) => Ok(v.map(|x| x.to_bits() as u64)),
        (Texel::Int(v), Component::Int { bytes, signed }) => Ok(v.map(|x| {
            let bits = 8 * u32::from(bytes);
            let truncated = (x as u64) & (u64::MAX >> (64 - bits));
            if signed {
                ((truncated << (64 - bits)) as i64 >> (64 - bits)) as u64
            } else {
                truncated
            }
        })),
        (Texel::Float(_), Component::Int { .. }) => Err(
            "an integer read of a texture that returns floats (a float or half format, or a normalized-float read)".into(),
        ),
        (Texel::Int(_), Component::Float) => Err(
            "a float read of an integer texture read as its element type (use a normalized-float read)".into(),
        ),
    }
}

/// Where a surface access lands: the byte offset of its element, or `None` for an access
/// the `:zero` mode drops.
pub(crate) fn surface_offset(
    surface: &SurfaceObject,
    dims: u8,
    coords: [i64; 3],
    bytes: usize,
    boundary: SurfaceBoundary,
) -> Result<Option<usize>, String> {
    let image = &surface.image;
    if dims != image.dims {
        return Err(format!(
            "a {dims}-D surface access of a {}-D surface",
            image.dims
        ));
    }
    let element = image.format.element_bytes();
    if bytes != element {
        return Err(format!(
            "a surface access of {bytes} bytes to {element}-byte elements"
        ));
    }
    let d = usize::from(dims);
    let [width, ..] = image.extent;
    let row_bytes = (width * element) as i64;
    let inside = (0..=row_bytes - bytes as i64).contains(&coords[0])
        && (1..d).all(|k| (0..image.extent[k] as i64).contains(&coords[k]));
    let mut index = [0usize; 3];
    if inside {
        if coords[0] % element as i64 != 0 {
            return Err(format!(
                "a surface access at byte x = {}, not a multiple of the {element}-byte element",
                coords[0]
            ));
        }
        index[0] = (coords[0] / element as i64) as usize;
        for k in 1..d {
            index[k] = coords[k] as usize;
        }
    } else {
        match boundary {
            SurfaceBoundary::Zero => return Ok(None),
            SurfaceBoundary::Trap => {
                return Err(format!(
                    "a surface access outside the surface at (x = {} bytes{}{}) with :trap",
                    coords[0],
                    if d > 1 {
                        format!(", y = {}", coords[1])
                    } else {
                        String::new()
                    },
                    if d > 2 {
                        format!(", z = {}", coords[2])
                    } else {
                        String::new()
                    }
                ));
            }
            SurfaceBoundary::Clamp => {
                index[0] = coords[0]
                    .div_euclid(element as i64)
                    .clamp(0, width as i64 - 1) as usize;
                for k in 1..d {
                    index[k] = coords[k].clamp(0, image.extent[k] as i64 - 1) as usize;
                }
            }
        }
    }
    Ok(Some(image.offset(index[0], index[1], index[2])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addressing_follows_cuda() {
        assert_eq!(address(-1, 4, AddressMode::Clamp), Some(0));
        assert_eq!(address(4, 4, AddressMode::Clamp), Some(3));
        assert_eq!(address(-1, 4, AddressMode::Border), None);
        assert_eq!(address(4, 4, AddressMode::Wrap), Some(0));
        assert_eq!(address(-1, 4, AddressMode::Wrap), Some(3));
        assert_eq!(address(4, 4, AddressMode::Mirror), Some(3));
        assert_eq!(address(-1, 4, AddressMode::Mirror), Some(0));
        assert_eq!(address(9, 4, AddressMode::Mirror), Some(1));
        assert_eq!(fold(1.25, AddressMode::Wrap), 0.25);
        assert_eq!(fold(1.25, AddressMode::Mirror), 0.75);
        assert_eq!(fold(-0.25, AddressMode::Mirror), 0.25);
    }

    #[test]
    fn weights_have_eight_fractional_bits() {
        assert_eq!(fixed_weight(0.5), 0.5);
        assert_eq!(fixed_weight(0.3), 77.0 / 256.0);
        assert_eq!(fixed_weight(0.999), 1.0);
    }
}
