//! Compiles proto/agui/events.proto with protox (pure Rust, no system protoc) and
//! generates the prost types.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto/agui");
    println!(
        "cargo:rerun-if-changed={}",
        dir.join("events.proto").display()
    );
    let fds = protox::compile(["events.proto"], [&dir])?;
    prost_build::Config::new().compile_fds(fds)?;
    Ok(())
}
