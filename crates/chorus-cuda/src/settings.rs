//! The settings value: the seed's `*nvcc-binary*`, `*nvcc-options*`, `*tmp-path*` and
//! `*show-messages*`, plus the compiler choice.
//!
//! The process-wide value starts from the `CHORUS_*` environment variables
//! ([`Settings::from_env`]) and can be replaced with [`set_settings`] or changed with
//! [`update_settings`]. Messages go through `tracing`: with `show_messages` they are `info`
//! events, otherwise `debug`.

use crate::error::{Error, Result};
use chorus_cache::{FLAG_VALUES, parse_flag}; // one spelling of on/off for every backend
use std::path::PathBuf;
use std::sync::{PoisonError, RwLock};

/// Which compiler turns generated CUDA C into a module image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompilerChoice {
    /// NVRTC in process when it loads, else nvcc.
    #[default]
    Auto,
    /// NVRTC only (an error when it does not load).
    Nvrtc,
    /// nvcc as a subprocess.
    Nvcc,
}

impl CompilerChoice {
    /// Parses `auto`, `nvrtc` or `nvcc` (any case).
    pub fn parse(text: &str) -> Option<CompilerChoice> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(CompilerChoice::Auto),
            "nvrtc" => Some(CompilerChoice::Nvrtc),
            "nvcc" => Some(CompilerChoice::Nvcc),
            _ => None,
        }
    }
}

/// Which module image to build.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ImageChoice {
    /// Cubin for the device's architecture when a device is known; otherwise the seed's rule,
    /// PTX when the toolkit is no newer than the driver, else cubin (see [`crate::compile`]).
    #[default]
    Auto,
    /// Always PTX (JIT-compiled by the driver at load).
    Ptx,
    /// Always cubin for the device's exact architecture: no JIT at load (about 20 µs instead
    /// of milliseconds for an uncached PTX JIT on an H200).
    Cubin,
}

impl ImageChoice {
    /// Parses `auto`, `ptx` or `cubin` (any case).
    pub fn parse(text: &str) -> Option<ImageChoice> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(ImageChoice::Auto),
            "ptx" => Some(ImageChoice::Ptx),
            "cubin" => Some(ImageChoice::Cubin),
            _ => None,
        }
    }
}

/// How Chorus compiles kernels and reports what it does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Settings {
    /// The nvcc to run. `None`, `"nvcc"` and `"nvcc.exe"` mean auto-detect
    /// ([`crate::find_nvcc`]). Environment: `CHORUS_NVCC`.
    pub nvcc_binary: Option<PathBuf>,
    /// Extra compiler options (the seed's `*nvcc-options*`), passed to nvcc and, where NVRTC
    /// understands them, to NVRTC. Environment: `CHORUS_NVCC_OPTIONS`, split at white space.
    pub nvcc_options: Vec<String>,
    /// Where nvcc's private temporary directories are made (default: the OS temp dir).
    /// Environment: `CHORUS_TMPDIR`.
    pub tmp_dir: Option<PathBuf>,
    /// NVRTC, nvcc, or NVRTC when present. Environment: `CHORUS_COMPILER=auto|nvrtc|nvcc`.
    pub compiler: CompilerChoice,
    /// PTX, cubin, or the seed's rule. Environment: `CHORUS_IMAGE=auto|ptx|cubin`.
    pub image: ImageChoice,
    /// Report compiles, loads and cache hits as `info` events (else `debug`).
    /// Environment: `CHORUS_SHOW_MESSAGES=0|1|true|false|yes|no|on|off` (empty: off).
    pub show_messages: bool,
    /// Keep compiled modules on disk ([`crate::cache`]). Environment: `CHORUS_DISK_CACHE`
    /// takes the same values as `CHORUS_SHOW_MESSAGES`; `0` (or `false`, `no`, `off`) turns it off.
    pub disk_cache: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            nvcc_binary: None,
            nvcc_options: Vec::new(),
            tmp_dir: None,
            compiler: CompilerChoice::Auto,
            image: ImageChoice::Auto,
            show_messages: false,
            disk_cache: true,
        }
    }
}

impl Settings {
    /// The defaults overridden by the `CHORUS_*` environment variables. An unparsable value is
    /// an error naming the variable and the values it accepts (every invalid variable, when
    /// there are several).
    pub fn from_env() -> Result<Settings> {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`Settings::from_env`] over any source of variables (for tests and embedders).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Settings> {
        let (settings, errors) = Settings::from_lookup_keeping_valid(get);
        if errors.is_empty() {
            return Ok(settings);
        }
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        Err(Error::InvalidArgument(messages.join("; ")))
    }

    /// The defaults overridden by every valid variable `get` gives, and an error (naming the
    /// variable and the values it accepts) for each invalid one, whose setting keeps its
    /// default: one bad variable does not undo the others.
    pub fn from_lookup_keeping_valid(
        get: impl Fn(&str) -> Option<String>,
    ) -> (Settings, Vec<Error>) {
        let mut s = Settings::default();
        let mut errors = Vec::new();
        if let Some(v) = get("CHORUS_NVCC").filter(|v| !v.is_empty()) {
            s.nvcc_binary = Some(PathBuf::from(v));
        }
        if let Some(v) = get("CHORUS_NVCC_OPTIONS") {
            s.nvcc_options = v.split_whitespace().map(str::to_owned).collect();
        }
        if let Some(v) = get("CHORUS_TMPDIR").filter(|v| !v.is_empty()) {
            s.tmp_dir = Some(PathBuf::from(v));
        }
        if let Some(v) = get("CHORUS_COMPILER") {
            match CompilerChoice::parse(&v) {
                Some(choice) => s.compiler = choice,
                None => errors.push(invalid("CHORUS_COMPILER", &v, "auto, nvrtc or nvcc")),
            }
        }
        if let Some(v) = get("CHORUS_IMAGE") {
            match ImageChoice::parse(&v) {
                Some(choice) => s.image = choice,
                None => errors.push(invalid("CHORUS_IMAGE", &v, "auto, ptx or cubin")),
            }
        }
        if let Some(v) = get("CHORUS_SHOW_MESSAGES") {
            match parse_flag(&v) {
                Some(flag) => s.show_messages = flag,
                None => errors.push(invalid("CHORUS_SHOW_MESSAGES", &v, FLAG_VALUES)),
            }
        }
        if let Some(v) = get("CHORUS_DISK_CACHE") {
            match parse_flag(&v) {
                Some(flag) => s.disk_cache = flag,
                None => errors.push(invalid("CHORUS_DISK_CACHE", &v, FLAG_VALUES)),
            }
        }
        (s, errors)
    }

    /// The nvcc binary the user named, or `None` for auto-detection (`"nvcc"` and
    /// `"nvcc.exe"` also mean auto-detect, as in the seed).
    pub fn explicit_nvcc(&self) -> Option<&std::path::Path> {
        self.nvcc_binary
            .as_deref()
            .filter(|p| !matches!(p.to_str(), Some("nvcc" | "nvcc.exe" | "")))
    }
}

/// The error for the variable `name` set to the invalid `value`.
fn invalid(name: &str, value: &str, accepted: &str) -> Error {
    Error::InvalidArgument(format!(
        "{name}={value:?} is not valid: expected {accepted}"
    ))
}

static SETTINGS: RwLock<Option<Settings>> = RwLock::new(None);

/// The process-wide settings (first read from the environment; each invalid variable is
/// reported once as a `tracing` warning naming it and the values it accepts, and only its own
/// setting keeps the default: the valid variables still count).
pub fn settings() -> Settings {
    if let Some(s) = SETTINGS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        return s.clone();
    }
    let mut slot = SETTINGS.write().unwrap_or_else(PoisonError::into_inner);
    let settings = slot
        .get_or_insert_with(|| {
            let (settings, errors) =
                Settings::from_lookup_keeping_valid(|name| std::env::var(name).ok());
            for e in errors {
                tracing::warn!("{e}; using the default for it");
            }
            settings
        })
        .clone();
    chorus_driver::set_show_messages(settings.show_messages);
    settings
}

/// Replaces the process-wide settings.
pub fn set_settings(settings: Settings) {
    chorus_driver::set_show_messages(settings.show_messages);
    *SETTINGS.write().unwrap_or_else(PoisonError::into_inner) = Some(settings);
}

/// Changes the process-wide settings in place.
pub fn update_settings(change: impl FnOnce(&mut Settings)) {
    let mut s = settings();
    change(&mut s);
    set_settings(s);
}

/// Emits a message about what the backend does: `info` when `show_messages` is set, else `debug`.
pub(crate) fn message(text: impl AsRef<str>) {
    if settings().show_messages {
        tracing::info!(target: "chorus_cuda", "{}", text.as_ref());
    } else {
        tracing::debug!(target: "chorus_cuda", "{}", text.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<Settings> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn environment_overrides_defaults() {
        let s = from(&[
            ("CHORUS_NVCC", "/opt/cuda/bin/nvcc"),
            ("CHORUS_NVCC_OPTIONS", " -lineinfo  --use_fast_math "),
            ("CHORUS_TMPDIR", "/var/tmp"),
            ("CHORUS_COMPILER", "NVCC"),
            ("CHORUS_SHOW_MESSAGES", "1"),
            ("CHORUS_DISK_CACHE", "off"),
            ("CHORUS_IMAGE", "Cubin"),
        ])
        .unwrap();
        assert_eq!(s.nvcc_binary, Some(PathBuf::from("/opt/cuda/bin/nvcc")));
        assert_eq!(s.nvcc_options, ["-lineinfo", "--use_fast_math"]);
        assert_eq!(s.tmp_dir, Some(PathBuf::from("/var/tmp")));
        assert_eq!(s.compiler, CompilerChoice::Nvcc);
        assert!(s.show_messages);
        assert!(!s.disk_cache);
        assert_eq!(s.image, ImageChoice::Cubin);
        assert_eq!(from(&[]).unwrap(), Settings::default());
    }

    #[test]
    fn invalid_variables_are_errors() {
        let e = from(&[("CHORUS_COMPILER", "clang")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("CHORUS_COMPILER") && e.contains("nvrtc"), "{e}");
        assert!(from(&[("CHORUS_SHOW_MESSAGES", "maybe")]).is_err());
        assert!(from(&[("CHORUS_IMAGE", "fatbin")]).is_err());
    }

    #[test]
    fn an_invalid_variable_names_its_accepted_values_and_keeps_the_others() {
        let vars: HashMap<&str, &str> = [
            ("CHORUS_IMAGE", "cubn"),
            ("CHORUS_NVCC", "/opt/cuda/bin/nvcc"),
            ("CHORUS_COMPILER", "nvcc"),
            ("CHORUS_DISK_CACHE", "nope"),
            ("CHORUS_SHOW_MESSAGES", "on"),
        ]
        .into_iter()
        .collect();
        let (s, errors) =
            Settings::from_lookup_keeping_valid(|k| vars.get(k).map(|v| v.to_string()));
        assert_eq!(s.nvcc_binary, Some(PathBuf::from("/opt/cuda/bin/nvcc")));
        assert_eq!(s.compiler, CompilerChoice::Nvcc);
        assert!(s.show_messages);
        assert_eq!(
            s.image,
            ImageChoice::Auto,
            "the invalid one keeps its default"
        );
        assert!(s.disk_cache, "the invalid one keeps its default");
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages[0].contains("CHORUS_IMAGE=\"cubn\"")
                && messages[0].contains("auto, ptx or cubin"),
            "{messages:?}"
        );
        assert!(
            messages[1].contains("CHORUS_DISK_CACHE") && messages[1].contains("true, yes, on"),
            "{messages:?}"
        );
        // The strict form reports both.
        let e = Settings::from_lookup(|k| vars.get(k).map(|v| v.to_string()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CHORUS_IMAGE") && e.contains("CHORUS_DISK_CACHE"),
            "{e}"
        );
    }

    #[test]
    fn nvcc_and_nvcc_exe_mean_auto_detect() {
        for name in ["nvcc", "nvcc.exe"] {
            let s = Settings {
                nvcc_binary: Some(name.into()),
                ..Settings::default()
            };
            assert_eq!(s.explicit_nvcc(), None);
        }
        let s = Settings {
            nvcc_binary: Some("/x/nvcc".into()),
            ..Settings::default()
        };
        assert_eq!(s.explicit_nvcc(), Some(std::path::Path::new("/x/nvcc")));
    }
}
