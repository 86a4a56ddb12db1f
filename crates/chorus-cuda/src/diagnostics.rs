//! What the compilers' failures say: the file name a compilation unit is compiled under, and
//! the source lines a log points at.

use crate::error::Error;

/// The file name the compilers give the CUDA C of compilation unit `name` (`vec-add` →
/// `vec_add.cu`): what their logs call it, and so what [`source_excerpt`] looks for.
pub(crate) fn source_file_name(name: &str) -> String {
    // A file name, not a C name: letters and digits kept (lower case), all else `_`.
    let mut stem: String = name
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect();
    if stem.is_empty() {
        stem.push('_');
    }
    // Within common file-name limits, and on a character boundary.
    let end = stem
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|end| *end <= 64)
        .last()
        .unwrap_or(0);
    format!("{}.cu", &stem[..end])
}

/// An [`Error::Compile`] whose excerpt shows the lines of `source` (compiled as `file`) that
/// the log points at.
pub(crate) fn compile_error(
    compiler: &str,
    name: &str,
    file: &str,
    log: &str,
    source: &str,
) -> Error {
    Error::Compile {
        compiler: compiler.to_owned(),
        name: name.to_owned(),
        log: log.trim_end().to_owned(),
        excerpt: source_excerpt(log, file, source),
    }
}

/// The lines of `source` a compiler log refers to (`kernel.cu(12): error: …`, the form nvcc and
/// NVRTC both use), each once, in order of first mention, as `\n  12 | text`.
///
/// Only diagnostics that point at `file` (the name `source` was compiled under, bare or as the
/// last component of a path) are quoted: a line number in a header (`curand_kernel.h(82): …`)
/// is not a line of `source`. Empty when the log names no line of it.
pub fn source_excerpt(log: &str, file: &str, source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut seen = Vec::new();
    for line in log.lines() {
        let Some(close) = line.find("): ") else {
            continue;
        };
        let Some(open) = line[..close].rfind('(') else {
            continue;
        };
        let path = line[..open].trim();
        let names_file = path == file
            || path
                .strip_suffix(file)
                .is_some_and(|dir| dir.ends_with('/') || dir.ends_with('\\'));
        if !names_file {
            continue;
        }
        let Ok(number) = line[open + 1..close].parse::<usize>() else {
            continue;
        };
        if (1..=lines.len()).contains(&number) && !seen.contains(&number) {
            seen.push(number);
        }
    }
    if seen.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nsource lines:");
    for n in seen {
        out.push_str(&format!("\n{n:>5} | {}", lines[n - 1]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_name_the_lines_the_log_points_at() {
        let source = "extern \"C\" __global__ void k(int* a) {\n  a[0] = undefined_name;\n}\n";
        let log = "k.cu(2): error: identifier \"undefined_name\" is undefined\n\
                   k.cu(2): note: again\n1 error detected in the compilation of \"k.cu\".\n";
        let excerpt = source_excerpt(log, "k.cu", source);
        assert_eq!(excerpt, "\nsource lines:\n    2 |   a[0] = undefined_name;");
        assert_eq!(source_excerpt("k.cu(99): error: x", "k.cu", source), "");
        assert_eq!(source_excerpt("no line numbers", "k.cu", source), "");
        // nvcc names the file by its path.
        assert_eq!(
            source_excerpt("/tmp/chorus-1/k.cu(1): error: x", "k.cu", source),
            "\nsource lines:\n    1 | extern \"C\" __global__ void k(int* a) {"
        );
    }

    #[test]
    fn excerpts_ignore_lines_of_headers_and_other_files() {
        let source = "#include <curand_kernel.h>\nint a;\nint b;\n";
        let log = "/usr/local/cuda/include/curand_kernel.h(2): error: something\n\
                   curand_kernel.h(3): warning: other\n\
                   ak.cu(1): error: a file whose name ends like ours\n\
                   k.cu(3): error: ours\n";
        assert_eq!(
            source_excerpt(log, "k.cu", source),
            "\nsource lines:\n    3 | int b;"
        );
        let only_headers = "/usr/local/cuda/include/curand_kernel.h(82): error: x\n";
        assert_eq!(source_excerpt(only_headers, "k.cu", source), "");
    }

    #[test]
    fn source_file_names_are_identifiers_of_bounded_length() {
        assert_eq!(source_file_name("vec-add"), "vec_add.cu");
        assert_eq!(source_file_name("../../etc/passwd"), "______etc_passwd.cu");
        assert_eq!(source_file_name(&"x".repeat(300)).len(), 64 + 3);
    }

    #[test]
    fn compile_errors_carry_log_and_excerpt() {
        let e = compile_error("nvrtc", "k", "k.cu", "k.cu(1): error: bad\n", "int x = ;\n");
        let text = e.to_string();
        assert!(text.contains("nvrtc failed to compile k"), "{text}");
        assert!(text.contains("k.cu(1): error: bad"), "{text}");
        assert!(text.contains("    1 | int x = ;"), "{text}");
    }
}
