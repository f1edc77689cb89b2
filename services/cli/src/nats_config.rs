//! `boardcast nats-config`: writes the NATS users and permissions of a deployment (the server's
//! `authorization` block and the services' credentials), or prints one user's NATS URL.

use std::path::PathBuf;

use anyhow::Context as _;
use boardcast_kit::nats_access::{
    AUTH_CONFIG_FILE, CREDENTIALS_FILE, GatewayBoards, NatsAccess, Role, SimulatorUser, permissions,
};

#[derive(clap::Args, Debug)]
pub struct NatsConfigArgs {
    /// Directory for `nats-auth.conf` (the server's users, bcrypt hashes) and
    /// `credentials.json` (the passwords the services use). Both are written mode 0600.
    #[arg(long, default_value = "var/nats-access")]
    pub dir: PathBuf,
    /// A gateway and the boards it may publish for: `NAME=BOARD,BOARD,…` (repeat for each
    /// gateway). Its NATS user is `gateway-NAME`. List every gateway each time: one left out
    /// loses its user.
    #[arg(long = "gateway", value_name = "NAME=BOARDS")]
    pub gateways: Vec<GatewayBoards>,
    /// Also a `simulator` user, for `boardcast simulate` in a test hall or a demonstration. It
    /// may publish and read back any board's observations, so it could put moves on any board:
    /// never in a real event's configuration.
    #[arg(long)]
    pub simulator: bool,
    /// New passwords for every user. Without it, users already in `--dir` keep theirs, so
    /// adding a gateway or a board needs no new URLs for the running services.
    #[arg(long)]
    pub rotate: bool,
    /// Print ROLE's NATS URL (with its user name and password) and write nothing. ROLE is
    /// admin, game-service, broadcast-service, arbiter-service, simulator or gateway-NAME.
    #[arg(long, value_name = "ROLE")]
    pub print_url: Option<Role>,
    /// The NATS server(s) the URLs point to (comma-separated for a cluster).
    #[arg(
        long,
        default_value = "nats://127.0.0.1:4222",
        env = "BOARDCAST_NATS_URL"
    )]
    pub nats: String,
}

pub async fn run(args: NatsConfigArgs) -> anyhow::Result<()> {
    if let Some(role) = &args.print_url {
        let access = NatsAccess::load(&args.dir)?;
        println!("{}", access.url_for(role, &args.nats)?);
        return Ok(());
    }
    let simulator = if args.simulator {
        SimulatorUser::Included
    } else {
        SimulatorUser::Omitted
    };
    let access = if args.rotate {
        NatsAccess::generate(&args.dir, &args.gateways, simulator)
    } else {
        NatsAccess::update(&args.dir, &args.gateways, simulator)
    }
    .with_context(|| format!("writing the NATS users into {}", args.dir.display()))?;

    let dir = args.dir.display();
    println!("NATS users written to {dir}/{AUTH_CONFIG_FILE} (passwords as bcrypt hashes)");
    println!("and their passwords to {dir}/{CREDENTIALS_FILE}; keep both private.");
    println!();
    for user in access.users() {
        let role = user.role()?;
        let may = match &role {
            Role::Admin => "everything (delete, purge and reconfigure streams)".to_owned(),
            Role::GameService => {
                "write the game logs and dead letters, create the streams".to_owned()
            }
            Role::BroadcastService => {
                "read the game logs and delays, publish the live updates".to_owned()
            }
            Role::ArbiterService => "read the game logs".to_owned(),
            Role::Simulator => {
                "publish and read back observations of any board (test halls only)".to_owned()
            }
            Role::Gateway(_) => format!("publish observations of {}", user.boards.join(", ")),
        };
        let rules = permissions(&role, &user.boards)
            .map(|p| {
                let account = if role.in_hall_account() {
                    ""
                } else {
                    ", in an account of its own"
                };
                format!(
                    " ({} publish subjects allowed{account})",
                    p.publish_allow.len()
                )
            })
            .unwrap_or_default();
        println!("  {:<22} {may}{rules}", user.user);
    }
    println!();
    println!("Start NATS with them:");
    println!("  nats-server -c {dir}/{AUTH_CONFIG_FILE} -js -sd /var/lib/boardcast/nats");
    println!("or put `include \"{AUTH_CONFIG_FILE}\"` in the server's configuration (a path");
    println!("relative to that file; see deploy/nats/secure.conf).");
    println!();
    println!("Each program connects with its own user's URL, e.g.");
    println!(
        "  boardcast-game-service --nats \"$(boardcast nats-config --dir {dir} --print-url game-service --nats {})\"",
        args.nats
    );
    Ok(())
}
