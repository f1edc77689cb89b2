//! The game service as the arbiter service uses it: logins, who a session belongs to, claims
//! judged and rulings recorded. Every call but `Login` carries the arbiter's own session as its
//! bearer credential, so the game service decides and records who did what; this service holds no
//! authority of its own.

use std::{path::Path, time::Duration};
use tracing::Instrument as _;

use boardcast_schema::game::v1::{
    ActRequest, ActResponse, ArbiterAssignment, AssignArbiterRequest, ClaimVerdict,
    EvaluateClaimRequest, Identity, ListAssignmentsRequest, ListAssignmentsResponse, LoginRequest,
    LoginResponse, LogoutRequest, WhoAmIRequest, game_service_client::GameServiceClient,
};
use tonic::{Code, metadata::MetadataValue, transport::Channel};

/// How long one call to the game service may take before its outcome counts as unknown.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// A call the game service refused or that did not reach it, with its message verbatim: the
/// arbiter reads exactly what the authority said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UpstreamError {
    pub code: Code,
    pub message: String,
}

impl UpstreamError {
    pub fn new(code: Code, message: impl Into<String>) -> UpstreamError {
        UpstreamError {
            code,
            message: message.into(),
        }
    }

    /// The gRPC code's name, e.g. `PERMISSION_DENIED`, for the pages and the logs.
    pub fn code_name(&self) -> &'static str {
        code_name(self.code)
    }

    /// True when the call may or may not have been carried out: the same request (same request
    /// id) can be sent again safely.
    pub fn outcome_unknown(&self) -> bool {
        matches!(
            self.code,
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown
        )
    }
}

pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

impl From<tonic::Status> for UpstreamError {
    fn from(status: tonic::Status) -> Self {
        let message = if status.message().is_empty() {
            format!("the game service answered {}", code_name(status.code()))
        } else {
            status.message().to_owned()
        };
        UpstreamError::new(status.code(), message)
    }
}

/// The game service over gRPC, as the arbiter service asks of it.
#[derive(Clone)]
pub struct GameApi {
    client: GameServiceClient<Channel>,
    /// Why the game service did not answer when last asked (`None`: it answered), for
    /// `/readyz` and `/healthz`: without it no arbiter can log in or rule.
    unreachable: std::sync::Arc<std::sync::RwLock<Option<String>>>,
}

/// How often the game service is asked whether it answers.
const WATCH_EVERY: Duration = Duration::from_secs(5);

impl GameApi {
    /// A client for `url` that connects on first use (the game service may start later). An
    /// `https://` URL is TLS with the certificate authority in `ca_pem`
    /// (`boardcast_kit::client::game_endpoint`).
    pub fn new(url: &str, ca_pem: Option<&Path>) -> anyhow::Result<GameApi> {
        let endpoint = boardcast_kit::client::game_endpoint(url, ca_pem)?
            .connect_timeout(Duration::from_secs(5))
            .timeout(CALL_TIMEOUT);
        Ok(GameApi {
            client: GameServiceClient::new(endpoint.connect_lazy()),
            unreachable: std::sync::Arc::new(std::sync::RwLock::new(Some(
                "not asked yet".to_owned(),
            ))),
        })
    }

    /// Why the game service did not answer when last asked; `None` when it did.
    pub fn unreachable(&self) -> Option<String> {
        self.unreachable
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Asks the game service whether it answers, every few seconds for as long as the service
    /// runs, and says so in the log when that changes.
    pub async fn watch(self) {
        let mut every = tokio::time::interval(WATCH_EVERY);
        loop {
            every.tick().await;
            let now = self.ask().await;
            let before = std::mem::replace(
                &mut *self.unreachable.write().unwrap_or_else(|e| e.into_inner()),
                now.clone(),
            );
            match (before.is_some(), &now) {
                (_, Some(why)) if before.as_deref() != Some(why) => tracing::error!(
                    "the game service does not answer ({why}): no arbiter can log in or rule"
                ),
                (true, None) => tracing::info!("the game service answers"),
                _ => {}
            }
        }
    }

    /// One question without credentials: any answer, a refusal included, is the game service's.
    async fn ask(&self) -> Option<String> {
        let mut client = self.client.clone();
        match client.who_am_i(tonic::Request::new(WhoAmIRequest {})).await {
            Ok(_) => None,
            Err(status)
                if matches!(
                    status.code(),
                    Code::Unauthenticated | Code::PermissionDenied
                ) =>
            {
                None
            }
            Err(status) => Some(status.message().to_owned()),
        }
    }
}

/// `message` as a request carrying `Bearer <token>`.
fn with_bearer<T>(message: T, token: &str) -> Result<tonic::Request<T>, UpstreamError> {
    let mut request = tonic::Request::new(message);
    let value = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
        UpstreamError::new(
            Code::Unauthenticated,
            "the session cookie is malformed; log in again",
        )
    })?;
    request.metadata_mut().insert("authorization", value);
    // The game service continues the caller's trace (see `GameApi::act`).
    boardcast_kit::telemetry::inject_into_grpc(request.metadata_mut());
    Ok(request)
}

impl GameApi {
    /// Logs in for the person at `client`: the game service slows failures down by that address
    /// when it trusts this dashboard (its `--trusted-proxies`).
    pub async fn login(
        &self,
        user: String,
        password: String,
        client: std::net::IpAddr,
    ) -> Result<LoginResponse, UpstreamError> {
        let mut grpc = self.client.clone();
        let mut request = tonic::Request::new(LoginRequest { user, password });
        if let Ok(address) = MetadataValue::try_from(client.to_string()) {
            request
                .metadata_mut()
                .insert(boardcast_kit::client::CLIENT_ADDRESS_METADATA, address);
        }
        Ok(grpc.login(request).await?.into_inner())
    }

    pub async fn who_am_i(&self, token: String) -> Result<Identity, UpstreamError> {
        let mut client = self.client.clone();
        let request = with_bearer(WhoAmIRequest {}, &token)?;
        Ok(client.who_am_i(request).await?.into_inner())
    }

    /// Ends the session on every instance of the game service.
    pub async fn logout(&self, token: String) -> Result<(), UpstreamError> {
        let mut client = self.client.clone();
        let request = with_bearer(LogoutRequest { everywhere: false }, &token)?;
        client.logout(request).await?;
        Ok(())
    }

    pub async fn evaluate_claim(
        &self,
        token: String,
        request: EvaluateClaimRequest,
    ) -> Result<ClaimVerdict, UpstreamError> {
        let mut client = self.client.clone();
        let request = with_bearer(request, &token)?;
        Ok(client.evaluate_claim(request).await?.into_inner())
    }

    pub async fn act(
        &self,
        token: String,
        request: ActRequest,
    ) -> Result<ActResponse, UpstreamError> {
        let mut client = self.client.clone();
        // An arbiter's ruling begins a trace of its own, which the game service continues into
        // the records it appends and the log's readers into their folds.
        let span = tracing::info_span!("arbiter.act", game = %request.game_id);
        let request = span.in_scope(|| with_bearer(request, &token))?;
        Ok(client.act(request).instrument(span).await?.into_inner())
    }

    pub async fn assign_arbiter(
        &self,
        token: String,
        request: AssignArbiterRequest,
    ) -> Result<ArbiterAssignment, UpstreamError> {
        let mut client = self.client.clone();
        let request = with_bearer(request, &token)?;
        Ok(client.assign_arbiter(request).await?.into_inner())
    }

    pub async fn list_assignments(
        &self,
        token: String,
        tournament_id: String,
    ) -> Result<ListAssignmentsResponse, UpstreamError> {
        let mut client = self.client.clone();
        let request = with_bearer(ListAssignmentsRequest { tournament_id }, &token)?;
        Ok(client.list_assignments(request).await?.into_inner())
    }
}
