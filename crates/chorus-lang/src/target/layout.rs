//! Host layouts: the size and alignment of each kernel type in a target's memory, which the host
//! must reproduce to pass structures and read globals.
//!
//! CUDA, HIP and the CPU executor use C's rules with CUDA's `vector_types.h` alignments
//! ([`LayoutRules::C`]: `float3` is 12 bytes aligned to 4, `float4` 16 aligned to 16); Metal
//! uses MSL's ([`LayoutRules::Msl`]: a 3-vector is as large and aligned as a 4-vector, so
//! `float3` is 16 bytes aligned to 16). The [`StructDef`] offsets, sizes and alignments the
//! checker stores in the IR are C-family layouts; [`Target::struct_layout`] recomputes them for
//! a target with other rules.

use super::Target;
use crate::ir::StructDef;
use crate::types::{ScalarType, Type, VectorType};

/// How a target lays out vectors and structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LayoutRules {
    /// C's rules with CUDA's vector alignments (CUDA, HIP, the CPU executor): each field at the
    /// next multiple of its alignment, the size rounded up to the largest alignment; scalars
    /// aligned to their size; vectors as [`VectorType::align`] says.
    C,
    /// The Metal Shading Language's (MSL 3.1 §2.2 and table 2.4): as C for scalars and
    /// structures, but an n-component vector is aligned to its size rounded to a power of two,
    /// so a 3-vector occupies 4 components (`float3` 16 bytes, `half3` 8). MSL has no `double`,
    /// `fp8`, `fp4` or cuRAND state: those have no layout.
    Msl,
}

/// The layout of a structure under some [`LayoutRules`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    /// Size in bytes (a multiple of `align`).
    pub size: usize,
    /// Alignment in bytes (the largest field alignment).
    pub align: usize,
    /// Byte offset of each field, in field order.
    pub offsets: Vec<usize>,
}

impl LayoutRules {
    /// Size and alignment of `ty`; structure definitions come from `structs`. `None` for
    /// `void`, an unknown structure, or a type these rules cannot lay out.
    pub fn layout(self, ty: &Type, structs: &[StructDef]) -> Option<(usize, usize)> {
        self.layout_within(ty, structs, structs.len())
    }

    /// The layout of structure `def` (its fields' types come from `structs`).
    pub fn struct_layout(self, def: &StructDef, structs: &[StructDef]) -> Option<StructLayout> {
        self.struct_layout_within(def, structs, structs.len())
    }

    /// [`LayoutRules::layout`], recursing into at most `depth` nested structures: a structure
    /// holds only earlier ones by value, so a deeper nesting is a malformed module.
    fn layout_within(
        self,
        ty: &Type,
        structs: &[StructDef],
        depth: usize,
    ) -> Option<(usize, usize)> {
        match ty {
            Type::Void => None,
            Type::Bool => Some((1, 1)),
            Type::Scalar(s) => self.scalar(*s),
            Type::Vector(v) => self.vector(*v),
            Type::Pointer(_) => Some((8, 8)),
            Type::CurandStateXorwow => (self == LayoutRules::C).then_some((48, 8)),
            // 64-bit handles (`cudaTextureObject_t`, `cudaSurfaceObject_t`).
            Type::TextureObject | Type::SurfaceObject => (self == LayoutRules::C).then_some((8, 8)),
            // CUDA's `CUtensorMap`: 16 64-bit words, 64-byte aligned.
            Type::TensorMap => (self == LayoutRules::C).then_some((128, 64)),
            // N/2 floats.
            Type::WgmmaAccumulator(n) => {
                (self == LayoutRules::C).then_some((usize::from(*n) * 2, 4))
            }
            Type::Struct(name) => {
                let def = structs.iter().find(|s| *s.name == **name)?;
                let layout = self.struct_layout_within(def, structs, depth)?;
                Some((layout.size, layout.align))
            }
        }
    }

    fn struct_layout_within(
        self,
        def: &StructDef,
        structs: &[StructDef],
        depth: usize,
    ) -> Option<StructLayout> {
        if self == LayoutRules::C {
            // The checker computed these with the C rules when it built the definition.
            return Some(StructLayout {
                size: def.size,
                align: def.align,
                offsets: def.fields.iter().map(|f| f.offset).collect(),
            });
        }
        let depth = depth.checked_sub(1)?;
        let (mut size, mut align) = (0usize, 1usize);
        let mut offsets = Vec::with_capacity(def.fields.len());
        for field in &def.fields {
            let (field_size, field_align) = self.layout_within(&field.ty, structs, depth)?;
            let offset = size.checked_next_multiple_of(field_align)?;
            offsets.push(offset);
            size = offset.checked_add(field_size)?;
            align = align.max(field_align);
        }
        Some(StructLayout {
            size: size.checked_next_multiple_of(align)?,
            align,
            offsets,
        })
    }

    fn scalar(self, s: ScalarType) -> Option<(usize, usize)> {
        match (self, s) {
            (LayoutRules::Msl, ScalarType::Double | ScalarType::Fp8 | ScalarType::Fp4) => None,
            _ => Some((s.size(), s.align())),
        }
    }

    fn vector(self, v: VectorType) -> Option<(usize, usize)> {
        match self {
            LayoutRules::C => Some((v.size(), v.align())),
            LayoutRules::Msl => {
                let (element, _) = self.scalar(v.element())?;
                let size = element * v.len().next_power_of_two();
                Some((size, size))
            }
        }
    }
}

impl Target {
    /// Size and alignment of `ty` in this target's memory (structure definitions from
    /// `structs`); `None` for `void`, an unknown structure or a type the target cannot lay out.
    pub fn layout(&self, ty: &Type, structs: &[StructDef]) -> Option<(usize, usize)> {
        self.layout_rules.layout(ty, structs)
    }

    /// Size, alignment and field offsets of structure `def` in this target's memory.
    pub fn struct_layout(&self, def: &StructDef, structs: &[StructDef]) -> Option<StructLayout> {
        self.layout_rules.struct_layout(def, structs)
    }
}

impl Type {
    /// Size and alignment in bytes under the C-family rules ([`LayoutRules::C`], those of CUDA,
    /// HIP and the CPU executor). Structure layouts come from `structs`; `None` for `void` and
    /// unknown structures. For another target's layout, use [`Target::layout`].
    pub fn layout(&self, structs: &[StructDef]) -> Option<(usize, usize)> {
        LayoutRules::C.layout(self, structs)
    }
}

impl LayoutRules {
    /// True when `ty` has the same size and the same byte positions for every component under
    /// these rules as under `other`, so its bytes can be used as they are by either.
    pub fn same_as(self, other: LayoutRules, ty: &Type, structs: &[StructDef]) -> bool {
        if self == other {
            return true;
        }
        let depth = structs.len();
        self.same_within(other, ty, structs, depth)
    }

    fn same_within(
        self,
        other: LayoutRules,
        ty: &Type,
        structs: &[StructDef],
        depth: usize,
    ) -> bool {
        match ty {
            Type::Struct(name) => {
                let Some(depth) = depth.checked_sub(1) else {
                    return false;
                };
                let Some(def) = structs.iter().find(|s| *s.name == **name) else {
                    return false;
                };
                match (
                    self.struct_layout(def, structs),
                    other.struct_layout(def, structs),
                ) {
                    (Some(a), Some(b)) => {
                        a == b
                            && def
                                .fields
                                .iter()
                                .all(|f| self.same_within(other, &f.ty, structs, depth))
                    }
                    _ => false,
                }
            }
            _ => {
                let (a, b) = (self.layout(ty, structs), other.layout(ty, structs));
                a.is_some() && a.map(|l| l.0) == b.map(|l| l.0)
            }
        }
    }

    /// Copies one value of `ty` from `src`, laid out by these rules, into `dst`, laid out by
    /// `to`: each scalar and vector component moves to its place under `to`, and padding in
    /// `dst` is left as it is (zero it first). `None` when either rules cannot lay `ty` out or
    /// a slice is shorter than `ty` under its rules.
    pub fn convert(
        self,
        to: LayoutRules,
        ty: &Type,
        structs: &[StructDef],
        src: &[u8],
        dst: &mut [u8],
    ) -> Option<()> {
        self.convert_within(to, ty, structs, src, dst, structs.len())
    }

    fn convert_within(
        self,
        to: LayoutRules,
        ty: &Type,
        structs: &[StructDef],
        src: &[u8],
        dst: &mut [u8],
        depth: usize,
    ) -> Option<()> {
        let (from_size, _) = self.layout(ty, structs)?;
        let (to_size, _) = to.layout(ty, structs)?;
        let (src, dst) = (src.get(..from_size)?, dst.get_mut(..to_size)?);
        match ty {
            Type::Struct(name) => {
                let depth = depth.checked_sub(1)?;
                let def = structs.iter().find(|s| *s.name == **name)?;
                let from = self.struct_layout(def, structs)?;
                let into = to.struct_layout(def, structs)?;
                for ((field, a), b) in def.fields.iter().zip(&from.offsets).zip(&into.offsets) {
                    self.convert_within(
                        to,
                        &field.ty,
                        structs,
                        src.get(*a..)?,
                        dst.get_mut(*b..)?,
                        depth,
                    )?;
                }
            }
            // A vector's components are contiguous under every rules; only the padding after
            // them (a 3-vector's fourth slot under MSL's) differs.
            Type::Vector(v) => {
                let (element, _) = self.scalar(v.element())?;
                let n = element * v.len();
                dst.get_mut(..n)?.copy_from_slice(src.get(..n)?);
            }
            _ => dst.copy_from_slice(src),
        }
        Some(())
    }

    /// `count` values of `ty` stored back to back in `src` under these rules (each at a
    /// multiple of its size), stored again under `to`; `None` as for [`LayoutRules::convert`],
    /// or when `src` does not hold exactly `count` values.
    pub fn convert_array(
        self,
        to: LayoutRules,
        ty: &Type,
        structs: &[StructDef],
        src: &[u8],
        count: usize,
    ) -> Option<Vec<u8>> {
        let (from_size, _) = self.layout(ty, structs)?;
        let (to_size, _) = to.layout(ty, structs)?;
        if src.len() != from_size.checked_mul(count)? {
            return None;
        }
        let mut out = vec![0u8; to_size.checked_mul(count)?];
        for (a, b) in src
            .chunks_exact(from_size)
            .zip(out.chunks_exact_mut(to_size))
        {
            self.convert(to, ty, structs, a, b)?;
        }
        Some(out)
    }
}

#[cfg(test)]
mod conversion_tests {
    use super::*;
    use crate::target::FoldedConstants;

    fn structs(source: &str) -> Vec<StructDef> {
        crate::compile_str(source, "t.lisp").unwrap().structs
    }

    fn floats(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|f| f.to_le_bytes()).collect()
    }

    #[test]
    fn constant_initializers_as_bytes_under_each_rules() {
        let module = crate::compile_str(
            "(defkernel-struct pv (k int8) (p float3))\n\
             (defglobal g (make-pv (int8 -3) (float3 1.0 (- 2.0) 3)) :constant)\n\
             (defglobal h (half 1.5) :constant)\n(defglobal u (uint -1) :constant)\n\
             (defkernel k (void ((out float*))) (set (aref out 0) (float h)))",
            "c.lisp",
        )
        .unwrap();
        let bytes = |rules: LayoutRules, i: usize| {
            rules
                .constant_bytes(&module.globals[i], &module.structs, &FoldedConstants)
                .unwrap()
        };
        let mut c = vec![0xFDu8, 0, 0, 0];
        c.extend(floats(&[1.0, -2.0, 3.0]));
        assert_eq!(bytes(LayoutRules::C, 0), c);
        let mut msl = vec![0u8; 32];
        msl[0] = 0xFD;
        msl[16..28].copy_from_slice(&floats(&[1.0, -2.0, 3.0]));
        assert_eq!(bytes(LayoutRules::Msl, 0), msl);
        assert_eq!(
            bytes(LayoutRules::Msl, 1),
            half::f16::from_f32(1.5).to_le_bytes()
        );
        assert_eq!(bytes(LayoutRules::C, 2), u32::MAX.to_le_bytes());
    }

    #[test]
    fn float3_arrays_widen_and_narrow() {
        let ty = Type::Vector(VectorType::Float3);
        let c = floats(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let msl = LayoutRules::C
            .convert_array(LayoutRules::Msl, &ty, &[], &c, 2)
            .unwrap();
        assert_eq!(msl, floats(&[1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0, 0.0]));
        let back = LayoutRules::Msl
            .convert_array(LayoutRules::C, &ty, &[], &msl, 2)
            .unwrap();
        assert_eq!(back, c);
        assert!(!LayoutRules::C.same_as(LayoutRules::Msl, &ty, &[]));
        assert!(LayoutRules::C.same_as(LayoutRules::Msl, &Type::Vector(VectorType::Float4), &[]));
        assert!(LayoutRules::C.same_as(LayoutRules::Msl, &Type::FLOAT, &[]));
        assert!(
            LayoutRules::C
                .convert_array(LayoutRules::Msl, &ty, &[], &c, 3)
                .is_none()
        );
    }

    #[test]
    fn structures_with_float3_move_their_fields() {
        let defs = structs(
            "(defkernel-struct body (mass float) (pos float3) (tag int))
             (defkernel-struct pair (a body) (b float2))
             (defkernel k (void ((p pair*))) (return))",
        );
        let body = Type::Struct(defs[0].name.clone());
        let pair = Type::Struct(defs[1].name.clone());
        // C: mass 0, pos 4..16, tag 16 (20 bytes); MSL: mass 0, pos 16..32, tag 32 (48).
        assert_eq!(LayoutRules::C.layout(&body, &defs), Some((20, 4)));
        assert_eq!(LayoutRules::Msl.layout(&body, &defs), Some((48, 16)));
        assert!(!LayoutRules::C.same_as(LayoutRules::Msl, &pair, &defs));
        let mut c = floats(&[7.0, 1.0, 2.0, 3.0]);
        c.extend(9i32.to_le_bytes());
        // C: `b` (float2, 8-aligned) at 24, after 4 bytes of padding; 32 bytes in all.
        c.extend([0u8; 4]);
        c.extend(floats(&[0.5, 0.25]));
        assert_eq!(LayoutRules::C.layout(&pair, &defs), Some((32, 8)));
        let msl = LayoutRules::C
            .convert_array(LayoutRules::Msl, &pair, &defs, &c, 1)
            .unwrap();
        let (size, _) = LayoutRules::Msl.layout(&pair, &defs).unwrap();
        assert_eq!(msl.len(), size);
        assert_eq!(&msl[..4], &7.0f32.to_le_bytes());
        assert_eq!(&msl[16..28], &floats(&[1.0, 2.0, 3.0])[..]);
        assert_eq!(&msl[32..36], &9i32.to_le_bytes());
        assert_eq!(&msl[48..56], &floats(&[0.5, 0.25])[..]);
        let back = LayoutRules::Msl
            .convert_array(LayoutRules::C, &pair, &defs, &msl, 1)
            .unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn structures_of_scalars_are_the_same_under_both() {
        let defs = structs(
            "(defkernel-struct p (a float) (b int) (c float4))
             (defkernel k (void ((x p*))) (return))",
        );
        let ty = Type::Struct(defs[0].name.clone());
        assert!(LayoutRules::C.same_as(LayoutRules::Msl, &ty, &defs));
    }
}
