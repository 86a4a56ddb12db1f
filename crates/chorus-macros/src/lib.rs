//! Proc macros of Chorus: `defkernel!`.
