//! The host side of Metal's layouts, on any machine: `defkernel!`'s structures carry their
//! definitions (`KernelValue::struct_defs`), from which MSL's layout is computed and values are
//! converted (what memory blocks on a Metal device and the Metal backend's by-value arguments
//! do; the conversion itself runs through the MSL shim in chorus-metal's tests).

use chorus::lang::target::{LayoutRules, Target};
use chorus::{Float3, KernelValue};

chorus::defkernel! {
    (defkernel-struct body (mass float) (pos float3) (tag int))
    (defkernel-struct system (first body) (scale float2))

    (defkernel touch-bodies (void ((bodies system*)))
      (set (body-tag (system-first (aref bodies 0))) 1))
}

#[test]
fn structures_carry_their_definitions_for_other_layouts() {
    let defs = System::struct_defs();
    let names: Vec<&str> = defs.iter().map(|d| &*d.name).collect();
    assert_eq!(names, ["body", "system"], "nested definitions first");
    assert_eq!(defs[0].size, std::mem::size_of::<Body>());
    assert_eq!(defs[0].fields[1].offset, 4);
    assert_eq!(defs[0].fields[1].ty, <Float3 as KernelValue>::kernel_type());
    let metal = Target::metal(8).expect("Apple8");
    let ty = System::kernel_type();
    // C: body 20 bytes, scale at 24, 32 in all; MSL: body 48 (pos at 16, tag at 32), scale at
    // 48, 64 in all.
    assert_eq!(LayoutRules::C.layout(&ty, &defs), Some((32, 8)));
    assert_eq!(metal.layout(&ty, &defs), Some((64, 16)));
    assert!(!LayoutRules::C.same_as(metal.layout_rules, &ty, &defs));
    assert!(LayoutRules::C.same_as(metal.layout_rules, &f32::kernel_type(), &[]));
    assert!(f32::struct_defs().is_empty());

    let value = System::new(
        Body::new(2.0, Float3::new(1.0, 2.0, 3.0), 7),
        chorus::Float2::new(0.5, 0.25),
    );
    let c = bytemuck::bytes_of(&value);
    let msl = LayoutRules::C
        .convert_array(metal.layout_rules, &ty, &defs, c, 1)
        .expect("converts");
    assert_eq!(&msl[16..28], bytemuck::bytes_of(&[1.0f32, 2.0, 3.0]));
    assert_eq!(&msl[32..36], &7i32.to_ne_bytes());
    let back = metal
        .layout_rules
        .convert_array(LayoutRules::C, &ty, &defs, &msl, 1)
        .expect("converts back");
    assert_eq!(back, c);
}
