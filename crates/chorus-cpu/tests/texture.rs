//! Texture and surface objects on the CPU executor: every filter, address and read mode, linear,
//! pitched and array images, the surface boundary modes, and the refusals. Expectations are
//! computed by hand from CUDA's formulas (Programming Guide, "Texture Fetching").

use chorus_cpu::{
    AddressMode, ChannelFormat, ChannelType, CpuModule, DeviceBuffer, Error, FilterMode,
    ImageLayout, KernelArg, LaunchConfig, ReadMode, SurfaceObject, TextureDesc, TextureObject,
};
use std::sync::{Arc, OnceLock};

const KERNELS: &str = include_str!("texture_kernels.lisp");

fn module() -> &'static CpuModule {
    static MODULE: OnceLock<CpuModule> = OnceLock::new();
    MODULE.get_or_init(|| {
        let ir = chorus_lang::compile_str_for(
            KERNELS,
            "texture_kernels.lisp",
            &chorus_lang::target::Target::cpu(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn format(channel: ChannelType, channels: u8) -> ChannelFormat {
    ChannelFormat::new(channel, channels).unwrap()
}

fn sampler(filter: FilterMode, address: AddressMode, normalized: bool) -> TextureDesc {
    TextureDesc {
        address: [address; 3],
        filter,
        read_mode: ReadMode::ElementType,
        normalized_coords: normalized,
        border_color: [0.0; 4],
    }
}

fn floats(values: &[f32]) -> DeviceBuffer {
    DeviceBuffer::from_slice(values).unwrap()
}

fn launch(kernel: &str, n: usize, args: &[KernelArg<'_>]) -> Result<(), Error> {
    module().launch(
        kernel,
        &LaunchConfig::linear(n.div_ceil(32) as u32, 32),
        args,
    )
}

/// `sample-1d` at each of `xs`.
fn sample_1d(tex: &TextureObject, image: &DeviceBuffer, xs: &[f32]) -> Vec<f32> {
    let out = DeviceBuffer::alloc(4 * xs.len()).unwrap();
    let x = floats(xs);
    launch(
        "sample-1d",
        xs.len(),
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(image, tex),
            KernelArg::Buffer(&x),
            KernelArg::value(xs.len() as i32),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    out.to_vec().unwrap()
}

/// `sample-2d` at each of `points`.
fn sample_2d(tex: &TextureObject, image: &DeviceBuffer, points: &[(f32, f32)]) -> Vec<f32> {
    let out = DeviceBuffer::alloc(4 * points.len()).unwrap();
    let xs = floats(&points.iter().map(|p| p.0).collect::<Vec<_>>());
    let ys = floats(&points.iter().map(|p| p.1).collect::<Vec<_>>());
    launch(
        "sample-2d",
        points.len(),
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(image, tex),
            KernelArg::Buffer(&xs),
            KernelArg::Buffer(&ys),
            KernelArg::value(points.len() as i32),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    out.to_vec().unwrap()
}

/// A 1-D float array texture of `values`.
fn array_1d(values: &[f32], sampler: TextureDesc) -> (TextureObject, DeviceBuffer) {
    let image = ImageLayout::array(format(ChannelType::F32, 1), values.len(), 0, 0).unwrap();
    (TextureObject::new(image, sampler).unwrap(), floats(values))
}

#[test]
fn point_filtering_reads_the_texel_under_the_coordinate() {
    let (tex, image) = array_1d(
        &[1.0, 2.0, 3.0, 4.0],
        sampler(FilterMode::Point, AddressMode::Clamp, false),
    );
    assert_eq!(
        sample_1d(
            &tex,
            &image,
            &[0.0, 0.99, 1.0, 2.5, 3.999, -0.5, 4.0, 100.0]
        ),
        [1.0, 1.0, 2.0, 3.0, 4.0, 1.0, 4.0, 4.0]
    );
}

#[test]
fn linear_filtering_interpolates_with_weights_of_eight_fractional_bits() {
    let (tex, image) = array_1d(
        &[0.0, 10.0, 20.0, 30.0],
        sampler(FilterMode::Linear, AddressMode::Clamp, false),
    );
    let got = sample_1d(&tex, &image, &[0.5, 1.0, 1.75, 2.3, 0.25, 3.9]);
    // x = 2.3: x − 0.5 = 1.8, weight 0.8 → 205/256 in 1.8 fixed point.
    let w = 205.0f32 / 256.0;
    assert_eq!(
        got,
        [0.0, 5.0, 12.5, (1.0 - w) * 10.0 + w * 20.0, 0.0, 30.0]
    );
}

#[test]
fn border_addressing_reads_the_border_colour_outside() {
    let mut s = sampler(FilterMode::Point, AddressMode::Border, false);
    s.border_color = [-7.0, 0.0, 0.0, 0.0];
    let (tex, image) = array_1d(&[1.0, 2.0], s);
    assert_eq!(
        sample_1d(&tex, &image, &[-0.5, 0.5, 1.5, 2.0]),
        [-7.0, 1.0, 2.0, -7.0]
    );
    // Linear filtering blends the border in: in x, and, as the texture unit reads a 1-D
    // texture as a 2-D one of height 1 at y = 0, half and half with the row above.
    s.filter = FilterMode::Linear;
    let (tex, image) = array_1d(&[1.0, 2.0], s);
    let blend = |x_filtered: f32| 0.5 * -7.0 + 0.5 * x_filtered;
    assert_eq!(
        sample_1d(&tex, &image, &[0.0, 1.0, 2.0]),
        [
            blend(0.5 * -7.0 + 0.5),
            blend(1.5),
            blend(0.5 * 2.0 + 0.5 * -7.0)
        ]
    );
    // Without border addressing in y the row above is the texels' own.
    s.address[1] = AddressMode::Clamp;
    let (tex, image) = array_1d(&[1.0, 2.0], s);
    assert_eq!(sample_1d(&tex, &image, &[1.0]), [1.5]);
}

#[test]
fn wrap_addressing_repeats_the_texture_with_normalized_coordinates() {
    let values = [1.0, 2.0, 3.0, 4.0];
    let (tex, image) = array_1d(&values, sampler(FilterMode::Point, AddressMode::Wrap, true));
    assert_eq!(
        sample_1d(&tex, &image, &[0.125, 1.125, -0.125, 2.875, 0.625]),
        [1.0, 1.0, 4.0, 4.0, 3.0]
    );
    let (tex, image) = array_1d(
        &values,
        sampler(FilterMode::Linear, AddressMode::Wrap, true),
    );
    // x = 0: u − 0.5 = −0.5 → texels 3 and 0, half each.
    assert_eq!(sample_1d(&tex, &image, &[0.0, 1.0, 0.25]), [2.5, 2.5, 1.5]);
}

#[test]
fn mirror_addressing_reflects_the_texture_at_each_edge() {
    let values = [1.0, 2.0, 3.0, 4.0];
    let (tex, image) = array_1d(
        &values,
        sampler(FilterMode::Point, AddressMode::Mirror, true),
    );
    assert_eq!(
        sample_1d(&tex, &image, &[0.125, 1.125, -0.125, 1.875, 2.125]),
        [1.0, 4.0, 1.0, 1.0, 1.0]
    );
    let (tex, image) = array_1d(
        &values,
        sampler(FilterMode::Linear, AddressMode::Mirror, true),
    );
    // x = 0: texels −1 → 0 and 0: the edge texel; x = 1: texels 3 and 4 → 3.
    assert_eq!(sample_1d(&tex, &image, &[0.0, 0.999_999]), [1.0, 4.0]);
}

#[test]
fn normalized_coordinates_span_the_texture() {
    let (tex, image) = array_1d(
        &[1.0, 2.0, 3.0, 4.0],
        sampler(FilterMode::Point, AddressMode::Clamp, true),
    );
    assert_eq!(
        sample_1d(&tex, &image, &[0.0, 0.3, 0.5, 0.99, 1.5, -1.0]),
        [1.0, 2.0, 3.0, 4.0, 4.0, 1.0]
    );
}

#[test]
fn bilinear_filtering_of_a_two_dimensional_array() {
    // 3 × 2 texels: row 0 = 0 1 2, row 1 = 10 11 12.
    let image = ImageLayout::array(format(ChannelType::F32, 1), 3, 2, 0).unwrap();
    let tex = TextureObject::new(
        image,
        sampler(FilterMode::Linear, AddressMode::Clamp, false),
    )
    .unwrap();
    let data = floats(&[0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
    let got = sample_2d(
        &tex,
        &data,
        &[(0.5, 0.5), (1.0, 1.0), (2.5, 1.5), (1.5, 1.25), (-3.0, 9.0)],
    );
    assert_eq!(got, [0.0, 5.5, 12.0, 1.0 + 7.5, 10.0]);
}

#[test]
fn pitched_memory_reads_rows_at_their_pitch() {
    // 2 × 2 texels, rows 16 bytes apart (padding of 99s between).
    let image = ImageLayout::pitch2d(format(ChannelType::F32, 1), 2, 2, 16).unwrap();
    let tex =
        TextureObject::new(image, sampler(FilterMode::Point, AddressMode::Clamp, false)).unwrap();
    let data = floats(&[1.0, 2.0, 99.0, 99.0, 3.0, 4.0]);
    assert_eq!(
        sample_2d(
            &tex,
            &data,
            &[(0.5, 0.5), (1.5, 0.5), (0.5, 1.5), (1.5, 1.5), (5.0, 5.0)]
        ),
        [1.0, 2.0, 3.0, 4.0, 4.0]
    );
    assert!(ImageLayout::pitch2d(format(ChannelType::F32, 1), 4, 2, 8).is_err());
}

#[test]
fn trilinear_filtering_of_a_three_dimensional_array() {
    let image = ImageLayout::array(format(ChannelType::F32, 1), 2, 2, 2).unwrap();
    let tex = TextureObject::new(
        image,
        sampler(FilterMode::Linear, AddressMode::Clamp, false),
    )
    .unwrap();
    let values: Vec<f32> = (0..8).map(|v| v as f32).collect();
    let data = floats(&values);
    let points = [(1.0f32, 1.0f32, 1.0f32), (0.5, 0.5, 1.5), (1.5, 1.0, 0.5)];
    let out = DeviceBuffer::alloc(4 * points.len()).unwrap();
    let xs = floats(&points.map(|p| p.0));
    let ys = floats(&points.map(|p| p.1));
    let zs = floats(&points.map(|p| p.2));
    launch(
        "sample-3d",
        points.len(),
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &tex),
            KernelArg::Buffer(&xs),
            KernelArg::Buffer(&ys),
            KernelArg::Buffer(&zs),
            KernelArg::value(points.len() as i32),
        ],
    )
    .unwrap();
    // Texel (x, y, z) holds x + 2y + 4z.
    assert_eq!(out.to_vec::<f32>().unwrap(), [3.5, 4.0, 2.0]);
}

#[test]
fn normalized_float_reads_scale_small_integers() {
    let cases: [(ChannelType, Vec<u8>, Vec<f32>); 4] = [
        (
            ChannelType::U8,
            vec![0, 51, 255, 128],
            vec![0.0, 0.2, 1.0, 128.0 / 255.0],
        ),
        (
            ChannelType::I8,
            vec![0, 127, 0x80, 0x81],
            vec![0.0, 1.0, -1.0, -1.0],
        ),
        (
            ChannelType::U16,
            [0u16, 65535, 1000, 32768]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            vec![0.0, 1.0, 1000.0 / 65535.0, 32768.0 / 65535.0],
        ),
        (
            ChannelType::I16,
            [0i16, 32767, -32768, -16384]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            vec![0.0, 1.0, -1.0, -16384.0 / 32767.0],
        ),
    ];
    for (channel, bytes, expected) in cases {
        let image = ImageLayout::array(format(channel, 1), 4, 0, 0).unwrap();
        let mut s = sampler(FilterMode::Point, AddressMode::Clamp, false);
        s.read_mode = ReadMode::NormalizedFloat;
        let tex = TextureObject::new(image, s).unwrap();
        let data = DeviceBuffer::from_bytes(&bytes).unwrap();
        assert_eq!(
            sample_1d(&tex, &data, &[0.5, 1.5, 2.5, 3.5]),
            expected,
            "{channel:?}"
        );
    }
}

#[test]
fn normalized_float_reads_filter_linearly() {
    let image = ImageLayout::array(format(ChannelType::U8, 1), 2, 0, 0).unwrap();
    let mut s = sampler(FilterMode::Linear, AddressMode::Clamp, false);
    s.read_mode = ReadMode::NormalizedFloat;
    let tex = TextureObject::new(image, s).unwrap();
    let data = DeviceBuffer::from_bytes(&[0, 255]).unwrap();
    assert_eq!(sample_1d(&tex, &data, &[1.0, 1.25]), [0.5, 0.75]);
}

#[test]
fn half_textures_read_as_float() {
    let image = ImageLayout::array(format(ChannelType::F16, 1), 2, 0, 0).unwrap();
    let tex = TextureObject::new(
        image,
        sampler(FilterMode::Linear, AddressMode::Clamp, false),
    )
    .unwrap();
    let bytes: Vec<u8> = [half::f16::from_f32(1.5), half::f16::from_f32(-2.0)]
        .iter()
        .flat_map(|h| h.to_bits().to_le_bytes())
        .collect();
    let data = DeviceBuffer::from_bytes(&bytes).unwrap();
    assert_eq!(sample_1d(&tex, &data, &[0.5, 1.5, 1.0]), [1.5, -2.0, -0.25]);
}

#[test]
fn four_channel_textures_read_as_vectors_and_integers_as_integers() {
    let image = ImageLayout::array(format(ChannelType::F32, 4), 2, 1, 0).unwrap();
    let tex = TextureObject::new(
        image,
        sampler(FilterMode::Linear, AddressMode::Clamp, false),
    )
    .unwrap();
    let data = floats(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let out = DeviceBuffer::alloc(16).unwrap();
    let (xs, ys) = (floats(&[1.0]), floats(&[0.5]));
    launch(
        "sample-2d-float4",
        1,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &tex),
            KernelArg::Buffer(&xs),
            KernelArg::Buffer(&ys),
            KernelArg::value(1i32),
        ],
    )
    .unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), [3.0, 4.0, 5.0, 6.0]);

    // A signed 16-bit texture read as its element type, into ints.
    let image = ImageLayout::array(format(ChannelType::I16, 1), 2, 1, 0).unwrap();
    let tex =
        TextureObject::new(image, sampler(FilterMode::Point, AddressMode::Clamp, false)).unwrap();
    let data = DeviceBuffer::from_bytes(&[0xff, 0xff, 7, 0]).unwrap();
    let out = DeviceBuffer::alloc(8).unwrap();
    let (xs, ys) = (floats(&[0.5, 1.5]), floats(&[0.0, 0.0]));
    launch(
        "sample-2d-int",
        2,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &tex),
            KernelArg::Buffer(&xs),
            KernelArg::Buffer(&ys),
            KernelArg::value(2i32),
        ],
    )
    .unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), [-1, 7]);
}

#[test]
fn linear_textures_fetch_elements_and_zero_outside() {
    let image = ImageLayout::linear(format(ChannelType::I32, 1), 3).unwrap();
    let tex = TextureObject::new(image, TextureDesc::default()).unwrap();
    let data = DeviceBuffer::from_slice(&[5i32, -6, 7]).unwrap();
    let is = DeviceBuffer::from_slice(&[0i32, 1, 2, 3, -1]).unwrap();
    let out = DeviceBuffer::alloc(20).unwrap();
    launch(
        "fetch-int",
        5,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &tex),
            KernelArg::Buffer(&is),
            KernelArg::value(5i32),
        ],
    )
    .unwrap();
    assert_eq!(out.to_vec::<i32>().unwrap(), [5, -6, 7, 0, 0]);
    // A float read of an int texture faults, naming the mismatch.
    let e = launch(
        "fetch-float",
        5,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &tex),
            KernelArg::Buffer(&is),
            KernelArg::value(5i32),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("a float read of an integer texture"), "{e}");
}

#[test]
fn reads_of_the_wrong_kind_fault() {
    // tex1d of a linear texture, tex2d of a 1-D array, more components than channels.
    let linear = TextureObject::new(
        ImageLayout::linear(format(ChannelType::F32, 1), 4).unwrap(),
        TextureDesc::default(),
    )
    .unwrap();
    let data = floats(&[1.0; 4]);
    let out = DeviceBuffer::alloc(64).unwrap();
    let xs = floats(&[0.5]);
    let e = launch(
        "sample-1d",
        1,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &linear),
            KernelArg::Buffer(&xs),
            KernelArg::value(1i32),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("linear memory (use tex1d-fetch)"), "{e}");
    let (one_d, data) = array_1d(&[1.0; 4], TextureDesc::default());
    let e = launch(
        "sample-2d-float4",
        1,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &one_d),
            KernelArg::Buffer(&xs),
            KernelArg::Buffer(&xs),
            KernelArg::value(1i32),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("a 2-D texture read of a 1-D texture"), "{e}");
    let flat = TextureObject::new(
        ImageLayout::array(format(ChannelType::F32, 1), 2, 2, 0).unwrap(),
        TextureDesc::default(),
    )
    .unwrap();
    let e = launch(
        "sample-2d-float4",
        1,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&data, &flat),
            KernelArg::Buffer(&xs),
            KernelArg::Buffer(&xs),
            KernelArg::value(1i32),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("4 components from a texture of 1 channel"),
        "{e}"
    );
}

#[test]
fn descriptors_cuda_refuses_are_refused() {
    let image = ImageLayout::array(format(ChannelType::F32, 1), 4, 0, 0).unwrap();
    let e = TextureObject::new(image, sampler(FilterMode::Point, AddressMode::Wrap, false))
        .unwrap_err();
    assert!(
        e.to_string().contains("Wrap needs normalized coordinates"),
        "{e}"
    );
    let e = TextureObject::new(
        image,
        sampler(FilterMode::Point, AddressMode::Mirror, false),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("Mirror needs normalized coordinates"),
        "{e}"
    );
    let s = TextureDesc {
        read_mode: ReadMode::NormalizedFloat,
        ..TextureDesc::default()
    };
    let e = TextureObject::new(image, s).unwrap_err();
    assert!(e.to_string().contains("8- or 16-bit integer format"), "{e}");
    let ints = ImageLayout::array(format(ChannelType::I32, 1), 4, 0, 0).unwrap();
    let e = TextureObject::new(ints, sampler(FilterMode::Linear, AddressMode::Clamp, false))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("linear filtering needs a float result"),
        "{e}"
    );
    let linear = ImageLayout::linear(format(ChannelType::F32, 1), 4).unwrap();
    assert!(
        TextureObject::new(
            linear,
            sampler(FilterMode::Linear, AddressMode::Clamp, false)
        )
        .is_err()
    );
    assert!(SurfaceObject::new(linear).is_err());
    assert!(ChannelFormat::new(ChannelType::F32, 3).is_err());
    assert!(ImageLayout::array(format(ChannelType::F32, 1), 0, 0, 0).is_err());
    assert!(ImageLayout::array(format(ChannelType::F32, 1), 4, 0, 2).is_err());
}

#[test]
fn a_launch_refuses_an_image_larger_than_its_buffer_and_foreign_handles_fault() {
    let image = ImageLayout::array(format(ChannelType::F32, 1), 8, 0, 0).unwrap();
    let tex = TextureObject::new(image, TextureDesc::default()).unwrap();
    let small = floats(&[1.0; 4]);
    let out = DeviceBuffer::alloc(4).unwrap();
    let xs = floats(&[0.5]);
    let e = launch(
        "sample-1d",
        1,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Texture(&small, &tex),
            KernelArg::Buffer(&xs),
            KernelArg::value(1i32),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs 32 bytes, but its buffer has 16"), "{e}");
    // A handle passed as a plain value is not an object of the launch.
    let e = launch(
        "sample-1d",
        1,
        &[
            KernelArg::Buffer(&out),
            KernelArg::Value {
                ty: chorus_lang::types::Type::TextureObject,
                bytes: tex.handle().to_le_bytes().to_vec(),
            },
            KernelArg::Buffer(&xs),
            KernelArg::value(1i32),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("is not an argument of this launch"), "{e}");
}

/// A 4 × 2 float surface holding `0 1 2 3 / 10 11 12 13`.
fn float_surface() -> (SurfaceObject, DeviceBuffer) {
    let image = ImageLayout::array(format(ChannelType::F32, 1), 4, 2, 0).unwrap();
    (
        SurfaceObject::new(image).unwrap(),
        floats(&[0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0]),
    )
}

fn shift(kernel: &str, dx: i32, dy: i32) -> Result<Vec<f32>, Error> {
    let (src, src_data) = float_surface();
    let (dst, dst_data) = float_surface();
    dst_data.write(0, &[0u8; 32]).unwrap();
    module().launch(
        kernel,
        &LaunchConfig {
            grid: [1, 1, 1],
            block: [4, 2, 1],
            shared_mem: 0,
        },
        &[
            KernelArg::Surface(&src_data, &src),
            KernelArg::Surface(&dst_data, &dst),
            KernelArg::value(dx),
            KernelArg::value(dy),
        ],
    )?;
    dst_data.to_vec()
}

#[test]
fn surfaces_read_and_write_elements_at_byte_coordinates() {
    assert_eq!(
        shift("surface-shift-trap", 0, 0).unwrap(),
        [1.0, 2.0, 3.0, 4.0, 11.0, 12.0, 13.0, 14.0]
    );
}

#[test]
fn surface_boundary_modes_clamp_zero_and_trap() {
    assert_eq!(
        shift("surface-shift-clamp", 2, 1).unwrap(),
        [13.0, 14.0, 14.0, 14.0, 13.0, 14.0, 14.0, 14.0]
    );
    assert_eq!(
        shift("surface-shift-clamp", -1, -5).unwrap(),
        [1.0, 1.0, 2.0, 3.0, 1.0, 1.0, 2.0, 3.0]
    );
    assert_eq!(
        shift("surface-shift-zero", 2, 1).unwrap(),
        [13.0, 14.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    );
    let e = shift("surface-shift-trap", 1, 0).unwrap_err().to_string();
    assert!(
        e.contains("outside the surface at (x = 16 bytes, y = 0) with :trap"),
        "{e}"
    );
}

#[test]
fn one_and_three_dimensional_surfaces_and_vector_elements() {
    let image = ImageLayout::array(format(ChannelType::U8, 4), 3, 0, 0).unwrap();
    let surface = SurfaceObject::new(image).unwrap();
    let data = DeviceBuffer::from_bytes(&[1, 2, 3, 4, 0, 0, 0, 0, 255, 255, 255, 255]).unwrap();
    launch(
        "surface-1d-invert",
        3,
        &[KernelArg::Surface(&data, &surface), KernelArg::value(3i32)],
    )
    .unwrap();
    assert_eq!(
        data.to_bytes(),
        [254, 253, 252, 251, 255, 255, 255, 255, 0, 0, 0, 0]
    );

    let image = ImageLayout::array(format(ChannelType::I32, 1), 3, 2, 2).unwrap();
    let surface = SurfaceObject::new(image).unwrap();
    let data = DeviceBuffer::alloc(4 * 12).unwrap();
    module()
        .launch(
            "surface-3d-index",
            &LaunchConfig {
                grid: [1, 1, 1],
                block: [3, 2, 2],
                shared_mem: 0,
            },
            &[KernelArg::Surface(&data, &surface)],
        )
        .unwrap();
    assert_eq!(
        data.to_vec::<i32>().unwrap(),
        [0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112]
    );

    let image = ImageLayout::array(format(ChannelType::F32, 4), 1, 1, 0).unwrap();
    let surface = SurfaceObject::new(image).unwrap();
    let data = floats(&[1.0, 2.0, 3.0, 4.0]);
    module()
        .launch(
            "surface-float4-swap",
            &LaunchConfig::linear(1, 1),
            &[KernelArg::Surface(&data, &surface)],
        )
        .unwrap();
    assert_eq!(data.to_vec::<f32>().unwrap(), [4.0, 3.0, 2.0, 1.0]);

    // An element of the wrong size faults.
    let image = ImageLayout::array(format(ChannelType::U8, 1), 4, 0, 0).unwrap();
    let bytes = SurfaceObject::new(image).unwrap();
    let data = DeviceBuffer::alloc(4).unwrap();
    let e = launch(
        "surface-1d-invert",
        1,
        &[KernelArg::Surface(&data, &bytes), KernelArg::value(1i32)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("a surface access of 4 bytes to 1-byte elements"),
        "{e}"
    );
}

#[test]
fn a_texture_for_a_surface_parameter_is_refused_at_launch() {
    let (tex, data) = array_1d(&[1.0], TextureDesc::default());
    let e = launch(
        "surface-1d-invert",
        1,
        &[KernelArg::Texture(&data, &tex), KernelArg::value(1i32)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("is a `surface-object`, but a texture was given"),
        "{e}"
    );
}
