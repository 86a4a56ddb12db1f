//! Without ROCm (or without an AMD device), every entry point returns an error, never a panic:
//! `HipNotFound` where the libraries do not load, `NoDevice` (or the runtime's error) where
//! they load but see no device. CI machines have neither.

use chorus_hip::{Device, Error, device_count, hip_available};

#[test]
fn no_device_is_an_error_not_a_panic() {
    match device_count() {
        Err(Error::HipNotFound { tried, .. }) => {
            assert!(!hip_available());
            assert!(tried.contains("libamdhip64"), "{tried}");
            assert!(matches!(Device::new(0), Err(Error::HipNotFound { .. })));
            assert!(matches!(
                chorus_hip::hiprtc_version(),
                Err(Error::HipNotFound { .. })
            ));
            assert!(matches!(
                chorus_hip::hiprtc_compile("", "m", "gfx90a"),
                Err(Error::HipNotFound { .. })
            ));
        }
        Ok(0) | Err(Error::Hip { .. }) => {
            // ROCm loads (Debian's libamdhip64 here) but no AMD GPU is present.
            assert!(hip_available());
            assert!(matches!(
                Device::new(0),
                Err(Error::NoDevice { .. } | Error::Hip { .. })
            ));
        }
        Ok(n) => {
            let device = Device::new(0).expect("device 0 of a machine that has AMD GPUs");
            println!("{n} HIP devices; device 0: {:?}", device.properties());
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}
