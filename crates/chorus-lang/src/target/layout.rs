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
