#![allow(dead_code)]

use boardcast_inference::{Config, Event, Inference, Input, Orientation, Output};
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{Board, CastlingMode, Chess, Color, Move, Piece, Position, Square};

/// Drives an engine with numbered, timed observations.
pub struct Script {
    pub engine: Inference,
    pub seq: u64,
    pub time_ms: i64,
    /// The board as the sensors see it (sensor coordinates).
    pub sensed: Board,
    pub sensor_orientation: Orientation,
}

impl Script {
    pub fn new(start: Chess) -> Script {
        let sensed = start.board().clone();
        Script {
            engine: Inference::new(start),
            seq: 0,
            time_ms: 0,
            sensed,
            sensor_orientation: Orientation::Normal,
        }
    }

    pub fn with_config(config: Config) -> Script {
        let mut script = Script::new(Chess::default());
        script.engine = Inference::with_config(Chess::default(), config);
        script
    }

    pub fn from_fen(fen: &str) -> Script {
        let pos: Chess = fen
            .parse::<Fen>()
            .expect("valid FEN")
            .into_position(CastlingMode::Standard)
            .expect("legal position");
        Script::new(pos)
    }

    /// Starts from the standard position after `sans`, all confirmed.
    pub fn after(sans: &[&str]) -> Script {
        let moves = play(&Chess::default(), sans);
        let mut script = Script::new(Chess::default());
        script
            .engine
            .sync(Chess::default(), &moves)
            .expect("legal moves");
        script.sensed = script.engine.position().board().clone();
        script
    }

    fn input(&mut self, event: Event) -> Vec<Output> {
        self.seq += 1;
        self.time_ms += 300;
        self.engine.observe(Input {
            seq: self.seq,
            time_ms: self.time_ms,
            event,
        })
    }

    fn sensor_square(&self, square: Square) -> Square {
        match self.sensor_orientation {
            Orientation::Normal => square,
            Orientation::Rotated => square.rotate_180(),
        }
    }

    /// Lifts the piece from a (game) square.
    pub fn lift(&mut self, square: Square) -> Vec<Output> {
        let square = self.sensor_square(square);
        self.sensed.discard_piece_at(square);
        self.input(Event::Lifted { square })
    }

    /// Puts a piece on a (game) square.
    pub fn put(&mut self, square: Square, piece: Piece) -> Vec<Output> {
        let square = self.sensor_square(square);
        self.sensed.set_piece_at(square, piece);
        self.input(Event::Placed { square, piece })
    }

    /// Moves the piece on `from` to `to` (lift, then place).
    pub fn slide(&mut self, from: Square, to: Square) -> Vec<Output> {
        let piece = self
            .sensed
            .piece_at(self.sensor_square(from))
            .expect("a piece to move");
        let mut out = self.lift(from);
        out.extend(self.put(to, piece));
        out
    }

    /// Reports a whole board (in game coordinates).
    pub fn placement(&mut self, board: Board) -> Vec<Output> {
        let mut sensed = board;
        if self.sensor_orientation == Orientation::Rotated {
            sensed.rotate_180();
        }
        self.sensed = sensed.clone();
        self.input(Event::Placement(sensed))
    }

    pub fn press(&mut self, side: Color) -> Vec<Output> {
        self.input(Event::ClockPressed { side })
    }

    pub fn tick(&mut self, after_ms: i64) -> Vec<Output> {
        self.time_ms += after_ms;
        self.input(Event::Tick)
    }

    pub fn game(&self) -> Vec<String> {
        self.engine.moves().into_iter().map(|m| m.san).collect()
    }
}

pub fn play(start: &Chess, sans: &[&str]) -> Vec<Move> {
    let mut pos = start.clone();
    sans.iter()
        .map(|san| {
            let m = san
                .parse::<San>()
                .expect("SAN")
                .to_move(&pos)
                .expect("legal");
            pos.play_unchecked(m);
            m
        })
        .collect()
}

pub fn board_after(start: &Chess, sans: &[&str]) -> Board {
    let mut pos = start.clone();
    for m in play(start, sans) {
        pos.play_unchecked(m);
    }
    pos.board().clone()
}

/// The SANs of moves reported provisional, revised (the new move) or reconstructed.
pub fn provisional_sans(out: &[Output]) -> Vec<String> {
    out.iter()
        .flat_map(|o| match o {
            Output::MoveProvisional { mv, .. } => vec![mv.san.clone()],
            Output::ProvisionalRevised { to_move, .. } => vec![to_move.san.clone()],
            Output::Reconstructed { moves, .. } => moves.iter().map(|m| m.san.clone()).collect(),
            _ => vec![],
        })
        .collect()
}

pub fn confirmed_sans(out: &[Output]) -> Vec<String> {
    out.iter()
        .filter_map(|o| match o {
            Output::MoveConfirmed { mv, .. } => Some(mv.san.clone()),
            _ => None,
        })
        .collect()
}

pub fn is_move_output(o: &Output) -> bool {
    matches!(
        o,
        Output::MoveProvisional { .. }
            | Output::ProvisionalRevised { .. }
            | Output::MoveConfirmed { .. }
            | Output::Reconstructed { .. }
            | Output::Takeback { .. }
    )
}
