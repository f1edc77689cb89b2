//! Calling the game service as somebody: a gRPC client that sends a credential with every call,
//! and the request ids that make retries safe.

use std::path::Path;

use anyhow::Context as _;
use boardcast_schema::game::v1::game_service_client::GameServiceClient;
use rand::RngCore as _;
use tonic::{
    metadata::{Ascii, MetadataValue},
    service::{Interceptor, interceptor::InterceptedService},
    transport::{Channel, Endpoint},
};

/// The environment variable holding an API token or session token.
pub const TOKEN_ENV: &str = "BOARDCAST_TOKEN";

/// Adds `authorization: Bearer <token>` to every call (nothing when there is no token), and the
/// caller's trace context.
#[derive(Clone, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    pub fn new(token: Option<&str>) -> anyhow::Result<Bearer> {
        token
            .map(|t| {
                format!("Bearer {}", t.trim())
                    .parse::<MetadataValue<Ascii>>()
                    .context("the token contains characters a gRPC header cannot carry")
            })
            .transpose()
            .map(Bearer)
    }
}

impl Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        crate::telemetry::inject_into_grpc(request.metadata_mut());
        Ok(request)
    }
}

pub type GameClient = GameServiceClient<InterceptedService<Channel, Bearer>>;

/// Metadata by which an arbiters' dashboard passes on the address of the person logging in (the
/// game service believes it only from the dashboards it is told to trust).
pub const CLIENT_ADDRESS_METADATA: &str = "x-boardcast-client-address";

/// The environment variable naming a PEM file of the certificate authority the game service's
/// TLS certificate is checked against (for an `https://` URL).
pub const CA_ENV: &str = "BOARDCAST_GAME_SERVICE_CA";

/// A client of the game service at `url` that calls as the holder of `token`. An `https://` URL
/// is TLS, checked against the CA in `BOARDCAST_GAME_SERVICE_CA` (see `game_client_with_ca`).
pub async fn game_client(url: &str, token: Option<&str>) -> anyhow::Result<GameClient> {
    let ca = std::env::var_os(CA_ENV).map(std::path::PathBuf::from);
    game_client_with_ca(url, token, ca.as_deref()).await
}

/// `game_client`, trusting the certificate authority in the PEM file `ca` for TLS.
pub async fn game_client_with_ca(
    url: &str,
    token: Option<&str>,
    ca: Option<&Path>,
) -> anyhow::Result<GameClient> {
    let channel = game_endpoint(url, ca)?
        .connect()
        .await
        .with_context(|| format!("connecting to the game service at {url}"))?;
    Ok(GameServiceClient::with_interceptor(
        channel,
        Bearer::new(token)?,
    ))
}

/// Where the game service is: an `https://` URL is TLS, checked against the certificate
/// authority in the PEM file `ca` (required then: a hall's certificates come from its own
/// authority, and trusting every public one would let any of them impersonate the service).
pub fn game_endpoint(url: &str, ca: Option<&Path>) -> anyhow::Result<Endpoint> {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("{url:?} is not a valid game service URL"))?;
    if !url.starts_with("https://") {
        return Ok(endpoint);
    }
    let ca = ca.with_context(|| {
        format!("{url} is TLS: give the certificate authority to trust in {CA_ENV}")
    })?;
    let pem = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
    endpoint
        .tls_config(
            tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tonic::transport::Certificate::from_pem(pem)),
        )
        .context("setting up TLS")
}

/// A new request id: 128 random bits in hex. One per intended change; reuse it only to retry.
pub fn new_request_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The token to call with: read from `file` when given, else from `BOARDCAST_TOKEN`.
pub fn token_from(file: Option<&Path>) -> anyhow::Result<Option<String>> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the token file {}", path.display()))?;
        let token = text.trim().to_owned();
        anyhow::ensure!(
            !token.is_empty(),
            "the token file {} is empty",
            path.display()
        );
        return Ok(Some(token));
    }
    Ok(std::env::var(TOKEN_ENV)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty()))
}
