//! cuBLASLt: `D = alpha·op(A)·op(B) + beta·C` with layouts, epilogues (bias, ReLU, GELU,
//! bias + GELU), FP8 inputs with scale factors (compute capability 8.9+, so the H200's 9.0), the
//! heuristic's choice of algorithm, and a workspace.
//!
//! Matrices are column-major (see [`crate::cublas`] for row-major data: swap the operands). `C`
//! is `D` itself (read with `beta`, then overwritten). The heuristic's answer is cached per
//! problem (shapes, types, transposes, epilogue), so repeated calls of one shape plan once.
//!
//! FP8 follows cuBLASLt's rules: `A` transposed and `B` not (the "TN" layout), `A` and `B` not
//! both E5M2, `D` in f32, f16 or bf16; the scales are device `f32`s multiplying `A` and `B`.

#![allow(clippy::too_many_arguments)] // the GEMM calling convention

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::Library;
use crate::types::{Transpose, check_len, check_matrix};
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, DeviceMemory, DeviceSlice, Stream};
use chorus_minifloat::{Fp8E4M3, Fp8E5M2};
use cudarc::cublaslt::sys::{self, cublasStatus_t};
use half::{bf16, f16};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_void};

/// The cuBLASLt library, probed on first use.
pub static LIBRARY: Library = Library::new("cuBLASLt", "cublasLt", &[], SYMBOLS, || {
    // SAFETY: only asks the system loader whether cudarc's names resolve.
    unsafe { sys::is_culib_present() }
});

/// True when cuBLASLt can be used.
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

const SYMBOLS: &[&str] = &[
    "cublasLtCreate",
    "cublasLtDestroy",
    "cublasLtMatmulDescCreate",
    "cublasLtMatmulDescDestroy",
    "cublasLtMatmulDescSetAttribute",
    "cublasLtMatrixLayoutCreate",
    "cublasLtMatrixLayoutDestroy",
    "cublasLtMatmulPreferenceCreate",
    "cublasLtMatmulPreferenceDestroy",
    "cublasLtMatmulPreferenceSetAttribute",
    "cublasLtMatmulAlgoGetHeuristic",
    "cublasLtMatmul",
    "cublasLtGetStatusName",
    "cublasLtGetStatusString",
];

/// A cuBLASLt status as an error naming `call`.
pub fn check(call: &'static str, status: cublasStatus_t) -> Result<()> {
    if status == cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: cuBLASLt returns static NUL-terminated strings (or null).
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let (name, message) = if LIBRARY.is_available() {
        // SAFETY: loaded with both symbols (probed).
        unsafe {
            (
                text(sys::cublasLtGetStatusName(status)),
                text(sys::cublasLtGetStatusString(status)),
            )
        }
    } else {
        (None, None)
    };
    Err(Error::Status {
        library: "cuBLASLt",
        call,
        code: status as i64,
        name: name.unwrap_or_else(|| format!("{status:?}")),
        message: message.unwrap_or_else(|| "unknown status".into()),
    })
}

macro_rules! lt {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (ensured before the handle was made); each call site
        // passes live descriptors and device extents it checked.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

mod sealed {
    pub trait Sealed {}
}

/// The element types cuBLASLt multiplies here: `f32`, `f16`, `bf16`, [`Fp8E4M3`], [`Fp8E5M2`].
pub trait LtElement: bytemuck::Pod + sealed::Sealed {
    /// cuBLASLt's data type.
    #[doc(hidden)]
    const DATA_TYPE: sys::cudaDataType;
    /// True for the 8-bit floats.
    const IS_FP8: bool = false;
}

macro_rules! lt_element {
    ($t:ty, $dt:ident, $fp8:expr) => {
        impl sealed::Sealed for $t {}
        impl LtElement for $t {
            const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::$dt;
            const IS_FP8: bool = $fp8;
        }
    };
}
lt_element!(f32, CUDA_R_32F, false);
lt_element!(f16, CUDA_R_16F, false);
lt_element!(bf16, CUDA_R_16BF, false);
lt_element!(Fp8E4M3, CUDA_R_8F_E4M3, true);
lt_element!(Fp8E5M2, CUDA_R_8F_E5M2, true);

/// What is applied to `alpha·op(A)·op(B) + beta·C` before it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Nothing.
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU (tanh approximation).
    Gelu,
    /// `x + bias[row]`.
    Bias,
    /// `max(x + bias[row], 0)`.
    ReluBias,
    /// `gelu(x + bias[row])`.
    GeluBias,
}

impl Epilogue {
    fn raw(self) -> sys::cublasLtEpilogue_t {
        use sys::cublasLtEpilogue_t::*;
        match self {
            Epilogue::None => CUBLASLT_EPILOGUE_DEFAULT,
            Epilogue::Relu => CUBLASLT_EPILOGUE_RELU,
            Epilogue::Gelu => CUBLASLT_EPILOGUE_GELU,
            Epilogue::Bias => CUBLASLT_EPILOGUE_BIAS,
            Epilogue::ReluBias => CUBLASLT_EPILOGUE_RELU_BIAS,
            Epilogue::GeluBias => CUBLASLT_EPILOGUE_GELU_BIAS,
        }
    }

    /// True when the epilogue reads a bias vector.
    pub fn needs_bias(self) -> bool {
        matches!(
            self,
            Epilogue::Bias | Epilogue::ReluBias | Epilogue::GeluBias
        )
    }
}

/// A matmul's shape: `op(A)` is `m × k`, `op(B)` `k × n`, `D` `m × n`, column-major with
/// leading dimensions `lda`, `ldb`, `ldd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Matmul {
    /// `op(A)`.
    pub transa: Transpose,
    /// `op(B)`.
    pub transb: Transpose,
    /// Rows of `D`.
    pub m: usize,
    /// Columns of `D`.
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
    /// Leading dimension of the stored `A`.
    pub lda: usize,
    /// Leading dimension of the stored `B`.
    pub ldb: usize,
    /// Leading dimension of `D` (and `C`).
    pub ldd: usize,
    /// The epilogue.
    pub epilogue: Epilogue,
}

impl Matmul {
    /// `D = op(A)·op(B)` with packed operands (`lda`, `ldb`, `ldd` the stored row counts) and no
    /// epilogue.
    pub fn new(transa: Transpose, transb: Transpose, m: usize, n: usize, k: usize) -> Matmul {
        let lda = if transa == Transpose::No { m } else { k };
        let ldb = if transb == Transpose::No { k } else { n };
        Matmul {
            transa,
            transb,
            m,
            n,
            k,
            lda,
            ldb,
            ldd: m,
            epilogue: Epilogue::None,
        }
    }

    /// With `epilogue`.
    pub fn epilogue(mut self, epilogue: Epilogue) -> Matmul {
        self.epilogue = epilogue;
        self
    }
}

/// Device `f32` scale factors of FP8 operands: `A·scale_a`, `B·scale_b`.
#[derive(Clone, Copy, Debug)]
pub struct Fp8Scales<'a> {
    /// One f32 multiplying `A`.
    pub a: DeviceSlice<'a, f32>,
    /// One f32 multiplying `B`.
    pub b: DeviceSlice<'a, f32>,
}

/// cuBLAS's `cublasOperation_t` value (`CUBLAS_OP_N`, `_T`, `_C`), an `int32` attribute.
fn op(t: Transpose) -> i32 {
    match t {
        Transpose::No => 0,
        Transpose::Yes => 1,
        Transpose::Conjugate => 2,
    }
}

/// The cache key of a prepared problem.
type Key = (Matmul, u32, u32, u32);

/// The configuration of the algorithm cuBLASLt's heuristic chose for a problem
/// (`cublasLtMatmulAlgoConfigGetAttribute`): to report what ran, or to compare two programs
/// that make the same call (`libs_bench` prints its own and its C baseline's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AlgorithmConfig {
    /// `CUBLASLT_ALGO_CONFIG_ID`: the algorithm.
    pub id: i32,
    /// `CUBLASLT_ALGO_CONFIG_TILE_ID`: the tile shape (`cublasLtMatmulTile_t`).
    pub tile: u32,
    /// `CUBLASLT_ALGO_CONFIG_STAGES_ID`: the pipeline stages (`cublasLtMatmulStages_t`).
    pub stages: u32,
    /// `CUBLASLT_ALGO_CONFIG_SPLITK_NUM`: the split of K (1: none).
    pub split_k: i32,
    /// `CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING`: the block rasterisation.
    pub cta_swizzling: u32,
    /// `CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID`: the cluster shape (`cublasLtClusterShape_t`).
    pub cluster_shape: u16,
}

impl std::fmt::Display for AlgorithmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "algorithm {} (tile {}, stages {}, split-k {}, swizzling {}, cluster shape {})",
            self.id, self.tile, self.stages, self.split_k, self.cta_swizzling, self.cluster_shape
        )
    }
}

impl AlgorithmConfig {
    /// The configuration of `algo`.
    fn of(algo: &sys::cublasLtMatmulAlgo_t) -> Result<AlgorithmConfig> {
        use sys::cublasLtMatmulAlgoConfigAttributes_t::*;
        fn get<T: bytemuck::Pod>(
            algo: &sys::cublasLtMatmulAlgo_t,
            attr: sys::cublasLtMatmulAlgoConfigAttributes_t,
        ) -> Result<T> {
            let mut value = T::zeroed();
            let mut written = 0usize;
            lt!(cublasLtMatmulAlgoConfigGetAttribute(
                algo,
                attr,
                (&mut value as *mut T).cast(),
                size_of::<T>(),
                &mut written
            ))?;
            Ok(value)
        }
        Ok(AlgorithmConfig {
            id: get(algo, CUBLASLT_ALGO_CONFIG_ID)?,
            tile: get(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)?,
            stages: get(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)?,
            split_k: get(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)?,
            cta_swizzling: get(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)?,
            cluster_shape: get(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)?,
        })
    }
}

/// A problem's descriptors and algorithm, destroyed on drop.
struct Prepared {
    desc: sys::cublasLtMatmulDesc_t,
    a: sys::cublasLtMatrixLayout_t,
    b: sys::cublasLtMatrixLayout_t,
    d: sys::cublasLtMatrixLayout_t,
    algo: sys::cublasLtMatmulAlgo_t,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // SAFETY: made by `prepare`, destroyed once (null handles are skipped).
        unsafe {
            for layout in [self.a, self.b, self.d] {
                if !layout.is_null() {
                    sys::cublasLtMatrixLayoutDestroy(layout);
                }
            }
            if !self.desc.is_null() {
                sys::cublasLtMatmulDescDestroy(self.desc);
            }
        }
    }
}

/// A cuBLASLt handle bound to a context and a stream, with its workspace and its cache of
/// prepared problems; destroyed on drop.
pub struct BlasLt<'s> {
    raw: sys::cublasLtHandle_t,
    bound: Bound<'s>,
    workspace: DeviceMemory,
    prepared: RefCell<HashMap<Key, Prepared>>,
}

impl std::fmt::Debug for BlasLt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlasLt")
            .field("workspace", &self.workspace.len())
            .finish()
    }
}

// SAFETY: used by one thread at a time (not Sync: the cache is a RefCell).
unsafe impl Send for BlasLt<'_> {}

/// The workspace [`BlasLt::new`] gives the algorithms (cuBLASLt recommends 32 MiB on Hopper).
pub const DEFAULT_WORKSPACE: usize = 32 << 20;

impl<'s> BlasLt<'s> {
    /// A handle in the current context whose work goes on `stream`, with
    /// [`DEFAULT_WORKSPACE`] bytes of workspace.
    pub fn new(stream: &'s Stream) -> Result<BlasLt<'s>> {
        BlasLt::with_workspace(stream, DEFAULT_WORKSPACE)
    }

    /// As [`BlasLt::new`] with `workspace` bytes (at least 1) for the algorithms.
    pub fn with_workspace(stream: &'s Stream, workspace: usize) -> Result<BlasLt<'s>> {
        LIBRARY.ensure()?;
        let bound = Bound::current(stream)?;
        let workspace = DeviceMemory::alloc(workspace.max(1))?;
        let mut raw = std::ptr::null_mut();
        lt!(cublasLtCreate(&mut raw))?;
        Ok(BlasLt {
            raw,
            bound,
            workspace,
            prepared: RefCell::new(HashMap::new()),
        })
    }

    /// The number of problems prepared (one heuristic query each).
    pub fn prepared_count(&self) -> usize {
        self.prepared.borrow().len()
    }

    /// Each prepared problem's shape and the algorithm the heuristic chose for it, in no
    /// particular order.
    pub fn algorithms(&self) -> Result<Vec<(Matmul, AlgorithmConfig)>> {
        self.prepared
            .borrow()
            .iter()
            .map(|(key, p)| Ok((key.0, AlgorithmConfig::of(&p.algo)?)))
            .collect()
    }

    /// The raw handle, for calls through cudarc's `cublaslt::sys`.
    pub fn raw(&self) -> sys::cublasLtHandle_t {
        self.raw
    }

    fn prepare(
        &self,
        shape: &Matmul,
        ab: sys::cudaDataType,
        dt: sys::cudaDataType,
        bias_type: Option<sys::cudaDataType>,
        fp8_scales: bool,
    ) -> Result<Prepared> {
        let mut p = Prepared {
            desc: std::ptr::null_mut(),
            a: std::ptr::null_mut(),
            b: std::ptr::null_mut(),
            d: std::ptr::null_mut(),
            // SAFETY: a plain array of integers; overwritten by the heuristic.
            algo: unsafe { std::mem::zeroed() },
        };
        lt!(cublasLtMatmulDescCreate(
            &mut p.desc,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cudaDataType::CUDA_R_32F
        ))?;
        let set = |attr: sys::cublasLtMatmulDescAttributes_t, value: *const c_void, size: usize| {
            lt!(cublasLtMatmulDescSetAttribute(p.desc, attr, value, size))
        };
        let (ta, tb) = (op(shape.transa), op(shape.transb));
        use sys::cublasLtMatmulDescAttributes_t::*;
        set(
            CUBLASLT_MATMUL_DESC_TRANSA,
            (&ta as *const i32).cast(),
            size_of_val(&ta),
        )?;
        set(
            CUBLASLT_MATMUL_DESC_TRANSB,
            (&tb as *const i32).cast(),
            size_of_val(&tb),
        )?;
        let epilogue = shape.epilogue.raw();
        set(
            CUBLASLT_MATMUL_DESC_EPILOGUE,
            (&epilogue as *const sys::cublasLtEpilogue_t).cast(),
            size_of_val(&epilogue),
        )?;
        if let Some(bias_type) = bias_type {
            set(
                CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                (&bias_type as *const sys::cudaDataType).cast(),
                size_of_val(&bias_type),
            )?;
        }
        if fp8_scales {
            // The heuristic must see that A and B are scaled: without scale pointers it may pick
            // a kernel that does not apply them (XLA hit that with cuBLASLt 12.8, openxla/xla
            // #40747) or a slower one. It does not read them, so the workspace's address stands
            // in; every call sets the real ones.
            let stand_in = self.workspace.ptr();
            for attr in [
                CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
            ] {
                set(
                    attr,
                    (&stand_in as *const u64).cast(),
                    size_of_val(&stand_in),
                )?;
            }
        }
        let (ar, ac) = if shape.transa == Transpose::No {
            (shape.m, shape.k)
        } else {
            (shape.k, shape.m)
        };
        let (br, bc) = if shape.transb == Transpose::No {
            (shape.k, shape.n)
        } else {
            (shape.n, shape.k)
        };
        lt!(cublasLtMatrixLayoutCreate(
            &mut p.a,
            ab,
            ar as u64,
            ac as u64,
            shape.lda as i64
        ))?;
        lt!(cublasLtMatrixLayoutCreate(
            &mut p.b,
            ab,
            br as u64,
            bc as u64,
            shape.ldb as i64
        ))?;
        lt!(cublasLtMatrixLayoutCreate(
            &mut p.d,
            dt,
            shape.m as u64,
            shape.n as u64,
            shape.ldd as i64
        ))?;
        let mut pref = std::ptr::null_mut();
        lt!(cublasLtMatmulPreferenceCreate(&mut pref))?;
        let bytes = self.workspace.len() as u64;
        let set_pref = lt!(cublasLtMatmulPreferenceSetAttribute(
            pref,
            sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            (&bytes as *const u64).cast(),
            8
        ));
        // SAFETY: a plain struct of integers and a float; overwritten by the heuristic.
        let mut result: sys::cublasLtMatmulHeuristicResult_t = unsafe { std::mem::zeroed() };
        let mut found = 0;
        let heuristic = set_pref.and_then(|()| {
            lt!(cublasLtMatmulAlgoGetHeuristic(
                self.raw,
                p.desc,
                p.a,
                p.b,
                p.d,
                p.d,
                pref,
                1,
                &mut result,
                &mut found
            ))
        });
        // SAFETY: made above, destroyed once.
        unsafe { sys::cublasLtMatmulPreferenceDestroy(pref) };
        heuristic?;
        if found == 0 {
            return Err(Error::Status {
                library: "cuBLASLt",
                call: "cublasLtMatmulAlgoGetHeuristic",
                code: cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED as i64,
                name: "CUBLAS_STATUS_NOT_SUPPORTED".into(),
                message:
                    "no algorithm for this problem (types, layouts, epilogue) within the workspace"
                        .into(),
            });
        }
        p.algo = result.algo;
        Ok(p)
    }

    /// `D ← epilogue(alpha·op(A)·op(B) + beta·D)` with `A`, `B` in `AB` and `D` in `Out`,
    /// accumulating in f32. `bias` (`m` elements of `Out`, or bf16 for FP8) is needed by the
    /// bias epilogues; `scales` by FP8 inputs.
    pub fn matmul<AB: LtElement, Out: LtElement>(
        &self,
        shape: &Matmul,
        alpha: f32,
        a: &impl AsDeviceSlice<AB>,
        b: &impl AsDeviceSlice<AB>,
        beta: f32,
        d: &mut impl AsDeviceSliceMut<Out>,
        bias: Option<DeviceSlice<'_, Out>>,
        scales: Option<Fp8Scales<'_>>,
    ) -> Result<()> {
        let call = "matmul";
        let (a, b, d) = (
            a.as_device_slice()?,
            b.as_device_slice()?,
            d.as_device_slice_mut()?,
        );
        let (ar, ac) = if shape.transa == Transpose::No {
            (shape.m, shape.k)
        } else {
            (shape.k, shape.m)
        };
        let (br, bc) = if shape.transb == Transpose::No {
            (shape.k, shape.n)
        } else {
            (shape.n, shape.k)
        };
        check_matrix(call, "A", a.len(), ar, ac, shape.lda)?;
        check_matrix(call, "B", b.len(), br, bc, shape.ldb)?;
        check_matrix(call, "D", d.len(), shape.m, shape.n, shape.ldd)?;
        match (shape.epilogue.needs_bias(), &bias) {
            (true, None) => {
                return Err(Error::invalid(
                    call,
                    format!("the {:?} epilogue needs a bias", shape.epilogue),
                ));
            }
            (false, Some(_)) => return Err(Error::invalid(call, "a bias without a bias epilogue")),
            (true, Some(bias)) => check_len(call, "bias", bias.len(), shape.m)?,
            (false, None) => {}
        }
        if Out::IS_FP8 {
            return Err(Error::invalid(
                call,
                "FP8 outputs are not supported here: D is f32, f16 or bf16",
            ));
        }
        if AB::IS_FP8 {
            let Some(scales) = &scales else {
                return Err(Error::invalid(call, "FP8 inputs need scale factors"));
            };
            check_len(call, "scale of A", scales.a.len(), 1)?;
            check_len(call, "scale of B", scales.b.len(), 1)?;
            if shape.transa != Transpose::Yes || shape.transb != Transpose::No {
                return Err(Error::invalid(
                    call,
                    "FP8 needs A transposed and B not (the TN layout)",
                ));
            }
            let (major, minor) = chorus_driver::current_compute_capability().unwrap_or((0, 0));
            if (major, minor) < (8, 9) {
                return Err(Error::Unsupported {
                    what: "an FP8 matmul",
                    needed_major: 8,
                    needed_minor: 9,
                    major,
                    minor,
                });
            }
        } else if scales.is_some() {
            return Err(Error::invalid(
                call,
                "scale factors apply to FP8 inputs only",
            ));
        }
        self.bound.enter()?;
        let key: Key = (
            *shape,
            AB::DATA_TYPE as u32,
            Out::DATA_TYPE as u32,
            bias.is_some() as u32,
        );
        let mut prepared = self.prepared.borrow_mut();
        let p = match prepared.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(self.prepare(
                shape,
                AB::DATA_TYPE,
                Out::DATA_TYPE,
                bias.as_ref().map(|_| Out::DATA_TYPE),
                AB::IS_FP8,
            )?),
        };
        use sys::cublasLtMatmulDescAttributes_t::*;
        let set = |attr, value: u64| {
            lt!(cublasLtMatmulDescSetAttribute(
                p.desc,
                attr,
                (&value as *const u64).cast(),
                8
            ))
        };
        if let Some(bias) = &bias {
            set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.ptr())?;
        }
        if let Some(scales) = &scales {
            set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales.a.ptr())?;
            set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales.b.ptr())?;
        }
        lt!(cublasLtMatmul(
            self.raw,
            p.desc,
            (&alpha as *const f32).cast(),
            a.ptr() as *const c_void,
            p.a,
            b.ptr() as *const c_void,
            p.b,
            (&beta as *const f32).cast(),
            d.ptr() as *const c_void,
            p.d,
            d.ptr() as *mut c_void,
            p.d,
            &p.algo,
            self.workspace.ptr() as *mut c_void,
            self.workspace.len(),
            self.bound.stream().raw() as sys::cudaStream_t
        ))
    }
}

impl Drop for BlasLt<'_> {
    fn drop(&mut self) {
        let _ = self.bound.enter();
        self.prepared.borrow_mut().clear();
        // SAFETY: the handle was created by `with_workspace` and is destroyed once.
        if let Err(e) = check("cublasLtDestroy", unsafe { sys::cublasLtDestroy(self.raw) }) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AlgorithmConfig;

    #[test]
    fn an_algorithm_configuration_prints_every_field() {
        let algorithm = AlgorithmConfig {
            id: 66,
            tile: 23,
            stages: 35,
            split_k: 1,
            cta_swizzling: 0,
            cluster_shape: 3,
        };
        assert_eq!(
            algorithm.to_string(),
            "algorithm 66 (tile 23, stages 35, split-k 1, swizzling 0, cluster shape 3)"
        );
    }
}
