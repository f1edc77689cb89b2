//! How the commands that talk to the game service reach it: its address and the caller's API
//! token, the same flags for every such command.

use std::path::PathBuf;

use anyhow::Context as _;

#[derive(clap::Args, Debug)]
pub struct GameServiceArgs {
    /// Game service to ask.
    #[arg(
        long,
        env = "BOARDCAST_GAME_SERVICE",
        default_value = "http://127.0.0.1:50051"
    )]
    pub game_service: String,
    /// File holding the API token of a user with the role the command needs in the tournament
    /// (its description says which); without it, the token in BOARDCAST_TOKEN.
    #[arg(long, env = "BOARDCAST_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
}

impl GameServiceArgs {
    /// A client of the game service carrying the caller's token.
    pub async fn connect(&self) -> anyhow::Result<boardcast_kit::client::GameClient> {
        let token = boardcast_kit::client::token_from(self.token_file.as_deref())?;
        boardcast_kit::client::game_client(&self.game_service, token.as_deref())
            .await
            .with_context(|| format!("connecting to the game service at {}", self.game_service))
    }
}
