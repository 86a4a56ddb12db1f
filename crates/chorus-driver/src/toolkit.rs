//! Where a CUDA toolkit lives: the roots that `CUDA_PATH`, `CUDA_HOME`, `CUDA_ROOT` and
//! Windows's `CUDA_PATH_VX_Y` name, the conventional install directories (`/usr/local/cuda*`,
//! `/opt/cuda`; `C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v*`), and pip's
//! `site-packages/nvidia/*`.
//!
//! The driver's loader searches these for libraries the system loader does not find; the
//! compilers (NVRTC, nvcc) and the library bindings (cuBLAS … NCCL) search them too, so that
//! every part of Chorus looks in the same places in the same order.
//!
//! Each search has a form ending in `_in` that takes a [`SearchEnv`] (see [`crate::search`]):
//! the functions without it search this process's environment.
//!
//! Where the libraries are:
//!
//! | install | Unix | Windows |
//! |---|---|---|
//! | toolkit | `lib64`, `lib`, `targets/<arch>/lib` | `bin\x64` (CUDA 13), `bin` (CUDA 12) |
//! | pip wheel | `nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib` | `nvidia\cu13\bin\x86_64`, `nvidia\cuda_nvrtc\bin` |

use crate::search::{Platform, SearchEnv, version_key, versioned_dirs};
use std::path::{Path, PathBuf};

/// The roots that `$CUDA_PATH`, `$CUDA_HOME` and `$CUDA_ROOT` name, in that order, then those
/// of `$CUDA_PATH_VX_Y` (set by the Windows installer, one per toolkit), newest version first.
/// Unset or empty variables are skipped.
pub fn env_roots() -> Vec<PathBuf> {
    env_roots_in(&SearchEnv::host())
}

/// [`env_roots`] in `env`.
pub fn env_roots_in(env: &SearchEnv) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"]
        .iter()
        .filter_map(|var| env.path_var(var))
        .collect();
    // Versions first by number (V12_10 after V13_0, before V12_9); unparsable names last.
    let mut versioned: Vec<(Option<Vec<u32>>, &str, PathBuf)> = env
        .vars_with_prefix("CUDA_PATH_V")
        .map(|(suffix, value)| (version_key(suffix), suffix, PathBuf::from(value)))
        .collect();
    versioned.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    for (_, _, root) in versioned {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

/// The conventional install directories, listed whether or not they exist: on Unix
/// `/usr/local/cuda`, `/usr/local/cuda-X.Y` (newest first), `/opt/cuda`; on Windows the
/// installer's `C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\vX.Y` (newest first).
pub fn install_roots() -> Vec<PathBuf> {
    install_roots_in(&SearchEnv::host())
}

/// [`install_roots`] in `env`.
pub fn install_roots_in(env: &SearchEnv) -> Vec<PathBuf> {
    match env.platform() {
        Platform::Unix => {
            let mut roots = vec![env.unix_path("/usr/local/cuda")];
            roots.extend(versioned_dirs(&env.unix_path("/usr/local"), "cuda-"));
            roots.push(env.unix_path("/opt/cuda"));
            roots
        }
        Platform::Windows => versioned_dirs(&windows_toolkits_dir(env), "v"),
    }
}

/// The folder the Windows installer puts its `vX.Y` toolkits in.
fn windows_toolkits_dir(env: &SearchEnv) -> PathBuf {
    env.program_files()
        .join("NVIDIA GPU Computing Toolkit")
        .join("CUDA")
}

/// [`env_roots`] then [`install_roots`].
pub fn toolkit_roots() -> Vec<PathBuf> {
    toolkit_roots_in(&SearchEnv::host())
}

/// [`toolkit_roots`] in `env`.
pub fn toolkit_roots_in(env: &SearchEnv) -> Vec<PathBuf> {
    let mut roots = env_roots_in(env);
    roots.extend(install_roots_in(env));
    roots
}

/// Python `site-packages` / `dist-packages` directories that pip installs into, those that
/// exist: `PYTHONPATH`'s, then on Unix the system's (`/usr/local/lib/python3*`,
/// `/usr/lib/python3*`), the user's (`~/.local/lib/python3*`), `$VIRTUAL_ENV`'s and
/// `$CONDA_PREFIX`'s; on Windows `%VIRTUAL_ENV%\Lib`'s, `%CONDA_PREFIX%\Lib`'s, the user's
/// (`%APPDATA%\Python\Python3*`), python.org's per-user and all-users installs
/// (`%LOCALAPPDATA%\Programs\Python\Python3*`, `C:\Program Files\Python3*`) and those of the
/// Pythons on `PATH` (a virtual environment's `Scripts` too).
pub fn site_packages() -> Vec<PathBuf> {
    site_packages_in(&SearchEnv::host())
}

/// [`site_packages`] in `env`.
pub fn site_packages_in(env: &SearchEnv) -> Vec<PathBuf> {
    let mut out = env.paths_var("PYTHONPATH");
    match env.platform() {
        Platform::Unix => {
            let mut bases = vec![env.unix_path("/usr/local/lib"), env.unix_path("/usr/lib")];
            if let Some(home) = env.path_var("HOME") {
                bases.push(home.join(".local").join("lib"));
            }
            for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
                if let Some(prefix) = env.path_var(var) {
                    bases.push(prefix.join("lib"));
                }
            }
            for base in bases {
                for python in python_dirs(&base, "python3") {
                    out.push(python.join("site-packages"));
                    out.push(python.join("dist-packages"));
                }
            }
        }
        Platform::Windows => {
            for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
                if let Some(prefix) = env.path_var(var) {
                    out.push(prefix.join("Lib").join("site-packages"));
                }
            }
            if let Some(appdata) = env.path_var("APPDATA") {
                for python in python_dirs(&appdata.join("Python"), "Python3") {
                    out.push(python.join("site-packages"));
                }
            }
            let mut installs = Vec::new();
            if let Some(local) = env.path_var("LOCALAPPDATA") {
                installs.extend(python_dirs(
                    &local.join("Programs").join("Python"),
                    "Python3",
                ));
            }
            installs.extend(python_dirs(&env.program_files(), "Python3"));
            for dir in env.paths_var("PATH") {
                if dir.join("python.exe").is_file() {
                    // A virtual environment's Scripts folder, or an install's own.
                    if dir
                        .file_name()
                        .is_some_and(|n| n.eq_ignore_ascii_case("Scripts"))
                    {
                        installs.extend(dir.parent().map(Path::to_path_buf));
                    }
                    installs.push(dir);
                }
            }
            out.extend(
                installs
                    .into_iter()
                    .map(|i| i.join("Lib").join("site-packages")),
            );
        }
    }
    existing_once(out)
}

/// The directories in `parent` whose name starts with `prefix` (`python3.12`, `Python312`),
/// the highest version first.
fn python_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u32>, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let rest = name.strip_prefix(prefix)?;
            let number: String = rest
                .trim_start_matches('.')
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            Some((version_key(&number).unwrap_or_default(), e.path()))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found.into_iter().map(|(_, p)| p).collect()
}

/// The pip packages of NVIDIA's libraries under `site` (`site/nvidia/*`): the whole-toolkit
/// wheels `cu13` and `cu12` first, then the per-library ones (`cuda_nvrtc`, `cublas`, `nccl`,
/// …) in name order. Listed whether or not the first two exist.
pub fn nvidia_packages(site: &Path) -> Vec<PathBuf> {
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

/// The library directories of the toolkits at `roots`, then those of pip's `nvidia/*`
/// packages: those that exist, each once, in that order. On Unix `lib64`, `lib`,
/// `targets/x86_64-linux/lib`, `targets/sbsa-linux/lib` and the wheels' `lib`; on Windows,
/// where libraries are DLLs next to the programs, `bin\x64` (CUDA 13), `bin` (CUDA 12 and
/// before) and the wheels' `bin\x86_64` (cu13) and `bin` (cu12).
pub fn lib_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    lib_dirs_in(&SearchEnv::host(), roots)
}

/// [`lib_dirs`] in `env`.
pub fn lib_dirs_in(env: &SearchEnv, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in roots {
        match env.platform() {
            Platform::Unix => {
                dirs.push(root.join("lib64"));
                dirs.push(root.join("lib"));
                dirs.push(root.join("targets").join("x86_64-linux").join("lib"));
                dirs.push(root.join("targets").join("sbsa-linux").join("lib"));
            }
            Platform::Windows => {
                dirs.push(root.join("bin").join("x64"));
                dirs.push(root.join("bin"));
            }
        }
    }
    for site in site_packages_in(env) {
        for package in nvidia_packages(&site) {
            match env.platform() {
                Platform::Unix => dirs.push(package.join("lib")),
                Platform::Windows => {
                    dirs.push(package.join("bin").join("x86_64"));
                    dirs.push(package.join("bin"));
                }
            }
        }
    }
    existing_once(dirs)
}

/// The include directories of the toolkits at `roots` (`include`, and on Unix
/// `targets/x86_64-linux/include`), then pip's `nvidia/*/include`: those that exist, each
/// once, in that order.
pub fn include_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    include_dirs_in(&SearchEnv::host(), roots)
}

/// [`include_dirs`] in `env`.
pub fn include_dirs_in(env: &SearchEnv, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in roots {
        dirs.push(root.join("include"));
        if env.platform() == Platform::Unix {
            dirs.push(root.join("targets").join("x86_64-linux").join("include"));
        }
    }
    for site in site_packages_in(env) {
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
            versioned_dirs(&dir, "cuda-"),
            [
                dir.join("cuda-13.0"),
                dir.join("cuda-12.10"),
                dir.join("cuda-12.9")
            ]
        );
        assert!(versioned_dirs(&dir.join("absent"), "cuda-").is_empty());
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

    /// Makes each of `dirs` (components joined under `root`), and an empty file at each of
    /// `files`.
    fn tree(root: &Path, dirs: &[&[&str]], files: &[&[&str]]) {
        let join = |parts: &[&str]| parts.iter().fold(root.to_path_buf(), |p, c| p.join(c));
        for dir in dirs {
            std::fs::create_dir_all(join(dir)).unwrap();
        }
        for file in files {
            let path = join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"").unwrap();
        }
    }

    fn windows_env(root: &Path, vars: &[(&str, &Path)]) -> SearchEnv {
        SearchEnv::new(
            Platform::Windows,
            vars.iter()
                .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned())),
            root,
        )
    }

    const TOOLKITS: [&str; 3] = ["Program Files", "NVIDIA GPU Computing Toolkit", "CUDA"];

    #[test]
    fn cuda_path_comes_before_the_versioned_variables_newest_first() {
        let root = Path::new("/c");
        let (default, v13, v12_10, v12_9) = (
            root.join("CUDA").join("v13.0"),
            root.join("v13.0"),
            root.join("v12.10"),
            root.join("v12.9"),
        );
        let env = windows_env(
            root,
            &[
                ("CUDA_PATH_V12_9", &v12_9),
                ("CUDA_PATH", &default),
                ("CUDA_PATH_V13_0", &v13),
                ("CUDA_PATH_V12_10", &v12_10),
                ("CUDA_PATH_V13_0_DUPLICATE_OF_CUDA_PATH", &default),
            ],
        );
        assert_eq!(env_roots_in(&env), [default, v13, v12_10, v12_9]);
    }

    #[test]
    fn program_files_toolkits_come_newest_first_by_version() {
        let c = tempfile::tempdir().unwrap();
        let cuda = TOOLKITS
            .iter()
            .fold(c.path().to_path_buf(), |p, s| p.join(s));
        for v in ["v12.9", "v13.10", "v13.0", "v11.8", "v13.1-preview"] {
            std::fs::create_dir_all(cuda.join(v)).unwrap();
        }
        let env = windows_env(c.path(), &[]);
        let expected: Vec<PathBuf> = ["v13.10", "v13.0", "v12.9", "v11.8"]
            .iter()
            .map(|v| cuda.join(v))
            .collect();
        assert_eq!(install_roots_in(&env), expected);
        // %ProgramFiles% moves it (another drive, a localised name).
        let elsewhere = c.path().join("D").join("Programme");
        let env = windows_env(c.path(), &[("ProgramFiles", &elsewhere)]);
        assert!(install_roots_in(&env).is_empty());
        // The environment's roots come first.
        let env = windows_env(c.path(), &[("CUDA_PATH", &cuda.join("v13.0"))]);
        assert_eq!(
            toolkit_roots_in(&env)[..2],
            [cuda.join("v13.0"), cuda.join("v13.10")]
        );
    }

    #[test]
    fn windows_libraries_are_in_bin_x64_for_cuda_13_and_bin_for_cuda_12() {
        let c = tempfile::tempdir().unwrap();
        let toolkits = [TOOLKITS.as_slice(), &["v13.0", "bin", "x64"]].concat();
        let cuda12 = [TOOLKITS.as_slice(), &["v12.9", "bin"]].concat();
        tree(
            c.path(),
            &[],
            &[
                &[toolkits.as_slice(), &["nvrtc64_130_0.dll"]].concat(),
                &[toolkits.as_slice(), &["nvrtc-builtins64_130.dll"]].concat(),
                &[cuda12.as_slice(), &["nvrtc64_120_0.dll"]].concat(),
                &[TOOLKITS.as_slice(), &["v13.0", "include", "cuda_fp16.h"]].concat(),
                &[TOOLKITS.as_slice(), &["v13.0", "lib", "x64", "cuda.lib"]].concat(),
            ],
        );
        let env = windows_env(c.path(), &[]);
        let cuda = TOOLKITS
            .iter()
            .fold(c.path().to_path_buf(), |p, s| p.join(s));
        let libs = lib_dirs_in(&env, &toolkit_roots_in(&env));
        assert_eq!(
            libs,
            [
                cuda.join("v13.0").join("bin").join("x64"),
                cuda.join("v13.0").join("bin"),
                cuda.join("v12.9").join("bin"),
            ]
        );
        assert_eq!(
            include_dirs_in(&env, &toolkit_roots_in(&env)),
            [cuda.join("v13.0").join("include")]
        );
        let nvrtc13 = crate::search::library_file_names(Platform::Windows, "nvrtc", (13, 0));
        assert_eq!(
            crate::loader::find_library_file(&nvrtc13, &libs),
            Some(
                cuda.join("v13.0")
                    .join("bin")
                    .join("x64")
                    .join("nvrtc64_130_0.dll")
            )
        );
        let nvrtc12 = crate::search::library_file_names(Platform::Windows, "nvrtc", (12, 9));
        assert_eq!(
            crate::loader::find_library_file(&nvrtc12, &libs),
            Some(cuda.join("v12.9").join("bin").join("nvrtc64_120_0.dll"))
        );
    }

    #[test]
    fn windows_wheels_are_found_in_virtual_environments_user_sites_and_pythons_on_path() {
        // Folders with spaces and non-ASCII characters, as user names and projects have.
        let c = tempfile::tempdir().unwrap();
        let user = c.path().join("Users").join("Zoë Ångström");
        let venv = user.join("projets d'été").join(".venv");
        let appdata = user.join("AppData").join("Roaming");
        let local = user.join("AppData").join("Local");
        let python = local.join("Programs").join("Python").join("Python312");
        let venv_site = ["Lib", "site-packages", "nvidia", "cu13", "bin", "x86_64"];
        let user_site = [
            "Python",
            "Python311",
            "site-packages",
            "nvidia",
            "cuda_nvrtc",
            "bin",
        ];
        let python_site = ["Lib", "site-packages", "nvidia", "cublas", "bin"];
        tree(&venv, &[&venv_site], &[&["Scripts", "python.exe"]]);
        tree(&appdata, &[&user_site], &[]);
        tree(&python, &[&python_site], &[&["python.exe"]]);
        // A Python only on PATH (not a python.org install).
        let other = c.path().join("tools").join("Python 3.13");
        tree(&other, &[&["Lib", "site-packages"]], &[&["python.exe"]]);
        // Windows's separator, whatever the host's.
        let mut path = venv.join("Scripts").into_os_string();
        path.push(";");
        path.push(&other);
        let env = SearchEnv::new(
            Platform::Windows,
            [
                ("APPDATA".into(), appdata.clone().into_os_string()),
                ("LOCALAPPDATA".into(), local.clone().into_os_string()),
                ("Path".to_owned(), path),
            ],
            c.path(),
        );
        let sites = site_packages_in(&env);
        assert_eq!(
            sites,
            [
                appdata
                    .join("Python")
                    .join("Python311")
                    .join("site-packages"),
                python.join("Lib").join("site-packages"),
                venv.join("Lib").join("site-packages"),
                other.join("Lib").join("site-packages"),
            ]
        );
        let libs = lib_dirs_in(&env, &[]);
        let under =
            |base: &Path, parts: &[&str]| parts.iter().fold(base.to_path_buf(), |p, s| p.join(s));
        assert_eq!(
            libs,
            [
                under(&appdata, &user_site),
                under(&python, &python_site),
                under(&venv, &venv_site),
                under(&venv, &venv_site[..5]),
            ]
        );
        // VIRTUAL_ENV names it too; each directory once.
        let env = SearchEnv::new(
            Platform::Windows,
            [
                ("VIRTUAL_ENV", venv.clone()),
                ("PATH", venv.join("Scripts")),
            ],
            c.path(),
        );
        assert_eq!(
            site_packages_in(&env),
            [venv.join("Lib").join("site-packages")]
        );
    }

    #[test]
    fn unix_layouts_are_searched_under_the_root() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home").join("zoë");
        tree(
            root.path(),
            &[
                &[
                    "usr",
                    "local",
                    "cuda-13.0",
                    "targets",
                    "x86_64-linux",
                    "lib",
                ],
                &["usr", "local", "cuda-12.9", "lib64"],
                &["opt", "cuda", "include"],
                &[
                    "usr",
                    "lib",
                    "python3",
                    "dist-packages",
                    "nvidia",
                    "cu13",
                    "lib",
                ],
            ],
            &[],
        );
        tree(
            &home,
            &[&[
                ".local",
                "lib",
                "python3.12",
                "site-packages",
                "nvidia",
                "cuda_nvrtc",
                "lib",
            ]],
            &[],
        );
        let env = SearchEnv::new(Platform::Unix, [("HOME", home.clone())], root.path());
        let usr_local = root.path().join("usr").join("local");
        assert_eq!(
            install_roots_in(&env),
            [
                usr_local.join("cuda"),
                usr_local.join("cuda-13.0"),
                usr_local.join("cuda-12.9"),
                root.path().join("opt").join("cuda")
            ]
        );
        let libs = lib_dirs_in(&env, &install_roots_in(&env));
        let site = home
            .join(".local")
            .join("lib")
            .join("python3.12")
            .join("site-packages");
        assert_eq!(
            libs,
            [
                usr_local
                    .join("cuda-13.0")
                    .join("targets")
                    .join("x86_64-linux")
                    .join("lib"),
                usr_local.join("cuda-12.9").join("lib64"),
                root.path()
                    .join("usr")
                    .join("lib")
                    .join("python3")
                    .join("dist-packages")
                    .join("nvidia")
                    .join("cu13")
                    .join("lib"),
                site.join("nvidia").join("cuda_nvrtc").join("lib"),
            ]
        );
        assert_eq!(
            include_dirs_in(&env, &install_roots_in(&env)),
            [root.path().join("opt").join("cuda").join("include")]
        );
    }
}
