//! The kernel test corpus (`tests/corpus/`) on the CPU executor in wave64 mode: prepared for
//! AMD CDNA's `gfx90a`, whose waves have 64 lanes (`warp-size` 64, lane ids to 63, shuffles,
//! votes and reductions over 64 lanes, the full 32-bit mask operand widened to the wave).
//! Every case either runs and gives the corpus's results, or the 64-lane results written here
//! where the width shows, or is refused when prepared, at its span, for a reason listed here.

mod corpus;

use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, LaunchConfig};
use chorus_lang::target::Target;
use corpus::{Arg, Case, Expect, bytes, from_bytes};
use std::sync::Arc;

fn cdna() -> Target {
    Target::hip("gfx90a").expect("gfx90a is a HIP target")
}

/// The CPU target's capabilities with CDNA's 64-lane waves: runs the cases gfx90a refuses for
/// a missing capability (cuRAND, bfloat16, fp8, half atomics, warp reductions) at 64 lanes.
fn cpu_wave64() -> Target {
    let mut target = Target::cpu();
    target.arch = "cpu-wave64".into();
    target.warp_width = 64;
    target.lane_mask_bits = 64;
    target
}

/// Cases gfx90a refuses when prepared, with a word of the reason: HIP lacks the capability, or
/// (`ballot-sync`, `match-*`) a 32-bit `uint` mask cannot name a 64-lane wave's lanes.
const REFUSED_ON_GFX90A: &[(&str, &str)] = &[
    ("half_bf16", "bfloat16"),
    ("fp8_fp4", "fp8"),
    ("curand_uniform", "random-number library"),
    ("curand_normal", "random-number library"),
    ("votes", "64-lane warps with 64-bit masks"),
    ("match", "warp match operations"),
    ("warp_reduce_ops", "warp reductions"),
    ("atomics_float", "atomics on half"),
];

/// Cases refused by any 64-lane target: their results are lane masks (`ballot-sync`,
/// `activemask`, `match-any-sync`, `match-all-sync`), which a `uint` cannot hold there.
const REFUSED_ON_WAVE64: &[&str] = &["votes", "match"];

/// Replaces buffer argument `k`'s expectation by `want` (an `i32` buffer).
fn expect_i32(case: &mut Case, k: usize, want: &[i32]) {
    let Arg::Buffer { expect, .. } = &mut case.args[k] else {
        panic!("{}: argument {k} is not a buffer", case.name);
    };
    *expect = Expect::Bytes(bytes(want));
}

/// The `i32` contents of buffer argument `k` before the launch.
fn input_i32(case: &Case, k: usize) -> Vec<i32> {
    match &case.args[k] {
        Arg::Buffer { data, .. } => from_bytes(data),
        Arg::Value { .. } => panic!("{}: argument {k} is not a buffer", case.name),
    }
}

/// The corpus's expectations rewritten for 64-lane waves where the width shows.
fn for_64_lanes(mut case: Case) -> Case {
    match case.name {
        // 16×8 threads are two waves of 64: lane ids 0..63, `warp-size` 64.
        "lane_ids" => {
            let want: Vec<i32> = (0..128)
                .map(|l| l % 64 + 100 * (l / 64) + 640_000)
                .collect();
            expect_i32(&mut case, 0, &want);
        }
        // `shfl-down` by 16, 8, 4, 2, 1 sums lanes 0..31 of each wave into its lane 0, which
        // writes `out[i / 64]`: eight sums of the first half of each 64-lane wave, then the
        // untouched zeros.
        "warp_reduce_shfl" => {
            let data = input_i32(&case, 0);
            let mut want = vec![0i32; 16];
            for (w, sum) in want.iter_mut().enumerate().take(data.len() / 64) {
                *sum = data[64 * w..64 * w + 32].iter().sum();
            }
            expect_i32(&mut case, 1, &want);
        }
        // 32 threads in a 64-lane wave: the full-width shuffle's segment is the wave, so
        // `shfl-sync` to lane + 3 reaches lanes 32..34 (no thread there) from lanes 29..31
        // instead of wrapping to 0..2; an inactive source gives the lane its own value, the
        // executor's rule (`shfl.sync`'s) at both widths.
        "shfl_variants" => {
            let Arg::Buffer {
                expect: Expect::Bytes(b),
                ..
            } = &case.args[0]
            else {
                panic!("shfl_variants: an exact buffer expected");
            };
            let mut want: Vec<i32> = from_bytes(b);
            for lane in 29..32 {
                want[lane * 8] = 100 * (lane as i32 + 1);
            }
            expect_i32(&mut case, 0, &want);
        }
        // One wave of 64: its lane 0 reduces all 64 values; lane 32 is not a lane 0.
        "warp_reduce_ops" => {
            let data = input_i32(&case, 0);
            let mut out = vec![0i32; 12];
            let mut uout = vec![0i32; 12];
            out[0] = data.iter().sum();
            out[1] = *data.iter().min().unwrap_or(&0);
            out[2] = *data.iter().max().unwrap_or(&0);
            uout[0] = data.iter().fold(-1, |a, &x| a & x);
            uout[1] = data.iter().fold(0, |a, &x| a | x);
            uout[2] = data.iter().fold(0, |a, &x| a ^ x);
            expect_i32(&mut case, 1, &out);
            expect_i32(&mut case, 2, &uout);
        }
        _ => {}
    }
    case
}

/// Runs every corpus case for `target`; `refused` lists the cases it must refuse when prepared
/// (with a word of the message). The error lists every case that did otherwise.
fn run_corpus(target: &Target, refused: &[(&str, &str)]) -> Result<usize, String> {
    let cases = corpus::cases();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in cases.into_iter().map(for_64_lanes) {
        let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
            .map_err(|e| format!("{}: compile: {e}", case.name))?;
        let result = corpus::cpu::run_for_target(&case, &module, target)
            .and_then(|o| corpus::check(&case, &o));
        match (refused.iter().find(|(n, _)| *n == case.name), result) {
            (None, Ok(())) => ran += 1,
            (None, Err(e)) => failures.push(format!("{}: {e}", case.name)),
            (Some((_, why)), Err(e)) if e.starts_with("prepare:") && e.contains(why) => {}
            (Some((_, why)), r) => failures.push(format!(
                "{}: expected a refusal mentioning `{why}`, got {r:?}",
                case.name
            )),
        }
    }
    if failures.is_empty() {
        Ok(ran)
    } else {
        Err(failures.join("\n"))
    }
}

#[test]
fn the_corpus_runs_in_64_lane_waves_for_gfx90a() {
    let target = cdna();
    assert_eq!((target.warp_width, target.lane_mask_bits), (64, 64));
    let ran = run_corpus(&target, REFUSED_ON_GFX90A).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ran + REFUSED_ON_GFX90A.len(), corpus::cases().len());
}

#[test]
fn the_corpus_runs_in_64_lane_waves_with_the_cpu_capabilities() {
    let refused: Vec<(&str, &str)> = REFUSED_ON_WAVE64
        .iter()
        .map(|n| (*n, "64-lane warps with 64-bit masks"))
        .collect();
    let ran = run_corpus(&cpu_wave64(), &refused).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ran + refused.len(), corpus::cases().len());
}

/// Runs a one-buffer kernel over `threads` threads of one block for `target`.
fn run_kernel(src: &str, target: &Target, threads: u32, out: &DeviceBuffer) {
    let module = chorus_lang::compile_str(src, "wave64.lisp").expect("the kernel compiles");
    let module = CpuModule::for_target(Arc::new(module), target).expect("prepared");
    module
        .launch(
            "k",
            &LaunchConfig::linear(1, threads),
            &[KernelArg::Buffer(out)],
        )
        .expect("the launch runs");
}

#[test]
fn shuffles_and_reductions_cross_the_half_wave() {
    // A butterfly from `warp-size / 2`: the xor by 32 exchanges the wave's halves, which a
    // 32-lane warp cannot.
    let src = "(defkernel k (void ((out int*)))
      (let ((v (+ thread-idx-x 1)) (off (/ warp-size 2)))
        (while (> off 0)
          (set v (+ v (shfl-xor-sync (uint -1) v off)))
          (set off (/ off 2)))
        (set (aref out thread-idx-x) (+ v (* 100000 (reduce-add-sync (uint -1) 1))))))";
    for (target, lanes) in [(cpu_wave64(), 64), (Target::cpu(), 32)] {
        let out = DeviceBuffer::from_bytes(&[0; 128 * 4]).expect("a buffer");
        run_kernel(src, &target, 128, &out);
        let got: Vec<i32> = from_bytes(&out.to_bytes());
        let want: Vec<i32> = (0..128)
            .map(|t| {
                let first = t / lanes * lanes;
                (first + 1..=first + lanes).sum::<i32>() + 100_000 * lanes
            })
            .collect();
        assert_eq!(got, want, "{lanes} lanes");
    }
}

#[test]
fn other_warp_widths_are_refused() {
    let module = chorus_lang::compile_str("(defkernel k (void ()))", "k.lisp").expect("compiles");
    let mut target = Target::cpu();
    target.warp_width = 16;
    let e = CpuModule::for_target(Arc::new(module), &target).expect_err("16 lanes");
    assert!(e.to_string().contains("16 lanes"), "{e}");
}
