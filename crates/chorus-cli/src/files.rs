//! Reading kernel files and writing outputs without risk to the kernel file.

use std::io::Write;
use std::path::Path;

/// An output that is the input file (the same path, another path or link to it, or the file
/// standard input reads for `-`) would replace the kernel with its C: an error.
pub(crate) fn refuse_output_that_is_input(input: &str, output: &str) -> Result<(), String> {
    let output_handle = match same_file::Handle::from_path(output) {
        Ok(handle) => handle,
        // No such file yet (or unreadable): it cannot be the input.
        Err(_) => return Ok(()),
    };
    let input_handle = if input == "-" {
        same_file::Handle::stdin()
    } else {
        same_file::Handle::from_path(input)
    };
    match input_handle {
        Ok(input_handle) if input_handle == output_handle => Err(format!(
            "chorus: the output {output} is the input file {input}; choose another output"
        )),
        _ => Ok(()),
    }
}

/// Replaces `path` with `bytes` whole: a temporary file in the same directory, then a rename,
/// so that a failure leaves the old file (or none), never a truncated one. An existing file's
/// permissions are kept; a new one gets the usual `0666` less the umask.
pub(crate) fn write_file_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".chorus-").suffix(".tmp");
    #[cfg(unix)]
    let permissions = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o666)
    };
    #[cfg(unix)]
    builder.permissions(permissions);
    let mut temp = builder.tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Ok(existing) = std::fs::metadata(path) {
        temp.as_file().set_permissions(existing.permissions())?;
    }
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The text of `path` (`-` is standard input).
pub(crate) fn read(path: &str) -> Result<String, String> {
    let result = if path == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    result.map_err(|e| format!("chorus: cannot read {path}: {e}"))
}
