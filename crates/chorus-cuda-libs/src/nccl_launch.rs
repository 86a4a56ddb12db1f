//! One process per GPU: what a rank reads from its environment ([`RankEnv`]), and a small
//! launcher that starts the ranks ([`Launcher`], what `examples/nccl-launch.rs` runs).
//!
//! A rank's environment:
//!
//! | variable | meaning | else |
//! |---|---|---|
//! | `CHORUS_RANK` | this process's rank | `RANK`, else 0 |
//! | `CHORUS_WORLD_SIZE` | the number of ranks | `WORLD_SIZE`, else 1 |
//! | `CHORUS_LOCAL_RANK` | the rank among this machine's processes | `LOCAL_RANK`, else the rank |
//! | `CHORUS_DEVICE` | the CUDA device of this rank (also the facade's default device) | the local rank |
//! | `CHORUS_NCCL_ID` | the unique id, 256 hexadecimal digits | |
//! | `CHORUS_NCCL_ID_FILE` | a file rank 0 writes the id to, and the others read it from | |
//!
//! With a world of one rank and neither id variable, the rank makes its own id. The launcher
//! sets every one of these (the id through a file in a fresh temporary folder, so that rank 0
//! makes the id: NCCL's bootstrap listens in the process that made it), and keeps
//! `NCCL_NVLS_ENABLE=0` unless it is set already.

use super::UniqueId;
use crate::error::{Error, Result};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Where a rank's unique id comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSource {
    /// Given (`CHORUS_NCCL_ID`).
    Given(UniqueId),
    /// Made by rank 0 and written to the file, read from it by the others
    /// (`CHORUS_NCCL_ID_FILE`).
    File(PathBuf),
    /// Made by this rank, the only one.
    Own,
}

/// What a process launched as one rank of several reads from its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankEnv {
    /// This process's rank.
    pub rank: usize,
    /// The number of ranks.
    pub world_size: usize,
    /// The rank among the processes of this machine.
    pub local_rank: usize,
    /// The CUDA device of this rank.
    pub device: usize,
    /// Where the unique id comes from.
    pub id: IdSource,
}

impl RankEnv {
    /// The rank's settings from the process's environment (see the [module](self)).
    pub fn from_env() -> Result<RankEnv> {
        RankEnv::from_vars(|name| std::env::var(name).ok())
    }

    /// True when a launcher set this process's world (`CHORUS_WORLD_SIZE` or `WORLD_SIZE`).
    pub fn is_launched() -> bool {
        ["CHORUS_WORLD_SIZE", "WORLD_SIZE"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
    }

    /// [`RankEnv::from_env`] over the variables `var` gives.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<RankEnv> {
        let number = |names: &[&'static str]| -> Result<Option<usize>> {
            for name in names {
                if let Some(text) = var(name).filter(|t| !t.trim().is_empty()) {
                    return text.trim().parse().map(Some).map_err(|_| {
                        Error::invalid("RankEnv", format!("{name}={text} is not a number"))
                    });
                }
            }
            Ok(None)
        };
        let rank = number(&["CHORUS_RANK", "RANK"])?.unwrap_or(0);
        let world_size = number(&["CHORUS_WORLD_SIZE", "WORLD_SIZE"])?.unwrap_or(1);
        if world_size == 0 || rank >= world_size {
            return Err(Error::invalid(
                "RankEnv",
                format!("rank {rank} of a world of {world_size}"),
            ));
        }
        let local_rank = number(&["CHORUS_LOCAL_RANK", "LOCAL_RANK"])?.unwrap_or(rank);
        let device = number(&["CHORUS_DEVICE"])?.unwrap_or(local_rank);
        let id = if let Some(hex) = var("CHORUS_NCCL_ID").filter(|t| !t.trim().is_empty()) {
            IdSource::Given(UniqueId::from_hex(&hex)?)
        } else if let Some(file) = var("CHORUS_NCCL_ID_FILE").filter(|t| !t.trim().is_empty()) {
            IdSource::File(PathBuf::from(file))
        } else if world_size == 1 {
            IdSource::Own
        } else {
            return Err(Error::invalid(
                "RankEnv",
                format!(
                    "a world of {world_size} ranks needs the unique id: set CHORUS_NCCL_ID or \
                     CHORUS_NCCL_ID_FILE"
                ),
            ));
        };
        Ok(RankEnv {
            rank,
            world_size,
            local_rank,
            device,
            id,
        })
    }

    /// The communicator's unique id: given; made by rank 0 and written to the id file (the
    /// others wait for it up to `timeout`); or made here for a world of one.
    pub fn unique_id(&self, timeout: Duration) -> Result<UniqueId> {
        match &self.id {
            IdSource::Given(id) => Ok(*id),
            IdSource::Own => UniqueId::new(),
            IdSource::File(path) if self.rank == 0 => {
                let id = UniqueId::new()?;
                write_id(path, &id)?;
                Ok(id)
            }
            IdSource::File(path) => read_id(path, timeout),
        }
    }
}

/// Writes `id` to `path` whole: to a temporary file beside it, renamed over it, so that a
/// reader never sees part of it.
pub fn write_id(path: &Path, id: &UniqueId) -> Result<()> {
    let io = |e: std::io::Error| {
        Error::invalid(
            "write_id",
            format!("cannot write the NCCL id to {}: {e}", path.display()),
        )
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".{}.partial", std::process::id()));
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, id.to_hex()).map_err(io)?;
    std::fs::rename(&partial, path).map_err(io)
}

/// Reads the id at `path`, waiting up to `timeout` for it to appear.
pub fn read_id(path: &Path, timeout: Duration) -> Result<UniqueId> {
    let deadline = Instant::now() + timeout;
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) => return UniqueId::from_hex(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                return Err(Error::invalid(
                    "read_id",
                    format!(
                        "no NCCL id at {} after {timeout:?} (did rank 0 start?): {e}",
                        path.display()
                    ),
                ));
            }
        }
    }
}

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The command line was not usable.
    #[error("{0}")]
    Usage(String),
    /// A rank could not be started.
    #[error("rank {rank} could not be started ({program}): {source}")]
    Spawn {
        /// The rank.
        rank: usize,
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A rank ended in failure; the ranks still running were stopped.
    #[error("rank {rank} (pid {pid}) failed: {status}; {stopped} other rank(s) were stopped")]
    RankFailed {
        /// The first rank that failed.
        rank: usize,
        /// Its process id.
        pid: u32,
        /// How it ended (`exit status: 3`, `signal: 9 (SIGKILL)`).
        status: String,
        /// How many ranks were still running and were killed.
        stopped: usize,
    },
    /// The launcher was interrupted (SIGINT or SIGTERM); the ranks were stopped.
    #[error("interrupted: {stopped} rank(s) were stopped")]
    Interrupted {
        /// How many ranks were still running and were stopped.
        stopped: usize,
    },
    /// Waiting for a rank failed, or the id folder could not be made.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Starts one process per rank and watches them.
///
/// Each rank gets [`RankEnv`]'s variables, with rank r on device `r % devices`. Their output
/// goes to this process's, each line prefixed with `[rank r]`. When every rank exits with
/// success, so does [`Launcher::run`]; when one fails (an exit status other than 0, or a
/// signal), the others are stopped and the error names the rank. Each rank runs in a process
/// group of its own, so that stopping it stops what it started; while [`Launcher::run`] runs,
/// SIGINT and SIGTERM to this process stop every rank and end it with
/// [`LaunchError::Interrupted`] (the handlers before are restored after).
#[derive(Clone, Debug)]
pub struct Launcher {
    ranks: usize,
    devices: usize,
    share_devices: bool,
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

impl Launcher {
    /// `ranks` processes of `program` with `args`, over `devices` GPUs.
    pub fn new(
        ranks: usize,
        devices: usize,
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Launcher {
        Launcher {
            ranks,
            devices,
            share_devices: false,
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// Sets `key` to `value` in every rank's environment.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Launcher {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Lets several ranks run on one GPU (more ranks than devices). NCCL refuses two ranks of
    /// a communicator on one GPU of one host ("Duplicate GPU detected"), so each such rank gets
    /// its own `NCCL_HOSTID`: NCCL then takes the ranks for separate hosts and connects them
    /// through its network transport (sockets). For testing the multi-process path on a
    /// machine with fewer GPUs than ranks; not fast. (`NCCL_SOCKET_IFNAME` is `lo` unless set.)
    pub fn share_devices(mut self, share: bool) -> Launcher {
        self.share_devices = share;
        self
    }

    /// Runs the ranks to the end.
    pub fn run(&self) -> std::result::Result<(), LaunchError> {
        if self.ranks == 0 {
            return Err(LaunchError::Usage("at least one rank is needed".into()));
        }
        if self.devices == 0 {
            return Err(LaunchError::Usage("no devices to run the ranks on".into()));
        }
        if self.ranks > self.devices && !self.share_devices {
            return Err(LaunchError::Usage(format!(
                "{} ranks on {} GPU(s): NCCL refuses two ranks on one GPU; ask for sharing \
                 (--share-gpus) to run them through NCCL's socket transport",
                self.ranks, self.devices
            )));
        }
        let folder = IdFolder::new()?;
        let id_file = folder.0.join("nccl-id");
        let _interrupts = interrupt::Catch::install();
        let mut children: Vec<Option<Child>> = Vec::new();
        let mut printers = Vec::new();
        for rank in 0..self.ranks {
            let mut command = Command::new(&self.program);
            command
                .args(&self.args)
                .env("CHORUS_RANK", rank.to_string())
                .env("CHORUS_WORLD_SIZE", self.ranks.to_string())
                .env("CHORUS_LOCAL_RANK", rank.to_string())
                .env("CHORUS_DEVICE", (rank % self.devices).to_string())
                .env("CHORUS_NCCL_ID_FILE", &id_file)
                .env_remove("CHORUS_NCCL_ID")
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
                command.env("NCCL_NVLS_ENABLE", "0");
            }
            #[cfg(unix)]
            {
                // Its own process group, so that stopping it stops what it started too.
                use std::os::unix::process::CommandExt;
                command.process_group(0);
            }
            if self.share_devices && self.ranks > self.devices {
                command.env("NCCL_HOSTID", format!("chorus-rank-{rank}"));
                // The "hosts" are this one: their sockets meet on the loopback interface.
                if std::env::var_os("NCCL_SOCKET_IFNAME").is_none() {
                    command.env("NCCL_SOCKET_IFNAME", "lo");
                }
            }
            match command.spawn() {
                Ok(mut child) => {
                    if let Some(out) = child.stdout.take() {
                        printers.push(prefix_lines(rank, out, false));
                    }
                    if let Some(err) = child.stderr.take() {
                        printers.push(prefix_lines(rank, err, true));
                    }
                    children.push(Some(child));
                }
                Err(source) => {
                    stop_all(&mut children);
                    return Err(LaunchError::Spawn {
                        rank,
                        program: self.program.to_string_lossy().into_owned(),
                        source,
                    });
                }
            }
        }
        let outcome = watch(&mut children);
        for printer in printers {
            let _ = printer.join();
        }
        outcome
    }
}

/// Waits for every child; on the first failure kills the rest.
fn watch(children: &mut [Option<Child>]) -> std::result::Result<(), LaunchError> {
    loop {
        if interrupt::requested() {
            let stopped = stop_all(children);
            return Err(LaunchError::Interrupted { stopped });
        }
        let mut running = 0;
        for rank in 0..children.len() {
            let Some(child) = children[rank].as_mut() else {
                continue;
            };
            let status = child.try_wait().map_err(|source| LaunchError::Io {
                what: format!("waiting for rank {rank}"),
                source,
            })?;
            match status {
                None => running += 1,
                Some(status) if status.success() => children[rank] = None,
                Some(status) => {
                    let pid = child.id();
                    children[rank] = None;
                    let stopped = stop_all(children);
                    return Err(LaunchError::RankFailed {
                        rank,
                        pid,
                        status: describe(status),
                        stopped,
                    });
                }
            }
        }
        if running == 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long stopped ranks get to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// Stops and reaps every child still running (on Unix its whole process group: SIGTERM, then
/// SIGKILL after [`GRACE`]); how many were running.
fn stop_all(children: &mut [Option<Child>]) -> usize {
    let mut running: Vec<Child> = children
        .iter_mut()
        .filter_map(Option::take)
        .filter_map(|mut child| match child.try_wait() {
            Ok(None) => Some(child),
            _ => {
                let _ = child.wait();
                None
            }
        })
        .collect();
    let stopped = running.len();
    for child in &mut running {
        signal(child, false);
    }
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline && running.iter_mut().any(|c| matches!(c.try_wait(), Ok(None)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    for child in &mut running {
        // The group too: a rank's own children may outlive it and hold its output open.
        signal(child, true);
        let _ = child.wait();
    }
    stopped
}

/// Sends SIGTERM (or SIGKILL when `kill`) to the child's process group; elsewhere kills it.
fn signal(child: &mut Child, kill: bool) {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(child.id()) else {
            return;
        };
        let sig = if kill { libc::SIGKILL } else { libc::SIGTERM };
        // SAFETY: signals the process group this launcher made for the child (its pid is the
        // group's id, and the child is not yet reaped, so the id is not reused).
        unsafe { libc::kill(-pid, sig) };
    }
    #[cfg(not(unix))]
    {
        let _ = kill;
        let _ = child.kill();
    }
}

fn describe(status: ExitStatus) -> String {
    status.to_string()
}

/// Copies `from` to this process's stdout (or stderr), each line prefixed with the rank.
fn prefix_lines(
    rank: usize,
    from: impl Read + Send + 'static,
    to_stderr: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            let text = format!("[rank {rank}] {line}\n");
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(text.as_bytes())
            } else {
                std::io::stdout().lock().write_all(text.as_bytes())
            };
        }
    })
}

/// SIGINT and SIGTERM, caught while launchers run: the ranks have process groups of their own,
/// so a terminal's Ctrl-C reaches only the launcher, which must stop them.
mod interrupt {
    #[cfg(unix)]
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    static REQUESTED: AtomicBool = AtomicBool::new(false);

    /// True once SIGINT or SIGTERM arrived while a launcher ran.
    pub(super) fn requested() -> bool {
        REQUESTED.load(Ordering::SeqCst)
    }

    /// The handlers before the first of the launchers running now, and how many run.
    #[cfg(unix)]
    static INSTALLED: Mutex<(usize, [libc::sighandler_t; 2])> = Mutex::new((0, [0; 2]));

    #[cfg(unix)]
    extern "C" fn on_signal(_: libc::c_int) {
        // Only an atomic store: what a signal handler may do.
        REQUESTED.store(true, Ordering::SeqCst);
    }

    /// Catches the signals while it lives.
    pub(super) struct Catch;

    impl Catch {
        pub(super) fn install() -> Catch {
            #[cfg(unix)]
            {
                let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
                if installed.0 == 0 {
                    REQUESTED.store(false, Ordering::SeqCst);
                    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                    // SAFETY: the handler only stores to an atomic; the previous handlers are
                    // kept and put back by the last `Catch` to drop.
                    installed.1 = unsafe {
                        [
                            libc::signal(libc::SIGINT, handler),
                            libc::signal(libc::SIGTERM, handler),
                        ]
                    };
                }
                installed.0 += 1;
            }
            Catch
        }
    }

    impl Drop for Catch {
        fn drop(&mut self) {
            #[cfg(unix)]
            {
                let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
                installed.0 -= 1;
                if installed.0 == 0 {
                    // SAFETY: restores the handlers saved at the first install.
                    unsafe {
                        libc::signal(libc::SIGINT, installed.1[0]);
                        libc::signal(libc::SIGTERM, installed.1[1]);
                    }
                }
            }
        }
    }
}

/// A fresh temporary folder for the id file, removed when dropped.
struct IdFolder(PathBuf);

impl IdFolder {
    fn new() -> std::result::Result<IdFolder, LaunchError> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("chorus-nccl-{}-{stamp:x}", std::process::id()));
        std::fs::create_dir(&path).map_err(|source| LaunchError::Io {
            what: format!("making {}", path.display()),
            source,
        })?;
        Ok(IdFolder(path))
    }
}

impl Drop for IdFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn a_process_alone_is_rank_0_of_1_with_its_own_id() {
        let e = RankEnv::from_vars(env(&[])).unwrap();
        assert_eq!((e.rank, e.world_size, e.local_rank, e.device), (0, 1, 0, 0));
        assert_eq!(e.id, IdSource::Own);
    }

    #[test]
    fn launcher_variables_win_over_the_common_ones() {
        let e = RankEnv::from_vars(env(&[
            ("CHORUS_RANK", "2"),
            ("RANK", "0"),
            ("CHORUS_WORLD_SIZE", "4"),
            ("LOCAL_RANK", "1"),
            ("CHORUS_NCCL_ID_FILE", "/tmp/x"),
        ]))
        .unwrap();
        assert_eq!((e.rank, e.world_size, e.local_rank, e.device), (2, 4, 1, 1));
        assert_eq!(e.id, IdSource::File("/tmp/x".into()));
        let e = RankEnv::from_vars(env(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("CHORUS_DEVICE", "0"),
            ("CHORUS_NCCL_ID", &"ab".repeat(128)),
        ]))
        .unwrap();
        assert_eq!((e.rank, e.device), (1, 0));
        assert!(matches!(e.id, IdSource::Given(id) if id.as_bytes()[0] == 0xab));
    }

    #[test]
    fn bad_rank_settings_are_errors() {
        let no_id = RankEnv::from_vars(env(&[("CHORUS_WORLD_SIZE", "2")])).unwrap_err();
        assert!(no_id.to_string().contains("CHORUS_NCCL_ID"), "{no_id}");
        let past = RankEnv::from_vars(env(&[("CHORUS_RANK", "2"), ("CHORUS_WORLD_SIZE", "2")]))
            .unwrap_err();
        assert!(
            past.to_string().contains("rank 2 of a world of 2"),
            "{past}"
        );
        let text = RankEnv::from_vars(env(&[("CHORUS_RANK", "one")])).unwrap_err();
        assert!(text.to_string().contains("CHORUS_RANK=one"), "{text}");
    }

    #[test]
    fn ids_travel_through_a_file() {
        let folder = IdFolder::new().unwrap();
        let path = folder.0.join("id");
        let missing = read_id(&path, Duration::from_millis(30)).unwrap_err();
        assert!(
            missing.to_string().contains("did rank 0 start"),
            "{missing}"
        );
        let id = UniqueId::from_bytes(&[9; 128]).unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                write_id(&path, &id).unwrap();
            })
        };
        assert_eq!(read_id(&path, Duration::from_secs(10)).unwrap(), id);
        writer.join().unwrap();
    }

    fn sh(script: &str) -> Launcher {
        Launcher::new(3, 3, "sh", ["-c", script])
    }

    /// The launcher tests one at a time: the interrupt test signals this whole process.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(unix)]
    #[test]
    fn an_interrupted_launcher_stops_its_ranks() {
        let _serial = serial();
        let folder = IdFolder::new().unwrap();
        let started = folder.0.join("started");
        let script = format!("touch {}; sleep 60", started.display());
        let launcher = Launcher::new(2, 2, "sh", ["-c", script.as_str()]);
        let run = std::thread::spawn(move || launcher.run());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !started.exists() {
            assert!(Instant::now() < deadline, "the ranks did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        let start = Instant::now();
        // SAFETY: signals this process; the running launcher's handler catches it.
        unsafe { libc::raise(libc::SIGTERM) };
        let error = run.join().unwrap().unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the ranks were not stopped"
        );
        assert!(
            matches!(error, LaunchError::Interrupted { stopped: 2 }),
            "{error}"
        );
    }

    #[test]
    fn every_rank_sees_its_environment() {
        let _serial = serial();
        let folder = IdFolder::new().unwrap();
        let out = folder.0.join("seen");
        let script = format!(
            "echo $CHORUS_RANK/$CHORUS_WORLD_SIZE/$CHORUS_DEVICE/$NCCL_NVLS_ENABLE >> {}; \
             test -n \"$CHORUS_NCCL_ID_FILE\"",
            out.display()
        );
        sh(&script).run().unwrap();
        let mut lines: Vec<String> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        assert_eq!(lines, ["0/3/0/0", "1/3/1/0", "2/3/2/0"]);
    }

    #[test]
    fn a_rank_that_fails_is_named_and_the_others_stopped() {
        let _serial = serial();
        let start = Instant::now();
        let error = sh("if [ $CHORUS_RANK = 1 ]; then exit 7; fi; sleep 60")
            .run()
            .unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the others were not stopped"
        );
        let LaunchError::RankFailed {
            rank,
            status,
            stopped,
            ..
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!((*rank, *stopped), (1, 2), "{error}");
        assert!(status.contains('7'), "{status}");
        assert!(error.to_string().starts_with("rank 1 (pid "), "{error}");
    }

    #[test]
    fn more_ranks_than_gpus_need_sharing_and_then_get_host_ids() {
        let _serial = serial();
        let refused = Launcher::new(2, 1, "true", [""; 0]).run().unwrap_err();
        assert!(refused.to_string().contains("--share-gpus"), "{refused}");
        let folder = IdFolder::new().unwrap();
        let out = folder.0.join("ids");
        let script = format!("echo $CHORUS_DEVICE:$NCCL_HOSTID >> {}", out.display());
        Launcher::new(2, 1, "sh", ["-c", &script])
            .share_devices(true)
            .run()
            .unwrap();
        let mut lines: Vec<String> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        assert_eq!(lines, ["0:chorus-rank-0", "0:chorus-rank-1"]);
    }

    #[test]
    fn a_program_that_does_not_exist_is_a_spawn_error() {
        let _serial = serial();
        let error = Launcher::new(1, 1, "/nonexistent/chorus-rank", [""; 0])
            .run()
            .unwrap_err();
        assert!(
            matches!(error, LaunchError::Spawn { rank: 0, .. }),
            "{error}"
        );
    }
}
