//! cuSPARSE's generic API: CSR, COO and CSC matrices as descriptors over device memory; SpMV,
//! SpMM and SpGEMM; dense to sparse (CSR) and back. Buffer sizes are asked and the buffers
//! kept inside the handle.
//!
//! Indices are 32-bit and 0-based. A sparse matrix made with the `*_mut` constructors may be
//! written by a call (none of this module's calls write an input matrix; outputs of unknown
//! size, SpGEMM's and dense-to-sparse, come back as an [`OwnedCsr`]).

#![allow(clippy::too_many_arguments)] // the generic API's calling convention

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::Library;
use crate::types::{C32, C64, Transpose, check_len, check_matrix};
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, DeviceMemory, DeviceSlice, Stream};
use cudarc::cusparse::sys::{self, cusparseStatus_t};
use std::cell::RefCell;
use std::ffi::CStr;
use std::marker::PhantomData;

/// The cuSPARSE library, probed on first use.
pub static LIBRARY: Library = Library::new("cuSPARSE", "cusparse", &[], SYMBOLS, || {
    // SAFETY: only asks the system loader whether cudarc's names resolve.
    unsafe { sys::is_culib_present() }
});

/// True when cuSPARSE can be used (the seed's `*cusparse-not-found*`, negated).
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

const SYMBOLS: &[&str] = &[
    "cusparseCreate",
    "cusparseDestroy",
    "cusparseSetStream",
    "cusparseGetErrorName",
    "cusparseGetErrorString",
    "cusparseCreateCsr",
    "cusparseCreateCoo",
    "cusparseCreateCsc",
    "cusparseDestroySpMat",
    "cusparseCreateDnVec",
    "cusparseDestroyDnVec",
    "cusparseCreateDnMat",
    "cusparseDestroyDnMat",
    "cusparseSpMV_bufferSize",
    "cusparseSpMV",
    "cusparseSpMM_bufferSize",
    "cusparseSpMM",
    "cusparseSparseToDense_bufferSize",
    "cusparseSparseToDense",
    "cusparseDenseToSparse_bufferSize",
    "cusparseDenseToSparse_analysis",
    "cusparseDenseToSparse_convert",
    "cusparseSpMatGetSize",
    "cusparseCsrSetPointers",
    "cusparseSpGEMM_createDescr",
    "cusparseSpGEMM_destroyDescr",
    "cusparseSpGEMM_workEstimation",
    "cusparseSpGEMM_compute",
    "cusparseSpGEMM_copy",
];

/// A cuSPARSE status as an error naming `call`, with cuSPARSE's name and description.
pub fn check(call: &'static str, status: cusparseStatus_t) -> Result<()> {
    if status == cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        return Ok(());
    }
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: cuSPARSE returns static NUL-terminated strings (or null).
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let (name, message) = if LIBRARY.is_available() {
        // SAFETY: the library is loaded with both symbols (probed).
        unsafe {
            (
                text(sys::cusparseGetErrorName(status)),
                text(sys::cusparseGetErrorString(status)),
            )
        }
    } else {
        (None, None)
    };
    Err(Error::Status {
        library: "cuSPARSE",
        call,
        code: status as i64,
        name: name.unwrap_or_else(|| format!("{status:?}")),
        message: message.unwrap_or_else(|| "unknown status".into()),
    })
}

macro_rules! sparse {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (ensured before any handle or descriptor was made);
        // each call site passes live descriptors over device extents it checked.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

mod sealed {
    pub trait Sealed {}
}

/// The value types: `f32`, `f64`, [`C32`], [`C64`].
pub trait SparseScalar: bytemuck::Pod + sealed::Sealed {
    /// cuSPARSE's data type for it.
    #[doc(hidden)]
    const DATA_TYPE: sys::cudaDataType;
    /// One (for SpGEMM's `alpha`).
    const ONE: Self;
    /// Zero.
    const ZERO: Self;
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}
impl sealed::Sealed for C32 {}
impl sealed::Sealed for C64 {}
impl SparseScalar for f32 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_32F;
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;
}
impl SparseScalar for f64 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_64F;
    const ONE: f64 = 1.0;
    const ZERO: f64 = 0.0;
}
impl SparseScalar for C32 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_C_32F;
    const ONE: C32 = C32::new(1.0, 0.0);
    const ZERO: C32 = C32::new(0.0, 0.0);
}
impl SparseScalar for C64 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_C_64F;
    const ONE: C64 = C64::new(1.0, 0.0);
    const ZERO: C64 = C64::new(0.0, 0.0);
}

/// A host scalar aligned for any CUDA type (cuSPARSE reads it through a `void*`).
#[repr(C, align(16))]
struct Aligned<T>(T);

fn op(t: Transpose) -> sys::cusparseOperation_t {
    match t {
        Transpose::No => sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
        Transpose::Yes => sys::cusparseOperation_t::CUSPARSE_OPERATION_TRANSPOSE,
        Transpose::Conjugate => sys::cusparseOperation_t::CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE,
    }
}

const I32: sys::cusparseIndexType_t = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
const BASE0: sys::cusparseIndexBase_t = sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO;

/// The storage format of a [`SparseMatrix`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Compressed sparse rows: `rows + 1` row offsets, column indices, values.
    Csr,
    /// Coordinates: row indices, column indices, values.
    Coo,
    /// Compressed sparse columns: `cols + 1` column offsets, row indices, values.
    Csc,
}

/// Checks compressed offsets (`outer + 1` of them) and the index and value arrays of `nnz`.
fn check_sparse(
    call: &'static str,
    format: Format,
    rows: usize,
    cols: usize,
    first: usize,
    second: usize,
    values: usize,
) -> Result<usize> {
    let nnz = values;
    match format {
        Format::Csr => check_len(call, "row offsets", first, rows + 1)?,
        Format::Csc => check_len(call, "column offsets", first, cols + 1)?,
        Format::Coo => {
            if first != nnz {
                return Err(Error::invalid(
                    call,
                    format!("{first} row indices for {nnz} values"),
                ));
            }
        }
    }
    if second != nnz {
        return Err(Error::invalid(
            call,
            format!("{second} indices for {nnz} values"),
        ));
    }
    Ok(nnz)
}

/// A sparse matrix descriptor over device memory borrowed for `'a`, destroyed on drop.
#[derive(Debug)]
pub struct SparseMatrix<'a, T> {
    raw: sys::cusparseSpMatDescr_t,
    format: Format,
    rows: usize,
    cols: usize,
    nnz: usize,
    borrow: PhantomData<&'a [T]>,
}

// SAFETY: the descriptor is host-side state used by one thread at a time.
unsafe impl<T> Send for SparseMatrix<'_, T> {}

impl<'a, T: SparseScalar> SparseMatrix<'a, T> {
    fn create(
        format: Format,
        rows: usize,
        cols: usize,
        first: DeviceSlice<'a, i32>,
        second: DeviceSlice<'a, i32>,
        values: DeviceSlice<'a, T>,
    ) -> Result<SparseMatrix<'a, T>> {
        LIBRARY.ensure()?;
        let call = "sparse matrix";
        let nnz = check_sparse(
            call,
            format,
            rows,
            cols,
            first.len(),
            second.len(),
            values.len(),
        )?;
        let (r, c, z) = (rows as i64, cols as i64, nnz as i64);
        let (p, q, v) = (
            first.ptr() as *mut _,
            second.ptr() as *mut _,
            values.ptr() as *mut _,
        );
        let mut raw = std::ptr::null_mut();
        match format {
            Format::Csr => sparse!(cusparseCreateCsr(
                &mut raw,
                r,
                c,
                z,
                p,
                q,
                v,
                I32,
                I32,
                BASE0,
                T::DATA_TYPE
            ))?,
            Format::Coo => sparse!(cusparseCreateCoo(
                &mut raw,
                r,
                c,
                z,
                p,
                q,
                v,
                I32,
                BASE0,
                T::DATA_TYPE
            ))?,
            Format::Csc => sparse!(cusparseCreateCsc(
                &mut raw,
                r,
                c,
                z,
                p,
                q,
                v,
                I32,
                I32,
                BASE0,
                T::DATA_TYPE
            ))?,
        }
        Ok(SparseMatrix {
            raw,
            format,
            rows,
            cols,
            nnz,
            borrow: PhantomData,
        })
    }

    /// A CSR matrix: `row_offsets` (`rows + 1`), `col_indices` and `values` (`nnz` each).
    pub fn csr(
        rows: usize,
        cols: usize,
        row_offsets: &'a impl AsDeviceSlice<i32>,
        col_indices: &'a impl AsDeviceSlice<i32>,
        values: &'a impl AsDeviceSlice<T>,
    ) -> Result<SparseMatrix<'a, T>> {
        SparseMatrix::create(
            Format::Csr,
            rows,
            cols,
            row_offsets.as_device_slice()?,
            col_indices.as_device_slice()?,
            values.as_device_slice()?,
        )
    }

    /// A COO matrix: `row_indices`, `col_indices` and `values` (`nnz` each).
    pub fn coo(
        rows: usize,
        cols: usize,
        row_indices: &'a impl AsDeviceSlice<i32>,
        col_indices: &'a impl AsDeviceSlice<i32>,
        values: &'a impl AsDeviceSlice<T>,
    ) -> Result<SparseMatrix<'a, T>> {
        SparseMatrix::create(
            Format::Coo,
            rows,
            cols,
            row_indices.as_device_slice()?,
            col_indices.as_device_slice()?,
            values.as_device_slice()?,
        )
    }

    /// A CSC matrix: `col_offsets` (`cols + 1`), `row_indices` and `values` (`nnz` each).
    pub fn csc(
        rows: usize,
        cols: usize,
        col_offsets: &'a impl AsDeviceSlice<i32>,
        row_indices: &'a impl AsDeviceSlice<i32>,
        values: &'a impl AsDeviceSlice<T>,
    ) -> Result<SparseMatrix<'a, T>> {
        SparseMatrix::create(
            Format::Csc,
            rows,
            cols,
            col_offsets.as_device_slice()?,
            row_indices.as_device_slice()?,
            values.as_device_slice()?,
        )
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The number of stored elements.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
}

impl<T> SparseMatrix<'_, T> {
    /// The raw descriptor, for calls through cudarc's `cusparse::sys`.
    pub fn raw(&self) -> sys::cusparseSpMatDescr_t {
        self.raw
    }
}

impl<T> Drop for SparseMatrix<'_, T> {
    fn drop(&mut self) {
        // SAFETY: made by `create`, destroyed once.
        if let Err(e) = check("cusparseDestroySpMat", unsafe {
            sys::cusparseDestroySpMat(self.raw)
        }) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
    }
}

/// The element order of a dense matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Column by column (`ld` ≥ rows).
    ColumnMajor,
    /// Row by row (`ld` ≥ cols).
    RowMajor,
}

/// A dense matrix's shape and storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dense {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements between consecutive columns (column-major) or rows (row-major).
    pub ld: usize,
    /// The order.
    pub order: Order,
}

impl Dense {
    /// A packed column-major `rows × cols` matrix.
    pub fn column_major(rows: usize, cols: usize) -> Dense {
        Dense {
            rows,
            cols,
            ld: rows,
            order: Order::ColumnMajor,
        }
    }

    /// A packed row-major `rows × cols` matrix.
    pub fn row_major(rows: usize, cols: usize) -> Dense {
        Dense {
            rows,
            cols,
            ld: cols,
            order: Order::RowMajor,
        }
    }

    fn check(&self, call: &'static str, name: &str, len: usize) -> Result<()> {
        match self.order {
            Order::ColumnMajor => check_matrix(call, name, len, self.rows, self.cols, self.ld),
            Order::RowMajor => check_matrix(call, name, len, self.cols, self.rows, self.ld),
        }
    }

    fn raw_order(&self) -> sys::cusparseOrder_t {
        match self.order {
            Order::ColumnMajor => sys::cusparseOrder_t::CUSPARSE_ORDER_COL,
            Order::RowMajor => sys::cusparseOrder_t::CUSPARSE_ORDER_ROW,
        }
    }
}

/// A dense vector or matrix descriptor made for one call, destroyed after it.
struct DnVec(sys::cusparseDnVecDescr_t);
impl DnVec {
    fn new<T: SparseScalar>(ptr: u64, len: usize) -> Result<DnVec> {
        let mut raw = std::ptr::null_mut();
        sparse!(cusparseCreateDnVec(
            &mut raw,
            len as i64,
            ptr as *mut _,
            T::DATA_TYPE
        ))?;
        Ok(DnVec(raw))
    }
}
impl Drop for DnVec {
    fn drop(&mut self) {
        // SAFETY: made by `new`, destroyed once.
        let _ = unsafe { sys::cusparseDestroyDnVec(self.0) };
    }
}
struct DnMat(sys::cusparseDnMatDescr_t);
impl DnMat {
    fn new<T: SparseScalar>(ptr: u64, d: &Dense) -> Result<DnMat> {
        let mut raw = std::ptr::null_mut();
        sparse!(cusparseCreateDnMat(
            &mut raw,
            d.rows as i64,
            d.cols as i64,
            d.ld as i64,
            ptr as *mut _,
            T::DATA_TYPE,
            d.raw_order()
        ))?;
        Ok(DnMat(raw))
    }
}
impl Drop for DnMat {
    fn drop(&mut self) {
        // SAFETY: made by `new`, destroyed once.
        let _ = unsafe { sys::cusparseDestroyDnMat(self.0) };
    }
}

/// A CSR matrix whose arrays this value owns (the result of SpGEMM or dense to sparse).
#[derive(Debug)]
pub struct OwnedCsr<T> {
    rows: usize,
    cols: usize,
    nnz: usize,
    row_offsets: DeviceMemory,
    col_indices: DeviceMemory,
    values: DeviceMemory,
    element: PhantomData<T>,
}

impl<T: SparseScalar> OwnedCsr<T> {
    fn alloc(rows: usize, cols: usize, nnz: usize) -> Result<OwnedCsr<T>> {
        Ok(OwnedCsr {
            rows,
            cols,
            nnz,
            row_offsets: DeviceMemory::alloc((rows + 1) * 4)?,
            // Never 0 bytes: an empty matrix still gets a (1-element) allocation.
            col_indices: DeviceMemory::alloc(nnz.max(1) * 4)?,
            values: DeviceMemory::alloc(nnz.max(1) * size_of::<T>())?,
            element: PhantomData,
        })
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The number of stored elements.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// An empty `rows × cols` result and a CSR descriptor over its row offsets alone, for a
    /// call that finds the non-zeros ([`OwnedCsr::take_size`] then sizes the other arrays).
    fn unsized_result(rows: usize, cols: usize) -> Result<(OwnedCsr<T>, SpMatGuard)> {
        let c = OwnedCsr::<T>::alloc(rows, cols, 0)?;
        let mut raw = std::ptr::null_mut();
        sparse!(cusparseCreateCsr(
            &mut raw,
            rows as i64,
            cols as i64,
            0,
            c.row_offsets.ptr() as *mut _,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            I32,
            I32,
            BASE0,
            T::DATA_TYPE
        ))?;
        Ok((c, SpMatGuard(raw)))
    }

    /// Reads the non-zero count the call left in `desc`, allocates the column indices and
    /// values for it (keeping the row offsets) and points `desc` at them.
    fn take_size(&mut self, desc: &SpMatGuard) -> Result<()> {
        let (mut rows, mut cols, mut nnz) = (0i64, 0i64, 0i64);
        sparse!(cusparseSpMatGetSize(desc.0, &mut rows, &mut cols, &mut nnz))?;
        let offsets = std::mem::replace(&mut self.row_offsets, DeviceMemory::alloc(4)?);
        *self = OwnedCsr::alloc(self.rows, self.cols, nnz.max(0) as usize)?;
        self.row_offsets = offsets;
        sparse!(cusparseCsrSetPointers(
            desc.0,
            self.row_offsets.ptr() as *mut _,
            self.col_indices.ptr() as *mut _,
            self.values.ptr() as *mut _
        ))
    }

    /// The row offsets (`rows + 1`).
    pub fn row_offsets(&self) -> DeviceSlice<'_, i32> {
        // SAFETY: owned, `rows + 1` i32 written by the call that made this.
        unsafe { DeviceSlice::from_raw(self.row_offsets.ptr(), self.rows + 1) }
    }

    /// The column indices (`nnz`).
    pub fn col_indices(&self) -> DeviceSlice<'_, i32> {
        // SAFETY: as above, `nnz` of them.
        unsafe { DeviceSlice::from_raw(self.col_indices.ptr(), self.nnz) }
    }

    /// The values (`nnz`).
    pub fn values(&self) -> DeviceSlice<'_, T> {
        // SAFETY: as above.
        unsafe { DeviceSlice::from_raw(self.values.ptr(), self.nnz) }
    }

    /// A descriptor over it, for further calls.
    pub fn matrix(&self) -> Result<SparseMatrix<'_, T>> {
        SparseMatrix::create(
            Format::Csr,
            self.rows,
            self.cols,
            self.row_offsets(),
            self.col_indices(),
            self.values(),
        )
    }

    /// The three arrays copied to the host (waits for the copies).
    pub fn to_host(&self) -> Result<(Vec<i32>, Vec<i32>, Vec<T>)> {
        let mut offsets = vec![0i32; self.rows + 1];
        let mut cols = vec![0i32; self.nnz];
        let mut values = vec![T::zeroed(); self.nnz];
        self.row_offsets
            .copy_to_host(bytemuck::cast_slice_mut(&mut offsets))?;
        self.col_indices
            .copy_to_host(bytemuck::cast_slice_mut(&mut cols))?;
        self.values
            .copy_to_host(bytemuck::cast_slice_mut(&mut values))?;
        Ok((offsets, cols, values))
    }
}

/// A cuSPARSE handle bound to a context and a stream, with its buffer; destroyed on drop.
#[derive(Debug)]
pub struct Sparse<'s> {
    raw: sys::cusparseHandle_t,
    bound: Bound<'s>,
    buffer: RefCell<Option<DeviceMemory>>,
}

// SAFETY: used by one thread at a time (not Sync: the buffer is a RefCell).
unsafe impl Send for Sparse<'_> {}

impl<'s> Sparse<'s> {
    /// A handle in the current context whose work goes on `stream`.
    pub fn new(stream: &'s Stream) -> Result<Sparse<'s>> {
        LIBRARY.ensure()?;
        let bound = Bound::current(stream)?;
        let mut raw = std::ptr::null_mut();
        sparse!(cusparseCreate(&mut raw))?;
        let handle = Sparse {
            raw,
            bound,
            buffer: RefCell::new(None),
        };
        sparse!(cusparseSetStream(raw, stream.raw() as sys::cudaStream_t))?;
        Ok(handle)
    }

    /// The raw handle, for calls through cudarc's `cusparse::sys`.
    pub fn raw(&self) -> sys::cusparseHandle_t {
        self.raw
    }

    /// The kept buffer's address, at least `bytes` long. A bigger one replaces it after the
    /// stream has finished the work that may still use the old one.
    fn buffer(&self, bytes: usize) -> Result<u64> {
        let mut buffer = self.buffer.borrow_mut();
        if buffer.as_ref().is_none_or(|b| b.len() < bytes) {
            if buffer.is_some() {
                self.bound.stream().synchronize()?;
            }
            *buffer = Some(DeviceMemory::alloc(bytes.max(256))?);
        }
        Ok(buffer.as_ref().map(DeviceMemory::ptr).unwrap_or_default())
    }

    /// `y ← alpha·op(A)·x + beta·y`.
    pub fn spmv<T: SparseScalar>(
        &self,
        trans: Transpose,
        alpha: T,
        a: &SparseMatrix<'_, T>,
        x: &impl AsDeviceSlice<T>,
        beta: T,
        y: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        let (rows, cols) = trans.apply(a.rows, a.cols);
        check_len("spmv", "x", x.len(), cols)?;
        check_len("spmv", "y", y.len(), rows)?;
        self.bound.enter()?;
        let (vx, vy) = (
            DnVec::new::<T>(x.ptr(), cols)?,
            DnVec::new::<T>(y.ptr(), rows)?,
        );
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        let (pa, pb) = ((&alpha.0 as *const T).cast(), (&beta.0 as *const T).cast());
        let alg = sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT;
        let mut size = 0usize;
        sparse!(cusparseSpMV_bufferSize(
            self.raw,
            op(trans),
            pa,
            a.raw,
            vx.0,
            pb,
            vy.0,
            T::DATA_TYPE,
            alg,
            &mut size
        ))?;
        let buffer = self.buffer(size)?;
        sparse!(cusparseSpMV(
            self.raw,
            op(trans),
            pa,
            a.raw,
            vx.0,
            pb,
            vy.0,
            T::DATA_TYPE,
            alg,
            buffer as *mut _
        ))
    }

    /// `C ← alpha·op(A)·op(B) + beta·C` for sparse `A` and dense `B`, `C`.
    pub fn spmm<T: SparseScalar>(
        &self,
        trans_a: Transpose,
        trans_b: Transpose,
        alpha: T,
        a: &SparseMatrix<'_, T>,
        b: &impl AsDeviceSlice<T>,
        b_dense: Dense,
        beta: T,
        c: &mut impl AsDeviceSliceMut<T>,
        c_dense: Dense,
    ) -> Result<()> {
        let (b, c) = (b.as_device_slice()?, c.as_device_slice_mut()?);
        b_dense.check("spmm", "B", b.len())?;
        c_dense.check("spmm", "C", c.len())?;
        let (ar, ac) = trans_a.apply(a.rows, a.cols);
        let (br, bc) = trans_b.apply(b_dense.rows, b_dense.cols);
        if ac != br || c_dense.rows != ar || c_dense.cols != bc {
            return Err(Error::invalid(
                "spmm",
                format!(
                    "op(A) is {ar} × {ac}, op(B) {br} × {bc}, C {} × {}",
                    c_dense.rows, c_dense.cols
                ),
            ));
        }
        self.bound.enter()?;
        let (mb, mc) = (
            DnMat::new::<T>(b.ptr(), &b_dense)?,
            DnMat::new::<T>(c.ptr(), &c_dense)?,
        );
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        let (pa, pb) = ((&alpha.0 as *const T).cast(), (&beta.0 as *const T).cast());
        let alg = sys::cusparseSpMMAlg_t::CUSPARSE_SPMM_ALG_DEFAULT;
        let mut size = 0usize;
        sparse!(cusparseSpMM_bufferSize(
            self.raw,
            op(trans_a),
            op(trans_b),
            pa,
            a.raw,
            mb.0,
            pb,
            mc.0,
            T::DATA_TYPE,
            alg,
            &mut size
        ))?;
        let buffer = self.buffer(size)?;
        sparse!(cusparseSpMM(
            self.raw,
            op(trans_a),
            op(trans_b),
            pa,
            a.raw,
            mb.0,
            pb,
            mc.0,
            T::DATA_TYPE,
            alg,
            buffer as *mut _
        ))
    }

    /// `C = A·B` for CSR `A` and `B`; `C` is a new CSR matrix (its size known only after the
    /// product, so this waits for the stream).
    pub fn spgemm<T: SparseScalar>(
        &self,
        a: &SparseMatrix<'_, T>,
        b: &SparseMatrix<'_, T>,
    ) -> Result<OwnedCsr<T>> {
        if a.format != Format::Csr || b.format != Format::Csr {
            return Err(Error::invalid("spgemm", "SpGEMM takes CSR matrices"));
        }
        if a.cols != b.rows {
            return Err(Error::invalid(
                "spgemm",
                format!("A is {} × {}, B {} × {}", a.rows, a.cols, b.rows, b.cols),
            ));
        }
        self.bound.enter()?;
        let (mut c, mat_c) = OwnedCsr::<T>::unsized_result(a.rows, b.cols)?;
        let mut descr = std::ptr::null_mut();
        sparse!(cusparseSpGEMM_createDescr(&mut descr))?;
        let descr = SpGemmGuard(descr);
        let (alpha, beta) = (Aligned(T::ONE), Aligned(T::ZERO));
        let (pa, pb) = ((&alpha.0 as *const T).cast(), (&beta.0 as *const T).cast());
        let no = op(Transpose::No);
        let alg = sys::cusparseSpGEMMAlg_t::CUSPARSE_SPGEMM_DEFAULT;
        // Work estimation, then compute: each called first for its buffer's size (null
        // buffer), then with a buffer that large, which must live until the copy is done.
        let phase = |f: SpGemmPhase, name: &'static str| -> Result<DeviceMemory> {
            let mut size = 0usize;
            let call = |size: &mut usize, buffer: *mut std::ffi::c_void| {
                // SAFETY: a live handle, descriptors over checked blocks, and `size` bytes of
                // buffer (or null for the size query).
                let status = unsafe {
                    f(
                        self.raw,
                        no,
                        no,
                        pa,
                        a.raw,
                        b.raw,
                        pb,
                        mat_c.0,
                        T::DATA_TYPE,
                        alg,
                        descr.0,
                        size,
                        buffer,
                    )
                };
                check(name, status)
            };
            call(&mut size, std::ptr::null_mut())?;
            let buffer = DeviceMemory::alloc(size.max(1))?;
            call(&mut size, buffer.ptr() as *mut _)?;
            Ok(buffer)
        };
        let buffer1 = phase(
            sys::cusparseSpGEMM_workEstimation,
            "cusparseSpGEMM_workEstimation",
        )?;
        let buffer2 = phase(sys::cusparseSpGEMM_compute, "cusparseSpGEMM_compute")?;
        c.take_size(&mat_c)?;
        sparse!(cusparseSpGEMM_copy(
            self.raw,
            no,
            no,
            pa,
            a.raw,
            b.raw,
            pb,
            mat_c.0,
            T::DATA_TYPE,
            alg,
            descr.0
        ))?;
        // The buffers are freed when this returns: the work that uses them must be done.
        self.bound.stream().synchronize()?;
        drop((buffer1, buffer2));
        Ok(c)
    }

    /// Writes the sparse `a` into the dense `out` (zeros elsewhere).
    pub fn sparse_to_dense<T: SparseScalar>(
        &self,
        a: &SparseMatrix<'_, T>,
        out: &mut impl AsDeviceSliceMut<T>,
        dense: Dense,
    ) -> Result<()> {
        let out = out.as_device_slice_mut()?;
        dense.check("sparse_to_dense", "the dense matrix", out.len())?;
        if (dense.rows, dense.cols) != (a.rows, a.cols) {
            return Err(Error::invalid(
                "sparse_to_dense",
                format!(
                    "a {} × {} matrix into {} × {}",
                    a.rows, a.cols, dense.rows, dense.cols
                ),
            ));
        }
        self.bound.enter()?;
        let mat = DnMat::new::<T>(out.ptr(), &dense)?;
        let alg = sys::cusparseSparseToDenseAlg_t::CUSPARSE_SPARSETODENSE_ALG_DEFAULT;
        let mut size = 0usize;
        sparse!(cusparseSparseToDense_bufferSize(
            self.raw, a.raw, mat.0, alg, &mut size
        ))?;
        let buffer = self.buffer(size)?;
        sparse!(cusparseSparseToDense(
            self.raw,
            a.raw,
            mat.0,
            alg,
            buffer as *mut _
        ))
    }

    /// The non-zeros of the dense `input` as a new CSR matrix (waits for the stream: the
    /// count is known only after the analysis).
    pub fn dense_to_csr<T: SparseScalar>(
        &self,
        input: &impl AsDeviceSlice<T>,
        dense: Dense,
    ) -> Result<OwnedCsr<T>> {
        let input = input.as_device_slice()?;
        dense.check("dense_to_csr", "the dense matrix", input.len())?;
        self.bound.enter()?;
        let mat = DnMat::new::<T>(input.ptr(), &dense)?;
        let (mut c, sp) = OwnedCsr::<T>::unsized_result(dense.rows, dense.cols)?;
        let alg = sys::cusparseDenseToSparseAlg_t::CUSPARSE_DENSETOSPARSE_ALG_DEFAULT;
        let mut size = 0usize;
        sparse!(cusparseDenseToSparse_bufferSize(
            self.raw, mat.0, sp.0, alg, &mut size
        ))?;
        let buffer = self.buffer(size)?;
        sparse!(cusparseDenseToSparse_analysis(
            self.raw,
            mat.0,
            sp.0,
            alg,
            buffer as *mut _
        ))?;
        c.take_size(&sp)?;
        sparse!(cusparseDenseToSparse_convert(
            self.raw,
            mat.0,
            sp.0,
            alg,
            buffer as *mut _
        ))?;
        Ok(c)
    }
}

/// `cusparseSpGEMM_workEstimation` and `cusparseSpGEMM_compute`, which take the same arguments.
type SpGemmPhase = unsafe fn(
    sys::cusparseHandle_t,
    sys::cusparseOperation_t,
    sys::cusparseOperation_t,
    *const std::ffi::c_void,
    sys::cusparseConstSpMatDescr_t,
    sys::cusparseConstSpMatDescr_t,
    *const std::ffi::c_void,
    sys::cusparseSpMatDescr_t,
    sys::cudaDataType,
    sys::cusparseSpGEMMAlg_t,
    sys::cusparseSpGEMMDescr_t,
    *mut usize,
    *mut std::ffi::c_void,
) -> cusparseStatus_t;

/// A sparse matrix descriptor made inside a call, destroyed with it.
struct SpMatGuard(sys::cusparseSpMatDescr_t);
impl Drop for SpMatGuard {
    fn drop(&mut self) {
        // SAFETY: made by the call, destroyed once.
        let _ = unsafe { sys::cusparseDestroySpMat(self.0) };
    }
}

/// An SpGEMM descriptor, destroyed after the product.
struct SpGemmGuard(sys::cusparseSpGEMMDescr_t);
impl Drop for SpGemmGuard {
    fn drop(&mut self) {
        // SAFETY: made by `spgemm`, destroyed once.
        let _ = unsafe { sys::cusparseSpGEMM_destroyDescr(self.0) };
    }
}

impl Drop for Sparse<'_> {
    fn drop(&mut self) {
        let _ = self.bound.enter();
        // SAFETY: the handle was created by `new` and is destroyed once.
        if let Err(e) = check("cusparseDestroy", unsafe { sys::cusparseDestroy(self.raw) }) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_arrays_are_checked_against_the_format() {
        assert_eq!(check_sparse("t", Format::Csr, 3, 4, 4, 5, 5).unwrap(), 5);
        assert!(
            check_sparse("t", Format::Csr, 3, 4, 3, 5, 5).is_err(),
            "offsets short"
        );
        assert!(
            check_sparse("t", Format::Csc, 3, 4, 4, 5, 5).is_err(),
            "cols + 1 offsets"
        );
        assert!(
            check_sparse("t", Format::Coo, 3, 4, 5, 4, 5).is_err(),
            "indices ≠ values"
        );
        assert!(Dense::row_major(3, 4).check("t", "B", 12).is_ok());
        assert!(
            Dense {
                rows: 3,
                cols: 4,
                ld: 3,
                order: Order::RowMajor
            }
            .check("t", "B", 100)
            .is_err()
        );
    }
}
