//! Rotates an RGBA8 image by 30° about its centre with the texture unit's bilinear filtering:
//! the image is a texture over a 2-D array of `uchar4`, read as normalized floats with linear
//! filtering and a transparent border, one thread per output pixel. The result is checked
//! against a CPU reference that filters with exact weights; the texture unit's 1.8 fixed-point
//! weights keep every channel within 1/128 of it.
//!
//! `cargo run --release --example texture-rotate` runs it on the GPU if there is one, else on
//! the CPU executor (which reproduces the texture unit). It exits with status 1 on a wrong
//! result.

use chorus::{
    AddressMode, ChannelFormat, ChannelType, Direction, FilterMode, Float4, Launch, MemoryBlock,
    ReadMode, Texture, TextureArray, TextureDesc,
};
use chorus_examples::banner;
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel rotate (void ((out float4*) (image texture-object) (width int) (height int)
                             (c float) (s float)))
      (let* ((x (+ (* block-idx-x block-dim-x) thread-idx-x))
             (y (+ (* block-idx-y block-dim-y) thread-idx-y)))
        (if (and (< x width) (< y height))
            (let* ((cx (* 0.5 (float width)))
                   (cy (* 0.5 (float height)))
                   (dx (- (+ (float x) 0.5) cx))
                   (dy (- (+ (float y) 0.5) cy))
                   (u (+ (+ (* c dx) (* s dy)) cx))
                   (v (+ (- (* c dy) (* s dx)) cy)))
              (set (aref out (+ x (* y width))) (tex2d float4 image u v))))))
}

const WIDTH: usize = 256;
const HEIGHT: usize = 192;
/// The largest difference allowed per channel: two steps of the 1.8 fixed-point weights.
const TOLERANCE: f64 = 1.0 / 128.0;

/// A test card: colour gradients, a checkerboard and a disc, all four channels used.
fn test_card() -> Vec<[u8; 4]> {
    let mut pixels = Vec::with_capacity(WIDTH * HEIGHT);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let checker = ((x / 16 + y / 16) % 2) as u8 * 255;
            let (dx, dy) = (x as f64 - 128.0, y as f64 - 96.0);
            let disc = if dx * dx + dy * dy < 60.0 * 60.0 {
                255
            } else {
                64
            };
            pixels.push([x as u8, (y * 255 / HEIGHT) as u8, checker, disc]);
        }
    }
    pixels
}

/// The rotated image, filtered with exact bilinear weights on the host.
fn reference(pixels: &[[u8; 4]], c: f32, s: f32) -> Vec<[f64; 4]> {
    let texel = |i: i64, j: i64, k: usize| -> f64 {
        if (0..WIDTH as i64).contains(&i) && (0..HEIGHT as i64).contains(&j) {
            f64::from(pixels[j as usize * WIDTH + i as usize][k]) / 255.0
        } else {
            0.0
        }
    };
    let (cx, cy) = (0.5 * WIDTH as f32, 0.5 * HEIGHT as f32);
    let mut out = Vec::with_capacity(WIDTH * HEIGHT);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let (dx, dy) = (x as f32 + 0.5 - cx, y as f32 + 0.5 - cy);
            let u = f64::from(c * dx + s * dy + cx) - 0.5;
            let v = f64::from(c * dy - s * dx + cy) - 0.5;
            let (i, j) = (u.floor(), v.floor());
            let (a, b) = (u - i, v - j);
            let (i, j) = (i as i64, j as i64);
            out.push(std::array::from_fn(|k| {
                (1.0 - a) * (1.0 - b) * texel(i, j, k)
                    + a * (1.0 - b) * texel(i + 1, j, k)
                    + (1.0 - a) * b * texel(i, j + 1, k)
                    + a * b * texel(i + 1, j + 1, k)
            }));
        }
    }
    out
}

fn run() -> chorus::Result<bool> {
    banner("texture-rotate")?;
    let pixels = test_card();
    let format = ChannelFormat::new(ChannelType::U8, 4)?;
    let mut array = TextureArray::alloc(format, [WIDTH, HEIGHT, 0])?;
    array.upload(&pixels.concat())?;
    let desc = TextureDesc::default()
        .with_filter(FilterMode::Linear)
        .with_address(AddressMode::Border)
        .with_read_mode(ReadMode::NormalizedFloat);
    let texture = Texture::from_array(&array, &desc)?;
    let mut out = MemoryBlock::<Float4>::alloc(WIDTH * HEIGHT)?;
    let angle = 30f32.to_radians();
    let (c, s) = (angle.cos(), angle.sin());
    rotate(
        &mut out,
        texture.as_arg(),
        WIDTH as i32,
        HEIGHT as i32,
        c,
        s,
        Launch::grid((WIDTH.div_ceil(16), HEIGHT.div_ceil(16))).block((16, 16)),
    )?;
    out.sync(Direction::DeviceToHost)?;
    let expected = reference(&pixels, c, s);
    let mut worst = (0.0f64, 0usize);
    for (i, (got, want)) in out.as_slice().iter().zip(&expected).enumerate() {
        let got = [got.x, got.y, got.z, got.w];
        for k in 0..4 {
            let error = (f64::from(got[k]) - want[k]).abs();
            if error > worst.0 || error.is_nan() {
                worst = (error, i);
            }
        }
    }
    let (error, at) = worst;
    println!(
        "{WIDTH} × {HEIGHT} RGBA8 image rotated by 30°: largest channel error {error:.2e} at pixel ({}, {})",
        at % WIDTH,
        at / WIDTH
    );
    if error <= TOLERANCE {
        println!("verification succeeded (tolerance {TOLERANCE:.2e})");
        Ok(true)
    } else {
        println!("verification failed: tolerance {TOLERANCE:.2e}");
        Ok(false)
    }
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "texture-rotate",
        "Rotates an image with bilinear texture filtering, checked against a CPU reference",
    );
    chorus_examples::exit_code("texture-rotate", run())
}
