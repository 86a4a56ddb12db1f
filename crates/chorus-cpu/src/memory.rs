//! "Device" memory on the host, and pointers into it.
//!
//! Every allocation (a [`DeviceBuffer`], a `defglobal`, a block's shared arrays, a thread's
//! local stack) is an array of `AtomicU64` words. Kernels read and write it only through
//! naturally aligned atomic operations of the access width (relaxed ordering, plain moves on
//! x86-64 and AArch64), so blocks running on different OS threads never make a Rust data race,
//! and atomics are atomic between them.
//!
//! A kernel pointer is 64 bits: the allocation's id in the high 24 bits, the byte offset in the
//! low 40. Pointer arithmetic changes only the offset, so every access can be checked against
//! the allocation it points into.

use crate::error::Error;
use crate::value::{Kind, from_raw};
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed};

/// Bits of a pointer that hold the byte offset.
pub(crate) const OFFSET_BITS: u32 = 40;
/// Mask of the offset bits.
pub(crate) const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Allocation id of the block's dynamic shared memory.
pub(crate) const DYNAMIC_SHARED_ID: u32 = 1;
/// Allocation ids of the threads' local stacks: this plus the linear thread index.
pub(crate) const THREAD_LOCAL_BASE: u32 = 0x100;
/// Allocation ids of static shared arrays: this plus the array's slot in the module.
pub(crate) const STATIC_SHARED_BASE: u32 = 0x1000;
/// The first id handed to buffers and globals.
const FIRST_BUFFER_ID: u32 = 0x10000;
/// One past the last id a pointer can hold.
const ID_LIMIT: u32 = 1 << (64 - OFFSET_BITS);

/// Encodes a pointer.
#[inline(always)]
pub(crate) fn encode(id: u32, offset: u64) -> u64 {
    ((id as u64) << OFFSET_BITS) | (offset & OFFSET_MASK)
}

/// The allocation id of a pointer.
#[inline(always)]
pub(crate) fn pointer_id(ptr: u64) -> u32 {
    (ptr >> OFFSET_BITS) as u32
}

/// Adds `bytes` (possibly negative) to a pointer's offset, keeping its allocation.
#[inline(always)]
pub(crate) fn offset_pointer(ptr: u64, bytes: i64) -> u64 {
    (ptr & !OFFSET_MASK) | ((ptr as i64).wrapping_add(bytes) as u64 & OFFSET_MASK)
}

/// Zero-initialised words holding `len` bytes.
pub(crate) fn zeroed_words(len: usize) -> Box<[AtomicU64]> {
    (0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect()
}

/// A borrowed allocation: its words and its length in bytes.
#[derive(Clone, Copy)]
pub(crate) struct Region<'a> {
    pub(crate) words: &'a [AtomicU64],
    pub(crate) len: usize,
}

/// Why an access failed (turned into a message naming the thread by the caller).
#[derive(Debug)]
pub(crate) enum AccessError {
    OutOfBounds {
        offset: u64,
        size: usize,
        len: usize,
    },
    Misaligned {
        offset: u64,
        size: usize,
    },
}

impl AccessError {
    pub(crate) fn describe(&self, what: &str) -> String {
        match *self {
            AccessError::OutOfBounds { offset, size, len } => format!(
                "out-of-bounds {what} of {size} byte(s) at byte offset {offset} (element index {}) of a {len}-byte allocation",
                offset / size as u64
            ),
            AccessError::Misaligned { offset, size } => {
                format!("misaligned {what} of {size} byte(s) at byte offset {offset}")
            }
        }
    }
}

impl<'a> Region<'a> {
    #[inline(always)]
    fn check(&self, offset: u64, size: usize) -> Result<*mut u8, AccessError> {
        if offset
            .checked_add(size as u64)
            .is_none_or(|end| end > self.len as u64)
        {
            return Err(AccessError::OutOfBounds {
                offset,
                size,
                len: self.len,
            });
        }
        // Sizes are powers of two.
        if offset & (size as u64 - 1) != 0 {
            return Err(AccessError::Misaligned { offset, size });
        }
        // In bounds of `words`, whose storage is 8-aligned: the address is aligned to `size`.
        Ok(unsafe { self.words.as_ptr().cast::<u8>().add(offset as usize) as *mut u8 })
    }

    /// Loads the `N` (1, 2, 4 or 8) bytes at `offset`, zero-extended.
    #[inline(always)]
    pub(crate) fn load_raw<const N: usize>(&self, offset: u64) -> Result<u64, AccessError> {
        let p = self.check(offset, N)?;
        // SAFETY: `p` is in bounds and aligned to `N` (checked), the storage is atomic words
        // that live as long as `self`, and every access to it is atomic.
        Ok(unsafe {
            match N {
                1 => AtomicU8::from_ptr(p).load(Relaxed) as u64,
                2 => AtomicU16::from_ptr(p.cast()).load(Relaxed) as u64,
                4 => AtomicU32::from_ptr(p.cast()).load(Relaxed) as u64,
                _ => AtomicU64::from_ptr(p.cast()).load(Relaxed),
            }
        })
    }

    /// Stores the low `N` (1, 2, 4 or 8) bytes of `bits` at `offset`.
    #[inline(always)]
    pub(crate) fn store_raw<const N: usize>(
        &self,
        offset: u64,
        bits: u64,
    ) -> Result<(), AccessError> {
        let p = self.check(offset, N)?;
        // SAFETY: as in `load_raw`.
        unsafe {
            match N {
                1 => AtomicU8::from_ptr(p).store(bits as u8, Relaxed),
                2 => AtomicU16::from_ptr(p.cast()).store(bits as u16, Relaxed),
                4 => AtomicU32::from_ptr(p.cast()).store(bits as u32, Relaxed),
                _ => AtomicU64::from_ptr(p.cast()).store(bits, Relaxed),
            }
        }
        Ok(())
    }

    /// `load_raw` for an offset the caller has checked: in bounds and aligned to `N`.
    #[inline(always)]
    pub(crate) fn load_raw_unchecked<const N: usize>(&self, offset: u64) -> u64 {
        debug_assert!(offset + N as u64 <= self.len as u64 && offset.is_multiple_of(N as u64));
        // SAFETY: the caller checked bounds and alignment; the bytes lie inside `words`.
        unsafe {
            let p = self.words.as_ptr().cast::<u8>().add(offset as usize) as *mut u8;
            match N {
                1 => AtomicU8::from_ptr(p).load(Relaxed) as u64,
                2 => AtomicU16::from_ptr(p.cast()).load(Relaxed) as u64,
                4 => AtomicU32::from_ptr(p.cast()).load(Relaxed) as u64,
                _ => AtomicU64::from_ptr(p.cast()).load(Relaxed),
            }
        }
    }

    /// `store_raw` for an offset the caller has checked: in bounds and aligned to `N`.
    #[inline(always)]
    pub(crate) fn store_raw_unchecked<const N: usize>(&self, offset: u64, bits: u64) {
        debug_assert!(offset + N as u64 <= self.len as u64 && offset.is_multiple_of(N as u64));
        // SAFETY: the caller checked bounds and alignment; the bytes lie inside `words`.
        unsafe {
            let p = self.words.as_ptr().cast::<u8>().add(offset as usize) as *mut u8;
            match N {
                1 => AtomicU8::from_ptr(p).store(bits as u8, Relaxed),
                2 => AtomicU16::from_ptr(p.cast()).store(bits as u16, Relaxed),
                4 => AtomicU32::from_ptr(p.cast()).store(bits as u32, Relaxed),
                _ => AtomicU64::from_ptr(p.cast()).store(bits, Relaxed),
            }
        }
    }

    /// Loads a leaf in canonical form.
    pub(crate) fn load(&self, offset: u64, kind: Kind) -> Result<u64, AccessError> {
        let raw = match kind.size() {
            1 => self.load_raw::<1>(offset)?,
            2 => self.load_raw::<2>(offset)?,
            4 => self.load_raw::<4>(offset)?,
            _ => self.load_raw::<8>(offset)?,
        };
        Ok(from_raw(kind, raw))
    }

    /// Stores the low `kind.size()` bytes of a leaf.
    pub(crate) fn store(&self, offset: u64, kind: Kind, bits: u64) -> Result<(), AccessError> {
        match kind.size() {
            1 => self.store_raw::<1>(offset, bits),
            2 => self.store_raw::<2>(offset, bits),
            4 => self.store_raw::<4>(offset, bits),
            _ => self.store_raw::<8>(offset, bits),
        }
    }

    /// The 32-bit atomic at `offset`.
    pub(crate) fn atomic32(&self, offset: u64) -> Result<&'a AtomicU32, AccessError> {
        let p = self.check(offset, 4)?;
        // SAFETY: in bounds, 4-aligned, atomic storage borrowed for 'a.
        Ok(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// The 32-bit atomic holding the 16-bit value at `offset`, and the value's bit shift in it.
    pub(crate) fn atomic16(&self, offset: u64) -> Result<(&'a AtomicU32, u32), AccessError> {
        self.check(offset, 2)?;
        let word = offset & !3;
        // SAFETY: the 2-byte value is in bounds and 2-aligned (checked), so its 4-aligned word
        // starts in bounds and ends within the last 8-byte storage word.
        let p = unsafe { self.words.as_ptr().cast::<u8>().add(word as usize) as *mut u32 };
        Ok((
            unsafe { AtomicU32::from_ptr(p) },
            ((offset - word) * 8) as u32,
        ))
    }

    /// The 64-bit atomic at `offset`.
    pub(crate) fn atomic64(&self, offset: u64) -> Result<&'a AtomicU64, AccessError> {
        let p = self.check(offset, 8)?;
        // SAFETY: in bounds, 8-aligned, atomic storage borrowed for 'a.
        Ok(unsafe { AtomicU64::from_ptr(p.cast()) })
    }

    /// Copies bytes out (host side).
    pub(crate) fn read_bytes(&self, offset: usize, dst: &mut [u8]) {
        for (i, byte) in dst.iter_mut().enumerate() {
            let at = offset + i;
            let word = self.words[at / 8].load(Relaxed).to_le_bytes();
            *byte = word[at % 8];
        }
    }

    /// Copies bytes in (host side).
    pub(crate) fn write_bytes(&self, offset: usize, src: &[u8]) {
        let mut i = 0;
        while i < src.len() {
            let at = offset + i;
            let word = at / 8;
            let first = at % 8;
            let count = (8 - first).min(src.len() - i);
            if count == 8 {
                let bytes: [u8; 8] = src[i..i + 8].try_into().expect("eight bytes");
                self.words[word].store(u64::from_le_bytes(bytes), Relaxed);
            } else {
                let _ = self.words[word].fetch_update(Relaxed, Relaxed, |old| {
                    let mut bytes = old.to_le_bytes();
                    bytes[first..first + count].copy_from_slice(&src[i..i + count]);
                    Some(u64::from_le_bytes(bytes))
                });
            }
            i += count;
        }
    }
}

/// A "device" allocation of the CPU backend: bytes on the host that kernels reach through
/// pointers arguments. Kernel accesses are bounds-checked against it.
///
/// Launches borrow buffers immutably (kernels write through atomic words), so one buffer can be
/// passed as several arguments. Freed on drop; freeing twice cannot be written in Rust.
pub struct DeviceBuffer {
    id: u32,
    len: usize,
    words: Box<[AtomicU64]>,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("id", &self.id)
            .field("len", &self.len)
            .finish()
    }
}

static NEXT_BUFFER_ID: AtomicU32 = AtomicU32::new(FIRST_BUFFER_ID);

impl DeviceBuffer {
    /// Allocates `bytes` zeroed bytes. Zero bytes is an error, as `cuMemAlloc(0)` is; so is a
    /// size beyond what a pointer's 40-bit offset can address (1 TiB).
    pub fn alloc(bytes: usize) -> Result<DeviceBuffer, Error> {
        if bytes == 0 {
            return Err(Error::Alloc("cannot allocate a buffer of 0 bytes".into()));
        }
        if bytes as u64 > OFFSET_MASK {
            return Err(Error::Alloc(format!(
                "cannot allocate {bytes} bytes: the CPU backend's allocations are limited to {OFFSET_MASK} bytes"
            )));
        }
        let id = NEXT_BUFFER_ID
            .fetch_update(Relaxed, Relaxed, |id| (id < ID_LIMIT).then_some(id + 1))
            .map_err(|_| Error::Alloc("the CPU backend has run out of allocation ids".into()))?;
        let mut words = Vec::new();
        words
            .try_reserve_exact(bytes.div_ceil(8))
            .map_err(|_| Error::Alloc(format!("out of host memory allocating {bytes} bytes")))?;
        words.extend((0..bytes.div_ceil(8)).map(|_| AtomicU64::new(0)));
        Ok(DeviceBuffer {
            id,
            len: bytes,
            words: words.into_boxed_slice(),
        })
    }

    /// Allocates a buffer holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<DeviceBuffer, Error> {
        let buffer = DeviceBuffer::alloc(bytes.len())?;
        buffer.region().write_bytes(0, bytes);
        Ok(buffer)
    }

    /// Allocates a buffer holding a copy of `values`.
    pub fn from_slice<T: chorus_lang::host::KernelValue>(
        values: &[T],
    ) -> Result<DeviceBuffer, Error> {
        DeviceBuffer::from_bytes(bytemuck::cast_slice(values))
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: buffers have at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `src` into the buffer at byte `offset`.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<(), Error> {
        self.check_range(offset, src.len())?;
        self.region().write_bytes(offset, src);
        Ok(())
    }

    /// Copies bytes from byte `offset` into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), Error> {
        self.check_range(offset, dst.len())?;
        self.region().read_bytes(offset, dst);
        Ok(())
    }

    /// The whole buffer's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0; self.len];
        self.region().read_bytes(0, &mut out);
        out
    }

    /// The buffer read as values of `T` (its length must be a multiple of `T`'s size).
    pub fn to_vec<T: chorus_lang::host::KernelValue>(&self) -> Result<Vec<T>, Error> {
        let size = size_of::<T>();
        if !self.len.is_multiple_of(size) {
            return Err(Error::Alloc(format!(
                "a {}-byte buffer does not hold a whole number of {}-byte `{}` values",
                self.len,
                size,
                T::kernel_type()
            )));
        }
        let mut out = vec![T::zeroed(); self.len / size];
        self.region()
            .read_bytes(0, bytemuck::cast_slice_mut(&mut out));
        Ok(out)
    }

    /// Overwrites the buffer from its start with `values`.
    pub fn write_slice<T: chorus_lang::host::KernelValue>(
        &self,
        values: &[T],
    ) -> Result<(), Error> {
        self.write(0, bytemuck::cast_slice(values))
    }

    /// The kernel-side pointer to byte `offset` of this buffer, for storing pointers inside
    /// structures or other buffers. It is valid in launches that pass this buffer as an
    /// argument (directly or at an offset).
    pub fn device_pointer(&self, offset: usize) -> u64 {
        encode(self.id, offset as u64)
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn region(&self) -> Region<'_> {
        Region {
            words: &self.words,
            len: self.len,
        }
    }

    fn check_range(&self, offset: usize, len: usize) -> Result<(), Error> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::Alloc(format!(
                "bytes {offset}..{} are outside the {}-byte buffer",
                offset.saturating_add(len),
                self.len
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_round_trip_and_check_ranges() {
        let b = DeviceBuffer::from_slice(&[1u32, 2, 3]).unwrap();
        assert_eq!(b.len(), 12);
        assert_eq!(b.to_vec::<u32>().unwrap(), vec![1, 2, 3]);
        b.write(5, &[0xaa, 0xbb]).unwrap();
        let mut out = [0u8; 4];
        b.read(4, &mut out).unwrap();
        assert_eq!(out, [2, 0xaa, 0xbb, 0]);
        assert!(b.read(10, &mut out).is_err());
        assert!(DeviceBuffer::alloc(0).is_err());
        assert!(b.to_vec::<u64>().is_err());
    }

    #[test]
    fn region_access_is_checked() {
        let b = DeviceBuffer::alloc(8).unwrap();
        let r = b.region();
        r.store(4, Kind::I32, (-3i64) as u64).unwrap();
        assert_eq!(r.load(4, Kind::I32).ok(), Some((-3i64) as u64));
        assert_eq!(r.load(4, Kind::U32).ok(), Some(0xffff_fffd));
        assert!(matches!(
            r.load(8, Kind::U8),
            Err(AccessError::OutOfBounds { .. })
        ));
        assert!(matches!(
            r.load(2, Kind::U32),
            Err(AccessError::Misaligned { .. })
        ));
        assert!(matches!(
            r.load(u64::MAX - 1, Kind::U32),
            Err(AccessError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn pointer_arithmetic_keeps_the_allocation() {
        let p = encode(0x12345, 16);
        let q = offset_pointer(p, -20);
        assert_eq!(pointer_id(q), 0x12345);
        assert_eq!(q & OFFSET_MASK, OFFSET_MASK - 3);
        assert_eq!(offset_pointer(q, 20), p);
    }
}
