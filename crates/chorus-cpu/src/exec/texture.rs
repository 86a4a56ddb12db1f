//! Texture reads and surface accesses of a warp, lane by lane (the semantics are in
//! `crate::texture`).

use super::*;
use crate::texture::{self, Bound, Component, Texel};
use chorus_lang::ir::Builtin;

/// The operands of one [`Op::Texture`].
#[derive(Clone, Copy)]
pub(super) struct TextureAccess {
    pub(super) op: Builtin,
    pub(super) dst: Reg,
    pub(super) handle: Reg,
    pub(super) coords: [Reg; 3],
    pub(super) value: Reg,
    pub(super) component: Component,
    pub(super) count: u8,
}

impl BlockCtx<'_> {
    /// The object a handle names in this launch.
    fn bound(&self, handle: u64, lane: u32) -> Result<Bound<'_>, Fault> {
        self.launch
            .textures
            .iter()
            .find(|b| b.handle() == handle)
            .copied()
            .ok_or_else(|| {
                fault(
                    lane,
                    format!(
                        "the texture or surface object {handle:#x} is not an argument of this launch"
                    ),
                )
            })
    }

    /// Runs `access` on the active lanes of the frame whose registers start at `regs[0]`.
    pub(super) fn texture_lanes<const W: usize>(
        &self,
        regs: &mut [Lanes<W>],
        access: TextureAccess,
        exec: u64,
    ) -> Result<(), Fault> {
        let count = usize::from(access.count);
        let handles = regs[access.handle as usize];
        let coords = access.coords.map(|r| regs[r as usize]);
        for l in lanes_of(exec) {
            let i = l as usize;
            let bound = self.bound(handles[i], l)?;
            let lane_coords = coords.map(|c| c[i]);
            match (access.op, bound) {
                (Builtin::TexFetch, Bound::Texture(t, region)) => {
                    let index = lane_coords[0] as i64;
                    let texel = texture::fetch(t, &region, index).map_err(|m| fault(l, m))?;
                    self.store_texel(regs, access, i, t, texel, l)?;
                }
                (Builtin::Tex(dims), Bound::Texture(t, region)) => {
                    let xyz = lane_coords.map(|c| f32::from_bits(c as u32));
                    let texel = texture::sample(t, &region, dims, xyz).map_err(|m| fault(l, m))?;
                    self.store_texel(regs, access, i, t, texel, l)?;
                }
                (Builtin::SurfRead(dims, mode), Bound::Surface(s, region)) => {
                    let bytes = access.component.bytes() * count;
                    let xyz = lane_coords.map(|c| c as i64);
                    let offset = texture::surface_offset(s, dims, xyz, bytes, mode)
                        .map_err(|m| fault(l, m))?;
                    let mut raw = [0u8; 16];
                    if let Some(offset) = offset {
                        region.read_bytes(offset, &mut raw[..bytes]);
                    }
                    let size = access.component.bytes();
                    for c in 0..count {
                        let mut word = [0u8; 8];
                        word[..size].copy_from_slice(&raw[c * size..(c + 1) * size]);
                        let kind = component_kind(access.component);
                        regs[access.dst as usize + c][i] = from_raw(kind, u64::from_le_bytes(word));
                    }
                }
                (Builtin::SurfWrite(dims, mode), Bound::Surface(s, region)) => {
                    let bytes = access.component.bytes() * count;
                    let xyz = lane_coords.map(|c| c as i64);
                    let offset = texture::surface_offset(s, dims, xyz, bytes, mode)
                        .map_err(|m| fault(l, m))?;
                    if let Some(offset) = offset {
                        let size = access.component.bytes();
                        let mut raw = [0u8; 16];
                        for c in 0..count {
                            let bits = regs[access.value as usize + c][i].to_le_bytes();
                            raw[c * size..(c + 1) * size].copy_from_slice(&bits[..size]);
                        }
                        region.write_bytes(offset, &raw[..bytes]);
                    }
                }
                (op, Bound::Surface(..)) => {
                    return Err(fault(l, format!("{} of a surface object", describe(op))));
                }
                (op, Bound::Texture(..)) => {
                    return Err(fault(l, format!("{} of a texture object", describe(op))));
                }
            }
        }
        Ok(())
    }

    /// Writes the first components of `texel` to the destination registers of lane `i`.
    fn store_texel<const W: usize>(
        &self,
        regs: &mut [Lanes<W>],
        access: TextureAccess,
        i: usize,
        t: &crate::texture::TextureObject,
        texel: Texel,
        lane: u32,
    ) -> Result<(), Fault> {
        let count = usize::from(access.count);
        let bits =
            texture::texel_bits(t, texel, access.component, count).map_err(|m| fault(lane, m))?;
        for (c, b) in bits.iter().take(count).enumerate() {
            regs[access.dst as usize + c][i] = *b;
        }
        Ok(())
    }
}

/// The register kind of a component.
fn component_kind(component: Component) -> Kind {
    match component {
        Component::Float => Kind::F32,
        Component::Int { bytes: 1, signed } => {
            if signed {
                Kind::I8
            } else {
                Kind::U8
            }
        }
        Component::Int { bytes: 2, signed } => {
            if signed {
                Kind::I16
            } else {
                Kind::U16
            }
        }
        Component::Int { signed, .. } => {
            if signed {
                Kind::I32
            } else {
                Kind::U32
            }
        }
    }
}

/// The built-in's kernel-language name, for messages.
fn describe(op: Builtin) -> String {
    match op {
        Builtin::TexFetch => "tex1d-fetch".into(),
        Builtin::Tex(d) => format!("tex{d}d"),
        Builtin::SurfRead(d, _) => format!("surf{d}d-read"),
        Builtin::SurfWrite(d, _) => format!("surf{d}d-write"),
        other => format!("{other:?}"),
    }
}
