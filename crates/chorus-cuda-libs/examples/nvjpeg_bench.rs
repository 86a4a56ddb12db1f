//! nvJPEG decode throughput through Chorus: a batch of 1080p JPEGs (made here by nvJPEG's
//! encoder, quality 90, 4:2:0, from a synthetic image with texture) decoded to interleaved RGB
//! in one batched call per repetition, for each backend the device has. Prints images/s, MB/s
//! of JPEG input and Mpixel/s of output, from the wall clock over `REPS` batches after warm-up.
//!
//! `--write DIR` also writes the JPEGs there, for the C baseline (`examples/c/nvjpeg_decode_bench.c`,
//! the same nvJPEG calls from C on the same files) to decode in the same run.
//!
//! Stage and run on the GPU machine: `helper-stage NAME nvjpeg_bench --examples -p
//! chorus-cuda-libs --example nvjpeg_bench`, then `run.sh --bin nvjpeg_bench [--write DIR]`.

use chorus_cuda_libs::nvjpeg::{Backend, Decoded, EncodeParams, Jpeg, Subsampling};
use chorus_cuda_libs::{Error, Image};
use chorus_driver::{Context, Stream};
use std::process::ExitCode;
use std::time::Instant;

const WIDTH: usize = 1920;
const HEIGHT: usize = 1080;
const BATCH: usize = 32;
const REPS: usize = 10;

/// A 1080p frame with smooth regions, edges and fine texture (so the JPEG has a realistic size).
fn frame(seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 56) as f64
    };
    let mut v = Vec::with_capacity(WIDTH * HEIGHT * 3);
    let s = seed as f64;
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let (fx, fy) = (x as f64 / WIDTH as f64, y as f64 / HEIGHT as f64);
            let tile = (((x / 64) + (y / 64)) % 2) as f64 * 40.0;
            let n = noise() / 255.0 * 24.0;
            v.push((80.0 + 80.0 * (6.0 * fx + s).sin() + tile + n).clamp(0.0, 255.0) as u8);
            v.push((90.0 + 70.0 * (5.0 * fy - s).cos() + n).clamp(0.0, 255.0) as u8);
            v.push((40.0 + 150.0 * fx * fy + tile * 0.5 + n).clamp(0.0, 255.0) as u8);
        }
    }
    v
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let write_dir = match std::env::args().nth(1).as_deref() {
        Some("--write") => Some(std::env::args().nth(2).ok_or("--write needs a directory")?),
        Some(other) => return Err(format!("unknown argument {other}").into()),
        None => None,
    };
    let _ctx = Context::new(0)?;
    let stream = Stream::new()?;
    let (major, minor, patch) = chorus_cuda_libs::nvjpeg::version()?;
    println!(
        "nvJPEG {major}.{minor}.{patch} on {}",
        chorus_driver::device_name(0)?
    );
    // The batch: a few distinct frames, encoded once each by nvJPEG.
    let mut files = Vec::new();
    {
        let mut encoder = Jpeg::new(&stream)?;
        let params = EncodeParams {
            quality: 90,
            subsampling: Subsampling::S420,
            optimized_huffman: false,
        };
        for i in 0..BATCH {
            let src = Image::from_host(WIDTH, HEIGHT, 3, &frame(i as u64 + 1))?;
            files.push(encoder.encode(src.view(), params)?);
        }
    }
    let bytes: usize = files.iter().map(Vec::len).sum();
    println!(
        "batch: {BATCH} JPEGs of {WIDTH}×{HEIGHT}, 4:2:0, quality 90, {:.1} MB ({:.0} KB each)",
        bytes as f64 / 1e6,
        bytes as f64 / BATCH as f64 / 1e3
    );
    if let Some(dir) = &write_dir {
        std::fs::create_dir_all(dir)?;
        for (i, f) in files.iter().enumerate() {
            std::fs::write(format!("{dir}/frame_{i:03}.jpg"), f)?;
        }
        println!("wrote the batch to {dir}");
    }
    let slices: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    for backend in [Backend::Default, Backend::GpuHybrid, Backend::Hardware] {
        let mut jpeg = match Jpeg::with_backend(&stream, backend) {
            Ok(j) => j,
            Err(e @ Error::Status { .. }) => {
                println!("{backend:?}: not available here ({e})");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut outs = (0..BATCH)
            .map(|_| Ok(Decoded::Interleaved(Image::new(WIDTH, HEIGHT, 3)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        for _ in 0..2 {
            jpeg.decode_batch_into(&slices, &mut outs)?;
        }
        stream.synchronize()?;
        let start = Instant::now();
        for _ in 0..REPS {
            jpeg.decode_batch_into(&slices, &mut outs)?;
        }
        stream.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        let images = (BATCH * REPS) as f64;
        // Check one output: the decode of frame 0 is close to the frame.
        let got = outs[0].download_rgb()?;
        let want = frame(1);
        let mean = got
            .iter()
            .zip(&want)
            .map(|(a, b)| a.abs_diff(*b) as f64)
            .sum::<f64>()
            / want.len() as f64;
        if mean > 8.0 {
            return Err(
                format!("{backend:?}: decoded frame 0 differs by {mean:.2} on average").into(),
            );
        }
        println!(
            "chorus nvJPEG {backend:?}: {:.1} ms per batch of {BATCH}, {:.0} images/s, {:.0} MB/s of JPEG, {:.0} Mpixel/s (mean error {mean:.2} levels)",
            seconds * 1e3 / REPS as f64,
            images / seconds,
            (bytes * REPS) as f64 / seconds / 1e6,
            images * (WIDTH * HEIGHT) as f64 / seconds / 1e6
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvjpeg_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
