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
//! the allocation it points into. The offset is a signed 40-bit number, so a pointer below its
//! allocation's start (`a - 1`) is told apart from one past its end; arithmetic that leaves that
//! range gives a pointer to no allocation ([`OVERFLOWED_ID`]), which faults when used instead of
//! wrapping around to the allocation's start.
//!
//! An id is a slot (its low [`SLOT_BITS`] bits) and a generation (the bits above). A freed
//! buffer's id goes back to a queue; its slot is given out again, once every fresh slot has been
//! used and the slots freed before it have been reused, with the next generation, so a stale
//! pointer to a freed buffer does not reach the buffer that took its slot.

use crate::error::Error;
use crate::value::{Kind, from_raw};
use std::collections::VecDeque;
use std::sync::Mutex;
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
/// The allocation id of a pointer whose arithmetic left the range of offsets (see the module
/// documentation); no allocation has it.
pub(crate) const OVERFLOWED_ID: u32 = 2;
/// The first id handed to buffers and globals.
const FIRST_BUFFER_ID: u32 = 0x10000;
/// Bits of an allocation id that number its slot; the bits above hold its generation.
const SLOT_BITS: u32 = 20;
/// Generations a slot goes through before its ids repeat.
const GENERATIONS: u32 = 1 << (64 - OFFSET_BITS - SLOT_BITS);
/// The largest allocation: offsets at or above 2^39 are negative.
pub(crate) const MAX_ALLOCATION: u64 = (1 << (OFFSET_BITS - 1)) - 1;

/// The signed byte offset of a pointer.
#[inline(always)]
pub(crate) fn signed_offset(ptr: u64) -> i64 {
    ((ptr << (64 - OFFSET_BITS)) as i64) >> (64 - OFFSET_BITS)
}

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

/// True when a pointer is into the block's shared memory (dynamic or a static array).
#[inline(always)]
pub(crate) fn is_shared_pointer(ptr: u64) -> bool {
    let id = pointer_id(ptr);
    id == DYNAMIC_SHARED_ID || (STATIC_SHARED_BASE..FIRST_BUFFER_ID).contains(&id)
}

/// True when a pointer is into global memory: a buffer or a global.
#[inline(always)]
pub(crate) fn is_global_pointer(ptr: u64) -> bool {
    pointer_id(ptr) >= FIRST_BUFFER_ID
}

/// Adds `bytes` (possibly negative) to a pointer's offset, keeping its allocation; a result
/// outside the signed 40-bit range points to no allocation ([`OVERFLOWED_ID`]).
#[inline(always)]
pub(crate) fn offset_pointer(ptr: u64, bytes: i64) -> u64 {
    const LIMIT: i64 = 1 << (OFFSET_BITS - 1);
    match signed_offset(ptr).checked_add(bytes) {
        Some(offset) if (-LIMIT..LIMIT).contains(&offset) => {
            (ptr & !OFFSET_MASK) | (offset as u64 & OFFSET_MASK)
        }
        _ => encode(OVERFLOWED_ID, 0),
    }
}

/// `index * stride` for pointer arithmetic, saturating instead of wrapping, so an index too
/// large for 64 bits still lands outside the range of offsets.
#[inline(always)]
pub(crate) fn scaled_index(index: i64, stride: i64) -> i64 {
    index.saturating_mul(stride)
}

/// `index << shift` (a power-of-two stride), saturating as [`scaled_index`] does.
#[inline(always)]
pub(crate) fn shifted_index(index: i64, shift: u32) -> i64 {
    let scaled = index << shift;
    if scaled >> shift == index {
        scaled
    } else if index < 0 {
        i64::MIN
    } else {
        i64::MAX
    }
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
            AccessError::OutOfBounds { offset, size, len } => {
                // Offsets at or above 2^39 are below the allocation's start.
                let offset = signed_offset(offset);
                format!(
                    "out-of-bounds {what} of {size} byte(s) at byte offset {offset} (element index {}) of a {len}-byte allocation",
                    offset.div_euclid(size as i64)
                )
            }
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
        // SAFETY: in bounds of `words` (checked above), whose storage is 8-aligned: the address
        // is aligned to `size`.
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
        // SAFETY: `p` is in bounds and 4-aligned (above), atomic storage borrowed for 'a.
        let atomic = unsafe { AtomicU32::from_ptr(p) };
        Ok((atomic, ((offset - word) * 8) as u32))
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

/// The allocation ids of buffers: fresh slots first, then freed ids in the order they were
/// freed, each with its slot's next generation.
struct IdPool {
    next_fresh: u32,
    fresh_end: u32,
    freed: VecDeque<u32>,
}

impl IdPool {
    const fn new(first: u32, end: u32) -> IdPool {
        IdPool {
            next_fresh: first,
            fresh_end: end,
            freed: VecDeque::new(),
        }
    }

    fn take(&mut self) -> Option<u32> {
        if self.next_fresh < self.fresh_end {
            self.next_fresh += 1;
            return Some(self.next_fresh - 1);
        }
        let id = self.freed.pop_front()?;
        let generation = ((id >> SLOT_BITS) + 1) % GENERATIONS;
        Some((generation << SLOT_BITS) | (id & ((1 << SLOT_BITS) - 1)))
    }

    fn give_back(&mut self, id: u32) {
        self.freed.push_back(id);
    }
}

static BUFFER_IDS: Mutex<IdPool> = Mutex::new(IdPool::new(FIRST_BUFFER_ID, 1 << SLOT_BITS));

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        BUFFER_IDS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .give_back(self.id);
    }
}

impl DeviceBuffer {
    /// Allocates `bytes` zeroed bytes. Zero bytes is an error, as `cuMemAlloc(0)` is; so is a
    /// size beyond what a pointer's signed 40-bit offset can address (512 GiB).
    pub fn alloc(bytes: usize) -> Result<DeviceBuffer, Error> {
        if bytes == 0 {
            return Err(Error::Alloc("cannot allocate a buffer of 0 bytes".into()));
        }
        if bytes as u64 > MAX_ALLOCATION {
            return Err(Error::Alloc(format!(
                "cannot allocate {bytes} bytes: the CPU backend's allocations are limited to {MAX_ALLOCATION} bytes"
            )));
        }
        let mut words = Vec::new();
        words
            .try_reserve_exact(bytes.div_ceil(8))
            .map_err(|_| Error::Alloc(format!("out of host memory allocating {bytes} bytes")))?;
        words.extend((0..bytes.div_ceil(8)).map(|_| AtomicU64::new(0)));
        let id = BUFFER_IDS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| {
                Error::Alloc(format!(
                    "the CPU backend has run out of allocation ids ({} buffers are live)",
                    (1 << SLOT_BITS) - FIRST_BUFFER_ID
                ))
            })?;
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
        assert_eq!(signed_offset(q), -4);
        assert_eq!(offset_pointer(q, 20), p);
    }

    #[test]
    fn pointer_arithmetic_beyond_the_offset_range_points_nowhere() {
        let p = encode(0x12345, 16);
        for bytes in [1 << 40, 1 << 39, -(1 << 39) - 17, i64::MAX, i64::MIN] {
            assert_eq!(
                pointer_id(offset_pointer(p, bytes)),
                OVERFLOWED_ID,
                "{bytes}"
            );
        }
        assert_eq!(shifted_index(1 << 62, 2), i64::MAX);
        assert_eq!(shifted_index(-(1 << 62) - 1, 2), i64::MIN);
        assert_eq!(shifted_index(-3, 2), -12);
        assert_eq!(scaled_index(1 << 62, 12), i64::MAX);
    }

    #[test]
    fn negative_offsets_are_described_as_negative() {
        let e = AccessError::OutOfBounds {
            offset: offset_pointer(encode(0x12345, 0), -4) & OFFSET_MASK,
            size: 4,
            len: 64,
        };
        let text = e.describe("write");
        assert!(text.contains("byte offset -4 (element index -1)"), "{text}");
    }

    #[test]
    fn freed_ids_come_back_with_a_new_generation() {
        let mut pool = IdPool::new(10, 12);
        let (a, b) = (pool.take().unwrap(), pool.take().unwrap());
        assert_eq!((a, b), (10, 11));
        assert_eq!(pool.take(), None);
        pool.give_back(a);
        let again = pool.take().unwrap();
        assert_ne!(again, a);
        assert_eq!(again & ((1 << SLOT_BITS) - 1), a);
        // A slot's ids repeat only after every generation.
        let mut id = again;
        let mut seen = vec![a, again];
        for _ in 2..GENERATIONS {
            pool.give_back(id);
            id = pool.take().unwrap();
            assert!(!seen.contains(&id), "{id:#x}");
            seen.push(id);
        }
        pool.give_back(id);
        assert_eq!(pool.take(), Some(a));
    }
}
