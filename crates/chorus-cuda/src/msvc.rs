//! MSVC's `cl.exe`, nvcc's host compiler on Windows, for nvcc's `-ccbin`.
//!
//! nvcc needs `cl.exe` even to make PTX (it preprocesses with it). From a Developer Command
//! Prompt it is on `PATH`; anywhere else nvcc fails with "Cannot find compiler 'cl.exe' in
//! PATH". So when the options name no host compiler and `PATH` has no `cl.exe`, Chorus finds one
//! and passes its folder as `-ccbin`; nvcc then runs the installation's `vcvars` script itself
//! (unless `--use-local-env` says not to). Where:
//!
//! 1. `%VCToolsInstallDir%` (set by the Developer Command Prompt and by `vcvars64.bat`);
//! 2. the installation `vswhere.exe` reports (`%ProgramFiles(x86)%\Microsoft Visual
//!    Studio\Installer\vswhere.exe -latest -products * -requires
//!    Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -property installationPath -utf8`),
//!    the Build Tools included;
//! 3. without vswhere, the installations under `Microsoft Visual Studio\<version>\<edition>`
//!    in both program folders;
//!
//! and in an installation, `VC\Tools\MSVC\<toolset>\bin\Hostx64\x64\cl.exe` of the newest
//! toolset (by number: 14.44.35207 after 14.9.0). Nothing here runs on other platforms.

use chorus_driver::search::{Platform, SearchEnv, versioned_dirs};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The arguments that name the host compiler for nvcc: `-ccbin <folder of cl.exe>` on Windows
/// when `options` name none (`-ccbin`, `--compiler-bindir`) and `PATH` has no `cl.exe`, and a
/// `cl.exe` is found (see the module documentation); otherwise none.
pub(crate) fn host_compiler_args(options: &[String]) -> Vec<OsString> {
    let env = SearchEnv::host();
    host_compiler_args_in(&env, options, || {
        static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                let found = find_cl_in(&env, run_vswhere);
                match &found {
                    Some(cl) => {
                        crate::settings::message(format!("nvcc's host compiler: {}", cl.display()))
                    }
                    None => crate::settings::message(
                        "no cl.exe found for nvcc (install Visual Studio's C++ tools, or run \
                         from a Developer Command Prompt)",
                    ),
                }
                found
            })
            .clone()
    })
}

/// [`host_compiler_args`] in `env`, `find_cl` finding `cl.exe` when one is needed.
fn host_compiler_args_in(
    env: &SearchEnv,
    options: &[String],
    find_cl: impl FnOnce() -> Option<PathBuf>,
) -> Vec<OsString> {
    if env.platform() != Platform::Windows || names_host_compiler(options) {
        return Vec::new();
    }
    if env
        .paths_var("PATH")
        .iter()
        .any(|dir| dir.join("cl.exe").is_file())
    {
        return Vec::new();
    }
    match find_cl().as_deref().and_then(Path::parent) {
        Some(dir) => vec!["-ccbin".into(), dir.as_os_str().to_owned()],
        None => Vec::new(),
    }
}

/// True when `options` choose nvcc's host compiler themselves.
fn names_host_compiler(options: &[String]) -> bool {
    options.iter().any(|o| {
        ["-ccbin", "--compiler-bindir"]
            .iter()
            .any(|flag| o == flag || o.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
    })
}

/// The `cl.exe` to give nvcc (see the module documentation); `vswhere` runs the program at
/// the path it is given and returns what it printed.
fn find_cl_in(env: &SearchEnv, vswhere: impl FnOnce(&Path) -> Option<String>) -> Option<PathBuf> {
    if let Some(tools) = env.path_var("VCToolsInstallDir") {
        let cl = cl_in_toolset(&tools);
        if cl.is_file() {
            return Some(cl);
        }
    }
    let program = vswhere_path(env);
    let reported = if program.is_file() {
        vswhere(&program).map_or_else(Vec::new, |out| parse_vswhere(&out))
    } else {
        Vec::new()
    };
    if let Some(cl) = reported
        .iter()
        .find_map(|i| newest_cl(std::slice::from_ref(i)))
    {
        return Some(cl);
    }
    newest_cl(&scanned_installations(env))
}

/// Where the Visual Studio Installer puts `vswhere.exe` (the same place for every version).
fn vswhere_path(env: &SearchEnv) -> PathBuf {
    env.program_files_x86()
        .join("Microsoft Visual Studio")
        .join("Installer")
        .join("vswhere.exe")
}

/// Runs `vswhere` for the newest installation with the x64 C++ tools; its output, when it ran
/// and printed UTF-8 (`-utf8`: paths with non-ASCII characters arrive whole).
fn run_vswhere(program: &Path) -> Option<String> {
    let out = std::process::Command::new(program)
        .args([
            "-latest",
            "-products",
            "*",
            "-requires",
            "Microsoft.VisualStudio.Component.VC.Tools.x86.x64",
            "-property",
            "installationPath",
            "-utf8",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).ok())
        .flatten()
}

/// The installation paths `vswhere -property installationPath` printed, one a line.
fn parse_vswhere(output: &str) -> Vec<PathBuf> {
    output
        .lines()
        .map(|line| line.trim_end_matches('\r').trim())
        .filter(|line| !line.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// `Microsoft Visual Studio\<version>\<edition>` under both program folders (VS 2017 to 2022
/// install under a year, later ones under a version number, in either folder).
fn scanned_installations(env: &SearchEnv) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for programs in [env.program_files(), env.program_files_x86()] {
        for version in versioned_dirs(&programs.join("Microsoft Visual Studio"), "") {
            let Ok(editions) = std::fs::read_dir(&version) else {
                continue;
            };
            let mut editions: Vec<PathBuf> = editions.flatten().map(|e| e.path()).collect();
            editions.sort();
            out.extend(editions);
        }
    }
    out
}

/// `cl.exe` of the newest MSVC toolset among the installations `installations`
/// (`VC\Tools\MSVC\<toolset>`) that has one.
fn newest_cl(installations: &[PathBuf]) -> Option<PathBuf> {
    let mut toolsets: Vec<(Vec<u32>, PathBuf)> = installations
        .iter()
        .flat_map(|installation| {
            versioned_dirs(&installation.join("VC").join("Tools").join("MSVC"), "")
        })
        .filter_map(|toolset| {
            let version = toolset
                .file_name()?
                .to_str()
                .and_then(chorus_driver::search::version_key)?;
            Some((version, cl_in_toolset(&toolset)))
        })
        .filter(|(_, cl)| cl.is_file())
        .collect();
    toolsets.sort_by(|a, b| b.0.cmp(&a.0));
    toolsets.into_iter().next().map(|(_, cl)| cl)
}

/// The 64-bit-hosted, 64-bit-targeting `cl.exe` of the MSVC toolset at `toolset`.
fn cl_in_toolset(toolset: &Path) -> PathBuf {
    toolset
        .join("bin")
        .join("Hostx64")
        .join("x64")
        .join("cl.exe")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(root: &Path, vars: Vec<(&str, OsString)>) -> SearchEnv {
        SearchEnv::new(Platform::Windows, vars, root)
    }

    /// Makes `<installation>\VC\Tools\MSVC\<toolset>\bin\Hostx64\x64\cl.exe` for each toolset.
    fn install(installation: &Path, toolsets: &[&str]) {
        for toolset in toolsets {
            let cl = cl_in_toolset(
                &installation
                    .join("VC")
                    .join("Tools")
                    .join("MSVC")
                    .join(toolset),
            );
            std::fs::create_dir_all(cl.parent().unwrap()).unwrap();
            std::fs::write(&cl, b"").unwrap();
        }
    }

    fn toolset_of(cl: &Path) -> String {
        cl.ancestors()
            .nth(4)
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn vswhere_output_is_one_installation_a_line() {
        let out = "C:\\Program Files\\Microsoft Visual Studio\\2022\\Community\r\n\
                   \r\n  D:\\VS Büro\\BuildTools  \r\n";
        assert_eq!(
            parse_vswhere(out),
            [
                PathBuf::from("C:\\Program Files\\Microsoft Visual Studio\\2022\\Community"),
                PathBuf::from("D:\\VS Büro\\BuildTools")
            ]
        );
        assert!(parse_vswhere("").is_empty());
    }

    #[test]
    fn the_newest_msvc_toolset_is_chosen_by_number() {
        let c = tempfile::tempdir().unwrap();
        let vs = c
            .path()
            .join("Microsoft Visual Studio")
            .join("2022")
            .join("Community");
        install(&vs, &["14.9.1", "14.44.35207", "14.38.33130"]);
        // A toolset folder without cl.exe does not count.
        std::fs::create_dir_all(vs.join("VC").join("Tools").join("MSVC").join("14.50.1")).unwrap();
        let cl = newest_cl(std::slice::from_ref(&vs)).unwrap();
        assert_eq!(toolset_of(&cl), "14.44.35207");
        assert!(cl.ends_with(Path::new("bin").join("Hostx64").join("x64").join("cl.exe")));
    }

    #[test]
    fn cl_is_found_through_vctoolsinstalldir_then_vswhere_then_the_program_folders() {
        let c = tempfile::tempdir().unwrap();
        let x86 = c.path().join("Program Files (x86)");
        let installer = vswhere_path(&windows(c.path(), vec![]));
        std::fs::create_dir_all(installer.parent().unwrap()).unwrap();
        std::fs::write(&installer, b"").unwrap();
        // Build Tools in the 32-bit folder, reported by vswhere; a newer Community edition
        // under the 64-bit one, with a path of spaces and non-ASCII characters.
        let build_tools = x86
            .join("Microsoft Visual Studio")
            .join("2019")
            .join("BuildTools");
        install(&build_tools, &["14.29.30133"]);
        let community = c
            .path()
            .join("Program Files")
            .join("Microsoft Visual Studio")
            .join("18")
            .join("Édition Community");
        install(&community, &["14.50.35717"]);
        let reported = format!("{}\r\n", build_tools.display());
        let env = windows(c.path(), vec![]);
        let mut asked = None;
        let cl = find_cl_in(&env, |program| {
            asked = Some(program.to_path_buf());
            Some(reported.clone())
        })
        .unwrap();
        assert_eq!(asked.as_deref(), Some(installer.as_path()));
        assert_eq!(toolset_of(&cl), "14.29.30133", "vswhere's choice");
        // vswhere reporting nothing usable: the newest toolset of the program folders.
        let cl = find_cl_in(&env, |_| None).unwrap();
        assert_eq!(toolset_of(&cl), "14.50.35717");
        assert!(cl.starts_with(&community));
        // %VCToolsInstallDir% first.
        let tools = build_tools
            .join("VC")
            .join("Tools")
            .join("MSVC")
            .join("14.29.30133");
        let env = windows(c.path(), vec![("VCToolsInstallDir", tools.clone().into())]);
        let cl = find_cl_in(&env, |_| panic!("vswhere is not run")).unwrap();
        assert_eq!(cl, cl_in_toolset(&tools));
        // Nothing installed: none.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(find_cl_in(&windows(empty.path(), vec![]), |_| None), None);
    }

    #[test]
    fn ccbin_is_added_only_on_windows_when_nothing_names_a_host_compiler() {
        let c = tempfile::tempdir().unwrap();
        let cl = c
            .path()
            .join("VS Tools ü")
            .join("bin")
            .join("Hostx64")
            .join("x64")
            .join("cl.exe");
        let found = || Some(cl.clone());
        let env = windows(c.path(), vec![]);
        assert_eq!(
            host_compiler_args_in(&env, &["-lineinfo".into()], found),
            [
                OsString::from("-ccbin"),
                cl.parent().unwrap().as_os_str().to_owned()
            ]
        );
        for named in [
            "-ccbin",
            "-ccbin=C:\\cl",
            "--compiler-bindir",
            "--compiler-bindir=x",
        ] {
            assert!(
                host_compiler_args_in(&env, &[named.into()], found).is_empty(),
                "{named}"
            );
        }
        assert!(!names_host_compiler(&["-ccbinx".into()]));
        assert!(host_compiler_args_in(&env, &[], || None).is_empty());
        // cl.exe on PATH: nvcc finds it itself.
        let on_path = c.path().join("dev prompt");
        std::fs::create_dir_all(&on_path).unwrap();
        std::fs::write(on_path.join("cl.exe"), b"").unwrap();
        let env = windows(c.path(), vec![("PATH", on_path.into())]);
        assert!(host_compiler_args_in(&env, &[], found).is_empty());
        let unix = SearchEnv::new(Platform::Unix, Vec::<(&str, &str)>::new(), "/");
        assert!(host_compiler_args_in(&unix, &[], found).is_empty());
    }
}
