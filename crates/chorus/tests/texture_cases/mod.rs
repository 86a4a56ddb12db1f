//! Texture and surface programs run the same way on any backend: `texture.rs` runs them on the
//! CPU executor, `texture_gpu.rs` on the GPU and compares with the CPU.
//!
//! Each texture case is an image (an array, linear memory or pitched memory), a descriptor and
//! a kernel reading it at coordinates drawn from a fixed generator (inside and outside the
//! image); each surface case a kernel reading and writing a surface. They cover every filter,
//! address and read mode, and every surface boundary mode but a trap that fires (which would
//! end a GPU context).

#![allow(dead_code)]

use chorus::{
    AddressMode, Arg, ChannelFormat, ChannelType, FilterMode, Float4, Launch, MemoryBlock, Program,
    ReadMode, Surface, Texture, TextureArray, TextureDesc, f16,
};

/// The kernels (shared with chorus-cpu's tests).
pub const KERNELS: &str = include_str!("../../../chorus-cpu/tests/texture_kernels.lisp");

/// The program of [`KERNELS`].
pub fn program() -> Program {
    Program::new(KERNELS, "texture_kernels.lisp").expect("the texture kernels compile")
}

/// A small deterministic generator (an LCG), so both backends see the same inputs.
pub struct Numbers(u64);

impl Numbers {
    pub fn new(seed: u64) -> Numbers {
        Numbers(
            seed.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        )
    }

    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    /// Uniform in [lo, hi).
    pub fn float(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() as f32 / (1u64 << 31) as f32)
    }

    /// Uniform in [lo, hi).
    pub fn int(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo) as u32) as i32
    }
}

/// What a texture reads.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// An array of `[w, h, d]`.
    Array([usize; 3]),
    /// `width` elements of linear memory.
    Linear(usize),
    /// `[width, height]` elements, rows `pitch` bytes apart.
    Pitch([usize; 2], usize),
}

/// One texture program.
#[derive(Clone, Debug)]
pub struct TextureCase {
    pub name: String,
    pub format: ChannelFormat,
    pub source: Source,
    /// The image's bytes (for pitched memory, with the padding).
    pub data: Vec<u8>,
    pub desc: TextureDesc,
    /// `sample-1d`, `sample-2d`, `sample-2d-float4`, `sample-2d-int`, `sample-3d`, `fetch-int`
    /// or `fetch-float`.
    pub kernel: &'static str,
    /// Coordinates (fetches: the first, as an integer).
    pub coords: Vec<[f32; 3]>,
    /// Whether backends must agree bit for bit (point filtering, fetches); otherwise within
    /// [`LINEAR_TOLERANCE`].
    pub exact: bool,
}

/// How far a linearly filtered value may differ between backends: one step of the 1.8
/// fixed-point weights on texels in [−1, 1] (the texture unit's own arithmetic).
pub const LINEAR_TOLERANCE: f32 = 2.0 / 256.0;

fn floats_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `n` texel values in [−1, 1) (floats), or random bytes of the format's size.
fn image_bytes(numbers: &mut Numbers, format: ChannelFormat, elements: usize) -> Vec<u8> {
    let channels = elements * usize::from(format.channels());
    match format.channel() {
        ChannelType::F32 => floats_bytes(
            &(0..channels)
                .map(|_| numbers.float(-1.0, 1.0))
                .collect::<Vec<_>>(),
        ),
        ChannelType::F16 => (0..channels)
            .flat_map(|_| {
                f16::from_f32(numbers.float(-1.0, 1.0))
                    .to_bits()
                    .to_le_bytes()
            })
            .collect(),
        other => (0..channels * other.size())
            .map(|_| numbers.int(0, 256) as u8)
            .collect(),
    }
}

fn coords(numbers: &mut Numbers, n: usize, lo: [f32; 3], hi: [f32; 3]) -> Vec<[f32; 3]> {
    (0..n)
        .map(|_| std::array::from_fn(|k| numbers.float(lo[k], hi[k])))
        .collect()
}

fn desc(filter: FilterMode, address: AddressMode, normalized: bool) -> TextureDesc {
    TextureDesc::default()
        .with_filter(filter)
        .with_address(address)
        .with_normalized_coords(normalized)
        .with_border_color([0.25, -0.5, 0.75, 1.0])
}

/// Every texture case.
pub fn texture_cases() -> Vec<TextureCase> {
    use AddressMode::*;
    use FilterMode::*;
    let mut numbers = Numbers::new(15);
    let mut cases = Vec::new();
    let f32x1 = ChannelFormat::scalar(ChannelType::F32);
    let n = 256;
    // 1-D arrays: every filter and address mode; unnormalized for clamp and border, both.
    for filter in [Point, Linear] {
        for (address, normalized) in [
            (Clamp, false),
            (Border, false),
            (Clamp, true),
            (Border, true),
            (Wrap, true),
            (Mirror, true),
        ] {
            let width = 13;
            let (lo, hi) = if normalized {
                ([-2.3, 0.0, 0.0], [2.7, 0.0, 0.0])
            } else {
                ([-4.0, 0.0, 0.0], [17.0, 0.0, 0.0])
            };
            cases.push(TextureCase {
                name: format!("1-D {filter:?} {address:?} normalized={normalized}"),
                format: f32x1,
                source: Source::Array([width, 0, 0]),
                data: image_bytes(&mut numbers, f32x1, width),
                desc: desc(filter, address, normalized),
                kernel: "sample-1d",
                coords: coords(&mut numbers, n, lo, hi),
                exact: filter == Point,
            });
        }
    }
    // 2-D arrays: every mode, float and float4.
    for filter in [Point, Linear] {
        for (address, normalized) in [
            (Clamp, false),
            (Border, false),
            (Wrap, true),
            (Mirror, true),
        ] {
            let [w, h] = [11, 7];
            let (lo, hi) = if normalized {
                ([-1.5, -1.5, 0.0], [2.5, 2.5, 0.0])
            } else {
                ([-3.0, -3.0, 0.0], [14.0, 10.0, 0.0])
            };
            cases.push(TextureCase {
                name: format!("2-D {filter:?} {address:?}"),
                format: f32x1,
                source: Source::Array([w, h, 0]),
                data: image_bytes(&mut numbers, f32x1, w * h),
                desc: desc(filter, address, normalized),
                kernel: "sample-2d",
                coords: coords(&mut numbers, n, lo, hi),
                exact: filter == Point,
            });
        }
    }
    let f32x4 = ChannelFormat::new(ChannelType::F32, 4).unwrap();
    cases.push(TextureCase {
        name: "2-D float4 Linear Clamp".into(),
        format: f32x4,
        source: Source::Array([9, 5, 0]),
        data: image_bytes(&mut numbers, f32x4, 45),
        desc: desc(Linear, Clamp, false),
        kernel: "sample-2d-float4",
        coords: coords(&mut numbers, n, [-1.0, -1.0, 0.0], [10.0, 6.0, 0.0]),
        exact: false,
    });
    // Normalized-float reads of 8- and 16-bit integers, point and linear.
    for (channel, channels) in [
        (ChannelType::U8, 4u8),
        (ChannelType::I8, 1),
        (ChannelType::U16, 1),
        (ChannelType::I16, 1),
    ] {
        for filter in [Point, Linear] {
            let format = ChannelFormat::new(channel, channels).unwrap();
            cases.push(TextureCase {
                name: format!("2-D {channel:?}x{channels} normalized-float {filter:?}"),
                format,
                source: Source::Array([6, 6, 0]),
                data: image_bytes(&mut numbers, format, 36),
                desc: desc(filter, Clamp, false).with_read_mode(ReadMode::NormalizedFloat),
                kernel: if channels == 4 {
                    "sample-2d-float4"
                } else {
                    "sample-2d"
                },
                coords: coords(&mut numbers, n, [-1.0, -1.0, 0.0], [7.0, 7.0, 0.0]),
                exact: filter == Point,
            });
        }
    }
    let f16x1 = ChannelFormat::scalar(ChannelType::F16);
    cases.push(TextureCase {
        name: "2-D half Linear Wrap".into(),
        format: f16x1,
        source: Source::Array([8, 4, 0]),
        data: image_bytes(&mut numbers, f16x1, 32),
        desc: desc(Linear, Wrap, true),
        kernel: "sample-2d",
        coords: coords(&mut numbers, n, [-1.0, -1.0, 0.0], [2.0, 2.0, 0.0]),
        exact: false,
    });
    let i32x1 = ChannelFormat::scalar(ChannelType::I32);
    cases.push(TextureCase {
        name: "2-D int element-type Point Border".into(),
        format: i32x1,
        source: Source::Array([5, 5, 0]),
        data: image_bytes(&mut numbers, i32x1, 25),
        desc: desc(Point, Border, false).with_border_color([0.0; 4]),
        kernel: "sample-2d-int",
        coords: coords(&mut numbers, n, [-2.0, -2.0, 0.0], [7.0, 7.0, 0.0]),
        exact: true,
    });
    // 3-D arrays.
    for (filter, address, normalized) in [
        (Point, Clamp, false),
        (Linear, Wrap, true),
        (Linear, Border, false),
    ] {
        let [w, h, d] = [5, 4, 3];
        let (lo, hi) = if normalized {
            ([-1.0; 3], [2.0; 3])
        } else {
            ([-1.0; 3], [6.0, 5.0, 4.0])
        };
        cases.push(TextureCase {
            name: format!("3-D {filter:?} {address:?}"),
            format: f32x1,
            source: Source::Array([w, h, d]),
            data: image_bytes(&mut numbers, f32x1, w * h * d),
            desc: desc(filter, address, normalized),
            kernel: "sample-3d",
            coords: coords(&mut numbers, n, lo, hi),
            exact: filter == Point,
        });
    }
    // Pitched memory: 10 floats a row, rows 64 bytes apart.
    for filter in [Point, Linear] {
        let (w, h, pitch) = (10, 6, 64);
        let mut data = image_bytes(&mut numbers, f32x1, pitch / 4 * h);
        data.truncate((h - 1) * pitch + w * 4);
        cases.push(TextureCase {
            name: format!("pitched 2-D {filter:?} Clamp"),
            format: f32x1,
            source: Source::Pitch([w, h], pitch),
            data,
            desc: desc(filter, Clamp, false),
            kernel: "sample-2d",
            coords: coords(&mut numbers, n, [-1.0, -1.0, 0.0], [11.0, 7.0, 0.0]),
            exact: filter == Point,
        });
    }
    // Linear memory: int and float fetches, inside and outside.
    for (format, kernel) in [(i32x1, "fetch-int"), (f32x1, "fetch-float")] {
        let width = 40;
        cases.push(TextureCase {
            name: format!("linear {kernel}"),
            format,
            source: Source::Linear(width),
            data: image_bytes(&mut numbers, format, width),
            desc: TextureDesc::default(),
            kernel,
            coords: (0..64).map(|i| [(i - 10) as f32, 0.0, 0.0]).collect(),
            exact: true,
        });
    }
    cases
}

/// Runs `case` on the current backend; the output's bytes.
pub fn run_texture_case(program: &Program, case: &TextureCase) -> chorus::Result<Vec<u8>> {
    let n = case.coords.len();
    let launch = || Launch::grid(n.div_ceil(64)).block(64);
    let axis = |k: usize| -> chorus::Result<MemoryBlock<f32>> {
        MemoryBlock::from_slice(&case.coords.iter().map(|c| c[k]).collect::<Vec<_>>())
    };
    // The image, and the texture over it (kept alive together).
    let mut array = None;
    let mut memory = None;
    match case.source {
        Source::Array(extent) => {
            let mut a = TextureArray::alloc(case.format, extent)?;
            a.upload(&case.data)?;
            array = Some(a);
        }
        Source::Linear(_) | Source::Pitch(..) => {
            memory = Some(MemoryBlock::from_slice(&case.data)?);
        }
    }
    let texture = match (case.source, &array, &memory) {
        (Source::Array(_), Some(a), _) => Texture::from_array(a, &case.desc)?,
        (Source::Linear(_), _, Some(m)) => Texture::from_linear(m, case.format, &case.desc)?,
        (Source::Pitch(extent, pitch), _, Some(m)) => {
            Texture::from_pitch2d(m, case.format, extent, pitch, &case.desc)?
        }
        _ => unreachable!("the image matches its source"),
    };
    let count = || Arg::value(n as i32);
    match case.kernel {
        "fetch-int" | "fetch-float" => {
            let is = MemoryBlock::from_slice(
                &case.coords.iter().map(|c| c[0] as i32).collect::<Vec<_>>(),
            )?;
            let inputs = vec![is.as_arg(), count()];
            if case.kernel == "fetch-int" {
                read_into::<i32>(program, case.kernel, n, &texture, inputs, launch())
            } else {
                read_into::<f32>(program, case.kernel, n, &texture, inputs, launch())
            }
        }
        "sample-1d" => {
            let xs = axis(0)?;
            read_into::<f32>(
                program,
                case.kernel,
                n,
                &texture,
                vec![xs.as_arg(), count()],
                launch(),
            )
        }
        "sample-2d" | "sample-2d-int" | "sample-2d-float4" => {
            let (xs, ys) = (axis(0)?, axis(1)?);
            let inputs = vec![xs.as_arg(), ys.as_arg(), count()];
            match case.kernel {
                "sample-2d" => {
                    read_into::<f32>(program, case.kernel, n, &texture, inputs, launch())
                }
                "sample-2d-int" => {
                    read_into::<i32>(program, case.kernel, n, &texture, inputs, launch())
                }
                _ => read_into::<Float4>(program, case.kernel, n, &texture, inputs, launch()),
            }
        }
        "sample-3d" => {
            let (xs, ys, zs) = (axis(0)?, axis(1)?, axis(2)?);
            let inputs = vec![xs.as_arg(), ys.as_arg(), zs.as_arg(), count()];
            read_into::<f32>(program, case.kernel, n, &texture, inputs, launch())
        }
        other => panic!("no runner for kernel {other}"),
    }
}

/// Launches `kernel` with an output block of `n` elements of `T`, `texture` and `inputs`; the
/// output's bytes.
fn read_into<T: chorus::KernelValue>(
    program: &Program,
    kernel: &str,
    n: usize,
    texture: &Texture<'_>,
    inputs: Vec<Arg<'_>>,
    launch: Launch<'_>,
) -> chorus::Result<Vec<u8>> {
    let mut out = MemoryBlock::<T>::alloc(n)?;
    {
        let mut args = vec![out.as_arg(), texture.as_arg()];
        args.extend(inputs);
        program.launch(kernel, &args, launch)?;
    }
    out.sync(chorus::Direction::DeviceToHost)?;
    Ok(bytemuck::cast_slice(out.as_slice()).to_vec())
}

/// One surface program.
#[derive(Clone, Debug)]
pub struct SurfaceCase {
    pub name: String,
    pub kernel: &'static str,
    pub format: ChannelFormat,
    pub extent: [usize; 3],
    /// The block of the launch.
    pub block: [u32; 3],
    /// `dx`, `dy` for the shift kernels (which read a second surface).
    pub shift: Option<(i32, i32)>,
    pub data: Vec<u8>,
}

/// Every surface case.
pub fn surface_cases() -> Vec<SurfaceCase> {
    let mut numbers = Numbers::new(16);
    let f32x1 = ChannelFormat::scalar(ChannelType::F32);
    let mut cases = Vec::new();
    for (kernel, shifts) in [
        (
            "surface-shift-clamp",
            vec![(0, 0), (3, 1), (-2, -3), (9, 9), (-9, 2)],
        ),
        ("surface-shift-zero", vec![(0, 0), (3, 1), (-2, -3), (9, 9)]),
        // In range only: a trap that fires ends the context on a GPU.
        ("surface-shift-trap", vec![(0, 0)]),
    ] {
        for shift in shifts {
            cases.push(SurfaceCase {
                name: format!("{kernel} {shift:?}"),
                kernel,
                format: f32x1,
                extent: [16, 8, 0],
                block: [16, 8, 1],
                shift: Some(shift),
                data: image_bytes(&mut numbers, f32x1, 128),
            });
        }
    }
    let u8x4 = ChannelFormat::new(ChannelType::U8, 4).unwrap();
    cases.push(SurfaceCase {
        name: "1-D uchar4 invert".into(),
        kernel: "surface-1d-invert",
        format: u8x4,
        extent: [40, 0, 0],
        block: [64, 1, 1],
        shift: None,
        data: image_bytes(&mut numbers, u8x4, 40),
    });
    let i32x1 = ChannelFormat::scalar(ChannelType::I32);
    cases.push(SurfaceCase {
        name: "3-D int index".into(),
        kernel: "surface-3d-index",
        format: i32x1,
        extent: [8, 4, 3],
        block: [8, 4, 3],
        shift: None,
        data: vec![0; 8 * 4 * 3 * 4],
    });
    let f32x4 = ChannelFormat::new(ChannelType::F32, 4).unwrap();
    cases.push(SurfaceCase {
        name: "2-D float4 swap".into(),
        kernel: "surface-float4-swap",
        format: f32x4,
        extent: [4, 3, 0],
        block: [4, 3, 1],
        shift: None,
        data: image_bytes(&mut numbers, f32x4, 12),
    });
    cases
}

/// Runs `case` on the current backend; the surface's bytes afterwards.
pub fn run_surface_case(program: &Program, case: &SurfaceCase) -> chorus::Result<Vec<u8>> {
    let mut array = TextureArray::alloc_surface(case.format, case.extent)?;
    array.upload(&case.data)?;
    let launch = Launch::grid(1).block(case.block);
    let mut result = vec![0u8; case.data.len()];
    match case.shift {
        Some((dx, dy)) => {
            let mut dst = TextureArray::alloc_surface(case.format, case.extent)?;
            dst.upload(&vec![0u8; case.data.len()])?;
            {
                let (src_surface, dst_surface) =
                    (Surface::from_array(&array)?, Surface::from_array(&dst)?);
                program.launch(
                    case.kernel,
                    &[
                        src_surface.as_arg(),
                        dst_surface.as_arg(),
                        Arg::value(dx),
                        Arg::value(dy),
                    ],
                    launch,
                )?;
            }
            dst.download(&mut result)?;
        }
        None => {
            {
                let surface = Surface::from_array(&array)?;
                let mut args = vec![surface.as_arg()];
                if case.kernel == "surface-1d-invert" {
                    args.push(Arg::value(case.extent[0] as i32));
                }
                program.launch(case.kernel, &args, launch)?;
            }
            array.download(&mut result)?;
        }
    }
    Ok(result)
}
