//! Chorus: the facade users depend on.
