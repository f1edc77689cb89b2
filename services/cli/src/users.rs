//! `boardcast users`: who may use the system — users, their roles per tournament, passwords and
//! API tokens — kept in the users file the game service reads (again within seconds of a change).

use std::{io::BufRead as _, path::PathBuf};

use anyhow::{Context as _, bail};
use boardcast_access::{Directory, EVERY_TOURNAMENT, Grant, Role};
use boardcast_kit::secrets;
use clap::{Args, Subcommand};
use rand::RngCore as _;

#[derive(Args, Debug)]
#[command(
    long_about = "Manage who may use the system: users, their roles per tournament, passwords and \
API tokens.\n\nRoles (per tournament, or \"*\" for every tournament):\n  \
chief-arbiter  everything, including assigning arbiters to boards\n  \
arbiter        rulings on the boards assigned to them (--boards), and reads\n  \
observer       reads only\n  \
operator       setting up games and pairing rounds, and reads\n\n\
Passwords and tokens are stored only as argon2id hashes. The game service reads the file again \
within seconds of a change; every instance of it needs the same file and the same session key."
)]
pub struct UsersArgs {
    /// The users file.
    #[arg(long, env = "BOARDCAST_USERS", default_value = secrets::DEFAULT_USERS_FILE, global = true)]
    file: PathBuf,
    #[command(subcommand)]
    command: UsersCommand,
}

#[derive(Args, Debug, Clone)]
struct PasswordSource {
    /// Read the password from the first line of standard input.
    #[arg(long)]
    password_stdin: bool,
    /// Read the password from this environment variable.
    #[arg(long, value_name = "VAR")]
    password_env: Option<String>,
    /// Make up a strong password and print it once.
    #[arg(long)]
    generate_password: bool,
}

#[derive(Args, Debug, Clone)]
struct RoleArgs {
    /// The role: chief-arbiter, arbiter, observer or operator.
    #[arg(long)]
    role: Role,
    /// The tournament id, or "*" for every tournament.
    #[arg(long)]
    tournament: String,
    /// For an arbiter: the board numbers assigned, e.g. "1-10,15".
    #[arg(long, value_parser = parse_boards, default_value = "")]
    boards: BoardList,
}

#[derive(Subcommand, Debug)]
enum UsersCommand {
    /// Add a user, optionally with a role and a password.
    Add {
        /// Login name: a-z, 0-9, '-' and '_' (recorded as the actor of what the user does).
        user: String,
        /// How the user is shown, e.g. "IA Jane Smith".
        #[arg(long, default_value = "")]
        display_name: String,
        #[command(flatten)]
        password: PasswordSource,
        /// A first role (more with `grant`): chief-arbiter, arbiter, observer or operator.
        #[arg(long, requires = "tournament")]
        role: Option<Role>,
        /// The tournament of that role (its id), or "*" for every tournament.
        #[arg(long, requires = "role")]
        tournament: Option<String>,
        /// For an arbiter: the board numbers assigned, e.g. "1-10,15".
        #[arg(long, value_parser = parse_boards, default_value = "")]
        boards: BoardList,
    },
    /// Give a user a role in a tournament (replacing the same role there, boards included).
    Grant {
        /// The user's login name.
        user: String,
        #[command(flatten)]
        role: RoleArgs,
    },
    /// Assign boards to an arbiter in a tournament (gives the arbiter role there).
    Assign {
        /// The arbiter's login name.
        user: String,
        /// The tournament's id.
        #[arg(long)]
        tournament: String,
        /// Board numbers, e.g. "1-10,15".
        #[arg(long, value_parser = parse_boards)]
        boards: BoardList,
    },
    /// Take a user's roles in a tournament away (one role with --role).
    Revoke {
        /// The user's login name.
        user: String,
        /// The tournament's id, or "*" for the roles given for every tournament.
        #[arg(long)]
        tournament: String,
        /// Only this role; without it, every role of the user there.
        #[arg(long)]
        role: Option<Role>,
    },
    /// Set a user's password.
    Passwd {
        /// The user's login name.
        user: String,
        #[command(flatten)]
        password: PasswordSource,
    },
    /// Create an API token for a user (for the simulator, scripts, other services); printed once.
    Token {
        /// The user's login name.
        user: String,
        /// What it is for.
        #[arg(long, default_value = "")]
        label: String,
        #[command(flatten)]
        lifetime: TokenLifetime,
        /// Write the token to this file (mode 0600) instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Replace an API token by a new one with the same label (printed once); the old one keeps
    /// working for --overlap-hours, so that the program using it can be given the new one.
    RotateToken {
        /// The user's login name.
        user: String,
        /// The token's id (`boardcast users list`; the third part of the token).
        id: String,
        #[command(flatten)]
        lifetime: TokenLifetime,
        /// How long the old token keeps working, in hours (0: it stops now).
        #[arg(long, default_value_t = 24)]
        overlap_hours: u32,
        /// Write the new token to this file (mode 0600) instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// End every session of a user now ("log out everywhere"), on every instance of the game
    /// service within a second of it reading this file. A password change and `disable` do the
    /// same.
    EndSessions {
        /// The user's login name.
        user: String,
    },
    /// Revoke a user's API tokens (one with --id).
    RevokeTokens {
        /// The user's login name.
        user: String,
        #[arg(long)]
        id: Option<String>,
    },
    /// Refuse a user's password, tokens and sessions from now on.
    Disable {
        /// The user's login name.
        user: String,
    },
    /// Accept a disabled user again.
    Enable {
        /// The user's login name.
        user: String,
    },
    /// Remove a user.
    Remove {
        /// The user's login name.
        user: String,
    },
    /// List users, their roles and tokens (never secrets).
    List,
}

#[derive(Args, Debug, Clone)]
struct TokenLifetime {
    /// How many days the token works.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..=3660))]
    valid_days: u32,
}

impl TokenLifetime {
    fn expires_unix_ms(&self, now_unix_ms: i64) -> i64 {
        now_unix_ms.saturating_add(i64::from(self.valid_days) * 24 * 3600 * 1000)
    }
}

/// Writes a new token where it was asked for (a file, mode 0600, or standard output).
fn hand_out(token: String, user: &str, out: Option<PathBuf>) -> anyhow::Result<()> {
    match out {
        Some(path) => {
            secrets::write_private(&path, &(token + "\n"))?;
            println!("token for {user} written to {}", path.display());
        }
        None => println!("{token}"),
    }
    Ok(())
}

/// Board numbers as given on the command line.
#[derive(Clone, Debug, Default)]
pub struct BoardList(Vec<u32>);

fn parse_boards(text: &str) -> Result<BoardList, String> {
    let mut boards = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{s:?} is not a board number (1, 2, …)"))
        };
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (number(from)?, number(to)?);
                if from > to || to - from > 10_000 {
                    return Err(format!("{part:?} is not a range of boards"));
                }
                boards.extend(from..=to);
            }
            None => boards.push(number(part)?),
        }
    }
    boards.sort_unstable();
    boards.dedup();
    Ok(BoardList(boards))
}

fn read_password(source: &PasswordSource) -> anyhow::Result<Option<String>> {
    let chosen = [
        source.password_stdin,
        source.password_env.is_some(),
        source.generate_password,
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    if chosen > 1 {
        bail!("choose one of --password-stdin, --password-env and --generate-password");
    }
    if source.password_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        return Ok(Some(line.trim_end_matches(['\r', '\n']).to_owned()));
    }
    if let Some(var) = &source.password_env {
        return std::env::var(var)
            .map(Some)
            .with_context(|| format!("the environment variable {var} is not set"));
    }
    if source.generate_password {
        let password = generate_password();
        println!("password: {password}");
        return Ok(Some(password));
    }
    Ok(None)
}

/// A password of 20 characters from an alphabet without look-alikes (about 110 bits).
pub fn generate_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut bytes = [0u8; 20];
    rand::rng().fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

fn grant_of(role: Role, tournament: &str, boards: &BoardList) -> anyhow::Result<Grant> {
    if tournament.trim().is_empty() {
        bail!("--tournament is empty: give the tournament id, or \"*\" for every tournament");
    }
    if tournament.trim() != "*" {
        // A role in a tournament no game can belong to would never let anyone do anything.
        boardcast_game::validate_tournament_id(tournament.trim())
            .map_err(|e| anyhow::anyhow!("--tournament: {e}, or \"*\" for every tournament"))?;
    }
    if !boards.0.is_empty() && role != Role::Arbiter {
        bail!("--boards is for arbiters; a {role} may act on every board of the tournament");
    }
    Ok(Grant {
        tournament: tournament.trim().to_owned(),
        role,
        boards: boards.0.clone(),
    })
}

pub fn run(args: UsersArgs) -> anyhow::Result<()> {
    let existed = args.file.exists();
    let mut directory = secrets::read_users(&args.file)?;
    let mut rng = rand::rng();
    let now = boardcast_kit::now_unix_ms();
    let changed = match args.command {
        UsersCommand::Add {
            user,
            display_name,
            password,
            role,
            tournament,
            boards,
        } => {
            directory.add_user(&user, &display_name)?;
            if let (Some(role), Some(tournament)) = (role, tournament) {
                directory.grant(&user, grant_of(role, &tournament, &boards)?)?;
            }
            if let Some(password) = read_password(&password)? {
                directory.set_password(&user, &password, &mut rng, now)?;
            }
            println!("added {user}");
            true
        }
        UsersCommand::Grant { user, role } => {
            let grant = grant_of(role.role, &role.tournament, &role.boards)?;
            directory.grant(&user, grant)?;
            println!("{user} is {} in {}", role.role, role.tournament);
            true
        }
        UsersCommand::Assign {
            user,
            tournament,
            boards,
        } => {
            if boards.0.is_empty() {
                bail!("--boards is empty: give board numbers, e.g. 1-10");
            }
            directory.grant(&user, grant_of(Role::Arbiter, &tournament, &boards)?)?;
            println!("{user} is arbiter of boards {:?} in {tournament}", boards.0);
            true
        }
        UsersCommand::Revoke {
            user,
            tournament,
            role,
        } => {
            let taken = directory.revoke(&user, &tournament, role)?;
            println!("took {taken} role(s) of {user} in {tournament}");
            taken > 0
        }
        UsersCommand::Passwd { user, password } => {
            let password = read_password(&password)?.context(
                "give the password with --password-stdin, --password-env or --generate-password",
            )?;
            directory.set_password(&user, &password, &mut rng, now)?;
            println!("password of {user} set; the user's sessions opened before now are ended");
            true
        }
        UsersCommand::Token {
            user,
            label,
            lifetime,
            out,
        } => {
            let expires = lifetime.expires_unix_ms(now);
            let token = directory.new_token(&user, &label, expires, &mut rng, now)?;
            // The file first: a token that was shown but not kept would not work.
            secrets::write_users(&args.file, &directory)?;
            return hand_out(token, &user, out);
        }
        UsersCommand::RotateToken {
            user,
            id,
            lifetime,
            overlap_hours,
            out,
        } => {
            let old_until = now.saturating_add(i64::from(overlap_hours) * 3600 * 1000);
            let token = directory.rotate_token(
                &user,
                &id,
                lifetime.expires_unix_ms(now),
                old_until,
                &mut rng,
                now,
            )?;
            secrets::write_users(&args.file, &directory)?;
            eprintln!("token {id} of {user} works for {overlap_hours} more hour(s)");
            return hand_out(token, &user, out);
        }
        UsersCommand::EndSessions { user } => {
            directory.end_sessions(&user, now)?;
            println!("every session of {user} opened before now is ended");
            true
        }
        UsersCommand::RevokeTokens { user, id } => {
            let taken = directory.revoke_tokens(&user, id.as_deref())?;
            println!("revoked {taken} token(s) of {user}");
            taken > 0
        }
        UsersCommand::Disable { user } => {
            directory.set_disabled(&user, true, now)?;
            println!("{user} disabled; the user's sessions are ended");
            true
        }
        UsersCommand::Enable { user } => {
            directory.set_disabled(&user, false, now)?;
            println!("{user} enabled");
            true
        }
        UsersCommand::Remove { user } => {
            directory.remove_user(&user)?;
            println!("removed {user}");
            true
        }
        UsersCommand::List => {
            if !existed {
                anyhow::bail!(
                    "there is no users file {} (--file, or BOARDCAST_USERS)",
                    args.file.display()
                );
            }
            print_users(&directory, now);
            false
        }
    };
    if changed {
        secrets::write_users(&args.file, &directory)?;
        if !existed {
            // Run from another directory, the default path makes a file the services never
            // read: name it.
            eprintln!("created the users file {}", args.file.display());
        }
    }
    Ok(())
}

fn print_users(directory: &Directory, now_unix_ms: i64) {
    if directory.users.is_empty() {
        println!("no users yet: add one with `boardcast users add NAME --role … --tournament …`");
        return;
    }
    for (name, record) in &directory.users {
        let roles: Vec<String> = record
            .grants
            .iter()
            .map(|g| {
                let place = if g.tournament == EVERY_TOURNAMENT {
                    "every tournament".to_owned()
                } else {
                    g.tournament.clone()
                };
                if g.boards.is_empty() {
                    format!("{} in {place}", g.role)
                } else {
                    format!("{} in {place} (boards {:?})", g.role, g.boards)
                }
            })
            .collect();
        println!(
            "{name} ({}){}{}: {}; {} token(s)",
            record.display_name,
            if record.password_hash.is_some() {
                ""
            } else {
                ", no password"
            },
            if record.disabled { ", DISABLED" } else { "" },
            if roles.is_empty() {
                "no roles".to_owned()
            } else {
                roles.join(", ")
            },
            record.tokens.len()
        );
        for token in &record.tokens {
            let expiry = match token.expires_unix_ms {
                None => "never expires: rotate it (`rotate-token`)".to_owned(),
                Some(at) if at <= now_unix_ms => "EXPIRED".to_owned(),
                Some(at) => format!(
                    "expires in {} day(s)",
                    (at - now_unix_ms).div_euclid(24 * 3600 * 1000)
                ),
            };
            println!("  token {} ({}): {expiry}", token.id, token.label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_lists_read_ranges_and_refuse_nonsense() {
        assert_eq!(parse_boards("1-3,7, 2").map(|b| b.0), Ok(vec![1, 2, 3, 7]));
        assert_eq!(parse_boards("").map(|b| b.0), Ok(vec![]));
        assert!(parse_boards("0").is_err());
        assert!(parse_boards("5-2").is_err());
        assert!(parse_boards("x").is_err());
    }

    #[test]
    fn generated_passwords_are_long_enough() {
        let p = generate_password();
        assert_eq!(p.len(), 20);
        assert_ne!(p, generate_password());
    }
}
