//! The a2a view of the core vocabulary (filled in by the a2a adapter work).
