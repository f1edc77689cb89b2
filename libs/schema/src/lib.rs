//! The wire schema of boardcast, generated from `proto/`.
//!
//! Generated code only: messages and the gRPC service definitions. Nothing here does I/O on its
//! own; the services decide where these messages travel.

pub mod device {
    pub mod v1 {
        tonic::include_proto!("boardcast.device.v1");
    }
}

pub mod game {
    // Generated oneofs hold whole messages; boxing them would change the generated API.
    #[allow(clippy::large_enum_variant)]
    pub mod v1 {
        tonic::include_proto!("boardcast.game.v1");
    }
}
