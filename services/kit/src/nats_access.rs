//! NATS accounts, users and permissions for one deployment: a nats-server `accounts` block with
//! one user per role, and the credentials the services connect with.
//!
//! Without it anyone who reaches NATS can publish any board's observations, append to a game's
//! log or delete the streams. With it:
//!
//! - `admin` may do anything; it is the only user that may delete or purge streams and
//!   consumers or change a stream's configuration. No service runs as admin.
//! - `game-service` is the only writer of the game logs, the dead-letter stream and the arbiters'
//!   assignments; it creates the streams and its durable consumer, but may not delete, purge or
//!   reconfigure them.
//! - `broadcast-service` and `arbiter-service` read the game logs and nothing else.
//! - each gateway (`gateway-<name>`) publishes the observations of its own boards only, and may
//!   read back the last observation of its own boards (to continue their numbering), no other.
//! - `simulator` publishes observations of any board (the demo and test simulator plays many),
//!   and nothing on the game logs.
//!
//! Every JetStream call is a request on a `$JS.API.…` subject, so permissions on JetStream are
//! publish permissions on those subjects. The lists below follow the subjects async-nats 0.51
//! uses for the calls our code makes (see [`permissions`]). Publish permissions are allow lists:
//! a subject not listed is refused. The deny lists repeat the destructive API subjects for every
//! non-admin user so that a later, broader allow entry cannot let them through (deny wins).
//!
//! Files written by [`NatsAccess::generate`] into one directory, both mode 0600:
//! The streams, the game service and admin are in one account ([`HALL_ACCOUNT`]); every other
//! program (a gateway, the simulator, the broadcast and arbiter services) in an account of its
//! own that imports from it exactly the subjects its permissions let it publish. Permissions
//! alone do not keep a board PC, or a service taken over, out of the hall: the server sends a
//! JetStream answer to whatever reply subject the request names without checking it against the
//! asker's rights, so in one account a gateway could have its own stored bytes, or a reader a
//! game's record, sent to `$JS.API.STREAM.PURGE.…`. An answer through an import goes to its
//! asker alone.
//!
//! - `nats-auth.conf`: the `accounts { … }` block. A complete nats-server
//!   configuration by itself (`nats-server -c nats-auth.conf -js …`, as [`crate::local::LocalNats`]
//!   runs it), or `include`d from a main configuration.
//! - `credentials.json`: every user's password in plain text, for the services' URLs.
//!
//! Passwords are 32 random letters and digits (about 190 bits). The configuration holds only
//! their bcrypt hashes (nats-server compares `$2a$` passwords with bcrypt), so a copy of the
//! server's configuration does not give anyone a service's password; the plain text lives only in
//! `credentials.json`. Because the passwords are random rather than chosen by people, a low
//! bcrypt cost is enough: stretching only helps against guessing weak passwords, and the server
//! pays the cost on every connection.

use std::{
    collections::BTreeMap,
    fmt,
    io::Write as _,
    path::{Path, PathBuf},
    str::FromStr,
};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use crate::nats::{
    ASSIGNMENTS_STREAM, ASSIGNMENTS_SUBJECTS, DEADLETTER_STREAM, DEADLETTER_SUBJECTS,
    DEFAULT_PARTITIONS, DELAYS_STREAM, DELAYS_SUBJECTS, GAMES_STREAM, GAMES_SUBJECTS,
    INGEST_SUBJECTS, PARTITIONED_INGEST_SUBJECTS, SESSIONS_STREAM, SESSIONS_SUBJECTS,
    ingest_stream, observation_subject,
};

/// The nats-server configuration with the users, in the credentials directory.
pub const AUTH_CONFIG_FILE: &str = "nats-auth.conf";
/// The users' plain-text passwords, in the credentials directory.
pub const CREDENTIALS_FILE: &str = "credentials.json";
/// The durable pull consumer through which an earlier version of the game service read every
/// observation; now only read, for where the partitions' consumers start.
pub const GAME_SERVICE_CONSUMER: &str = "game-service";

/// The game service's durable consumer of one partition of the observations (`None`: those
/// stored unpartitioned, by a server without the partition mapping).
pub fn ingest_consumer(partition: Option<u32>) -> String {
    match partition {
        Some(p) => format!("{GAME_SERVICE_CONSUMER}-p{p}"),
        None => format!("{GAME_SERVICE_CONSUMER}-unpartitioned"),
    }
}

/// Length of a generated password: 32 of 62 letters and digits, about 190 bits; letters and
/// digits only, so a password needs no escaping in a URL or in the server's configuration.
const PASSWORD_LEN: usize = 32;
/// bcrypt cost of the hashes in the configuration (see the module comment for why it is low).
const BCRYPT_COST: u32 = 8;

/// Who connects to NATS. Each role is one NATS user.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Admin,
    GameService,
    BroadcastService,
    ArbiterService,
    Simulator,
    /// A gateway, by name; its boards are listed in the credentials.
    Gateway(String),
}

impl Role {
    /// The NATS user name: `admin`, `game-service`, …, `gateway-<name>`.
    pub fn user_name(&self) -> String {
        match self {
            Role::Admin => "admin".to_owned(),
            Role::GameService => "game-service".to_owned(),
            Role::BroadcastService => "broadcast-service".to_owned(),
            Role::ArbiterService => "arbiter-service".to_owned(),
            Role::Simulator => "simulator".to_owned(),
            Role::Gateway(name) => format!("gateway-{name}"),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::GameService => "game-service",
            Role::BroadcastService => "broadcast-service",
            Role::ArbiterService => "arbiter-service",
            Role::Simulator => "simulator",
            Role::Gateway(_) => "gateway",
        }
    }

    /// One line for the configuration's comments.
    fn summary(&self) -> &'static str {
        match self {
            Role::Admin => "everything, the only user that may delete/purge/reconfigure streams",
            Role::GameService => {
                "the only writer of the game logs, dead letters, assignments, delays and session ends; creates the streams"
            }
            Role::BroadcastService => {
                "reads the game logs; publishes the released live updates (boardcast.feed.>, \
                 boardcast.delta.>)"
            }
            Role::ArbiterService => "reads the game logs only",
            Role::Simulator => {
                "publishes and reads back observations of any board (test halls only)"
            }
            Role::Gateway(_) => "publishes the observations of its own boards only",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.user_name())
    }
}

impl FromStr for Role {
    type Err = anyhow::Error;

    /// A user name (`game-service`, `gateway-hall-a`) or `gateway:<name>`.
    fn from_str(s: &str) -> anyhow::Result<Role> {
        Ok(match s {
            "admin" => Role::Admin,
            "game-service" => Role::GameService,
            "broadcast-service" => Role::BroadcastService,
            "arbiter-service" => Role::ArbiterService,
            "simulator" => Role::Simulator,
            other => {
                let Some(name) = other
                    .strip_prefix("gateway:")
                    .or_else(|| other.strip_prefix("gateway-"))
                else {
                    bail!(
                        "unknown NATS role {other:?}: admin, game-service, broadcast-service, \
                         arbiter-service, simulator or gateway:<name>"
                    );
                };
                validate_name("gateway name", name)?;
                Role::Gateway(name.to_owned())
            }
        })
    }
}

/// A gateway and the boards it may publish for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayBoards {
    pub name: String,
    pub boards: Vec<String>,
}

impl GatewayBoards {
    pub fn new(
        name: impl Into<String>,
        boards: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        GatewayBoards {
            name: name.into(),
            boards: boards.into_iter().map(Into::into).collect(),
        }
    }
}

impl FromStr for GatewayBoards {
    type Err = anyhow::Error;

    /// `NAME=BOARD,BOARD,…`, e.g. `hall-a=hall-a-1,hall-a-2`.
    fn from_str(s: &str) -> anyhow::Result<GatewayBoards> {
        let Some((name, boards)) = s.split_once('=') else {
            bail!("expected NAME=BOARD,BOARD,… for a gateway, got {s:?}");
        };
        Ok(GatewayBoards::new(
            name.trim(),
            boards.split(',').map(str::trim).filter(|b| !b.is_empty()),
        ))
    }
}

/// One user's credentials. `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserCredentials {
    pub user: String,
    /// `admin`, `game-service`, `broadcast-service`, `arbiter-service`, `simulator`, `gateway`.
    pub role: String,
    /// The gateway's name (gateways only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// The boards a gateway may publish for (gateways only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boards: Vec<String>,
    pub password: String,
}

impl fmt::Debug for UserCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserCredentials")
            .field("user", &self.user)
            .field("role", &self.role)
            .field("gateway", &self.gateway)
            .field("boards", &self.boards)
            .field("password", &"***")
            .finish()
    }
}

impl UserCredentials {
    pub fn role(&self) -> anyhow::Result<Role> {
        match (self.role.as_str(), &self.gateway) {
            ("gateway", Some(name)) => Ok(Role::Gateway(name.clone())),
            ("gateway", None) => bail!("gateway user {} has no gateway name", self.user),
            (kind, _) => kind.parse(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct CredentialsFile {
    /// Written as 1; a file from a later, incompatible version is refused.
    version: u32,
    users: Vec<UserCredentials>,
}

/// Whether a configuration has the `simulator` user. It may publish, and read back, any board's
/// observations, so it could put moves on any board: for demonstrations and test halls, never
/// for a real event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimulatorUser {
    Included,
    Omitted,
}

/// The users and passwords of one deployment, kept in one directory.
#[derive(Debug, Clone)]
pub struct NatsAccess {
    dir: PathBuf,
    users: Vec<UserCredentials>,
}

impl NatsAccess {
    /// Writes a configuration with new passwords for every user (the fixed roles, plus one
    /// user per gateway) into `dir`, replacing what was there.
    pub fn generate(
        dir: &Path,
        gateways: &[GatewayBoards],
        simulator: SimulatorUser,
    ) -> anyhow::Result<NatsAccess> {
        Self::write(dir, gateways, simulator, &BTreeMap::new())
    }

    /// Like [`NatsAccess::generate`], but users that `dir` already has keep their passwords, so
    /// running services and gateways need no new URLs: for adding a gateway or a board. Users
    /// that are no longer wanted (a gateway left out) are removed.
    pub fn update(
        dir: &Path,
        gateways: &[GatewayBoards],
        simulator: SimulatorUser,
    ) -> anyhow::Result<NatsAccess> {
        let kept = if dir.join(CREDENTIALS_FILE).exists() {
            Self::load(dir)?
                .users
                .into_iter()
                .map(|u| (u.user, u.password))
                .collect()
        } else {
            BTreeMap::new()
        };
        Self::write(dir, gateways, simulator, &kept)
    }

    /// Reads the credentials written earlier, so that a restart keeps the passwords.
    pub fn load(dir: &Path) -> anyhow::Result<NatsAccess> {
        let path = dir.join(CREDENTIALS_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the NATS credentials {}", path.display()))?;
        let file: CredentialsFile = serde_json::from_str(&text)
            .with_context(|| format!("reading the NATS credentials {}", path.display()))?;
        if file.version != 1 {
            bail!(
                "{}: credentials format version {} is not supported (1 is)",
                path.display(),
                file.version
            );
        }
        for user in &file.users {
            user.role()
                .with_context(|| format!("{}: user {}", path.display(), user.user))?;
        }
        Ok(NatsAccess {
            dir: dir.to_owned(),
            users: file.users,
        })
    }

    fn write(
        dir: &Path,
        gateways: &[GatewayBoards],
        simulator: SimulatorUser,
        kept: &BTreeMap<String, String>,
    ) -> anyhow::Result<NatsAccess> {
        let mut roles: Vec<(Role, Vec<String>)> = vec![
            (Role::Admin, vec![]),
            (Role::GameService, vec![]),
            (Role::BroadcastService, vec![]),
            (Role::ArbiterService, vec![]),
        ];
        if simulator == SimulatorUser::Included {
            roles.push((Role::Simulator, vec![]));
        }
        let mut names = std::collections::BTreeSet::new();
        for gateway in gateways {
            validate_name("gateway name", &gateway.name)?;
            if !names.insert(gateway.name.as_str()) {
                bail!("gateway {:?} is listed twice", gateway.name);
            }
            if gateway.boards.is_empty() {
                bail!("gateway {:?} has no boards", gateway.name);
            }
            for board in &gateway.boards {
                boardcast_game::validate_board_id(board)
                    .with_context(|| format!("gateway {:?}", gateway.name))?;
            }
            roles.push((Role::Gateway(gateway.name.clone()), gateway.boards.clone()));
        }
        let mut users = Vec::with_capacity(roles.len());
        let mut hall_users = String::new();
        let mut own_accounts = String::new();
        for (role, boards) in roles {
            let user = role.user_name();
            let password = match kept.get(&user) {
                Some(password) => password.clone(),
                None => new_password(),
            };
            let hash = bcrypt::hash_with_result(&password, BCRYPT_COST)
                .context("hashing a NATS password")?
                .format_for_version(bcrypt::Version::TwoA);
            let entry = render_user(&role, &boards, &hash);
            if !role.in_hall_account() {
                own_accounts.push_str(&render_own_account(&role, &boards, &entry));
            } else {
                hall_users.push_str(&indented(&entry, 2));
            }
            users.push(UserCredentials {
                user,
                role: role.kind().to_owned(),
                gateway: match &role {
                    Role::Gateway(name) => Some(name.clone()),
                    _ => None,
                },
                boards,
                password,
            });
        }
        let config = format!(
            "# NATS users and permissions for boardcast, written by `boardcast nats-config`\n\
             # (boardcast_kit::nats_access). Regenerate rather than edit: the services' passwords are\n\
             # in {CREDENTIALS_FILE} next to this file; here they are bcrypt hashes.\n\
             # Run alone (nats-server -c {AUTH_CONFIG_FILE} -js -sd DIR) or include it from the\n\
             # server's configuration (include \"{AUTH_CONFIG_FILE}\", a path relative to that file).\n\
             #\n\
             # The streams, the game service and admin are in the account {HALL_ACCOUNT}; every other\n\
             # program (a gateway, the simulator, the broadcast and arbiter services) is in an\n\
             # account of its own that imports only the requests it makes. A request through an\n\
             # import is answered to its asker alone, so a board PC or a service taken over can\n\
             # have the server publish in the hall's account only on the subjects it imports\n\
             # (never a JetStream answer sent to a `$JS.API` subject, say).\n\
             accounts {{\n  {HALL_ACCOUNT} {{\n    jetstream: enabled\n    users = [\n{hall_users}    ]\n\
             {exports}{mapping}  }}\n{own_accounts}}}\n",
            exports = indented(&render_hall_exports_and_imports(), 4),
            mapping = indented(
                &crate::nats::partition_mapping(crate::nats::DEFAULT_PARTITIONS),
                4
            ),
        );
        let credentials = serde_json::to_string_pretty(&CredentialsFile {
            version: 1,
            users: users.clone(),
        })
        .context("writing the NATS credentials")?;
        create_private_dir(dir)?;
        write_private(&dir.join(AUTH_CONFIG_FILE), config.as_bytes())?;
        write_private(&dir.join(CREDENTIALS_FILE), credentials.as_bytes())?;
        Ok(NatsAccess {
            dir: dir.to_owned(),
            users,
        })
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The nats-server configuration with the users (`nats-auth.conf`).
    pub fn auth_config_path(&self) -> PathBuf {
        self.dir.join(AUTH_CONFIG_FILE)
    }

    /// The plain-text passwords (`credentials.json`).
    pub fn credentials_path(&self) -> PathBuf {
        self.dir.join(CREDENTIALS_FILE)
    }

    pub fn users(&self) -> &[UserCredentials] {
        &self.users
    }

    pub fn user(&self, role: &Role) -> Option<&UserCredentials> {
        let name = role.user_name();
        self.users.iter().find(|u| u.user == name)
    }

    /// `base_url` with the role's user name and password: `nats://127.0.0.1:4222` becomes
    /// `nats://game-service:PASSWORD@127.0.0.1:4222`. Each server of a comma-separated cluster
    /// list gets them; credentials already in `base_url` are replaced. Give the result to
    /// [`crate::nats::connect`] (async-nats 0.51 itself ignores credentials in a URL).
    pub fn url_for(&self, role: &Role, base_url: &str) -> anyhow::Result<String> {
        let user = self
            .user(role)
            .with_context(|| format!("no NATS user {role} in {}", self.dir.display()))?;
        with_credentials(base_url, &user.user, &user.password)
    }
}

/// Where `user`'s replies come: every request's answer, every JetStream acknowledgement and
/// every message a consumer delivers. Each user may subscribe to its own prefix only, so that no
/// credential (a board PC's, say) can read what is addressed to another program: the game log's
/// records delivered to the broadcast service, observations read by the game service.
/// [`crate::nats::connect`] gives each connection its user's prefix.
pub fn inbox_prefix(user: &str) -> String {
    format!("_INBOX.{user}")
}

/// What a role may publish and subscribe to; `None` for admin (everything).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Permissions {
    pub publish_allow: Vec<String>,
    pub publish_deny: Vec<String>,
    pub subscribe_allow: Vec<String>,
}

/// The JetStream API subjects no user but admin may use: deleting, purging or reconfiguring
/// streams and consumers, removing messages, snapshots, cluster and account administration,
/// asking a leader to step down.
pub const ADMIN_ONLY_API: &[&str] = &[
    "$JS.API.STREAM.DELETE.>",
    "$JS.API.STREAM.PURGE.>",
    "$JS.API.STREAM.UPDATE.>",
    "$JS.API.STREAM.MSG.DELETE.>",
    "$JS.API.STREAM.SNAPSHOT.>",
    "$JS.API.STREAM.RESTORE.>",
    "$JS.API.STREAM.PEER.REMOVE.>",
    "$JS.API.STREAM.LEADER.STEPDOWN.>",
    "$JS.API.CONSUMER.DELETE.>",
    "$JS.API.CONSUMER.PAUSE.>",
    "$JS.API.CONSUMER.UNPIN.>",
    "$JS.API.CONSUMER.LEADER.STEPDOWN.>",
    "$JS.API.META.>",
    "$JS.API.SERVER.>",
    "$JS.API.ACCOUNT.>",
    "$SYS.>",
];

/// The permissions of `role`; `boards` are a gateway's boards.
///
/// The subjects are those async-nats 0.51 requests for the calls our code makes:
/// - `get_stream`, `Stream::get_info`, the first half of `get_or_create_stream`:
///   `$JS.API.STREAM.INFO.<stream>`; creating: `$JS.API.STREAM.CREATE.<stream>`;
/// - `get_raw_message`, `get_last_raw_message_by_subject`, `raw_message_builder` (our
///   `next_message`, `last_board_seq`): `$JS.API.STREAM.MSG.GET.<stream>`; the `direct_get_*`
///   calls: `$JS.API.DIRECT.GET.<stream>` and `$JS.API.DIRECT.GET.<stream>.<subject>`;
/// - `create_consumer`: `$JS.API.CONSUMER.CREATE.<stream>` without a name (an ordered
///   consumer's first, named by the server), `$JS.API.CONSUMER.CREATE.<stream>.<name>[.<filter>]`
///   with one (the game service's partition consumers; an ordered consumer recreated after a gap or a server
///   restart, named `<first name>_<n>`); older clients used
///   `$JS.API.CONSUMER.DURABLE.CREATE.<stream>.<durable>`;
/// - pulling (`messages`, `fetch`): `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`, messages
///   delivered to the client's inbox; consumer info: `$JS.API.CONSUMER.INFO.<stream>.<consumer>`;
/// - acknowledging: the message's reply subject, `$JS.ACK.<stream>.<consumer>.…` (nats-server
///   2.9/2.10) or `$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.…` (the newer form);
///   flow control of push consumers: `$JS.FC.<stream>.<consumer>.…`;
/// - every request, and every JetStream publish's acknowledgement, is answered on the user's
///   own inbox, `_INBOX.<user>.…` ([`inbox_prefix`]), the only subjects it may subscribe to.
///
/// Not allowed to anyone but admin, on purpose: `$JS.API.CONSUMER.DELETE`. An ordered consumer
/// that recreates itself first deletes its old consumer and ignores a failure; refused, that
/// request waits for its timeout (the client's request timeout) before the consumer is
/// recreated, and the old consumer goes away by itself (ordered consumers are ephemeral, gone
/// 30 s after their last pull). That delay after a NATS restart is the price of nobody but the
/// admin being able to delete the game service's durable consumer.
pub fn permissions(role: &Role, boards: &[String]) -> Option<Permissions> {
    let api = |tail: &str| format!("$JS.API.{tail}");
    let mut deny: Vec<String> = ADMIN_ONLY_API.iter().map(|s| (*s).to_owned()).collect();
    let subscribe_allow = vec![format!("{}.>", inbox_prefix(&role.user_name()))];
    // Reading a stream: its info, single messages, consumers of any name on it.
    let read_stream = |s: &str| -> Vec<String> {
        vec![
            api(&format!("STREAM.INFO.{s}")),
            api(&format!("STREAM.MSG.GET.{s}")),
            api(&format!("DIRECT.GET.{s}")),
            api(&format!("DIRECT.GET.{s}.>")),
        ]
    };
    let follow_stream = |s: &str| -> Vec<String> {
        vec![
            api(&format!("CONSUMER.CREATE.{s}")),
            api(&format!("CONSUMER.CREATE.{s}.>")),
            api(&format!("CONSUMER.INFO.{s}.*")),
            api(&format!("CONSUMER.MSG.NEXT.{s}.*")),
            format!("$JS.ACK.{s}.>"),
            format!("$JS.ACK.*.*.{s}.>"),
            format!("$JS.FC.{s}.>"),
        ]
    };
    // Every observation stream: the unpartitioned one and those of the partitions the
    // configuration's mapping makes (a NATS wildcard stands for a whole token only, so they are
    // named one by one).
    let observation_streams: Vec<String> = std::iter::once(None)
        .chain((0..DEFAULT_PARTITIONS).map(Some))
        .map(ingest_stream)
        .collect();
    let publish_allow: Vec<String> = match role {
        Role::Admin => return None,
        Role::GameService => {
            let mut allow = vec![
                GAMES_SUBJECTS.to_owned(),
                DEADLETTER_SUBJECTS.to_owned(),
                ASSIGNMENTS_SUBJECTS.to_owned(),
                DELAYS_SUBJECTS.to_owned(),
                SESSIONS_SUBJECTS.to_owned(),
                api("INFO"),
            ];
            for s in observation_streams.iter().map(String::as_str).chain([
                GAMES_STREAM,
                DEADLETTER_STREAM,
                ASSIGNMENTS_STREAM,
                DELAYS_STREAM,
                SESSIONS_STREAM,
            ]) {
                allow.push(api(&format!("STREAM.CREATE.{s}")));
                allow.extend(read_stream(s));
            }
            // Finding the partitions' streams.
            allow.push(api("STREAM.NAMES"));
            // Observations: its durable consumers, one per partition's stream (named by
            // `ingest_consumer`; the only durable consumer of that stream), the earlier
            // version's single one, only read.
            for i in &observation_streams {
                allow.extend([
                    api(&format!("CONSUMER.CREATE.{i}.*")),
                    api(&format!("CONSUMER.CREATE.{i}.*.>")),
                    api(&format!("CONSUMER.DURABLE.CREATE.{i}.*")),
                    api(&format!("CONSUMER.INFO.{i}.*")),
                    api(&format!("CONSUMER.MSG.NEXT.{i}.*")),
                    format!("$JS.ACK.{i}.>"),
                    format!("$JS.ACK.*.*.{i}.>"),
                ]);
            }
            // The game logs: ordered consumers for catching up and for the gRPC log streams.
            // (The assignments are read by message gets.)
            allow.extend(follow_stream(GAMES_STREAM));
            deny.push("boardcast.board.>".to_owned());
            allow
        }
        Role::BroadcastService | Role::ArbiterService => {
            let mut allow = vec![api("INFO")];
            allow.extend(read_stream(GAMES_STREAM));
            allow.extend(follow_stream(GAMES_STREAM));
            if *role == Role::BroadcastService {
                // The released live updates, whole and as deltas, for other venue systems; the
                // delays in force.
                allow.extend(["boardcast.feed.>", "boardcast.delta.>"].map(str::to_owned));
                allow.extend(read_stream(DELAYS_STREAM));
                allow.extend(follow_stream(DELAYS_STREAM));
            } else {
                deny.extend(["boardcast.feed.>", "boardcast.delta.>"].map(str::to_owned));
            }
            deny.extend(
                [
                    "boardcast.game.>",
                    "boardcast.board.>",
                    "boardcast.deadletter.>",
                    "boardcast.assignments.>",
                    "boardcast.delays.>",
                    "boardcast.sessions.>",
                    "$JS.API.STREAM.CREATE.>",
                ]
                .map(str::to_owned),
            );
            allow
        }
        Role::Simulator | Role::Gateway(_) => {
            // What `last_board_seq` needs: the observation streams' names, and the last message
            // on a board's own subject, by a direct get naming that subject in the request's
            // subject (a message get names it in the payload, which permissions cannot see, so
            // it would read any board).
            let mut allow = vec![api("INFO"), api("STREAM.NAMES")];
            match role {
                Role::Gateway(_) => {
                    for board in boards {
                        let subject = observation_subject(board);
                        // Unpartitioned and partitioned, in whichever stream holds it.
                        allow.push(api(&format!("DIRECT.GET.*.{subject}")));
                        allow.push(api(&format!("DIRECT.GET.*.{subject}.*")));
                        // The plain subject only: the hall's account maps it to the board's
                        // partition, and nothing else of a partition is imported.
                        allow.push(subject);
                    }
                }
                _ => {
                    allow.push(INGEST_SUBJECTS.to_owned());
                    allow.push(PARTITIONED_INGEST_SUBJECTS.to_owned());
                    allow.push(api(&format!("DIRECT.GET.*.{INGEST_SUBJECTS}")));
                    allow.push(api(&format!("DIRECT.GET.*.{PARTITIONED_INGEST_SUBJECTS}")));
                }
            }
            deny.extend(
                [
                    "boardcast.game.>",
                    "boardcast.deadletter.>",
                    "boardcast.assignments.>",
                    "boardcast.sessions.>",
                    "$JS.API.STREAM.CREATE.>",
                    "$JS.API.CONSUMER.CREATE.>",
                    "$JS.API.CONSUMER.DURABLE.CREATE.>",
                ]
                .map(str::to_owned),
            );
            allow
        }
    };
    Some(Permissions {
        publish_allow,
        publish_deny: deny,
        subscribe_allow,
    })
}

/// The account of the streams, the game service and admin.
pub const HALL_ACCOUNT: &str = "HALL";

impl Role {
    /// The writer of the streams and the operator: in the hall's account. Every other program
    /// is in an account of its own that reaches the hall's only through imports: the board side
    /// (a gateway sits on a board PC in the playing hall), and the broadcast and arbiter
    /// services (one faces the internet, the other the arbiters' dashboards), which read what
    /// the game service wrote but must not be able to write or destroy it.
    pub fn in_hall_account(&self) -> bool {
        matches!(self, Role::Admin | Role::GameService)
    }

    /// What the role publishes for others in the hall (the broadcast service's live updates, for
    /// other venue systems): published in its own account and imported by the hall's as streams.
    fn offered_to_the_hall(&self) -> &'static [&'static str] {
        match self {
            Role::BroadcastService => &["boardcast.feed.>", "boardcast.delta.>"],
            _ => &[],
        }
    }

    /// What an account of its own imports from the hall: everything the role may publish but
    /// what it offers to the hall.
    fn imports_from_hall(&self, boards: &[String]) -> Vec<String> {
        permissions(self, boards)
            .map(|p| p.publish_allow)
            .unwrap_or_default()
            .into_iter()
            .filter(|subject| !self.offered_to_the_hall().contains(&subject.as_str()))
            .collect()
    }
}

/// What the hall's account offers the other accounts, each of which imports its own part (its
/// role's publish allow list): for the board side, publishing observations (acknowledged by
/// JetStream), reading back a board's last one, and the JetStream calls that needs; for the
/// services, reading and following the streams they read.
fn hall_exports() -> Vec<String> {
    let mut exports = vec![
        INGEST_SUBJECTS.to_owned(),
        PARTITIONED_INGEST_SUBJECTS.to_owned(),
        "$JS.API.INFO".to_owned(),
        "$JS.API.STREAM.NAMES".to_owned(),
    ];
    for subjects in [INGEST_SUBJECTS, PARTITIONED_INGEST_SUBJECTS] {
        exports.push(format!("$JS.API.DIRECT.GET.*.{subjects}"));
    }
    for service in [Role::BroadcastService, Role::ArbiterService] {
        for subject in service.imports_from_hall(&[]) {
            if !exports.contains(&subject) {
                exports.push(subject);
            }
        }
    }
    exports
}

fn render_hall_exports_and_imports() -> String {
    let exports: String = hall_exports()
        .iter()
        .map(|subject| {
            // A pull request is answered with many messages: the consumer's deliveries.
            if subject.starts_with("$JS.API.CONSUMER.MSG.NEXT.") {
                format!(
                    "  {{ service: {}, response_type: stream }}\n",
                    quote(subject)
                )
            } else {
                format!("  {{ service: {} }}\n", quote(subject))
            }
        })
        .collect();
    let imports: String = [Role::BroadcastService, Role::ArbiterService]
        .iter()
        .flat_map(|role| {
            role.offered_to_the_hall().iter().map(move |subject| {
                format!(
                    "  {{ stream: {{ account: {}, subject: {} }} }}\n",
                    quote(&role.user_name()),
                    quote(subject)
                )
            })
        })
        .collect();
    format!(
        "# What the other accounts may ask of the hall (each imports its own part).\n\
         exports = [\n{exports}]\n\
         # The broadcast service's live updates, for other venue systems.\n\
         imports = [\n{imports}]\n"
    )
}

/// The account of a role outside the hall's: its user; as imports from the hall exactly the
/// subjects it may publish there; as exports what it offers the hall.
fn render_own_account(role: &Role, boards: &[String], user_entry: &str) -> String {
    let imports: String = role
        .imports_from_hall(boards)
        .iter()
        .map(|subject| {
            format!(
                "      {{ service: {{ account: {HALL_ACCOUNT}, subject: {} }} }}\n",
                quote(subject)
            )
        })
        .collect();
    let exports: String = role
        .offered_to_the_hall()
        .iter()
        .map(|subject| format!("      {{ stream: {} }}\n", quote(subject)))
        .collect();
    let exports = if exports.is_empty() {
        String::new()
    } else {
        format!("    exports = [\n{exports}    ]\n")
    };
    format!(
        "  {} {{\n    users = [\n{}    ]\n    imports = [\n{imports}    ]\n{exports}  }}\n",
        quote(&role.user_name()),
        indented(user_entry, 2)
    )
}

/// `text` with every non-empty line indented by `spaces` more.
fn indented(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines()
        .map(|line| {
            if line.is_empty() {
                "\n".to_owned()
            } else {
                format!("{pad}{line}\n")
            }
        })
        .collect()
}

/// One entry of the configuration's `users` list.
fn render_user(role: &Role, boards: &[String], password_hash: &str) -> String {
    let mut out = format!(
        "    # {}: {}\n    {{\n      user: {}\n      password: {}\n",
        role.user_name(),
        role.summary(),
        quote(&role.user_name()),
        quote(password_hash)
    );
    if let Some(p) = permissions(role, boards) {
        let list = |items: &[String]| -> String {
            items
                .iter()
                .map(|s| format!("            {}\n", quote(s)))
                .collect()
        };
        out.push_str(&format!(
            "      permissions: {{\n        publish: {{\n          allow: [\n{}          ]\n          deny: [\n{}          ]\n        }}\n        subscribe: {{\n          allow: [\n{}          ]\n        }}\n      }}\n",
            list(&p.publish_allow),
            list(&p.publish_deny),
            list(&p.subscribe_allow),
        ));
    }
    out.push_str("    }\n");
    out
}

/// A double-quoted string of the nats-server configuration. Quoted, `$` is not a variable
/// reference (bcrypt hashes start with `$2a$`). Only validated names and our own subjects come
/// here, none with `"` or `\`.
fn quote(s: &str) -> String {
    format!("\"{s}\"")
}

/// Gateway names and board ids become user names and NATS subject tokens: ASCII letters,
/// digits, `-` and `_`, 1 to 64 characters (the game service's rule for board ids).
fn validate_name(what: &str, name: &str) -> anyhow::Result<()> {
    if name.is_empty() || name.len() > 64 {
        bail!("{what} must be 1 to 64 characters long, got {name:?}");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        bail!("{what} {name:?} contains {c:?}; use ASCII letters, digits, '-' and '_'");
    }
    Ok(())
}

fn new_password() -> String {
    use rand::{Rng as _, distr::Alphanumeric};
    // The thread-local generator is a CSPRNG seeded from the operating system.
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(PASSWORD_LEN)
        .map(char::from)
        .collect()
}

/// `url` (one server or a comma-separated list) with `user:password@` in each server.
pub fn with_credentials(url: &str, user: &str, password: &str) -> anyhow::Result<String> {
    let mut servers = Vec::new();
    for server in url.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (scheme, rest) = server.split_once("://").unwrap_or(("nats", server));
        // Drop credentials already there: the authority's user info ends at its last '@'.
        let authority_end = rest.find('/').unwrap_or(rest.len());
        let rest = match rest[..authority_end].rfind('@') {
            Some(at) => &rest[at + 1..],
            None => rest,
        };
        if rest.is_empty() {
            bail!("NATS URL {server:?} has no host");
        }
        servers.push(format!(
            "{scheme}://{}:{}@{rest}",
            percent_encode(user),
            percent_encode(password)
        ));
    }
    if servers.is_empty() {
        bail!("empty NATS URL");
    }
    Ok(servers.join(","))
}

/// Percent-encodes what is not unreserved in a URL's user info (our names and passwords never
/// need it; a hand-made password might).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// Writes a file only its owner can read, replacing `path` at once (no half-written file).
fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let file_name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?;
    let mut tmp_name = file_name.to_owned();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        // The mode above applies only to a new file; a leftover one may have another.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_from_user_names() {
        for role in [
            Role::Admin,
            Role::GameService,
            Role::BroadcastService,
            Role::ArbiterService,
            Role::Simulator,
            Role::Gateway("hall-a".into()),
        ] {
            assert_eq!(role.user_name().parse::<Role>().unwrap(), role);
        }
        assert_eq!(
            "gateway:hall-b".parse::<Role>().unwrap(),
            Role::Gateway("hall-b".into())
        );
        assert!("gateway:a.b".parse::<Role>().is_err());
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn gateway_boards_parse() {
        let g: GatewayBoards = "hall-a=hall-a-1, hall-a-2".parse().unwrap();
        assert_eq!(g, GatewayBoards::new("hall-a", ["hall-a-1", "hall-a-2"]));
        assert!("hall-a".parse::<GatewayBoards>().is_err());
    }

    #[test]
    fn credentials_go_into_every_server_of_the_url() {
        assert_eq!(
            with_credentials("nats://127.0.0.1:4222", "game-service", "pw").unwrap(),
            "nats://game-service:pw@127.0.0.1:4222"
        );
        assert_eq!(
            with_credentials("nats://old:x@a:4222, b:4222", "u", "p w").unwrap(),
            "nats://u:p%20w@a:4222,nats://u:p%20w@b:4222"
        );
        assert!(with_credentials(" , ", "u", "p").is_err());
    }

    #[test]
    fn gateways_may_publish_their_own_boards_only() {
        let p = permissions(
            &Role::Gateway("hall-a".into()),
            &["a1".to_owned(), "a2".to_owned()],
        )
        .unwrap();
        assert!(
            p.publish_allow
                .contains(&"boardcast.board.a1.obs".to_owned())
        );
        assert!(
            p.publish_allow
                .contains(&"boardcast.board.a2.obs".to_owned())
        );
        // Not a partition's subject: the hall's account maps the plain one to its partition.
        assert!(
            !p.publish_allow
                .iter()
                .any(|s| s.starts_with("boardcast.board.") && !s.ends_with(".obs"))
        );
        // No wildcard but a direct get's stream and its board's partition token: reads of its
        // own boards only.
        for subject in &p.publish_allow {
            let board_part = subject
                .strip_prefix("$JS.API.DIRECT.GET.*.")
                .map(|rest| rest.trim_end_matches(".*"))
                .unwrap_or(subject);
            assert!(
                !board_part.contains('*') && !board_part.ends_with('>'),
                "{subject}"
            );
        }
        assert!(p.publish_deny.contains(&"boardcast.game.>".to_owned()));
        assert!(permissions(&Role::Admin, &[]).is_none());
    }

    #[test]
    fn only_admin_may_destroy() {
        for role in [
            Role::GameService,
            Role::BroadcastService,
            Role::ArbiterService,
            Role::Simulator,
            Role::Gateway("g".into()),
        ] {
            let p = permissions(&role, &["b".to_owned()]).unwrap();
            for subject in ADMIN_ONLY_API {
                assert!(p.publish_deny.contains(&(*subject).to_owned()), "{role}");
            }
        }
    }

    #[test]
    fn generate_writes_private_files_and_update_keeps_passwords() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!(
            "boardcast-nats-access-{}-{}",
            std::process::id(),
            new_password()
        ));
        let gateways = [GatewayBoards::new("hall-a", ["a1"])];
        let access = NatsAccess::generate(&dir, &gateways, SimulatorUser::Omitted).unwrap();
        assert!(
            access.user(&Role::Simulator).is_none(),
            "no simulator unless asked for"
        );
        for file in [AUTH_CONFIG_FILE, CREDENTIALS_FILE] {
            let mode = std::fs::metadata(dir.join(file))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let config = std::fs::read_to_string(access.auth_config_path()).unwrap();
        let password = &access.user(&Role::GameService).unwrap().password;
        assert!(password.len() >= 24);
        assert!(
            !config.contains(password.as_str()),
            "only hashes in the config"
        );
        assert!(config.contains("\"$2a$"));

        let more = [
            GatewayBoards::new("hall-a", ["a1", "a2"]),
            GatewayBoards::new("hall-b", ["b1"]),
        ];
        let updated = NatsAccess::update(&dir, &more, SimulatorUser::Included).unwrap();
        assert!(updated.user(&Role::Simulator).is_some());
        assert_eq!(
            &updated.user(&Role::GameService).unwrap().password,
            password
        );
        assert_eq!(
            updated
                .user(&Role::Gateway("hall-a".into()))
                .unwrap()
                .boards,
            ["a1", "a2"]
        );
        let loaded = NatsAccess::load(&dir).unwrap();
        assert_eq!(loaded.users(), updated.users());
        let fresh = NatsAccess::generate(&dir, &more, SimulatorUser::Omitted).unwrap();
        assert_ne!(&fresh.user(&Role::GameService).unwrap().password, password);

        for bad in [
            GatewayBoards::new("x", ["bad.board"]),
            GatewayBoards::new("x", Vec::<String>::new()),
        ] {
            assert!(NatsAccess::generate(&dir, &[bad], SimulatorUser::Omitted).is_err());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The users and their permissions without the header and the password hashes.
    fn permissions_only(config: &str) -> Vec<String> {
        let body = &config[config.find("accounts {").unwrap_or(0)..];
        body.lines()
            .map(|line| match line.trim_start().strip_prefix("password: ") {
                Some(_) => "password: <hash>".to_owned(),
                None => line.to_owned(),
            })
            .collect()
    }

    #[test]
    fn the_example_in_deploy_is_what_nats_config_writes() {
        let dir = std::env::temp_dir().join(format!(
            "boardcast-nats-example-{}-{}",
            std::process::id(),
            new_password()
        ));
        let gateways = [GatewayBoards::new("hall-a", ["hall-a-1", "hall-a-2"])];
        let access = NatsAccess::generate(&dir, &gateways, SimulatorUser::Omitted).unwrap();
        let written = std::fs::read_to_string(access.auth_config_path()).unwrap();
        let example = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/nats/nats-auth.example.conf"
        ))
        .unwrap();
        assert_eq!(
            permissions_only(&example),
            permissions_only(&written),
            "deploy/nats/nats-auth.example.conf is out of date: regenerate it with \
             `boardcast nats-config --gateway hall-a=hall-a-1,hall-a-2`"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
