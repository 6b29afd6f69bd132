//! Compiles every protobuf file of the wire layer once, with protox (no system
//! `protoc`):
//! - the well-known types `google.protobuf.{Timestamp, Struct, Value, ListValue,
//!   Empty, Any}` (prost), whose ProtoJSON is written by hand in `src/wkt.rs`;
//! - `proto/a2a-1.1.proto` (A2A 1.1 draft: `proto/a2a.proto`, A2A 1.0, plus
//!   five fields): the `lf.a2a.v1` messages (prost), their ProtoJSON serde
//!   (pbjson), the `A2AService` gRPC client (tonic), and the server, generated
//!   from the service as the proto describes it (every method, its name, route,
//!   types and streaming, read from the compiled descriptor) with one change:
//!   GetTask answers a `crate::a2a::grpc::EncodedTask`, a `Task` already encoded
//!   as protobuf, through `crate::a2a::grpc::EncodedTaskCodec` (the bytes on the
//!   wire are those of the proto's `Task`);
//! - `proto/agui/events.proto`: the `ag_ui` event messages (prost).
//!
//! The compiled descriptor sets are kept: `a2a_descriptor.bin` (1.0, for the
//! schema generator and the check that 1.1 only adds) and
//! `a2a_descriptor_1_1.bin` (for the descriptor-driven ProtoJSON decoder).

use std::path::PathBuf;

use prost::Message;

/// The proto package and service.
const PACKAGE: &str = "lf.a2a.v1";
const SERVICE: &str = "A2AService";
/// The one method whose answer is not encoded by prost at call time.
const ENCODED_METHOD: &str = "GetTask";
/// Where the generated code finds the well-known types.
const WKT: &str = "crate::wkt";

/// The Rust path of a proto message type (`.lf.a2a.v1.Task`,
/// `.google.protobuf.Empty`).
fn rust_type(proto: &str) -> Result<String, Box<dyn std::error::Error>> {
    if let Some(name) = proto.strip_prefix(".lf.a2a.v1.") {
        Ok(format!("crate::a2a::pb::{name}"))
    } else if let Some(name) = proto.strip_prefix(".google.protobuf.") {
        Ok(format!("{WKT}::{name}"))
    } else {
        Err(format!("no Rust type for the proto type {proto}").into())
    }
}

/// `SendStreamingMessage` → `send_streaming_message`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read at run time (not `env!`), so a build-script binary reused from
    // another checkout sharing the target directory still finds this one's.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let a2a_1_0 = root.join("a2a.proto");
    let a2a = root.join("a2a-1.1.proto");
    println!("cargo:rerun-if-changed={}", a2a_1_0.display());
    let agui_dir = root.join("agui");
    println!("cargo:rerun-if-changed={}", a2a.display());
    println!(
        "cargo:rerun-if-changed={}",
        agui_dir.join("events.proto").display()
    );
    let out = PathBuf::from(std::env::var("OUT_DIR")?);

    // The well-known types, from protox's bundled copies.
    let wkt = protox::compile(
        [
            "google/protobuf/timestamp.proto",
            "google/protobuf/struct.proto",
            "google/protobuf/empty.proto",
            "google/protobuf/any.proto",
        ],
        [&root],
    )?;
    prost_build::Config::new()
        .compile_well_known_types()
        // Struct fields in key order, so a message encodes the same text twice.
        .btree_map([".google.protobuf.Struct"])
        .bytes([".google.protobuf.Any"])
        .compile_fds(wkt)?;

    // A2A: messages, ProtoJSON, gRPC client.
    let fds_1_0 = protox::compile([&a2a_1_0], [&root])?;
    std::fs::write(out.join("a2a_descriptor.bin"), fds_1_0.encode_to_vec())?;
    let fds = protox::compile([&a2a], [&root])?;
    let descriptor_path = out.join("a2a_descriptor_1_1.bin");
    std::fs::write(&descriptor_path, fds.encode_to_vec())?;
    let service = fds
        .file
        .iter()
        .filter(|f| f.package.as_deref() == Some(PACKAGE))
        .flat_map(|f| f.service.iter())
        .find(|s| s.name.as_deref() == Some(SERVICE))
        .ok_or("lf.a2a.v1.A2AService is not in proto/a2a-1.1.proto")?
        .clone();
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .build_transport(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", WKT)
        .compile_fds_with_config(fds, {
            let mut config = prost_build::Config::new();
            config.enable_type_names();
            config
        })?;
    let descriptors = std::fs::read(&descriptor_path)?;
    pbjson_build::Builder::new()
        .register_descriptors(&descriptors)?
        .ignore_unknown_fields()
        .extern_path(".google.protobuf", WKT)
        .build(&[".lf.a2a.v1"])?;

    // A2A: the gRPC server.
    let mut server = tonic_prost_build::manual::Service::builder()
        .name(SERVICE)
        .package(PACKAGE);
    let mut encoded = false;
    for m in &service.method {
        let name = m.name.as_deref().ok_or("a method without a name")?;
        let input = rust_type(m.input_type.as_deref().unwrap_or_default())?;
        let mut method = tonic_prost_build::manual::Method::builder()
            .name(snake(name))
            .route_name(name)
            .input_type(input);
        method = if name == ENCODED_METHOD {
            encoded = true;
            method
                .output_type("crate::a2a::grpc::EncodedTask")
                .codec_path("crate::a2a::grpc::EncodedTaskCodec")
        } else {
            method
                .output_type(rust_type(m.output_type.as_deref().unwrap_or_default())?)
                .codec_path("::tonic_prost::ProstCodec")
        };
        if m.client_streaming() {
            method = method.client_streaming();
        }
        if m.server_streaming() {
            method = method.server_streaming();
        }
        server = server.method(method.build());
    }
    if !encoded {
        return Err(format!("{ENCODED_METHOD} is not a method of {SERVICE}").into());
    }
    tonic_prost_build::manual::Builder::new()
        .build_client(false)
        .build_server(true)
        .build_transport(false)
        .compile(&[server.build()]);

    // AG-UI events.
    let fds = protox::compile(["events.proto"], [&agui_dir])?;
    prost_build::Config::new()
        .compile_well_known_types()
        .extern_path(".google.protobuf", WKT)
        .compile_fds(fds)?;
    Ok(())
}
