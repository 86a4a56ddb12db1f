//! Issue 9's cache defects, through chorus-hip's cache (which is chorus-cuda's: one
//! implementation, `chorus-cache`): `chorus cache clear` deletes only what Chorus wrote (item
//! 2), a FIFO, a link or an oversized file at an entry's path is never read (item 7), and the
//! cache directory is the user's own, per user without a home (item 16). No ROCm needed.

use chorus_hip::cache;
use std::path::PathBuf;
use std::sync::Mutex;

/// The tests of this binary point the shared cache directory at their own folder in turn.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A fresh folder for one test, made the cache directory (removed by the test).
fn cache_dir_for(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-hip-cache-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    chorus_cache::disk::set_dir(Some(dir.clone()));
    dir
}

fn key(tag: &str) -> String {
    cache::Inputs {
        compiler: "test",
        arch: "gfx90a",
        options: &[],
        source: tag,
    }
    .key()
}

#[test]
fn entries_round_trip_in_a_new_private_directory() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = cache_dir_for("round-trip");
    let key = key("round trip");
    cache::disk_put(&key, b"\x7fELF code object");
    let back = cache::disk_get(&key);
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777
    };
    let path = cache::entry_path(&key);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(back.as_deref(), Some(&b"\x7fELF code object"[..]));
    assert_eq!(path, dir.join(format!("{key}.hsaco")));
    #[cfg(unix)]
    assert_eq!(mode, 0o700, "a new cache directory is private");
}

/// Item 2: clearing deletes the HIP entries Chorus wrote, and no other file, even with the
/// cache directory pointed at a folder of the user's own files.
#[test]
fn clearing_deletes_only_what_chorus_wrote() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = cache_dir_for("clear");
    let key = key("clear");
    cache::disk_put(&key, b"code");
    let users = [
        ("kernel.hsaco".to_string(), &b"\x7fELF the user's"[..]),
        (format!("{}.hsaco", crate::key("user")), &b"\x7fELF"[..]),
        ("build.tmp".to_string(), &b""[..]),
        ("notes.txt".to_string(), &b"notes"[..]),
    ];
    for (name, content) in &users {
        std::fs::write(dir.join(name), content).unwrap();
    }
    // What `chorus cache clear` calls.
    let removed = chorus_cuda::cache::clear();
    let entry_left = cache::entry_path(&key).exists();
    let kept: Vec<bool> = users.iter().map(|(n, _)| dir.join(n).exists()).collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(removed.unwrap(), 1);
    assert!(!entry_left);
    assert_eq!(kept, [true; 4], "{users:?}");
}

/// Item 7: a FIFO at an entry's path is ignored without blocking (on another thread, so that a
/// read that blocks fails the test instead of hanging it); a link and a file over the size
/// limit are not read either, and none of them is deleted.
#[cfg(unix)]
#[test]
fn only_regular_files_are_read_without_following_links() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = cache_dir_for("fifo");
    chorus_cache::disk::ensure_dir(&dir).unwrap();
    let fifo_key = key("fifo");
    let fifo = cache::entry_path(&fifo_key);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let outcome = if made.is_ok_and(|s| s.success()) {
        let (sender, receiver) = std::sync::mpsc::channel();
        let reader_key = fifo_key.clone();
        std::thread::spawn(move || {
            let _ = sender.send(cache::disk_get(&reader_key));
        });
        let outcome = receiver.recv_timeout(std::time::Duration::from_secs(10));
        if outcome.is_err() {
            // Unblock a reader stuck in open (a writer's open completes it).
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        Some(outcome)
    } else {
        eprintln!("skipped the FIFO case: `mkfifo` is not available here");
        None
    };
    let fifo_kept = outcome.is_none() || std::fs::symlink_metadata(&fifo).is_ok();
    // A link to a valid entry elsewhere.
    let link_key = key("link");
    cache::disk_put(&link_key, b"code");
    let elsewhere = dir.join("elsewhere");
    std::fs::rename(cache::entry_path(&link_key), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, cache::entry_path(&link_key)).unwrap();
    let through_link = cache::disk_get(&link_key);
    // A file over the size limit (sparse: no disk space used).
    let huge_key = key("huge");
    std::fs::File::create(cache::entry_path(&huge_key))
        .unwrap()
        .set_len(chorus_cache::disk::MAX_ENTRY_BYTES + 1)
        .unwrap();
    let oversized = cache::disk_get(&huge_key);
    let huge_kept = cache::entry_path(&huge_key).exists();
    std::fs::remove_dir_all(&dir).unwrap();
    if let Some(outcome) = outcome {
        assert_eq!(outcome.expect("reading a FIFO entry returned"), None);
    }
    assert!(fifo_kept, "a file Chorus did not write is not deleted");
    assert_eq!(through_link, None, "a link is not followed");
    assert_eq!(oversized, None);
    assert!(huge_kept);
}

/// Item 16: an entry with a valid checksum planted in a directory others may write is not
/// loaded, and nothing is written there.
#[cfg(unix)]
#[test]
fn a_directory_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = cache_dir_for("shared");
    let planted = key("planted");
    cache::disk_put(&planted, b"planted code");
    let private = cache::disk_get(&planted);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let world_writable = cache::disk_get(&planted);
    let written = key("written");
    cache::disk_put(&written, b"code");
    let written_there = cache::entry_path(&written).exists();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
    let group_writable = cache::disk_get(&planted);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(private.as_deref(), Some(&b"planted code"[..]));
    assert_eq!(world_writable, None);
    assert!(!written_there);
    assert_eq!(group_writable, None);
}

/// Item 16: without a home (nor `XDG_CACHE_HOME`, nor `CHORUS_CACHE_DIR`) the directory is the
/// user's own in the temp dir (it was a shared `/tmp/chorus-cache`), and it is chorus-cuda's:
/// one place for every backend. Run in a child process with those variables removed.
#[test]
fn without_a_home_the_directory_is_per_user() {
    const CHILD: &str = "CHORUS_HIP_CACHE_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        println!("dir={}", cache::dir().display());
        println!("cuda={}", chorus_cuda::cache::dir().display());
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "without_a_home_the_directory_is_per_user",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("CHORUS_CACHE_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(PathBuf::from)
    };
    let (Some(dir), Some(cuda)) = (line("dir="), line("cuda=")) else {
        panic!("the child printed no directory: {stdout}");
    };
    assert_eq!(dir, cuda);
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    #[cfg(unix)]
    assert_eq!(
        name,
        format!("chorus-cache-{}", user_id()),
        "{}",
        dir.display()
    );
    assert!(name.starts_with("chorus-cache-"), "{name}");
}

/// This user's id, from `id -u`.
#[cfg(unix)]
fn user_id() -> String {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
