//! What textures and surfaces read: element formats and sampling descriptors, the same for every
//! backend. They are `chorus-image`'s, the one definition that `chorus-driver` (which passes
//! them to `cuTexObjectCreate`) and `chorus-cpu` (which reproduces them) use too, so the
//! backends take them as they are.

use crate::error::Error;

pub use chorus_image::{
    AddressMode, ChannelFormat, ChannelType, FilterMode, ImageError, ReadMode, TextureDesc,
};

impl From<ImageError> for Error {
    fn from(e: ImageError) -> Error {
        Error::Texture { reason: e.into() }
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
