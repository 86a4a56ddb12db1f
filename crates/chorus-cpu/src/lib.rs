//! The CPU executor of Chorus.
