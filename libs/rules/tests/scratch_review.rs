use boardcast_rules::dead::{self, Budget};
use shakmaty::{CastlingMode, Chess, Color, Position, fen::Fen, uci::UciMove};

fn pos(fen: &str, mode: CastlingMode) -> Chess {
    let f: Fen = fen.parse().expect("fen");
    f.into_position(mode).expect("legal")
}

fn check_line(p: &Chess, line: &str, mode: CastlingMode) -> bool {
    let mut q = p.clone();
    for u in line.split_whitespace() {
        let m = u
            .parse::<UciMove>()
            .unwrap()
            .to_move(&q)
            .unwrap_or_else(|e| panic!("{u}: {e}"));
        q.play_unchecked(m);
        let _ = mode;
    }
    println!(
        "  after line: checkmate={} turn={:?}",
        q.is_checkmate(),
        q.turn()
    );
    q.is_checkmate()
}

#[test]
fn scratch() {
    let cases: &[(&str, CastlingMode, Color, &str)] = &[(
        "8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/8 w - - 0 1",
        CastlingMode::Standard,
        Color::White,
        "",
    )];
    for (fen, mode, side, line) in cases {
        let p = pos(fen, *mode);
        let r = dead::analyze(&p, *side, &Budget::default());
        println!("{fen} {side:?}: {r:?}");
        if !line.is_empty() {
            check_line(&p, line, *mode);
        }
    }
}
