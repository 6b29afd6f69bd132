//! Generates the `lf.a2a.v1` messages (prost) and their ProtoJSON serde impls
//! (pbjson) from `proto/a2a.proto`, with protox: no system `protoc` is needed.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = proto_dir.join("a2a.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&proto_dir])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptor_path = out.join("a2a_descriptor.bin");
    std::fs::write(&descriptor_path, fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;
    let descriptors = std::fs::read(&descriptor_path)?;
    pbjson_build::Builder::new()
        .register_descriptors(&descriptors)?
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
