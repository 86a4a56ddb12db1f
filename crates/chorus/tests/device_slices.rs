//! The facade's memory blocks as device slices for the CUDA libraries: on CUDA the block's own
//! device memory with its length; on the CPU executor, which has no device addresses, an error.

use chorus::cuda::driver::{AsDeviceSlice, AsDeviceSliceMut};
use chorus::{Backend, MemoryBlock};

#[test]
fn blocks_give_their_device_memory_or_say_why_not() {
    let mut block = MemoryBlock::<f32>::alloc(6).expect("alloc");
    match block.backend() {
        Backend::Cuda => {
            let address = block.device_address().expect("CUDA blocks have addresses");
            let slice = block.as_device_slice().expect("a slice");
            assert_eq!((slice.ptr(), slice.len()), (address, 6));
            let pairs = slice.cast::<[f32; 2]>().expect("three pairs");
            assert_eq!(pairs.len(), 3);
            assert_eq!(block.as_device_slice_mut().expect("writable").len(), 6);
        }
        _ => {
            let e = block.as_device_slice().unwrap_err().to_string();
            assert!(e.contains("no device address"), "{e}");
            assert!(block.as_device_slice_mut().is_err());
        }
    }
}
