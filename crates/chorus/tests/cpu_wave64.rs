//! `CHORUS_CPU_WARP=64`: the CPU backend runs kernels in AMD CDNA's 64-lane waves. The
//! variable is read once per process, so these cases run this test binary again with it set.

use chorus::{Backend, Direction, Error, Launch, MemoryBlock, Program};
use std::process::Command;

/// Runs the ignored test `name` in a child process with `env` set.
fn run_alone(name: &str, env: &[(&str, &str)]) {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            "--exact",
            name,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[test]
fn chorus_cpu_warp_64_gives_64_lane_waves() {
    run_alone(
        "with_64_lane_waves",
        &[("CHORUS_CPU_WARP", "64"), ("CHORUS_BACKEND", "cpu")],
    );
}

#[test]
fn a_bad_chorus_cpu_warp_says_what_it_accepts() {
    run_alone(
        "with_a_bad_warp_width",
        &[("CHORUS_CPU_WARP", "48"), ("CHORUS_BACKEND", "cpu")],
    );
}

#[test]
#[ignore = "run by chorus_cpu_warp_64_gives_64_lane_waves with CHORUS_CPU_WARP=64"]
fn with_64_lane_waves() {
    let program = Program::new(
        "(defkernel lanes (void ((a int*)))
           (set (aref a thread-idx-x)
                (+ lane-id (* 100 warp-size) (shfl-xor-sync (uint -1) (* 10000 lane-id) 32))))",
        "wave64.lisp",
    )
    .unwrap();
    let mut a = MemoryBlock::<i32>::alloc(128).unwrap();
    program
        .launch("lanes", &[a.as_arg()], Launch::grid(1).block(128))
        .unwrap();
    a.sync(Direction::DeviceToHost).unwrap();
    let want: Vec<i32> = (0..128)
        .map(|t| t % 64 + 6400 + 10000 * ((t % 64) ^ 32))
        .collect();
    assert_eq!(a.as_slice(), &want[..]);
    // A mask as a result cannot name a 64-lane wave's lanes in a `uint`.
    let ballot = Program::new(
        "(defkernel ballot (void ((a uint*)))
           (set (aref a thread-idx-x) (ballot-sync (uint -1) (> thread-idx-x 3))))",
        "ballot.lisp",
    )
    .unwrap();
    let error = ballot.load().unwrap_err();
    assert!(error.to_string().contains("64-lane"), "{error}");
    // The warp-level tensor cores' fragments are laid out over 32 lanes: refused at the call
    // when the program is loaded, not at the first ldmatrix.
    let mma = Program::new(
        "(defkernel mma (void ((a uint4*) (b uint2*) (c float4*)))
           (set (aref c 0) (mma-sync :m16n8k16 :bf16 (aref a 0) (aref b 0) (aref c 0))))",
        "mma.lisp",
    )
    .unwrap();
    let error = mma.load().unwrap_err().to_string();
    assert!(
        error.contains("mma.lisp:2:28:")
            && error.contains("`mma-sync` needs warp-level tensor cores"),
        "{error}"
    );
}

#[test]
#[ignore = "run by a_bad_chorus_cpu_warp_says_what_it_accepts with CHORUS_CPU_WARP=48"]
fn with_a_bad_warp_width() {
    let error = Backend::Cpu.availability().and_then(|_| {
        MemoryBlock::<i32>::alloc(1)?;
        Ok(())
    });
    let error = error.unwrap_err();
    assert!(
        matches!(
            &error,
            Error::DeviceUnavailable { .. } | Error::BackendUnavailable { .. }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("CHORUS_CPU_WARP=48"), "{error}");
    assert!(error.to_string().contains("32 or 64"), "{error}");
}
