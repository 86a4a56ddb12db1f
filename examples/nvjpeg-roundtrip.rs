//! nvJPEG round trip: a generated 1920×1080 RGB image is encoded on the GPU (quality 90, 4:2:0
//! and 4:4:4), decoded back (single and as a batch of 8, interleaved and planar), and checked:
//! PSNR against the original ≥ 30 dB (single and batched), the planar decode within 1 level of the
//! interleaved one, the batched decode ≥ 40 dB against the single one (it may run on the JPEG engines).
//! Prints the sizes, the time of each step and the rates.
//!
//! `cargo run --release --example nvjpeg-roundtrip` (needs the CUDA backend and nvJPEG).

use chorus_cuda_libs::nvjpeg::{EncodeParams, Jpeg, Layout, Subsampling};
use chorus_cuda_libs::{Image, Stream};
use chorus_examples::banner;
use std::process::ExitCode;
use std::time::Instant;

const W: usize = 1920;
const H: usize = 1080;

fn pattern() -> Vec<u8> {
    let mut v = Vec::with_capacity(W * H * 3);
    for y in 0..H {
        for x in 0..W {
            let (fx, fy) = (x as f64 / W as f64, y as f64 / H as f64);
            let wave = (fx * 23.0).sin() * (fy * 17.0).cos();
            v.push((128.0 + 100.0 * wave) as u8);
            v.push((255.0 * fy) as u8);
            v.push((255.0 * (1.0 - fx) * (0.5 + 0.5 * wave)) as u8);
        }
    }
    v
}

fn psnr(a: &[u8], b: &[u8]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("nvjpeg-roundtrip")?;
    if backend != chorus::Backend::Cuda {
        println!("skipped: nvJPEG needs the CUDA backend");
        return Ok(true);
    }
    let stream = Stream::new()?;
    let mut jpeg = Jpeg::new(&stream)?;
    let (major, minor, patch) = chorus_cuda_libs::nvjpeg::version()?;
    println!("nvJPEG {major}.{minor}.{patch}");
    let rgb = pattern();
    let src = Image::from_host(W, H, 3, &rgb)?;
    let mut ok = true;
    for subsampling in [Subsampling::S420, Subsampling::S444] {
        let params = EncodeParams {
            quality: 90,
            subsampling,
            optimized_huffman: false,
        };
        jpeg.encode(src.view(), params)?; // warm-up
        let t = Instant::now();
        let file = jpeg.encode(src.view(), params)?;
        let encode_s = t.elapsed().as_secs_f64();
        jpeg.decode(&file, Layout::Interleaved)?.download_rgb()?; // warm-up
        let t = Instant::now();
        let mut single = jpeg.decode(&file, Layout::Interleaved)?;
        stream.synchronize()?;
        let decode_s = t.elapsed().as_secs_f64();
        let single = single.download_rgb()?;
        let p = psnr(&single, &rgb);
        let planar = jpeg.decode(&file, Layout::Planar)?.download_rgb()?;
        let batch: Vec<&[u8]> = (0..8).map(|_| file.as_slice()).collect();
        jpeg.decode_batch(&batch, Layout::Interleaved)?; // warm-up
        let t = Instant::now();
        let mut outs = jpeg.decode_batch(&batch, Layout::Interleaved)?;
        stream.synchronize()?;
        let batch_s = t.elapsed().as_secs_f64();
        let largest = |a: &[u8], b: &[u8]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.abs_diff(*y))
                .max()
                .unwrap_or(0)
        };
        // The batched decode may run on the JPEG engines (the default backend sends batches
        // there on A100/H100/H200) while the single one runs on the CUDA cores: two IDCTs (the
        // JPEG standard lets them differ by a level per sample) and two chroma upsamplers
        // (4:2:0), so they are compared by PSNR, each against the input and with each other,
        // not by their largest difference.
        let (mut batch_diff, mut batch_psnr, mut batch_vs_single) =
            (0, f64::INFINITY, f64::INFINITY);
        for out in &mut outs {
            let got = out.download_rgb()?;
            batch_diff = batch_diff.max(largest(&got, &single));
            batch_psnr = batch_psnr.min(psnr(&got, &rgb));
            batch_vs_single = batch_vs_single.min(psnr(&got, &single));
        }
        let planar_diff = largest(&planar, &single);
        println!(
            "{subsampling:?} q90: {} bytes ({:.1}:1), PSNR {p:.1} dB; encode {:.2} ms ({:.0} Mpixel/s), decode {:.2} ms ({:.0} Mpixel/s), batch of 8 {:.2} ms ({:.0} images/s, {:.0} MB/s of JPEG); planar against interleaved: largest difference {planar_diff}; batch: PSNR {batch_psnr:.1} dB, against single {batch_vs_single:.1} dB (largest difference {batch_diff})",
            file.len(),
            (W * H * 3) as f64 / file.len() as f64,
            encode_s * 1e3,
            (W * H) as f64 / encode_s / 1e6,
            decode_s * 1e3,
            (W * H) as f64 / decode_s / 1e6,
            batch_s * 1e3,
            8.0 / batch_s,
            8.0 * file.len() as f64 / batch_s / 1e6
        );
        // Planar and interleaved come from one decoder (within a level of rounding). Batch
        // against single: 40 dB is an RMS difference of 2.6 levels, above what two compliant
        // IDCTs and upsamplers differ by and far below a wrong decode (< 30 dB).
        ok &= p >= 30.0 && planar_diff <= 1 && batch_psnr >= 30.0 && batch_vs_single >= 40.0;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "nvjpeg-roundtrip",
        "nvJPEG encode and decode of a generated image, checked by PSNR",
    );
    chorus_examples::exit_code("nvjpeg-roundtrip", run())
}
