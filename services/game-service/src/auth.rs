//! Who is calling: credentials on gRPC calls, logins, and the users file they are checked
//! against.
//!
//! The users file (`boardcast users`) is read at start and again whenever it changes, so a user
//! added or a role revoked takes effect within seconds without a restart. Password and token
//! checks are argon2id (slow on purpose): they run on the blocking pool, a few at a time
//! (`HASHES_AT_ONCE`), and a token's first successful check is remembered (keyed by its SHA-256)
//! until the file changes. Failed logins slow down the user's attempts from that address only.

use std::{
    collections::HashMap,
    net::IpAddr,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::{Duration, SystemTime},
};

use boardcast_access::{
    Assignment, Assignments, CredentialError, Directory, Identity, Operation, Revocations, Role,
    SessionClaims, SessionEnd, SessionKey, is_session_token, session_digest,
};
use boardcast_kit::fair_turns::{FairTurns, NoTurn, Turn};
use boardcast_schema::game::v1 as proto;
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};
use tonic::{Status, metadata::MetadataMap};

/// Failed logins for one user from one address before further attempts are slowed down.
const FREE_FAILURES: u32 = 5;
/// The most (user, address) pairs whose failures are remembered; past it, the oldest go.
const FAILURE_TABLE_LIMIT: usize = 10_000;
/// Password and token hashes computed at once (argon2id, 19 MiB each): more wait their turn.
const HASHES_AT_ONCE: usize = 4;
/// Logins from one address (or checks of one user's tokens) waiting for a hash: more are
/// refused as busy at once, so that a flood from one address queues behind itself only.
const HASHES_WAITING_PER_CALLER: usize = 8;
/// How long a login or token check waits for its turn before it is refused as busy.
const HASH_QUEUE_WAIT: Duration = Duration::from_secs(5);
/// Failures older than this are forgotten.
const FAILURE_MEMORY: Duration = Duration::from_secs(15 * 60);
/// The longest a user is made to wait between attempts.
const LONGEST_WAIT: Duration = Duration::from_secs(300);

/// Who tried to log in from where: a user name and the calling address.
type LoginFrom = (String, Option<IpAddr>);

/// Whose turn a hash is, for sharing the turns fairly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HashFor {
    /// A login from an address; IPv6 by its /64, which one machine may fill with addresses.
    LoginFrom(Option<IpAddr>),
    /// A check of one user's API token.
    TokenOf(String),
}

impl HashFor {
    fn login_from(address: Option<IpAddr>) -> HashFor {
        HashFor::LoginFrom(address.map(|address| match address.to_canonical() {
            IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
            v4 => v4,
        }))
    }
}

pub struct Authenticator {
    users_path: PathBuf,
    /// The users file as last read, with its modification time (to notice changes).
    directory: RwLock<(Arc<Directory>, Option<SystemTime>)>,
    key: SessionKey,
    session_lifetime: Duration,
    /// Reads (games, boards, events, verdicts) without a credential.
    open_reads: bool,
    /// The dashboards, whose calls may name the address of the person logging in
    /// (`CLIENT_ADDRESS_METADATA`).
    trusted_proxies: Vec<IpAddr>,
    /// SHA-256 of API tokens already checked, with the user: argon2 once per token, not per call.
    token_cache: RwLock<HashMap<[u8; 32], Identity>>,
    /// Recent failed logins per user name and calling address: (count, time of the last one).
    /// Keyed by both, so that failures from an attacker's address slow down only that address,
    /// never the user logging in from elsewhere.
    failures: RwLock<HashMap<LoginFrom, (u32, std::time::Instant)>>,
    /// Turns for computing a password or token hash: memory and CPU stay bounded whatever
    /// arrives at once, and the turns go round the callers, so a flood of made-up names from
    /// one address (each a new name, never slowed down) does not keep anyone else waiting.
    hashing: std::sync::Arc<FairTurns<HashFor>>,
    /// The chief arbiters' assignments in force (`AssignmentLog` keeps them up to date).
    assignments: RwLock<Assignments>,
    /// Sessions ended before they expire (`SessionLog` keeps them up to date).
    revocations: RwLock<Revocations>,
}

/// Maps a refused credential to UNAUTHENTICATED with a message that helps the caller.
fn unauthenticated(e: &CredentialError) -> Status {
    Status::unauthenticated(e.to_string())
}

pub fn denied(e: boardcast_access::Denied) -> Status {
    Status::permission_denied(e.to_string())
}

impl Authenticator {
    /// Reads the users file (a missing file is an empty directory: every credential is refused
    /// until users are added) and the session key (created when missing).
    pub fn load(
        users_path: &Path,
        key_path: &Path,
        session_lifetime: Duration,
        open_reads: bool,
        trusted_proxies: Vec<IpAddr>,
    ) -> anyhow::Result<Authenticator> {
        let (directory, modified) = read_directory(users_path)?;
        if directory.users.is_empty() {
            tracing::warn!(
                "no users in {}: every call that needs a credential is refused; add users with \
                 `boardcast users add`",
                users_path.display()
            );
        }
        let key = boardcast_kit::secrets::session_key(key_path)?;
        Ok(Authenticator {
            users_path: users_path.to_owned(),
            directory: RwLock::new((Arc::new(directory), modified)),
            key,
            session_lifetime,
            open_reads,
            trusted_proxies,
            token_cache: RwLock::new(HashMap::new()),
            failures: RwLock::new(HashMap::new()),
            hashing: FairTurns::new(HASHES_AT_ONCE, HASHES_WAITING_PER_CALLER),
            assignments: RwLock::new(Assignments::default()),
            revocations: RwLock::new(Revocations::default()),
        })
    }

    fn directory(&self) -> Arc<Directory> {
        self.directory
            .read()
            .map(|d| d.0.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().0.clone())
    }

    /// Reads the users file again if it changed. A file that does not parse is not taken: the
    /// last good one stays in force, and the error is logged.
    pub fn reload_if_changed(&self) {
        let modified = std::fs::metadata(&self.users_path)
            .and_then(|m| m.modified())
            .ok();
        let known = self.directory.read().map(|d| d.1).unwrap_or(None);
        if modified == known {
            return;
        }
        match read_directory(&self.users_path) {
            Ok((directory, modified)) => {
                tracing::info!(users = directory.users.len(), "users file read again");
                if let Ok(mut d) = self.directory.write() {
                    *d = (Arc::new(directory), modified);
                }
                if let Ok(mut cache) = self.token_cache.write() {
                    cache.clear();
                }
            }
            Err(e) => tracing::error!("keeping the previous users: {e:#}"),
        }
    }

    /// Takes a session's ending in force.
    pub fn record_session_end(&self, end: SessionEnd) {
        match self.revocations.write() {
            Ok(mut revocations) => revocations.record(end),
            Err(poisoned) => poisoned.into_inner().record(end),
        }
    }

    /// Forgets the endings of sessions that have expired anyway.
    pub fn forget_expired_endings(&self) {
        let now = boardcast_kit::now_unix_ms();
        match self.revocations.write() {
            Ok(mut revocations) => revocations.forget_expired(now),
            Err(poisoned) => poisoned.into_inner().forget_expired(now),
        }
    }

    /// The users file's endings of users' sessions (a password change, a disabled user,
    /// `boardcast users end-sessions`) not yet in force from NATS: to be recorded there, so that
    /// instances with an older copy of the file refuse those sessions too.
    pub fn endings_of_the_users_file(&self) -> Vec<SessionEnd> {
        let directory = self.directory();
        let revocations = self
            .revocations
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        directory
            .users
            .iter()
            .filter(|(user, record)| {
                record.sessions_from_unix_ms > revocations.user_sessions_from(user).unwrap_or(0)
            })
            .map(|(user, record)| SessionEnd::UserSessionsBefore {
                user: user.clone(),
                from_unix_ms: record.sessions_from_unix_ms,
                from_users_file: true,
            })
            .collect()
    }

    /// How the caller's session ends on logout: that session, or (`everywhere`) every session
    /// of its user opened until now. Only a session can log out (an API token is revoked with
    /// `boardcast users revoke-tokens`).
    pub fn ending_of(
        &self,
        metadata: &MetadataMap,
        everywhere: bool,
    ) -> Result<SessionEnd, Status> {
        let token = bearer(metadata)
            .filter(|token| is_session_token(token))
            .ok_or_else(|| {
                Status::unauthenticated(
                    "logging out needs the session: `authorization: Bearer <session token>` (an \
                     API token is revoked with `boardcast users revoke-tokens`)",
                )
            })?;
        let claims = match self.key.open(token, boardcast_kit::now_unix_ms()) {
            Ok(claims) => claims,
            Err(e) => return Err(unauthenticated(&e)),
        };
        // Only a session that still counts ends sessions: a stolen token already logged out, or
        // a disabled user's, cannot end the user's new sessions.
        self.revocations
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .check(token, &claims)
            .map_err(|e| unauthenticated(&e))?;
        self.directory()
            .session_identity(&claims)
            .map_err(|e| unauthenticated(&e))?;
        Ok(if everywhere {
            SessionEnd::UserSessionsBefore {
                user: claims.user,
                // Every session issued up to this moment, this one included.
                from_unix_ms: boardcast_kit::now_unix_ms().saturating_add(1),
                from_users_file: false,
            }
        } else {
            SessionEnd::Session {
                digest: session_digest(token),
                user: claims.user,
                expires_unix_ms: claims.expires_unix_ms,
            }
        })
    }

    /// UNAUTHENTICATED when another copy of the users file ended `user`'s sessions after what
    /// this instance's copy says (a password changed, the user disabled): its old password and
    /// tokens open nothing here until this copy is replaced.
    fn check_users_file_is_current(&self, user: &str) -> Result<(), Status> {
        let elsewhere = self
            .revocations
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .users_file_sessions_from(user)
            .unwrap_or(0);
        let here = self
            .directory()
            .users
            .get(user)
            .map_or(0, |record| record.sessions_from_unix_ms);
        if elsewhere > here {
            return Err(Status::unauthenticated(format!(
                "{user:?} was changed in another copy of the users file (a password change, a \
                 disabled user or their sessions ended) after this instance's copy was written: \
                 copy the current users file here"
            )));
        }
        Ok(())
    }

    /// Takes an assignment in force (in the order they were recorded).
    pub fn record_assignment(&self, assignment: Assignment) {
        match self.assignments.write() {
            Ok(mut assignments) => assignments.record(assignment),
            Err(poisoned) => poisoned.into_inner().record(assignment),
        }
    }

    /// The assignments in force in a tournament.
    pub fn assignments_of(&self, tournament: &str) -> Vec<Assignment> {
        let assignments = self
            .assignments
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        assignments.of_tournament(tournament).cloned().collect()
    }

    /// Every arbiter of a tournament in the users file with the boards they rule on now.
    pub fn arbiters_of(&self, tournament: &str) -> Vec<boardcast_access::ArbiterBoards> {
        let assignments = self
            .assignments
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        assignments.arbiters_of(&self.directory(), tournament)
    }

    /// The assignment recorded under a request id, if any.
    pub fn assignment_under(&self, request_id: &str) -> Option<Assignment> {
        let assignments = self
            .assignments
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        assignments.under_request(request_id).cloned()
    }

    /// A user as the users file has them (to be assigned boards), or FAILED_PRECONDITION.
    pub fn user(&self, user: &str) -> Result<Identity, Status> {
        self.directory().identity(user).map_err(|e| match e {
            CredentialError::WrongPassword => {
                Status::failed_precondition(format!("there is no user {user:?}"))
            }
            other => Status::failed_precondition(other.to_string()),
        })
    }

    /// The identity with the boards the chief arbiters assigned it.
    fn with_assignments(&self, mut identity: Identity) -> Identity {
        let assignments = self
            .assignments
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        assignments.apply_to(&mut identity);
        identity
    }

    /// The caller's identity, from the `authorization: Bearer …` metadata, with the boards
    /// assigned to it.
    pub async fn identify(&self, metadata: &MetadataMap) -> Result<Identity, Status> {
        let identity = self.identify_credential(metadata).await?;
        Ok(self.with_assignments(identity))
    }

    /// The identity the credential belongs to, as the users file has it.
    async fn identify_credential(&self, metadata: &MetadataMap) -> Result<Identity, Status> {
        let token = bearer(metadata).ok_or_else(|| {
            Status::unauthenticated(
                "this call needs a credential: `authorization: Bearer <session or API token>` \
                 (log in, or create a token with `boardcast users token`)",
            )
        })?;
        if is_session_token(token) {
            let claims = self
                .key
                .open(token, boardcast_kit::now_unix_ms())
                .map_err(|e| unauthenticated(&e))?;
            self.revocations
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .check(token, &claims)
                .map_err(|e| unauthenticated(&e))?;
            return self
                .directory()
                .session_identity(&claims)
                .map_err(|e| unauthenticated(&e));
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = boardcast_kit::now_unix_ms();
        if let Some(identity) = self
            .token_cache
            .read()
            .ok()
            .and_then(|c| c.get(&digest).cloned())
        {
            if identity
                .expires_unix_ms
                .is_some_and(|expires| now >= expires)
            {
                return Err(unauthenticated(&CredentialError::TokenExpired));
            }
            // Remembered from this copy of the users file; another copy may have ended it since.
            self.check_users_file_is_current(&identity.user)?;
            return Ok(identity);
        }
        let directory = self.directory();
        if !directory.names_a_token(token) {
            return Err(unauthenticated(&CredentialError::UnknownToken));
        }
        let token = token.to_owned();
        let caller = HashFor::TokenOf(token.split('.').nth(1).unwrap_or_default().to_owned());
        let turn = self.hashing_turn(caller).await?;
        // The turn goes with the hash: a caller that gives up does not free it while the hash
        // still runs.
        let identity = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            directory.check_token(&token, now)
        })
        .await
        .map_err(|e| Status::internal(format!("checking the token: {e}")))?
        .map_err(|e| unauthenticated(&e))?;
        self.check_users_file_is_current(&identity.user)?;
        if let Ok(mut cache) = self.token_cache.write() {
            cache.insert(digest, identity.clone());
        }
        Ok(identity)
    }

    /// The caller's identity for a read: `None` when reads are open and no credential was sent.
    pub async fn identify_reader(
        &self,
        metadata: &MetadataMap,
    ) -> Result<Option<Identity>, Status> {
        if self.open_reads && bearer(metadata).is_none() {
            return Ok(None);
        }
        self.identify(metadata).await.map(Some)
    }

    /// Whose address a login comes from: the caller's, or, for a call from a trusted dashboard,
    /// the address it passes on for the person logging in.
    pub fn login_address(&self, peer: Option<IpAddr>, metadata: &MetadataMap) -> Option<IpAddr> {
        let forwarded = metadata
            .get(boardcast_kit::client::CLIENT_ADDRESS_METADATA)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<IpAddr>().ok());
        // Compared canonically: a dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d.
        let peer = peer.map(|p| p.to_canonical());
        match (peer, forwarded) {
            (Some(peer), Some(client)) if self.trusted_proxies.contains(&peer) => {
                Some(client.to_canonical())
            }
            _ => peer,
        }
    }

    /// Checks a password and hands out a session. Repeated failures for a user are slowed down.
    pub async fn login(
        &self,
        user: &str,
        password: &str,
        peer: Option<IpAddr>,
    ) -> Result<proto::LoginResponse, Status> {
        // A name no user can have is refused before anything is hashed or remembered.
        if boardcast_access::validate_user_name(user).is_err() {
            return Err(Status::unauthenticated(
                "unknown user or wrong password (a user name is 1 to 64 lowercase letters, \
                 digits, - or _)",
            ));
        }
        let key = (user.to_owned(), peer);
        let slowed = |wait: Duration| {
            Status::resource_exhausted(format!(
                "too many failed logins for {user:?} from this address; try again in {} s",
                wait.as_secs().max(1)
            ))
        };
        if let Some(wait) = self.must_wait(&key) {
            return Err(slowed(wait));
        }
        let directory = self.directory();
        let (who, secret) = (user.to_owned(), password.to_owned());
        let checked = {
            let turn = self.hashing_turn(HashFor::login_from(peer)).await?;
            // Failures may have come in while this attempt waited its turn.
            if let Some(wait) = self.must_wait(&key) {
                return Err(slowed(wait));
            }
            tokio::task::spawn_blocking(move || {
                let _turn = turn;
                directory.check_password(&who, &secret)
            })
            .await
            .map_err(|e| Status::internal(format!("checking the password: {e}")))?
        };
        let identity = match checked {
            Ok(identity) => identity,
            Err(e) => {
                self.note_failure(key);
                tracing::warn!(user, ?peer, "login refused: {e}");
                return Err(unauthenticated(&e));
            }
        };
        self.check_users_file_is_current(&identity.user)?;
        if let Ok(mut failures) = self.failures.write() {
            failures.remove(&key);
        }
        let now = boardcast_kit::now_unix_ms();
        let lifetime = i64::try_from(self.session_lifetime.as_millis()).unwrap_or(i64::MAX);
        let mut csrf = [0u8; 16];
        rand::rng().fill_bytes(&mut csrf);
        let claims = SessionClaims {
            user: identity.user.clone(),
            issued_unix_ms: now,
            expires_unix_ms: now.saturating_add(lifetime),
            csrf: csrf.iter().map(|b| format!("{b:02x}")).collect(),
        };
        tracing::info!(user, ?peer, "logged in");
        let token = self.key.issue(&claims);
        Ok(proto::LoginResponse {
            session_token: token,
            identity: Some(to_proto(&self.with_assignments(Identity {
                expires_unix_ms: Some(claims.expires_unix_ms),
                ..identity
            }))),
        })
    }

    /// A turn to compute a hash, or UNAVAILABLE when none comes soon (a flood of logins
    /// or of tokens) or the caller already has enough waiting.
    async fn hashing_turn(&self, caller: HashFor) -> Result<Turn<HashFor>, Status> {
        // UNAVAILABLE, not RESOURCE_EXHAUSTED: the service is busy, nothing was held against
        // this user or address (a dashboard must not count it as a failed login).
        let busy = match &caller {
            HashFor::LoginFrom(_) => "too many logins from this address at once",
            HashFor::TokenOf(_) => "too many checks of this user's API tokens at once",
        };
        self.hashing
            .turn(caller, HASH_QUEUE_WAIT)
            .await
            .map_err(|e| match e {
                NoTurn::TooManyWaiting => {
                    Status::unavailable(format!("{busy}; try again in a few seconds"))
                }
                NoTurn::TimedOut => {
                    Status::unavailable("too many logins at once; try again in a few seconds")
                }
            })
    }

    fn note_failure(&self, key: LoginFrom) {
        if let Ok(mut failures) = self.failures.write() {
            let now = std::time::Instant::now();
            if failures.len() >= FAILURE_TABLE_LIMIT {
                failures.retain(|_, (_, last)| now.duration_since(*last) <= FAILURE_MEMORY);
            }
            if failures.len() >= FAILURE_TABLE_LIMIT
                && let Some(oldest) = failures
                    .iter()
                    .min_by_key(|(_, (_, last))| *last)
                    .map(|(k, _)| k.clone())
            {
                failures.remove(&oldest);
            }
            let entry = failures.entry(key).or_insert((0, now));
            if now.duration_since(entry.1) > FAILURE_MEMORY {
                *entry = (0, now);
            }
            entry.0 = entry.0.saturating_add(1);
            entry.1 = now;
        }
    }

    /// How long the user must still wait before the next attempt, if at all: nothing for the
    /// first failures, then 1, 2, 4 … s after the last one, at most `LONGEST_WAIT`.
    fn must_wait(&self, key: &LoginFrom) -> Option<Duration> {
        let failures = self.failures.read().ok()?;
        let &(count, last) = failures.get(key)?;
        if count < FREE_FAILURES || last.elapsed() > FAILURE_MEMORY {
            return None;
        }
        let exponent = (count - FREE_FAILURES).min(16);
        let wait = Duration::from_secs(1u64 << exponent).min(LONGEST_WAIT);
        wait.checked_sub(last.elapsed())
    }
}

/// The bearer token of the call's `authorization` metadata.
fn bearer(metadata: &MetadataMap) -> Option<&str> {
    let value = metadata.get("authorization")?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?
        .trim();
    (!token.is_empty()).then_some(token)
}

/// Whether the identity (or, for open reads, anybody) may read the tournament.
pub fn may_read(reader: &Option<Identity>, tournament: &str) -> bool {
    reader.as_ref().is_none_or(|who| who.may_read(tournament))
}

/// PERMISSION_DENIED unless the identity (or, for open reads, anybody) may read the tournament.
pub fn check_read(reader: &Option<Identity>, tournament: &str) -> Result<(), Status> {
    match reader {
        None => Ok(()),
        Some(who) => who.may(Operation::Read { tournament }).map_err(denied),
    }
}

pub fn to_proto(identity: &Identity) -> proto::Identity {
    proto::Identity {
        user: identity.user.clone(),
        display_name: identity.display_name.clone(),
        grants: identity
            .grants
            .iter()
            .map(|g| proto::Grant {
                tournament_id: g.tournament.clone(),
                role: match g.role {
                    Role::ChiefArbiter => proto::Role::ChiefArbiter,
                    Role::Arbiter => proto::Role::Arbiter,
                    Role::Observer => proto::Role::Observer,
                    Role::Operator => proto::Role::Operator,
                } as i32,
                boards: g.boards.clone(),
            })
            .collect(),
        expires_unix_ms: identity.expires_unix_ms.unwrap_or(0),
        assignments: identity
            .assigned
            .iter()
            .map(|(tournament, boards)| proto::ArbiterAssignment {
                tournament_id: tournament.clone(),
                user: identity.user.clone(),
                boards: boards.clone(),
                ..Default::default()
            })
            .collect(),
    }
}

fn read_directory(path: &Path) -> anyhow::Result<(Directory, Option<SystemTime>)> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    Ok((boardcast_kit::secrets::read_users(path)?, modified))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_share_turns_by_address_and_ipv6_by_its_64() {
        let at = |a: &str| HashFor::login_from(Some(a.parse().expect("an address")));
        assert_eq!(at("2001:db8:1:2::1"), at("2001:db8:1:2:ffff::9"));
        assert_ne!(at("2001:db8:1:2::1"), at("2001:db8:1:3::1"));
        assert_eq!(at("::ffff:10.0.0.7"), at("10.0.0.7"));
        assert_ne!(at("10.0.0.7"), at("10.0.0.8"));
    }
}
