//! The MSL conformance shim (`shim/msl_shim.h`): the kernel corpus (`chorus-cpu/tests/corpus`)
//! printed as MSL, compiled as C++ (`$CXX`, else `clang++`, else `g++`) and run on the CPU, with
//! the corpus's expected results; and every example's kernels printed as MSL and compiled.
//!
//! Cases that Metal cannot run are refused when they are checked for the Metal target (a
//! capability error at a span): [`REFUSED`] lists them with the reason, and the test fails when
//! the list changes. Globals are the host's, as on a Metal device: the driver gets the bytes of
//! the constant globals' structure and of the device globals' structure
//! ([`chorus_metal::GlobalsLayout`]) as more arguments, with the values the case sets from the
//! host written in, and the device globals' bytes it leaves are the program's from then on, as
//! the Metal backend's buffer of them is.
//! Without a C++ compiler the test skips, except under `CI`, where it fails.

#[path = "../../chorus-cpu/tests/corpus/mod.rs"]
mod corpus;

use chorus_lang::ir::{Module, StructDef};
use chorus_lang::target::{LayoutRules, Target};
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
    ("match", "warp match"),
    ("math_double", "64-bit floating point"),
    ("printf", "printf"),
    ("shfl_float_double", "64-bit floating point"),
    ("structs", "64-bit floating point"),
];

/// The C++ compiler: `$CXX`, else the first of `clang++` and `g++` that compiles C++20 with
/// `_Float16` (the shim's `half`; clang before 15 lacks it on x86-64).
fn compiler() -> Option<String> {
    let candidates: Vec<String> = match std::env::var("CXX") {
        Ok(cxx) if !cxx.is_empty() => vec![cxx],
        _ => vec!["clang++".into(), "g++".into()],
    };
    let probe = std::env::temp_dir().join(format!("chorus-msl-probe-{}.cpp", std::process::id()));
    std::fs::write(
        &probe,
        "_Float16 h = 1;\nint main() { return int(h) - 1; }\n",
    )
    .ok()?;
    let found = candidates.into_iter().find(|c| {
        Command::new(c)
            .args(["-std=c++20", "-fsyntax-only"])
            .arg(&probe)
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let _ = std::fs::remove_file(&probe);
    found
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
        // A reference (a value, or a globals' structure): to what the buffer holds.
        if let Some(value_type) = ty
            .strip_prefix("constant ")
            .or_else(|| ty.strip_prefix("device "))
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

/// One runnable case: the program, the C++ driver function, the layouts of its arguments.
struct Prepared<'c> {
    case: &'c corpus::Case,
    program: MslProgram,
    /// For each argument, its buffer's element type, or `None` for a value.
    buffers: Vec<Option<Type>>,
    /// The module's structure definitions (C layout; MSL's is recomputed from them).
    structs: Vec<StructDef>,
    /// The module, for its globals' types.
    module: Module,
    /// The bytes of the constant globals' structure, as the Metal backend keeps them for a
    /// program: the initializers, then what the host writes.
    constant_globals: Vec<u8>,
    /// The contents of the device globals' buffer, as the Metal backend keeps it for a
    /// program: the initializers, what the host writes, what the kernels leave.
    device_globals: Vec<u8>,
}

impl Prepared<'_> {
    /// The bytes of the structure holding global `name`, with its layout.
    fn globals_of(&self, name: &str) -> (&chorus_metal::GlobalsLayout, &[u8]) {
        let layout = self.program.globals_of(name).expect("the program's global");
        if self.program.device_globals.contains(name) {
            (layout, &self.device_globals)
        } else {
            (layout, &self.constant_globals)
        }
    }

    /// Global `name` as the host reads it (C's layout, `size` bytes).
    fn read_global(&self, name: &str, size: usize) -> Vec<u8> {
        let (layout, values) = self.globals_of(name);
        let mut value = vec![0; size];
        layout
            .read(values, name, &mut value)
            .expect("read the global");
        value
    }

    /// Sets global `name` from the host (`value` in C's layout).
    fn write_global(&mut self, name: &str, value: &[u8]) -> chorus_metal::Result<()> {
        let layout = self.program.globals_of(name).expect("the program's global");
        let values = if self.program.device_globals.contains(name) {
            &mut self.device_globals
        } else {
            &mut self.constant_globals
        };
        layout.write(values, name, value)
    }
}

/// `bytes` of `ty` elements in C's layout, laid out under MSL's (what the facade does when it
/// syncs a memory block on a Metal device).
fn to_msl_array(ty: &Type, structs: &[StructDef], bytes: &[u8]) -> Vec<u8> {
    let (size, _) = LayoutRules::C.layout(ty, structs).expect("a C layout");
    LayoutRules::C
        .convert_array(LayoutRules::Msl, ty, structs, bytes, bytes.len() / size)
        .expect("an MSL layout")
}

/// The reverse of [`to_msl_array`].
fn from_msl_array(ty: &Type, structs: &[StructDef], bytes: &[u8]) -> Vec<u8> {
    let (size, _) = LayoutRules::Msl.layout(ty, structs).expect("an MSL layout");
    LayoutRules::Msl
        .convert_array(LayoutRules::C, ty, structs, bytes, bytes.len() / size)
        .expect("a C layout")
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
            "namespace case_{i} {{\nstatic void run_case_{i}(std::vector<void*>& chorus_args)\n{{\n  \
             metal::shim::dispatch(metal::uint3({gx}u, {gy}u, {gz}u), metal::uint3({bx}u, {by}u, {bz}u), {}, \
             [&](const metal::shim::Position& p) {{ (void)p; case_{i}::{}({}); }});",
            p.case.shared_mem,
            binding.function,
            args.join(", ")
        );
        out.push_str("}\n}\n\n");
    }
    out.push_str(
        "// Each case: DIR/N.in holds, per argument (the globals' structures last, for a kernel\n\
         // that uses globals), an 8-byte length then the bytes; DIR/N.out gets the same.\n\
         int main(int argc, char** argv)\n{\n  if (argc != 3) return 2;\n  int which = std::atoi(argv[2]);\n  \
         std::string dir = argv[1];\n  std::ifstream in(dir + \"/\" + argv[2] + \".in\", std::ios::binary);\n  \
         std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());\n  \
         std::vector<void*> args;\n  std::vector<size_t> sizes;\n  for (size_t at = 0; at + 8 <= data.size();) {\n    \
         unsigned long long n; std::memcpy(&n, &data[at], 8); at += 8;\n    \
         void* p = std::aligned_alloc(64, (n + 64) / 64 * 64); std::memset(p, 0, (n + 64) / 64 * 64);\n    \
         std::memcpy(p, &data[at], n); at += n; args.push_back(p); sizes.push_back(n);\n  }\n  \
         switch (which) {\n",
    );
    for i in 0..prepared.len() {
        let _ = writeln!(out, "    case {i}: case_{i}::run_case_{i}(args); break;");
    }
    out.push_str(
        "    default: return 2;\n  }\n  std::ofstream o(dir + \"/\" + argv[2] + \".out\", std::ios::binary);\n  \
         for (size_t k = 0; k < args.size(); k++) {\n    unsigned long long n = sizes[k];\n    \
         o.write(reinterpret_cast<const char*>(&n), 8); o.write(static_cast<const char*>(args[k]), n);\n  }\n  \
         return 0;\n}\n",
    );
    out
}

/// Writes case `p`'s arguments for the driver, in MSL's layout (buffers as the facade stores
/// them on a Metal device, values as the Metal backend passes them, the globals' structures
/// after them as the Metal backend binds them: the constant one, then the device one).
fn write_input(p: &Prepared<'_>, path: &Path) {
    let mut bytes = Vec::new();
    let mut data = p.case.buffer_data();
    for (arg, element) in p.case.args.iter().zip(&p.buffers) {
        let payload = match (arg, element) {
            (corpus::Arg::Buffer { .. }, Some(ty)) => {
                to_msl_array(ty, &p.structs, data.next().expect("data"))
            }
            (corpus::Arg::Value { ty, bytes }, _) => {
                chorus_metal::layout::to_msl(ty, bytes, &p.structs).expect("an MSL value")
            }
            (corpus::Arg::Buffer { .. }, None) => unreachable!("buffers have element types"),
        };
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&payload);
    }
    let binding = p.program.kernel(p.case.kernel).expect("the case's kernel");
    let mut index = p.case.args.len();
    for (at, values) in [
        (binding.constant_globals, &p.constant_globals),
        (binding.device_globals, &p.device_globals),
    ] {
        if let Some(at) = at {
            assert_eq!(at, index, "the globals' structures follow the arguments");
            bytes.extend_from_slice(&(values.len() as u64).to_le_bytes());
            bytes.extend_from_slice(values);
            index += 1;
        }
    }
    std::fs::write(path, bytes).expect("write the case's input");
}

/// Reads what the driver left: the buffers (in C layout again), the device globals' structure
/// (the program's from now on, as the Metal backend's buffer of them), and the case's globals
/// as the host reads them then.
fn read_output(p: &mut Prepared<'_>, path: &Path) -> corpus::Outcome {
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
        .filter_map(|(c, element)| element.as_ref().map(|ty| from_msl_array(ty, &p.structs, c)))
        .collect();
    let binding = p.program.kernel(p.case.kernel).expect("the case's kernel");
    if let Some(index) = binding.device_globals {
        p.device_globals = chunks[index].clone();
    }
    let globals = p
        .case
        .globals
        .iter()
        .map(|g| {
            let (_, global) = p.module.global(g.name).expect("the case's global");
            let (size, _) = global.ty.layout(&p.structs).expect("a C layout");
            p.read_global(g.name, size)
        })
        .collect();
    corpus::Outcome { buffers, globals }
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
        prepared.push(prepare(case, program, &file));
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

    run_through_the_shim(&cxx, &mut prepared, "chorus-msl-shim");
}

/// A case's program with its arguments' element types and the module's structures.
fn prepare<'c>(case: &'c corpus::Case, program: MslProgram, file: &str) -> Prepared<'c> {
    let module = chorus_lang::compile_str_for(case.source, file, &metal()).expect("validated");
    let binding = program.kernel(case.kernel).expect("the case's kernel");
    let buffers = case
        .args
        .iter()
        .zip(&binding.params)
        .map(|(a, ty)| match a {
            corpus::Arg::Buffer { .. } => Some(ty.pointee().expect("a pointer").clone()),
            corpus::Arg::Value { .. } => None,
        })
        .collect();
    let mut prepared = Prepared {
        case,
        constant_globals: program.constant_globals.initial().to_vec(),
        device_globals: program.device_globals.initial().to_vec(),
        program,
        buffers,
        structs: module.structs.clone(),
        module,
    };
    for g in &case.globals {
        if let Some(init) = &g.init {
            prepared
                .write_global(g.name, init)
                .expect("set the global from the host");
        }
    }
    prepared
}

/// The driver of `prepared` (one translation unit), built in a fresh directory: the
/// directory and the binary.
fn build_driver(cxx: &str, prepared: &[Prepared<'_>], label: &str) -> (PathBuf, PathBuf) {
    let dir = tempfile_dir(label);
    let source = dir.join("corpus.cpp");
    std::fs::write(&source, translation_unit(prepared)).expect("write the C++");
    let binary = dir.join("corpus");
    if let Err(e) = compile(cxx, &source, Some(&binary)) {
        panic!(
            "{cxx} rejects the corpus's MSL ({}):\n{e}",
            source.display()
        );
    }
    (dir, binary)
}

/// Runs case `i` of a driver once, with the arguments and globals `p` holds now; `p` keeps the
/// device globals the dispatch leaves.
fn run_case(
    binary: &Path,
    dir: &Path,
    i: usize,
    p: &mut Prepared<'_>,
) -> Result<corpus::Outcome, String> {
    write_input(p, &dir.join(format!("{i}.in")));
    let run = Command::new(binary)
        .arg(dir)
        .arg(i.to_string())
        .output()
        .expect("run the shim");
    if !run.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            run.status.code(),
            String::from_utf8_lossy(&run.stderr)
        ));
    }
    Ok(read_output(p, &dir.join(format!("{i}.out"))))
}

/// Compiles `prepared` into one driver, runs each case and checks its expected results.
fn run_through_the_shim(cxx: &str, prepared: &mut [Prepared<'_>], label: &str) {
    let (dir, binary) = build_driver(cxx, prepared, label);
    let mut failures = Vec::new();
    for (i, p) in prepared.iter_mut().enumerate() {
        let checked = run_case(&binary, &dir, i, p).and_then(|o| corpus::check(p.case, &o));
        if let Err(e) = checked {
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

/// `:constant` globals set from the host between dispatches, as the Metal backend does it: the
/// host keeps the globals' structure (its initializers first), writes a value in C's layout
/// into it, and binds it after the kernel's arguments at each dispatch, so the next dispatch
/// reads the new value with nothing compiled again. Scalars, `half`, `bfloat`, a `float3` and a
/// structure holding one (both laid out again for MSL), read in the kernel, through a device
/// function and through two calls.
#[test]
fn constant_globals_set_from_the_host_between_dispatches_through_the_shim() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    const SOURCE: &str = "
        (defkernel-struct rec (k int) (p float3))
        (defglobal scale 2.0 :constant)
        (defglobal origin (float3 1.0 (- 2.0) 3) :constant)
        (defglobal h (half 1.5) :constant)
        (defglobal b (bfloat16 -2.0) :constant)
        (defglobal r (make-rec 4 (float3 0.5 0.25 0.125)) :constant)
        (defkernel (scaled :device) (float ((x float))) (return (* x scale)))
        (defkernel (twice-scaled :device) (float ((x float))) (return (scaled (scaled x))))
        (defkernel read-globals (void ((out float*) (n int)))
          (let ((i thread-idx-x))
            (if (< i n)
                (let ((o (* i 9)))
                  (set (aref out o) (scaled (float i)))
                  (set (aref out (+ o 1)) (twice-scaled 1.0))
                  (set (aref out (+ o 2)) scale)
                  (set (aref out (+ o 3)) (+ (float3-x origin) (float i)))
                  (set (aref out (+ o 4)) (* (float3-y origin) (float3-z origin)))
                  (set (aref out (+ o 5)) (float h))
                  (set (aref out (+ o 6)) (float b))
                  (set (aref out (+ o 7)) (float (rec-k r)))
                  (set (aref out (+ o 8)) (float3-z (rec-p r)))))))";
    let n = 4usize;
    let floats = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|f| f.to_le_bytes()).collect() };
    // C layout of `rec`: k at 0, p at 4..16.
    let rec = |k: i32, p: [f32; 3]| -> Vec<u8> {
        let mut bytes = k.to_le_bytes().to_vec();
        bytes.extend(floats(&p));
        bytes
    };
    struct Values {
        scale: f32,
        origin: [f32; 3],
        h: f32,
        b: f32,
        k: i32,
        p: [f32; 3],
    }
    let expected = |v: &Values| -> Vec<f32> {
        (0..n)
            .flat_map(|i| {
                [
                    i as f32 * v.scale,
                    v.scale * v.scale,
                    v.scale,
                    v.origin[0] + i as f32,
                    v.origin[1] * v.origin[2],
                    v.h,
                    v.b,
                    v.k as f32,
                    v.p[2],
                ]
            })
            .collect()
    };
    let case = corpus::Case {
        name: "constant_globals_from_the_host",
        source: SOURCE,
        kernel: "read-globals",
        grid: [1, 1, 1],
        block: [n as u32, 1, 1],
        shared_mem: 0,
        args: vec![
            corpus::Arg::Buffer {
                data: vec![0; 4 * 9 * n],
                expect: corpus::Expect::Any,
            },
            corpus::Arg::Value {
                ty: Type::Scalar(chorus_lang::types::ScalarType::Int),
                bytes: (n as i32).to_le_bytes().to_vec(),
            },
        ],
        globals: Vec::new(),
    };
    let program = chorus_lang::compile_str_for(SOURCE, "globals.lisp", &metal())
        .and_then(|m| print_msl(&m, &metal()))
        .expect("prints as MSL");
    assert!(
        !program.source.contains("constant float scale"),
        "no program-scope constants: {}",
        program.source
    );
    assert_eq!(
        program
            .kernel("read-globals")
            .and_then(|k| k.constant_globals),
        Some(2)
    );
    let mut p = prepare(&case, program, "globals.lisp");
    let layout = p.program.constant_globals.clone();
    let read = |p: &Prepared<'_>, name: &str, size: usize| p.read_global(name, size);
    let (dir, binary) = build_driver(&cxx, std::slice::from_ref(&p), "chorus-msl-globals");
    let dispatch = |p: &mut Prepared<'_>, v: &Values, step: &str| {
        let outcome = run_case(&binary, &dir, 0, p).unwrap_or_else(|e| panic!("{step}: {e}"));
        corpus::Expect::F32(expected(v), 0.0)
            .check(&outcome.buffers[0])
            .unwrap_or_else(|e| panic!("{step}: {e}"));
    };

    // Before any write: the initializers, on the host and in the kernel.
    let mut v = Values {
        scale: 2.0,
        origin: [1.0, -2.0, 3.0],
        h: 1.5,
        b: -2.0,
        k: 4,
        p: [0.5, 0.25, 0.125],
    };
    assert_eq!(read(&p, "scale", 4), floats(&[2.0]));
    assert_eq!(read(&p, "origin", 12), floats(&[1.0, -2.0, 3.0]));
    assert_eq!(read(&p, "r", 16), rec(4, [0.5, 0.25, 0.125]));
    dispatch(&mut p, &v, "the initializers");

    // Every global written from the host, then dispatched again.
    v = Values {
        scale: 3.0,
        origin: [4.0, 5.0, 6.0],
        h: 0.25,
        b: 8.0,
        k: -7,
        p: [1.0, 2.0, 3.5],
    };
    layout
        .write(&mut p.constant_globals, "scale", &floats(&[v.scale]))
        .unwrap();
    layout
        .write(&mut p.constant_globals, "origin", &floats(&v.origin))
        .unwrap();
    let h = chorus_lang::host::f16::from_f32(v.h).to_le_bytes();
    layout.write(&mut p.constant_globals, "h", &h).unwrap();
    let b = chorus_lang::host::bf16::from_f32(v.b).to_le_bytes();
    layout.write(&mut p.constant_globals, "b", &b).unwrap();
    layout
        .write(&mut p.constant_globals, "r", &rec(v.k, v.p))
        .unwrap();
    assert_eq!(read(&p, "origin", 12), floats(&v.origin));
    assert_eq!(read(&p, "r", 16), rec(v.k, v.p));
    assert_eq!(read(&p, "h", 2), h);
    dispatch(&mut p, &v, "after the first writes");

    // One global changed again; the others keep what was written.
    v.scale = -0.5;
    layout
        .write(&mut p.constant_globals, "scale", &floats(&[v.scale]))
        .unwrap();
    dispatch(&mut p, &v, "after the second write");
    assert_eq!(read(&p, "scale", 4), floats(&[-0.5]));

    // Wrong sizes and unknown names are errors that name the global.
    let e = layout
        .write(&mut p.constant_globals, "origin", &floats(&[1.0]))
        .unwrap_err();
    assert!(
        e.to_string().contains("`origin`") && e.to_string().contains("12 bytes"),
        "{e}"
    );
    let e = layout
        .read(&p.constant_globals, "nothing", &mut [0; 4])
        .unwrap_err();
    assert!(e.to_string().contains("`nothing`"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `:device` globals kept between dispatches, as the Metal backend keeps them in one buffer per
/// loaded program: the kernel increments them (an atomic from every thread, a plain write from
/// a device function, a structure holding a `float3` in MSL's layout), the host reads what it
/// left, writes new values, and the next dispatch starts from those; a `:constant` global set
/// from the host takes the buffer index before them.
#[test]
fn device_globals_kept_between_dispatches_through_the_shim() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    const SOURCE: &str = "
        (defkernel-struct tally (count int) (where float3))
        (defglobal step 1 :constant)
        (defglobal counter 0)
        (defglobal hits 0 :device)
        (defglobal last (make-tally 0 (float3 0.0 0.0 0.0)))
        (defkernel (bump :device) (void ((by int))) (set counter (+ counter by)))
        (defkernel count-up (void ((out int*)))
          (atomic-add (pointer hits) 1)
          (syncthreads)
          (when (= thread-idx-x 0)
            (bump step)
            (set (tally-count last) hits)
            (set (tally-where last) (+ (tally-where last) (float3 1.0 2.0 3.0)))
            (set (aref out 0) counter)))";
    let threads = 64;
    let case = corpus::Case {
        name: "device_globals_between_dispatches",
        source: SOURCE,
        kernel: "count-up",
        grid: [1, 1, 1],
        block: [threads as u32, 1, 1],
        shared_mem: 0,
        args: vec![corpus::Arg::Buffer {
            data: vec![0; 4],
            expect: corpus::Expect::Any,
        }],
        globals: Vec::new(),
    };
    let program = chorus_lang::compile_str_for(SOURCE, "device.lisp", &metal())
        .and_then(|m| print_msl(&m, &metal()))
        .expect("prints as MSL");
    let binding = program.kernel("count-up").expect("the kernel");
    assert_eq!(
        (binding.constant_globals, binding.device_globals),
        (Some(1), Some(2))
    );
    assert!(
        program
            .source
            .contains("device chorus_device_globals_t& chorus_device_globals [[buffer(2)]]"),
        "{}",
        program.source
    );
    // MSL's layout: counter at 0, hits at 4, `last` (32 bytes, its float3 at 16) at 16.
    assert_eq!(program.device_globals.size(), 48);
    assert_eq!(program.device_globals.field_range("last").unwrap(), 16..48);
    let mut p = prepare(&case, program, "device.lisp");
    let (dir, binary) = build_driver(&cxx, std::slice::from_ref(&p), "chorus-msl-device-globals");
    let int = |i: i32| i.to_le_bytes().to_vec();
    // C layout of `tally`: count at 0, where at 4..16.
    let tally = |count: i32, at: [f32; 3]| -> Vec<u8> {
        let mut bytes = count.to_le_bytes().to_vec();
        bytes.extend(at.iter().flat_map(|f| f.to_le_bytes()));
        bytes
    };
    let dispatch = |p: &mut Prepared<'_>, out: i32, step: &str| {
        let outcome = run_case(&binary, &dir, 0, p).unwrap_or_else(|e| panic!("{step}: {e}"));
        assert_eq!(outcome.buffers[0], int(out), "{step}: out[0]");
    };

    assert_eq!(p.read_global("last", 16), tally(0, [0.0; 3]));
    dispatch(&mut p, 1, "the first dispatch");
    assert_eq!(p.read_global("counter", 4), int(1));
    assert_eq!(p.read_global("hits", 4), int(threads));
    assert_eq!(p.read_global("last", 16), tally(threads, [1.0, 2.0, 3.0]));

    // Written from the host: the next dispatch starts from these.
    p.write_global("counter", &int(100)).unwrap();
    p.write_global("hits", &int(1000)).unwrap();
    p.write_global("last", &tally(5, [0.5, 0.5, 0.5])).unwrap();
    p.write_global("step", &int(10)).unwrap();
    assert_eq!(p.read_global("hits", 4), int(1000));
    dispatch(&mut p, 110, "after the host's writes");
    assert_eq!(p.read_global("hits", 4), int(1000 + threads));
    assert_eq!(
        p.read_global("last", 16),
        tally(1000 + threads, [1.5, 2.5, 3.5])
    );

    // Nothing written: the dispatch starts from what the last one left.
    dispatch(&mut p, 120, "a third dispatch");
    assert_eq!(p.read_global("hits", 4), int(1000 + 2 * threads));
    assert_eq!(
        p.read_global("last", 16),
        tally(1000 + 2 * threads, [2.5, 4.5, 6.5])
    );
    assert_eq!(p.read_global("step", 4), int(10));
    let _ = std::fs::remove_dir_all(&dir);
}

/// cl-cuda's defglobal example (`examples/defglobal.rs`) as the Metal backend runs it: `foo` (a
/// device global) and `bar` (a constant one) set from the host to 1 and 2, then a kernel
/// writes `foo + bar`: 3, what the example prints ("Got 3 from adding two globals.").
#[test]
fn the_defglobal_example_gets_3_through_the_shim() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    let (_, text) = example_programs()
        .into_iter()
        .find(|(name, _)| name == "defglobal")
        .expect("the defglobal example");
    // The corpus's cases hold their text for the whole run.
    let source: &'static str = text.leak();
    let case = corpus::Case {
        name: "defglobal_example",
        source,
        kernel: "add-globals",
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        args: vec![corpus::Arg::Buffer {
            data: vec![0; 4],
            expect: corpus::Expect::Bytes(3i32.to_le_bytes().to_vec()),
        }],
        globals: vec![
            corpus::GlobalValue {
                name: "foo",
                init: Some(1i32.to_le_bytes().to_vec()),
                expect: corpus::Expect::Bytes(1i32.to_le_bytes().to_vec()),
            },
            corpus::GlobalValue {
                name: "bar",
                init: Some(2i32.to_le_bytes().to_vec()),
                expect: corpus::Expect::Bytes(2i32.to_le_bytes().to_vec()),
            },
        ],
    };
    let program = chorus_lang::compile_str_for(source, "defglobal.lisp", &metal())
        .and_then(|m| print_msl(&m, &metal()))
        .expect("prints as MSL");
    assert!(program.device_globals.contains("foo") && program.constant_globals.contains("bar"));
    let prepared = prepare(&case, program, "defglobal.lisp");
    run_through_the_shim(&cxx, &mut [prepared], "chorus-msl-defglobal");
}

/// MSL lays out `float3` in 16 bytes and a structure holding one with its fields moved: memory
/// of such elements (the facade stores it with MSL's stride on a Metal device) and values of
/// them (the Metal backend lays them out again) give the same results as on the host.
#[test]
fn float3_and_structures_holding_one_keep_their_values_through_the_shim() {
    let Some(cxx) = compiler() else {
        return skip_or_fail("no C++ compiler (set CXX, or install clang++ or g++)");
    };
    const SOURCE: &str = "
        (defkernel-struct body (mass float) (pos float3) (tag int))
        (defkernel move-bodies (void ((bodies body*) (out float3*) (shift float3) (b0 body)))
          (let* ((i thread-idx-x)
                 (b (aref bodies i)))
            (set (aref out i) (+ (+ (* (body-pos b) (body-mass b)) shift) (body-pos b0)))
            (set (body-pos (aref bodies i)) (- (body-pos b) shift))
            (set (body-tag (aref bodies i)) (+ (+ (body-tag b) (body-tag b0)) i))))";
    let n = 8usize;
    // C layout of `body`: mass at 0, pos at 4..16, tag at 16; 20 bytes.
    let body = |mass: f32, pos: [f32; 3], tag: i32| -> Vec<u8> {
        let mut b: Vec<u8> = [mass, pos[0], pos[1], pos[2]]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        b.extend(tag.to_le_bytes());
        b
    };
    let pos = |i: usize| [i as f32, 2.0 * i as f32, 3.0 * i as f32];
    let shift = [0.5f32, 0.25, -1.0];
    let b0 = [100.0f32, 200.0, 300.0];
    let bodies: Vec<u8> = (0..n)
        .flat_map(|i| body(i as f32 + 1.0, pos(i), 10 * i as i32))
        .collect();
    let moved: Vec<u8> = (0..n)
        .flat_map(|i| {
            let p = pos(i);
            body(
                i as f32 + 1.0,
                [p[0] - shift[0], p[1] - shift[1], p[2] - shift[2]],
                10 * i as i32 + 7 + i as i32,
            )
        })
        .collect();
    let out: Vec<f32> = (0..n)
        .flat_map(|i| {
            let (p, m) = (pos(i), i as f32 + 1.0);
            [0, 1, 2].map(|k| p[k] * m + shift[k] + b0[k])
        })
        .collect();
    let floats = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|f| f.to_le_bytes()).collect() };
    let case = corpus::Case {
        name: "float3_layouts",
        source: SOURCE,
        kernel: "move-bodies",
        grid: [1, 1, 1],
        block: [n as u32, 1, 1],
        shared_mem: 0,
        args: vec![
            corpus::Arg::Buffer {
                data: bodies,
                expect: corpus::Expect::Bytes(moved),
            },
            corpus::Arg::Buffer {
                data: vec![0; 12 * n],
                expect: corpus::Expect::F32(out, 0.0),
            },
            corpus::Arg::Value {
                ty: Type::Vector(VectorType::Float3),
                bytes: floats(&shift),
            },
            corpus::Arg::Value {
                ty: Type::Struct("body".into()),
                bytes: body(0.0, b0, 7),
            },
        ],
        globals: Vec::new(),
    };
    let program = chorus_lang::compile_str_for(SOURCE, "float3.lisp", &metal())
        .and_then(|m| print_msl(&m, &metal()))
        .expect("prints as MSL");
    let prepared = prepare(&case, program, "float3.lisp");
    assert_eq!(
        LayoutRules::Msl.layout(&Type::Struct("body".into()), &prepared.structs),
        Some((48, 16)),
        "MSL's body: pos moves to 16, tag to 32"
    );
    run_through_the_shim(&cxx, &mut [prepared], "chorus-msl-float3");
}

#[path = "../../chorus-lang/tests/support/example_kernels.rs"]
mod example_kernels;
use example_kernels::example_programs;

/// Examples Metal refuses, with a word of the reason.
const REFUSED_EXAMPLES: &[(&str, &str)] = &[
    ("texture-rotate", "texture and surface objects"),
    ("cusolver-eigen", "64-bit floating point"),
    // The tensor-core examples: their cp.async, wgmma and TMA.
    (
        "hgemm",
        "`cp-async` needs asynchronous copies to shared memory",
    ),
    (
        "attention",
        "`cp-async` needs asynchronous copies to shared memory",
    ),
    (
        "hgemm-hopper",
        "`tensor-map` needs tensor memory access (TMA)",
    ),
    ("hgemm-tma", "`tensor-map` needs tensor memory access (TMA)"),
];

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
