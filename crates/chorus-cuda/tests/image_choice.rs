//! Which image a compile builds and loads on a GPU: cubin for the device by default, PTX when
//! asked for (`CHORUS_IMAGE=ptx`), and both run. Skips, saying why, without a GPU; fails
//! instead under `CHORUS_REQUIRE_GPU=1`.

use chorus_cuda::compile::compile_with;
use chorus_cuda::testing::on_gpu;
use chorus_cuda::*;
use std::sync::Arc;

const ADD_ONE: &str = "extern \"C\" __global__ void add_one(int* a, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += 1;\n}\n";

/// Loads `image`, runs `add_one` over 100 ints and checks the result.
fn run(image: &CompiledImage) -> Result<()> {
    let module = Module::load(&image.bytes, image.kind)?;
    let f = module.function("add_one")?;
    let n = 100;
    let mut a = MemoryBlock::<i32>::alloc(n)?;
    for i in 0..n {
        a[i] = i as i32;
    }
    a.sync(Direction::HostToDevice)?;
    let count = n as i32;
    // SAFETY: `add_one` takes (int*, int): an int block of `n` elements and an int `n`.
    unsafe {
        launch_unchecked(
            &f,
            &LaunchConfig::grid(1).block(128),
            &[KernelArg::block(&a), KernelArg::value(&count)],
        )
    }?;
    a.sync(Direction::DeviceToHost)?;
    assert!((0..n).all(|i| a[i] == i as i32 + 1));
    Ok(())
}

#[test]
fn a_known_device_gets_cubin_and_ptx_stays_available() {
    on_gpu("image_choice", |ctx| {
        let base = Settings {
            image: ImageChoice::Auto,
            disk_cache: false,
            ..settings()
        };
        let source = format!("// image choice {}\n{ADD_ONE}", std::process::id());
        let cubin = compile_with(&base, &source, "add-one", None)?;
        assert_eq!(cubin.kind, ImageKind::Cubin, "a device is current");
        assert_eq!(&cubin.bytes[..4], b"\x7fELF");
        let (major, minor) = ctx.compute_capability()?;
        let arch = format!("sm_{major}{minor}");
        assert!(
            cubin.options.iter().any(|o| o.ends_with(&arch)),
            "compiled for {arch}: {:?}",
            cubin.options
        );
        run(&cubin)?;

        let ptx_settings = Settings {
            image: ImageChoice::Ptx,
            ..base.clone()
        };
        let ptx = compile_with(&ptx_settings, &source, "add-one", None)?;
        assert_eq!(ptx.kind, ImageKind::Ptx);
        assert!(String::from_utf8_lossy(&ptx.bytes).contains(".entry add_one"));
        run(&ptx)?;

        // A repeated compile is a memory hit: the same image, no new compile.
        let before = cache::stats();
        let again = compile_with(&base, &source, "add-one", None)?;
        assert!(Arc::ptr_eq(&again.bytes, &cubin.bytes));
        assert_eq!(again.key, cubin.key);
        assert_eq!(cache::stats().memory_hits, before.memory_hits + 1);
        assert_eq!(cache::stats().misses, before.misses);
        Ok(())
    });
}
