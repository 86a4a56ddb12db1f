//! Kernel arguments and the one check they pass before any backend sees them.

use crate::error::{ArgumentKind, Error, Result};
use crate::hal::{ArgRef, CheckedArgs, DeviceMemory, TextureImpl, ValueBytes};
use crate::kind::{Backend, Device};
use chorus_lang::host::KernelValue;
use chorus_lang::ir::{Function, Module};
use chorus_lang::target::{LayoutRules, Target};
use chorus_lang::types::{ScalarType, Type};

/// One kernel argument: a value, a memory block's device copy, or a raw device address.
///
/// Made by [`Arg::value`], [`crate::MemoryBlock::as_arg`] and [`crate::DevicePtr::kernel_arg`];
/// checked against the kernel's parameter types when the kernel is launched.
#[derive(Debug)]
// A slice of `Arg`s is handed to backends as a slice of what it wraps.
#[repr(transparent)]
pub struct Arg<'a>(pub(crate) ArgRef<'a>);

impl<'a> Arg<'a> {
    /// `value`, passed by copy (`int`, `float3`, a `defkernel-struct`, …).
    pub fn value<T: KernelValue>(value: T) -> Arg<'static> {
        Arg(ArgRef::Value {
            ty: T::kernel_type(),
            bytes: ValueBytes::new(bytemuck::bytes_of(&value)),
        })
    }

    /// A tensor map (`chorus::cuda::TensorMap`, encoded over device memory), for a
    /// `tensor-map` parameter: the map is copied into the launch, by value, as CUDA passes a
    /// `__grid_constant__ CUtensorMap`. Only CUDA devices of compute capability 9.0 and newer
    /// run kernels that take one (the checker refuses `tensor-map` for other targets).
    pub fn tensor_map(map: &chorus_cuda::TensorMap) -> Arg<'static> {
        Arg(ArgRef::Value {
            ty: Type::TensorMap,
            bytes: ValueBytes::new(map.as_bytes()),
        })
    }

    pub(crate) fn memory(memory: &'a DeviceMemory, element: Type) -> Arg<'a> {
        Arg(ArgRef::Memory { memory, element })
    }

    pub(crate) fn device_address(address: u64, element: Type) -> Arg<'static> {
        Arg(ArgRef::Address { address, element })
    }

    pub(crate) fn texture(object: &'a dyn TextureImpl, device: Device, surface: bool) -> Arg<'a> {
        Arg(ArgRef::Texture {
            object,
            device,
            surface,
        })
    }

    /// What the argument is (`a float value`, `a memory block of int`).
    pub fn kind(&self) -> ArgumentKind {
        match &self.0 {
            ArgRef::Value { ty, .. } => ArgumentKind::Value(ty.clone()),
            ArgRef::Memory { element, .. } => ArgumentKind::Memory(element.clone()),
            ArgRef::Address { element, .. } => ArgumentKind::Address(element.clone()),
            ArgRef::Texture { surface: false, .. } => ArgumentKind::Texture,
            ArgRef::Texture { surface: true, .. } => ArgumentKind::Surface,
        }
    }

    /// The device a memory argument is on; `None` for values and raw addresses.
    pub fn device(&self) -> Option<Device> {
        match &self.0 {
            ArgRef::Memory { memory, .. } => Some(memory.device),
            ArgRef::Texture { device, .. } => Some(*device),
            _ => None,
        }
    }

    /// What the argument is, for messages (`a float value`, `a memory block of int`).
    pub fn describe(&self) -> String {
        self.kind().to_string()
    }
}

/// Which of a launch's arguments are checked against the kernel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Every argument: its kind, its type, a value's size, a memory block's device.
    All,
    /// The count and the pointer parameters; value arguments for value parameters are known to
    /// have the parameter's type and size, by construction (the functions `defkernel!`
    /// generates make them with `Arg::value` from the Rust type derived from the parameter).
    Pointers,
}

/// Checks `args` against the parameters of `function` (of `module`) for a launch on `device`,
/// whose `target` gives the host layout a value must have, and hands them on as
/// [`CheckedArgs`]: the only check a launch's arguments pass.
pub(crate) fn check_args<'s, 'a>(
    target: &Target,
    module: &Module,
    function: &Function,
    args: &'s [Arg<'a>],
    device: Device,
    checks: Checks,
) -> Result<CheckedArgs<'s, 'a>> {
    if args.len() != function.params.len() {
        return Err(Error::ArgumentCount {
            kernel: function.name.to_string(),
            expected: function.params.len(),
            found: args.len(),
        });
    }
    for (position, (param, arg)) in function.params.iter().zip(args).enumerate() {
        let local = &function[param.local];
        let wrong_type = || Error::ArgumentType {
            kernel: function.name.to_string(),
            index: position + 1,
            parameter: local.name.to_string(),
            expected: local.ty.clone(),
            found: arg.kind(),
        };
        match (&local.ty, &arg.0) {
            // A value for a pointer parameter is refused below whatever `checks` says.
            (ty, ArgRef::Value { .. })
                if checks == Checks::Pointers && !matches!(ty, Type::Pointer(_)) => {}
            (ty, ArgRef::Value { ty: given, bytes }) if ty == given => {
                // A value's bytes are the host's (C's layout, as `Arg::value` takes them from
                // the Rust value); a backend whose target lays the type out otherwise (Metal's
                // `float3`) converts them, so the target must be able to lay it out.
                let size = LayoutRules::C
                    .layout(ty, &module.structs)
                    .filter(|_| target.layout(ty, &module.structs).is_some())
                    .map(|(size, _)| size);
                if size != Some(bytes.len()) {
                    return Err(Error::ArgumentSize {
                        kernel: function.name.to_string(),
                        index: position + 1,
                        parameter: local.name.to_string(),
                        ty: ty.clone(),
                        expected: size.unwrap_or(0),
                        found: bytes.len(),
                    });
                }
            }
            (Type::Pointer(pointee), ArgRef::Memory { memory, element }) => {
                if !pointee_accepts(pointee, element) {
                    return Err(wrong_type());
                }
                if memory.device != device {
                    return Err(Error::ArgumentDevice {
                        kernel: function.name.to_string(),
                        index: position + 1,
                        parameter: local.name.to_string(),
                        argument_device: memory.device,
                        launch_device: device,
                    });
                }
            }
            (Type::Pointer(pointee), ArgRef::Address { element, .. }) => {
                if !pointee_accepts(pointee, element) {
                    return Err(wrong_type());
                }
                if device.backend() != Backend::Cuda {
                    return Err(Error::AddressUnsupported {
                        kernel: function.name.to_string(),
                        index: position + 1,
                        parameter: local.name.to_string(),
                        backend: device.backend(),
                    });
                }
            }
            (
                Type::TextureObject | Type::SurfaceObject,
                ArgRef::Texture {
                    device: object_device,
                    surface,
                    ..
                },
            ) if *surface == (local.ty == Type::SurfaceObject) => {
                if *object_device != device {
                    return Err(Error::ArgumentDevice {
                        kernel: function.name.to_string(),
                        index: position + 1,
                        parameter: local.name.to_string(),
                        argument_device: *object_device,
                        launch_device: device,
                    });
                }
            }
            _ => return Err(wrong_type()),
        }
    }
    let refs: &'s [ArgRef<'a>] =
        // SAFETY: `Arg` is `repr(transparent)` over `ArgRef`, so a slice of one is a slice of
        // the other with the same length and lifetime.
        unsafe { &*(args as *const [Arg<'a>] as *const [ArgRef<'a>]) };
    // SAFETY: every argument was checked above against `function`'s parameters: the count,
    // each value's type (here, or by construction under `Checks::Pointers`) and size, each
    // pointer's element type, and that memory is on `device`.
    Ok(unsafe { CheckedArgs::new_unchecked(refs) })
}

/// True when memory of `element` may be passed for a pointer to `pointee`: the same type, any
/// memory for `void*`, and device addresses (`uint64`) for pointers to pointers.
fn pointee_accepts(pointee: &Type, element: &Type) -> bool {
    pointee == element
        || *pointee == Type::Void
        || (matches!(pointee, Type::Pointer(_)) && *element == Type::Scalar(ScalarType::UInt64))
}
