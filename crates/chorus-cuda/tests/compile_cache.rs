//! Compiling through the cache with the compilers found on this machine (no GPU needed):
//! NVRTC in process and nvcc, memory and disk hits, and rebuilding corrupted entries. Skips,
//! saying so, when no compiler is found, except under `CI`.

use chorus_cuda::{CompilerChoice, Error, ImageKind, Settings, cache, compile::compile_with};

fn settings(compiler: CompilerChoice) -> Settings {
    Settings {
        compiler,
        ..chorus_cuda::settings()
    }
}

fn source(tag: &str) -> String {
    format!(
        "// {tag} {}\nextern \"C\" __global__ void add_one(int* a, int n) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += 1;\n}}\n",
        std::process::id()
    )
}

fn available(compiler: CompilerChoice) -> bool {
    let found = match compiler {
        CompilerChoice::Nvrtc => chorus_cuda::nvrtc_available(),
        _ => chorus_cuda::nvcc_available(),
    };
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but {compiler:?} was not found"
        );
        eprintln!("skipped: {compiler:?} not found (set CUDA_PATH to a toolkit or the pip wheels)");
    }
    found
}

/// One test, because the cache directory and counters are process-wide.
#[test]
fn cache_levels_and_corruption() {
    let dir = std::env::temp_dir().join(format!("chorus-cache-test-{}", std::process::id()));
    cache::set_dir(Some(dir.clone()));
    for compiler in [CompilerChoice::Nvrtc, CompilerChoice::Nvcc] {
        if !available(compiler) {
            continue;
        }
        let s = settings(compiler);
        let src = source(&format!("{compiler:?}"));
        let first = compile_with(&s, &src, "add-one", Some(ImageKind::Ptx)).unwrap();
        let text = String::from_utf8(first.bytes.to_vec()).unwrap();
        assert!(text.contains(".entry add_one"), "{text}");
        let path = cache::entry_path(&first.key, ImageKind::Ptx);
        assert!(path.is_file(), "written to disk");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "the cache directory is private");
        }

        let before = cache::stats();
        let again = compile_with(&s, &src, "add-one", Some(ImageKind::Ptx)).unwrap();
        assert_eq!(again.key, first.key);
        assert_eq!(cache::stats().memory_hits, before.memory_hits + 1);

        cache::clear_memory();
        let before = cache::stats();
        let from_disk = compile_with(&s, &src, "add-one", Some(ImageKind::Ptx)).unwrap();
        assert_eq!(from_disk.bytes, first.bytes);
        assert_eq!(cache::stats().disk_hits, before.disk_hits + 1);

        // Truncate, then flip a byte: each is detected, discarded and rebuilt.
        for damage in ["truncate", "flip"] {
            let mut bytes = std::fs::read(&path).unwrap();
            match damage {
                "truncate" => bytes.truncate(bytes.len() / 2),
                _ => *bytes.last_mut().unwrap() ^= 0x55,
            }
            std::fs::write(&path, &bytes).unwrap();
            cache::clear_memory();
            let before = cache::stats();
            let rebuilt = compile_with(&s, &src, "add-one", Some(ImageKind::Ptx)).unwrap();
            let after = cache::stats();
            assert_eq!(after.corrupted, before.corrupted + 1, "{damage} detected");
            assert_eq!(after.misses, before.misses + 1, "{damage} rebuilt");
            assert_eq!(rebuilt.bytes, first.bytes);
            let healed = std::fs::read(&path).unwrap();
            assert_ne!(healed, bytes, "{damage}: the entry was rewritten");
        }

        let cubin = compile_with(&s, &src, "add-one", Some(ImageKind::Cubin)).unwrap();
        assert_eq!(&cubin.bytes[..4], b"\x7fELF");
        assert_ne!(cubin.key, first.key, "the image kind is part of the key");

        let e = compile_with(&s, "int x = ;", "broken", Some(ImageKind::Ptx)).unwrap_err();
        assert!(matches!(e, Error::Compile { .. }), "{e}");
        assert!(e.to_string().contains("1 | int x = ;"), "{e}");
    }
    let removed = cache::clear().unwrap();
    assert!(removed > 0 || !(chorus_cuda::nvrtc_available() || chorus_cuda::nvcc_available()));
    assert_eq!(std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0), 0);
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn nvrtc_compiles_half_and_bfloat16_with_toolkit_headers() {
    if !available(CompilerChoice::Nvrtc) {
        return;
    }
    let src = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\nextern \"C\" __global__ void h(__half* a, __nv_bfloat16* b) {\n  a[0] = __hadd(a[0], a[1]);\n  b[0] = __hadd(b[0], b[1]);\n}\n";
    let s = Settings {
        disk_cache: false,
        ..settings(CompilerChoice::Nvrtc)
    };
    let image = compile_with(&s, src, "halves", Some(ImageKind::Ptx)).unwrap();
    assert!(String::from_utf8_lossy(&image.bytes).contains(".entry h"));
}
