//! The a2a-tck agent profile (filled in below).
