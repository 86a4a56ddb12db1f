//! nvcc through `nvcc_compile`, with the toolkit found on this machine. Skips (and says so) when
//! no nvcc is found, except under `CI`, where the compiler tier must run.

use chorus_cuda::testing::nvcc_or_skip;
use chorus_cuda::{Error, ImageKind, nvcc_compile, nvcc_version};

const VEC_ADD: &str = r#"extern "C" __global__ void vec_add_kernel(float* a, float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
  }
}
"#;

fn arch() -> Vec<String> {
    vec!["-arch=sm_90".to_owned()]
}

#[test]
fn compiles_to_ptx_and_cubin() {
    let Some(nvcc) = nvcc_or_skip("compiles_to_ptx_and_cubin") else {
        return;
    };
    let (major, _) = nvcc_version(&nvcc).unwrap();
    assert!(major >= 11);
    let ptx = nvcc_compile(VEC_ADD, "vec-add", ImageKind::Ptx, &arch()).unwrap();
    let text = String::from_utf8(ptx).unwrap();
    assert!(text.contains(".target sm_90"), "{text}");
    assert!(text.contains(".entry vec_add_kernel"), "{text}");
    let cubin = nvcc_compile(VEC_ADD, "vec-add", ImageKind::Cubin, &arch()).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF file");
}

#[test]
fn errors_carry_the_log_and_the_source_lines() {
    if nvcc_or_skip("errors_carry_the_log_and_the_source_lines").is_none() {
        return;
    }
    let source = "extern \"C\" __global__ void k(int* a) {\n  a[0] = no_such_variable;\n}\n";
    let e = nvcc_compile(source, "broken", ImageKind::Ptx, &arch()).unwrap_err();
    let Error::Compile { log, excerpt, .. } = &e else {
        panic!("{e}")
    };
    assert!(log.contains("no_such_variable"), "{log}");
    assert!(
        excerpt.contains("2 |   a[0] = no_such_variable;"),
        "{excerpt}"
    );
}

#[test]
fn temporary_directories_are_removed() {
    if nvcc_or_skip("temporary_directories_are_removed").is_none() {
        return;
    }
    let parent = std::env::temp_dir().join(format!("chorus-nvcc-test-{}", std::process::id()));
    std::fs::create_dir_all(&parent).unwrap();
    let mut s = chorus_cuda::settings();
    s.tmp_dir = Some(parent.clone());
    chorus_cuda::nvcc_compile_with(&s, VEC_ADD, "v", ImageKind::Ptx, &arch()).unwrap();
    let _ = chorus_cuda::nvcc_compile_with(&s, "syntax error", "v", ImageKind::Ptx, &arch());
    assert_eq!(
        std::fs::read_dir(&parent).unwrap().count(),
        0,
        "nvcc's files were left behind"
    );
    std::fs::remove_dir(&parent).unwrap();
}

/// `testing::build_c_program` (the benchmarks' C baselines): a program that runs, in a folder
/// removed with it; a source nvcc rejects gives nvcc's log.
#[test]
fn builds_c_programs_in_a_private_folder() {
    if nvcc_or_skip("builds_c_programs_in_a_private_folder").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("hello.cu");
    std::fs::write(
        &source,
        "#include <cstdio>\nint main(int argc, char**) { printf(\"hello %d\\n\", argc); }\n",
    )
    .unwrap();
    let program = chorus_cuda::testing::build_c_program(&source, &[]).unwrap();
    let out = std::process::Command::new(program.path())
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello 2\n");
    let folder = program.path().parent().unwrap().to_owned();
    drop(program);
    assert!(!folder.exists(), "{} is left behind", folder.display());

    std::fs::write(&source, "int main() { return undeclared; }\n").unwrap();
    match chorus_cuda::testing::build_c_program(&source, &[]) {
        Err(Error::Compile { log, .. }) => assert!(log.contains("undeclared"), "{log}"),
        other => panic!("expected a compile error, got {other:?}"),
    }
}
