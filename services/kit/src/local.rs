//! Running the system's processes on one machine: a private `nats-server` with JetStream and the
//! boardcast services as child processes. Used by `boardcast demo` and by the end-to-end tests.

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use nix::{sys::signal, unistd::Pid};

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    // Below Linux's default range of ports given to outgoing connections (32768–60999), so
    // that no connection made meanwhile takes it before the process it is for listens on it
    // (a nats-server then exits, the port in use); the system's choice if none is found.
    for _ in 0..64 {
        let port = rand::random_range(20_000..32_768);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// A child process that is stopped (SIGTERM, then SIGKILL after a grace period) when dropped.
pub struct ManagedProcess {
    name: String,
    child: Option<Child>,
}

impl ManagedProcess {
    pub fn spawn(name: &str, command: &mut Command) -> anyhow::Result<ManagedProcess> {
        let child = command
            .spawn()
            .with_context(|| format!("starting {name} ({:?})", command.get_program()))?;
        Ok(ManagedProcess {
            name: name.to_owned(),
            child: Some(child),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The process's standard output, when it was spawned with `Stdio::piped()`: to read what
    /// it prints as it runs (once; `None` after).
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.as_mut().and_then(|child| child.stdout.take())
    }

    /// Sends `signal` to the process (SIGSTOP and SIGCONT to freeze and thaw it, say).
    pub fn signal(&self, signal: nix::sys::signal::Signal) -> anyhow::Result<()> {
        let pid = self
            .pid()
            .with_context(|| format!("{} is not running", self.name))?;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).context("a process id")?);
        nix::sys::signal::kill(pid, signal)
            .with_context(|| format!("sending {signal} to {}", self.name))
    }

    /// Fails if the process has already exited.
    pub fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(child) = self.child.as_mut()
            && let Some(status) = child.try_wait()?
        {
            bail!("{} exited: {status}", self.name);
        }
        Ok(())
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill_hard(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child
                .kill()
                .with_context(|| format!("killing {}", self.name))?;
            child.wait()?;
        }
        Ok(())
    }

    /// Asks the process to stop (SIGTERM) and waits up to `grace` before killing it. Says
    /// whether it stopped by itself (`false`: it had to be killed).
    pub fn stop(&mut self, grace: Duration) -> anyhow::Result<bool> {
        let Some(mut child) = self.child.take() else {
            return Ok(true);
        };
        if child.try_wait()?.is_some() {
            return Ok(true);
        }
        let pid = Pid::from_raw(child.id() as i32);
        if signal::kill(pid, signal::Signal::SIGTERM).is_ok() {
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if child.try_wait()?.is_some() {
                    return Ok(true);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        child
            .kill()
            .with_context(|| format!("killing {}", self.name))?;
        child.wait()?;
        Ok(false)
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        if let Err(e) = self.stop(Duration::from_secs(5)) {
            eprintln!("stopping {}: {e:#}", self.name);
        }
    }
}

/// Waits until something accepts TCP connections on `addr`, while `process` keeps running.
pub fn wait_for_port(
    process: &mut ManagedProcess,
    addr: SocketAddr,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        process.check_running()?;
        if let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200))
            && !connected_to_itself(&stream)
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{} did not listen on {addr} within {timeout:?}",
                process.name
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Linux may give a connection to a port nobody listens on that very port as its own source
/// port, and the connection then succeeds by connecting to itself (TCP simultaneous open): that
/// is nobody listening, and the port is taken while it lasts.
pub fn connected_to_itself(stream: &TcpStream) -> bool {
    matches!((stream.local_addr(), stream.peer_addr()), (Ok(local), Ok(peer)) if local == peer)
}

/// The nats-server `scripts/ensure-tools.sh` installs (`make demo` and `make test` run it).
pub const PINNED_NATS_SERVER: &str = "var/nats-server-2.15.1/bin/nats-server";

/// Where a `nats-server` of version 2.12 or newer is, or a message saying how to get one:
/// `BOARDCAST_NATS_SERVER`, else the pinned one under the repository's `var/`, else the first
/// current one on `PATH` (an older one there, such as Debian's 2.9.10, is passed over and named).
pub fn find_nats_server() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("BOARDCAST_NATS_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut candidates = vec![
        repo.join(PINNED_NATS_SERVER),
        PathBuf::from(PINNED_NATS_SERVER),
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("nats-server")));
    let mut too_old = Vec::new();
    for candidate in candidates.into_iter().filter(|c| c.is_file()) {
        match nats_server_version(&candidate) {
            Some(version) if crate::nats::is_current_server(&version) => return Ok(candidate),
            version => too_old.push(format!(
                "{} ({})",
                candidate.display(),
                version.as_deref().unwrap_or("version unknown")
            )),
        }
    }
    let found = if too_old.is_empty() {
        String::new()
    } else {
        format!(" Found only older ones: {}.", too_old.join(", "))
    };
    bail!(
        "nats-server 2.12 or newer not found.{found} `make demo` and `make test` install it; \
         otherwise {}, or set BOARDCAST_NATS_SERVER to its path.",
        crate::nats::SERVER_INSTALL_HINT
    )
}

/// The version `binary --version` reports (`v2.15.1`), if it runs.
pub fn nats_server_version(binary: &Path) -> Option<String> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().trim_start_matches("nats-server: ").to_owned();
    (!version.is_empty()).then_some(version)
}

/// A private `nats-server` with JetStream, on its own ports and store directory.
pub struct LocalNats {
    process: ManagedProcess,
    store_dir: PathBuf,
    config: Option<PathBuf>,
    pub port: u16,
    pub monitor_port: u16,
}

impl LocalNats {
    /// The server's process id while it runs (benchmarks read its CPU time).
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Starts nats-server with JetStream on `port` (0 = a free one), keeping its data under
    /// `store_dir`, and waits until it reports healthy. Anyone may connect and do anything.
    /// Boards are spread over [`crate::nats::DEFAULT_PARTITIONS`] partitions.
    pub fn start(store_dir: &Path, port: u16, log: Stdio) -> anyhow::Result<LocalNats> {
        Self::start_partitioned(store_dir, port, log, crate::nats::DEFAULT_PARTITIONS)
    }

    /// [`LocalNats::start`] with `partitions` partitions (0: none, observations are stored as
    /// boards publish them). The mapping goes in `partitions.conf` beside `store_dir`.
    pub fn start_partitioned(
        store_dir: &Path,
        port: u16,
        log: Stdio,
        partitions: u32,
    ) -> anyhow::Result<LocalNats> {
        Self::start_partitioned_with(store_dir, port, log, partitions, "")
    }

    /// [`LocalNats::start_partitioned`] with more configuration, e.g. a `jetstream` block with
    /// `sync_interval: always` as the shipped configurations have.
    pub fn start_partitioned_with(
        store_dir: &Path,
        port: u16,
        log: Stdio,
        partitions: u32,
        more_config: &str,
    ) -> anyhow::Result<LocalNats> {
        if partitions == 0 && more_config.is_empty() {
            return Self::start_with_config(store_dir, port, log, None);
        }
        let config = store_dir.with_file_name("partitions.conf");
        if let Some(dir) = config.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let mapping = match partitions {
            0 => String::new(),
            n => crate::nats::partition_mapping(n),
        };
        std::fs::write(&config, format!("{mapping}\n{more_config}\n"))
            .with_context(|| format!("writing {}", config.display()))?;
        Self::start_with_config(store_dir, port, log, Some(&config))
    }

    /// [`LocalNats::start`] with a configuration file, typically the users and permissions
    /// written by [`crate::nats_access::NatsAccess::generate`] (`nats-auth.conf`). The server
    /// reads it with `-c`; listening address, ports, JetStream and the store directory stay on
    /// the command line (they override `listen` and `http` in the file), so the file needs
    /// nothing but its `accounts` block. It must not set a JetStream `store_dir`:
    /// nats-server 2.9 refuses one given both ways ("Duplicate 'store_dir' configuration").
    /// [`LocalNats::restart`] starts with the same file again.
    pub fn start_with_config(
        store_dir: &Path,
        port: u16,
        log: Stdio,
        config: Option<&Path>,
    ) -> anyhow::Result<LocalNats> {
        let port = if port == 0 { free_port()? } else { port };
        let monitor_port = free_port()?;
        Self::start_on(store_dir, port, monitor_port, config, log)
    }

    fn start_on(
        store_dir: &Path,
        port: u16,
        monitor_port: u16,
        config: Option<&Path>,
        log: Stdio,
    ) -> anyhow::Result<LocalNats> {
        std::fs::create_dir_all(store_dir).with_context(|| {
            format!("creating the NATS store directory {}", store_dir.display())
        })?;
        if let Some(config) = config
            && !config.is_file()
        {
            bail!("the NATS configuration {} does not exist", config.display());
        }
        let binary = find_nats_server()?;
        let mut command = Command::new(binary);
        if let Some(config) = config {
            command.arg("-c").arg(config);
        }
        let mut process = ManagedProcess::spawn(
            "nats-server",
            command
                .args(["-a", "127.0.0.1", "-p", &port.to_string()])
                .args(["-m", &monitor_port.to_string()])
                .arg("-js")
                .arg("-sd")
                .arg(store_dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
        )?;
        wait_healthy(&mut process, monitor_port, Duration::from_secs(20))?;
        Ok(LocalNats {
            process,
            store_dir: store_dir.to_owned(),
            config: config.map(Path::to_owned),
            port,
            monitor_port,
        })
    }

    /// The configuration file the server was started with, if any.
    pub fn config(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server at once (SIGKILL).
    pub fn kill_hard(&mut self) -> anyhow::Result<()> {
        self.process.kill_hard()
    }

    /// Freezes the server (SIGSTOP), as a machine that stops answering without closing its
    /// connections; [`LocalNats::resume`] lets it go on.
    pub fn pause(&self) -> anyhow::Result<()> {
        self.process.signal(nix::sys::signal::Signal::SIGSTOP)
    }

    pub fn resume(&self) -> anyhow::Result<()> {
        self.process.signal(nix::sys::signal::Signal::SIGCONT)
    }

    /// Starts the server again on the same ports, store directory and configuration file.
    pub fn restart(&mut self, log: Stdio) -> anyhow::Result<()> {
        self.process.stop(Duration::from_secs(5))?;
        let again = Self::start_on(
            &self.store_dir,
            self.port,
            self.monitor_port,
            self.config.as_deref(),
            log,
        )?;
        *self = again;
        Ok(())
    }
}

/// Polls the monitoring endpoint's `/healthz` until JetStream is ready.
fn wait_healthy(
    process: &mut ManagedProcess,
    monitor_port: u16,
    timeout: Duration,
) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let deadline = Instant::now() + timeout;
    let addr = SocketAddr::from(([127, 0, 0, 1], monitor_port));
    loop {
        process.check_running()?;
        if let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200))
            && !connected_to_itself(&stream)
        {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let request = "GET /healthz?js-enabled-only=true HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
            let mut response = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut response).is_ok()
                && response.split_whitespace().nth(1) == Some("200")
            {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("nats-server did not become healthy within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_to_itself_is_not_a_listener() -> anyhow::Result<()> {
        // A socket bound to the port it then connects to: what Linux does now and then when it
        // picks the source port of a connection to a port nobody listens on.
        let port = free_port()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(addr)?;
        let itself = socket.connect(addr).await?.into_std()?;
        assert!(connected_to_itself(&itself));

        let listener = TcpListener::bind("127.0.0.1:0")?;
        let listened = TcpStream::connect(listener.local_addr()?)?;
        assert!(!connected_to_itself(&listened));
        Ok(())
    }
}
