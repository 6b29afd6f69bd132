//! The cas view of the core vocabulary (filled in by the cas adapter work).
