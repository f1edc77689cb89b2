//! Touch-move (Article 4) from e-board lifts and placements.
//!
//! A board sees lifts and placements, not intent: everything reported here is a *possible*
//! breach, with the indices of the touches it rests on, for the arbiter to rule on. Never a
//! penalty.
//!
//! The move itself is made by lifting an own piece, so a touched opponent's piece followed by a
//! move is judged under 4.3.c (one piece of each touched); 4.3.b alone applies when the touches
//! given include only opponent's pieces.

use serde::Serialize;
use shakmaty::{CastlingSide, Chess, Move, Piece, Position, Square};

use crate::ruleset::{Edition, RuleSet};

/// A lift or a placement of a piece seen by the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TouchAction {
    Lift,
    Place,
}

/// One touch between two moves, in the order seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    pub action: TouchAction,
    pub square: Square,
    pub piece: Piece,
}

/// Which rule may have been broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TouchBreach {
    /// The first touched own piece that could move was not moved (4.3.a).
    OwnPieceNotMoved,
    /// The first touched opponent piece that could be captured was not captured (4.3.b).
    OpponentPieceNotCaptured,
    /// Own and opponent piece touched, the capture of one with the other was possible and not
    /// made (4.3.c).
    TouchedCaptureNotMade,
    /// King then rook touched, castling on that side was legal and not made (4.4.a).
    CastlingNotMade,
    /// Rook then king touched, then castled on that side (4.4.b; 4.4.2 from 2014).
    CastledAfterRookFirst,
    /// A piece released on a square was lifted again and placed elsewhere (4.6).
    ReleasedPieceMovedAgain,
}

/// The clause of Article 4 as `edition` numbers it: lettered up to 2009 (`4.3.a`), numbered
/// from 2014 (`4.3.1`). Given the lettered form.
pub fn article_in(lettered: &'static str, edition: Edition) -> &'static str {
    if edition < Edition::Fide2014 || edition == Edition::Iccf2019 {
        return lettered;
    }
    match lettered {
        "4.3.a" => "4.3.1",
        "4.3.b" => "4.3.2",
        "4.3.c" => "4.3.3",
        "4.4.a" => "4.4.1",
        "4.4.b" => "4.4.2",
        // From 2014, 4.6 is the act of promotion and the released piece is 4.7.
        "4.6" => "4.7",
        other => other,
    }
}

/// The lettered form of a clause of Article 4 (what every edition was labelled with before
/// the numbering of 2014 was followed).
pub fn lettered_article(article: &'static str) -> &'static str {
    match article {
        "4.3.1" => "4.3.a",
        "4.3.2" => "4.3.b",
        "4.3.3" => "4.3.c",
        "4.4.1" => "4.4.a",
        "4.4.2" => "4.4.b",
        "4.7" => "4.6",
        other => other,
    }
}

/// A possible breach of Article 4, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PossibleBreach {
    pub breach: TouchBreach,
    pub article: &'static str,
    /// Indices into the touches given, in order.
    pub touch_indices: Vec<usize>,
    /// The square of the piece concerned.
    pub square: String,
    /// A piece released again elsewhere (`ReleasedPieceMovedAgain`) was first released on a
    /// square no legal move takes it to: that release made no move (the released-piece clause
    /// covers a piece released "as a legal move or part of a legal move"), so this is no breach.
    pub released_where_no_move_goes: bool,
}

/// The touch-move findings between two moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TouchReport {
    pub possible_breaches: Vec<PossibleBreach>,
    /// Rapid and blitz without adequate supervision: the arbiter acts on Article 4 only when a
    /// player claims.
    pub only_on_claim: bool,
}

/// Whether legal move `m` by `turn` puts its moving piece on `sq` (the king's square of a
/// castling, which shakmaty writes as the king taking its rook).
fn lands_on(m: &Move, sq: Square, turn: shakmaty::Color) -> bool {
    match m.castling_side() {
        Some(side) => side.king_to(turn) == sq,
        None => m.to() == sq,
    }
}

fn moves_piece_on(m: Move, sq: Square) -> bool {
    match m {
        Move::Castle { king, rook } => king == sq || rook == sq,
        _ => m.from() == Some(sq),
    }
}

fn captured_square(m: Move) -> Option<Square> {
    match m {
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        Move::Normal {
            capture: Some(_),
            to,
            ..
        } => Some(to),
        _ => None,
    }
}

fn castling_side(pos: &Chess, rook_sq: Square) -> Option<CastlingSide> {
    let turn = pos.turn();
    [CastlingSide::KingSide, CastlingSide::QueenSide]
        .into_iter()
        .find(|&side| pos.castles().rook(turn, side) == Some(rook_sq))
}

/// Checks the touches made by the player to move in `pos` before `made` was played.
pub fn check_touches(rules: &RuleSet, pos: &Chess, touches: &[Touch], made: Move) -> TouchReport {
    let turn = pos.turn();
    let legal = pos.legal_moves();
    let mut breaches = Vec::new();

    // First lift of each square, own and opponent's, on the position before the move.
    let mut own: Vec<(usize, Square)> = Vec::new();
    let mut theirs: Vec<(usize, Square)> = Vec::new();
    for (i, t) in touches.iter().enumerate() {
        if t.action != TouchAction::Lift || pos.board().piece_at(t.square) != Some(t.piece) {
            continue;
        }
        let list = if t.piece.color == turn {
            &mut own
        } else {
            &mut theirs
        };
        if !list.iter().any(|&(_, sq)| sq == t.square) {
            list.push((i, t.square));
        }
    }

    let can_move = |sq: Square| legal.iter().any(|&m| moves_piece_on(m, sq));
    let can_capture = |sq: Square| legal.iter().any(|&m| captured_square(m) == Some(sq));
    let square_name = |sq: Square| sq.to_string();

    if !own.is_empty() && !theirs.is_empty() {
        // 4.3.c: capture a touched opponent piece with a touched own piece, if possible.
        let pairs: Vec<(usize, usize, Square)> = own
            .iter()
            .flat_map(|&(oi, osq)| theirs.iter().map(move |&(ti, tsq)| (oi, ti, osq, tsq)))
            .filter(|&(_, _, osq, tsq)| {
                legal
                    .iter()
                    .any(|&m| m.from() == Some(osq) && captured_square(m) == Some(tsq))
            })
            .map(|(oi, ti, _, tsq)| (oi, ti, tsq))
            .collect();
        let made_pair = pairs.iter().any(|&(oi, ti, _)| {
            made.from() == Some(touches[oi].square)
                && captured_square(made) == Some(touches[ti].square)
        });
        if let Some(&(oi, ti, tsq)) = pairs.first() {
            if !made_pair {
                breaches.push(PossibleBreach {
                    breach: TouchBreach::TouchedCaptureNotMade,
                    article: article_in("4.3.c", rules.edition),
                    touch_indices: vec![oi, ti],
                    square: square_name(tsq),
                    released_where_no_move_goes: false,
                });
            }
        } else {
            // No such capture: move or capture the first touched piece that can be.
            let first_own = own.iter().copied().find(|&(_, sq)| can_move(sq));
            let first_theirs = theirs.iter().copied().find(|&(_, sq)| can_capture(sq));
            let own_first = match (first_own, first_theirs) {
                (Some((oi, _)), Some((ti, _))) => oi < ti,
                (own_piece, _) => own_piece.is_some(),
            };
            if own_first {
                if let Some((i, sq)) = first_own
                    && !moves_piece_on(made, sq)
                {
                    breaches.push(PossibleBreach {
                        breach: TouchBreach::OwnPieceNotMoved,
                        article: article_in("4.3.c", rules.edition),
                        touch_indices: vec![i],
                        square: square_name(sq),
                        released_where_no_move_goes: false,
                    });
                }
            } else if let Some((i, sq)) = first_theirs
                && captured_square(made) != Some(sq)
            {
                breaches.push(PossibleBreach {
                    breach: TouchBreach::OpponentPieceNotCaptured,
                    article: article_in("4.3.c", rules.edition),
                    touch_indices: vec![i],
                    square: square_name(sq),
                    released_where_no_move_goes: false,
                });
            }
        }
    } else if let Some(&(i, sq)) = own.iter().find(|&&(_, sq)| can_move(sq)) {
        // 4.3.a (and 4.4: a rook touched first may not be replaced by castling on its side).
        let rook_then_castle = matches!(made, Move::Castle { rook, .. } if rook == sq)
            && !matches!(rules.edition, Edition::Iccf2019);
        if rook_then_castle {
            let king_index = own
                .iter()
                .find(|&&(_, s)| Some(s) == pos.board().king_of(turn))
                .map(|&(k, _)| k);
            breaches.push(PossibleBreach {
                breach: TouchBreach::CastledAfterRookFirst,
                article: article_in("4.4.b", rules.edition),
                touch_indices: std::iter::once(i).chain(king_index).collect(),
                square: square_name(sq),
                released_where_no_move_goes: false,
            });
        } else if !moves_piece_on(made, sq) {
            breaches.push(PossibleBreach {
                breach: TouchBreach::OwnPieceNotMoved,
                article: article_in("4.3.a", rules.edition),
                touch_indices: vec![i],
                square: square_name(sq),
                released_where_no_move_goes: false,
            });
        }
    } else if let Some(&(i, sq)) = theirs.iter().find(|&&(_, sq)| can_capture(sq))
        && captured_square(made) != Some(sq)
    {
        breaches.push(PossibleBreach {
            breach: TouchBreach::OpponentPieceNotCaptured,
            article: article_in("4.3.b", rules.edition),
            touch_indices: vec![i],
            square: square_name(sq),
            released_where_no_move_goes: false,
        });
    }

    // 4.4.a: king first, then a rook, and castling on that side was legal but not made.
    if let (Some(king_sq), Some(&(ki, first_sq))) = (pos.board().king_of(turn), own.first())
        && first_sq == king_sq
        && let Some(&(ri, rook_sq)) = own
            .iter()
            .skip(1)
            .find(|&&(_, s)| castling_side(pos, s).is_some())
        && let Some(side) = castling_side(pos, rook_sq)
        && !pos.castling_moves(side).is_empty()
        && !matches!(made, Move::Castle { rook, .. } if rook == rook_sq)
    {
        breaches.push(PossibleBreach {
            breach: TouchBreach::CastlingNotMade,
            article: article_in("4.4.a", rules.edition),
            touch_indices: vec![ki, ri],
            square: square_name(rook_sq),
            released_where_no_move_goes: false,
        });
    }

    // 4.6: a piece released on a new square, lifted again, and placed elsewhere.
    let mut origin: Vec<(Piece, Square)> = Vec::new();
    // Released: (touch, square, piece, square it was lifted from).
    let mut released: Vec<(usize, Square, Piece, Square)> = Vec::new();
    let mut relifted: Vec<(usize, usize, Square, Piece, Square)> = Vec::new();
    for (k, t) in touches.iter().enumerate() {
        match t.action {
            TouchAction::Lift => {
                if let Some(pos_r) = released
                    .iter()
                    .position(|&(_, sq, p, _)| sq == t.square && p == t.piece)
                {
                    let (i, sq, p, from) = released.remove(pos_r);
                    relifted.push((i, k, sq, p, from));
                } else {
                    origin.push((t.piece, t.square));
                }
            }
            TouchAction::Place => {
                if let Some(pos_r) = relifted.iter().position(|&(_, _, _, p, _)| p == t.piece) {
                    let (i, j, sq, _, from) = relifted.remove(pos_r);
                    if sq != t.square {
                        breaches.push(PossibleBreach {
                            breach: TouchBreach::ReleasedPieceMovedAgain,
                            article: article_in("4.6", rules.edition),
                            touch_indices: vec![i, j, k],
                            square: square_name(sq),
                            released_where_no_move_goes: !legal
                                .iter()
                                .any(|m| m.from() == Some(from) && lands_on(m, sq, turn)),
                        });
                    }
                } else if let Some(pos_o) = origin.iter().position(|&(p, _)| p == t.piece) {
                    let (_, from) = origin.remove(pos_o);
                    if from != t.square {
                        released.push((k, t.square, t.piece, from));
                    }
                }
            }
        }
    }

    TouchReport {
        possible_breaches: breaches,
        only_on_claim: rules.claim_based_supervision(),
    }
}

/// How long a piece must be seen at rest — set down on a square before it is lifted again, or
/// held off its square before it is put back — for a touch to be evidence an arbiter can act on.
/// A board scans every 200–250 ms: a piece slid across squares, adjusted or flickering in a
/// sensor shows for a scan or two; one left for a second shows for at least this long.
pub const TOUCH_REST_MS: i64 = 750;

/// A touch with the time the board reported it (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedTouch {
    pub touch: Touch,
    pub at_ms: i64,
}

/// How much a possible breach rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Touches the board saw at rest for a real time: an alert for the arbiter.
    AtRest,
    /// Only with touches seen for a moment (a piece passing over a square, an adjustment, a
    /// sensor flicker): a note on the game's timeline, not an alert.
    Brief,
}

/// A possible breach with the strength of its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WeighedBreach {
    pub breach: PossibleBreach,
    pub evidence: Evidence,
    /// How long the piece concerned was at rest (released on the square before it was lifted
    /// again, or off its square before it was put back), when the touches say.
    pub rest_ms: Option<i64>,
}

/// [`check_touches`] with each finding weighed by time: touches that only show a piece for
/// less than `min_rest_ms` (a lift and a put-back on one square, a set-down and a lift again)
/// are passed over first; what is found without them rests on touches at rest, what is found
/// only with them is brief.
pub fn weigh_touches(
    rules: &RuleSet,
    pos: &Chess,
    touches: &[TimedTouch],
    made: Move,
    min_rest_ms: i64,
) -> (Vec<WeighedBreach>, bool) {
    let steady = steady_touches(touches, min_rest_ms);
    let plain = |indices: &[usize]| {
        indices
            .iter()
            .map(|&i| touches[i].touch)
            .collect::<Vec<_>>()
    };
    let at_rest = check_touches(rules, pos, &plain(&steady), made);
    let every = check_touches(
        rules,
        pos,
        &plain(&(0..touches.len()).collect::<Vec<_>>()),
        made,
    );
    let mut weighed: Vec<WeighedBreach> = at_rest
        .possible_breaches
        .into_iter()
        .map(|mut breach| {
            breach.touch_indices = breach.touch_indices.iter().map(|&i| steady[i]).collect();
            let rest_ms = rest_of(touches, &breach);
            WeighedBreach {
                breach,
                evidence: Evidence::AtRest,
                rest_ms,
            }
        })
        .collect();
    for breach in every.possible_breaches {
        let known = weighed
            .iter()
            .any(|w| w.breach.breach == breach.breach && w.breach.square == breach.square);
        if !known {
            let rest_ms = rest_of(touches, &breach);
            weighed.push(WeighedBreach {
                breach,
                evidence: Evidence::Brief,
                rest_ms,
            });
        }
    }
    (weighed, every.only_on_claim)
}

/// The indices of the touches left when every brief pair is passed over: a set-down followed
/// by a lift of the same piece on that square, or a lift followed by a put-back, within
/// `min_rest_ms`. One pass in order, with the touches kept so far on each square: a pair taken
/// out lets the touch before it pair with the next (a piece put down, adjusted, lifted).
fn steady_touches(touches: &[TimedTouch], min_rest_ms: i64) -> Vec<usize> {
    let mut on_square: std::collections::HashMap<Square, Vec<usize>> =
        std::collections::HashMap::new();
    let mut dropped = vec![false; touches.len()];
    for (i, touch) in touches.iter().enumerate() {
        let kept = on_square.entry(touch.touch.square).or_default();
        let brief = kept.last().is_some_and(|&j| {
            let before = touches[j];
            before.touch.piece == touch.touch.piece
                && before.touch.action != touch.touch.action
                && touch.at_ms.saturating_sub(before.at_ms) < min_rest_ms
        });
        if brief {
            if let Some(j) = kept.pop() {
                dropped[j] = true;
            }
            dropped[i] = true;
        } else {
            kept.push(i);
        }
    }
    (0..touches.len()).filter(|&i| !dropped[i]).collect()
}

/// How long the piece a breach concerns was at rest: for 4.6, released on the square until it
/// was lifted again; otherwise off its square from the first touch until it was put back.
fn rest_of(touches: &[TimedTouch], breach: &PossibleBreach) -> Option<i64> {
    let first = *breach.touch_indices.first()?;
    let until = match breach.breach {
        TouchBreach::ReleasedPieceMovedAgain => *breach.touch_indices.get(1)?,
        _ => {
            let square = touches[first].touch.square;
            first
                + 1
                + touches[first + 1..]
                    .iter()
                    .position(|t| t.touch.square == square)?
        }
    };
    Some(touches[until].at_ms.saturating_sub(touches[first].at_ms))
}
