//! libFuzzer target: `chorus_fuzz::Target::CudaPrinter` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(broken) = chorus_fuzz::check_input(chorus_fuzz::Target::CudaPrinter, &text) {
        panic!("{broken}");
    }
});
