//! `boardcast simulate --dgt-out`: each board's game written as the bytes a DGT board and clock
//! would send, for `boardcast gateway replay-dgt`, instead of published observations.

use std::path::PathBuf;

use anyhow::Context as _;
use boardcast_game::device::ClockDisplay;

use super::{BoardPlan, IncidentArgs};

/// Which disturbances the DGT byte streams of `--dgt-out` carry.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DgtDisturbances {
    #[default]
    All,
    None,
}

/// Writing each board's game as the raw bytes of a DGT board and clock instead of publishing.
#[derive(clap::Args, Debug, Clone)]
pub struct DgtOutArgs {
    /// Write each board's DGT byte stream to DIR/<board_id>.dgt (a capture `boardcast gateway
    /// replay-dgt` reads), its timing to DIR/<board_id>.timing.tsv and what happened to
    /// DIR/<board_id>.record.txt, instead of publishing observations.
    #[arg(long, value_name = "DIR")]
    pub dgt_out: Option<PathBuf>,
    /// Seed of the simulated players' behaviour (board N uses seed + N - 1).
    #[arg(long, default_value_t = 1)]
    pub dgt_seed: u64,
    /// Human and sensor disturbances in the DGT byte streams.
    #[arg(long, value_enum, default_value = "all")]
    pub dgt_disturbances: DgtDisturbances,
    // Here rather than in `SimulateArgs`, which the demo builds field by field.
    #[command(flatten)]
    pub incidents: IncidentArgs,
}

impl Default for DgtOutArgs {
    fn default() -> Self {
        DgtOutArgs {
            dgt_out: None,
            dgt_seed: 1,
            dgt_disturbances: DgtDisturbances::All,
            incidents: IncidentArgs::default(),
        }
    }
}

/// Writes every board's game as a DGT capture with its timing sidecar and record.
pub fn write_dgt_streams(plans: &[BoardPlan], args: &DgtOutArgs) -> anyhow::Result<()> {
    use boardcast_sim::dgt::{DgtSimOptions, Disturbances, simulate};
    let Some(dir) = &args.dgt_out else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (i, plan) in plans.iter().enumerate() {
        let options = DgtSimOptions {
            seed: args.dgt_seed.wrapping_add(i as u64),
            disturbances: match args.dgt_disturbances {
                DgtDisturbances::All => Disturbances::all(),
                DgtDisturbances::None => Disturbances::none(),
            },
            initial_clock_ms: plan.options.initial_clock_ms,
            default_think_ms: plan.options.default_think_ms,
            serial_number: format!("{:05}", 10_000 + i % 90_000),
            white_on_left: plan.options.clock.white_display != ClockDisplay::Right,
            clock_turned_before_ply: plan.options.clock.turned_before_ply,
            ..DgtSimOptions::default()
        };
        let sim = simulate(&plan.game, &options)
            .with_context(|| format!("simulating board {}", plan.board_id))?;
        let write = |name: String, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
        };
        write(format!("{}.dgt", plan.board_id), &sim.capture_bytes())?;
        write(
            format!("{}.timing.tsv", plan.board_id),
            sim.timing_sidecar().as_bytes(),
        )?;
        write(
            format!("{}.record.txt", plan.board_id),
            sim.record.to_string().as_bytes(),
        )?;
    }
    Ok(())
}
