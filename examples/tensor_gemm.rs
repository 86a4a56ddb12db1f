//! The BF16 tensor-core GEMM (`kernels/hgemm.lisp`, written with the tensor-core macro library
//! `chorus::lang::library::TENSOR_CORE`), shared by the `hgemm` example and its test: the
//! program, its block shapes (each with its launch and shape rule) and the host reference.

use chorus::lang::library::Library;
use chorus::{Arg, Launch, MemoryBlock, Program, bf16};

/// The kernel file.
pub const HGEMM: &str = include_str!("kernels/hgemm.lisp");

/// The hgemm kernel with the tensor-core macros defined first, checked now (errors name the
/// lines of `kernels/hgemm.lisp`).
pub fn program() -> chorus::Result<Program> {
    program_with(&[])
}

/// [`program`] with more block shapes defined after the file's (the `hgemm` example's
/// `--define`, to time a shape without rebuilding): one `(define-hgemm …)` form each.
pub fn program_with(extra: &[HgemmKernel]) -> chorus::Result<Program> {
    program_from(HGEMM, extra)
}

/// [`program_with`] over another version of `kernels/hgemm.lisp` (the `hgemm` example's
/// `--source`: a changed kernel file is timed without rebuilding the example).
pub fn program_from(hgemm_lisp: &str, extra: &[HgemmKernel]) -> chorus::Result<Program> {
    let mut source = hgemm_lisp.to_owned();
    for kernel in extra {
        source.push_str(&kernel.definition());
    }
    Program::with_libraries(&[Library::TensorCore], &source, "hgemm.lisp")
}

/// One block shape of `kernels/hgemm.lisp` (`define-hgemm`): warps-m × warps-n warps, each
/// computing a 64×`warp_n` tile of C, fed by a cp.async pipeline of `stages` k-tiles of
/// `tile_k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HgemmKernel {
    /// The kernel's name in `kernels/hgemm.lisp`.
    pub name: &'static str,
    /// Warps along M and along N.
    pub warps: (usize, usize),
    /// Pipeline stages (k-tiles in flight).
    pub stages: usize,
    /// The k-tile: 32 or 64.
    pub tile_k: usize,
    /// The warp tile's columns: 64 or 32.
    pub warp_n: usize,
    /// `define-hgemm`'s other options as written (`:interleave t`, `:prefetch t`,
    /// `:min-blocks 2`, `:probe …`), for [`HgemmKernel::definition`]; they change the kernel's
    /// code, not the launch.
    pub options: &'static str,
}

impl HgemmKernel {
    /// `hgemm`: 128×128 block tiles, four warps, three stages (48 KiB of shared memory).
    pub const SQUARE: HgemmKernel = HgemmKernel {
        name: "hgemm",
        warps: (2, 2),
        stages: 3,
        tile_k: 32,
        warp_n: 64,
        options: "",
    };
    /// `hgemm-wide`: 128×256 block tiles, eight warps, four stages (96 KiB).
    pub const WIDE: HgemmKernel = HgemmKernel {
        name: "hgemm-wide",
        warps: (2, 4),
        stages: 4,
        tile_k: 32,
        warp_n: 64,
        options: "",
    };
    /// `hgemm-tall`: 256×128 block tiles, eight warps, four stages (96 KiB).
    pub const TALL: HgemmKernel = HgemmKernel {
        name: "hgemm-tall",
        warps: (4, 2),
        stages: 4,
        tile_k: 32,
        warp_n: 64,
        options: "",
    };
    /// `hgemm-k64`: 128×128 block tiles, four warps, three stages of k-tiles of 64 (96 KiB).
    pub const DEEP_K: HgemmKernel = HgemmKernel {
        name: "hgemm-k64",
        tile_k: 64,
        ..Self::SQUARE
    };
    /// `hgemm-interleaved`: `hgemm` with each tile's copies issued between its last k16 step's
    /// ldmatrix and mma (`tc-pipeline`'s :issue-in-compute) instead of before its first ldmatrix.
    pub const INTERLEAVED: HgemmKernel = HgemmKernel {
        name: "hgemm-interleaved",
        options: ":interleave t",
        ..Self::SQUARE
    };
    /// `hgemm-prefetch`: `hgemm` with the warp's fragments double-buffered in registers
    /// (`tc-pipeline-fragments`): each k16 step loads the next step's fragments before its own
    /// mma, and a tile's last step waits and synchronises before its mma, so that every barrier
    /// is followed by a step of mma whose operands are already loaded.
    pub const PREFETCH: HgemmKernel = HgemmKernel {
        name: "hgemm-prefetch",
        options: ":prefetch t",
        ..Self::SQUARE
    };
    /// `hgemm-wide-prefetch`: `hgemm-wide`'s 128×256 blocks with `hgemm-prefetch`'s loop (one
    /// block of eight warps a multiprocessor, whose barriers then stall fewer mma).
    pub const WIDE_PREFETCH: HgemmKernel = HgemmKernel {
        name: "hgemm-wide-prefetch",
        options: ":prefetch t",
        ..Self::WIDE
    };
    /// Every block shape the example times.
    pub const ALL: [HgemmKernel; 7] = [
        Self::SQUARE,
        Self::INTERLEAVED,
        Self::PREFETCH,
        Self::WIDE_PREFETCH,
        Self::DEEP_K,
        Self::WIDE,
        Self::TALL,
    ];

    /// A block shape from `define-hgemm`'s arguments as written in Lisp, `NAME WARPS-M WARPS-N
    /// STAGES [:tile-k 32|64] [:warp-n 64|32] [:min-blocks N] [:interleave t] [:prefetch t]
    /// [:probe no-copies|mma-only|no-mma|l1-copies]` (the `hgemm` example's `--define`). The name is leaked: a command line defines a handful
    /// of shapes for the program's life.
    pub fn parse_definition(text: &str) -> Result<HgemmKernel, String> {
        let usage = || {
            format!(
                "expected `NAME WARPS-M WARPS-N STAGES [:tile-k 32|64] [:warp-n 64|32] \
                 [:min-blocks N] [:interleave t] [:prefetch t] \
                 [:probe no-copies|mma-only|no-mma|l1-copies]`, got `{text}`"
            )
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let [name, warps_m, warps_n, stages, options @ ..] = &words[..] else {
            return Err(usage());
        };
        let number = |word: &str| word.parse::<usize>().map_err(|_| usage());
        let (warps_m, warps_n, stages) = (number(warps_m)?, number(warps_n)?, number(stages)?);
        if !(1..=4).contains(&warps_m) || !(1..=8).contains(&warps_n) || !(2..=8).contains(&stages)
        {
            return Err(format!(
                "{text}: warps 1 to 4 along M, 1 to 8 along N, and 2 to 8 stages"
            ));
        }
        let mut tile_k = 32;
        let mut warp_n = 64;
        let mut kept = Vec::new();
        for pair in options.chunks(2) {
            match pair {
                [":tile-k", k @ ("32" | "64")] => tile_k = number(k)?,
                [":warp-n", w @ ("32" | "64")] => warp_n = number(w)?,
                [":min-blocks", b @ ("1" | "2" | "3" | "4")] => {
                    kept.push(format!(":min-blocks {b}"))
                }
                [key @ (":interleave" | ":prefetch"), "t"] => kept.push(format!("{key} t")),
                [
                    ":probe",
                    probe @ ("no-copies" | "mma-only" | "no-mma" | "l1-copies"),
                ] => kept.push(format!(":probe {probe}")),
                _ => return Err(usage()),
            }
        }
        Ok(HgemmKernel {
            name: Box::leak(name.to_string().into_boxed_str()),
            warps: (warps_m, warps_n),
            stages,
            tile_k,
            warp_n,
            options: Box::leak(kept.join(" ").into_boxed_str()),
        })
    }

    /// Whether the kernel is a probe (`:probe`): it leaves work out to time the rest, and its
    /// result is not the product.
    pub fn is_probe(self) -> bool {
        self.options.contains(":probe")
    }

    /// The `define-hgemm` form that defines this kernel.
    pub fn definition(self) -> String {
        format!(
            "\n(define-hgemm {} {} {} {} :tile-k {} :warp-n {} {})\n",
            self.name,
            self.warps.0,
            self.warps.1,
            self.stages,
            self.tile_k,
            self.warp_n,
            self.options
        )
    }

    /// The block tile of C: (rows, columns).
    pub fn tile(self) -> (usize, usize) {
        (64 * self.warps.0, self.warp_n * self.warps.1)
    }

    /// Threads per block.
    pub fn threads(self) -> usize {
        32 * self.warps.0 * self.warps.1
    }

    /// Dynamic shared memory per block: `stages` k-tiles of A (rows × tile_k) and B (tile_k ×
    /// columns) in BF16.
    pub fn shared_bytes(self) -> u32 {
        let (rows, columns) = self.tile();
        let bytes = self.stages * (rows + columns) * self.tile_k * std::mem::size_of::<bf16>();
        bytes as u32 // at most a few hundred KiB: the shapes above
    }

    /// `None` when the kernel can multiply an m×k by a k×n matrix (m and n multiples of the
    /// block tile, k of its k-tile, all positive and m·n, m·k, k·n below 2^31: the kernel
    /// indexes in `int`), else why not.
    pub fn unsupported_shape(self, m: usize, n: usize, k: usize) -> Option<String> {
        let fits = |x: usize, y: usize| x.checked_mul(y).is_some_and(|p| p < 1 << 31);
        let (rows, columns) = self.tile();
        let tile_k = self.tile_k;
        let tiles = m.is_multiple_of(rows) && n.is_multiple_of(columns) && k.is_multiple_of(tile_k);
        if m == 0 || n == 0 || k == 0 || !tiles {
            Some(format!(
                "{} needs M a multiple of {rows}, N of {columns} and K of {tile_k}, got \
                 {m}×{n}×{k}",
                self.name
            ))
        } else if !(fits(m, n) && fits(m, k) && fits(k, n)) {
            Some(format!(
                "{} indexes in int: {m}×{n}×{k} is too large",
                self.name
            ))
        } else {
            None
        }
    }

    /// Launches `C = A·B` (row-major, A m×k, B k×n, C m×n) on the current device's default
    /// stream: a grid of (n / columns, m / rows) blocks.
    pub fn launch(
        self,
        program: &Program,
        a: &MemoryBlock<bf16>,
        b: &MemoryBlock<bf16>,
        c: &MemoryBlock<bf16>,
        (m, n, k): (usize, usize, usize),
    ) -> chorus::Result<()> {
        let (rows, columns) = self.tile();
        program.launch(
            self.name,
            &[
                a.as_arg(),
                b.as_arg(),
                c.as_arg(),
                Arg::value(m as i32),
                Arg::value(n as i32),
                Arg::value(k as i32),
            ],
            Launch::grid((n / columns, m / rows))
                .block(self.threads())
                .shared_mem(self.shared_bytes()),
        )
    }
}

/// Entry (i, j) of A·B in `f64` (exact: every product of two bf16 values is), and the sum of
/// the products' magnitudes (the scale of its rounding error).
pub fn reference_entry(
    a: &[bf16],
    b: &[bf16],
    (n, k): (usize, usize),
    i: usize,
    j: usize,
) -> (f64, f64) {
    let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
    for p in 0..k {
        let x = a[i * k + p].to_f64() * b[p * n + j].to_f64();
        sum += x;
        magnitude += x.abs();
    }
    (sum, magnitude)
}

/// True when `got` is `want` rounded to bf16 after an f32 accumulation: within half a bf16
/// ulp of |want| (2^-9 relative) plus f32 accumulation error on the products' magnitudes.
pub fn close(got: bf16, want: f64, magnitude: f64) -> bool {
    (got.to_f64() - want).abs() <= want.abs() / 256.0 + 1e-5 * magnitude + 1e-30
}
