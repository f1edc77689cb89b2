//! SAN, national, ICCF numeric and spoken notation: examples and round trips over the London
//! Chess Classic 2016 and random legal games.

use boardcast_rules::{
    notation::{
        Language, NotationError, announce, read_iccf, read_national, read_san, write_iccf,
        write_national, write_san,
    },
    pgn,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shakmaty::{CastlingMode, Chess, Move, Position, fen::Fen, uci::UciMove};

fn position(fen: &str) -> Chess {
    let parsed: Fen = fen.parse().expect("FEN syntax");
    parsed
        .into_position(CastlingMode::Standard)
        .expect("legal position")
}

fn uci(pos: &Chess, text: &str) -> Move {
    text.parse::<UciMove>()
        .expect("UCI syntax")
        .to_move(pos)
        .expect("legal")
}

fn london() -> Vec<pgn::PgnGame> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    let text = std::fs::read_to_string(path).expect("the London file is in data/");
    pgn::read_games(&text).expect("the London file reads")
}

/// Every notation of `m` reads back to `m`.
fn assert_round_trips(pos: &Chess, m: Move) {
    let san = write_san(pos, m);
    assert_eq!(read_san(pos, &san), Ok(m), "SAN {san}");
    let iccf = write_iccf(m);
    assert_eq!(read_iccf(pos, &iccf), Ok(m), "ICCF {iccf} for {san}");
    for language in Language::ALL {
        let written = write_national(pos, m, language);
        assert_eq!(
            read_national(pos, &written, language),
            Ok(m),
            "{language} {written} for {san}"
        );
    }
    assert!(!announce(pos, m).is_empty());
}

#[derive(Default)]
struct Coverage {
    moves: usize,
    castles: usize,
    en_passant: usize,
    promotions: usize,
    under_promotions: usize,
}

impl Coverage {
    fn count(&mut self, m: Move) {
        self.moves += 1;
        self.castles += usize::from(m.is_castle());
        self.en_passant += usize::from(m.is_en_passant());
        self.promotions += usize::from(m.is_promotion());
        self.under_promotions +=
            usize::from(m.promotion().is_some_and(|r| r != shakmaty::Role::Queen));
    }
}

#[test]
fn london_games_round_trip_in_every_notation() {
    let mut coverage = Coverage::default();
    for game in london() {
        let mut pos = game.start_position().expect("start");
        for mv in &game.moves {
            let m = read_san(&pos, &mv.san).expect("legal SAN");
            assert_round_trips(&pos, m);
            coverage.count(m);
            pos.play_unchecked(m);
        }
    }
    assert!(
        coverage.moves > 3000 && coverage.castles > 50,
        "{}",
        coverage.moves
    );
}

#[test]
fn random_games_round_trip_in_every_notation() {
    let mut rng = ChaCha8Rng::seed_from_u64(960);
    let mut coverage = Coverage::default();
    for _ in 0..150 {
        let mut pos = Chess::default();
        for _ in 0..250 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            // Prefer the rare kinds so that every game exercises them.
            let special: Vec<Move> = moves
                .iter()
                .copied()
                .filter(|m| m.is_promotion() || m.is_en_passant() || m.is_castle())
                .collect();
            let m = if !special.is_empty() && rng.random_bool(0.7) {
                special[rng.random_range(0..special.len())]
            } else {
                moves[rng.random_range(0..moves.len())]
            };
            assert_round_trips(&pos, m);
            coverage.count(m);
            pos.play_unchecked(m);
        }
    }
    assert!(coverage.castles > 0, "castling covered");
    assert!(coverage.en_passant > 0, "en passant covered");
    assert!(coverage.under_promotions > 0, "under-promotion covered");
    assert!(
        coverage.promotions > coverage.under_promotions,
        "queening covered"
    );
}

#[test]
fn iccf_examples_from_the_laws() {
    let start = Chess::default();
    assert_eq!(read_iccf(&start, "5254"), Ok(uci(&start, "e2e4")));
    assert_eq!(write_iccf(uci(&start, "g1f3")), "7163");

    let castles = position("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
    assert_eq!(read_iccf(&castles, "5171"), Ok(uci(&castles, "e1g1")));
    assert_eq!(read_iccf(&castles, "5131"), Ok(uci(&castles, "e1c1")));
    assert_eq!(write_iccf(uci(&castles, "e1g1")), "5171");
    assert_eq!(write_iccf(uci(&castles, "e1c1")), "5131");
    let black = position("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1");
    assert_eq!(read_iccf(&black, "5878"), Ok(uci(&black, "e8g8")));
    assert_eq!(read_iccf(&black, "5838"), Ok(uci(&black, "e8c8")));

    let promotion = position("8/5P2/8/8/8/2k5/8/4K3 w - - 0 1");
    assert_eq!(read_iccf(&promotion, "67682"), Ok(uci(&promotion, "f7f8r")));
    assert_eq!(read_iccf(&promotion, "67681"), Ok(uci(&promotion, "f7f8q")));
    assert_eq!(write_iccf(uci(&promotion, "f7f8n")), "67684");
    assert_eq!(
        read_iccf(&promotion, "6768"),
        Err(NotationError::MissingPromotion("6768".to_owned()))
    );
}

#[test]
fn iccf_errors_are_clear() {
    let start = Chess::default();
    for bad in ["", "525", "525455", "e2e4", "5294", "5250", "52545"] {
        assert_eq!(
            read_iccf(&start, bad),
            Err(NotationError::IccfSyntax(bad.to_owned())),
            "{bad}"
        );
    }
    assert_eq!(
        read_iccf(&start, "5255"),
        Err(NotationError::IllegalIccf("5255".to_owned()))
    );
    // A promotion digit on a move that does not promote.
    assert_eq!(
        read_iccf(&start, "52541"),
        Err(NotationError::IllegalIccf("52541".to_owned()))
    );
    let message = read_iccf(&start, "x").expect_err("syntax").to_string();
    assert!(message.contains("four digits"), "{message}");
}

#[test]
fn national_piece_letters() {
    let start = Chess::default();
    let knight = uci(&start, "g1f3");
    let written: Vec<String> = Language::ALL
        .iter()
        .map(|l| write_national(&start, knight, *l))
        .collect();
    assert_eq!(written, ["Nf3", "Jf3", "Sf3", "Sf3", "Cf3"]);

    let pos = position("3q2k1/2P5/8/8/8/8/8/R3K2R w KQ - 0 1");
    let promote = uci(&pos, "c7d8q");
    assert_eq!(write_san(&pos, promote), "cxd8=Q+");
    assert_eq!(write_national(&pos, promote, Language::English), "cxd8Q+");
    assert_eq!(write_national(&pos, promote, Language::Czech), "cxd8D+");
    assert_eq!(write_national(&pos, promote, Language::Polish), "cxd8H+");
    assert_eq!(
        write_national(&pos, uci(&pos, "e1g1"), Language::German),
        "0-0"
    );
    assert_eq!(write_san(&pos, uci(&pos, "e1g1")), "O-O");
    // The queen covers d1: no long castling here.
    assert!(read_national(&pos, "0-0-0", Language::English).is_err());

    assert_eq!(read_national(&pos, "cxd8D", Language::German), Ok(promote));
    assert_eq!(read_national(&pos, "cxd8=D+", Language::Czech), Ok(promote));
    assert_eq!(
        read_national(&pos, "0-0", Language::Polish),
        Ok(uci(&pos, "e1g1"))
    );
    assert_eq!(
        read_national(&pos, "Rf1", Language::French),
        Ok(uci(&pos, "e1f1"))
    );

    let back_rank = position("6k1/5ppp/8/8/8/8/8/R3K3 w Q - 0 1");
    let mate = uci(&back_rank, "a1a8");
    assert_eq!(write_national(&back_rank, mate, Language::French), "Ta8#");
    assert_eq!(
        read_national(&back_rank, "Wa8++", Language::Polish),
        Ok(mate)
    );
    let long = uci(&back_rank, "e1c1");
    assert_eq!(write_san(&back_rank, long), "O-O-O");
    assert_eq!(write_national(&back_rank, long, Language::French), "0-0-0");
    assert!(matches!(
        read_national(&pos, "Qa8", Language::Czech),
        Err(NotationError::SanSyntax(_))
    ));
    assert!(matches!(
        read_san(&pos, "Nf3"),
        Err(NotationError::IllegalSan { .. })
    ));

    let ep = position("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2");
    assert_eq!(
        read_national(&ep, "exd6 e.p.", Language::German),
        Ok(uci(&ep, "e5d6"))
    );
}

#[test]
fn languages_parse_and_display() {
    for language in Language::ALL {
        assert_eq!(language.to_string().parse::<Language>(), Ok(language));
    }
    assert_eq!("Czech".parse::<Language>(), Ok(Language::Czech));
    assert_eq!("CZ".parse::<Language>(), Ok(Language::Czech));
    assert_eq!(Language::French.to_string(), "fr");
    assert_eq!(
        "klingon".parse::<Language>(),
        Err(NotationError::UnknownLanguage("klingon".to_owned()))
    );
}

#[test]
fn spoken_announcements() {
    let start = Chess::default();
    assert_eq!(
        announce(&start, uci(&start, "g1f3")),
        "Springer Gustav eins Felix drei"
    );
    assert_eq!(
        announce(&start, uci(&start, "e2e4")),
        "Bauer Eva zwei Eva vier"
    );

    let castles = position("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
    assert_eq!(announce(&castles, uci(&castles, "e1g1")), "Kurze Rochade");
    assert_eq!(announce(&castles, uci(&castles, "e1c1")), "Lange Rochade");
    assert_eq!(
        announce(&castles, uci(&castles, "a1a8")),
        "Turm Anna eins schlaegt Anna acht Schach"
    );

    let ep = position("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2");
    assert_eq!(
        announce(&ep, uci(&ep, "e5d6")),
        "Bauer Eva fuenf schlaegt David sechs en passant"
    );

    let promotion = position("7k/P7/8/8/8/8/8/4K3 w - - 0 1");
    assert_eq!(
        announce(&promotion, uci(&promotion, "a7a8q")),
        "Bauer Anna sieben Anna acht wird Dame Schach"
    );
    assert_eq!(
        announce(&promotion, uci(&promotion, "a7a8n")),
        "Bauer Anna sieben Anna acht wird Springer"
    );

    let fools_mate = position("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2");
    assert_eq!(
        announce(&fools_mate, uci(&fools_mate, "d8h4")),
        "Dame David acht Hector vier Matt"
    );
}
