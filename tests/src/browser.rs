//! A real headless Chromium, driven over the DevTools protocol, for checking web pages.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async, tungstenite::Message};

use crate::{ManagedProcess, free_port};

fn chromium_binary() -> anyhow::Result<PathBuf> {
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(candidate).is_file() {
            return Ok(PathBuf::from(candidate));
        }
    }
    bail!(
        "Chromium is needed for the web page tests: `make test` installs it (Debian package chromium)"
    )
}

/// A headless Chromium with its own empty profile, stopped when dropped.
pub struct Browser {
    _process: ManagedProcess,
    _profile: tempfile::TempDir,
    port: u16,
}

/// One tab, controlled through its DevTools websocket.
pub struct Page {
    socket: WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>,
    next_id: u64,
}

impl Browser {
    pub async fn launch() -> anyhow::Result<Browser> {
        let profile = tempfile::tempdir()?;
        let port = free_port()?;
        // The flags keep Chromium off the network except for the pages we open.
        let process = ManagedProcess::spawn(
            "chromium",
            Command::new(chromium_binary()?)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--window-size=1280,900",
                ])
                .arg(format!("--remote-debugging-port={port}"))
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg("about:blank")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        let browser = Browser {
            _process: process,
            _profile: profile,
            port,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while browser.targets().await.is_err() {
            if tokio::time::Instant::now() > deadline {
                bail!("Chromium did not open its DevTools port");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(browser)
    }

    async fn targets(&self) -> anyhow::Result<Vec<Value>> {
        let url = format!("http://127.0.0.1:{}/json/list", self.port);
        Ok(reqwest::get(url).await?.json().await?)
    }

    /// Opens `url` in the first tab.
    pub async fn open(&self, url: &str) -> anyhow::Result<Page> {
        let targets = self.targets().await?;
        let ws = targets
            .iter()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .context("Chromium has no page to control")?;
        let (socket, _) = connect_async(ws).await.context("connecting to DevTools")?;
        let mut page = Page { socket, next_id: 1 };
        page.call("Page.enable", json!({})).await?;
        page.call("Page.navigate", json!({ "url": url })).await?;
        Ok(page)
    }
}

impl Page {
    async fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({ "id": id, "method": method, "params": params });
        self.socket
            .send(Message::Text(request.to_string().into()))
            .await?;
        loop {
            let message = tokio::time::timeout(Duration::from_secs(30), self.socket.next())
                .await
                .with_context(|| format!("DevTools did not answer {method}"))?
                .context("DevTools connection closed")??;
            let Message::Text(text) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text)?;
            if value["id"] == id {
                if let Some(error) = value.get("error") {
                    bail!("{method}: {error}");
                }
                return Ok(value["result"].clone());
            }
        }
    }

    /// Evaluates a JavaScript expression in the page and returns its value.
    pub async fn eval(&mut self, expression: &str) -> anyhow::Result<Value> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            bail!("{expression}: {exception}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// Waits until a JavaScript expression is true in the page.
    pub async fn wait_for(&mut self, condition: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.eval(condition).await.ok() == Some(Value::Bool(true)) {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                // What the page showed then, so that a failure on a busy machine can be told.
                let shown = self
                    .eval("document.body ? document.body.innerText.slice(0, 600) : ''")
                    .await
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .unwrap_or_else(|e| format!("(cannot read the page: {e:#})"));
                bail!(
                    "the page never satisfied `{condition}` within {timeout:?}; it showed:\n{shown}"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sets the page's viewport (CSS pixels), as a device of that size would show it.
    pub async fn set_viewport(&mut self, width: u32, height: u32) -> anyhow::Result<()> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await?;
        Ok(())
    }

    /// Saves a PNG screenshot of the page.
    pub async fn screenshot(&mut self, path: &Path) -> anyhow::Result<()> {
        let result = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await?;
        let data = result["data"].as_str().context("no screenshot data")?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(data)?;
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}

/// Signs `user` in through the arbiter dashboard's login page at `login_url`, in a window of
/// `width` × `height`, and waits until the dashboard is live.
pub async fn sign_in_to_dashboard(
    browser: &Browser,
    login_url: &str,
    user: &str,
    password: &str,
    (width, height): (u32, u32),
) -> anyhow::Result<Page> {
    let mut page = browser.open(login_url).await?;
    page.set_viewport(width, height).await?;
    page.wait_for(
        "!!document.getElementById('login-submit')",
        Duration::from_secs(20),
    )
    .await?;
    page.eval(&format!(
        "document.getElementById('login-user').value = {}; \
         document.getElementById('login-password').value = {}; \
         document.getElementById('login-submit').click(); true",
        json!(user),
        json!(password)
    ))
    .await?;
    page.wait_for(
        "document.body && document.body.dataset.page === 'index' \
         && document.getElementById('live-status').dataset.state === 'live'",
        Duration::from_secs(20),
    )
    .await?;
    Ok(page)
}
