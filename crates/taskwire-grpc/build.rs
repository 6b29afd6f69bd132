//! Generates the `lf.a2a.v1.A2AService` server and client from `proto/a2a.proto`
//! with protox (no system `protoc`). The messages are not generated here: they are
//! `taskwire_a2a::pb`, the same types the JSON-RPC binding uses.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = proto_dir.join("a2a.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&proto_dir])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .extern_path(".lf.a2a.v1", "::taskwire_a2a::pb")
        .compile_fds(fds)?;
    Ok(())
}
