//! The arbiter service as a real process for the tests, and a signed-in HTTP session of it.

use std::{
    net::SocketAddr,
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::{ManagedProcess, free_port, program, wait_for_port};

/// A running arbiter service with its HTTP address.
pub struct ArbiterService {
    pub process: ManagedProcess,
    pub http: SocketAddr,
    /// Its operators' address (`/metrics`).
    pub metrics: SocketAddr,
}

impl ArbiterService {
    /// Starts `boardcast-arbiter-service` following the game log on `nats_url` and forwarding
    /// rulings to the game service at `game_service_url`, on a free local port.
    pub fn start(nats_url: &str, game_service_url: &str) -> anyhow::Result<ArbiterService> {
        Self::start_with(nats_url, game_service_url, &[])
    }

    /// With more options, e.g. `["--allowed-origin", "https://arbiters.example.org"]`.
    pub fn start_with(
        nats_url: &str,
        game_service_url: &str,
        extra: &[&str],
    ) -> anyhow::Result<ArbiterService> {
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let mut process = ManagedProcess::spawn(
            "boardcast-arbiter-service",
            Command::new(program("boardcast-arbiter-service")?)
                .args(["--nats", nats_url, "--game-service", game_service_url])
                .args(["--http-listen", &http.to_string()])
                .args(["--metrics-listen", &metrics.to_string()])
                .arg("--trusted-keys")
                .arg(crate::TestUsers::shared()?.trusted_keys())
                .args(extra)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null()),
        )?;
        wait_for_port(&mut process, http, Duration::from_secs(30))?;
        Ok(ArbiterService {
            process,
            http,
            metrics,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http)
    }

    /// A URL on its operators' address.
    pub fn metrics_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.metrics)
    }

    /// Signs `user` in through `POST /login` and returns the session (its cookie carried by
    /// hand, and its CSRF value for the POSTs).
    pub async fn login(&self, user: &str, password: &str) -> anyhow::Result<ArbiterSession> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let response = client
            .post(self.url("/login"))
            .header("origin", self.url(""))
            .form(&[("user", user), ("password", password), ("next", "/")])
            .send()
            .await?;
        let cookie = response
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|v| v.strip_prefix("boardcast_session="))
            .map(|v| v.split(';').next().unwrap_or_default().to_owned())
            .with_context(|| format!("login answered {} without a session", response.status()))?;
        let csrf = boardcast_access::SessionClaims::read_unverified(&cookie)
            .map_err(|e| anyhow::anyhow!("reading the session's claims: {e}"))?
            .csrf;
        Ok(ArbiterSession {
            client,
            base: self.url(""),
            cookie,
            csrf,
        })
    }
}

/// A signed-in session of an arbiter service.
pub struct ArbiterSession {
    client: reqwest::Client,
    base: String,
    cookie: String,
    csrf: String,
}

impl ArbiterSession {
    /// `GET path`, answered with JSON.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", format!("boardcast_session={}", self.cookie))
            .header("accept", "application/json")
            .send()
            .await?;
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            bail!("GET {path}: {status}: {body}");
        }
        Ok(serde_json::from_str(&body)?)
    }

    /// `POST path` with a JSON body, the session's CSRF value and this site's Origin.
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header("cookie", format!("boardcast_session={}", self.cookie))
            .header("origin", &self.base)
            .header("x-csrf-token", &self.csrf)
            .header("accept", "application/json")
            .json(body)
            .send()
            .await?;
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            bail!("POST {path}: {status}: {body}");
        }
        Ok(serde_json::from_str(&body)?)
    }

    /// A new request id for a form, as the service hands them to its pages.
    pub async fn request_id(&self) -> anyhow::Result<String> {
        let ids = self.get("/api/request-ids?count=1").await?;
        ids["request_ids"][0]
            .as_str()
            .map(str::to_owned)
            .context("the service gave no request id")
    }

    /// The session token the cookie carries (a bearer credential of the game service too).
    pub fn token(&self) -> &str {
        &self.cookie
    }

    /// The status `GET path` is answered with.
    pub async fn status(&self, path: &str) -> anyhow::Result<reqwest::StatusCode> {
        Ok(self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", format!("boardcast_session={}", self.cookie))
            .header("accept", "application/json")
            .send()
            .await?
            .status())
    }

    /// Logs out as the dashboard's button does (`POST /logout`); the status it answered with.
    pub async fn logout(&self) -> anyhow::Result<reqwest::StatusCode> {
        Ok(self
            .client
            .post(format!("{}/logout", self.base))
            .header("cookie", format!("boardcast_session={}", self.cookie))
            .header("origin", &self.base)
            .form(&[("csrf", self.csrf.as_str())])
            .send()
            .await?
            .status())
    }

    /// The `Cookie` header value that carries the session.
    pub fn cookie_header(&self) -> String {
        format!("boardcast_session={}", self.cookie)
    }

    /// The session's CSRF value.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// The session applied to another instance of the service (same game service, same
    /// session token).
    pub fn on(&self, service: &ArbiterService) -> ArbiterSession {
        ArbiterSession {
            client: self.client.clone(),
            base: service.url(""),
            cookie: self.cookie.clone(),
            csrf: self.csrf.clone(),
        }
    }
}
