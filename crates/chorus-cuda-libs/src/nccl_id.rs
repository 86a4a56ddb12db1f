//! NCCL's unique id: what rank 0 makes and every rank of a communicator starts from, as bytes
//! and as hexadecimal text (for a file, an environment variable or a command line).

use super::sys as nccl_sys;
use crate::error::{Error, Result};
use cudarc::nccl::sys::ncclUniqueId;

/// The id of a communicator being made across processes (`ncclUniqueId`, 128 bytes).
///
/// Rank 0 makes it ([`UniqueId::new`]; NCCL starts its bootstrap listener in that process, which
/// must stay alive until every rank has joined) and hands it to the other ranks, which pass it
/// to [`crate::nccl::Comm::init_rank`]. It travels as [`UniqueId::as_bytes`] or as 256
/// hexadecimal digits ([`UniqueId::to_hex`], also its `Display`), read back by
/// [`UniqueId::from_bytes`] and [`UniqueId::from_hex`] (also `FromStr`).
///
/// ```
/// use chorus_cuda_libs::nccl::UniqueId;
/// let id = UniqueId::from_bytes(&[7u8; 128])?;
/// let text = id.to_hex();
/// assert_eq!(text.len(), 256);
/// assert_eq!(text.parse::<UniqueId>()?, id);
/// # Ok::<(), chorus_cuda_libs::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId([u8; UniqueId::LEN]);

impl UniqueId {
    /// Its size in bytes (`NCCL_UNIQUE_ID_BYTES`).
    pub const LEN: usize = 128;

    /// A new id (`ncclGetUniqueId`), made in rank 0's process.
    pub fn new() -> Result<UniqueId> {
        let api = nccl_sys::api()?;
        let mut raw = ncclUniqueId { internal: [0; 128] };
        // SAFETY: `raw` is a valid place for an id.
        let code = unsafe { (api.get_unique_id)(&mut raw) };
        api.check("ncclGetUniqueId", code, std::ptr::null_mut())?;
        Ok(UniqueId(raw.internal.map(|b| b as u8)))
    }

    /// The id from its 128 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let bytes: [u8; UniqueId::LEN] = bytes.try_into().map_err(|_| {
            Error::invalid(
                "UniqueId::from_bytes",
                format!(
                    "an NCCL unique id is {} bytes, not {}",
                    UniqueId::LEN,
                    bytes.len()
                ),
            )
        })?;
        Ok(UniqueId(bytes))
    }

    /// Its 128 bytes.
    pub fn as_bytes(&self) -> &[u8; UniqueId::LEN] {
        &self.0
    }

    /// Its bytes as 256 lower-case hexadecimal digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The id from 256 hexadecimal digits (either case; surrounding white space ignored).
    pub fn from_hex(text: &str) -> Result<UniqueId> {
        let text = text.trim();
        let bad = |reason: String| Error::invalid("UniqueId::from_hex", reason);
        if text.len() != 2 * UniqueId::LEN {
            return Err(bad(format!(
                "an NCCL unique id is {} hexadecimal digits, not {}",
                2 * UniqueId::LEN,
                text.len()
            )));
        }
        let mut bytes = [0u8; UniqueId::LEN];
        for (i, byte) in bytes.iter_mut().enumerate() {
            let pair = text.get(2 * i..2 * i + 2).unwrap_or("");
            *byte = u8::from_str_radix(pair, 16)
                .map_err(|_| bad(format!("`{pair}` at digit {} is not hexadecimal", 2 * i)))?;
        }
        Ok(UniqueId(bytes))
    }

    /// The id as NCCL takes it.
    pub(crate) fn raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.0.map(|b| b as std::ffi::c_char),
        }
    }
}

impl std::fmt::Display for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The whole id is a bootstrap address and a magic number: the start tells ids apart.
        write!(f, "UniqueId({}…)", &self.to_hex()[..16])
    }
}

impl std::str::FromStr for UniqueId {
    type Err = Error;
    fn from_str(text: &str) -> Result<UniqueId> {
        UniqueId::from_hex(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_bytes_and_hex() {
        let bytes: Vec<u8> = (0..128u8).map(|i| i.wrapping_mul(37)).collect();
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(id.as_bytes().as_slice(), bytes.as_slice());
        let hex = id.to_hex();
        assert_eq!(&hex[..6], "00254a");
        assert_eq!(UniqueId::from_hex(&hex).unwrap(), id);
        assert_eq!(
            UniqueId::from_hex(&format!(" {}\n", hex.to_uppercase())).unwrap(),
            id
        );
        assert_eq!(id.raw().internal[1] as u8, 37);
    }

    #[test]
    fn malformed_ids_are_errors() {
        let short = UniqueId::from_bytes(&[0; 127]).unwrap_err();
        assert!(short.to_string().contains("128 bytes, not 127"), "{short}");
        let odd = UniqueId::from_hex("abc").unwrap_err();
        assert!(
            odd.to_string().contains("256 hexadecimal digits, not 3"),
            "{odd}"
        );
        let mut text = "0".repeat(256);
        text.replace_range(10..12, "zz");
        let bad = UniqueId::from_hex(&text).unwrap_err();
        assert!(bad.to_string().contains("`zz` at digit 10"), "{bad}");
        // A multi-byte character is an error, not a panic.
        let wide = format!("é{}", "0".repeat(254));
        assert!(UniqueId::from_hex(&wide).is_err());
    }
}
