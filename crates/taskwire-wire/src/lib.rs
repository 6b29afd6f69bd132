//! The wire layer of taskwire: every message the protocols put on the wire,
//! defined once and used by everything that sends, reads or describes them (the
//! adapters, `taskwire-client` and the schema generator).
//!
//! - [`wkt`]: the protobuf well-known types the protocols use, with ProtoJSON
//!   serde written for them (timestamps in UTC with `Z`, integral numbers of a
//!   `google.protobuf.Value` as integers);
//! - [`a2a`]: the `lf.a2a.v1` messages generated once from `proto/a2a.proto`
//!   ([`a2a::pb`]), their ProtoJSON ([`a2a::protojson`]), the compiled descriptor
//!   ([`a2a::DESCRIPTOR`]) and the `A2AService` gRPC client and server stubs
//!   ([`a2a::grpc`]);
//! - [`agui`]: the `ag_ui` protobuf events from `proto/agui/events.proto`;
//! - [`cas`]: the CAS task status objects, messages, reviews and error body;
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope, id rules and error object of A2A and
//!   MCP, for servers and clients;
//! - [`mcp`]: the MCP task messages of both generations (2026-07-28 with the
//!   tasks extension, 2025-11-25) as serde types, with schemars derives behind
//!   the `schema` feature;
//! - [`body`]: an HTTP request body read within a limit, the same at every
//!   adapter's edge (a refused body is read before the refusal);
//! - [`names`]: method, header and `_meta` names of A2A and MCP; the A2A error
//!   kinds are [`a2a::errors`];
//! - `schema` (feature `validate`): the one validator of the committed JSON
//!   Schemas, for the schema generator's tests and `taskwire conformance`.
//!
//! This crate depends on no other taskwire crate: a client built on it carries
//! none of the task core.

pub mod a2a;
pub mod agui;
pub mod body;
pub mod cas;
pub mod error;
pub mod jsonrpc;
pub mod mcp;
pub mod names;
#[cfg(feature = "validate")]
pub mod schema;
pub mod wkt;

pub use error::WireError;
