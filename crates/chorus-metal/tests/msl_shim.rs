//! The MSL conformance shim (`shim/msl_shim.h`): the kernel corpus (`chorus-cpu/tests/corpus`)
//! printed as MSL, compiled as C++ (`$CXX`, else `clang++`, else `g++`) and run on the CPU, with
//! the corpus's expected results; and every example's kernels printed as MSL and compiled.
//!
//! Cases that Metal cannot run are refused when they are checked for the Metal target (a
//! capability error at a span) or cannot be expressed by its host API (a `:constant` global the
//! host sets): [`REFUSED`] lists them with the reason, and the test fails when the list changes.
//! Without a C++ compiler the test skips, except under `CI`, where it fails.

#[path = "../../chorus-cpu/tests/corpus/mod.rs"]
mod corpus;

use chorus_lang::target::Target;
use chorus_lang::types::{Type, VectorType};
use chorus_metal::{MslProgram, print_msl};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Corpus cases Metal refuses, with a word of the reason the refusal must contain.
const REFUSED: &[(&str, &str)] = &[
    ("atomics_float", "64-bit floating point"),
    ("atomics_int", "64-bit integer atomics"),
    ("curand_normal", "device random"),
    ("curand_uniform", "device random"),
    ("device_functions", "recursion"),
    ("doubles", "64-bit floating point"),
    ("fma_saturate", "64-bit floating point"),
    ("fp8_fp4", "8-bit floating point"),
    ("globals", "device globals"),
    ("match", "warp match"),
    ("math_double", "64-bit floating point"),
    ("printf", "printf"),
    ("shfl_float_double", "64-bit floating point"),
    ("structs", "64-bit floating point"),
];

/// The C++ compiler: `$CXX`, else the first of `clang++` and `g++` that runs.
fn compiler() -> Option<String> {
    let candidates: Vec<String> = match std::env::var("CXX") {
        Ok(cxx) if !cxx.is_empty() => vec![cxx],
        _ => vec!["clang++".into(), "g++".into()],
    };
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn shim_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shim")
}

fn metal() -> Target {
    Target::metal(8).expect("Apple8")
}

/// The MSL with each kernel-scope `threadgroup T x[N];` made `static` (the shim runs one
/// threadgroup at a time, so a function's statics are the threadgroup's memory), and the
/// attribute `[[threadgroup(0)]]` renamed, since the shim's `threadgroup` is an empty macro.
fn shim_source(msl: &str) -> String {
    msl.replace("[[threadgroup(0)]]", "[[chorus_threadgroup_index(0)]]")
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("threadgroup ") && trimmed.ends_with(';') && !line.contains('=')
            {
                let indent = &line[..line.len() - trimmed.len()];
                format!("{indent}static {}\n", &trimmed["threadgroup ".len()..])
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// The printed definition's parameter list of kernel `function`.
fn kernel_parameters(msl: &str, function: &str) -> Vec<String> {
    let head = format!("kernel void {function}(");
    let line = msl
        .lines()
        .find(|l| l.contains(&head) && !l.ends_with(';'))
        .unwrap_or_else(|| panic!("no definition of {function}"));
    let start = line.find(&head).expect("found") + head.len();
    let inside = &line[start..line.len() - 1];
    if inside.is_empty() {
        return Vec::new();
    }
    inside.split(", ").map(str::to_string).collect()
}

/// The C++ expression passing parameter `text` (as printed) in the shim's driver.
fn argument(text: &str, values: &mut Vec<String>) -> String {
    let attribute = text
        .rsplit_once(" [[")
        .map_or("", |(_, a)| a.trim_end_matches("]]"));
    let declaration = text.rsplit_once(" [[").map_or(text, |(d, _)| d);
    if let Some(index) = attribute
        .strip_prefix("buffer(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let index: usize = index.parse().expect("a buffer index");
        let ty = declaration
            .rsplit_once(' ')
            .map_or(declaration, |(t, _)| t)
            .to_string();
        if let Some(value_type) = ty
            .strip_prefix("constant ")
            .and_then(|t| t.strip_suffix('&'))
        {
            values.push(value_type.to_string());
            return format!("*reinterpret_cast<{value_type}*>(chorus_args[{index}])");
        }
        return format!("reinterpret_cast<{ty}>(chorus_args[{index}])");
    }
    match attribute {
        "thread_position_in_threadgroup" => "p.thread_in_group".into(),
        "threadgroup_position_in_grid" => "p.group_in_grid".into(),
        "threads_per_threadgroup" => "p.threads_per_group".into(),
        "threadgroups_per_grid" => "p.groups_per_grid".into(),
        "thread_index_in_simdgroup" => "p.lane".into(),
        "threadgroup(0)" => "p.dynamic_threadgroup_memory".into(),
        other => panic!("unknown attribute {other} in {text}"),
    }
}

/// One runnable case: the program, the C++ driver function, the buffer layout conversions.
struct Prepared<'c> {
    case: &'c corpus::Case,
    program: MslProgram,
    /// For each argument: `Some(true)` for a buffer of `float3` (12-byte host elements become
    /// MSL's 16), `Some(false)` for other buffers, `None` for values.
    buffers: Vec<Option<bool>>,
}

/// C layout (12 bytes) to MSL layout (16 bytes) for `float3` elements.
fn widen_float3(bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks(12)
        .flat_map(|c| c.iter().copied().chain([0u8; 4]))
        .collect()
}

fn narrow_float3(bytes: &[u8]) -> Vec<u8> {
    bytes.chunks(16).flat_map(|c| c[..12].to_vec()).collect()
}

/// The C++ translation unit: every prepared case in a namespace, a driver per case, `main`.
fn translation_unit(prepared: &[Prepared<'_>]) -> String {
    let mut out =
        String::from("#include \"msl_shim.h\"\n#include <fstream>\n#include <iterator>\n\n");
    for (i, p) in prepared.iter().enumerate() {
        let _ = writeln!(
            out,
            "namespace case_{i} {{\n{}}}\n",
            shim_source(&p.program.source)
        );
    }
    out.push_str("using namespace metal;\n\n");
    for (i, p) in prepared.iter().enumerate() {
        let binding = p.program.kernel(p.case.kernel).expect("the case's kernel");
        let params = kernel_parameters(&p.program.source, &binding.function);
        let mut values = Vec::new();
        let args: Vec<String> = params.iter().map(|t| argument(t, &mut values)).collect();
        let [gx, gy, gz] = p.case.grid;
        let [bx, by, bz] = p.case.block;
        let _ = writeln!(
            out,
            "static void run_case_{i}(std::vector<void*>& chorus_args, std::vector<std::vector<unsigned char>>& chorus_globals)\n{{\n  \
             metal::shim::dispatch(metal::uint3({gx}u, {gy}u, {gz}u), metal::uint3({bx}u, {by}u, {bz}u), {}, \
             [&](const metal::shim::Position& p) {{ (void)p; case_{i}::{}({}); }});",
            p.case.shared_mem,
            binding.function,
            args.join(", ")
        );
        for g in &p.case.globals {
            let name = p
                .program
                .names
                .global(g.name)
                .expect("the global's MSL name");
            let _ = writeln!(
                out,
                "  {{ const unsigned char* b = reinterpret_cast<const unsigned char*>(&case_{i}::{name}); \
                 chorus_globals.emplace_back(b, b + sizeof(case_{i}::{name})); }}"
            );
        }
        out.push_str("}\n\n");
    }
    out.push_str(
        "// Each case: DIR/N.in holds, per argument, an 8-byte length then the bytes; DIR/N.out\n\
         // gets the same for every argument, then for every global.\n\
         int main(int argc, char** argv)\n{\n  if (argc != 3) return 2;\n  int which = std::atoi(argv[2]);\n  \
         std::string dir = argv[1];\n  std::ifstream in(dir + \"/\" + argv[2] + \".in\", std::ios::binary);\n  \
         std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());\n  \
         std::vector<void*> args;\n  std::vector<size_t> sizes;\n  for (size_t at = 0; at + 8 <= data.size();) {\n    \
         unsigned long long n; std::memcpy(&n, &data[at], 8); at += 8;\n    \
         void* p = std::aligned_alloc(64, (n + 64) / 64 * 64); std::memset(p, 0, (n + 64) / 64 * 64);\n    \
         std::memcpy(p, &data[at], n); at += n; args.push_back(p); sizes.push_back(n);\n  }\n  \
         std::vector<std::vector<unsigned char>> globals;\n  switch (which) {\n",
    );
    for i in 0..prepared.len() {
        let _ = writeln!(out, "    case {i}: run_case_{i}(args, globals); break;");
    }
    out.push_str(
        "    default: return 2;\n  }\n  std::ofstream o(dir + \"/\" + argv[2] + \".out\", std::ios::binary);\n  \
         for (size_t k = 0; k < args.size(); k++) {\n    unsigned long long n = sizes[k];\n    \
         o.write(reinterpret_cast<const char*>(&n), 8); o.write(static_cast<const char*>(args[k]), n);\n  }\n  \
         for (auto& g : globals) {\n    unsigned long long n = g.size();\n    \
         o.write(reinterpret_cast<const char*>(&n), 8); o.write(reinterpret_cast<const char*>(g.data()), n);\n  }\n  \
         return 0;\n}\n",
    );
    out
}

/// Writes case `p`'s arguments for the driver.
fn write_input(p: &Prepared<'_>, path: &Path) {
    let mut bytes = Vec::new();
    let mut data = p.case.buffer_data();
    for (arg, float3) in p.case.args.iter().zip(&p.buffers) {
        let payload = match (arg, float3) {
            (corpus::Arg::Buffer { .. }, Some(true)) => widen_float3(data.next().expect("data")),
            (corpus::Arg::Buffer { .. }, _) => data.next().expect("data").clone(),
            (corpus::Arg::Value { ty, bytes }, _) => {
                assert!(
                    !matches!(ty, Type::Vector(VectorType::Float3) | Type::Struct(_)),
                    "{}: a by-value float3 or structure would need MSL's layout",
                    p.case.name
                );
                bytes.clone()
            }
        };
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&payload);
    }
    std::fs::write(path, bytes).expect("write the case's input");
}

/// Reads what the driver left: the buffers (in C layout again) and the globals.
fn read_output(p: &Prepared<'_>, path: &Path) -> corpus::Outcome {
    let bytes = std::fs::read(path).expect("the case's output");
    let mut chunks = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let n = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")) as usize;
        chunks.push(bytes[at + 8..at + 8 + n].to_vec());
        at += 8 + n;
    }
    let args = p.case.args.len();
    let buffers = chunks[..args]
        .iter()
        .zip(&p.buffers)
        .filter_map(|(c, kind)| match kind {
            Some(true) => Some(narrow_float3(c)),
            Some(false) => Some(c.clone()),
            None => None,
        })
        .collect();
    corpus::Outcome {
        buffers,
        globals: chunks[args..].to_vec(),
    }
}

/// Compiles `source` with the shim's include directory; the error is the compiler's output.
fn compile(cxx: &str, source: &Path, output: Option<&Path>) -> Result<(), String> {
    let mut command = Command::new(cxx);
    command
        .arg("-std=c++20")
        .arg("-O1")
        .arg("-pthread")
        .arg("-Wno-attributes")
        .arg("-Wno-unknown-attributes")
        .arg("-Wno-unused-parameter")
        .arg("-I")
        .arg(shim_dir())
        .arg("-I")
        .arg(shim_dir().join("include"))
        .arg(source);
    match output {
        Some(o) => command.arg("-o").arg(o),
        None => command.arg("-fsyntax-only"),
    };
    let result = command.output().map_err(|e| format!("{cxx}: {e}"))?;
    if result.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&result.stderr).into_owned())
    }
}

fn skip_or_fail(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{why} (CI must run the MSL shim)");
    }
    eprintln!("skipped: {why}");
}

#[test]
fn the_corpus_runs_through_the_msl_shim() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    let cases = corpus::cases();
    let mut refused = Vec::new();
    let mut prepared = Vec::new();
    for case in &cases {
        let file = format!("{}.lisp", case.name);
        let program = chorus_lang::compile_str_for(case.source, &file, &metal())
            .and_then(|m| print_msl(&m, &metal()));
        let program = match program {
            Ok(p) => p,
            Err(e) => {
                refused.push((case.name, e.to_string()));
                continue;
            }
        };
        if case.globals.iter().any(|g| g.init.is_some()) {
            refused.push((case.name, "sets a global from the host".into()));
            continue;
        }
        let binding = program.kernel(case.kernel).expect("the case's kernel");
        let buffers = case
            .args
            .iter()
            .zip(&binding.params)
            .map(|(a, ty)| match a {
                corpus::Arg::Buffer { .. } => {
                    Some(ty.pointee() == Some(&Type::Vector(VectorType::Float3)))
                }
                corpus::Arg::Value { .. } => None,
            })
            .collect();
        prepared.push(Prepared {
            case,
            program,
            buffers,
        });
    }
    // The refusals are the expected ones, each for its reason.
    let names: Vec<&str> = refused.iter().map(|(n, _)| *n).collect();
    let mut expected: Vec<&str> = REFUSED.iter().map(|(n, _)| *n).collect();
    expected.sort_unstable();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected, "refused: {refused:#?}");
    for (name, message) in &refused {
        let (_, reason) = REFUSED.iter().find(|(n, _)| n == name).expect("listed");
        assert!(message.contains(reason), "{name}: {message}");
    }
    assert!(prepared.len() >= 30, "only {} cases run", prepared.len());

    let dir = tempfile_dir("chorus-msl-shim");
    let source = dir.join("corpus.cpp");
    std::fs::write(&source, translation_unit(&prepared)).expect("write the C++");
    let binary = dir.join("corpus");
    if let Err(e) = compile(&cxx, &source, Some(&binary)) {
        panic!(
            "{cxx} rejects the corpus's MSL ({}):\n{e}",
            source.display()
        );
    }
    let mut failures = Vec::new();
    for (i, p) in prepared.iter().enumerate() {
        write_input(p, &dir.join(format!("{i}.in")));
        let run = Command::new(&binary)
            .arg(&dir)
            .arg(i.to_string())
            .output()
            .expect("run the shim");
        if !run.status.success() {
            failures.push(format!(
                "{}: exit {:?}: {}",
                p.case.name,
                run.status.code(),
                String::from_utf8_lossy(&run.stderr)
            ));
            continue;
        }
        let outcome = read_output(p, &dir.join(format!("{i}.out")));
        if let Err(e) = corpus::check(p.case, &outcome) {
            failures.push(format!("{}: {e}", p.case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ through the shim:\n{}",
        failures.len(),
        prepared.len(),
        failures.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The examples' kernel programs: the workloads (prelude + file) and the kernels written in
/// `defkernel!` blocks.
fn example_programs() -> Vec<(String, String)> {
    const PRELUDE: &str = include_str!("../../../examples/kernels/prelude.lisp");
    let mut programs: Vec<(String, String)> = [
        (
            "diffuse0",
            include_str!("../../../examples/kernels/diffuse0.lisp"),
        ),
        (
            "diffuse1",
            include_str!("../../../examples/kernels/diffuse1.lisp"),
        ),
        (
            "nbody",
            include_str!("../../../examples/kernels/nbody.lisp"),
        ),
        ("sph", include_str!("../../../examples/kernels/sph.lisp")),
        (
            "reduction",
            include_str!("../../../examples/kernels/reduction.lisp"),
        ),
        (
            "transpose",
            include_str!("../../../examples/kernels/transpose.lisp"),
        ),
        (
            "sgemm",
            include_str!("../../../examples/kernels/sgemm.lisp"),
        ),
        ("scan", include_str!("../../../examples/kernels/scan.lisp")),
    ]
    .into_iter()
    .map(|(n, text)| (n.to_string(), format!("{PRELUDE}\n{text}")))
    .collect();
    for (name, rust) in [
        (
            "vector-add",
            include_str!("../../../examples/vector-add.rs"),
        ),
        ("defglobal", include_str!("../../../examples/defglobal.rs")),
        (
            "launch-overhead",
            include_str!("../../../examples/launch-overhead.rs"),
        ),
    ] {
        programs.push((name.to_string(), defkernel_block(rust)));
    }
    programs
}

/// The text inside a Rust file's `chorus::defkernel! { … }`.
fn defkernel_block(rust: &str) -> String {
    let start = rust.find("defkernel! {").expect("a defkernel! block") + "defkernel! {".len();
    let mut depth = 1;
    for (i, c) in rust[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return rust[start..start + i].to_string();
                }
            }
            _ => {}
        }
    }
    panic!("an unclosed defkernel! block");
}

/// Examples Metal refuses, with a word of the reason.
const REFUSED_EXAMPLES: &[(&str, &str)] = &[("defglobal", "device globals")];

#[test]
fn every_example_prints_as_msl_that_compiles() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    let dir = tempfile_dir("chorus-msl-examples");
    let mut failures = Vec::new();
    for (name, text) in example_programs() {
        let result = chorus_lang::compile_str_for(&text, &format!("{name}.lisp"), &metal())
            .and_then(|m| print_msl(&m, &metal()));
        let refusal = REFUSED_EXAMPLES.iter().find(|(n, _)| *n == name);
        match (result, refusal) {
            (Err(e), Some((_, reason))) if e.message.contains(reason) => continue,
            (Err(e), _) => failures.push(format!("{name}: {e}")),
            (Ok(_), Some(_)) => failures.push(format!("{name}: printed, but listed as refused")),
            (Ok(program), None) => {
                let path = dir.join(format!("{name}.cpp"));
                let text = format!("#include \"msl_shim.h\"\n{}", shim_source(&program.source));
                std::fs::write(&path, text).expect("write the C++");
                if let Err(e) = compile(&cxx, &path, None) {
                    failures.push(format!("{name}: {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory under the system's temporary directory.
fn tempfile_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

#[path = "../../chorus-lang/tests/support/identifier_sweep.rs"]
mod identifier_sweep;

/// The identifier sweep: every name the front end accepts prints as MSL that compiles (through
/// the shim, whose address spaces and `kernel` are macros, so a name MSL reserves and the
/// printer let through would break the build). Modules needing what Metal lacks are refused.
#[test]
fn the_identifier_sweep_prints_as_msl_that_compiles() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    let (modules, _) = identifier_sweep::sweep_modules();
    let mut unit = String::from("#include \"msl_shim.h\"\n");
    let mut printed = 0;
    for (i, (name, text)) in modules.iter().enumerate() {
        let Ok(module) = chorus_lang::compile_str_for(text, name, &metal()) else {
            continue;
        };
        let program = print_msl(&module, &metal()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let _ = writeln!(
            unit,
            "namespace sweep_{i} {{\n{}}}",
            shim_source(&program.source)
        );
        printed += 1;
    }
    assert!(printed > 0, "no sweep module validates for Metal");
    let dir = tempfile_dir("chorus-msl-sweep");
    let path = dir.join("sweep.cpp");
    std::fs::write(&path, unit).expect("write the C++");
    if let Err(e) = compile(&cxx, &path, None) {
        panic!("{cxx} rejects the sweep's MSL ({}):\n{e}", path.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
