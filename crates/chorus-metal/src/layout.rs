//! Values from the host's C layout to MSL's: a `float3` is 12 bytes on the host and in CUDA, 16
//! in MSL, so a by-value argument that holds one is laid out again for `setBytes` (the facade
//! stores memory blocks on a Metal device with MSL's stride and converts them at each sync,
//! with the same [`LayoutRules::convert`]).

use chorus_lang::ir::StructDef;
use chorus_lang::target::LayoutRules;
use chorus_lang::types::Type;

/// True when `ty` has the same size and field offsets in C's layout as in MSL's, so a host
/// value of it can be read by an MSL kernel as it is.
pub fn same_layout(ty: &Type, structs: &[StructDef]) -> bool {
    LayoutRules::C.same_as(LayoutRules::Msl, ty, structs)
}

/// The MSL-layout bytes of a value of type `ty` given in C layout; `None` when `bytes` is not
/// as long as `ty` in C's layout or MSL cannot lay `ty` out.
pub fn to_msl(ty: &Type, bytes: &[u8], structs: &[StructDef]) -> Option<Vec<u8>> {
    LayoutRules::C.convert_array(LayoutRules::Msl, ty, structs, bytes, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_lang::types::VectorType;

    fn structs(source: &str) -> Vec<StructDef> {
        chorus_lang::compile_str(source, "t.lisp").unwrap().structs
    }

    #[test]
    fn float3_widens_to_sixteen_bytes() {
        let bytes: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let msl = to_msl(&Type::Vector(VectorType::Float3), &bytes, &[]).unwrap();
        assert_eq!(msl.len(), 16);
        assert_eq!(&msl[..12], &bytes[..]);
        assert!(!same_layout(&Type::Vector(VectorType::Float3), &[]));
        assert!(same_layout(&Type::Vector(VectorType::Float4), &[]));
        assert!(same_layout(&Type::FLOAT, &[]));
    }

    #[test]
    fn structures_move_their_fields() {
        let defs = structs(
            "(defkernel-struct particle (mass float) (pos float3))
             (defkernel k (void ((p particle))) (return))",
        );
        let ty = Type::Struct(defs[0].name.clone());
        assert!(!same_layout(&ty, &defs));
        // C: mass at 0, pos at 4..16 (16 bytes); MSL: mass at 0, pos at 16..32 (32 bytes).
        let mut c = vec![0u8; 16];
        c[..4].copy_from_slice(&7.0f32.to_le_bytes());
        c[4..8].copy_from_slice(&1.0f32.to_le_bytes());
        let msl = to_msl(&ty, &c, &defs).unwrap();
        assert_eq!(msl.len(), 32);
        assert_eq!(&msl[..4], &7.0f32.to_le_bytes());
        assert_eq!(&msl[16..20], &1.0f32.to_le_bytes());
        assert!(to_msl(&ty, &c[..8], &defs).is_none());
    }
}
