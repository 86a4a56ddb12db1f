//! cuDNN on the GPU against naive f64 host references (direct convolution, window loops), and,
//! on the H200 (`CHORUS_REQUIRE_GPU=1` with `python3` and `torch` found), against PyTorch on
//! the same inputs.
//!
//! Tolerances, as the largest error relative to the largest reference value: f64 1e-12; f32
//! with FMA math 1e-5 (convolutions of ≤ 300-term sums); f16 inputs and outputs 4e-3
//! (one f16 rounding of the output, 2⁻¹¹, plus f32 accumulation); bf16 1.6e-2 (2⁻⁸ output
//! rounding); elementwise f32 functions 1e-6; softmax and batch norm f32 1e-5. The references
//! use the inputs after their rounding to the device type, so the tolerance covers only the
//! device's arithmetic and the output's rounding.

mod common;

use chorus_cuda_libs::Error;
use chorus_cuda_libs::cudnn::{
    Activation, BatchNormMode, BatchNormStats, Conv2d, ConvDesc, Dnn, DnnType, FilterDesc, Layout,
    MathType, PoolDesc, PoolMode, Search, SoftmaxAlgo, SoftmaxMode, TensorDesc,
};
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, MemoryBlock, Stream};
use common::*;
use half::{bf16, f16};

/// Element types with conversions to and from f64 for the references.
trait Elem: DnnType {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}
impl Elem for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl Elem for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}
impl Elem for f16 {
    fn from_f64(x: f64) -> f16 {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}
impl Elem for bf16 {
    fn from_f64(x: f64) -> bf16 {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
}

/// A logical NCHW tensor in f64 (index `((n·C + c)·H + h)·W + w`).
#[derive(Clone, Debug)]
struct Host {
    dims: [usize; 4],
    data: Vec<f64>,
}

impl Host {
    fn random(dims: [usize; 4], rng: &mut Lcg) -> Host {
        Host {
            dims,
            data: rng.vec(dims.iter().product()),
        }
    }
    fn zeros(dims: [usize; 4]) -> Host {
        Host {
            dims,
            data: vec![0.0; dims.iter().product()],
        }
    }
    fn idx(&self, [n, c, h, w]: [usize; 4]) -> usize {
        let [_, cc, hh, ww] = self.dims;
        ((n * cc + c) * hh + h) * ww + w
    }
    fn at(&self, i: [usize; 4]) -> f64 {
        self.data[self.idx(i)]
    }
    /// The values after rounding to `T` (what the device sees).
    fn rounded<T: Elem>(&self) -> Host {
        Host {
            dims: self.dims,
            data: self.data.iter().map(|&x| T::from_f64(x).to_f64()).collect(),
        }
    }
    fn each(dims: [usize; 4]) -> impl Iterator<Item = [usize; 4]> {
        let [n, c, h, w] = dims;
        (0..n).flat_map(move |a| {
            (0..c).flat_map(move |b| (0..h).flat_map(move |d| (0..w).map(move |e| [a, b, d, e])))
        })
    }
}

/// `host` laid out for `desc` (any strides) in a device block of the descriptor's span.
fn pack_tensor<T: Elem>(desc: &TensorDesc<T>, host: &Host) -> MemoryBlock<T> {
    assert_eq!(desc.dims(), host.dims);
    let mut v = vec![T::from_f64(0.0); desc.len()];
    for i in Host::each(host.dims) {
        v[desc.offset(i)] = T::from_f64(host.at(i));
    }
    upload(&v)
}

fn pack_filter<T: Elem>(desc: &FilterDesc<T>, host: &Host) -> MemoryBlock<T> {
    assert_eq!(desc.dims(), host.dims);
    let mut v = vec![T::from_f64(0.0); desc.len()];
    for i in Host::each(host.dims) {
        v[desc.offset(i)] = T::from_f64(host.at(i));
    }
    upload(&v)
}

fn unpack_tensor<T: Elem>(desc: &TensorDesc<T>, block: &mut MemoryBlock<T>) -> Host {
    let v = download(block);
    let mut h = Host::zeros(desc.dims());
    for i in Host::each(desc.dims()) {
        let j = h.idx(i);
        h.data[j] = v[desc.offset(i)].to_f64();
    }
    h
}

fn unpack_filter<T: Elem>(desc: &FilterDesc<T>, block: &mut MemoryBlock<T>) -> Host {
    let v = download(block);
    let mut h = Host::zeros(desc.dims());
    for i in Host::each(desc.dims()) {
        let j = h.idx(i);
        h.data[j] = v[desc.offset(i)].to_f64();
    }
    h
}

/// For each output `[n, k, p, q]` and filter tap `[c, r, s]`, the input position it reads
/// (cross-correlation, groups), or none in the padding: calls `f(out, x_index, w_index)`.
fn conv_taps(
    x: [usize; 4],
    w: [usize; 4],
    y: [usize; 4],
    conv: &Conv2d,
    mut f: impl FnMut([usize; 4], [usize; 4], [usize; 4]),
) {
    let [_, _, h, wd] = x;
    let [k, cg, r, s] = w;
    let kg = k / conv.groups;
    for o in Host::each(y) {
        let [n, kk, p, q] = o;
        let g = kk / kg;
        for c in 0..cg {
            for i in 0..r {
                for j in 0..s {
                    let (ri, sj) = if conv.cross_correlation {
                        (i, j)
                    } else {
                        (r - 1 - i, s - 1 - j)
                    };
                    let hh =
                        (p * conv.stride[0] + i * conv.dilation[0]) as isize - conv.pad[0] as isize;
                    let ww =
                        (q * conv.stride[1] + j * conv.dilation[1]) as isize - conv.pad[1] as isize;
                    if hh < 0 || ww < 0 || hh >= h as isize || ww >= wd as isize {
                        continue;
                    }
                    f(
                        o,
                        [n, g * cg + c, hh as usize, ww as usize],
                        [kk, c, ri, sj],
                    );
                }
            }
        }
    }
}

fn conv_ref(x: &Host, w: &Host, conv: &Conv2d) -> Host {
    let yd = conv.output_dims(x.dims, w.dims).unwrap();
    let mut y = Host::zeros(yd);
    conv_taps(x.dims, w.dims, yd, conv, |o, xi, wi| {
        let j = y.idx(o);
        y.data[j] += x.at(xi) * w.at(wi);
    });
    y
}

fn conv_backward_data_ref(dy: &Host, w: &Host, xd: [usize; 4], conv: &Conv2d) -> Host {
    let mut dx = Host::zeros(xd);
    conv_taps(xd, w.dims, dy.dims, conv, |o, xi, wi| {
        let j = dx.idx(xi);
        dx.data[j] += dy.at(o) * w.at(wi);
    });
    dx
}

fn conv_backward_filter_ref(x: &Host, dy: &Host, wd: [usize; 4], conv: &Conv2d) -> Host {
    let mut dw = Host::zeros(wd);
    conv_taps(x.dims, wd, dy.dims, conv, |o, xi, wi| {
        let j = dw.idx(wi);
        dw.data[j] += x.at(xi) * dy.at(o);
    });
    dw
}

/// The largest error relative to the largest reference value, with a message on failure.
fn assert_close(what: &str, got: &Host, want: &Host, tol: f64) {
    assert_eq!(got.dims, want.dims, "{what}: dimensions");
    let e = rel_err(got.data.iter().copied(), &want.data);
    assert!(e <= tol, "{what}: relative error {e:.3e} > {tol:.1e}");
    eprintln!("{what}: relative error {e:.2e} (tolerance {tol:.1e})");
}

/// One forward convolution of type `T` in `layout` with every algorithm the heuristic
/// offers (at most 4) and the exhaustive search's best, each against the f64 reference.
fn check_conv_forward<T: Elem>(
    dnn: &Dnn,
    layout: Layout,
    xd: [usize; 4],
    wd: [usize; 4],
    conv: Conv2d,
    tol: f64,
    seed: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Lcg::new(seed);
    let x = Host::random(xd, &mut rng).rounded::<T>();
    let w = Host::random(wd, &mut rng).rounded::<T>();
    let want = conv_ref(&x, &w, &conv);
    let x_desc = TensorDesc::<T>::new(layout, xd[0], xd[1], xd[2], xd[3])?;
    let w_desc = FilterDesc::<T>::new(layout, wd[0], wd[1], wd[2], wd[3])?;
    let mut conv_desc = ConvDesc::<T>::new(conv)?;
    let yd = conv_desc.output_dims(&x_desc, &w_desc)?;
    assert_eq!(yd, want.dims);
    let y_desc = TensorDesc::<T>::new(layout, yd[0], yd[1], yd[2], yd[3])?;
    let (dx, dw) = (pack_tensor(&x_desc, &x), pack_filter(&w_desc, &w));
    let mut dy = MemoryBlock::<T>::alloc(y_desc.len())?;
    let heuristic =
        dnn.conv_forward_algos(&x_desc, &w_desc, &conv_desc, &y_desc, Search::Heuristic)?;
    assert!(!heuristic.is_empty(), "no forward algorithm");
    let exhaustive =
        dnn.conv_forward_algos(&x_desc, &w_desc, &conv_desc, &y_desc, Search::Exhaustive)?;
    assert!(!exhaustive.is_empty(), "no forward algorithm found");
    assert!(exhaustive[0].time_ms >= 0.0);
    let math = conv.math;
    let mut checked = Vec::new();
    for perf in heuristic.iter().take(4).chain(exhaustive.first()) {
        if math == MathType::Fma && perf.math != MathType::Fma {
            continue; // a tensor-core choice would not meet the f32 tolerance
        }
        checked.push(*perf);
        conv_desc.set_math(perf.math)?;
        dy.memset_device_bytes(0)?; // the block is reused: start each algorithm from zeros
        dnn.conv_forward(
            1.0, &x_desc, &dx, &w_desc, &dw, &conv_desc, perf.algo, 0.0, &y_desc, &mut dy,
        )?;
        let got = unpack_tensor(&y_desc, &mut dy);
        assert_close(
            &format!(
                "conv forward {} {layout:?} {:?} {:?}",
                T::NAME,
                perf.algo,
                perf.math
            ),
            &got,
            &want,
            tol,
        );
    }
    assert!(
        !checked.is_empty(),
        "no algorithm of math {math:?} among {heuristic:?} and {exhaustive:?}"
    );
    // alpha and beta: y ← 2·conv + 0.5·y (y holds conv from the last run).
    let last = checked[checked.len() - 1];
    let algo = last.algo;
    conv_desc.set_math(last.math)?;
    dnn.conv_forward(
        2.0, &x_desc, &dx, &w_desc, &dw, &conv_desc, algo, 0.5, &y_desc, &mut dy,
    )?;
    let got = unpack_tensor(&y_desc, &mut dy);
    let scaled = Host {
        dims: want.dims,
        data: want.data.iter().map(|v| 2.5 * v).collect(),
    };
    assert_close(
        &format!("conv forward {} alpha/beta", T::NAME),
        &got,
        &scaled,
        tol * 2.0,
    );
    Ok(())
}

#[test]
fn convolution_forward_f32_f64_against_direct_convolution() {
    on_gpu("convolution_forward_f32_f64", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let (maj, min, patch) = chorus_cuda_libs::cudnn::version()?;
        eprintln!("cuDNN {maj}.{min}.{patch}");
        assert_eq!(maj, 9);
        let fma = |c: Conv2d| Conv2d {
            math: MathType::Fma,
            ..c
        };
        // Padded 3×3, stride 1.
        check_conv_forward::<f32>(
            &dnn,
            Layout::Nchw,
            [2, 5, 9, 11],
            [4, 5, 3, 3],
            fma(Conv2d::padded(1)),
            1e-5,
            1,
        )?;
        // Strided, dilated, rectangular window, NHWC.
        let odd = Conv2d {
            pad: [2, 1],
            stride: [2, 1],
            dilation: [1, 2],
            ..Conv2d::default()
        };
        check_conv_forward::<f32>(
            &dnn,
            Layout::Nhwc,
            [3, 4, 12, 10],
            [6, 4, 3, 2],
            fma(odd),
            1e-5,
            2,
        )?;
        // Grouped, and the true (flipped) convolution.
        let grouped = Conv2d {
            groups: 2,
            cross_correlation: false,
            pad: [1, 1],
            ..Conv2d::default()
        };
        check_conv_forward::<f32>(
            &dnn,
            Layout::Nchw,
            [2, 6, 7, 7],
            [4, 3, 3, 3],
            fma(grouped),
            1e-5,
            3,
        )?;
        check_conv_forward::<f64>(
            &dnn,
            Layout::Nchw,
            [2, 3, 8, 8],
            [5, 3, 3, 3],
            Conv2d::padded(1),
            1e-12,
            4,
        )?;
        Ok(())
    });
}

#[test]
fn convolution_forward_f16_bf16_against_direct_convolution() {
    on_gpu("convolution_forward_f16_bf16", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        for layout in [Layout::Nhwc, Layout::Nchw] {
            check_conv_forward::<f16>(
                &dnn,
                layout,
                [2, 16, 10, 10],
                [8, 16, 3, 3],
                Conv2d::padded(1),
                4e-3,
                5,
            )?;
            check_conv_forward::<bf16>(
                &dnn,
                layout,
                [2, 16, 10, 10],
                [8, 16, 3, 3],
                Conv2d::padded(1),
                1.6e-2,
                6,
            )?;
        }
        Ok(())
    });
}

#[test]
fn convolution_backward_data_and_filter_against_references() {
    on_gpu("convolution_backward", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let conv = Conv2d {
            pad: [1, 2],
            stride: [2, 1],
            dilation: [1, 1],
            math: MathType::Fma,
            ..Conv2d::default()
        };
        for layout in [Layout::Nchw, Layout::Nhwc] {
            let (xd, wd) = ([2, 3, 9, 8], [4, 3, 3, 5]);
            let mut rng = Lcg::new(7);
            let x = Host::random(xd, &mut rng).rounded::<f32>();
            let w = Host::random(wd, &mut rng).rounded::<f32>();
            let yd = conv.output_dims(xd, wd)?;
            let g = Host::random(yd, &mut rng).rounded::<f32>();
            let x_desc = TensorDesc::<f32>::new(layout, xd[0], xd[1], xd[2], xd[3])?;
            let w_desc = FilterDesc::<f32>::new(layout, wd[0], wd[1], wd[2], wd[3])?;
            let y_desc = TensorDesc::<f32>::new(layout, yd[0], yd[1], yd[2], yd[3])?;
            let mut conv_desc = ConvDesc::<f32>::new(conv)?;
            let (dx_in, dw_in, dg) = (
                pack_tensor(&x_desc, &x),
                pack_filter(&w_desc, &w),
                pack_tensor(&y_desc, &g),
            );
            // Backward data.
            let want = conv_backward_data_ref(&g, &w, xd, &conv);
            let mut grad_x = MemoryBlock::<f32>::alloc(x_desc.len())?;
            for search in [Search::Heuristic, Search::Exhaustive] {
                let algos =
                    dnn.conv_backward_data_algos(&w_desc, &y_desc, &conv_desc, &x_desc, search)?;
                let perf = algos
                    .iter()
                    .find(|p| p.math == MathType::Fma)
                    .ok_or("no FMA backward-data algorithm")?;
                conv_desc.set_math(perf.math)?;
                dnn.conv_backward_data(
                    1.0,
                    &w_desc,
                    &dw_in,
                    &y_desc,
                    &dg,
                    &conv_desc,
                    perf.algo,
                    0.0,
                    &x_desc,
                    &mut grad_x,
                )?;
                let got = unpack_tensor(&x_desc, &mut grad_x);
                assert_close(
                    &format!("conv backward data {layout:?} {search:?} {:?}", perf.algo),
                    &got,
                    &want,
                    1e-5,
                );
            }
            // Backward filter.
            let want = conv_backward_filter_ref(&x, &g, wd, &conv);
            let mut grad_w = MemoryBlock::<f32>::alloc(w_desc.len())?;
            for search in [Search::Heuristic, Search::Exhaustive] {
                let algos =
                    dnn.conv_backward_filter_algos(&x_desc, &y_desc, &conv_desc, &w_desc, search)?;
                let perf = algos
                    .iter()
                    .find(|p| p.math == MathType::Fma)
                    .ok_or("no FMA backward-filter algorithm")?;
                conv_desc.set_math(perf.math)?;
                dnn.conv_backward_filter(
                    1.0,
                    &x_desc,
                    &dx_in,
                    &y_desc,
                    &dg,
                    &conv_desc,
                    perf.algo,
                    0.0,
                    &w_desc,
                    &mut grad_w,
                )?;
                let got = unpack_filter(&w_desc, &mut grad_w);
                assert_close(
                    &format!("conv backward filter {layout:?} {search:?} {:?}", perf.algo),
                    &got,
                    &want,
                    1e-5,
                );
            }
        }
        Ok(())
    });
}

#[test]
fn convolution_workspace_sizes_are_asked_once_per_geometry_and_algorithm() {
    on_gpu("convolution_workspace_cache", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let conv = Conv2d {
            math: MathType::Fma,
            ..Conv2d::padded(1)
        };
        let (xd, wd) = ([2, 8, 9, 9], [4, 8, 3, 3]);
        let mut rng = Lcg::new(17);
        let x = Host::random(xd, &mut rng).rounded::<f32>();
        let w = Host::random(wd, &mut rng).rounded::<f32>();
        let want = conv_ref(&x, &w, &conv);
        let yd = want.dims;
        let x_desc = TensorDesc::<f32>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        let w_desc = FilterDesc::<f32>::new(Layout::Nchw, wd[0], wd[1], wd[2], wd[3])?;
        let y_desc = TensorDesc::<f32>::new(Layout::Nchw, yd[0], yd[1], yd[2], yd[3])?;
        let mut conv_desc = ConvDesc::<f32>::new(conv)?;
        let (dx, dw) = (pack_tensor(&x_desc, &x), pack_filter(&w_desc, &w));
        let mut dy = MemoryBlock::<f32>::alloc(y_desc.len())?;
        let algos =
            dnn.conv_forward_algos(&x_desc, &w_desc, &conv_desc, &y_desc, Search::Heuristic)?;
        let perf = *algos
            .iter()
            .find(|p| p.math == MathType::Fma)
            .ok_or("no FMA forward algorithm")?;
        assert_eq!(dnn.cached_workspace_sizes(), 0);
        // Three calls on one geometry: one size asked, the result right each time.
        for round in 0..3 {
            dy.memset_device_bytes(0)?;
            dnn.conv_forward(
                1.0, &x_desc, &dx, &w_desc, &dw, &conv_desc, perf.algo, 0.0, &y_desc, &mut dy,
            )?;
            let got = unpack_tensor(&y_desc, &mut dy);
            assert_close(&format!("cached conv, call {round}"), &got, &want, 1e-5);
            assert_eq!(dnn.cached_workspace_sizes(), 1, "after call {round}");
        }
        let bytes = dnn.conv_forward_workspace(&x_desc, &w_desc, &conv_desc, &y_desc, perf.algo)?;
        assert_eq!(dnn.cached_workspace_sizes(), 1);
        assert!(dnn.workspace_len() >= bytes);
        // Another math type is another key (its size may differ), and so is another pass.
        conv_desc.set_math(MathType::Default)?;
        dnn.conv_forward_workspace(&x_desc, &w_desc, &conv_desc, &y_desc, perf.algo)?;
        assert_eq!(dnn.cached_workspace_sizes(), 2);
        conv_desc.set_math(MathType::Fma)?;
        let data_algos =
            dnn.conv_backward_data_algos(&w_desc, &y_desc, &conv_desc, &x_desc, Search::Heuristic)?;
        let data = data_algos.first().ok_or("no backward-data algorithm")?;
        dnn.conv_backward_data_workspace(&w_desc, &y_desc, &conv_desc, &x_desc, data.algo)?;
        assert_eq!(dnn.cached_workspace_sizes(), 3);
        // A new descriptor with the same contents reuses the size.
        let again = TensorDesc::<f32>::new(Layout::Nchw, yd[0], yd[1], yd[2], yd[3])?;
        dnn.conv_forward_workspace(&x_desc, &w_desc, &conv_desc, &again, perf.algo)?;
        assert_eq!(dnn.cached_workspace_sizes(), 3);
        Ok(())
    });
}

fn pool_ref(
    x: &Host,
    mode: PoolMode,
    window: [usize; 2],
    pad: [usize; 2],
    stride: [usize; 2],
) -> Host {
    let [n, c, h, w] = x.dims;
    let out = |size: usize, i: usize| (size + 2 * pad[i] - window[i]) / stride[i] + 1;
    let mut y = Host::zeros([n, c, out(h, 0), out(w, 1)]);
    for o in Host::each(y.dims) {
        let [a, b, p, q] = o;
        let mut vals = Vec::new();
        for i in 0..window[0] {
            for j in 0..window[1] {
                let hh = (p * stride[0] + i) as isize - pad[0] as isize;
                let ww = (q * stride[1] + j) as isize - pad[1] as isize;
                if hh >= 0 && ww >= 0 && hh < h as isize && ww < w as isize {
                    vals.push(x.at([a, b, hh as usize, ww as usize]));
                }
            }
        }
        let v = match mode {
            PoolMode::Max | PoolMode::MaxDeterministic => {
                vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
            }
            PoolMode::AverageIncludePadding => {
                vals.iter().sum::<f64>() / (window[0] * window[1]) as f64
            }
            PoolMode::AverageExcludePadding => vals.iter().sum::<f64>() / vals.len() as f64,
        };
        let j = y.idx(o);
        y.data[j] = v;
    }
    y
}

#[test]
fn pooling_max_and_average_against_references() {
    on_gpu("pooling", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let mut rng = Lcg::new(8);
        let xd = [2, 3, 9, 10];
        let x = Host::random(xd, &mut rng).rounded::<f32>();
        for layout in [Layout::Nchw, Layout::Nhwc] {
            let x_desc = TensorDesc::<f32>::new(layout, xd[0], xd[1], xd[2], xd[3])?;
            let dx = pack_tensor(&x_desc, &x);
            for (mode, window, pad, stride) in [
                (PoolMode::Max, [2, 2], [0, 0], [2, 2]),
                (PoolMode::Max, [3, 3], [1, 1], [2, 2]),
                (PoolMode::AverageIncludePadding, [3, 2], [1, 1], [1, 2]),
                (PoolMode::AverageExcludePadding, [3, 3], [1, 1], [2, 2]),
            ] {
                let want = pool_ref(&x, mode, window, pad, stride);
                let pool = PoolDesc::new(mode, window, pad, stride)?;
                let yd = pool.output_dims(xd)?;
                assert_eq!(yd, want.dims);
                let y_desc = TensorDesc::<f32>::new(layout, yd[0], yd[1], yd[2], yd[3])?;
                let mut dy = MemoryBlock::<f32>::alloc(y_desc.len())?;
                dnn.pooling_forward(&pool, 1.0, &x_desc, &dx, 0.0, &y_desc, &mut dy)?;
                let got = unpack_tensor(&y_desc, &mut dy);
                assert_close(
                    &format!("pooling {mode:?} {window:?} {layout:?}"),
                    &got,
                    &want,
                    1e-6,
                );
            }
        }
        // f16 max pooling is exact (a selection).
        let xh = x.rounded::<f16>();
        let x_desc = TensorDesc::<f16>::new(Layout::Nhwc, xd[0], xd[1], xd[2], xd[3])?;
        let pool = PoolDesc::new(PoolMode::Max, [2, 2], [0, 0], [2, 2])?;
        let yd = pool.output_dims(xd)?;
        let y_desc = TensorDesc::<f16>::new(Layout::Nhwc, yd[0], yd[1], yd[2], yd[3])?;
        let mut dy = MemoryBlock::<f16>::alloc(y_desc.len())?;
        dnn.pooling_forward(
            &pool,
            1.0,
            &x_desc,
            &pack_tensor(&x_desc, &xh),
            0.0,
            &y_desc,
            &mut dy,
        )?;
        let got = unpack_tensor(&y_desc, &mut dy);
        assert_close(
            "pooling max f16",
            &got,
            &pool_ref(&xh, PoolMode::Max, [2, 2], [0, 0], [2, 2]),
            0.0,
        );
        Ok(())
    });
}

#[test]
fn activations_against_references() {
    on_gpu("activations", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let mut rng = Lcg::new(9);
        let xd = [2, 4, 5, 6];
        let x = Host {
            dims: xd,
            data: rng.vec(240).iter().map(|v| 4.0 * v).collect(),
        }
        .rounded::<f32>();
        let x_desc = TensorDesc::<f32>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        // The output in NHWC: the strides of x and y may differ.
        let y_desc = TensorDesc::<f32>::new(Layout::Nhwc, xd[0], xd[1], xd[2], xd[3])?;
        let dx = pack_tensor(&x_desc, &x);
        let mut dy = MemoryBlock::<f32>::alloc(y_desc.len())?;
        type Case = (Activation, fn(f64) -> f64);
        let cases: [Case; 5] = [
            (Activation::Relu, |v| v.max(0.0)),
            (Activation::ClippedRelu(1.5), |v| v.clamp(0.0, 1.5)),
            (Activation::Sigmoid, |v| 1.0 / (1.0 + (-v).exp())),
            (Activation::Tanh, f64::tanh),
            (Activation::Elu(0.7), |v| {
                if v >= 0.0 { v } else { 0.7 * (v.exp() - 1.0) }
            }),
        ];
        for (act, f) in cases {
            dnn.activation_forward(act, 1.0, &x_desc, &dx, 0.0, &y_desc, &mut dy)?;
            let got = unpack_tensor(&y_desc, &mut dy);
            let want = Host {
                dims: xd,
                data: x.data.iter().map(|&v| f(v)).collect(),
            };
            assert_close(&format!("activation {act:?}"), &got, &want, 1e-6);
        }
        // bf16 ReLU is exact.
        let xb = x.rounded::<bf16>();
        let xb_desc = TensorDesc::<bf16>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        let mut yb = MemoryBlock::<bf16>::alloc(xb_desc.len())?;
        dnn.activation_forward(
            Activation::Relu,
            1.0,
            &xb_desc,
            &pack_tensor(&xb_desc, &xb),
            0.0,
            &xb_desc,
            &mut yb,
        )?;
        let got = unpack_tensor(&xb_desc, &mut yb);
        let want = Host {
            dims: xd,
            data: xb.data.iter().map(|v| v.max(0.0)).collect(),
        };
        assert_close("activation Relu bf16", &got, &want, 0.0);
        Ok(())
    });
}

fn softmax_ref(x: &Host, mode: SoftmaxMode, log: bool) -> Host {
    let [n, c, h, w] = x.dims;
    let mut y = Host::zeros(x.dims);
    let groups: Vec<Vec<[usize; 4]>> = match mode {
        SoftmaxMode::Channel => (0..n)
            .flat_map(|a| {
                (0..h)
                    .flat_map(move |d| (0..w).map(move |e| (0..c).map(|b| [a, b, d, e]).collect()))
            })
            .collect(),
        SoftmaxMode::Instance => (0..n)
            .map(|a| {
                Host::each([1, c, h, w])
                    .map(|[_, b, d, e]| [a, b, d, e])
                    .collect()
            })
            .collect(),
    };
    for g in groups {
        let m = g.iter().map(|&i| x.at(i)).fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = g.iter().map(|&i| (x.at(i) - m).exp()).sum();
        for i in g {
            let j = y.idx(i);
            y.data[j] = if log {
                x.at(i) - m - s.ln()
            } else {
                (x.at(i) - m).exp() / s
            };
        }
    }
    y
}

#[test]
fn softmax_against_references() {
    on_gpu("softmax", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let mut rng = Lcg::new(10);
        let xd = [3, 7, 2, 5];
        let x = Host {
            dims: xd,
            data: rng.vec(210).iter().map(|v| 5.0 * v).collect(),
        }
        .rounded::<f32>();
        let desc = TensorDesc::<f32>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        let dx = pack_tensor(&desc, &x);
        let mut dy = MemoryBlock::<f32>::alloc(desc.len())?;
        for (algo, mode) in [
            (SoftmaxAlgo::Accurate, SoftmaxMode::Channel),
            (SoftmaxAlgo::Fast, SoftmaxMode::Channel),
            (SoftmaxAlgo::Accurate, SoftmaxMode::Instance),
            (SoftmaxAlgo::Log, SoftmaxMode::Channel),
        ] {
            dnn.softmax_forward(algo, mode, 1.0, &desc, &dx, 0.0, &desc, &mut dy)?;
            let got = unpack_tensor(&desc, &mut dy);
            let want = softmax_ref(&x, mode, algo == SoftmaxAlgo::Log);
            assert_close(&format!("softmax {algo:?} {mode:?}"), &got, &want, 1e-5);
        }
        Ok(())
    });
}

/// Per-channel (spatial) mean and biased variance of `x`.
fn channel_stats(x: &Host) -> (Vec<f64>, Vec<f64>) {
    let [n, c, h, w] = x.dims;
    let count = (n * h * w) as f64;
    let mut mean = vec![0.0; c];
    let mut var = vec![0.0; c];
    for i in Host::each(x.dims) {
        mean[i[1]] += x.at(i) / count;
    }
    for i in Host::each(x.dims) {
        var[i[1]] += (x.at(i) - mean[i[1]]).powi(2) / count;
    }
    (mean, var)
}

#[test]
fn batch_norm_inference_and_training_against_references() {
    on_gpu("batch_norm", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let mut rng = Lcg::new(11);
        let xd = [4, 3, 5, 6];
        let c = xd[1];
        let x = Host {
            dims: xd,
            data: rng.vec(360).iter().map(|v| 3.0 * v + 0.5).collect(),
        }
        .rounded::<f32>();
        let scale: Vec<f32> = (0..c).map(|i| 0.5 + i as f32 * 0.25).collect();
        let bias: Vec<f32> = (0..c).map(|i| i as f32 * 0.1 - 0.1).collect();
        let mean: Vec<f32> = (0..c).map(|i| 0.2 * i as f32).collect();
        let var: Vec<f32> = (0..c).map(|i| 1.0 + 0.5 * i as f32).collect();
        let eps = 1e-5;
        for layout in [Layout::Nchw, Layout::Nhwc] {
            let desc = TensorDesc::<f32>::new(layout, xd[0], xd[1], xd[2], xd[3])?;
            let params = desc.batch_norm_params(BatchNormMode::Spatial)?;
            assert_eq!(params.dims(), [1, c, 1, 1]);
            let dx = pack_tensor(&desc, &x);
            let (ds, db, dm, dv) = (upload(&scale), upload(&bias), upload(&mean), upload(&var));
            let mut dy = MemoryBlock::<f32>::alloc(desc.len())?;
            dnn.batch_norm_inference(
                BatchNormMode::Spatial,
                &desc,
                &dx,
                &desc,
                &mut dy,
                &params,
                &ds,
                &db,
                &dm,
                &dv,
                eps,
            )?;
            let got = unpack_tensor(&desc, &mut dy);
            let want = Host {
                dims: xd,
                data: Host::each(xd)
                    .map(|i| {
                        let k = i[1];
                        scale[k] as f64 * (x.at(i) - mean[k] as f64) / (var[k] as f64 + eps).sqrt()
                            + bias[k] as f64
                    })
                    .collect(),
            };
            assert_close(
                &format!("batch norm inference {layout:?}"),
                &got,
                &want,
                1e-5,
            );

            // Training: batch statistics, running averages with momentum 0.1.
            let (bm, bv) = channel_stats(&x);
            let count = (xd[0] * xd[2] * xd[3]) as f64;
            let mut run_mean = upload(&mean);
            let mut run_var = upload(&var);
            let mut save_mean = MemoryBlock::<f32>::alloc(c)?;
            let mut save_inv = MemoryBlock::<f32>::alloc(c)?;
            let momentum = 0.1;
            dnn.batch_norm_training(
                BatchNormMode::Spatial,
                &desc,
                &dx,
                &desc,
                &mut dy,
                &params,
                &ds,
                &db,
                momentum,
                BatchNormStats {
                    running_mean: run_mean.as_device_slice_mut()?,
                    running_var: run_var.as_device_slice_mut()?,
                    save_mean: Some(save_mean.as_device_slice_mut()?),
                    save_inv_var: Some(save_inv.as_device_slice_mut()?),
                },
                eps,
            )?;
            let got = unpack_tensor(&desc, &mut dy);
            let want = Host {
                dims: xd,
                data: Host::each(xd)
                    .map(|i| {
                        let k = i[1];
                        scale[k] as f64 * (x.at(i) - bm[k]) / (bv[k] + eps).sqrt() + bias[k] as f64
                    })
                    .collect(),
            };
            assert_close(
                &format!("batch norm training {layout:?}"),
                &got,
                &want,
                1e-5,
            );
            let f = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
            let want_rm: Vec<f64> = (0..c).map(|k| 0.9 * mean[k] as f64 + 0.1 * bm[k]).collect();
            let want_rv: Vec<f64> = (0..c)
                .map(|k| 0.9 * var[k] as f64 + 0.1 * bv[k] * count / (count - 1.0))
                .collect();
            let want_inv: Vec<f64> = (0..c).map(|k| 1.0 / (bv[k] + eps).sqrt()).collect();
            for (what, got, want) in [
                ("running mean", f(download(&mut run_mean)), want_rm),
                ("running variance", f(download(&mut run_var)), want_rv),
                ("saved mean", f(download(&mut save_mean)), bm.clone()),
                (
                    "saved inverse deviation",
                    f(download(&mut save_inv)),
                    want_inv,
                ),
            ] {
                let e = rel_err(got.iter().copied(), &want);
                assert!(
                    e < 1e-5,
                    "batch norm {what} {layout:?}: {e:.3e} ({got:?} vs {want:?})"
                );
            }
        }
        // Per-activation mode: parameters of C × H × W.
        let desc = TensorDesc::<f32>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        let params = desc.batch_norm_params(BatchNormMode::PerActivation)?;
        assert_eq!(params.dims(), [1, c, xd[2], xd[3]]);
        let per = xd[1] * xd[2] * xd[3];
        let ones = upload(&vec![1.0f32; per]);
        let zeros = upload(&vec![0.0f32; per]);
        let mut dy = MemoryBlock::<f32>::alloc(desc.len())?;
        dnn.batch_norm_inference(
            BatchNormMode::PerActivation,
            &desc,
            &pack_tensor(&desc, &x),
            &desc,
            &mut dy,
            &params,
            &ones,
            &zeros,
            &zeros,
            &ones,
            eps,
        )?;
        let got = unpack_tensor(&desc, &mut dy);
        let want = Host {
            dims: xd,
            data: x.data.iter().map(|v| v / (1.0 + eps).sqrt()).collect(),
        };
        assert_close("batch norm per activation", &got, &want, 1e-6);
        Ok(())
    });
}

#[test]
fn wrong_sizes_and_mismatched_descriptors_are_errors() {
    on_gpu("cudnn_errors", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let invalid = |r: Result<(), Error>, what: &str, needle: &str| match r {
            Err(Error::InvalidArgument { reason, .. }) => {
                assert!(reason.contains(needle), "{what}: {reason}")
            }
            other => panic!("{what}: expected InvalidArgument, got {other:?}"),
        };
        let x_desc = TensorDesc::<f32>::new(Layout::Nchw, 1, 3, 8, 8)?;
        let w_desc = FilterDesc::<f32>::new(Layout::Nchw, 4, 3, 3, 3)?;
        let conv = ConvDesc::<f32>::new(Conv2d::padded(1))?;
        let y_desc = TensorDesc::<f32>::new(Layout::Nchw, 1, 4, 8, 8)?;
        let wrong_y = TensorDesc::<f32>::new(Layout::Nchw, 1, 4, 6, 6)?;
        let x = MemoryBlock::<f32>::alloc(x_desc.len())?;
        let short_x = MemoryBlock::<f32>::alloc(x_desc.len() - 1)?;
        let w = MemoryBlock::<f32>::alloc(w_desc.len())?;
        let mut y = MemoryBlock::<f32>::alloc(y_desc.len())?;
        let algo =
            dnn.conv_forward_algos(&x_desc, &w_desc, &conv, &y_desc, Search::Heuristic)?[0].algo;
        invalid(
            dnn.conv_forward(
                1.0, &x_desc, &x, &w_desc, &w, &conv, algo, 0.0, &wrong_y, &mut y,
            ),
            "output of the wrong size",
            "the output is [1, 4, 6, 6]",
        );
        invalid(
            dnn.conv_forward(
                1.0, &x_desc, &short_x, &w_desc, &w, &conv, algo, 0.0, &y_desc, &mut y,
            ),
            "short input block",
            "its memory has 191",
        );
        let w5 = FilterDesc::<f32>::new(Layout::Nchw, 4, 5, 3, 3)?;
        invalid(
            dnn.conv_forward(1.0, &x_desc, &x, &w5, &w, &conv, algo, 0.0, &y_desc, &mut y),
            "channel mismatch",
            "3 channels",
        );
        invalid(
            dnn.conv_forward_algos(&x_desc, &w_desc, &conv, &wrong_y, Search::Exhaustive)
                .map(drop),
            "search with a wrong output",
            "the output is",
        );
        let mut short_dx = MemoryBlock::<f32>::alloc(10)?;
        invalid(
            dnn.conv_backward_data(
                1.0,
                &w_desc,
                &w,
                &y_desc,
                &y,
                &conv,
                chorus_cuda_libs::cudnn::BwdDataAlgo::Algo1,
                0.0,
                &x_desc,
                &mut short_dx,
            ),
            "short dx",
            "dx is",
        );
        let pool = PoolDesc::new(PoolMode::Max, [2, 2], [0, 0], [2, 2])?;
        invalid(
            dnn.pooling_forward(&pool, 1.0, &x_desc, &x, 0.0, &y_desc, &mut y),
            "pooling output",
            "pooling a [1, 3, 8, 8] input gives [1, 3, 4, 4]",
        );
        invalid(
            dnn.activation_forward(Activation::Relu, 1.0, &x_desc, &x, 0.0, &y_desc, &mut y),
            "activation shape",
            "must match",
        );
        invalid(
            dnn.softmax_forward(
                SoftmaxAlgo::Accurate,
                SoftmaxMode::Channel,
                1.0,
                &y_desc,
                &short_x,
                0.0,
                &y_desc,
                &mut y,
            ),
            "softmax short",
            "x is",
        );
        let params = y_desc.batch_norm_params(BatchNormMode::Spatial)?;
        let wrong_params = x_desc.batch_norm_params(BatchNormMode::Spatial)?;
        let p4 = upload(&[1.0f32; 4]);
        let p2 = upload(&[1.0f32; 2]);
        let mut y2 = MemoryBlock::<f32>::alloc(y_desc.len())?;
        invalid(
            dnn.batch_norm_inference(
                BatchNormMode::Spatial,
                &y_desc,
                &y2,
                &y_desc,
                &mut y,
                &wrong_params,
                &p4,
                &p4,
                &p4,
                &p4,
                1e-5,
            ),
            "batch norm parameter descriptor",
            "needs [1, 4, 1, 1]",
        );
        invalid(
            dnn.batch_norm_inference(
                BatchNormMode::Spatial,
                &y_desc,
                &y2,
                &y_desc,
                &mut y,
                &params,
                &p4,
                &p2,
                &p4,
                &p4,
                1e-5,
            ),
            "batch norm short bias",
            "bias is",
        );
        invalid(
            dnn.batch_norm_inference(
                BatchNormMode::Spatial,
                &y_desc,
                &y2,
                &y_desc,
                &mut y,
                &params,
                &p4,
                &p4,
                &p4,
                &p4,
                1e-7,
            ),
            "batch norm epsilon",
            "below cuDNN's minimum",
        );
        let mut rm = upload(&[0.0f32; 4]);
        let mut rv = upload(&[1.0f32; 4]);
        invalid(
            dnn.batch_norm_training(
                BatchNormMode::Spatial,
                &y_desc,
                &y2,
                &y_desc,
                &mut y,
                &params,
                &p4,
                &p4,
                1.5,
                BatchNormStats {
                    running_mean: rm.as_device_slice_mut()?,
                    running_var: rv.as_device_slice_mut()?,
                    save_mean: None,
                    save_inv_var: None,
                },
                1e-5,
            ),
            "batch norm momentum",
            "momentum",
        );
        // Invalid shapes never reach cuDNN.
        assert!(matches!(
            TensorDesc::<f32>::new(Layout::Nchw, 1, 0, 2, 2),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            ConvDesc::<f32>::new(Conv2d {
                stride: [0, 1],
                ..Conv2d::default()
            }),
            Err(Error::InvalidArgument { .. })
        ));
        // A status from cuDNN itself: f64 data is not supported in NHWC by any algorithm, or
        // cuDNN rejects an overlapping-stride tensor; either way a Status error naming cuDNN.
        let overlapping = TensorDesc::<f32>::with_strides([2, 2, 2, 2], [1, 1, 1, 1]);
        if let Err(e) = &overlapping {
            assert!(
                matches!(
                    e,
                    Error::Status {
                        library: "cuDNN",
                        ..
                    }
                ),
                "{e}"
            );
            eprintln!("overlapping strides: {e}");
        }
        y2.memset_device_bytes(0)?;
        Ok(())
    });
}

/// The f32 inputs and outputs of one PyTorch comparison, as little-endian f32 files.
fn write_f32(path: &std::path::Path, v: &[f64]) -> std::io::Result<()> {
    let bytes: Vec<u8> = v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect();
    std::fs::write(path, bytes)
}

fn read_f32(path: &std::path::Path) -> std::io::Result<Vec<f64>> {
    let b = std::fs::read(path)?;
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
        .collect())
}

/// PyTorch's results on the same inputs: conv2d, max_pool2d, avg_pool2d, softmax, batch_norm
/// (training), computed on the GPU in f32 with TF32 off. Runs only where a Python with torch
/// is found; under `CHORUS_REQUIRE_GPU=1` without one it says it skipped.
#[test]
fn matches_pytorch_on_the_same_inputs() {
    on_gpu("matches_pytorch", |_| {
        let python = std::env::var("CHORUS_PYTHON").unwrap_or_else(|_| "python3".into());
        let has_torch = std::process::Command::new(&python)
            .args([
                "-c",
                "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)",
            ])
            .status()
            .is_ok_and(|s| s.success());
        if !has_torch {
            eprintln!("skipped the PyTorch comparison: no {python} with torch and CUDA");
            return Ok(());
        }
        let dir = std::env::temp_dir().join(format!("chorus-cudnn-torch-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut rng = Lcg::new(12);
        let (xd, wd) = ([2, 8, 14, 12], [6, 8, 3, 3]);
        let conv = Conv2d {
            pad: [1, 1],
            stride: [2, 1],
            math: MathType::Fma,
            ..Conv2d::default()
        };
        let x = Host::random(xd, &mut rng).rounded::<f32>();
        let w = Host::random(wd, &mut rng).rounded::<f32>();
        write_f32(&dir.join("x.bin"), &x.data)?;
        write_f32(&dir.join("w.bin"), &w.data)?;
        let shape = |d: [usize; 4]| format!("({}, {}, {}, {})", d[0], d[1], d[2], d[3]);
        let script = format!(
            r#"
import torch, torch.nn.functional as F
torch.backends.cudnn.allow_tf32 = False
d = {dir:?}
def load(name, shape):
    return torch.frombuffer(bytearray(open(d + '/' + name, 'rb').read()), dtype=torch.float32).reshape(shape).cuda()
x = load('x.bin', {xs})
w = load('w.bin', {ws})
out = {{
  'conv': F.conv2d(x, w, stride=(2, 1), padding=(1, 1)),
  'maxpool': F.max_pool2d(x, 3, stride=2, padding=1),
  'avgpool': F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
  'softmax': F.softmax(x, dim=1),
  'bn': F.batch_norm(x, torch.zeros(8, device='cuda'), torch.ones(8, device='cuda'), training=True, momentum=0.1, eps=1e-5),
}}
for k, v in out.items():
    open(d + '/' + k + '.bin', 'wb').write(bytes(v.detach().float().cpu().contiguous().view(torch.uint8).flatten().tolist()))
"#,
            dir = dir.display().to_string(),
            xs = shape(xd),
            ws = shape(wd),
        );
        let status = std::process::Command::new(&python)
            .args(["-c", &script])
            .status()?;
        assert!(status.success(), "the PyTorch script failed: {status}");
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let torch = |name: &str, dims: [usize; 4]| -> Result<Host, Box<dyn std::error::Error>> {
            let data = read_f32(&dir.join(format!("{name}.bin")))?;
            assert_eq!(data.len(), dims.iter().product::<usize>(), "{name}");
            Ok(Host { dims, data })
        };
        let x_desc = TensorDesc::<f32>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        let dx = pack_tensor(&x_desc, &x);
        // Convolution.
        let w_desc = FilterDesc::<f32>::new(Layout::Nchw, wd[0], wd[1], wd[2], wd[3])?;
        let mut conv_desc = ConvDesc::<f32>::new(conv)?;
        let yd = conv_desc.output_dims(&x_desc, &w_desc)?;
        let y_desc = TensorDesc::<f32>::new(Layout::Nchw, yd[0], yd[1], yd[2], yd[3])?;
        let perf = *dnn
            .conv_forward_algos(&x_desc, &w_desc, &conv_desc, &y_desc, Search::Heuristic)?
            .iter()
            .find(|p| p.math == MathType::Fma)
            .ok_or("no FMA algorithm")?;
        conv_desc.set_math(perf.math)?;
        let mut dy = MemoryBlock::<f32>::alloc(y_desc.len())?;
        dnn.conv_forward(
            1.0,
            &x_desc,
            &dx,
            &w_desc,
            &pack_filter(&w_desc, &w),
            &conv_desc,
            perf.algo,
            0.0,
            &y_desc,
            &mut dy,
        )?;
        let got = unpack_tensor(&y_desc, &mut dy);
        assert_close("conv2d vs PyTorch", &got, &torch("conv", yd)?, 1e-5);
        assert_close(
            "conv2d reference vs PyTorch",
            &conv_ref(&x, &w, &conv),
            &torch("conv", yd)?,
            1e-5,
        );
        // Pooling.
        for (name, mode) in [
            ("maxpool", PoolMode::Max),
            ("avgpool", PoolMode::AverageExcludePadding),
        ] {
            let pool = PoolDesc::new(mode, [3, 3], [1, 1], [2, 2])?;
            let pd = pool.output_dims(xd)?;
            let p_desc = TensorDesc::<f32>::new(Layout::Nchw, pd[0], pd[1], pd[2], pd[3])?;
            let mut dp = MemoryBlock::<f32>::alloc(p_desc.len())?;
            dnn.pooling_forward(&pool, 1.0, &x_desc, &dx, 0.0, &p_desc, &mut dp)?;
            assert_close(
                &format!("{name} vs PyTorch"),
                &unpack_tensor(&p_desc, &mut dp),
                &torch(name, pd)?,
                1e-6,
            );
        }
        // Softmax over channels.
        let mut ds = MemoryBlock::<f32>::alloc(x_desc.len())?;
        dnn.softmax_forward(
            SoftmaxAlgo::Accurate,
            SoftmaxMode::Channel,
            1.0,
            &x_desc,
            &dx,
            0.0,
            &x_desc,
            &mut ds,
        )?;
        assert_close(
            "softmax vs PyTorch",
            &unpack_tensor(&x_desc, &mut ds),
            &torch("softmax", xd)?,
            1e-5,
        );
        // Batch norm, training mode.
        let params = x_desc.batch_norm_params(BatchNormMode::Spatial)?;
        let ones = upload(&[1.0f32; 8]);
        let zeros = upload(&[0.0f32; 8]);
        let mut rm = upload(&[0.0f32; 8]);
        let mut rv = upload(&[1.0f32; 8]);
        let mut db = MemoryBlock::<f32>::alloc(x_desc.len())?;
        dnn.batch_norm_training(
            BatchNormMode::Spatial,
            &x_desc,
            &dx,
            &x_desc,
            &mut db,
            &params,
            &ones,
            &zeros,
            0.1,
            BatchNormStats {
                running_mean: rm.as_device_slice_mut()?,
                running_var: rv.as_device_slice_mut()?,
                save_mean: None,
                save_inv_var: None,
            },
            1e-5,
        )?;
        assert_close(
            "batch_norm vs PyTorch",
            &unpack_tensor(&x_desc, &mut db),
            &torch("bn", xd)?,
            1e-5,
        );
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    });
}

#[test]
fn backward_passes_of_pooling_activation_softmax_and_batch_norm() {
    on_gpu("backward_passes", |_| {
        let stream = Stream::null();
        let dnn = Dnn::new(&stream)?;
        let mut rng = Lcg::new(13);
        let xd = [2, 3, 6, 8];
        let x = Host::random(xd, &mut rng).rounded::<f32>();
        let g = Host::random(xd, &mut rng).rounded::<f32>();
        let desc = TensorDesc::<f32>::new(Layout::Nchw, xd[0], xd[1], xd[2], xd[3])?;
        let (dx_in, dg) = (pack_tensor(&desc, &x), pack_tensor(&desc, &g));
        let mut y = MemoryBlock::<f32>::alloc(desc.len())?;
        let mut grad = MemoryBlock::<f32>::alloc(desc.len())?;

        // Activations: dx = f'(x)·dy.
        type Derivative = (Activation, fn(f64, f64) -> f64); // (x, y) -> f'
        let cases: [Derivative; 3] = [
            (Activation::Relu, |x, _| if x > 0.0 { 1.0 } else { 0.0 }),
            (Activation::Sigmoid, |_, y| y * (1.0 - y)),
            (Activation::Tanh, |_, y| 1.0 - y * y),
        ];
        for (act, d) in cases {
            dnn.activation_forward(act, 1.0, &desc, &dx_in, 0.0, &desc, &mut y)?;
            let yh = unpack_tensor(&desc, &mut y);
            dnn.activation_backward(act, &desc, &dx_in, &y, &dg, &mut grad)?;
            let got = unpack_tensor(&desc, &mut grad);
            let want = Host {
                dims: xd,
                data: (0..x.data.len())
                    .map(|i| d(x.data[i], yh.data[i]) * g.data[i])
                    .collect(),
            };
            assert_close(&format!("activation backward {act:?}"), &got, &want, 1e-6);
        }

        // Softmax over channels: dx = y·(dy − Σ dy·y); log: dx = dy − eʸ·Σ dy.
        for algo in [SoftmaxAlgo::Accurate, SoftmaxAlgo::Log] {
            dnn.softmax_forward(
                algo,
                SoftmaxMode::Channel,
                1.0,
                &desc,
                &dx_in,
                0.0,
                &desc,
                &mut y,
            )?;
            let yh = unpack_tensor(&desc, &mut y);
            dnn.softmax_backward(algo, SoftmaxMode::Channel, &desc, &y, &dg, &mut grad)?;
            let got = unpack_tensor(&desc, &mut grad);
            let mut want = Host::zeros(xd);
            for n in 0..xd[0] {
                for h in 0..xd[2] {
                    for w in 0..xd[3] {
                        let at = |c: usize| [n, c, h, w];
                        let s: f64 = (0..xd[1])
                            .map(|c| {
                                if algo == SoftmaxAlgo::Log {
                                    g.at(at(c))
                                } else {
                                    g.at(at(c)) * yh.at(at(c))
                                }
                            })
                            .sum();
                        for c in 0..xd[1] {
                            let j = want.idx(at(c));
                            want.data[j] = if algo == SoftmaxAlgo::Log {
                                g.at(at(c)) - yh.at(at(c)).exp() * s
                            } else {
                                yh.at(at(c)) * (g.at(at(c)) - s)
                            };
                        }
                    }
                }
            }
            assert_close(&format!("softmax backward {algo:?}"), &got, &want, 1e-5);
        }

        // Pooling: max routes each gradient to its window's maximum, average spreads it.
        for mode in [PoolMode::Max, PoolMode::AverageIncludePadding] {
            let (window, pad, stride) = ([2, 2], [0, 0], [2, 2]);
            let pool = PoolDesc::new(mode, window, pad, stride)?;
            let yd = pool.output_dims(xd)?;
            let y_desc = TensorDesc::<f32>::new(Layout::Nchw, yd[0], yd[1], yd[2], yd[3])?;
            let mut py = MemoryBlock::<f32>::alloc(y_desc.len())?;
            dnn.pooling_forward(&pool, 1.0, &desc, &dx_in, 0.0, &y_desc, &mut py)?;
            let gy = Host::random(yd, &mut rng).rounded::<f32>();
            let dgy = pack_tensor(&y_desc, &gy);
            dnn.pooling_backward(&pool, &desc, &dx_in, &y_desc, &py, &dgy, &mut grad)?;
            let got = unpack_tensor(&desc, &mut grad);
            let mut want = Host::zeros(xd);
            for o in Host::each(yd) {
                let [n, c, p, q] = o;
                let cells: Vec<[usize; 4]> = (0..2)
                    .flat_map(|i| (0..2).map(move |j| [n, c, 2 * p + i, 2 * q + j]))
                    .collect();
                if mode == PoolMode::Max {
                    let best = cells
                        .iter()
                        .copied()
                        .fold(cells[0], |b, i| if x.at(i) > x.at(b) { i } else { b });
                    let j = want.idx(best);
                    want.data[j] += gy.at(o);
                } else {
                    for i in cells {
                        let j = want.idx(i);
                        want.data[j] += gy.at(o) / 4.0;
                    }
                }
            }
            assert_close(&format!("pooling backward {mode:?}"), &got, &want, 1e-6);
        }

        // Batch norm (spatial): with x̂ = (x − μ)/σ, dβ = Σ dy, dγ = Σ dy·x̂,
        // dx = γ/(σ·m)·(m·dy − dβ − x̂·dγ) over the m = N·H·W values of each channel.
        let c = xd[1];
        let params = desc.batch_norm_params(BatchNormMode::Spatial)?;
        let scale: Vec<f32> = (0..c).map(|i| 0.75 + 0.5 * i as f32).collect();
        let ds = upload(&scale);
        let mut d_scale = MemoryBlock::<f32>::alloc(c)?;
        let mut d_bias = MemoryBlock::<f32>::alloc(c)?;
        let eps = 1e-5;
        let (mean, var) = channel_stats(&x);
        let m = (xd[0] * xd[2] * xd[3]) as f64;
        let inv: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let xhat = |i: [usize; 4]| (x.at(i) - mean[i[1]]) * inv[i[1]];
        let mut db = vec![0.0; c];
        let mut dgam = vec![0.0; c];
        for i in Host::each(xd) {
            db[i[1]] += g.at(i);
            dgam[i[1]] += g.at(i) * xhat(i);
        }
        let want_dx = Host {
            dims: xd,
            data: Host::each(xd)
                .map(|i| {
                    let k = i[1];
                    scale[k] as f64 * inv[k] / m * (m * g.at(i) - db[k] - xhat(i) * dgam[k])
                })
                .collect(),
        };
        let saved_mean = upload(&f32s(&mean));
        let saved_inv = upload(&f32s(&inv));
        for saved in [false, true] {
            let stats = if saved {
                Some((saved_mean.as_device_slice()?, saved_inv.as_device_slice()?))
            } else {
                None
            };
            dnn.batch_norm_backward(
                BatchNormMode::Spatial,
                &desc,
                &dx_in,
                &dg,
                &mut grad,
                &params,
                &ds,
                &mut d_scale,
                &mut d_bias,
                eps,
                stats,
            )?;
            let got = unpack_tensor(&desc, &mut grad);
            assert_close(
                &format!("batch norm backward dx (saved {saved})"),
                &got,
                &want_dx,
                1e-5,
            );
            let f = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
            let e_scale = rel_err(f(download(&mut d_scale)), &dgam);
            let e_bias = rel_err(f(download(&mut d_bias)), &db);
            assert!(
                e_scale < 1e-5 && e_bias < 1e-5,
                "batch norm backward d_scale {e_scale:.2e}, d_bias {e_bias:.2e}"
            );
        }
        // A short gradient block is refused before cuDNN is called.
        let mut short = MemoryBlock::<f32>::alloc(desc.len() - 1)?;
        assert!(matches!(
            dnn.activation_backward(Activation::Relu, &desc, &dx_in, &y, &dg, &mut short),
            Err(Error::InvalidArgument { .. })
        ));
        Ok(())
    });
}
