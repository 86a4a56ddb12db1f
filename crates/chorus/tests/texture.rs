//! Textures and surfaces through the facade on the CPU backend: arrays, textures over arrays
//! and memory blocks, surfaces, their arguments' checks, and every case of `texture_cases`.

mod texture_cases;

use chorus::{
    AddressMode, Arg, Backend, ChannelFormat, ChannelType, Direction, Error, FilterMode, Launch,
    MemoryBlock, Program, Surface, Texture, TextureArray, TextureDesc, with_backend,
};
use texture_cases::{program, run_surface_case, run_texture_case, surface_cases, texture_cases};

fn on_cpu<R>(f: impl FnOnce() -> chorus::Result<R>) -> R {
    with_backend(Backend::Cpu, f).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_texture_case_runs_on_the_cpu() {
    let program = program();
    on_cpu(|| {
        for case in texture_cases() {
            let bytes =
                run_texture_case(&program, &case).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(bytes.len() % case.coords.len(), 0, "{}", case.name);
            let floats: Vec<f32> = bytemuck::cast_slice(&bytes).to_vec();
            // Float results stay within the texels' range [−1, 1] (or the border colour).
            if !matches!(case.kernel, "fetch-int" | "sample-2d-int") {
                assert!(floats.iter().all(|v| v.abs() <= 1.0), "{}", case.name);
            }
        }
        Ok(())
    })
}

#[test]
fn every_surface_case_runs_on_the_cpu() {
    let program = program();
    on_cpu(|| {
        for case in surface_cases() {
            let after =
                run_surface_case(&program, &case).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(after.len(), case.data.len());
            if case.kernel == "surface-shift-trap" {
                // No shift: every element plus one.
                let before: &[f32] = bytemuck::cast_slice(&case.data);
                let after: &[f32] = bytemuck::cast_slice(&after);
                assert!(
                    before.iter().zip(after).all(|(b, a)| *a == b + 1.0),
                    "{}",
                    case.name
                );
            }
        }
        Ok(())
    })
}

const ROTATE: &str = "
(defkernel read-2d (void ((out float*) (tex texture-object) (w int) (h int)))
  (let ((x thread-idx-x) (y thread-idx-y))
    (if (and (< x w) (< y h))
        (set (aref out (+ x (* y w))) (tex2d float tex (+ (float x) 0.5) (+ (float y) 0.5))))))
(defkernel write-1d (void ((s surface-object) (n int)))
  (let ((i thread-idx-x))
    (if (< i n) (surf1d-write (float i) s (* 4 i)))))
";

#[test]
fn arrays_round_trip_and_textures_read_them() {
    on_cpu(|| {
        let format = ChannelFormat::scalar(ChannelType::F32);
        let mut array = TextureArray::alloc(format, [3, 2, 0])?;
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        array.upload(&data)?;
        let mut back = [0.0f32; 6];
        array.download(&mut back)?;
        assert_eq!(back, data);
        assert_eq!(
            (array.byte_len(), array.extent(), array.format()),
            (24, [3, 2, 0], format)
        );
        let e = array.upload(&[1.0f32; 5]).unwrap_err();
        assert!(matches!(e, Error::Texture { .. }), "{e}");

        let program = Program::new(ROTATE, "rotate.lisp")?;
        let texture = Texture::from_array(&array, &TextureDesc::default())?;
        let mut out = MemoryBlock::<f32>::alloc(6)?;
        program.launch(
            "read-2d",
            &[
                out.as_arg(),
                texture.as_arg(),
                Arg::value(3i32),
                Arg::value(2i32),
            ],
            Launch::grid(1).block((4, 2)),
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out.as_slice(), &data);
        Ok(())
    })
}

#[test]
fn textures_read_memory_blocks_linear_and_pitched() {
    on_cpu(|| {
        let format = ChannelFormat::scalar(ChannelType::F32);
        // Rows of 2 floats, 16 bytes apart.
        let block = MemoryBlock::from_slice(&[1.0f32, 2.0, -1.0, -1.0, 3.0, 4.0])?;
        let texture = Texture::from_pitch2d(&block, format, [2, 2], 16, &TextureDesc::default())?;
        let program = Program::new(ROTATE, "rotate.lisp")?;
        let mut out = MemoryBlock::<f32>::alloc(4)?;
        program.launch(
            "read-2d",
            &[
                out.as_arg(),
                texture.as_arg(),
                Arg::value(2i32),
                Arg::value(2i32),
            ],
            Launch::grid(1).block((2, 2)),
        )?;
        out.sync(Direction::DeviceToHost)?;
        assert_eq!(out.as_slice(), &[1.0, 2.0, 3.0, 4.0]);
        // A shape that does not fit the block is refused before the backend.
        let e =
            Texture::from_pitch2d(&block, format, [2, 3], 16, &TextureDesc::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("do not fit a memory block of 24 bytes"),
            "{e}"
        );
        // Linear memory: as many elements as fit, point filtering only.
        assert!(Texture::from_linear(&block, format, &TextureDesc::default()).is_ok());
        let e = Texture::from_linear(
            &block,
            format,
            &TextureDesc::default().with_filter(FilterMode::Linear),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("linear memory reads single elements"),
            "{e}"
        );
        Ok(())
    })
}

#[test]
fn descriptors_cuda_refuses_are_refused_on_every_backend() {
    on_cpu(|| {
        let array = TextureArray::alloc(ChannelFormat::scalar(ChannelType::I32), [4, 0, 0])?;
        let e = Texture::from_array(
            &array,
            &TextureDesc::default().with_address(AddressMode::Wrap),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("Wrap needs normalized coordinates"),
            "{e}"
        );
        let e = Texture::from_array(
            &array,
            &TextureDesc::default().with_filter(FilterMode::Linear),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("linear filtering needs a float result"),
            "{e}"
        );
        let e = Texture::from_array(
            &array,
            &TextureDesc::default().with_read_mode(chorus::ReadMode::NormalizedFloat),
        )
        .unwrap_err();
        assert!(e.to_string().contains("8- or 16-bit integer"), "{e}");
        // Surfaces need arrays made for them.
        let e = Surface::from_array(&array).unwrap_err();
        assert!(e.to_string().contains("alloc_surface"), "{e}");
        assert!(ChannelFormat::new(ChannelType::U8, 3).is_err());
        assert!(TextureArray::alloc(ChannelFormat::scalar(ChannelType::U8), [0, 1, 0]).is_err());
        assert!(TextureArray::alloc(ChannelFormat::scalar(ChannelType::U8), [4, 0, 2]).is_err());
        Ok(())
    })
}

#[test]
fn texture_and_surface_arguments_are_checked() {
    on_cpu(|| {
        let program = Program::new(ROTATE, "rotate.lisp")?;
        let format = ChannelFormat::scalar(ChannelType::F32);
        let array = TextureArray::alloc_surface(format, [4, 0, 0])?;
        let texture = Texture::from_array(&array, &TextureDesc::default())?;
        let surface = Surface::from_array(&array)?;
        // A texture where a surface is expected, and the other way round.
        let e = program
            .launch(
                "write-1d",
                &[texture.as_arg(), Arg::value(4i32)],
                Launch::grid(1).block(4),
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("expected surface-object, got a texture"),
            "{e}"
        );
        let mut out = MemoryBlock::<f32>::alloc(4)?;
        let e = program
            .launch(
                "read-2d",
                &[
                    out.as_arg(),
                    surface.as_arg(),
                    Arg::value(2i32),
                    Arg::value(2i32),
                ],
                Launch::grid(1).block(4),
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("expected texture-object, got a surface"),
            "{e}"
        );
        // A plain integer is not a texture.
        let e = program
            .launch(
                "write-1d",
                &[Arg::value(7u64), Arg::value(4i32)],
                Launch::grid(1).block(4),
            )
            .unwrap_err();
        assert!(e.to_string().contains("expected surface-object"), "{e}");
        program.launch(
            "write-1d",
            &[surface.as_arg(), Arg::value(4i32)],
            Launch::grid(1).block(4),
        )?;
        drop((texture, surface));
        let mut back = [0.0f32; 4];
        array.download(&mut back)?;
        assert_eq!(back, [0.0, 1.0, 2.0, 3.0]);
        out.sync(Direction::DeviceToHost)?;
        Ok(())
    })
}
