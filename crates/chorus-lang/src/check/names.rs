//! Kernel-language names as the checker shows them.
//!
//! The IR keeps the names the kernel text (or a macro's gensym) gave; back ends choose their own
//! spellings (`crate::cfamily::Namer` for the C family), so nothing here knows C.

use crate::reader::GENSYM_PREFIX;

/// The kernel-language name as users should read it in messages (`#:g12` → `g12`).
pub fn display_name(name: &str) -> &str {
    name.strip_prefix(GENSYM_PREFIX).unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gensyms_lose_their_prefix() {
        assert_eq!(display_name("#:g12"), "g12");
        assert_eq!(display_name("x"), "x");
    }
}
