//! `boardcast keys`: the game service's signing key — create one, show its public key and
//! fingerprint, or fetch the keys a running game service uses.

use std::path::PathBuf;

use anyhow::Context as _;
use boardcast_kit::signing::{DEFAULT_SIGNING_KEY_FILE, DEFAULT_TRUSTED_KEYS_FILE};
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct KeysArgs {
    #[command(subcommand)]
    command: KeysCommand,
}

#[derive(Subcommand, Debug)]
enum KeysCommand {
    /// Create a signing key for the game service (readable by its owner only) and add its
    /// public key to a trusted-keys file. An existing key is never overwritten: to rotate,
    /// create a new file, point the game service at it and keep the old public key trusted.
    New {
        /// Where the secret key goes.
        #[arg(long, default_value = DEFAULT_SIGNING_KEY_FILE)]
        key: PathBuf,
        /// The trusted-keys file the public key is added to (created if needed); copy it to the
        /// machines of the broadcast and arbiter services.
        #[arg(long, default_value = DEFAULT_TRUSTED_KEYS_FILE)]
        trusted_keys: PathBuf,
    },
    /// Print a signing key's public key and fingerprint (the secret stays in the file).
    Show {
        /// The signing key file (the game service's --signing-key).
        #[arg(long, default_value = DEFAULT_SIGNING_KEY_FILE)]
        key: PathBuf,
    },
    /// Ask a running game service which key it signs with and which it accepts.
    Fetch {
        /// The game service to ask.
        #[arg(
            long,
            env = "BOARDCAST_GAME_SERVICE",
            default_value = "http://127.0.0.1:50051"
        )]
        game_service: String,
    },
}

pub fn run(args: KeysArgs) -> anyhow::Result<()> {
    match args.command {
        KeysCommand::New { key, trusted_keys } => {
            let signer = boardcast_kit::signing::create_signing_key(&key, &trusted_keys)?;
            println!(
                "created {} (keep it secret; every game-service instance uses it)",
                key.display()
            );
            print_key(signer.public_key());
            println!("added to   {}", trusted_keys.display());
            Ok(())
        }
        KeysCommand::Show { key } => {
            let signer = boardcast_kit::signing::read_signing_key(&key)?;
            print_key(signer.public_key());
            Ok(())
        }
        KeysCommand::Fetch { game_service } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(async {
                let mut client = boardcast_kit::client::game_client(&game_service, None).await?;
                let keys = client
                    .get_signing_keys(boardcast_schema::game::v1::GetSigningKeysRequest {})
                    .await
                    .with_context(|| format!("asking {game_service} for its keys"))?
                    .into_inner();
                if let Some(signing) = keys.signing {
                    println!(
                        "signs with {} fingerprint {}",
                        signing.public_key, signing.fingerprint
                    );
                }
                for key in keys.trusted {
                    println!(
                        "accepts    {} fingerprint {}",
                        key.public_key, key.fingerprint
                    );
                }
                Ok(())
            })
        }
    }
}

fn print_key(key: &boardcast_game::signing::PublicKey) {
    println!("public key  {}", key.to_text());
    println!("key id      {}", key.key_id());
    println!("fingerprint {}", key.fingerprint());
}
