//! The agui view of the core vocabulary (filled in by the agui adapter work).
