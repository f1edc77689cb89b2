//! A private nats-server with users and permissions (`boardcast_kit::nats_access`), for the tests
//! of who may do what on NATS.

use std::{path::Path, process::Stdio};

use anyhow::Context as _;
use boardcast_kit::{
    local::LocalNats,
    nats_access::{GatewayBoards, NatsAccess, Role, SimulatorUser},
};
use tempfile::TempDir;

/// A private nats-server with JetStream that admits only the users of its [`NatsAccess`].
pub struct SecureNats {
    pub server: LocalNats,
    pub access: NatsAccess,
    dir: TempDir,
}

impl SecureNats {
    /// Generates the users (the fixed roles and one user per gateway, with its boards) and
    /// starts the server with them, on a free port with its own store directory.
    pub fn start(gateways: &[(&str, &[&str])]) -> anyhow::Result<SecureNats> {
        let dir = tempfile::Builder::new()
            .prefix("boardcast-secure-nats-")
            .tempdir()
            .context("creating a directory for NATS")?;
        let gateways: Vec<GatewayBoards> = gateways
            .iter()
            .map(|(name, boards)| GatewayBoards::new(*name, boards.iter().copied()))
            .collect();
        // The tests play boards with the simulator, as a test hall does.
        let access = NatsAccess::generate(
            &dir.path().join("access"),
            &gateways,
            SimulatorUser::Included,
        )?;
        // The server's log stays in the directory, and is in the error if it does not start.
        let log_path = dir.path().join("nats.log");
        let log = std::fs::File::create(&log_path).context("creating the NATS log")?;
        let server = LocalNats::start_with_config(
            &dir.path().join("store"),
            0,
            Stdio::from(log),
            Some(&access.auth_config_path()),
        )
        .with_context(|| {
            format!(
                "its log:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            )
        })?;
        Ok(SecureNats {
            server,
            access,
            dir,
        })
    }

    /// The server's URL without credentials.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The server's URL with `role`'s user name and password.
    pub fn url_for(&self, role: &Role) -> anyhow::Result<String> {
        self.access.url_for(role, &self.server.url())
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("nats.log")).unwrap_or_default()
    }
}

/// `TestNats::start_secured`, as the other harness types are named.
impl crate::TestNats {
    pub fn start_secured(gateways: &[(&str, &[&str])]) -> anyhow::Result<SecureNats> {
        SecureNats::start(gateways)
    }
}
