//! The board gateway: from boards and clocks to JetStream, through a durable outbox.

pub mod dgt;
pub mod livechess;
pub mod outbox;
pub mod publisher;
pub mod recorder;
pub mod serial;
