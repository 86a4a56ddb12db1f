//! What textures and surfaces read: element formats and sampling descriptors, the same for every
//! backend (the CUDA backend passes them to `cuTexObjectCreate`, the CPU executor reproduces
//! them).

use crate::error::{Error, Result};

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
    /// `half`; textures read it as `float`.
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
}

/// An element format: a channel type and 1, 2 or 4 channels (`float4` is
/// `ChannelFormat::new(ChannelType::F32, 4)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChannelFormat {
    channel: ChannelType,
    channels: u8,
}

impl ChannelFormat {
    /// `channels` channels of `channel`; [`Error::Texture`] unless `channels` is 1, 2 or 4.
    pub fn new(channel: ChannelType, channels: u8) -> Result<ChannelFormat> {
        if !matches!(channels, 1 | 2 | 4) {
            return Err(Error::Texture {
                reason: format!("an element has 1, 2 or 4 channels, not {channels}"),
            });
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

    /// The number of channels.
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
    /// Linear interpolation of the neighbours, with 1.8 fixed-point weights as the hardware's.
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

/// How a texture is sampled.
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
}

/// The image a texture reads, as the facade hands it to a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ImageShape {
    /// An array of `extent` elements (`[w, 0, 0]` 1-D, `[w, h, 0]` 2-D, `[w, h, d]` 3-D).
    Array { extent: [usize; 3] },
    /// `width` elements of linear memory.
    Linear { width: usize },
    /// `height` rows of `width` elements, `pitch` bytes apart.
    Pitch2D {
        width: usize,
        height: usize,
        pitch: usize,
    },
}
