//! NCCL on the GPU: one-rank communicators (every collective gives its input back, send/recv
//! to itself in a group, groups of several calls), every collective's argument checks,
//! non-blocking communicators (joining that times out, abort), and the multi-process path
//! through the launcher (a world of one, and two ranks sharing one GPU).
//!
//! Skips without a GPU or without NCCL; fails instead with `CHORUS_REQUIRE_GPU=1`.

use chorus_cuda::testing::scaled;
use chorus_cuda_libs::nccl::launch::{Launcher, RankEnv};
use chorus_cuda_libs::nccl::{self, Comm, Config, ReduceOp, UniqueId};
use chorus_cuda_libs::{AsDeviceSliceMut, DeviceSlice, Error, Fp8E4M3};
use chorus_driver::{Context, Direction, MemoryBlock, Stream};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Runs `body` with device 0's primary context current (NCCL's), or skips without a GPU or
/// NCCL (a failure under `CHORUS_REQUIRE_GPU=1`).
fn on_gpu(test: &str, body: impl FnOnce() -> TestResult) {
    let required = std::env::var("CHORUS_REQUIRE_GPU").is_ok_and(|v| v.trim() == "1");
    let why = match chorus_driver::ensure_driver().and_then(|()| chorus_driver::device_count()) {
        Ok(0) => Some("no device".to_string()),
        Ok(_) => nccl::ensure().err().map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(why) = why {
        assert!(
            !required,
            "{test}: CHORUS_REQUIRE_GPU=1 but there is no usable GPU with NCCL: {why}"
        );
        eprintln!("skipped {test}: {why}");
        return;
    }
    let _primary = Context::primary(0).unwrap_or_else(|e| panic!("{test}: {e}"));
    if let Err(e) = body() {
        panic!("{test}: {e}");
    }
}

fn upload<T: bytemuck::Pod>(data: &[T]) -> MemoryBlock<T> {
    let mut block = MemoryBlock::from_slice(data).expect("alloc");
    block.sync(Direction::HostToDevice).expect("upload");
    block
}

fn download<T: bytemuck::Pod>(block: &mut MemoryBlock<T>, stream: &Stream) -> Vec<T> {
    stream.synchronize().expect("synchronize");
    block.sync(Direction::DeviceToHost).expect("download");
    block.as_slice().to_vec()
}

fn one_rank() -> Comm {
    let mut comms = Comm::init_all(&[0]).expect("ncclCommInitAll");
    comms.pop().expect("one communicator")
}

fn data(n: usize, seed: i32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as i32 * 7 + seed) % 23 - 11) as f32 * 0.25)
        .collect()
}

fn invalid(e: Error, needle: &str) {
    match &e {
        Error::InvalidArgument { reason, .. } => {
            assert!(reason.contains(needle), "expected `{needle}` in: {e}")
        }
        other => panic!("expected InvalidArgument with `{needle}`, got: {other}"),
    }
}

#[test]
fn a_one_rank_communicator_describes_itself() {
    on_gpu("a_one_rank_communicator_describes_itself", || {
        let comm = one_rank();
        assert_eq!((comm.rank(), comm.size(), comm.device()), (0, 1, 0));
        assert!(comm.is_blocking());
        comm.async_error()?;
        let (major, minor, _) = nccl::version()?;
        assert!((major, minor) >= (2, 28), "NCCL {major}.{minor}");
        eprintln!("NCCL {:?}", nccl::version()?);
        Ok(())
    })
}

#[test]
fn one_rank_collectives_give_the_input_back() {
    on_gpu("one_rank_collectives_give_the_input_back", || {
        let comm = one_rank();
        let stream = comm.new_stream()?;
        let n = 4099;
        let x = data(n, 3);
        let send = upload(&x);
        for op in [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Avg,
        ] {
            let mut recv = MemoryBlock::<f32>::alloc(n)?;
            comm.all_reduce(&send, &mut recv, op, &stream)?;
            assert_eq!(download(&mut recv, &stream), x, "all_reduce {op:?}");
        }
        let mut inplace = upload(&x);
        comm.all_reduce_in_place(&mut inplace, ReduceOp::Sum, &stream)?;
        assert_eq!(download(&mut inplace, &stream), x, "all_reduce_in_place");

        let mut recv = MemoryBlock::<f32>::alloc(n)?;
        comm.broadcast(Some(&send), &mut recv, 0, &stream)?;
        assert_eq!(download(&mut recv, &stream), x, "broadcast");
        let mut inplace = upload(&x);
        comm.broadcast_in_place(&mut inplace, 0, &stream)?;
        assert_eq!(download(&mut inplace, &stream), x, "broadcast_in_place");

        let mut recv = MemoryBlock::<f32>::alloc(n)?;
        comm.reduce(&send, Some(&mut recv), ReduceOp::Sum, 0, &stream)?;
        assert_eq!(download(&mut recv, &stream), x, "reduce");

        let mut recv = MemoryBlock::<f32>::alloc(n)?;
        comm.all_gather(&send, &mut recv, &stream)?;
        assert_eq!(download(&mut recv, &stream), x, "all_gather");
        let mut inplace = upload(&x);
        comm.all_gather_in_place(&mut inplace, &stream)?;
        assert_eq!(download(&mut inplace, &stream), x, "all_gather_in_place");

        let mut recv = MemoryBlock::<f32>::alloc(n)?;
        comm.reduce_scatter(&send, &mut recv, ReduceOp::Sum, &stream)?;
        assert_eq!(download(&mut recv, &stream), x, "reduce_scatter");
        let mut inplace = upload(&x);
        comm.reduce_scatter_in_place(&mut inplace, ReduceOp::Sum, &stream)?;
        assert_eq!(
            download(&mut inplace, &stream),
            x,
            "reduce_scatter_in_place"
        );
        comm.wait(&stream)?;
        Ok(())
    })
}

#[test]
fn every_element_type_goes_through() {
    on_gpu("every_element_type_goes_through", || {
        let comm = one_rank();
        let stream = comm.new_stream()?;
        fn round_trip<T: nccl::NcclType + PartialEq + std::fmt::Debug>(
            comm: &Comm,
            stream: &Stream,
            values: Vec<T>,
        ) -> TestResult {
            let send = upload(&values);
            let mut recv = MemoryBlock::<T>::alloc(values.len())?;
            comm.all_reduce(&send, &mut recv, ReduceOp::Sum, stream)?;
            assert_eq!(download(&mut recv, stream), values);
            Ok(())
        }
        round_trip(&comm, &stream, vec![-3i8, 4, 127])?;
        round_trip(&comm, &stream, vec![3u8, 250])?;
        round_trip(&comm, &stream, vec![-7i32, 1 << 30])?;
        round_trip(&comm, &stream, vec![7u32, u32::MAX])?;
        round_trip(&comm, &stream, vec![-(1i64 << 50), 5])?;
        round_trip(&comm, &stream, vec![u64::MAX, 1])?;
        round_trip(
            &comm,
            &stream,
            vec![half::f16::from_f32(1.5), half::f16::MAX],
        )?;
        round_trip(&comm, &stream, vec![half::bf16::from_f32(-2.25)])?;
        round_trip(&comm, &stream, vec![0.1f64, -1e300])?;
        // FP8 reductions need compute capability 9.0 (the H200 has it).
        round_trip(&comm, &stream, vec![Fp8E4M3(0x38), Fp8E4M3(0x40)])?;
        Ok(())
    })
}

#[test]
fn send_and_recv_to_itself_in_a_group() {
    on_gpu("send_and_recv_to_itself_in_a_group", || {
        let comm = one_rank();
        let stream = comm.new_stream()?;
        let x = data(1000, 5);
        let send = upload(&x);
        let mut recv = MemoryBlock::<f32>::alloc(1000)?;
        nccl::group(|g| {
            g.send(&comm, &send, 0, &stream)?;
            g.recv(&comm, &mut recv, 0, &stream)?;
            Ok(())
        })?;
        comm.wait(&stream)?;
        assert_eq!(download(&mut recv, &stream), x);
        Ok(())
    })
}

#[test]
fn a_group_of_several_calls() {
    on_gpu("a_group_of_several_calls", || {
        let comm = one_rank();
        let stream = comm.new_stream()?;
        let other = comm.new_stream()?;
        let (x, y, z) = (data(300, 1), data(513, 2), data(64, 3));
        let (sx, sy) = (upload(&x), upload(&y));
        let mut rx = MemoryBlock::<f32>::alloc(300)?;
        let mut ry = MemoryBlock::<f32>::alloc(513)?;
        let mut bz = upload(&z);
        let mut g = nccl::Group::new();
        g.all_reduce(&comm, &sx, &mut rx, ReduceOp::Max, &stream)?
            .all_gather(&comm, &sy, &mut ry, &other)?
            .broadcast_in_place(&comm, &mut bz, 0, &stream)?;
        assert_eq!(g.len(), 3);
        g.submit()?;
        comm.wait(&stream)?;
        comm.wait(&other)?;
        assert_eq!(download(&mut rx, &stream), x);
        assert_eq!(download(&mut ry, &other), y);
        assert_eq!(download(&mut bz, &stream), z);
        Ok(())
    })
}

#[test]
fn a_group_with_a_bad_call_calls_nothing() {
    on_gpu("a_group_with_a_bad_call_calls_nothing", || {
        let comm = one_rank();
        let stream = comm.new_stream()?;
        let x = data(100, 9);
        let send = upload(&x);
        let mut recv = upload(&vec![0.0f32; 100]);
        let mut short = MemoryBlock::<f32>::alloc(99)?;
        let e = nccl::group(|g| {
            g.all_reduce(&comm, &send, &mut recv, ReduceOp::Sum, &stream)?;
            g.all_reduce(&comm, &send, &mut short, ReduceOp::Sum, &stream)?;
            Ok(())
        })
        .unwrap_err();
        invalid(e, "send holds 100 elements, recv holds 99");
        assert_eq!(
            download(&mut recv, &stream),
            vec![0.0; 100],
            "the first call ran"
        );
        // The communicator is still usable.
        comm.all_reduce(&send, &mut recv, ReduceOp::Sum, &stream)?;
        assert_eq!(download(&mut recv, &stream), x);
        Ok(())
    })
}

#[test]
fn every_collective_checks_its_arguments() {
    on_gpu("every_collective_checks_its_arguments", || {
        let comm = one_rank();
        let s = comm.new_stream()?;
        let a = upload(&data(8, 0));
        let mut b7 = MemoryBlock::<f32>::alloc(7)?;
        let mut b9 = MemoryBlock::<f32>::alloc(9)?;
        // Lengths.
        invalid(
            comm.all_reduce(&a, &mut b7, ReduceOp::Sum, &s).unwrap_err(),
            "send holds 8 elements, recv holds 7",
        );
        invalid(
            comm.broadcast(Some(&a), &mut b9, 0, &s).unwrap_err(),
            "send holds 8 elements, recv holds 9",
        );
        invalid(
            comm.reduce(&a, Some(&mut b7), ReduceOp::Sum, 0, &s)
                .unwrap_err(),
            "send holds 8 elements, recv holds 7",
        );
        invalid(
            comm.all_gather(&a, &mut b9, &s).unwrap_err(),
            "recv holds 9 elements, not 1 ranks × 8",
        );
        invalid(
            comm.reduce_scatter(&a, &mut b7, ReduceOp::Sum, &s)
                .unwrap_err(),
            "send holds 8 elements, not 1 ranks × 7",
        );
        // Roots and peers.
        invalid(
            comm.broadcast(Some(&a), &mut b9, 1, &s).unwrap_err(),
            "root 1 is not a rank of this communicator of 1 ranks",
        );
        invalid(
            comm.broadcast(None::<&MemoryBlock<f32>>, &mut b9, 0, &s)
                .unwrap_err(),
            "it needs a send buffer",
        );
        invalid(
            comm.reduce::<f32, MemoryBlock<f32>>(&a, None, ReduceOp::Sum, 0, &s)
                .unwrap_err(),
            "it needs a recv buffer",
        );
        invalid(comm.send(&a, 2, &s).unwrap_err(), "peer 2 is not a rank");
        invalid(
            comm.recv(&mut b7, 1, &s).unwrap_err(),
            "peer 1 is not a rank",
        );
        // Memory that is not CUDA memory.
        let host = [0.0f32; 8];
        // SAFETY: never dereferenced: the check refuses it before NCCL sees it.
        let fake = unsafe { DeviceSlice::<f32>::from_raw(host.as_ptr() as u64, 8) };
        let mut first8 = b9.as_device_slice_mut()?.slice(0..8)?;
        invalid(
            comm.all_reduce(&fake, &mut first8, ReduceOp::Sum, &s)
                .unwrap_err(),
            "is not CUDA device memory",
        );
        // In place, a buffer must split into one chunk per rank: always true for one rank,
        // so the empty buffer (nothing to do) is the edge here.
        let mut empty = b9.as_device_slice_mut()?.slice(0..0)?;
        comm.all_gather_in_place(&mut empty, &s)?;
        Ok(())
    })
}

#[test]
fn memory_and_streams_of_another_context_are_refused() {
    on_gpu("memory_and_streams_of_another_context_are_refused", || {
        let comm = one_rank();
        let s = comm.new_stream()?;
        let mine = upload(&data(8, 0));
        let mut out = MemoryBlock::<f32>::alloc(8)?;
        let other = Context::new(0)?;
        let foreign = upload(&data(8, 1));
        let foreign_stream = Stream::new()?;
        invalid(
            comm.all_reduce(&foreign, &mut out, ReduceOp::Sum, &s)
                .unwrap_err(),
            "another context of device 0",
        );
        invalid(
            comm.all_reduce(&mine, &mut out, ReduceOp::Sum, &foreign_stream)
                .unwrap_err(),
            "not a stream of device 0's primary context",
        );
        drop((foreign, foreign_stream));
        drop(other);
        // Device 0's primary context current again, for the drops that follow.
        Context::primary(0)?;
        Ok(())
    })
}

#[test]
fn a_non_blocking_rank_of_one_works_and_finalizes() {
    on_gpu("a_non_blocking_rank_of_one_works_and_finalizes", || {
        let id = UniqueId::new()?;
        let config = Config {
            blocking: false,
            timeout: scaled(Duration::from_secs(60)),
        };
        let comm = Comm::init_rank(&id, 1, 0, 0, &config)?;
        assert!(!comm.is_blocking());
        assert_eq!((comm.rank(), comm.size()), (0, 1));
        let stream = comm.new_stream()?;
        let x = data(1 << 16, 4);
        let send = upload(&x);
        let mut recv = MemoryBlock::<f32>::alloc(x.len())?;
        comm.all_reduce(&send, &mut recv, ReduceOp::Sum, &stream)?;
        let mut back = MemoryBlock::<f32>::alloc(x.len())?;
        nccl::group(|g| {
            g.send(&comm, &recv, 0, &stream)?;
            g.recv(&comm, &mut back, 0, &stream)?;
            Ok(())
        })?;
        comm.wait(&stream)?;
        assert_eq!(download(&mut back, &stream), x);
        comm.finalize()?;
        // And a thread's communicators end together.
        nccl::finalize_all(Comm::init_all(&[0])?)?;
        nccl::finalize_all(Vec::new())?;
        Ok(())
    })
}

#[test]
fn joining_without_the_other_ranks_times_out_instead_of_hanging() {
    on_gpu("joining_without_the_other_ranks_times_out", || {
        let id = UniqueId::new()?;
        let config = Config {
            blocking: false,
            timeout: scaled(Duration::from_secs(3)),
        };
        let start = Instant::now();
        // Rank 0 of 2: rank 1 never comes.
        let e = Comm::init_rank(&id, 2, 0, 0, &config).unwrap_err();
        let waited = start.elapsed();
        eprintln!("after {waited:?}: {e}");
        assert!(
            e.is_status("ncclInProgress") || matches!(e, Error::Status { .. }),
            "{e}"
        );
        assert!(
            waited < scaled(Duration::from_secs(30)),
            "waited {waited:?}"
        );
        Ok(())
    })
}

#[test]
fn an_aborted_communicator_refuses_every_call() {
    on_gpu("an_aborted_communicator_refuses_every_call", || {
        let comm = one_rank();
        let stream = comm.new_stream()?;
        let send = upload(&data(16, 0));
        let mut recv = MemoryBlock::<f32>::alloc(16)?;
        comm.all_reduce(&send, &mut recv, ReduceOp::Sum, &stream)?;
        comm.wait(&stream)?;
        comm.abort()?;
        assert_eq!(comm.aborted(), Some("aborted on request"));
        invalid(
            comm.all_reduce(&send, &mut recv, ReduceOp::Sum, &stream)
                .unwrap_err(),
            "the communicator was aborted",
        );
        invalid(comm.wait(&stream).unwrap_err(), "aborted");
        // Aborting again does nothing; dropping does not touch the freed handle.
        invalid(comm.abort().unwrap_err(), "aborted");
        Ok(())
    })
}

#[test]
fn two_ranks_of_one_gpu_in_one_process_are_refused() {
    on_gpu("two_ranks_of_one_gpu_in_one_process_are_refused", || {
        // NCCL's "Duplicate GPU detected": what NCCL 2.28 says, recorded for the multi-GPU notes.
        let e = Comm::init_all(&[0, 0]).unwrap_err();
        eprintln!("init_all(&[0, 0]): {e}");
        assert!(
            matches!(
                e,
                Error::Status {
                    library: "NCCL",
                    ..
                }
            ),
            "{e}"
        );
        // And a device that does not exist is refused before NCCL.
        let count = chorus_driver::device_count()?;
        invalid(Comm::init_all(&[count]).unwrap_err(), "does not exist");
        invalid(Comm::init_all(&[]).unwrap_err(), "no devices");
        Ok(())
    })
}

/// The rank a launcher test starts (this test binary, run again with `CHORUS_NCCL_TEST_CHILD`):
/// joins the communicator from its environment, all-reduces, passes a value around the ring,
/// and finalizes; `die-after-join` makes rank 1 exit right after joining instead. Started
/// alone (no variable), it does nothing.
#[test]
fn launched_rank() {
    let Ok(mode) = std::env::var("CHORUS_NCCL_TEST_CHILD") else {
        return;
    };
    let env = RankEnv::from_env().expect("rank environment");
    // Non-blocking, with the timeout of `CHORUS_NCCL_TIMEOUT`.
    let config = Config::default();
    let _primary = Context::primary(env.device).expect("primary context");
    if mode == "expect-refusal" {
        // Two ranks on one GPU of one host, without host ids of their own.
        let e = Comm::from_env(&config).expect_err("NCCL let two ranks share one GPU");
        println!("rank {} refused: {e}", env.rank);
        assert!(e.is_status("ncclInvalidUsage"), "{e}");
        return;
    }
    let comm = Comm::from_env(&config).expect("join");
    let (rank, size) = (comm.rank(), comm.size());
    assert_eq!((rank, size), (env.rank, env.world_size));
    if mode == "die-after-join" && rank == 1 {
        std::process::exit(3);
    }
    let stream = comm.new_stream().expect("stream");
    let n = 1 << 18;
    let send = upload(&vec![(rank + 1) as f32; n]);
    let mut recv = MemoryBlock::<f32>::alloc(n).expect("alloc");
    let result = comm
        .all_reduce(&send, &mut recv, ReduceOp::Sum, &stream)
        .and_then(|()| comm.wait(&stream));
    if mode == "die-after-join" {
        // Rank 0: the peer is gone, which must be an error, not a hang.
        let e = result.expect_err("an all-reduce with a dead peer succeeded");
        println!("rank 0 saw the dead peer: {e}");
        return;
    }
    result.expect("all_reduce");
    let want = (size * (size + 1) / 2) as f32;
    assert!(download(&mut recv, &stream).iter().all(|&v| v == want));
    let mut got = MemoryBlock::<f32>::alloc(n).expect("alloc");
    nccl::group(|g| {
        g.send(&comm, &send, (rank + 1) % size, &stream)?;
        g.recv(&comm, &mut got, (rank + size - 1) % size, &stream)?;
        Ok(())
    })
    .expect("ring");
    comm.wait(&stream).expect("ring wait");
    let from = ((rank + size - 1) % size + 1) as f32;
    assert!(download(&mut got, &stream).iter().all(|&v| v == from));
    comm.finalize().expect("finalize");
    println!("rank {rank} of {size}: verified");
}

/// The test harness's arguments that run [`launched_rank`] alone.
const CHILD_ARGS: [&str; 4] = [
    "--exact",
    "launched_rank",
    "--nocapture",
    "--test-threads=1",
];

/// `CHORUS_NCCL_TIMEOUT` for the ranks: `s` seconds, times `CHORUS_TEST_TIME_SCALE`.
fn seconds(s: u64) -> String {
    scaled(Duration::from_secs(s)).as_secs().to_string()
}

fn launch_this_binary(ranks: usize, devices: usize, mode: &str) -> Launcher {
    let exe = std::env::current_exe().expect("test binary");
    Launcher::new(ranks, devices, exe, CHILD_ARGS)
        .share_devices(ranks > devices)
        .env("CHORUS_NCCL_TEST_CHILD", mode)
        .env("CHORUS_NCCL_TIMEOUT", seconds(15))
}

#[test]
fn the_launcher_runs_a_world_of_one() {
    on_gpu("the_launcher_runs_a_world_of_one", || {
        launch_this_binary(1, 1, "verify").run()?;
        Ok(())
    })
}

#[test]
fn two_ranks_share_one_gpu_through_the_socket_transport() {
    on_gpu("two_ranks_share_one_gpu", || {
        // NCCL refuses two ranks on one GPU of one host; with a host id each
        // (`NCCL_HOSTID`, which the launcher sets when ranks share a GPU) it connects them
        // through its network transport instead.
        let start = Instant::now();
        launch_this_binary(2, 1, "verify").run()?;
        eprintln!("two ranks on one GPU: verified in {:?}", start.elapsed());
        Ok(())
    })
}

#[test]
fn a_rank_that_dies_is_named_by_the_launcher() {
    on_gpu("a_rank_that_dies_is_named_by_the_launcher", || {
        let e = launch_this_binary(2, 1, "die-after-join")
            .run()
            .unwrap_err();
        eprintln!("{e}");
        assert!(e.to_string().starts_with("rank 1 "), "{e}");
        Ok(())
    })
}

/// Starts ranks 0 and 1 of a world of two on GPU 0 by hand (rank 0 must outlive rank 1, which
/// the launcher would stop), with `host_ids` or without, and returns their exit statuses.
fn two_by_hand(
    mode: &str,
    host_ids: bool,
    timeout_s: u64,
) -> std::io::Result<[std::process::ExitStatus; 2]> {
    let folder = std::env::temp_dir().join(format!("chorus-nccl-{mode}-{}", std::process::id()));
    std::fs::create_dir_all(&folder)?;
    let id_file = folder.join("id");
    let exe = std::env::current_exe()?;
    let mut ranks = (0..2)
        .map(|rank| {
            let mut command = std::process::Command::new(&exe);
            command
                .args(CHILD_ARGS)
                .env("CHORUS_NCCL_TEST_CHILD", mode)
                .env("CHORUS_NCCL_TIMEOUT", seconds(timeout_s))
                .env("CHORUS_RANK", rank.to_string())
                .env("CHORUS_WORLD_SIZE", "2")
                .env("CHORUS_DEVICE", "0")
                .env("CHORUS_NCCL_ID_FILE", &id_file)
                .env("NCCL_SOCKET_IFNAME", "lo")
                .env("NCCL_NVLS_ENABLE", "0");
            if host_ids {
                command.env("NCCL_HOSTID", format!("chorus-{mode}-{rank}"));
            }
            command.spawn()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let second = ranks[1].wait()?;
    let first = ranks[0].wait()?;
    let _ = std::fs::remove_dir_all(&folder);
    Ok([first, second])
}

#[test]
fn a_dead_peer_is_an_error_not_a_hang() {
    on_gpu("a_dead_peer_is_an_error_not_a_hang", || {
        // Rank 1 exits right after joining: rank 0's all-reduce must fail, not hang.
        let start = Instant::now();
        let [status0, status1] = two_by_hand("die-after-join", true, 8)?;
        eprintln!(
            "rank 1: {status1}, rank 0: {status0}, after {:?}",
            start.elapsed()
        );
        assert_eq!(status1.code(), Some(3), "rank 1 did not exit as asked");
        assert!(
            status0.success(),
            "rank 0 did not see the dead peer as an error"
        );
        Ok(())
    })
}

#[test]
fn two_processes_on_one_gpu_without_host_ids_are_refused() {
    on_gpu(
        "two_processes_on_one_gpu_without_host_ids_are_refused",
        || {
            let [status0, status1] = two_by_hand("expect-refusal", false, 10)?;
            assert!(
                status0.success() && status1.success(),
                "NCCL did not refuse both ranks: {status0}, {status1}"
            );
            Ok(())
        },
    )
}
