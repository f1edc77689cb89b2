//! Compiles the schemas in `proto/` with protox, so no system `protoc` is needed.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");
    let files = [
        "boardcast/device/v1/observation.proto",
        "boardcast/game/v1/events.proto",
        "boardcast/game/v1/game_service.proto",
        "boardcast/appeal/v1/record_file.proto",
    ];
    let fds = protox::compile(files, [proto_root])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    println!("cargo:rerun-if-changed={proto_root}");
    Ok(())
}
