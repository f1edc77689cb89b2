//! `boardcast delay`: sets the broadcast delay of a tournament or round through the game
//! service, as an operator or chief arbiter; every broadcast service applies it within moments.

use boardcast_schema::game::v1::{ListGamesRequest, SetBroadcastDelayRequest};
use clap::Args;

#[derive(Args, Debug)]
pub struct DelayArgs {
    /// The tournament.
    #[arg(long)]
    tournament: String,
    /// One round only; without it, every round of the tournament that has no delay of its own.
    #[arg(long)]
    round: Option<u32>,
    /// The delay: MINUTES (0 to 60), or SECONDS followed by s (e.g. 90s).
    delay: String,
    #[command(flatten)]
    game_service: crate::game_service::GameServiceArgs,
}

pub async fn run(args: DelayArgs) -> anyhow::Result<()> {
    let setting = match args.round {
        Some(round) => format!("{}/{round}={}", args.tournament, args.delay),
        None => format!("{}={}", args.tournament, args.delay),
    };
    // The same reading of the delay as the broadcast service's `--delay`.
    let parsed = boardcast_feeds::Delays::parse([setting.as_str()]).map_err(|e| match e {
        // Said in this command's terms, not the broadcast service's TOURNAMENT=MINUTES.
        boardcast_feeds::DelayError::Unreadable(_) => anyhow::anyhow!(
            "the delay {:?} is not MINUTES, or SECONDS followed by s (e.g. 15, or 90s)",
            args.delay
        ),
        other => other.into(),
    })?;
    let delay_ms = parsed.delay_ms(&boardcast_feeds::RoundKey {
        tournament_id: args.tournament.clone(),
        round: args.round.unwrap_or(0),
    });
    let mut client = args.game_service.connect().await?;
    let recorded = client
        .set_broadcast_delay(SetBroadcastDelayRequest {
            tournament_id: args.tournament.clone(),
            round: args.round.unwrap_or(0),
            delay_ms,
            request_id: boardcast_kit::client::new_request_id(),
        })
        .await
        .map_err(|status| anyhow::anyhow!("the game service refused: {}", status.message()))?
        .into_inner();
    let what = match recorded.round {
        0 => format!("every round of {}", recorded.tournament_id),
        round => format!("round {round} of {}", recorded.tournament_id),
    };
    println!(
        "broadcast delay for {what}: {} s (set by {})",
        recorded.delay_ms / 1000,
        recorded.set_by
    );
    // Set before a round is paired, a delay rightly names a tournament without games yet; a
    // misspelt id does too, and the real tournament stays live: say so.
    let games = client
        .list_games(ListGamesRequest {
            tournament_id: args.tournament.clone(),
            round: 0,
        })
        .await
        .map(|r| r.into_inner().games.len());
    if matches!(games, Ok(0)) {
        eprintln!(
            "note: the game service has no game of tournament {:?} yet; if its rounds are set \
             up already, check the id (`boardcast results`, the dashboard and the feeds' URLs \
             show it)",
            args.tournament
        );
    }
    Ok(())
}
