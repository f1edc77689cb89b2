//! `boardcast lichess-text`: the players or teams of a Tournament Report File as lichess's
//! broadcast settings take them, to paste there.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Args, Debug)]
pub struct LichessTextArgs {
    /// Which setting: `players` ("replace player names, ratings and titles": a line per player,
    /// `Name / FIDE id / title`, or `Name /  / title / rating` without a FIDE id) or `teams` (a
    /// line per player, `Team; FIDE id`).
    what: What,
    /// The Tournament Report File (TRF16 or TRF-26) of the tournament.
    #[arg(long)]
    trf: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum What {
    Players,
    Teams,
}

pub fn run(args: LichessTextArgs) -> anyhow::Result<()> {
    let file = crate::pair::read_trf(&args.trf)?;
    let text = match args.what {
        What::Players => boardcast_trf::lichess_players(&file),
        What::Teams if file.teams.is_empty() => {
            anyhow::bail!(
                "{} holds no teams (no 310 or 013 records)",
                args.trf.display()
            )
        }
        What::Teams => boardcast_trf::lichess_teams(&file),
    };
    print!("{text}");
    Ok(())
}
