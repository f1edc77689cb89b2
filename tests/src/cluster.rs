//! A three-node (or n-node) nats-server cluster with JetStream on loopback, for tests of
//! replicated streams and node failures.
//!
//! Each node has its own `server_name`, store directory, client, monitoring and cluster ports,
//! and routes to every other node; configuration files are written to a temporary directory.
//! Nodes can be killed (SIGKILL) and restarted on the same store directory and ports, and paused
//! (SIGSTOP) and resumed. The cluster runs on Debian's nats-server (2.9.10) or on the current one
//! `scripts/ensure-tools.sh --test` installs into `var/` ([`NatsServer`]).

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use async_nats::jetstream::{self, stream};
use boardcast_kit::local::{ManagedProcess, find_nats_server, free_port};
use tempfile::TempDir;

/// Which nats-server a cluster runs.
#[derive(Clone, Debug)]
pub struct NatsServer {
    pub binary: PathBuf,
    /// Whether JetStream fsyncs every write (`sync_interval: always`, from 2.10 on): what
    /// production runs on a current server. 2.9.10 has no such setting (it syncs every minute).
    pub sync_always: bool,
}

/// The current nats-server the tests also run on, pinned in `scripts/nats-server-current.txt`.
pub const CURRENT_NATS_VERSION: &str = "2.15.1";

impl NatsServer {
    /// The system's (Debian's 2.9.10), or `BOARDCAST_NATS_SERVER`.
    pub fn system() -> anyhow::Result<NatsServer> {
        Ok(NatsServer {
            binary: find_nats_server()?,
            sync_always: false,
        })
    }

    /// The current release `scripts/ensure-tools.sh --test` installs into `var/`.
    pub fn current() -> anyhow::Result<NatsServer> {
        let binary = crate::repo_root()
            .join("var")
            .join(format!("nats-server-{CURRENT_NATS_VERSION}"))
            .join("bin/nats-server");
        if !binary.is_file() {
            bail!(
                "nats-server {CURRENT_NATS_VERSION} is not installed at {}: run \
                 scripts/ensure-tools.sh --test (make test does)",
                binary.display()
            );
        }
        Ok(NatsServer {
            binary,
            sync_always: true,
        })
    }

    /// The version the binary reports, e.g. `v2.9.10`.
    pub fn version(&self) -> anyhow::Result<String> {
        let out = Command::new(&self.binary)
            .arg("--version")
            .output()
            .with_context(|| format!("running {} --version", self.binary.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text.trim().trim_start_matches("nats-server: ").to_owned())
    }
}

pub struct ClusterNode {
    pub name: String,
    pub port: u16,
    pub monitor_port: u16,
    pub cluster_port: u16,
    config: PathBuf,
    binary: PathBuf,
    process: Option<ManagedProcess>,
}

impl ClusterNode {
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        let process = ManagedProcess::spawn(
            &format!("nats-server {}", self.name),
            Command::new(&self.binary)
                .arg("-c")
                .arg(&self.config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        self.process = Some(process);
        Ok(())
    }

    /// True when the node answers `/healthz?js-enabled-only=true` with 200.
    fn healthy(&self) -> bool {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.monitor_port));
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let request = "GET /healthz?js-enabled-only=true HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        let mut response = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut response).is_ok()
            && response.split_whitespace().nth(1) == Some("200")
    }
}

pub struct TestCluster {
    pub nodes: Vec<ClusterNode>,
    dir: TempDir,
}

impl TestCluster {
    /// Starts `size` nodes of the system's nats-server and waits until JetStream has a meta
    /// leader and accepts a stream replicated on every node.
    pub async fn start(size: usize) -> anyhow::Result<TestCluster> {
        Self::start_on(size, &NatsServer::system()?).await
    }

    /// `start`, on `server`.
    pub async fn start_on(size: usize, server: &NatsServer) -> anyhow::Result<TestCluster> {
        let dir = tempfile::Builder::new()
            .prefix("boardcast-cluster-")
            .tempdir()
            .context("creating a directory for the cluster")?;
        let mut nodes = Vec::new();
        for i in 0..size {
            let name = format!("n{}", i + 1);
            nodes.push(ClusterNode {
                config: dir.path().join(format!("{name}.conf")),
                binary: server.binary.clone(),
                name,
                port: free_port()?,
                monitor_port: free_port()?,
                cluster_port: free_port()?,
                process: None,
            });
        }
        for node in &nodes {
            let routes: Vec<String> = nodes
                .iter()
                .filter(|other| other.name != node.name)
                .map(|other| format!("\"nats-route://127.0.0.1:{}\"", other.cluster_port))
                .collect();
            let store = dir.path().join(&node.name);
            let config = format!(
                "server_name: {name}\nlisten: \"127.0.0.1:{port}\"\nhttp: \"127.0.0.1:{monitor}\"\n\
                 jetstream {{\n  store_dir: \"{store}\"\n{sync}}}\n\
                 cluster {{\n  name: boardcast-test\n  listen: \"127.0.0.1:{cluster}\"\n  routes: [{routes}]\n}}\n{mapping}",
                name = node.name,
                port = node.port,
                monitor = node.monitor_port,
                store = store.display(),
                sync = if server.sync_always {
                    "  sync_interval: always\n"
                } else {
                    ""
                },
                cluster = node.cluster_port,
                routes = routes.join(", "),
                mapping =
                    boardcast_kit::nats::partition_mapping(boardcast_kit::nats::DEFAULT_PARTITIONS),
            );
            std::fs::write(&node.config, config)
                .with_context(|| format!("writing {}", node.config.display()))?;
        }
        for node in &mut nodes {
            node.spawn()?;
        }
        let cluster = TestCluster { nodes, dir };
        cluster.wait_ready(Duration::from_secs(60)).await?;
        Ok(cluster)
    }

    /// Every node's client URL, comma-separated: what a client of the cluster connects to.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(ClusterNode::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Kills node `index` at once (SIGKILL), as a crash would.
    pub fn kill(&mut self, index: usize) -> anyhow::Result<()> {
        if let Some(mut process) = self.nodes[index].process.take() {
            process.kill_hard()?;
        }
        Ok(())
    }

    /// Freezes node `index` (SIGSTOP): a machine that stops answering without closing its
    /// connections.
    pub fn pause(&self, index: usize) -> anyhow::Result<()> {
        self.node_process(index)?
            .signal(nix::sys::signal::Signal::SIGSTOP)
    }

    /// Lets a paused node go on (SIGCONT).
    pub fn resume(&self, index: usize) -> anyhow::Result<()> {
        self.node_process(index)?
            .signal(nix::sys::signal::Signal::SIGCONT)
    }

    fn node_process(&self, index: usize) -> anyhow::Result<&ManagedProcess> {
        self.nodes[index]
            .process
            .as_ref()
            .with_context(|| format!("node {} is not running", self.nodes[index].name))
    }

    /// The index of the node leading stream `name`'s replicas now.
    pub async fn stream_leader(
        &self,
        js: &jetstream::Context,
        name: &str,
    ) -> anyhow::Result<usize> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let leader = match js.get_stream(name).await {
                Ok(mut stream) => stream
                    .info()
                    .await
                    .ok()
                    .and_then(|info| info.cluster.clone())
                    .and_then(|cluster| cluster.leader),
                Err(_) => None,
            };
            if let Some(index) = leader.and_then(|l| self.nodes.iter().position(|n| n.name == l)) {
                return Ok(index);
            }
            if Instant::now() > deadline {
                bail!("stream {name} has no leader");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts node `index` again on its store directory and ports, and waits until it is healthy.
    pub async fn restart(&mut self, index: usize) -> anyhow::Result<()> {
        self.kill(index)?;
        self.nodes[index].spawn()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.nodes[index].healthy() {
            if Instant::now() > deadline {
                bail!(
                    "node {} did not become healthy again",
                    self.nodes[index].name
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// Waits for every running node to be healthy, then until a stream replicated on all nodes
    /// can be created (which needs a JetStream meta leader and every peer known).
    pub async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        for node in &self.nodes {
            while !node.healthy() {
                if Instant::now() > deadline {
                    bail!("node {} did not become healthy", node.name);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let client = boardcast_kit::nats::connect(&self.urls(), "test-cluster").await?;
        let js = jetstream::new(client);
        let replicas = self.nodes.len();
        loop {
            let created = js
                .create_stream(stream::Config {
                    name: "CLUSTER_READY".into(),
                    subjects: vec!["cluster.ready".into()],
                    num_replicas: replicas,
                    storage: stream::StorageType::Memory,
                    ..Default::default()
                })
                .await;
            match created {
                Ok(_) => {
                    let _ = js.delete_stream("CLUSTER_READY").await;
                    return Ok(());
                }
                Err(e) if Instant::now() > deadline => {
                    bail!("JetStream did not accept an R{replicas} stream: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }
}
