//! The CUDA backend of Chorus.
