//! Fuzzing of Chorus on stable Rust: structure-aware generation of kernel text plus mutation
//! of a seed corpus, run against five targets with a per-input time and memory bound.
//!
//! Stable Rust has no libFuzzer (`cargo fuzz` needs nightly's `-Zsanitizer`), so inputs are
//! not coverage-guided: [`generate`] writes random modules that are mostly well-formed and
//! well-typed (every statement, many built-ins, macros, odd identifiers, hostile literals and
//! formats, now and then deep nesting or a mistake), and [`mutate`] edits bytes, swaps tokens
//! and splices whole forms between them and every `.lisp` file of the repository.
//!
//! The targets ([`Target`]) and the invariants [`run`] checks for every input:
//!
//! * no panic (caught, with its location), no hang (each input has [`Budget::per_input`]),
//!   no more than [`MAX_INPUT_MEMORY`] plus 64 bytes per input byte of memory at its peak;
//! * every front-end error names a span inside the input (its file, a line and column that
//!   exist, start before end), or `<generated>` for a form a macro made;
//! * every module the checker accepts prints as CUDA C without error;
//! * every module the checker accepts is prepared by the CPU executor or refused with an
//!   error, and the kernels of generated modules (which terminate by construction) run to
//!   completion or fail with an error.
//!
//! See `fuzz/README.md` for how to run it and what it has found.

pub mod alloc;
pub mod generate;
pub mod mutate;
pub mod rng;
mod targets;

pub use targets::Target;

use rng::Rng;
use std::cell::RefCell;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// Memory an input may take at its peak, before its per-byte allowance.
pub const MAX_INPUT_MEMORY: usize = 128 << 20;

/// The file name inputs are read under; error spans must name it.
pub const INPUT_FILE: &str = "fuzz.lisp";

/// How long to fuzz.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Wall-clock time for the whole run.
    pub total: Duration,
    /// Time one input may take before it counts as a hang.
    pub per_input: Duration,
    /// Seed of the run: the same seed replays the same inputs.
    pub seed: u64,
}

/// An input that broke an invariant.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Which invariant: `panic`, `hang`, `memory`, `span`, `printer`, `nvcc`.
    pub kind: &'static str,
    /// What happened.
    pub message: String,
    /// The input, to reproduce it.
    pub input: String,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Inputs tried.
    pub inputs: u64,
    /// Inputs that got through every stage of the target without an error.
    pub accepted: u64,
    /// Distinct findings (by kind and message), at most [`MAX_FINDINGS`].
    pub findings: Vec<Finding>,
}

/// A run stops after this many distinct findings.
pub const MAX_FINDINGS: usize = 10;

/// What one input did to a target: `Ok(true)` when every stage accepted it, `Ok(false)` when a
/// stage refused it with an error, `Err` when an invariant broke.
pub(crate) type Outcome = Result<bool, (&'static str, String)>;

/// Runs one target at a time, so the allocator's peak belongs to one input.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

thread_local! {
    /// Where and why the last panic on this thread happened (the hook records it; the
    /// payload alone has no location).
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Set on the fuzz worker, whose panics are findings, not test failures to print.
    static IS_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IS_WORKER.with(|w| w.get()) {
                let text = info.to_string();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
            } else {
                default(info);
            }
        }));
    });
}

/// The seed corpus: every `.lisp` file under the repository's kernel folders.
pub fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut texts = Vec::new();
    for dir in [
        "crates/chorus-lang/tests",
        "crates/chorus-cpu/tests",
        "examples/kernels",
    ] {
        collect_lisp(&root.join(dir), &mut texts);
    }
    texts
}

fn collect_lisp(dir: &Path, texts: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    // Sorted, so that a seed replays the same inputs on every machine.
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_lisp(&path, texts);
        } else if path.extension().is_some_and(|e| e == "lisp")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            texts.push(text);
        }
    }
}

/// An input for `target`: generated, mutated from the corpus or from a generated module, or
/// (for the reader) random bytes. The flag says whether it is a generated module unchanged,
/// whose kernels terminate and so may be launched.
fn next_input(target: Target, rng: &mut Rng, corpus: &[String]) -> (String, bool) {
    if target == Target::Reader && rng.one_in(3) {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        return (String::from_utf8_lossy(&bytes).into_owned(), false);
    }
    match rng.below(4) {
        0 | 1 => (generate::module(rng), true),
        2 => {
            let base = generate::module(rng);
            (mutate::mutate(rng, &base, corpus), false)
        }
        _ if corpus.is_empty() => (generate::module(rng), true),
        _ => {
            let base = corpus[rng.below(corpus.len())].clone();
            (mutate::mutate(rng, &base, corpus), false)
        }
    }
}

/// Takes one input through `target`'s stages and checks the invariants that need no harness
/// (error spans inside the input, every accepted module prints, the CPU executor prepares or
/// refuses it; nothing is launched, since a mutated kernel need not terminate): the entry of the
/// coverage-guided targets in `fuzz/libfuzzer`, where libFuzzer itself catches panics, hangs
/// and memory. `Err` names the broken invariant.
pub fn check_input(target: Target, text: &str) -> Result<(), String> {
    targets::run_one(target, text, false, 0)
        .map(|_| ())
        .map_err(|(kind, message)| format!("{kind}: {message}"))
}

/// Fuzzes `target` within `budget` and reports what it found. Runs of different targets
/// take turns (see `ONE_AT_A_TIME`).
pub fn run(target: Target, budget: Budget) -> Report {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    install_panic_hook();
    let corpus = corpus();
    let mut rng = Rng::new(budget.seed ^ target as u64);
    let mut report = Report::default();
    let (to_worker, inputs) = mpsc::channel::<(String, bool, u64)>();
    let (to_harness, outcomes) = mpsc::channel::<Outcome>();
    // A large stack: depth limits are each pass's own business (the defect 4), and a
    // stack overflow would abort the whole run instead of reporting the input.
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{target:?}"))
        .stack_size(256 << 20)
        .spawn(move || {
            IS_WORKER.with(|w| w.set(true));
            for (text, launchable, seed) in inputs {
                alloc::reset_peak();
                let before = alloc::live();
                let outcome =
                    std::panic::catch_unwind(|| targets::run_one(target, &text, launchable, seed))
                        .unwrap_or_else(|_| {
                            let message = LAST_PANIC
                                .with(|p| p.borrow_mut().take())
                                .unwrap_or_else(|| "a panic".into());
                            Err(("panic", message))
                        });
                let used = alloc::peak().saturating_sub(before);
                let outcome = match outcome {
                    Ok(_) if used > MAX_INPUT_MEMORY + 64 * text.len() => Err((
                        "memory",
                        format!("{used} bytes at the peak for {} input bytes", text.len()),
                    )),
                    other => other,
                };
                if to_harness.send(outcome).is_err() {
                    break;
                }
            }
        })
        .expect("the fuzz worker starts");
    let start = Instant::now();
    while start.elapsed() < budget.total && report.findings.len() < MAX_FINDINGS {
        let (text, launchable) = next_input(target, &mut rng, &corpus);
        let input_seed = rng.next_u64();
        report.inputs += 1;
        if to_worker
            .send((text.clone(), launchable, input_seed))
            .is_err()
        {
            break;
        }
        match outcomes.recv_timeout(budget.per_input) {
            Ok(Ok(accepted)) => report.accepted += u64::from(accepted),
            Ok(Err((kind, message))) => record(&mut report, kind, message, text),
            Err(_) => {
                // The worker is stuck on this input: report it and leave the thread behind
                // (it cannot be stopped; the test process ends soon).
                let message = format!("no result within {:?}", budget.per_input);
                record(&mut report, "hang", message, text);
                return report;
            }
        }
    }
    drop(to_worker);
    let _ = worker.join();
    report
}

fn record(report: &mut Report, kind: &'static str, message: String, input: String) {
    // One bug found at many places is one finding: compare first lines without their numbers.
    let key = |m: &str| -> String {
        m.lines()
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect()
    };
    let seen = report
        .findings
        .iter()
        .any(|f| f.kind == kind && key(&f.message) == key(&message));
    if !seen {
        report.findings.push(Finding {
            kind,
            message,
            input,
        });
    }
}
