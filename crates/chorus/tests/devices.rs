//! Devices: listing and picking them, memory, streams, programs and globals per device, and the
//! errors of arguments and streams on another device. The CPU backend stands in for several
//! GPUs: `CHORUS_CPU_DEVICES=2` makes it two devices, each with its own programs and globals;
//! the variable is read once per process, so those cases run this test binary again with it set.

use chorus::{
    Arg, ArgumentKind, Backend, Device, DeviceAddress, Direction, Error, Launch, MemoryBlock,
    Program, Stream, Unavailable, with_backend, with_device,
};
use std::process::Command;

chorus::defkernel! {
    (defglobal offset 0)

    (defkernel add-offset (void ((a int*) (n int)))
      (let ((i thread-idx-x))
        (if (< i n)
            (set (aref a i) (+ (aref a i) offset)))))
}

fn cpu0() -> Device {
    Device::new(Backend::Cpu, 0).expect("the CPU is always a device")
}

#[test]
fn the_cpu_device_is_listed_picked_and_described() {
    let cpu = cpu0();
    assert!(chorus::devices().contains(&cpu));
    assert_eq!(chorus::list_devices(), chorus::devices());
    assert_eq!((cpu.backend(), cpu.index()), (Backend::Cpu, 0));
    assert!(cpu.detail().unwrap().contains("cores"));
    assert!(cpu.to_string().starts_with("CPU device 0: "), "{cpu}");
    assert_eq!(with_backend(Backend::Cpu, Device::default).unwrap(), cpu);
    assert_eq!(Backend::Cpu.devices(), vec![cpu]);
    // Inside `with_device`, allocations, streams and launches use that device.
    with_backend(Backend::Metal, || {
        with_device(cpu, || -> chorus::Result<()> {
            assert_eq!(chorus::current_device()?, cpu);
            let mut a = MemoryBlock::from_slice(&[1, 2, 3])?;
            assert_eq!(a.device(), cpu);
            assert_eq!(Stream::new()?.device(), cpu);
            add_offset(&a, 3, Launch::grid(1).block(4))?;
            a.sync(Direction::DeviceToHost)?;
            assert_eq!(a.as_slice(), &[1, 2, 3]);
            cpu.synchronize()
        })
    })
    .unwrap();
}

#[test]
fn every_backends_availability_is_reported_with_its_reason() {
    for backend in Backend::ALL {
        let availability = backend.availability();
        assert_eq!(availability.is_ok(), backend.is_available());
        let Err(error) = availability else {
            assert!(!backend.devices().is_empty(), "{backend} is available");
            continue;
        };
        assert!(backend.devices().is_empty() || backend == Backend::Cuda);
        match backend {
            Backend::Metal => assert!(
                matches!(
                    &error,
                    Error::BackendUnavailable { backend: b, reason: Unavailable::NotBuilt }
                        if *b == backend
                ),
                "{error}"
            ),
            // Built: no ROCm (the loader's reason) or ROCm without an AMD device.
            Backend::Hip => assert!(
                matches!(
                    &error,
                    Error::SdkNotFound { .. }
                        | Error::BackendUnavailable {
                            backend: Backend::Hip,
                            ..
                        }
                ),
                "{error}"
            ),
            Backend::Cuda => assert!(
                matches!(
                    &error,
                    Error::SdkNotFound { .. }
                        | Error::BackendUnavailable {
                            backend: Backend::Cuda,
                            reason: Unavailable::NoDevices | Unavailable::Driver(_),
                        }
                        | Error::DeviceUnavailable { .. }
                        | Error::BadSelection { .. }
                ),
                "{error}"
            ),
            Backend::Cpu => panic!("the CPU backend is always available: {error}"),
        }
        let message = error.to_string();
        assert!(
            message.contains(&backend.to_string()) || message.contains("CUDA driver"),
            "{message}"
        );
    }
}

#[test]
fn argument_errors_carry_the_kernel_the_argument_and_the_types() {
    let cpu = cpu0();
    let program = add_offset_program();
    let floats = MemoryBlock::<f32>::alloc_on(cpu, 4).unwrap();
    let ints = MemoryBlock::<i32>::alloc_on(cpu, 4).unwrap();
    let launch = || Launch::grid(1).block(4).on(cpu);

    let error = program
        .launch("add-offset", &[ints.as_arg()], launch())
        .unwrap_err();
    assert!(
        matches!(&error, Error::ArgumentCount { kernel, expected: 2, found: 1 } if kernel == "add-offset"),
        "{error}"
    );

    let error = program
        .launch("add-offset", &[floats.as_arg(), Arg::value(4i32)], launch())
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ArgumentType { kernel, index: 1, parameter, expected, found: ArgumentKind::Memory(element) }
                if kernel == "add-offset" && parameter == "a"
                    && expected.to_string() == "int*" && element.to_string() == "float"
        ),
        "{error}"
    );
    assert!(error.to_string().contains("argument 1 (`a`)"), "{error}");

    let error = program
        .launch("add-offset", &[ints.as_arg(), Arg::value(4u32)], launch())
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ArgumentType { index: 2, parameter, found: ArgumentKind::Value(ty), .. }
                if parameter == "n" && ty.to_string() == "uint"
        ),
        "{error}"
    );

    // SAFETY: the CPU backend refuses device addresses before any kernel could use it.
    let address = unsafe { DeviceAddress::<i32>::new(0x1000) };
    let error = add_offset(address, 4, launch()).unwrap_err();
    assert!(
        matches!(
            &error,
            Error::AddressUnsupported { kernel, index: 1, parameter, backend: Backend::Cpu }
                if kernel == "add-offset" && parameter == "a"
        ),
        "{error}"
    );

    let error = program
        .launch("no-such", &[ints.as_arg(), Arg::value(4i32)], launch())
        .unwrap_err();
    assert!(
        matches!(&error, Error::NoSuchKernel { name, known, .. } if name == "no-such" && known == &["add-offset"]),
        "{error}"
    );

    let error = program
        .set_global_ref_on(cpu, "offset", 1.5f32)
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::GlobalType { name, expected, found, rust_type: "f32" }
                if name == "offset" && expected.to_string() == "int" && found.to_string() == "float"
        ),
        "{error}"
    );
}

/// Runs the ignored test `name` in a child process with `env` set; its output.
fn run_alone(name: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            "--exact",
            name,
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
    stdout
}

#[test]
fn two_cpu_devices_keep_their_own_memory_programs_and_globals() {
    run_alone(
        "on_two_cpu_devices",
        &[("CHORUS_CPU_DEVICES", "2"), ("CHORUS_BACKEND", "cpu")],
    );
}

#[test]
fn a_bad_cpu_device_count_makes_the_cpu_unavailable_and_says_why() {
    run_alone(
        "with_a_bad_cpu_device_count",
        &[("CHORUS_CPU_DEVICES", "none"), ("CHORUS_BACKEND", "cpu")],
    );
}

#[test]
#[ignore = "run by two_cpu_devices_keep_their_own_memory_programs_and_globals with CHORUS_CPU_DEVICES=2"]
fn on_two_cpu_devices() {
    let devices = Backend::Cpu.devices();
    assert_eq!(devices.len(), 2, "{devices:?}");
    let (d0, d1) = (devices[0], devices[1]);
    assert_eq!(Device::default().unwrap(), d0);
    let program = add_offset_program();

    // Each device has its own copy of the program, so its own globals.
    program.set_global_ref_on(d0, "offset", 10).unwrap();
    program.set_global_ref_on(d1, "offset", 20).unwrap();
    assert_eq!(program.global_ref_on::<i32>(d0, "offset").unwrap(), 10);
    assert_eq!(program.global_ref_on::<i32>(d1, "offset").unwrap(), 20);

    let mut a0 = MemoryBlock::from_slice_on(d0, &[1, 2]).unwrap();
    let mut a1 = MemoryBlock::from_slice_on(d1, &[1, 2]).unwrap();
    assert_eq!((a0.device(), a1.device()), (d0, d1));
    add_offset(&a0, 2, Launch::grid(1).block(2)).unwrap();
    add_offset(&a1, 2, Launch::grid(1).block(2).on(d1)).unwrap();
    // A launch on a stream runs on the stream's device.
    let s1 = Stream::new_on(d1).unwrap();
    add_offset(&a1, 2, Launch::grid(1).block(2).stream(&s1)).unwrap();
    s1.synchronize().unwrap();
    a0.sync(Direction::DeviceToHost).unwrap();
    a1.sync(Direction::DeviceToHost).unwrap();
    assert_eq!(a0.as_slice(), &[11, 12]);
    assert_eq!(a1.as_slice(), &[41, 42]);

    // Memory of another device is refused, naming both devices.
    let error = add_offset(&a0, 2, Launch::grid(1).block(2).on(d1)).unwrap_err();
    assert!(
        matches!(
            &error,
            Error::ArgumentDevice { kernel, index: 1, parameter, argument_device, launch_device }
                if kernel == "add-offset" && parameter == "a"
                    && *argument_device == d0 && *launch_device == d1
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("memory on CPU device 0")
            && error.to_string().contains("runs on CPU device 1"),
        "{error}"
    );
    let error = add_offset(&a0, 2, Launch::grid(1).block(2).stream(&s1)).unwrap_err();
    assert!(
        matches!(&error, Error::ArgumentDevice { launch_device, .. } if *launch_device == d1),
        "{error}"
    );
    // So is a stream of another device than the one the launch names.
    let error = add_offset(&a0, 2, Launch::grid(1).block(2).stream(&s1).on(d0)).unwrap_err();
    assert!(
        matches!(&error, Error::StreamDevice { stream_device, launch_device }
            if *stream_device == d1 && *launch_device == d0),
        "{error}"
    );

    // `with_device` moves allocations and launches.
    with_device(d1, || {
        let mut b = MemoryBlock::from_slice(&[0, 0]).unwrap();
        assert_eq!(b.device(), d1);
        add_offset(&b, 2, Launch::grid(1).block(2)).unwrap();
        b.sync(Direction::DeviceToHost).unwrap();
        assert_eq!(b.as_slice(), &[20, 20]);
    });

    let missing = Device::new(Backend::Cpu, 2).unwrap_err();
    assert!(
        matches!(
            missing,
            Error::DeviceUnavailable {
                reason: Unavailable::NoSuchDevice { index: 2, count: 2 },
                ..
            }
        ),
        "{missing}"
    );
    let text = Program::new(
        "(defkernel k (void ((a int*))) (set (aref a 0) 1))",
        "k.lisp",
    )
    .unwrap();
    text.load_on(d1).unwrap();
}

#[test]
#[ignore = "run by a_bad_cpu_device_count_makes_the_cpu_unavailable_and_says_why"]
fn with_a_bad_cpu_device_count() {
    let error = Backend::Cpu.availability().unwrap_err();
    assert!(
        matches!(
            &error,
            Error::BackendUnavailable {
                backend: Backend::Cpu,
                reason: Unavailable::BadVariable { variable: "CHORUS_CPU_DEVICES", value },
            } if value == "none"
        ),
        "{error}"
    );
    assert!(MemoryBlock::<i32>::alloc(1).is_err());
}
