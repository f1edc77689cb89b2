//! `boardcast demo` run as a newcomer runs it: it prints the arbiters' login and the incidents it
//! plays, and a real browser signed in with that login sees an alert of every kind promised, then
//! the demo stops cleanly on SIGTERM.

use std::{
    collections::BTreeSet,
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use anyhow::{Context as _, bail};
use boardcast_testkit::{ManagedProcess, browser::Browser, free_port, program, repo_root};

/// What the demo printed before its games started.
#[derive(Debug, Default)]
struct Printed {
    dashboard: Option<String>,
    login: Option<(String, String)>,
    /// The alert kinds the incidents promise, from the `incident … -> alerts …` lines.
    promised: BTreeSet<String>,
}

impl Printed {
    fn read(&mut self, line: &str) {
        let line = line.trim();
        if let Some(url) = line.strip_prefix("arbiters") {
            self.dashboard = Some(url.trim().to_owned());
        } else if let Some(login) = line.strip_prefix("log in as") {
            // "chief / PASSWORD   (chief arbiter of …)"
            let mut words = login.split_whitespace();
            if let (Some(user), Some("/"), Some(password)) =
                (words.next(), words.next(), words.next())
            {
                self.login = Some((user.to_owned(), password.to_owned()));
            }
        } else if line.starts_with("incident")
            && let Some((_, alerts)) = line.split_once("-> alerts")
        {
            self.promised.extend(
                alerts
                    .split(',')
                    .map(str::trim)
                    .filter(|kind| !kind.is_empty())
                    .map(str::to_owned),
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_prints_a_login_whose_dashboard_shows_every_incidents_alerts() -> anyhow::Result<()>
{
    let data = tempfile::tempdir()?;
    let ports = [free_port()?, free_port()?, free_port()?, free_port()?];
    let mut demo = ManagedProcess::spawn(
        "boardcast demo",
        Command::new(program("boardcast")?)
            .current_dir(repo_root())
            .args(["demo", "--speed", "max", "--data-dir"])
            .arg(data.path())
            .args(["--nats-port", &ports[0].to_string()])
            .args(["--grpc-port", &ports[1].to_string()])
            .args(["--http-port", &ports[2].to_string()])
            .args(["--arbiter-port", &ports[3].to_string()])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped()),
    )?;
    let stdout = demo.take_stdout().context("the demo's output")?;
    let (lines, printed_lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });

    // Everything up to "boards are playing": the URLs, the login, the incidents.
    let mut printed = Printed::default();
    let mut all = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = match printed_lines.recv_timeout(left) {
            Ok(line) => line,
            Err(_) => {
                demo.check_running()?;
                bail!("the demo never said its boards are playing: {all:#?}");
            }
        };
        printed.read(&line);
        let started = line.contains("boards are playing");
        all.push(line);
        if started {
            break;
        }
    }
    let dashboard = printed.dashboard.clone().context("no arbiters' URL")?;
    let (user, password) = printed.login.clone().context("no login printed")?;
    for kind in [
        "illegal_move",
        "touch_move",
        "irregular_placement",
        "board_not_responding",
        "battery_low",
        "flag_fall",
        "threefold_available",
    ] {
        assert!(
            printed.promised.contains(kind),
            "the demo says it plays {kind}: {all:#?}"
        );
    }

    // The printed login signs in on the printed dashboard, in a real browser.
    let browser = Browser::launch().await?;
    let mut page = boardcast_testkit::browser::sign_in_to_dashboard(
        &browser,
        &format!("{dashboard}login"),
        &user,
        &password,
        (1280, 800),
    )
    .await?;
    // Settled alerts (a press in doubt once the move came) are shown with "resolved too".
    page.eval("document.getElementById('show-resolved').click(); true")
        .await?;
    for kind in &printed.promised {
        let item = format!("document.querySelector('[data-testid=alert-item][data-kind={kind}]')");
        page.wait_for(
            &format!("!!{item} && {item}.offsetParent !== null"),
            Duration::from_secs(90),
        )
        .await
        .with_context(|| format!("the dashboard shows no {kind} alert"))?;
    }
    // The rounds' list follows within a couple of seconds of a change.
    page.wait_for(
        "!!document.querySelector('[data-testid=round-card]')",
        Duration::from_secs(20),
    )
    .await?;
    let shown = page
        .eval(
            "Array.from(document.querySelectorAll('[data-testid=alert-item]')) \
             .map(a => a.dataset.kind)",
        )
        .await?;
    eprintln!("the dashboard shows: {shown}");
    let screenshot = repo_root().join("target/screenshots/demo-dashboard.png");
    if let Some(dir) = screenshot.parent() {
        std::fs::create_dir_all(dir)?;
    }
    page.screenshot(&screenshot).await?;

    // Ctrl-C or SIGTERM stops the demo and everything it started.
    assert!(
        demo.stop(Duration::from_secs(60))?,
        "the demo stopped by itself on SIGTERM"
    );
    for port in ports {
        let open = std::net::TcpStream::connect(("127.0.0.1", port));
        assert!(open.is_err(), "port {port} is closed with the demo");
    }
    Ok(())
}
