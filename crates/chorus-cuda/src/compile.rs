//! Compiling generated CUDA C to a module image: shared vocabulary of the NVRTC and nvcc paths.

use crate::error::Error;

/// The kind of module image a compiler produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX text, JIT-compiled by the driver at load time (needs a driver at least as new as the
    /// toolkit's PTX ISA).
    Ptx,
    /// A cubin for one architecture, loaded as it is.
    Cubin,
}

impl ImageKind {
    /// The file extension (`ptx`, `cubin`).
    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Ptx => "ptx",
            ImageKind::Cubin => "cubin",
        }
    }
}

/// An [`Error::Compile`] whose excerpt shows the source lines the log points at.
pub(crate) fn compile_error(compiler: &str, name: &str, log: &str, source: &str) -> Error {
    Error::Compile {
        compiler: compiler.to_owned(),
        name: name.to_owned(),
        log: log.trim_end().to_owned(),
        excerpt: source_excerpt(log, source),
    }
}

/// The source lines a compiler log refers to (`kernel.cu(12): error: …`, the form nvcc and
/// NVRTC both use), each once, in order of first mention, as `\n  12 | text`. Empty when the log
/// names no line of `source`.
pub fn source_excerpt(log: &str, source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut seen = Vec::new();
    for line in log.lines() {
        let Some(open) = line.find('(') else { continue };
        let Some(close) = line[open..].find("): ").map(|c| open + c) else {
            continue;
        };
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
        let excerpt = source_excerpt(log, source);
        assert_eq!(excerpt, "\nsource lines:\n    2 |   a[0] = undefined_name;");
        assert_eq!(source_excerpt("k.cu(99): error: x", source), "");
        assert_eq!(source_excerpt("no line numbers", source), "");
    }

    #[test]
    fn compile_errors_carry_log_and_excerpt() {
        let e = compile_error("nvrtc", "k", "k.cu(1): error: bad\n", "int x = ;\n");
        let text = e.to_string();
        assert!(text.contains("nvrtc failed to compile k"), "{text}");
        assert!(text.contains("k.cu(1): error: bad"), "{text}");
        assert!(text.contains("    1 | int x = ;"), "{text}");
    }
}
