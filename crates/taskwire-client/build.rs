//! Generates, with protox (no system `protoc`):
//! - the `lf.a2a.v1` messages (prost), their ProtoJSON serde (pbjson) and the
//!   `A2AService` gRPC client (tonic) from `proto/a2a.proto`;
//! - the `ag_ui` event messages (prost) from `proto/agui/events.proto`.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time (not `env!`), so a build-script binary reused from
    // another checkout sharing the target directory still finds this one's.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let a2a = root.join("a2a.proto");
    let agui_dir = root.join("agui");
    println!("cargo:rerun-if-changed={}", a2a.display());
    println!(
        "cargo:rerun-if-changed={}",
        agui_dir.join("events.proto").display()
    );
    let out = PathBuf::from(std::env::var("OUT_DIR")?);

    let fds = protox::compile([&a2a], [&root])?;
    let descriptor_path = out.join("a2a_descriptor.bin");
    std::fs::write(&descriptor_path, fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .build_transport(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;
    let descriptors = std::fs::read(&descriptor_path)?;
    pbjson_build::Builder::new()
        .register_descriptors(&descriptors)?
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;

    let fds = protox::compile(["events.proto"], [&agui_dir])?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(fds)?;
    Ok(())
}
