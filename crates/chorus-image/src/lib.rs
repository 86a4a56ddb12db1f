//! What textures and surfaces read, the same for every layer of Chorus: element formats
//! ([`ChannelType`], [`ChannelFormat`]) and sampling descriptors ([`TextureDesc`] with its
//! [`AddressMode`], [`FilterMode`] and [`ReadMode`]), and the rules CUDA sets for them
//! ([`TextureDesc::check`]).
//!
//! One definition for three users: `chorus-driver` turns them into `cuTexObjectCreate`'s
//! descriptors, `chorus-cpu` reproduces their semantics, and the `chorus` facade re-exports
//! them. The crate has no dependencies, so that both the driver layer and the CPU executor
//! (which do not depend on each other) may stand on it. Its one error, [`ImageError`], says
//! which rule a descriptor breaks; each layer wraps it in its own error type.

use std::fmt;

/// A descriptor that breaks one of CUDA's rules; the message says which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageError {
    reason: String,
}

impl ImageError {
    /// An error saying `reason`.
    pub fn new(reason: impl Into<String>) -> ImageError {
        ImageError {
            reason: reason.into(),
        }
    }

    /// What is wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for ImageError {}

impl From<ImageError> for String {
    fn from(e: ImageError) -> String {
        e.reason
    }
}

/// The type of one channel of a texture or surface element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelType {
    /// `unsigned char` (`uint8`).
    U8,
    /// `signed char` (`int8`).
    I8,
    /// `unsigned short` (`uint16`).
    U16,
    /// `short` (`int16`).
    I16,
    /// `unsigned int` (`uint`).
    U32,
    /// `int`.
    I32,
    /// `__half` (`half`); textures read it as `float`.
    F16,
    /// `float`.
    F32,
}

impl ChannelType {
    /// Bytes of one channel.
    pub fn size(self) -> usize {
        match self {
            ChannelType::U8 | ChannelType::I8 => 1,
            ChannelType::U16 | ChannelType::I16 | ChannelType::F16 => 2,
            ChannelType::U32 | ChannelType::I32 | ChannelType::F32 => 4,
        }
    }

    /// True for `F16` and `F32`.
    pub fn is_float(self) -> bool {
        matches!(self, ChannelType::F16 | ChannelType::F32)
    }

    /// True for the formats a normalized-float read accepts (8- and 16-bit integers).
    pub fn normalizes(self) -> bool {
        matches!(
            self,
            ChannelType::U8 | ChannelType::I8 | ChannelType::U16 | ChannelType::I16
        )
    }
}

/// An element format: a channel type and 1, 2 or 4 channels (`float4` is
/// `ChannelFormat::new(ChannelType::F32, 4)`). Made only through [`ChannelFormat::new`] or
/// [`ChannelFormat::scalar`], so every value has a valid channel count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChannelFormat {
    channel: ChannelType,
    channels: u8,
}

impl ChannelFormat {
    /// `channels` channels of `channel`; an error unless `channels` is 1, 2 or 4.
    pub fn new(channel: ChannelType, channels: u8) -> Result<ChannelFormat, ImageError> {
        if !matches!(channels, 1 | 2 | 4) {
            return Err(ImageError::new(format!(
                "an element has 1, 2 or 4 channels, not {channels}"
            )));
        }
        Ok(ChannelFormat { channel, channels })
    }

    /// One channel of `channel`.
    pub fn scalar(channel: ChannelType) -> ChannelFormat {
        ChannelFormat {
            channel,
            channels: 1,
        }
    }

    /// The channel type.
    pub fn channel(self) -> ChannelType {
        self.channel
    }

    /// The number of channels: 1, 2 or 4.
    pub fn channels(self) -> u8 {
        self.channels
    }

    /// Bytes of one element.
    pub fn element_bytes(self) -> usize {
        self.channel.size() * usize::from(self.channels)
    }
}

/// What a texture does with an element index outside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressMode {
    /// Repeat the texture; needs normalized coordinates.
    Wrap,
    /// The edge element.
    Clamp,
    /// Repeat the texture reflected at each edge; needs normalized coordinates.
    Mirror,
    /// The border colour.
    Border,
}

/// How a texture read between elements combines them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// The nearest element.
    Point,
    /// Linear (bilinear, trilinear) interpolation of the neighbours, with 1.8 fixed-point
    /// weights as the hardware's.
    Linear,
}

/// What a texture read of an integer format returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// The element type.
    ElementType,
    /// 8- and 16-bit integers as floats in [0, 1] (unsigned) or [−1, 1] (signed).
    NormalizedFloat,
}

/// How a texture is sampled (CUDA's `cudaTextureDesc` / `CUDA_TEXTURE_DESC`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureDesc {
    /// The address mode of x, y and z.
    pub address: [AddressMode; 3],
    /// Point or linear filtering.
    pub filter: FilterMode,
    /// Element type or normalized float.
    pub read_mode: ReadMode,
    /// Coordinates in [0, 1) instead of [0, N).
    pub normalized_coords: bool,
    /// The colour of [`AddressMode::Border`].
    pub border_color: [f32; 4],
}

impl Default for TextureDesc {
    /// Clamp, point filtering, element-type reads, unnormalized coordinates, a black border.
    fn default() -> TextureDesc {
        TextureDesc {
            address: [AddressMode::Clamp; 3],
            filter: FilterMode::Point,
            read_mode: ReadMode::ElementType,
            normalized_coords: false,
            border_color: [0.0; 4],
        }
    }
}

impl TextureDesc {
    /// Every address mode `mode`, the other fields as given.
    #[must_use]
    pub fn with_address(self, mode: AddressMode) -> TextureDesc {
        TextureDesc {
            address: [mode; 3],
            ..self
        }
    }

    /// Filtering `filter`.
    #[must_use]
    pub fn with_filter(self, filter: FilterMode) -> TextureDesc {
        TextureDesc { filter, ..self }
    }

    /// Read mode `read_mode`.
    #[must_use]
    pub fn with_read_mode(self, read_mode: ReadMode) -> TextureDesc {
        TextureDesc { read_mode, ..self }
    }

    /// Normalized coordinates or not.
    #[must_use]
    pub fn with_normalized_coords(self, normalized_coords: bool) -> TextureDesc {
        TextureDesc {
            normalized_coords,
            ..self
        }
    }

    /// Border colour `color`.
    #[must_use]
    pub fn with_border_color(self, color: [f32; 4]) -> TextureDesc {
        TextureDesc {
            border_color: color,
            ..self
        }
    }

    /// Checks the rules CUDA sets (`cuTexObjectCreate`) for a texture of `format` with `dims`
    /// dimensions (1 to 3); `linear` for 1-D linear memory: wrap and mirror need normalized
    /// coordinates, normalized-float reads an 8- or 16-bit integer format, linear filtering a
    /// float result, and linear memory point filtering with unnormalized coordinates.
    pub fn check(&self, format: ChannelFormat, dims: u8, linear: bool) -> Result<(), ImageError> {
        let dims = usize::from(dims.clamp(1, 3));
        if !self.normalized_coords
            && let Some(mode) = self.address[..dims]
                .iter()
                .find(|m| matches!(m, AddressMode::Wrap | AddressMode::Mirror))
        {
            return Err(ImageError::new(format!(
                "address mode {mode:?} needs normalized coordinates"
            )));
        }
        let channel = format.channel();
        if self.read_mode == ReadMode::NormalizedFloat && !channel.normalizes() {
            return Err(ImageError::new(format!(
                "a normalized-float read needs an 8- or 16-bit integer format, not {channel:?}"
            )));
        }
        if self.filter == FilterMode::Linear
            && !channel.is_float()
            && self.read_mode != ReadMode::NormalizedFloat
        {
            return Err(ImageError::new(format!(
                "linear filtering needs a float result: a float or half format, or a normalized-float read of {channel:?}"
            )));
        }
        if linear && (self.filter != FilterMode::Point || self.normalized_coords) {
            return Err(ImageError::new(
                "a texture over linear memory reads single elements (tex1d-fetch): point filtering and unnormalized coordinates only",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_have_1_2_or_4_channels_and_their_sizes() {
        for n in [1, 2, 4] {
            let f = ChannelFormat::new(ChannelType::U16, n).unwrap();
            assert_eq!(f.channels(), n);
            assert_eq!(f.channel(), ChannelType::U16);
            assert_eq!(f.element_bytes(), 2 * usize::from(n));
        }
        for n in [0, 3, 5, 255] {
            let e = ChannelFormat::new(ChannelType::F32, n).unwrap_err();
            assert_eq!(
                e.reason(),
                format!("an element has 1, 2 or 4 channels, not {n}")
            );
        }
        assert_eq!(ChannelFormat::scalar(ChannelType::F16).element_bytes(), 2);
        assert_eq!(ChannelType::I8.size(), 1);
        assert_eq!(ChannelType::I32.size(), 4);
        assert!(ChannelType::F16.is_float() && !ChannelType::U32.is_float());
        assert!(ChannelType::I16.normalizes() && !ChannelType::U32.normalizes());
        assert!(!ChannelType::F32.normalizes());
    }

    #[test]
    fn the_default_and_the_builders() {
        let d = TextureDesc::default();
        assert_eq!(d.address, [AddressMode::Clamp; 3]);
        assert_eq!(d.filter, FilterMode::Point);
        assert_eq!(d.read_mode, ReadMode::ElementType);
        assert!(!d.normalized_coords);
        assert_eq!(d.border_color, [0.0; 4]);
        let d = d
            .with_address(AddressMode::Border)
            .with_filter(FilterMode::Linear)
            .with_read_mode(ReadMode::NormalizedFloat)
            .with_normalized_coords(true)
            .with_border_color([1.0, 0.5, 0.25, 0.0]);
        assert_eq!(d.address, [AddressMode::Border; 3]);
        assert_eq!(d.filter, FilterMode::Linear);
        assert_eq!(d.read_mode, ReadMode::NormalizedFloat);
        assert!(d.normalized_coords);
        assert_eq!(d.border_color, [1.0, 0.5, 0.25, 0.0]);
    }

    #[test]
    fn cudas_rules_are_checked() {
        let f32x1 = ChannelFormat::scalar(ChannelType::F32);
        let u8x4 = ChannelFormat::new(ChannelType::U8, 4).unwrap();
        let i32x1 = ChannelFormat::scalar(ChannelType::I32);
        let check =
            |d: TextureDesc, f, dims, linear| d.check(f, dims, linear).map_err(String::from);
        assert!(check(TextureDesc::default(), f32x1, 2, false).is_ok());
        let wrap = TextureDesc::default().with_address(AddressMode::Wrap);
        let e = check(wrap, f32x1, 2, false).unwrap_err();
        assert!(e.contains("Wrap needs normalized coordinates"), "{e}");
        assert!(check(wrap.with_normalized_coords(true), f32x1, 2, false).is_ok());
        // Only the texture's own dimensions count: z of a 2-D texture may be anything.
        let mut mirror_z = TextureDesc::default();
        mirror_z.address[2] = AddressMode::Mirror;
        assert!(check(mirror_z, f32x1, 2, false).is_ok());
        let e = check(mirror_z, f32x1, 3, false).unwrap_err();
        assert!(e.contains("Mirror needs normalized coordinates"), "{e}");
        let normalized = TextureDesc::default().with_read_mode(ReadMode::NormalizedFloat);
        assert!(check(normalized, u8x4, 1, false).is_ok());
        let e = check(normalized, i32x1, 1, false).unwrap_err();
        assert!(e.contains("8- or 16-bit integer format, not I32"), "{e}");
        let linear = TextureDesc::default().with_filter(FilterMode::Linear);
        assert!(check(linear, f32x1, 2, false).is_ok());
        assert!(
            check(
                linear.with_read_mode(ReadMode::NormalizedFloat),
                u8x4,
                2,
                false
            )
            .is_ok()
        );
        let e = check(linear, u8x4, 2, false).unwrap_err();
        assert!(e.contains("linear filtering needs a float result"), "{e}");
        let e = check(linear, f32x1, 1, true).unwrap_err();
        assert!(e.contains("linear memory reads single elements"), "{e}");
        let e = check(
            TextureDesc::default().with_normalized_coords(true),
            f32x1,
            1,
            true,
        )
        .unwrap_err();
        assert!(e.contains("linear memory"), "{e}");
        assert!(check(TextureDesc::default(), f32x1, 1, true).is_ok());
    }
}
