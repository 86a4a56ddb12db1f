//! Finding and running nvcc (the seed's `find-nvcc`, `nvcc-available-p`, `nvcc-arch-option`).

use crate::diagnostics::{compile_error, source_file_name};
use crate::error::{Error, Result};
use crate::image::ImageKind;
use crate::settings::{Settings, message, settings};
use crate::tempdir::PrivateTempDir;
use chorus_driver::search::SearchEnv;
use chorus_driver::toolkit;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The absolute path of nvcc, or `None`.
///
/// Looks at, in order: the settings' nvcc binary (unless it is `"nvcc"`/`"nvcc.exe"`, which
/// mean auto-detect), `PATH`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`, `$CUDA_ROOT/bin`,
/// `$CUDA_PATH_VX_Y/bin` (newest version first), the install directories' `bin`
/// (`/usr/local/cuda`, `/usr/local/cuda-*` newest first, `/opt/cuda`; on Windows
/// `C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v*` newest first) and pip's
/// `nvidia/cu13/bin`, `nvidia/cu12/bin`, `nvidia/cuda_nvcc/bin` (see [`toolkit`]).
pub fn find_nvcc() -> Option<PathBuf> {
    find_nvcc_with(&settings())
}

/// [`find_nvcc`] with the given settings, or [`Error::NvccNotFound`] naming where it looked.
pub fn require_nvcc_with(settings: &Settings) -> Result<PathBuf> {
    find_nvcc_with(settings).ok_or_else(|| Error::NvccNotFound {
        searched: nvcc_search_description(settings),
    })
}

/// Where [`find_nvcc_with`] looks, in order, for messages: the explicit nvcc setting when
/// there is one (then nothing else), else every candidate path (`PATH`'s folders, the
/// toolkits', pip's).
pub fn nvcc_search_description(settings: &Settings) -> String {
    if let Some(explicit) = settings.explicit_nvcc() {
        return format!(
            "the nvcc setting (CHORUS_NVCC) names {}, which is not an executable file",
            explicit.display()
        );
    }
    let candidates = nvcc_candidates(&SearchEnv::host());
    let places: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    let looked = if places.is_empty() {
        "no PATH, toolkit or pip folder to look in".to_owned()
    } else {
        format!("looked at {}", places.join(", "))
    };
    format!("{looked}; CHORUS_NVCC can name it")
}

/// [`find_nvcc`] with the given settings.
pub fn find_nvcc_with(settings: &Settings) -> Option<PathBuf> {
    if let Some(explicit) = settings.explicit_nvcc() {
        return is_executable(explicit).then(|| absolute(explicit));
    }
    nvcc_candidates(&SearchEnv::host())
        .into_iter()
        .find(|p| is_executable(p))
        .map(|p| absolute(&p))
}

/// True when [`find_nvcc`] finds a compiler.
pub fn nvcc_available() -> bool {
    find_nvcc().is_some()
}

/// The nvcc option for a compute capability: `nvcc_arch_option(12, 0) == "-arch=sm_120"`.
pub fn nvcc_arch_option(major: u32, minor: u32) -> String {
    format!("-arch=sm_{major}{minor}")
}

/// True for an option that names a target architecture (`-arch…`, `--gpu-architecture…`,
/// `-gencode…`, `--generate-code…`).
pub fn is_arch_option(option: &str) -> bool {
    ["-arch", "--gpu-architecture", "-gencode", "--generate-code"]
        .iter()
        .any(|prefix| option.starts_with(prefix))
}

/// `options` with an architecture option first when none is there: `-arch=sm_XY` for the
/// compute capability `arch`, or `-arch=native` when there is none (outside a context).
pub fn with_arch_option(options: &[String], arch: Option<(u32, u32)>) -> Vec<String> {
    with_arch_option_for(options, arch, false)
}

/// [`with_arch_option`] for a source that may use arch-specific features (`arch_specific`:
/// it contains [`chorus_lang::cfamily::ARCH_SPECIFIC_GUARD`], printed for `wgmma` and
/// `setmaxnreg`): then the architecture is `sm_XYa` (`-arch=sm_90a`), and `sm_90a` when no
/// device is known, the only architecture with those features.
pub fn with_arch_option_for(
    options: &[String],
    arch: Option<(u32, u32)>,
    arch_specific: bool,
) -> Vec<String> {
    if options.iter().any(|o| is_arch_option(o)) {
        return options.to_vec();
    }
    let arch = match (arch, arch_specific) {
        (Some((major, minor)), false) => nvcc_arch_option(major, minor),
        (Some((major, minor)), true) => format!("{}a", nvcc_arch_option(major, minor)),
        (None, true) => "-arch=sm_90a".to_owned(),
        (None, false) => "-arch=native".to_owned(),
    };
    std::iter::once(arch)
        .chain(options.iter().cloned())
        .collect()
}

/// The CUDA release of an nvcc (`(13, 0)` from `release 13.0, V13.0.88`), asked once per path.
pub fn nvcc_version(nvcc: &Path) -> Result<(u32, u32)> {
    static VERSIONS: Mutex<Option<HashMap<PathBuf, (u32, u32)>>> = Mutex::new(None);
    if let Some(v) = VERSIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|m| m.get(nvcc))
    {
        return Ok(*v);
    }
    let out = Command::new(nvcc)
        .arg("--version")
        .output()
        .map_err(|e| Error::io_path("running", nvcc, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = parse_nvcc_version(&text).ok_or_else(|| {
        Error::io(
            format!("reading the version of {}", nvcc.display()),
            std::io::Error::other(format!("unexpected `nvcc --version` output: {text}")),
        )
    })?;
    VERSIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(nvcc.to_path_buf(), version);
    Ok(version)
}

/// Parses `release 13.0` out of `nvcc --version`.
fn parse_nvcc_version(text: &str) -> Option<(u32, u32)> {
    let rest = &text[text.find("release ")? + "release ".len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let (major, minor) = number.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Compiles CUDA C `source` with nvcc to PTX or cubin and returns the image's bytes.
///
/// `name` names the compilation unit in messages (and the `.cu` file). `options` are passed as
/// they are, before `-ptx`/`-cubin`: put an architecture option in them (see
/// [`with_arch_option`]); cubin needs a real one (`-arch=sm_90`, not `compute_90`). The files
/// live in a private temporary directory under the settings' `tmp_dir` (else the OS temp dir),
/// created with mode 0700 under a fresh name and removed afterwards; nvcc runs in it and is
/// given the files by their plain ASCII names, so that a temporary directory whose path has
/// spaces or non-ASCII characters (a Windows user name) never passes through nvcc's command
/// line. On Windows, MSVC's `cl.exe` is passed as `-ccbin` when needed (see the `msvc`
/// module). On failure the error has nvcc's log and the source lines it points at.
pub fn nvcc_compile(
    source: &str,
    name: &str,
    kind: ImageKind,
    options: &[String],
) -> Result<Vec<u8>> {
    nvcc_compile_with(&settings(), source, name, kind, options)
}

/// [`nvcc_compile`] with the given settings.
pub fn nvcc_compile_with(
    settings: &Settings,
    source: &str,
    name: &str,
    kind: ImageKind,
    options: &[String],
) -> Result<Vec<u8>> {
    let nvcc = require_nvcc_with(settings)?;
    let parent = settings.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = PrivateTempDir::new_in(&parent)?;
    let file = source_file_name(name);
    let input = dir.path().join(&file);
    let output = input.with_extension(kind.extension());
    std::fs::write(&input, source).map_err(|e| Error::io_path("writing", &input, e))?;
    let output_name = Path::new(&file).with_extension(kind.extension());
    let mut command = Command::new(&nvcc);
    command
        .args(crate::msvc::host_compiler_args(options))
        .args(options)
        .arg(match kind {
            ImageKind::Ptx => "-ptx",
            ImageKind::Cubin => "-cubin",
        })
        .arg("-o")
        .arg(&output_name)
        .arg(&file)
        .current_dir(dir.path());
    message(format!("compiling {name}: {command:?}"));
    let out = command
        .output()
        .map_err(|e| Error::io_path("running", &nvcc, e))?;
    if !out.status.success() {
        let log = failure_log(&out);
        return Err(compile_error(
            &nvcc.display().to_string(),
            name,
            &file,
            &log,
            source,
        ));
    }
    std::fs::read(&output).map_err(|e| Error::io_path("reading", &output, e))
}

/// What a failed nvcc run said: its stderr then stdout, or its exit status when it said nothing.
pub(crate) fn failure_log(out: &std::process::Output) -> String {
    let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
    log.push_str(&String::from_utf8_lossy(&out.stdout));
    if log.trim().is_empty() {
        log = format!("nvcc exited with {}", out.status);
    }
    log
}

/// Where nvcc may be in `env`, in search order (see [`find_nvcc`]).
fn nvcc_candidates(env: &SearchEnv) -> Vec<PathBuf> {
    let nvcc = env.platform().executable("nvcc");
    let mut dirs = env.paths_var("PATH");
    dirs.extend(
        toolkit::toolkit_roots_in(env)
            .iter()
            .map(|root| root.join("bin")),
    );
    for site in toolkit::site_packages_in(env) {
        let nvidia = site.join("nvidia");
        dirs.extend(["cu13", "cu12", "cuda_nvcc"].map(|p| nvidia.join(p).join("bin")));
    }
    let mut candidates: Vec<PathBuf> = Vec::with_capacity(dirs.len());
    for candidate in dirs.iter().map(|dir| dir.join(&nvcc)) {
        if !candidates.contains(&candidate) {
            candidates.push(candidate);
        }
    }
    candidates
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    true
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_options() {
        assert_eq!(nvcc_arch_option(12, 0), "-arch=sm_120");
        assert_eq!(nvcc_arch_option(9, 0), "-arch=sm_90");
        for o in [
            "-arch=sm_90",
            "-arch",
            "--gpu-architecture=compute_90",
            "-gencode=arch=compute_90a,code=sm_90a",
            "--generate-code=arch=compute_90,code=sm_90",
        ] {
            assert!(is_arch_option(o), "{o}");
        }
        for o in ["-lineinfo", "-O3", "--use_fast_math", "-march"] {
            assert!(!is_arch_option(o), "{o}");
        }
    }

    #[test]
    fn arch_option_goes_first_unless_present() {
        let user = vec!["-lineinfo".to_owned()];
        assert_eq!(
            with_arch_option(&user, Some((9, 0))),
            ["-arch=sm_90", "-lineinfo"]
        );
        assert_eq!(with_arch_option(&user, None), ["-arch=native", "-lineinfo"]);
        let explicit = vec!["-lineinfo".to_owned(), "-arch=sm_120".to_owned()];
        assert_eq!(with_arch_option(&explicit, Some((9, 0))), explicit);
        assert_eq!(
            with_arch_option_for(&user, Some((9, 0)), true),
            ["-arch=sm_90a", "-lineinfo"]
        );
        assert_eq!(
            with_arch_option_for(&user, None, true),
            ["-arch=sm_90a", "-lineinfo"]
        );
        assert_eq!(with_arch_option_for(&explicit, None, true), explicit);
    }

    #[test]
    fn parses_nvcc_versions() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n";
        assert_eq!(parse_nvcc_version(text), Some((13, 0)));
        assert_eq!(parse_nvcc_version("release 12.9, V12.9.86"), Some((12, 9)));
        assert_eq!(parse_nvcc_version("no version here"), None);
    }

    #[test]
    fn an_explicit_missing_nvcc_is_not_found() {
        let s = Settings {
            nvcc_binary: Some("/nonexistent/bin/nvcc".into()),
            ..Settings::default()
        };
        assert_eq!(find_nvcc_with(&s), None);
        let e =
            nvcc_compile_with(&s, "__global__ void k() {}", "k", ImageKind::Ptx, &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("(CHORUS_NVCC) names /nonexistent/bin/nvcc, which is not an executable"),
            "{e}"
        );
        let searched = nvcc_search_description(&Settings::default());
        assert!(
            searched.ends_with("; CHORUS_NVCC can name it")
                && (searched.starts_with("looked at ") || searched.starts_with("no PATH")),
            "{searched}"
        );
    }

    #[test]
    fn nvcc_is_searched_on_path_then_in_the_windows_toolkits_then_in_wheels() {
        use chorus_driver::search::Platform;
        let c = tempfile::tempdir().unwrap();
        let cuda = c
            .path()
            .join("Program Files")
            .join("NVIDIA GPU Computing Toolkit")
            .join("CUDA");
        for v in ["v12.9", "v13.10", "v13.0"] {
            std::fs::create_dir_all(cuda.join(v).join("bin")).unwrap();
        }
        let venv = c.path().join("Users").join("Zoë Ångström").join("venv");
        let wheel = venv.join("Lib").join("site-packages").join("nvidia");
        std::fs::create_dir_all(wheel.join("cu13").join("bin")).unwrap();
        let path = c.path().join("bin dir");
        let env = SearchEnv::new(
            Platform::Windows,
            [
                ("Path", path.clone().into_os_string()),
                ("CUDA_PATH", cuda.join("v13.0").into_os_string()),
                ("CUDA_PATH_V12_9", cuda.join("v12.9").into_os_string()),
                ("VIRTUAL_ENV", venv.clone().into_os_string()),
            ],
            c.path(),
        );
        let exe = |dir: PathBuf| dir.join("nvcc.exe");
        assert_eq!(
            nvcc_candidates(&env),
            [
                exe(path),
                exe(cuda.join("v13.0").join("bin")),
                exe(cuda.join("v12.9").join("bin")),
                exe(cuda.join("v13.10").join("bin")),
                exe(wheel.join("cu13").join("bin")),
                exe(wheel.join("cu12").join("bin")),
                exe(wheel.join("cuda_nvcc").join("bin")),
            ]
        );
        let unix = SearchEnv::new(Platform::Unix, [("PATH", "/a:/b")], c.path());
        let found = nvcc_candidates(&unix);
        assert_eq!(
            found[..2],
            [PathBuf::from("/a/nvcc"), PathBuf::from("/b/nvcc")]
        );
        assert_eq!(
            found[2],
            c.path()
                .join("usr")
                .join("local")
                .join("cuda")
                .join("bin")
                .join("nvcc")
        );
    }

    #[test]
    fn nvcc_compiles_in_a_temporary_directory_with_spaces_and_non_ascii_characters() {
        let Some(nvcc) = find_nvcc() else {
            assert!(std::env::var_os("CI").is_none(), "CI needs nvcc");
            eprintln!("skipped: no nvcc");
            return;
        };
        let parent = tempfile::tempdir().unwrap();
        let tmp = parent.path().join("Zoë's temp dir");
        std::fs::create_dir(&tmp).unwrap();
        let s = Settings {
            nvcc_binary: Some(nvcc),
            tmp_dir: Some(tmp.clone()),
            ..Settings::default()
        };
        let options = with_arch_option(&[], Some((9, 0)));
        let ptx = nvcc_compile_with(
            &s,
            "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }",
            "spaced kernel",
            ImageKind::Ptx,
            &options,
        )
        .unwrap();
        assert!(String::from_utf8_lossy(&ptx).contains(".entry k"));
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "cleaned up");
    }
}
