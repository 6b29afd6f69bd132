//! The upstream protocols: each is a part ([`crate::bridged::Upstream`]) of
//! the one bridged executor, [`crate::Bridged`].

pub mod a2a;
pub mod agui;
pub mod mcp;
