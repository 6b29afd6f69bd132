//! The mcp view of the core vocabulary (filled in by the mcp adapter work).
