//! The disk level: one directory for every backend ([`dir`]: `CHORUS_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/chorus`, else `~/.cache/chorus`, else `chorus-cache-UID` in the temp dir;
//! made with mode 0700; on Windows `CHORUS_CACHE_DIR`, else `%LOCALAPPDATA%\chorus\cache`, else
//! `chorus-cache-USERNAME` in the temp dir), each entry `KEY.EXT` (`KEY` 64 hex digits, `EXT`
//! its [`EntryKind`]'s): a header (magic, kind, payload length, SHA-256 of the payload) and the
//! payload. Entries are written to a temporary file `KEY.EXT.RANDOM.tmp` and renamed into place,
//! so readers see a whole entry or none; an entry whose header or checksum does not match
//! (truncated, corrupted, foreign) is deleted and rebuilt.
//!
//! The disk level trusts what it reads (the key is the only check), so it is careful where it
//! reads from:
//! - **The directory must be the user's own**: on Unix, owned by this process's effective user
//!   and writable by no one else (no group or other write bit). One that is not is not used
//!   ([`read`] answers [`Read::Refused`], [`write()`] and [`clear`] an error), and compiles go on
//!   without it. On Windows, where access is a matter of ACLs rather than owner and mode bits,
//!   the default places are the user's own by construction: `%LOCALAPPDATA%` and the temp dir
//!   (`%LOCALAPPDATA%\Temp`) lie in the user's profile, which grants access to the user, SYSTEM
//!   and the administrators only, and a new directory inherits that. Only the is-a-directory
//!   check applies there: reading a directory's ACL would take the Win32 security API (a
//!   `windows-sys` dependency) to guard a `CHORUS_CACHE_DIR` the user chose.
//! - **Entries are opened without following links and without blocking** (`O_NOFOLLOW |
//!   O_NONBLOCK` on Unix), must be regular files, and are read up to [`MAX_ENTRY_BYTES`];
//!   anything else at an entry's path is ignored (and replaced by the next write), never
//!   deleted.
//! - **[`clear`] deletes only Chorus's files**: names of the entry or temporary shape of a known
//!   kind whose content starts with the entry magic (an empty temporary file too), so pointing
//!   `CHORUS_CACHE_DIR` at a folder of other files is safe.

use sha2::{Digest, Sha256};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

const MAGIC: &[u8; 8] = b"CHORUSK\x01";
const HEADER_LEN: usize = 8 + 8 + 8 + 32;

/// The largest disk entry read (a cubin of a very large module is a few tens of MB); a bigger
/// file at an entry's path is not an entry.
pub const MAX_ENTRY_BYTES: u64 = 512 << 20;

/// What an entry holds: its file extension and the tag in its header (a `KEY.ptx` whose header
/// says cubin is damaged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EntryKind {
    extension: &'static str,
    tag: u8,
}

impl EntryKind {
    /// PTX text (chorus-cuda).
    pub const PTX: EntryKind = EntryKind {
        extension: "ptx",
        tag: 1,
    };
    /// A cubin (chorus-cuda).
    pub const CUBIN: EntryKind = EntryKind {
        extension: "cubin",
        tag: 2,
    };
    /// An AMD code object (chorus-hip).
    pub const HSACO: EntryKind = EntryKind {
        extension: "hsaco",
        tag: 3,
    };
    /// Every kind: [`clear`] deletes the entries of each (all backends share the directory).
    pub const ALL: [EntryKind; 3] = [EntryKind::PTX, EntryKind::CUBIN, EntryKind::HSACO];

    /// The file extension (`ptx`).
    pub fn extension(self) -> &'static str {
        self.extension
    }
}

/// Why the disk level could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The directory is not one the disk level may use (not a directory, another user's, or
    /// writable by others): the message says which and what to do.
    #[error("{0}")]
    Refused(String),
    /// A file operation failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done (`reading`, `creating`).
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

static DIR_OVERRIDE: RwLock<Option<PathBuf>> = RwLock::new(None);

/// The disk cache directory: the override ([`set_dir`]), `CHORUS_CACHE_DIR`,
/// `$XDG_CACHE_HOME/chorus`, `~/.cache/chorus`, or, when there is no home, the temp dir's
/// `chorus-cache-UID` (one per user; like every cache directory, used only when it is the
/// user's own: see the module documentation). On Windows: the override, `CHORUS_CACHE_DIR`,
/// `%LOCALAPPDATA%\chorus\cache`, or the temp dir's `chorus-cache-USERNAME`.
pub fn dir() -> PathBuf {
    if let Some(d) = DIR_OVERRIDE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
    {
        return d;
    }
    dir_from_env(cfg!(windows), |name| std::env::var_os(name))
}

/// Uses `dir` instead of the environment's cache directory, for every backend (`None`
/// restores it).
pub fn set_dir(dir: Option<PathBuf>) {
    *DIR_OVERRIDE.write().unwrap_or_else(PoisonError::into_inner) = dir;
}

/// [`dir`] by Windows's conventions (`windows`) or Unix's, from the variables `get` gives.
pub fn dir_from_env(windows: bool, get: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let var = |name| get(name).filter(|v| !v.is_empty());
    let path = |name| var(name).map(PathBuf::from);
    let configured = if windows {
        path("CHORUS_CACHE_DIR")
            .or_else(|| path("LOCALAPPDATA").map(|d| d.join("chorus").join("cache")))
    } else {
        path("CHORUS_CACHE_DIR")
            .or_else(|| path("XDG_CACHE_HOME").map(|d| d.join("chorus")))
            .or_else(|| path("HOME").map(|d| d.join(".cache").join("chorus")))
    };
    configured.unwrap_or_else(|| {
        // Built as an OsString: a user name need not be ASCII (nor, on Windows, valid UTF-16).
        let mut name = std::ffi::OsString::from("chorus-cache-");
        match (windows, effective_uid(), var("USERNAME")) {
            (false, Some(uid), _) => name.push(uid.to_string()),
            (true, _, Some(user)) => name.push(user),
            _ => name.push("user"),
        }
        std::env::temp_dir().join(name)
    })
}

/// This process's effective user id (`None` where there are no user ids).
fn effective_uid() -> Option<u32> {
    #[cfg(unix)]
    return Some(rustix::process::geteuid().as_raw());
    #[cfg(not(unix))]
    return None;
}

/// Whether the existing directory `dir` may hold this user's cache: on Unix, a directory (after
/// links) owned by the effective user that no one else may write to. `Ok(false)` when it does
/// not exist.
pub fn check_own_dir(dir: &Path) -> Result<bool, Error> {
    let metadata = match std::fs::metadata(dir) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io("inspecting", dir)(e)),
    };
    if !metadata.is_dir() {
        return Err(Error::Refused(format!(
            "{} is not a directory; not using it",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if metadata.uid() != me {
            return Err(Error::Refused(format!(
                "the cache directory {} belongs to user id {}, not to this user ({me}); not \
                 using it (set CHORUS_CACHE_DIR to a directory of your own)",
                dir.display(),
                metadata.uid()
            )));
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(Error::Refused(format!(
                "the cache directory {} may be written by other users (mode {:o}); not using it \
                 (chmod go-w it, or set CHORUS_CACHE_DIR to a private directory)",
                dir.display(),
                metadata.mode() & 0o7777
            )));
        }
    }
    Ok(true)
}

/// Warns, once per process, that the disk cache is off because of `error`.
pub fn warn_disk_cache_off(error: &Error) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| tracing::warn!(target: "chorus_cache", "{error}; the disk cache is off"));
}

/// Creates one directory (not its parents) readable only by its owner (mode 0700 on Unix).
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    #[cfg_attr(not(unix), expect(unused_mut, reason = "only Unix sets a mode"))]
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// Creates the cache directory (its parents as usual, itself with mode 0700), or checks that
/// the existing one is the user's own.
pub fn ensure_dir(dir: &Path) -> Result<(), Error> {
    if check_own_dir(dir)? {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
    }
    match create_private_dir(dir) {
        Ok(()) => Ok(()),
        // Made meanwhile by another process: it must pass the same check.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => check_own_dir(dir).map(drop),
        Err(e) => Err(io("creating", dir)(e)),
    }
}

/// The path of the entry `key` of `kind` in `dir`.
pub fn entry_path(dir: &Path, key: &str, kind: EntryKind) -> PathBuf {
    dir.join(format!("{key}.{}", kind.extension))
}

/// Deletes the entries of every kind (and temporary files of interrupted writes) that Chorus
/// wrote in `dir`, leaving every other file alone; returns how many files were deleted. A
/// directory that is not the user's own is an error; a missing one holds nothing.
pub fn clear(dir: &Path) -> Result<usize, Error> {
    if !check_own_dir(dir)? {
        return Ok(0);
    }
    let entries = std::fs::read_dir(dir).map_err(io("reading", dir))?;
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if is_chorus_file(&path) {
            std::fs::remove_file(&path).map_err(io("removing", &path))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Whether `path` is a file the disk cache wrote: an entry (`KEY.EXT`) or a temporary file
/// (`KEY.EXT.SUFFIX.tmp`) of a known kind by name, and by content (the entry magic; a
/// temporary file may also be empty, as it is just after its creation).
fn is_chorus_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some((key, rest)) = name.split_once('.') else {
        return false;
    };
    if key.len() != 64 || !key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return false;
    }
    let (extension, temporary) = match rest.split_once('.') {
        None => (rest, false),
        Some((extension, suffix)) => {
            let Some(middle) = suffix.strip_suffix("tmp") else {
                return false;
            };
            if !middle
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.')
            {
                return false;
            }
            (extension, true)
        }
    };
    if !EntryKind::ALL.iter().any(|k| k.extension == extension) {
        return false;
    }
    let mut head = Vec::new();
    match open_regular_file(path) {
        Ok(Some((file, _))) => {
            file.take(MAGIC.len() as u64).read_to_end(&mut head).is_ok()
                && (head.as_slice() == MAGIC || (temporary && head.is_empty()))
        }
        _ => false,
    }
}

/// The regular file at `path` and its length (`None` when there is nothing there), opened for
/// reading without following a link or blocking (a FIFO or a device is an error, not a wait).
fn open_regular_file(path: &Path) -> std::io::Result<Option<(std::fs::File, u64)>> {
    #[cfg(unix)]
    let opened = {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(std::fs::File::from)
        .map_err(std::io::Error::from)
    };
    #[cfg(not(unix))]
    let opened = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(std::io::Error::other("a link")),
        _ => std::fs::File::open(path),
    };
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(std::io::Error::other("a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(Some((file, metadata.len())))
}

/// The bytes of the regular file at `path` (see [`open_regular_file`]), `None` when there is
/// nothing there; a file longer than [`MAX_ENTRY_BYTES`] (even one that grows while read) is an
/// error, and is not read.
fn read_entry_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let too_large = || std::io::Error::other("larger than a cache entry may be");
    let Some((file, len)) = open_regular_file(path)? else {
        return Ok(None);
    };
    if len > MAX_ENTRY_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // One byte past the limit tells a file that grew past it from one exactly at it.
    file.take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// The bytes of a disk entry holding `payload`.
pub fn encode(kind: EntryKind, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[kind.tag, 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

/// The payload of a disk entry, or why it is unusable.
pub fn decode(kind: EntryKind, bytes: &[u8]) -> Result<&[u8], &'static str> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err("not a Chorus cache entry");
    }
    if bytes[8] != kind.tag {
        return Err("wrong image kind");
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[16..24]);
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != u64::from_le_bytes(len) {
        return Err("truncated");
    }
    if Sha256::digest(payload).as_slice() != &bytes[24..56] {
        return Err("checksum mismatch");
    }
    Ok(payload)
}

/// What [`read`] found.
#[derive(Debug)]
pub enum Read {
    /// A whole entry: its payload.
    Hit(Vec<u8>),
    /// Nothing at the entry's path.
    Absent,
    /// Something that is not an entry (a link, a FIFO, a device, a file over the size limit):
    /// left alone, and replaced by the next write. The message says what.
    Ignored(String),
    /// A damaged entry (truncated, corrupted, of another kind): deleted, to be rebuilt. The
    /// message says what.
    Corrupted(String),
    /// The directory is not the user's own: nothing was read.
    Refused(Error),
}

/// Reads the entry `key` of `kind` in the cache directory `dir`, if `dir` is the user's own.
pub fn read(dir: &Path, key: &str, kind: EntryKind) -> Read {
    match check_own_dir(dir) {
        Ok(true) => {}
        Ok(false) => return Read::Absent,
        Err(e) => return Read::Refused(e),
    }
    let path = entry_path(dir, key, kind);
    let bytes = match read_entry_file(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Read::Absent,
        Err(e) => return Read::Ignored(format!("ignoring {}: {e}", path.display())),
    };
    match decode(kind, &bytes) {
        Ok(payload) => Read::Hit(payload.to_vec()),
        Err(why) => {
            let _ = std::fs::remove_file(&path);
            Read::Corrupted(format!(
                "discarding cache entry {} ({why}); rebuilding",
                path.display()
            ))
        }
    }
}

/// Writes the entry `key` of `kind` holding `payload` in the cache directory `dir` (created if
/// missing, refused if not the user's own): a temporary file `NAME.RANDOM.tmp` beside it
/// (created new, never an existing file or link), then a rename.
pub fn write(dir: &Path, key: &str, kind: EntryKind, payload: &[u8]) -> Result<(), Error> {
    ensure_dir(dir)?;
    let path = entry_path(dir, key, kind);
    let name = format!("{key}.{}.", kind.extension);
    let mut temp = tempfile::Builder::new()
        .prefix(&name)
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io("creating a temporary file in", dir))?;
    temp.write_all(&encode(kind, payload))
        .map_err(io("writing", temp.path()))?;
    // On failure the temporary file is deleted when `e.file` drops.
    temp.persist(&path)
        .map_err(|e| io("renaming into", &path)(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_damage_is_detected() {
        let image = b"//\n.version 9.0\n.target sm_90\n".to_vec();
        let bytes = encode(EntryKind::PTX, &image);
        assert_eq!(decode(EntryKind::PTX, &bytes).unwrap(), &image[..]);
        assert_eq!(decode(EntryKind::CUBIN, &bytes), Err("wrong image kind"));
        assert_eq!(decode(EntryKind::HSACO, &bytes), Err("wrong image kind"));
        assert_eq!(
            decode(EntryKind::PTX, &bytes[..bytes.len() - 1]),
            Err("truncated")
        );
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(decode(EntryKind::PTX, &flipped), Err("checksum mismatch"));
        assert_eq!(
            decode(EntryKind::PTX, b"garbage"),
            Err("not a Chorus cache entry")
        );
    }

    /// A fresh private directory for one test (removed by the test).
    fn scratch(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("chorus-cache-unit-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        create_private_dir(&dir).unwrap();
        dir
    }

    const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn hit(read: Read) -> Option<Vec<u8>> {
        match read {
            Read::Hit(bytes) => Some(bytes),
            _ => None,
        }
    }

    #[test]
    fn written_entries_read_back_and_damaged_ones_are_deleted() {
        let dir = scratch("write");
        write(&dir, KEY, EntryKind::HSACO, b"\x7fELF code").unwrap();
        let back = hit(read(&dir, KEY, EntryKind::HSACO));
        let other_kind = read(&dir, KEY, EntryKind::CUBIN);
        let path = entry_path(&dir, KEY, EntryKind::HSACO);
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let damaged = read(&dir, KEY, EntryKind::HSACO);
        let deleted = !path.exists();
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(back.as_deref(), Some(&b"\x7fELF code"[..]));
        assert!(matches!(other_kind, Read::Absent), "{other_kind:?}");
        assert!(matches!(damaged, Read::Corrupted(ref m) if m.contains("checksum")));
        assert!(deleted);
        assert_eq!(leftovers, 0, "no temporary file is left behind");
    }

    #[test]
    fn a_fifo_at_an_entry_path_is_ignored_without_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join(format!("{KEY}.ptx"));
        match std::process::Command::new("mkfifo").arg(&fifo).status() {
            Ok(status) if status.success() => {}
            other => {
                eprintln!("skipped: `mkfifo` is not available here ({other:?})");
                let _ = std::fs::remove_dir_all(&dir);
                return;
            }
        }
        // On another thread, so that a read that blocks fails the test instead of hanging it.
        let (sender, receiver) = std::sync::mpsc::channel();
        let reader_dir = dir.clone();
        std::thread::spawn(move || {
            let read = hit(read(&reader_dir, KEY, EntryKind::PTX));
            let chorus_file = is_chorus_file(&reader_dir.join(format!("{KEY}.ptx")));
            let _ = sender.send((read, chorus_file));
        });
        let outcome = receiver.recv_timeout(std::time::Duration::from_secs(10));
        // Unblock a reader stuck in open (a writer's open completes it), then clean up.
        if outcome.is_err() {
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        let still_there = std::fs::symlink_metadata(&fifo).is_ok();
        std::fs::remove_dir_all(&dir).unwrap();
        let (read, chorus_file) = outcome.expect("reading a FIFO entry returned");
        assert_eq!(read, None);
        assert!(!chorus_file, "a FIFO is not an entry to clear");
        assert!(still_there, "a file Chorus did not write is not deleted");
    }

    #[test]
    fn entries_are_read_only_from_regular_files_without_following_links() {
        let dir = scratch("links");
        let image = b"//\n.version 9.0\n".to_vec();
        let valid = dir.join("elsewhere.bin");
        std::fs::write(&valid, encode(EntryKind::PTX, &image)).unwrap();
        let entry = dir.join(format!("{KEY}.ptx"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(&valid, &entry).unwrap();
        #[cfg(unix)]
        let through_link = hit(read(&dir, KEY, EntryKind::PTX));
        #[cfg(unix)]
        std::fs::remove_file(&entry).unwrap();
        std::fs::rename(&valid, &entry).unwrap();
        let regular = hit(read(&dir, KEY, EntryKind::PTX));
        // A file over the size limit is not read (a sparse file: no disk space used).
        let huge = dir.join(format!("{KEY}.cubin"));
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_ENTRY_BYTES + 1)
            .unwrap();
        let oversized = read(&dir, KEY, EntryKind::CUBIN);
        let huge_kept = huge.exists();
        std::fs::remove_dir_all(&dir).unwrap();
        #[cfg(unix)]
        assert_eq!(through_link, None, "a link is not followed");
        assert_eq!(regular.as_deref(), Some(&image[..]));
        assert!(matches!(oversized, Read::Ignored(_)), "{oversized:?}");
        assert!(huge_kept);
    }

    #[test]
    fn only_files_of_the_cache_layout_with_the_magic_are_chorus_files() {
        let dir = scratch("layout");
        let entry = encode(EntryKind::PTX, b"image");
        let cases: &[(String, &[u8], bool)] = &[
            (format!("{KEY}.ptx"), &entry, true),
            (format!("{KEY}.cubin"), b"CHORUSK\x01damaged", true),
            (
                format!("{KEY}.hsaco"),
                &encode(EntryKind::HSACO, b"code"),
                true,
            ),
            (format!("{KEY}.ptx.Ab12Cd.tmp"), b"", true),
            (format!("{KEY}.hsaco.Ab12Cd.tmp"), b"", true),
            (format!("{KEY}.ptx.4242.7.tmp"), &entry, true),
            (format!("{KEY}.ptx"), b"a user's file", false),
            (
                format!("{KEY}.hsaco"),
                b"\x7fELF a user's code object",
                false,
            ),
            ("notes.ptx".into(), &entry, false),
            ("kernel.cubin".into(), b"\x7fELF", false),
            ("build.tmp".into(), b"", false),
            (format!("{KEY}.txt"), &entry, false),
            (format!("{}.ptx", &KEY[1..]), &entry, false),
            (format!("{KEY}.ptx.x.tmp"), b"a user's file", false),
        ];
        let mut verdicts = Vec::new();
        for (name, content, _) in cases {
            let path = dir.join(name);
            std::fs::write(&path, content).unwrap();
            verdicts.push(is_chorus_file(&path));
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
        for ((name, _, expected), verdict) in cases.iter().zip(verdicts) {
            assert_eq!(verdict, *expected, "{name}");
        }
    }

    #[test]
    fn without_a_home_the_cache_is_per_user() {
        let vars = |name: &str| match name {
            "PATH" => Some("/usr/bin".into()),
            _ => None,
        };
        let dir = dir_from_env(false, vars);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        #[cfg(unix)]
        assert_eq!(
            name,
            format!("chorus-cache-{}", rustix::process::geteuid().as_raw())
        );
        assert!(name.starts_with("chorus-cache-"), "{name}");
        let home = dir_from_env(false, |name| (name == "HOME").then(|| "/home/u".into()));
        assert_eq!(home, Path::new("/home/u/.cache/chorus"));
    }

    #[test]
    fn the_windows_cache_is_under_localappdata() {
        let profile = Path::new("/c").join("Users").join("Zoë Ångström");
        let local = profile.join("AppData").join("Local");
        let vars = |name: &str| match name {
            "LOCALAPPDATA" => Some(local.clone().into_os_string()),
            "USERNAME" => Some("Zoë Ångström".into()),
            // Unix's variables do not count on Windows.
            "XDG_CACHE_HOME" | "HOME" => Some("/unix".into()),
            _ => None,
        };
        assert_eq!(dir_from_env(true, vars), local.join("chorus").join("cache"));
        let chosen = |name: &str| (name == "CHORUS_CACHE_DIR").then(|| "D:\\caches\\mine".into());
        assert_eq!(
            dir_from_env(true, |n| chosen(n).or_else(|| vars(n))),
            Path::new("D:\\caches\\mine")
        );
        // No LOCALAPPDATA: the temp dir, one per user name.
        let without = dir_from_env(true, |n| (n != "LOCALAPPDATA").then(|| vars(n)).flatten());
        assert_eq!(
            without,
            std::env::temp_dir().join("chorus-cache-Zoë Ångström")
        );
        let nobody = dir_from_env(true, |_| None);
        assert_eq!(nobody, std::env::temp_dir().join("chorus-cache-user"));
    }

    #[cfg(unix)]
    #[test]
    fn a_cache_directory_others_may_write_or_own_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("shared");
        std::fs::write(
            dir.join(format!("{KEY}.ptx")),
            encode(EntryKind::PTX, b"planted"),
        )
        .unwrap();
        let private = hit(read(&dir, KEY, EntryKind::PTX));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let world_writable = read(&dir, KEY, EntryKind::PTX);
        let refused = ensure_dir(&dir).unwrap_err().to_string();
        let not_written = write(&dir, KEY, EntryKind::CUBIN, b"x").is_err();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let group_writable = read(&dir, KEY, EntryKind::PTX);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another user's directory: only root can make one here.
        let nobody = 65534;
        let foreign = rustix::fs::chown(&dir, Some(rustix::fs::Uid::from_raw(nobody)), None)
            .ok()
            .map(|()| read(&dir, KEY, EntryKind::PTX));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(private.as_deref(), Some(&b"planted"[..]));
        assert!(
            matches!(world_writable, Read::Refused(_)),
            "{world_writable:?}"
        );
        assert!(
            refused.contains("may be written by other users"),
            "{refused}"
        );
        assert!(not_written);
        assert!(matches!(group_writable, Read::Refused(_)));
        match foreign {
            Some(read) => assert!(matches!(read, Read::Refused(_)), "{read:?}"),
            None => eprintln!("skipped the other-owner case: chown needs root"),
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_new_cache_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let parent = scratch("create");
        let dir = parent.join("nested").join("chorus");
        ensure_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        ensure_dir(&dir).unwrap();
        std::fs::remove_dir_all(&parent).unwrap();
        assert_eq!(mode & 0o777, 0o700);
    }
}
