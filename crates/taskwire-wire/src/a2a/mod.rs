//! A2A 1.0 on the wire: the `lf.a2a.v1` messages of `proto/a2a.proto`, compiled
//! once here for every binding and every side (the JSON-RPC, HTTP+JSON and gRPC
//! adapters, the client, the schema generator).

pub mod errors;
pub mod grpc;
pub mod protojson;

/// The `lf.a2a.v1` messages (prost, with ProtoJSON serde from pbjson, and the
/// `A2AService` gRPC client in `a2a_service_client`).
#[allow(missing_docs, unreachable_pub, clippy::all, reason = "generated code")]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
}

/// The compiled `FileDescriptorSet` of `proto/a2a.proto` (with its imports), as
/// protobuf bytes: the decoder of [`protojson`] and the schema generator read it.
pub static DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"));

/// The descriptor pool of [`DESCRIPTOR`], decoded once.
pub fn descriptor_pool() -> Result<&'static prost_reflect::DescriptorPool, crate::WireError> {
    static POOL: std::sync::OnceLock<Result<prost_reflect::DescriptorPool, String>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        prost_reflect::DescriptorPool::decode(DESCRIPTOR).map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| crate::WireError::Descriptor(e.clone()))
}
