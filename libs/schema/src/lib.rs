//! The wire schema of boardcast, generated from `proto/`.
//!
//! Generated code (messages and the gRPC service definitions), and the conversion between the
//! schema's piece codes and shakmaty's pieces (`pieces`). Nothing here does I/O on its own; the
//! services decide where these messages travel.

pub mod pieces;

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

pub mod appeal {
    pub mod v1 {
        tonic::include_proto!("boardcast.appeal.v1");
    }
}
