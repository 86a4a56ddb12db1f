//! nvJPEG on the GPU (skipped without a GPU; a failure under `CHORUS_REQUIRE_GPU=1`), against
//! an independent encoder (`jpeg-encoder`) and reference decoder (`zune-jpeg`).
//!
//! Tolerances (8-bit levels): decoders differ in their IDCT's rounding and, for subsampled
//! chroma, in the upsampling filter. On the smooth test images: 4:4:4, largest difference ≤ 4
//! and mean ≤ 0.5 against zune-jpeg; 4:2:0, largest ≤ 12 and mean ≤ 1.5 (images under 32 pixels
//! a side, whose borders dominate: ≤ 20 and mean ≤ 6). A round trip through
//! nvJPEG's encoder at quality 95 keeps PSNR ≥ 32 dB against the original.

#![cfg(feature = "nvjpeg")]

mod common;

use chorus_cuda_libs::nvjpeg::{self, Backend, Decoded, EncodeParams, Jpeg, Layout, Subsampling};
use chorus_cuda_libs::{Error, Image};
use chorus_driver::Stream;
use common::on_gpu;
use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

type R = Result<(), Box<dyn std::error::Error>>;

/// A smooth RGB image with some structure (sines, a gradient, a disc).
fn test_image(w: usize, h: usize, seed: f64) -> Vec<u8> {
    let mut v = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let disc = ((fx - 0.5).powi(2) + (fy - 0.5).powi(2) < 0.06) as u8 as f64;
            v.push((127.0 + 90.0 * (5.0 * fx + seed).sin() + 30.0 * disc) as u8);
            v.push((127.0 + 90.0 * (4.0 * fy - seed).cos()) as u8);
            v.push((40.0 + 180.0 * fx * (1.0 - fy)) as u8);
        }
    }
    v
}

fn encode_ref(rgb: &[u8], w: usize, h: usize, quality: u8, sampling: SamplingFactor) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = Encoder::new(&mut out, quality);
    enc.set_sampling_factor(sampling);
    enc.encode(rgb, w as u16, h as u16, ColorType::Rgb)
        .expect("jpeg-encoder");
    out
}

fn decode_ref(jpeg: &[u8]) -> Vec<u8> {
    let mut d = zune_jpeg::JpegDecoder::new(zune_jpeg::zune_core::bytestream::ZCursor::new(jpeg));
    d.decode().expect("zune-jpeg")
}

/// (largest, mean) absolute difference.
fn diff(a: &[u8], b: &[u8]) -> (u8, f64) {
    assert_eq!(a.len(), b.len());
    let max = a
        .iter()
        .zip(b)
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap_or(0);
    let sum: u64 = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y) as u64).sum();
    (max, sum as f64 / a.len() as f64)
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

#[test]
fn nvjpeg_is_available_or_not_found_cleanly() {
    let available = nvjpeg::is_available();
    match nvjpeg::LIBRARY.ensure() {
        Ok(()) => {
            assert!(available);
            // Loading the table needs no GPU.
            let (major, minor, patch) = nvjpeg::version().expect("nvJPEG's version");
            eprintln!("nvJPEG {major}.{minor}.{patch} loaded");
            assert!(major >= 11);
        }
        Err(Error::LibraryNotFound { library, searched }) => {
            assert!(!available);
            assert_eq!(library, "nvJPEG");
            assert!(searched.contains("libnvjpeg"), "{searched}");
            let stream = Stream::null();
            assert!(matches!(
                Jpeg::new(&stream),
                Err(Error::LibraryNotFound { .. })
            ));
            assert!(matches!(
                nvjpeg::version(),
                Err(Error::LibraryNotFound { .. })
            ));
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn decodes_jpegs_of_another_encoder_like_a_reference_decoder() {
    on_gpu("decode", |_ctx| -> R {
        let (major, minor, patch) = nvjpeg::version()?;
        eprintln!("nvJPEG {major}.{minor}.{patch}");
        let stream = Stream::new()?;
        let mut jpeg = Jpeg::new(&stream)?;
        for (w, h, sampling, css, max_tol, mean_tol) in [
            (160, 120, SamplingFactor::R_4_4_4, Subsampling::S444, 4, 0.5),
            (97, 61, SamplingFactor::R_4_4_4, Subsampling::S444, 4, 0.5),
            (
                160,
                120,
                SamplingFactor::R_4_2_0,
                Subsampling::S420,
                12,
                1.5,
            ),
            (97, 61, SamplingFactor::R_4_2_0, Subsampling::S420, 12, 1.5),
        ] {
            let rgb = test_image(w, h, 0.3);
            let file = encode_ref(&rgb, w, h, 92, sampling);
            let info = jpeg.image_info(&file)?;
            assert_eq!((info.width, info.height, info.components), (w, h, 3));
            assert_eq!(info.subsampling, css);
            let reference = decode_ref(&file);
            for layout in [Layout::Interleaved, Layout::Planar] {
                let mut out = jpeg.decode(&file, layout)?;
                assert_eq!(out.size(), (w, h));
                let got = out.download_rgb()?;
                let (max, mean) = diff(&got, &reference);
                eprintln!(
                    "{w}×{h} {css:?} {layout:?}: against zune-jpeg largest {max}, mean {mean:.3}"
                );
                assert!(
                    max <= max_tol && mean <= mean_tol,
                    "{w}×{h} {css:?} {layout:?}: {max}, {mean}"
                );
            }
        }
        Ok(())
    });
}

#[test]
fn round_trips_through_the_encoder() {
    on_gpu("round_trip", |_ctx| -> R {
        let stream = Stream::null();
        let mut jpeg = Jpeg::new(&stream)?;
        let (w, h) = (200, 150);
        let rgb = test_image(w, h, 1.1);
        let src = Image::from_host(w, h, 3, &rgb)?;
        let mut sizes = Vec::new();
        for (quality, css) in [
            (95, Subsampling::S444),
            (95, Subsampling::S420),
            (30, Subsampling::S420),
        ] {
            let params = EncodeParams {
                quality,
                subsampling: css,
                optimized_huffman: false,
            };
            let file = jpeg.encode(src.view(), params)?;
            assert_eq!(&file[..2], &[0xFF, 0xD8], "SOI");
            let info = jpeg.image_info(&file)?;
            assert_eq!((info.width, info.height, info.subsampling), (w, h, css));
            let back = jpeg.decode(&file, Layout::Interleaved)?.download_rgb()?;
            let p = psnr(&back, &rgb);
            // The file decodes the same with the reference decoder.
            let (max, mean) = diff(&back, &decode_ref(&file));
            eprintln!(
                "q{quality} {css:?}: {} bytes, PSNR {p:.1} dB; nvJPEG against zune-jpeg on it: largest {max}, mean {mean:.3}",
                file.len()
            );
            if quality == 95 {
                assert!(p >= 32.0, "PSNR {p}");
            }
            assert!(max <= 12 && mean <= 1.5);
            sizes.push(file.len());
        }
        assert!(
            sizes[2] < sizes[1],
            "quality 30 should be smaller than 95: {sizes:?}"
        );
        // Planar input, optimised Huffman tables.
        let planes: Vec<Image<u8>> = (0..3)
            .map(|c| {
                Image::from_host(
                    w,
                    h,
                    1,
                    &rgb.iter().skip(c).step_by(3).copied().collect::<Vec<_>>(),
                )
            })
            .collect::<Result<_, _>>()?;
        let params = EncodeParams {
            quality: 95,
            subsampling: Subsampling::S444,
            optimized_huffman: true,
        };
        let file = jpeg.encode_planar(
            [planes[0].view(), planes[1].view(), planes[2].view()],
            params,
        )?;
        let back = jpeg.decode(&file, Layout::Interleaved)?.download_rgb()?;
        let p = psnr(&back, &rgb);
        eprintln!(
            "planar q95 4:4:4 optimised: {} bytes, PSNR {p:.1} dB",
            file.len()
        );
        assert!(p >= 32.0);
        // Bad parameters are refused before nvJPEG.
        let bad = EncodeParams {
            quality: 0,
            ..params
        };
        assert!(matches!(
            jpeg.encode(src.view(), bad),
            Err(Error::InvalidArgument { .. })
        ));
        Ok(())
    });
}

#[test]
fn batched_decode_of_images_of_several_sizes() {
    on_gpu("batched", |_ctx| -> R {
        let stream = Stream::new()?;
        let sizes = [(128, 96), (64, 64), (200, 120), (33, 17), (128, 96)];
        let originals: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &(w, h))| test_image(w, h, i as f64))
            .collect();
        let files: Vec<Vec<u8>> = sizes
            .iter()
            .zip(&originals)
            .map(|(&(w, h), rgb)| encode_ref(rgb, w, h, 90, SamplingFactor::R_4_2_0))
            .collect();
        let refs: Vec<Vec<u8>> = files.iter().map(|f| decode_ref(f)).collect();
        let slices: Vec<&[u8]> = files.iter().map(|f| f.as_slice()).collect();
        for backend in [Backend::Default, Backend::GpuHybrid, Backend::Hardware] {
            let mut jpeg = match Jpeg::with_backend(&stream, backend) {
                Ok(j) => j,
                Err(e) if backend == Backend::Hardware => {
                    eprintln!("no hardware backend here: {e}");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            // The JPEG engines take images of at least 64 pixels a side here.
            let chosen: Vec<usize> = (0..sizes.len())
                .filter(|&i| backend != Backend::Hardware || sizes[i].0.min(sizes[i].1) >= 64)
                .collect();
            let batch: Vec<&[u8]> = chosen.iter().map(|&i| slices[i]).collect();
            for layout in [Layout::Interleaved, Layout::Planar] {
                // Twice: the second batch reuses the initialised state.
                for round in 0..2 {
                    let mut outs = jpeg.decode_batch(&batch, layout)?;
                    for (&i, out) in chosen.iter().zip(outs.iter_mut()) {
                        assert_eq!(out.size(), sizes[i]);
                        let got = out.download_rgb()?;
                        let (max, mean) = diff(&got, &refs[i]);
                        if round == 0 {
                            eprintln!(
                                "{backend:?} {layout:?} image {i} {:?}: largest {max}, mean {mean:.3}",
                                sizes[i]
                            );
                        }
                        // Tiny images: the chroma upsampling at their borders dominates.
                        let (max_tol, mean_tol) = if sizes[i].0.min(sizes[i].1) < 32 {
                            (20, 6.0)
                        } else {
                            (12, 1.5)
                        };
                        assert!(
                            max <= max_tol && mean <= mean_tol,
                            "{backend:?} {layout:?} {i}: {max} {mean}"
                        );
                    }
                }
            }
            // A batch of a different size initialises again.
            let mut two = jpeg.decode_batch(&slices[..2], Layout::Interleaved)?;
            assert_eq!(two[1].download_rgb()?.len(), 64 * 64 * 3);
        }
        Ok(())
    });
}

#[test]
fn corrupt_input_is_an_error() {
    on_gpu("corrupt", |_ctx| -> R {
        let stream = Stream::null();
        let mut jpeg = Jpeg::new(&stream)?;
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let e = jpeg.decode(&garbage, Layout::Interleaved).unwrap_err();
        eprintln!("garbage: {e}");
        assert!(
            matches!(
                e,
                Error::Status {
                    library: "nvJPEG",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(matches!(
            jpeg.image_info(&[]),
            Err(Error::InvalidArgument { .. })
        ));
        // A JPEG start marker followed by garbage.
        let mut bad = vec![0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x03];
        bad.extend_from_slice(&garbage[..64]);
        let e = jpeg.decode(&bad, Layout::Interleaved).unwrap_err();
        eprintln!("SOI + garbage: {e}");
        assert!(
            matches!(e, Error::Status { .. } | Error::InvalidArgument { .. }),
            "{e:?}"
        );
        // A truncated file: an error, or an image of the right size (nvJPEG may fill the rest).
        let (w, h) = (96, 64);
        let file = encode_ref(&test_image(w, h, 0.0), w, h, 90, SamplingFactor::R_4_2_0);
        match jpeg.decode(&file[..file.len() / 2], Layout::Interleaved) {
            Ok(mut out) => {
                eprintln!("truncated: decoded (as nvJPEG allows)");
                assert_eq!(out.download_rgb()?.len(), w * h * 3);
            }
            Err(e) => eprintln!("truncated: {e}"),
        }
        // The handle still works afterwards.
        let good = jpeg.decode(&file, Layout::Interleaved)?.download_rgb()?;
        assert_eq!(good.len(), w * h * 3);
        // Wrong output sizes are refused.
        let mut small = Decoded::Interleaved(Image::new(w - 1, h, 3)?);
        assert!(matches!(
            jpeg.decode_into(&file, &mut small),
            Err(Error::InvalidArgument { .. })
        ));
        Ok(())
    });
}
