//! What a search for CUDA's files reads, as a value: the platform's conventions, the
//! environment variables and the root of the file system (`/`, or the system drive `C:\`).
//!
//! Every search of [`crate::toolkit`] and [`crate::loader`] (and nvcc's and MSVC's in
//! `chorus-cuda`) has a form that takes a [`SearchEnv`], so that a Windows layout can be
//! tested on Linux: a [`SearchEnv::new`] with [`Platform::Windows`], variables of one's own and
//! a temporary directory as the root. The public functions without it use
//! [`SearchEnv::host`]. Paths are built by joining components (`root.join("Program
//! Files").join("NVIDIA GPU Computing Toolkit")`), never by formatting strings, and stay
//! [`PathBuf`]s / [`OsString`]s on their way to the OS, so that spaces and non-ASCII characters
//! arrive as they are.

use std::cmp::Reverse;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The CUDA version of the bindings (the `cuda-13` or `cuda-12` feature), whose library file
/// names cudarc loads.
pub const BINDINGS_VERSION: (u32, u32) = if cfg!(feature = "cuda-12") {
    (12, 9)
} else {
    (13, 0)
};

/// Whose conventions a search follows: library file names, install locations, separators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Linux and the other Unix systems: `libX.so`, `/usr/local/cuda`, `:`-separated lists.
    Unix,
    /// Windows: `X64_NN.dll`, `C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\vX.Y`,
    /// `;`-separated lists, variable names in any case.
    Windows,
}

impl Platform {
    /// The platform this program was built for.
    pub const HOST: Platform = if cfg!(windows) {
        Platform::Windows
    } else {
        Platform::Unix
    };

    /// The file name of the program `stem` (`nvcc`, `nvcc.exe`).
    pub fn executable(self, stem: &str) -> String {
        match self {
            Platform::Unix => stem.to_owned(),
            Platform::Windows => format!("{stem}.exe"),
        }
    }

    fn dll_prefix(self) -> &'static str {
        match self {
            Platform::Unix => "lib",
            Platform::Windows => "",
        }
    }

    fn dll_suffix(self) -> &'static str {
        match self {
            Platform::Unix => ".so",
            Platform::Windows => ".dll",
        }
    }
}

/// A snapshot of what a search reads: the platform, the environment variables and the root
/// of the file system.
#[derive(Clone, Debug)]
pub struct SearchEnv {
    platform: Platform,
    vars: Vec<(OsString, OsString)>,
    root: PathBuf,
}

impl SearchEnv {
    /// This process's: [`Platform::HOST`], its variables now, and `/` (on Windows the system
    /// drive, `%SystemDrive%\`, else `C:\`).
    pub fn host() -> SearchEnv {
        let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let root = match Platform::HOST {
            Platform::Unix => PathBuf::from("/"),
            Platform::Windows => {
                let drive = lookup(Platform::Windows, &vars, "SystemDrive")
                    .map_or_else(|| OsString::from("C:"), OsStr::to_os_string);
                let mut root = drive;
                root.push("\\");
                PathBuf::from(root)
            }
        };
        SearchEnv {
            platform: Platform::HOST,
            vars,
            root,
        }
    }

    /// An environment of one's own (for tests): `vars` in place of the process's variables,
    /// `root` in place of `/` or `C:\`.
    pub fn new<K, V>(
        platform: Platform,
        vars: impl IntoIterator<Item = (K, V)>,
        root: impl Into<PathBuf>,
    ) -> SearchEnv
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        SearchEnv {
            platform,
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            root: root.into(),
        }
    }

    /// Whose conventions this environment follows.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// The root of the file system (`/`, `C:\`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The value of the variable `name`, when it is set and not empty (on Windows the name's
    /// case does not matter, as there).
    pub fn var(&self, name: &str) -> Option<&OsStr> {
        lookup(self.platform, &self.vars, name)
    }

    /// [`SearchEnv::var`] as a path.
    pub fn path_var(&self, name: &str) -> Option<PathBuf> {
        self.var(name).map(PathBuf::from)
    }

    /// The paths of the list variable `name` (`PATH`, `PYTHONPATH`), split at the platform's
    /// separator; empty entries are dropped.
    pub fn paths_var(&self, name: &str) -> Vec<PathBuf> {
        let Some(value) = self.var(name) else {
            return Vec::new();
        };
        let paths: Vec<PathBuf> = if self.platform == Platform::HOST {
            std::env::split_paths(value).collect()
        } else {
            // Another platform's list (a test's): its entries are text of one's own.
            let separator = match self.platform {
                Platform::Unix => ':',
                Platform::Windows => ';',
            };
            value
                .to_string_lossy()
                .split(separator)
                .map(PathBuf::from)
                .collect()
        };
        paths
            .into_iter()
            .filter(|p| !p.as_os_str().is_empty())
            .collect()
    }

    /// The variables whose name starts with `prefix` (in any case on Windows), with the rest of
    /// the name; names that are not Unicode are skipped.
    pub fn vars_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a OsStr)> + 'a {
        self.vars.iter().filter_map(move |(k, v)| {
            let name = k.to_str()?;
            let head = name.get(..prefix.len())?;
            let matches = match self.platform {
                Platform::Unix => head == prefix,
                Platform::Windows => head.eq_ignore_ascii_case(prefix),
            };
            (matches && !v.is_empty()).then(|| (&name[prefix.len()..], v.as_os_str()))
        })
    }

    /// `root` joined with an absolute Unix path such as `/usr/local` (for the conventional
    /// Unix locations).
    pub fn unix_path(&self, absolute: &str) -> PathBuf {
        absolute
            .split('/')
            .filter(|c| !c.is_empty())
            .fold(self.root.clone(), |path, component| path.join(component))
    }

    /// Windows's 64-bit program folder: `%ProgramW6432%`, `%ProgramFiles%`, else
    /// `C:\Program Files`.
    pub fn program_files(&self) -> PathBuf {
        self.path_var("ProgramW6432")
            .or_else(|| self.path_var("ProgramFiles"))
            .unwrap_or_else(|| self.root.join("Program Files"))
    }

    /// Windows's 32-bit program folder: `%ProgramFiles(x86)%`, else `C:\Program Files (x86)`.
    pub fn program_files_x86(&self) -> PathBuf {
        self.path_var("ProgramFiles(x86)")
            .unwrap_or_else(|| self.root.join("Program Files (x86)"))
    }

    /// Windows's system library folder (where the display driver puts `nvcuda.dll`):
    /// `%SystemRoot%\System32`, else `C:\Windows\System32`.
    pub fn system32(&self) -> PathBuf {
        self.path_var("SystemRoot")
            .or_else(|| self.path_var("windir"))
            .unwrap_or_else(|| self.root.join("Windows"))
            .join("System32")
    }
}

/// The non-empty value of `name` in `vars` (case-insensitive names on Windows).
fn lookup<'a>(
    platform: Platform,
    vars: &'a [(OsString, OsString)],
    name: &str,
) -> Option<&'a OsStr> {
    vars.iter()
        .find(|(k, _)| match platform {
            Platform::Unix => k == name,
            Platform::Windows => k.to_str().is_some_and(|k| k.eq_ignore_ascii_case(name)),
        })
        .map(|(_, v)| v.as_os_str())
        .filter(|v| !v.is_empty())
}

/// The numbers of a version written with dots or underscores (`13.0`, `13_0`, `14.44.35207`),
/// compared number by number (`12.9 < 12.10 < 13.0`); `None` unless every part is a number.
pub fn version_key(text: &str) -> Option<Vec<u32>> {
    text.split(['.', '_'])
        .map(|part| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse().ok())
                .flatten()
        })
        .collect()
}

/// The directories in `parent` named `prefix` and a version (`cuda-13.0` for `cuda-`, `v13.0`
/// for `v`, `14.44.35207` for ``), newest version first; others are ignored, as is a
/// `parent` that cannot be read. Names are compared as text only where they are Unicode.
pub fn versioned_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some((version_key(name.strip_prefix(prefix)?)?, e.path()))
        })
        .collect();
    versioned.sort_by(|a, b| b.0.cmp(&a.0));
    versioned.into_iter().map(|(_, p)| p).collect()
}

/// The file names a CUDA library cudarc calls `name` (`cuda`, `nvrtc`, `cublas`) may have on
/// `platform` for the CUDA version `(major, minor)` of the bindings, in cudarc's order of
/// preference (`get_lib_name_candidates`), so that a library found by path is one cudarc's
/// loader will then find by name. The driver (`cuda`) is also looked for as `nvcuda`, Windows's
/// name for it (`nvcuda.dll`), as cudarc does. On Windows, NVRTC is `nvrtc64_<major>0_0.dll`
/// for every release of a major version (`nvrtc64_120_0.dll` for 12.0 … 12.9,
/// `nvrtc64_130_0.dll` for 13.x).
pub fn library_file_names(
    platform: Platform,
    name: &str,
    (major, minor): (u32, u32),
) -> Vec<String> {
    let stems: &[&str] = if name == "cuda" {
        &["cuda", "nvcuda"]
    } else {
        std::slice::from_ref(&name)
    };
    let (pre, suf) = (platform.dll_prefix(), platform.dll_suffix());
    let bits = if cfg!(target_pointer_width = "32") {
        32
    } else {
        64
    };
    let mut names = Vec::new();
    for lib in stems {
        names.extend([
            format!("{pre}{lib}{suf}"),
            format!("{pre}{lib}{bits}{suf}"),
            format!("{pre}{lib}{bits}_{major}{suf}"),
            format!("{pre}{lib}{bits}_{major}{minor}{suf}"),
            format!("{pre}{lib}{bits}_{major}{minor}_0{suf}"),
            format!("{pre}{lib}{bits}_{major}0_{minor}{suf}"),
            format!("{pre}{lib}{bits}_10{suf}"),
            format!("{pre}{lib}{bits}_11{suf}"),
            format!("{pre}{lib}{bits}_12{suf}"),
            format!("{pre}{lib}{bits}_{major}0_0{suf}"),
            format!("{pre}{lib}{bits}_9{suf}"),
            format!("{pre}{lib}{suf}.{major}"),
            format!("{pre}{lib}{suf}.12"),
            format!("{pre}{lib}{suf}.11"),
            format!("{pre}{lib}{suf}.10"),
            format!("{pre}{lib}{suf}.9"),
            format!("{pre}{lib}{suf}.1"),
        ]);
    }
    names
}

/// Of the file names `names` in NVRTC's directory, the builtins library NVRTC opens by name
/// at compile time: `libnvrtc-builtins.so.X.Y` (else `libnvrtc-builtins.so`) on Unix,
/// `nvrtc-builtins64_XY.dll` on Windows; the newest version when there are several, never the
/// `.alt` variant (which goes with `nvrtc…alt`, a library Chorus does not load).
pub fn nvrtc_builtins_file_name<'a>(
    platform: Platform,
    names: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let version = |name: &str| -> Option<Vec<u32>> {
        match platform {
            Platform::Unix => {
                let rest = name.strip_prefix("libnvrtc-builtins.so")?;
                if rest.is_empty() {
                    return Some(Vec::new());
                }
                version_key(rest.strip_prefix('.')?)
            }
            Platform::Windows => {
                let digits = name
                    .strip_prefix("nvrtc-builtins64_")?
                    .strip_suffix(".dll")?;
                version_key(digits)
            }
        }
    };
    names
        .into_iter()
        .filter_map(|name| Some((version(name)?, name)))
        .max_by_key(|(v, name)| (v.clone(), Reverse(*name)))
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(vars: &[(&str, &str)]) -> SearchEnv {
        SearchEnv::new(Platform::Windows, vars.iter().copied(), "/fake/c")
    }

    #[test]
    fn versions_compare_number_by_number() {
        let v = |s| version_key(s).unwrap();
        assert!(v("12.9") < v("12.10"));
        assert!(v("12.10") < v("13.0"));
        assert!(v("13.0") < v("13.10"));
        assert!(v("14.9.1") < v("14.44.35207"));
        assert_eq!(v("13_0"), [13, 0]);
        for bad in ["", "13.", ".0", "13.x", "v13.0", "13.0-rc"] {
            assert_eq!(version_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn windows_variables_are_found_in_any_case_and_unix_ones_exactly() {
        let env = windows(&[("Path", "a;b"), ("cuda_path", "C:\\CUDA"), ("EMPTY", "")]);
        assert_eq!(env.var("PATH"), Some(OsStr::new("a;b")));
        assert_eq!(env.var("CUDA_PATH"), Some(OsStr::new("C:\\CUDA")));
        assert_eq!(env.var("EMPTY"), None);
        assert_eq!(
            env.paths_var("PATH"),
            [PathBuf::from("a"), PathBuf::from("b")]
        );
        let unix = SearchEnv::new(Platform::Unix, [("Path", "x")], "/");
        assert_eq!(unix.var("PATH"), None);
        assert_eq!(unix.var("Path"), Some(OsStr::new("x")));
        let env = windows(&[
            ("CUDA_PATH_V13_0", "a"),
            ("cuda_path_v12_9", "b"),
            ("CUDA_PATH", "c"),
        ]);
        let mut suffixes: Vec<&str> = env
            .vars_with_prefix("CUDA_PATH_V")
            .map(|(s, _)| s)
            .collect();
        suffixes.sort();
        assert_eq!(suffixes, ["12_9", "13_0"]);
    }

    #[test]
    fn windows_folders_come_from_their_variables_else_from_the_root() {
        let bare = windows(&[]);
        assert_eq!(bare.program_files(), Path::new("/fake/c/Program Files"));
        assert_eq!(
            bare.program_files_x86(),
            Path::new("/fake/c/Program Files (x86)")
        );
        assert_eq!(bare.system32(), Path::new("/fake/c/Windows/System32"));
        let set = windows(&[
            ("ProgramFiles", "/d/Programme"),
            ("ProgramFiles(x86)", "/d/Programme (x86)"),
            ("SystemRoot", "/d/WINDOWS"),
        ]);
        assert_eq!(set.program_files(), Path::new("/d/Programme"));
        assert_eq!(set.program_files_x86(), Path::new("/d/Programme (x86)"));
        assert_eq!(set.system32(), Path::new("/d/WINDOWS/System32"));
        let unix = SearchEnv::new(Platform::Unix, Vec::<(&str, &str)>::new(), "/fake");
        assert_eq!(
            unix.unix_path("/usr/local/cuda"),
            Path::new("/fake/usr/local/cuda")
        );
    }

    #[test]
    fn the_host_environment_is_this_process() {
        let env = SearchEnv::host();
        assert_eq!(env.platform(), Platform::HOST);
        assert_eq!(
            env.var("PATH"),
            std::env::var_os("PATH")
                .as_deref()
                .filter(|v| !v.is_empty())
        );
        #[cfg(unix)]
        assert_eq!(env.root(), Path::new("/"));
    }

    #[test]
    fn library_names_match_cudarc_on_this_platform() {
        let version = BINDINGS_VERSION;
        let mut cudarc = cudarc::get_lib_name_candidates("cuda");
        cudarc.extend(cudarc::get_lib_name_candidates("nvcuda"));
        assert_eq!(library_file_names(Platform::HOST, "cuda", version), cudarc);
        assert_eq!(
            library_file_names(Platform::HOST, "nvrtc", version),
            cudarc::get_lib_name_candidates("nvrtc")
        );
    }

    #[test]
    fn windows_driver_and_nvrtc_names_per_version() {
        let driver = library_file_names(Platform::Windows, "cuda", (13, 0));
        assert!(driver.iter().any(|n| n == "nvcuda.dll"), "{driver:?}");
        assert!(
            driver
                .iter()
                .all(|n| n.ends_with(".dll") || n.contains(".dll."))
        );
        for ((major, minor), dll) in [
            ((13, 0), "nvrtc64_130_0.dll"),
            ((13, 2), "nvrtc64_130_0.dll"),
            ((12, 9), "nvrtc64_120_0.dll"),
            ((12, 0), "nvrtc64_120_0.dll"),
        ] {
            let names = library_file_names(Platform::Windows, "nvrtc", (major, minor));
            assert!(names.iter().any(|n| n == dll), "{major}.{minor}: {names:?}");
            assert!(!names.iter().any(|n| n.contains(".alt")));
        }
        let cublas = library_file_names(Platform::Windows, "cublas", (13, 0));
        assert!(cublas.iter().any(|n| n == "cublas64_13.dll"), "{cublas:?}");
        let unix = library_file_names(Platform::Unix, "nvrtc", (13, 0));
        assert!(unix.iter().any(|n| n == "libnvrtc.so.13"), "{unix:?}");
    }

    #[test]
    fn the_builtins_library_is_the_newest_plain_one() {
        let windows = [
            "nvrtc64_130_0.dll",
            "nvrtc64_130_0.alt.dll",
            "nvrtc-builtins64_130.dll",
            "nvrtc-builtins64_130.alt.dll",
        ];
        assert_eq!(
            nvrtc_builtins_file_name(Platform::Windows, windows),
            Some("nvrtc-builtins64_130.dll")
        );
        assert_eq!(
            nvrtc_builtins_file_name(
                Platform::Windows,
                [
                    "nvrtc-builtins64_129.dll",
                    "nvrtc-builtins64_1210.dll",
                    "nvrtc-builtins64_126.dll"
                ]
            ),
            Some("nvrtc-builtins64_1210.dll")
        );
        assert_eq!(
            nvrtc_builtins_file_name(Platform::Windows, ["nvrtc64_120_0.dll"]),
            None
        );
        let unix = [
            "libnvrtc.so.13",
            "libnvrtc-builtins.so",
            "libnvrtc-builtins.so.13.0",
            "libnvrtc-builtins.alt.so.13.0",
        ];
        assert_eq!(
            nvrtc_builtins_file_name(Platform::Unix, unix),
            Some("libnvrtc-builtins.so.13.0")
        );
        assert_eq!(
            nvrtc_builtins_file_name(Platform::Unix, ["libnvrtc-builtins.so"]),
            Some("libnvrtc-builtins.so")
        );
        assert_eq!(nvrtc_builtins_file_name(Platform::Unix, windows), None);
    }

    #[test]
    fn versioned_dirs_come_newest_first_by_number() {
        let parent = tempfile::tempdir().unwrap();
        for sub in [
            "v12.9", "v13.10", "v13.0", "v13.2", "vX", "v13.0-rc", "other",
        ] {
            std::fs::create_dir(parent.path().join(sub)).unwrap();
        }
        std::fs::write(parent.path().join("v14.0"), b"a file, not a toolkit").unwrap();
        let names: Vec<String> = versioned_dirs(parent.path(), "v")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["v13.10", "v13.2", "v13.0", "v12.9"]);
        assert!(versioned_dirs(&parent.path().join("absent"), "v").is_empty());
    }
}
