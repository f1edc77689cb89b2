//! A three-node (or n-node) nats-server cluster with JetStream on loopback, for tests of
//! replicated streams and node failures.
//!
//! Each node has its own `server_name`, store directory, client, monitoring and cluster ports,
//! and routes to every other node; configuration files are written to a temporary directory.
//! Nodes can be killed (SIGKILL) and restarted on the same store directory and ports, and paused
//! (SIGSTOP) and resumed. The cluster runs on the nats-server `scripts/ensure-tools.sh` installs
//! into `var/` or on another 2.12+ one ([`NatsServer`]), fsyncing every write as production does.
//!
//! [`TestCluster::start_isolated`] puts each node in a network namespace of its own, joined to the
//! test's namespace by a veth pair on a bridge, so that a node can be cut off the network and
//! joined again ([`TestCluster::cut`]); it needs root (`ip netns`).

use std::{
    io::{Read as _, Write as _},
    net::{Ipv4Addr, SocketAddr, TcpStream},
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use async_nats::jetstream::{self, stream};
use boardcast_kit::{
    local::{ManagedProcess, find_nats_server, free_port},
    nats_access::{AUTH_CONFIG_FILE, NatsAccess, Role},
};
use tempfile::TempDir;

/// How many times [`TestCluster::start_on`] starts a cluster whose node exited at start.
const START_ATTEMPTS: u32 = 3;

/// A node's server exited while the cluster was starting (a port taken, say).
#[derive(Debug, thiserror::Error)]
#[error("a node exited at start: {detail}")]
struct NodeExited {
    detail: String,
}

/// Which nats-server a cluster runs.
#[derive(Clone, Debug)]
pub struct NatsServer {
    pub binary: PathBuf,
    /// Whether JetStream fsyncs every write (`sync_interval: always`): what production runs.
    pub sync_always: bool,
}

/// The current nats-server the tests also run on, pinned in `scripts/nats-server-current.txt`.
pub const CURRENT_NATS_VERSION: &str = "2.15.1";

impl NatsServer {
    /// `BOARDCAST_NATS_SERVER`, else the pinned one (see [`find_nats_server`]).
    pub fn system() -> anyhow::Result<NatsServer> {
        Ok(NatsServer {
            binary: find_nats_server()?,
            sync_always: true,
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

    /// The version the binary reports, e.g. `v2.15.1`.
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
    /// Where it listens: loopback, or its address in its network namespace.
    host: Ipv4Addr,
    /// The network namespace it runs in (`start_isolated`).
    netns: Option<String>,
    config: PathBuf,
    /// Where it logs (read back by [`TestCluster::diagnosis`]).
    log: PathBuf,
    binary: PathBuf,
    process: Option<ManagedProcess>,
    /// Whether it speaks TLS only (`start_tls`).
    tls: bool,
}

impl ClusterNode {
    pub fn url(&self) -> String {
        let scheme = if self.tls { "tls" } else { "nats" };
        format!("{scheme}://{}:{}", self.host, self.port)
    }

    /// The node's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(ManagedProcess::pid)
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        let mut command = match &self.netns {
            // `ip netns exec` execs the server in place: the process is the server's.
            Some(netns) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", netns]).arg(&self.binary);
                command
            }
            None => Command::new(&self.binary),
        };
        let process = ManagedProcess::spawn(
            &format!("nats-server {}", self.name),
            command
                .arg("-c")
                .arg(&self.config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        self.process = Some(process);
        Ok(())
    }

    /// The last lines of the node's log (why it did not start, say: a port taken meanwhile).
    fn log_tail(&self) -> String {
        match std::fs::read_to_string(&self.log) {
            Ok(log) => {
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(20)..].join("\n")
            }
            Err(e) => format!("({} cannot be read: {e})", self.log.display()),
        }
    }

    /// True when the node answers `/healthz?js-enabled-only=true` with 200.
    fn healthy(&self) -> bool {
        let addr = SocketAddr::from((self.host, self.monitor_port));
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
            return false;
        };
        if boardcast_kit::local::connected_to_itself(&stream) {
            return false;
        }
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
    /// The hall's authority the nodes' certificates are signed by (`start_tls`).
    ca: Option<PathBuf>,
    /// The namespaces, bridge and links of `start_isolated`, removed when the cluster is dropped.
    network: Option<Network>,
    /// The accounts and users the nodes run with (`…_secured`); the cluster's own clients
    /// connect as admin.
    access: Option<NatsAccess>,
    dir: TempDir,
}

/// A bridge in the test's namespace and, per node, a namespace joined to it by a veth pair.
struct Network {
    bridge: String,
    /// Per node: its namespace and the bridge's end of its veth pair.
    nodes: Vec<(String, String)>,
}

/// Runs `ip` with `args`, failing with what it said.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Network {
    /// A bridge with address 198.18.`subnet`.254/24 (the range set aside for benchmarks and
    /// tests, RFC 2544, so that no real network is shadowed), and `size` namespaces at .1, .2, …
    fn create(size: usize) -> anyhow::Result<(Network, Vec<Ipv4Addr>)> {
        // Unique among the clusters of concurrent tests and processes (interface names have at
        // most 15 characters).
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let unique = (std::process::id() % 4096) * 16
            + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 16;
        let id = format!("{unique:x}");
        let subnet = unique % 250 + 1;
        let mut network = Network {
            bridge: format!("bcb{id}"),
            nodes: Vec::new(),
        };
        ip(&["link", "add", &network.bridge, "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("198.18.{subnet}.254/24"),
            "dev",
            &network.bridge,
        ])?;
        ip(&["link", "set", &network.bridge, "up"])?;
        let mut hosts = Vec::new();
        for i in 1..=size {
            let (netns, outer, inner) = (
                format!("bc{id}-{i}"),
                format!("bc{id}n{i}"),
                format!("bc{id}p{i}"),
            );
            ip(&["netns", "add", &netns])?;
            network.nodes.push((netns.clone(), outer.clone()));
            ip(&[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ])?;
            ip(&["link", "set", &inner, "netns", &netns])?;
            ip(&["link", "set", &outer, "master", &network.bridge])?;
            ip(&["link", "set", &outer, "up"])?;
            let host = Ipv4Addr::new(198, 18, subnet as u8, i as u8);
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &netns, "ip"];
                all.extend_from_slice(args);
                ip(&all)
            };
            inside(&["addr", "add", &format!("{host}/24"), "dev", &inner])?;
            inside(&["link", "set", &inner, "up"])?;
            inside(&["link", "set", "lo", "up"])?;
            hosts.push(host);
        }
        Ok((network, hosts))
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for (netns, outer) in &self.nodes {
            let _ = ip(&["link", "del", outer]);
            let _ = ip(&["netns", "del", netns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

impl TestCluster {
    /// Starts `size` nodes of the system's nats-server and waits until JetStream has a meta
    /// leader and accepts a stream replicated on every node.
    pub async fn start(size: usize) -> anyhow::Result<TestCluster> {
        Self::start_on(size, &NatsServer::system()?).await
    }

    /// `start`, on `server`. The nodes' ports are found free and then bound by the servers, and
    /// another test may take one in between: a node that exits at start is started afresh, on
    /// new ports, up to [`START_ATTEMPTS`] times.
    pub async fn start_on(size: usize, server: &NatsServer) -> anyhow::Result<TestCluster> {
        Self::start_retrying(size, server, None).await
    }

    /// `start_on`, with the accounts and users of `access` (`boardcast nats-config`), as the
    /// hall guide runs a cluster.
    pub async fn start_on_secured(
        size: usize,
        server: &NatsServer,
        access: &NatsAccess,
    ) -> anyhow::Result<TestCluster> {
        Self::start_retrying(size, server, Some(access)).await
    }

    async fn start_retrying(
        size: usize,
        server: &NatsServer,
        access: Option<&NatsAccess>,
    ) -> anyhow::Result<TestCluster> {
        let mut attempt = 1;
        loop {
            match Self::start_with(size, server, None, None, access).await {
                Err(e) if attempt < START_ATTEMPTS && e.is::<NodeExited>() => {
                    eprintln!("starting the cluster again: {e:#}");
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    /// `start_on`, each node in a network namespace of its own (see the module comment). Fails
    /// where namespaces cannot be made (not root, a kernel that refuses).
    pub async fn start_isolated(size: usize, server: &NatsServer) -> anyhow::Result<TestCluster> {
        let (network, hosts) = Network::create(size).context("setting up network namespaces")?;
        Self::start_with(size, server, Some((network, hosts)), None, None).await
    }

    /// `start_isolated`, with the accounts and users of `access`.
    pub async fn start_isolated_secured(
        size: usize,
        server: &NatsServer,
        access: &NatsAccess,
    ) -> anyhow::Result<TestCluster> {
        let (network, hosts) = Network::create(size).context("setting up network namespaces")?;
        Self::start_with(size, server, Some((network, hosts)), None, Some(access)).await
    }

    /// `start_on`, as the hall guide sets a cluster up: clients only over TLS, and routes over
    /// mutual TLS, each node presenting its certificate from `certs` (`n1.pem`, `n1.key`, … for
    /// 127.0.0.1, signed by `certs/ca.pem`, as `boardcast tls-certs` writes them) and admitting
    /// only routes that present one signed by that authority.
    pub async fn start_tls(
        size: usize,
        server: &NatsServer,
        certs: &std::path::Path,
    ) -> anyhow::Result<TestCluster> {
        Self::start_with(size, server, None, Some(certs), None).await
    }

    async fn start_with(
        size: usize,
        server: &NatsServer,
        network: Option<(Network, Vec<Ipv4Addr>)>,
        certs: Option<&std::path::Path>,
        access: Option<&NatsAccess>,
    ) -> anyhow::Result<TestCluster> {
        let (network, hosts) = match network {
            Some((network, hosts)) => (Some(network), Some(hosts)),
            None => (None, None),
        };
        let dir = tempfile::Builder::new()
            .prefix("boardcast-cluster-")
            .tempdir()
            .context("creating a directory for the cluster")?;
        // The accounts carry the partition mapping in the hall's account; without them it is
        // the global account's. (An `include` is relative to the including file.)
        let mapping = match access {
            Some(access) => {
                std::fs::copy(access.auth_config_path(), dir.path().join(AUTH_CONFIG_FILE))
                    .context("copying the NATS accounts next to the nodes' configurations")?;
                format!("include \"{AUTH_CONFIG_FILE}\"\n")
            }
            None => boardcast_kit::nats::partition_mapping(boardcast_kit::nats::DEFAULT_PARTITIONS),
        };
        let mut nodes = Vec::new();
        for i in 0..size {
            let name = format!("n{}", i + 1);
            nodes.push(ClusterNode {
                host: hosts.as_ref().map_or(Ipv4Addr::LOCALHOST, |hosts| hosts[i]),
                netns: network.as_ref().map(|n| n.nodes[i].0.clone()),
                config: dir.path().join(format!("{name}.conf")),
                log: dir.path().join(format!("{name}.log")),
                binary: server.binary.clone(),
                name,
                port: free_port()?,
                monitor_port: free_port()?,
                cluster_port: free_port()?,
                process: None,
                tls: certs.is_some(),
            });
        }
        for node in &nodes {
            let routes: Vec<String> = nodes
                .iter()
                .filter(|other| other.name != node.name)
                .map(|other| format!("\"nats-route://{}:{}\"", other.host, other.cluster_port))
                .collect();
            let store = dir.path().join(&node.name);
            let tls = |extra: &str| match certs {
                Some(certs) => format!(
                    "tls {{\n  cert_file: \"{dir}/{name}.pem\"\n  key_file: \"{dir}/{name}.key\"\n  \
                     ca_file: \"{dir}/ca.pem\"\n{extra}}}\n",
                    dir = certs.display(),
                    name = node.name,
                ),
                None => String::new(),
            };
            let config = format!(
                "server_name: {name}\nlisten: \"{host}:{port}\"\nhttp: \"{host}:{monitor}\"\n\
                 log_file: \"{log}\"\n{client_tls}\
                 jetstream {{\n  store_dir: \"{store}\"\n{sync}}}\n\
                 cluster {{\n  name: boardcast-test\n  listen: \"{host}:{cluster}\"\n  routes: [{routes}]\n{route_tls}}}\n{mapping}",
                client_tls = tls(""),
                route_tls = tls("  verify: true\n"),
                name = node.name,
                host = node.host,
                port = node.port,
                monitor = node.monitor_port,
                store = store.display(),
                log = node.log.display(),
                sync = if server.sync_always {
                    "  sync_interval: always\n"
                } else {
                    ""
                },
                cluster = node.cluster_port,
                routes = routes.join(", "),
            );
            std::fs::write(&node.config, config)
                .with_context(|| format!("writing {}", node.config.display()))?;
        }
        for node in &mut nodes {
            node.spawn()?;
        }
        let mut cluster = TestCluster {
            nodes,
            ca: certs.map(|certs| certs.join(boardcast_kit::tls::CA_CERT_FILE)),
            network,
            access: access.cloned(),
            dir,
        };
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

    /// Every node's client URL with `role`'s user and password (`…_secured`).
    pub fn url_for(&self, role: &Role) -> anyhow::Result<String> {
        self.access
            .as_ref()
            .context("the cluster runs without users")?
            .url_for(role, &self.urls())
    }

    /// A client of the cluster (trusting its authority when it speaks TLS; as admin when it has
    /// users).
    pub async fn connect(&self, name: &str) -> anyhow::Result<async_nats::Client> {
        let urls = match &self.access {
            Some(_) => self.url_for(&Role::Admin)?,
            None => self.urls(),
        };
        match &self.ca {
            Some(ca) => {
                boardcast_kit::nats::connect_observed_trusting(&urls, name, Some(ca), |_| {}).await
            }
            None => boardcast_kit::nats::connect(&urls, name).await,
        }
    }

    /// Kills node `index` at once (SIGKILL), as a crash would.
    pub fn kill(&mut self, index: usize) -> anyhow::Result<()> {
        if let Some(mut process) = self.nodes[index].process.take() {
            process.kill_hard()?;
        }
        Ok(())
    }

    /// Cuts node `index` off the network (its link to the bridge down): the other nodes and
    /// every client lose it at once, while it runs on alone. Only with `start_isolated`.
    pub fn cut(&self, index: usize) -> anyhow::Result<()> {
        ip(&["link", "set", self.outer_link(index)?, "down"])
    }

    /// Joins a cut node to the network again.
    pub fn heal(&self, index: usize) -> anyhow::Result<()> {
        ip(&["link", "set", self.outer_link(index)?, "up"])
    }

    fn outer_link(&self, index: usize) -> anyhow::Result<&str> {
        self.network
            .as_ref()
            .map(|n| n.nodes[index].1.as_str())
            .context("the cluster was not started in network namespaces (start_isolated)")
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
    pub async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        for node in &mut self.nodes {
            while !node.healthy() {
                if let Some(process) = node.process.as_mut()
                    && let Err(exited) = process.check_running()
                {
                    return Err(NodeExited {
                        detail: format!("{exited:#}; the end of its log:\n{}", node.log_tail()),
                    }
                    .into());
                }
                if Instant::now() > deadline {
                    bail!(
                        "node {} did not become healthy; the end of its log:\n{}",
                        node.name,
                        node.log_tail()
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let js = jetstream::new(self.connect("test-cluster").await?);
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

    /// What the cluster looks like now, to print when a test fails: each stream's leader,
    /// replicas and state, each of its consumers' progress, and the last lines each node logged.
    pub async fn diagnosis(&self, js: &jetstream::Context, streams: &[&str]) -> String {
        use futures::StreamExt as _;
        let mut report = String::new();
        for name in streams {
            let mut stream = match js.get_stream(*name).await {
                Ok(stream) => stream,
                Err(e) => {
                    report += &format!("stream {name}: {e}\n");
                    continue;
                }
            };
            match stream.info().await {
                Ok(info) => {
                    report += &format!(
                        "stream {name}: first {} last {} messages {}; cluster {:?}\n",
                        info.state.first_sequence,
                        info.state.last_sequence,
                        info.state.messages,
                        info.cluster
                    );
                }
                Err(e) => report += &format!("stream {name}: {e}\n"),
            }
            let mut consumers = stream.consumers();
            while let Some(consumer) = consumers.next().await {
                match consumer {
                    Ok(c) => {
                        report += &format!(
                            "  consumer {}: delivered {:?} ack floor {:?} pending {} ack pending \
                             {} redelivered {} waiting {}; cluster {:?}\n",
                            c.name,
                            c.delivered,
                            c.ack_floor,
                            c.num_pending,
                            c.num_ack_pending,
                            c.num_redelivered,
                            c.num_waiting,
                            c.cluster
                        )
                    }
                    Err(e) => report += &format!("  consumers: {e}\n"),
                }
            }
        }
        for node in &self.nodes {
            let text = std::fs::read_to_string(&node.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            report += &format!("log of {} (last 40 lines):\n", node.name);
            for line in &lines[lines.len().saturating_sub(40)..] {
                report += &format!("  {line}\n");
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that cannot start is reported with why as soon as it exits (after the attempts),
    /// not as a node that did not become healthy within the minute a slow cluster is given.
    #[tokio::test]
    async fn a_node_that_exits_at_start_is_tried_again_then_reported() {
        let server = NatsServer {
            binary: PathBuf::from("/bin/false"),
            sync_always: false,
        };
        let error = match TestCluster::start_on(3, &server).await {
            Ok(_) => panic!("/bin/false is no nats-server"),
            Err(e) => e,
        };
        assert!(error.is::<NodeExited>(), "{error:#}");
        let message = format!("{error:#}");
        assert!(message.contains("exited"), "{message}");
        assert!(message.contains("the end of its log"), "{message}");
    }
}
