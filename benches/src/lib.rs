//! The pure part of Chorus's benchmark suite (`src/bench_suite.rs`): the rows it measures, the
//! baseline rows the CUDA C harness (`baselines/harness.cu`) prints, the targets of the issue, and
//! the table that puts them side by side.

use std::collections::HashMap;
use std::fmt::Write as _;

/// The H200's memory bandwidth by its datasheet, the reference of the bandwidth targets.
pub const HBM_TB_S: f64 = 4.8;
/// One measurement of Chorus.
pub struct Row {
    /// The baseline harness's name for the same measurement.
    pub name: &'static str,
    /// Problem size, for the table.
    pub size: String,
    /// Milliseconds (per run, per launch, per compile, per copy).
    pub ms: f64,
    /// The rate, in `unit`.
    pub value: f64,
    /// The unit of `value`.
    pub unit: &'static str,
    /// The result checked out.
    pub ok: bool,
}

/// A baseline row: milliseconds, value, check.
pub type Baseline = (f64, f64, bool);

/// The median of `samples` (the upper one of an even count); sorts them.
///
/// # Panics
/// When `samples` is empty.
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Parses the harness's rows, `baseline NAME MS VALUE UNIT CHECK` (tab-separated; other lines are
/// comments), from `text`; `path` names it in errors.
pub fn parse_baselines(text: &str, path: &str) -> Result<HashMap<String, Baseline>, String> {
    let mut rows = HashMap::new();
    for line in text.lines().filter(|l| l.starts_with("baseline\t")) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 6 {
            return Err(format!("{path}: malformed row {line:?}"));
        }
        let number = |s: &str| {
            s.parse::<f64>()
                .map_err(|_| format!("{path}: not a number in {line:?}"))
        };
        rows.insert(
            f[1].to_string(),
            (number(f[2])?, number(f[3])?, f[5] == "ok"),
        );
    }
    Ok(rows)
}

/// The harness's name for the baseline of Chorus's row `name`.
pub fn baseline_name(name: &str) -> &str {
    if name.starts_with("launch") {
        "launch-raw"
    } else {
        name
    }
}

/// The target of a row and whether it is met, given the baselines.
pub fn target(row: &Row, base: &HashMap<String, Baseline>) -> (String, Option<bool>) {
    let ratio = base.get(row.name).map(|b| row.ms / b.0);
    let within = |limit: f64| ratio.map(|r| r <= limit);
    let both = |a: Option<bool>, b: Option<bool>| match (a, b) {
        (Some(x), Some(y)) => Some(x && y),
        (x, None) | (None, x) => x,
    };
    match row.name {
        "vector-add" | "reduction" => {
            let floor = 0.9 * HBM_TB_S;
            (
                format!("≥ {floor:.2} TB/s, ≤ 1.02× CUDA C"),
                both(Some(row.value >= floor), within(1.02)),
            )
        }
        "sgemm" => {
            let cublas = base.get("cublas-sgemm").map(|b| b.1);
            let met = cublas.map(|c| row.value >= 0.6 * c);
            (
                format!(
                    "≥ 60% of cuBLAS ({}), ≤ 1.02× CUDA C",
                    cublas.map_or("?".into(), |c| format!("{:.1}", 0.6 * c))
                ),
                both(met, within(1.02)),
            )
        }
        "nbody" => (
            "≥ 20 TFLOP/s, ≤ 1.02× CUDA C".into(),
            both(Some(row.value >= 20.0), within(1.02)),
        ),
        "launch" | "launch-typed" => (
            "≤ 1.15× raw cuLaunchKernel".into(),
            base.get("launch-raw").map(|b| row.value <= 1.15 * b.1),
        ),
        "compile-cold" | "compile-cold-cubin" => ("≤ 50 ms".into(), Some(row.ms <= 50.0)),
        "compile-first" | "compile-first-cubin" => ("(≤ 50 ms + NVRTC's load)".into(), None),
        "compile-warm-first" | "compile-warm-first-cubin" => ("(≤ 1 ms + first load)".into(), None),
        "compile-warm" | "compile-warm-cubin" => ("≤ 1 ms".into(), Some(row.ms <= 1.0)),
        "h2d-pinned" | "d2h-pinned" => ("≥ 50 GB/s".into(), Some(row.value >= 50.0)),
        "h2d-pageable" | "d2h-pageable" => ("(≥ 8 GB/s)".into(), Some(row.value >= 8.0)),
        _ => ("≤ 1.02× CUDA C".into(), within(1.02)),
    }
}

/// The table of `rows` beside their baselines, in Markdown, with the ceilings last.
pub fn table(rows: &[Row], base: &HashMap<String, Baseline>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| workload | size | Chorus | Chorus rate | baseline | baseline rate | Chorus/baseline time | check | target | met |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let b = base.get(baseline_name(row.name));
        let (goal, met) = target(row, base);
        let time = |ms: f64| {
            if row.unit == "us" {
                format!("{:.2} µs", ms * 1e3)
            } else {
                format!("{ms:.3} ms")
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} {} | {} | {} | {} | {} | {} | {} |",
            row.name,
            row.size,
            time(row.ms),
            row.value,
            row.unit,
            b.map_or("–".into(), |b| time(b.0)),
            b.map_or("–".into(), |b| format!("{:.3} {}", b.1, row.unit)),
            b.map_or("–".into(), |b| format!("{:.3}", row.ms / b.0)),
            match (row.ok, b.map(|b| b.2)) {
                (true, Some(false)) => "ok (baseline FAILED)",
                (true, _) => "ok",
                (false, _) => "FAILED",
            },
            goal,
            match met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "?",
            }
        );
    }
    for extra in ["d2d-copy", "cublas-sgemm"] {
        if let Some(b) = base.get(extra) {
            let unit = if extra == "d2d-copy" {
                "TB/s (read + write)"
            } else {
                "TFLOP/s (FP32, no TF32)"
            };
            let _ = writeln!(
                out,
                "| {extra} (ceiling) | {} | – | – | {:.3} ms | {:.3} {unit} | – | {} | – | – |",
                if extra == "d2d-copy" {
                    "1 GiB"
                } else {
                    "4096³"
                },
                b.0,
                b.1,
                if b.2 { "ok" } else { "FAILED" }
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HARNESS: &str = "# device NVIDIA H200\n\
        baseline\tvector-add\t0.737\t4.37\tTB/s\tok\n\
        baseline\tsgemm\t3.062\t44.88\tTFLOP/s\tok\n\
        baseline\tcublas-sgemm\t2.660\t51.67\tTFLOP/s\tok\n\
        baseline\tlaunch-raw\t0.00345\t3.45\tus\tok\n\
        baseline\tscan\t0.791\t2.72\tTB/s\tFAIL\n";

    fn row(name: &'static str, ms: f64, value: f64, unit: &'static str) -> Row {
        Row {
            name,
            size: "n".into(),
            ms,
            value,
            unit,
            ok: true,
        }
    }

    #[test]
    fn baselines_parse_and_keep_their_check() {
        let base = parse_baselines(HARNESS, "h.tsv").unwrap();
        assert_eq!(base.len(), 5);
        assert_eq!(base["vector-add"], (0.737, 4.37, true));
        assert!(!base["scan"].2);
    }

    #[test]
    fn malformed_baselines_are_errors_that_name_the_file() {
        let short = parse_baselines("baseline\tx\t1.0\n", "h.tsv").unwrap_err();
        assert!(
            short.contains("h.tsv") && short.contains("malformed"),
            "{short}"
        );
        let nan = parse_baselines("baseline\tx\tfast\t1\tms\tok\n", "h.tsv").unwrap_err();
        assert!(nan.contains("not a number"), "{nan}");
    }

    #[test]
    fn targets_combine_the_absolute_goal_and_the_ratio() {
        let base = parse_baselines(HARNESS, "h").unwrap();
        // 4.36 TB/s is over 90% of 4.8 and 0.738/0.737 is within 2%.
        assert_eq!(
            target(&row("vector-add", 0.738, 4.36, "TB/s"), &base).1,
            Some(true)
        );
        // Fast enough in absolute terms, but 3% slower than the CUDA C.
        assert_eq!(
            target(&row("vector-add", 0.760, 4.33, "TB/s"), &base).1,
            Some(false)
        );
        // SGEMM: 60% of cuBLAS's 51.67 is 31.0 TFLOP/s.
        assert_eq!(
            target(&row("sgemm", 3.0, 48.6, "TFLOP/s"), &base).1,
            Some(true)
        );
        assert_eq!(
            target(&row("sgemm", 3.0, 30.0, "TFLOP/s"), &base).1,
            Some(false)
        );
        // Launch: 1.15 × 3.45 µs = 3.97 µs.
        assert_eq!(
            target(&row("launch", 0.00396, 3.96, "us"), &base).1,
            Some(true)
        );
        assert_eq!(
            target(&row("launch-typed", 0.00494, 4.94, "us"), &base).1,
            Some(false)
        );
        // No baseline, no verdict on the ratio.
        assert_eq!(target(&row("transpose", 0.6, 3.5, "TB/s"), &base).1, None);
        assert_eq!(
            target(&row("compile-warm", 1.23, 1.23, "ms"), &base).1,
            Some(false)
        );
    }

    #[test]
    fn the_table_shows_ratios_failed_baselines_and_ceilings() {
        let base = parse_baselines(HARNESS, "h").unwrap();
        let text = table(
            &[
                row("vector-add", 0.74, 4.35, "TB/s"),
                row("scan", 0.79, 2.7, "TB/s"),
            ],
            &base,
        );
        assert!(
            text.contains(
                "| vector-add | n | 0.740 ms | 4.350 TB/s | 0.737 ms | 4.370 TB/s | 1.004 |"
            ),
            "{text}"
        );
        assert!(text.contains("ok (baseline FAILED)"), "{text}");
        assert!(text.contains("cublas-sgemm (ceiling)"), "{text}");
    }

    #[test]
    fn the_median_is_the_middle_sample() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
