//! Where a CUDA toolkit lives: the roots that `CUDA_PATH`, `CUDA_HOME` and `CUDA_ROOT` name,
//! the conventional install directories, and pip's `site-packages/nvidia/*`.
//!
//! The driver's loader searches these for libraries the system loader does not find; the
//! compilers (NVRTC, nvcc) and the library bindings (cuBLAS … NCCL) search them too, so that
//! every part of Chorus looks in the same places in the same order.

use std::path::{Path, PathBuf};

/// The roots that `$CUDA_PATH`, `$CUDA_HOME` and `$CUDA_ROOT` name, in that order (unset or
/// empty variables are skipped).
pub fn env_roots() -> Vec<PathBuf> {
    ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"]
        .iter()
        .filter_map(|var| std::env::var_os(var).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
        .collect()
}

/// The conventional install directories: `/usr/local/cuda`, `/usr/local/cuda-X.Y` (newest
/// first), `/opt/cuda`. Listed whether or not they exist.
pub fn install_roots() -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from("/usr/local/cuda")];
    roots.extend(versioned_roots(Path::new("/usr/local")));
    roots.push(PathBuf::from("/opt/cuda"));
    roots
}

/// The `cuda-X.Y` directories in `parent`, newest version first.
fn versioned_roots(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut versioned: Vec<((u32, u32), PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (major, minor) = name.strip_prefix("cuda-")?.split_once('.')?;
            Some(((major.parse().ok()?, minor.parse().ok()?), e.path()))
        })
        .collect();
    versioned.sort_by_key(|v| std::cmp::Reverse(v.0));
    versioned.into_iter().map(|(_, p)| p).collect()
}

/// [`env_roots`] then [`install_roots`].
pub fn toolkit_roots() -> Vec<PathBuf> {
    let mut roots = env_roots();
    roots.extend(install_roots());
    roots
}

/// Python `site-packages` / `dist-packages` directories that pip installs into (`PYTHONPATH`,
/// the system's, the user's, `$VIRTUAL_ENV`'s and `$CONDA_PREFIX`'s), those that exist.
pub fn site_packages() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = vec!["/usr/local/lib".into(), "/usr/lib".into()];
    if let Some(home) = std::env::var_os("HOME") {
        bases.push(PathBuf::from(home).join(".local/lib"));
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            bases.push(PathBuf::from(v).join("lib"));
        }
    }
    let mut out: Vec<PathBuf> = std::env::var_os("PYTHONPATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("python3") {
                out.push(entry.path().join("site-packages"));
                out.push(entry.path().join("dist-packages"));
            }
        }
    }
    out.retain(|d| d.is_dir());
    out
}

/// The pip packages of NVIDIA's libraries under `site` (`site/nvidia/*`): the whole-toolkit
/// wheels `cu13` and `cu12` first, then the per-library ones (`cuda_nvrtc`, `cublas`, `nccl`,
/// …) in name order.
fn nvidia_packages(site: &Path) -> Vec<PathBuf> {
    let nvidia = site.join("nvidia");
    let mut packages = vec![nvidia.join("cu13"), nvidia.join("cu12")];
    if let Ok(entries) = std::fs::read_dir(&nvidia) {
        let mut others: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| !packages.contains(p))
            .collect();
        others.sort();
        packages.extend(others);
    }
    packages
}

/// The library directories of the toolkits at `roots` (`lib64`, `lib`,
/// `targets/x86_64-linux/lib`, `targets/sbsa-linux/lib`), then pip's `nvidia/*/lib`: those
/// that exist, each once, in that order.
pub fn lib_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in roots {
        for sub in [
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            dirs.push(root.join(sub));
        }
    }
    for site in site_packages() {
        dirs.extend(nvidia_packages(&site).iter().map(|p| p.join("lib")));
    }
    existing_once(dirs)
}

/// The include directories of the toolkits at `roots` (`include`, `targets/x86_64-linux/include`),
/// then pip's `nvidia/*/include`: those that exist, each once, in that order.
pub fn include_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in roots {
        dirs.push(root.join("include"));
        dirs.push(root.join("targets/x86_64-linux/include"));
    }
    for site in site_packages() {
        dirs.extend(nvidia_packages(&site).iter().map(|p| p.join("include")));
    }
    existing_once(dirs)
}

/// The directories of `dirs` that exist, without repeats, in their first order.
fn existing_once(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(dirs.len());
    for dir in dirs {
        if dir.is_dir() && !out.contains(&dir) {
            out.push(dir);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "chorus-driver-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn versioned_roots_come_newest_first() {
        let dir = scratch("versions");
        for sub in ["cuda-12.9", "cuda-13.0", "cuda-12.10", "cuda-x.y", "other"] {
            std::fs::create_dir(dir.join(sub)).unwrap();
        }
        assert_eq!(
            versioned_roots(&dir),
            [
                dir.join("cuda-13.0"),
                dir.join("cuda-12.10"),
                dir.join("cuda-12.9")
            ]
        );
        assert!(versioned_roots(&dir.join("absent")).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn install_roots_start_with_usr_local_cuda_and_end_with_opt_cuda() {
        let roots = install_roots();
        assert_eq!(roots.first(), Some(&PathBuf::from("/usr/local/cuda")));
        assert_eq!(roots.last(), Some(&PathBuf::from("/opt/cuda")));
    }

    #[test]
    fn lib_and_include_dirs_are_those_that_exist_each_once() {
        let root = scratch("root");
        for sub in ["lib64", "targets/x86_64-linux/lib", "include"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let roots = [root.clone(), root.join("absent"), root.clone()];
        let libs = lib_dirs(&roots);
        assert_eq!(
            libs.iter()
                .filter(|d| d.starts_with(&root))
                .collect::<Vec<_>>(),
            [&root.join("lib64"), &root.join("targets/x86_64-linux/lib")]
        );
        let includes = include_dirs(&roots);
        assert_eq!(
            includes
                .iter()
                .filter(|d| d.starts_with(&root))
                .collect::<Vec<_>>(),
            [&root.join("include")]
        );
        assert!(libs.iter().chain(&includes).all(|d| d.is_dir()));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn pip_packages_put_the_toolkit_wheels_first() {
        let site = scratch("site");
        for sub in ["nvidia/nccl/lib", "nvidia/cu13/lib", "nvidia/cublas/lib"] {
            std::fs::create_dir_all(site.join(sub)).unwrap();
        }
        let nvidia = site.join("nvidia");
        assert_eq!(
            nvidia_packages(&site),
            [
                nvidia.join("cu13"),
                nvidia.join("cu12"),
                nvidia.join("cublas"),
                nvidia.join("nccl")
            ]
        );
        std::fs::remove_dir_all(&site).unwrap();
    }
}
