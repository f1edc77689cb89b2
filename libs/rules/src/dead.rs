//! Dead positions (Article 5.2.2; 5.2.b and 9.6 in earlier editions) and "can this side still
//! checkmate" (Article 6.9).
//!
//! The question is decided by search, after A. Ambrona, "A Practical Algorithm for Chess
//! Unwinnability" (FUN 2022): a position is winnable for a side when some sequence of legal moves
//! — both players cooperating — ends with that side delivering mate (a helpmate). The analysis
//! runs in stages:
//!
//! 1. **Static proofs.** Insufficient material for the side
//!    ([`Position::has_insufficient_material`]) and the proof of a *blocked structure*
//!    ([`blocked`]): the squares every piece can ever reach, given the pawns and pieces that can
//!    never move again, leave the side no check on the opposing king, or only checks by bishops
//!    of one colour for which the loser lacks the pieces to block the flight squares. It is also
//!    tried one move on (a king in check from a pawn that never moves must step away for good).
//!    Behind locked pawns, the proof that a king shuttling between two squares can never be
//!    mated, nor mate ([`tempo`]).
//! 2. **Mate within two plies**, then a **quick walk**: the exhaustive walk of stage 4 with a
//!    small budget. Its move ordering runs into a mate within a few hundred positions when there
//!    is much material, and it settles short forced sequences outright.
//! 3. **Helpmate search.** Iterative deepening over legal moves with a transposition table and
//!    move ordering that brings the side's pieces towards the opposing king and that king towards
//!    a corner. A helpmate found is the evidence, returned as UCI moves.
//! 4. **Exhaustive proof.** A depth-first walk over every position reachable from the start
//!    (exact position identity), cut off at positions the static proofs settle. If the walk ends
//!    without a mate, no mate exists.
//!
//! Behind pawns locked head-on with few pieces the proof of a blocked structure comes right
//! after the mate within two plies, and if it fails the exhaustive walk follows at once: a mate
//! there needs the structure broken first, and the walk, which tries pawn captures and pieces
//! offered to pawns first, finds such long lines sooner than the helpmate search.
//!
//! Every stage is bounded by a [`Budget`]. When it runs out the answer is
//! [`Unwinnability::Undetermined`], and [`dead_position`] and [`can_checkmate`] answer
//! [`Answer::Undetermined`]: never a verdict, always shown as such. "Cannot mate" comes only with
//! a proof, "can mate" only with a line.
//!
//! A game's decisions ask with the positions before ([`dead_position_in_game`]): a quiet move
//! that can be taken back cannot make a live position dead, which saves half the searches.

mod blocked;
mod tempo;

use std::collections::{HashMap, HashSet};

use nohash_hasher::BuildNoHashHasher;
use serde::Serialize;

use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, EnPassantMode, Move, MoveList, Position, Role,
    Square, attacks, zobrist::Zobrist64,
};

/// How much work an analysis may do before answering [`Unwinnability::Undetermined`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Positions the helpmate search may visit, over all its iterations.
    pub helpmate_nodes: u64,
    /// The longest helpmate, in plies, the search looks for.
    pub max_plies: u32,
    /// Distinct positions the exhaustive proof may visit.
    pub proof_nodes: u64,
}

/// The budget of the check made after every move (whether the position is dead): a few
/// milliseconds at most, so that deciding observations never waits on it.
impl Default for Budget {
    fn default() -> Self {
        Budget {
            helpmate_nodes: 4_000,
            max_plies: 24,
            proof_nodes: 20_000,
        }
    }
}

impl Budget {
    /// Ten times the default, for the rare questions a verdict rests on (a flag fall, a
    /// resignation, an illegal-move penalty, a position an arbiter asks about): up to about a
    /// second, and on the published test positions it leaves 20 of 3,440 answers undetermined
    /// instead of 140.
    pub fn thorough() -> Budget {
        Budget {
            helpmate_nodes: 40_000,
            max_plies: 48,
            proof_nodes: 200_000,
        }
    }
}

/// Why a side can never checkmate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnwinnableReason {
    /// The game is already over (mate against the side, or stalemate).
    GameOver,
    /// The side's material can never mate, whatever the opponent has.
    InsufficientMaterial,
    /// The pawns can never move again and the side's pieces can never attack the opposing king.
    LockedStructure,
    /// The pawns can never move again, the opposing king can only go back and forth between two
    /// squares, and every mating net would stalemate it first.
    KingShuttles,
    /// Every position reachable by legal moves was visited; none is a mate by the side.
    Exhausted { positions: u64 },
}

/// The answer of [`analyze`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwinnability {
    /// A helpmate by the side exists; the moves (UCI, from the analysed position) are the proof.
    Winnable(Vec<String>),
    /// Proven: no sequence of legal moves ends with the side delivering mate.
    Unwinnable(UnwinnableReason),
    /// The budget ran out before a helpmate or a proof was found.
    Undetermined,
}

impl Unwinnability {
    pub fn is_unwinnable(&self) -> bool {
        matches!(self, Unwinnability::Unwinnable(_))
    }

    /// "Can the side mate?" as a three-way answer.
    pub fn can_mate(&self) -> Answer {
        match self {
            Unwinnability::Winnable(_) => Answer::Yes,
            Unwinnability::Unwinnable(_) => Answer::No,
            Unwinnability::Undetermined => Answer::Undetermined,
        }
    }
}

/// The answer to a question the analysis may not settle within its bounds. An `Undetermined`
/// answer is never a verdict: whoever asked shows it as such (the arbiter decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Yes,
    No,
    Undetermined,
}

impl Answer {
    /// The answer as shown to people and in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::Undetermined => "undetermined",
        }
    }
}

/// Whether the position is dead (Article 5.2.2): no sequence of legal moves leads to mate by
/// either side. `Yes` only with a proof for both sides, `No` with a helpmate for one.
pub fn dead_position(pos: &Chess) -> Answer {
    dead_position_within(pos, &Budget::default())
}

/// How many of its last answers [`dead_position_within`] keeps per thread.
const REMEMBERED_ANSWERS: usize = 16;

thread_local! {
    /// The last answers given on this thread, by position (as the Laws compare positions: board,
    /// side to move, castling and en passant rights, all the analysis depends on) and budget. A
    /// move's position is asked about when the board shows the move and again when the press
    /// completes it; an analysis costs about a tenth of a millisecond.
    static RECENT_ANSWERS: std::cell::RefCell<std::collections::VecDeque<(Chess, Budget, Answer)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

/// [`dead_position`] with an explicit budget.
pub fn dead_position_within(pos: &Chess, budget: &Budget) -> Answer {
    let remembered = RECENT_ANSWERS.with_borrow(|recent| {
        recent
            .iter()
            .find(|(seen, within, _)| within == budget && seen == pos)
            .map(|&(_, _, answer)| answer)
    });
    if let Some(answer) = remembered {
        return answer;
    }
    let answer = analyse_dead_position(pos, budget);
    RECENT_ANSWERS.with_borrow_mut(|recent| {
        if recent.len() == REMEMBERED_ANSWERS {
            recent.pop_front();
        }
        recent.push_back((pos.clone(), *budget, answer));
    });
    answer
}

/// Whether the position at the end of `positions` (a game's positions in order, the one on the
/// board last) is dead, also using what is known of the two before it. When `current` can go
/// back to one of them by legal moves (the quiet piece moves since are taken back, with one
/// move there and back by the side to move when it is the opponent's position) and that one is
/// not dead, `current` is not dead either: every helpmate from there is one from `current`. Most
/// moves of a game are quiet piece moves, and the position before is usually analysed already.
///
/// The answer is `No` when [`dead_position`] says so of `current` or of such an earlier
/// position, otherwise [`dead_position`]'s of `current`, whatever `answers` holds: what it kept
/// only saves analyses. The earlier positions change the answer only where [`dead_position`]
/// alone leaves `current` undetermined (a sound analysis never proves dead a position that
/// reaches one it finds live).
pub fn dead_position_in_game(positions: &[Chess], answers: &GameAnswers) -> Answer {
    let Some((current, before)) = positions.split_last() else {
        return Answer::Undetermined;
    };
    let mut reachable = Vec::with_capacity(2);
    // The opponent's last move, to be taken back on either way back.
    if let Some((previous, theirs)) = before
        .last()
        .and_then(|p| Some((p, move_taking_back(p, current)?)))
    {
        if returns_around_a_reply(current, previous, theirs) {
            reachable.push(previous);
        }
        if let Some(earlier) = before.len().checked_sub(2).map(|i| &before[i])
            && returns_two_moves(current, previous, earlier, theirs)
        {
            reachable.push(earlier);
        }
    }
    if reachable
        .iter()
        .any(|pos| answers.given(pos) == Some(Answer::No))
    {
        return Answer::No;
    }
    // The earlier positions are asked whenever the current one is not found live, so that the
    // answer is the same whether or not they were kept (after a restart they are not).
    match answers.of(current) {
        Answer::No => Answer::No,
        _ if reachable.iter().any(|pos| answers.of(pos) == Answer::No) => Answer::No,
        answer => answer,
    }
}

/// What [`dead_position`] answered for the last positions of one game, for
/// [`dead_position_in_game`] to ask of the next. Clones share it (a game's state is copied to
/// decide on it); it only saves work, never changes an answer. Kept with the game rather than in
/// a larger per-thread cache, so that the games of a hall decided in turn do not push each
/// other's out, and identical games (as in the benchmarks) do not share answers.
#[derive(Debug, Clone, Default)]
pub struct GameAnswers(
    std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<(PositionKey, Answer)>>>,
);

/// How many positions a [`GameAnswers`] keeps: the two before the one asked about, and the
/// positions a board showed on the way.
const GAME_ANSWERS_KEPT: usize = 8;

impl GameAnswers {
    /// The answer already given for `pos`, if kept.
    fn given(&self, pos: &Chess) -> Option<Answer> {
        let key = PositionKey::of(pos);
        let kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.iter()
            .find(|(seen, _)| *seen == key)
            .map(|&(_, answer)| answer)
    }

    /// [`dead_position`] of `pos`, kept for the next question.
    fn of(&self, pos: &Chess) -> Answer {
        if let Some(answer) = self.given(pos) {
            return answer;
        }
        let answer = dead_position(pos);
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() == GAME_ANSWERS_KEPT {
            kept.pop_front();
        }
        kept.push_back((PositionKey::of(pos), answer));
        answer
    }
}

/// Whether `previous`, the position before `current`, stands again after a move by the side to
/// move, the opponent taking back (`back`) the quiet piece move that led to `current`, and the
/// first move going back.
fn returns_around_a_reply(current: &Chess, previous: &Chess, back: Move) -> bool {
    current.legal_moves().iter().any(|&reply| {
        piece_going_back(reply)
            .is_some_and(|reply_back| plays_to(current, &[reply, back, reply_back], previous))
    })
}

/// Whether `earlier`, two positions before `current`, stands again after the side to move takes
/// back its quiet piece move and the opponent then its own (`theirs`).
fn returns_two_moves(current: &Chess, previous: &Chess, earlier: &Chess, theirs: Move) -> bool {
    move_taking_back(earlier, previous)
        .is_some_and(|own| plays_to(current, &[own, theirs], earlier))
}

/// Whether `moves`, each legal in turn from `from`, lead to `to` (as the analysis tells
/// positions apart: board, side to move, castling and en passant rights).
fn plays_to(from: &Chess, moves: &[Move], to: &Chess) -> bool {
    let mut pos = from.clone();
    for &m in moves {
        if !pos.is_legal(m) {
            return false;
        }
        pos.play_unchecked(m);
    }
    PositionKey::of(&pos) == PositionKey::of(to)
}

/// The move that takes back the quiet piece move leading from `previous` to `current`, if one
/// did (a piece other than a pawn moved without capturing, and no castling or en passant right
/// was lost with it).
fn move_taking_back(previous: &Chess, current: &Chess) -> Option<Move> {
    if previous.turn() == current.turn()
        || previous.castles().castling_rights() != current.castles().castling_rights()
        || previous.ep_square(EnPassantMode::Legal).is_some()
    {
        return None;
    }
    let (before, after) = (previous.board(), current.board());
    let vacated = before.occupied() & !after.occupied();
    let filled = after.occupied() & !before.occupied();
    let (Some(from), Some(to)) = (vacated.single_square(), filled.single_square()) else {
        return None;
    };
    let role = before.role_at(from)?;
    let played = Move::Normal {
        role,
        from,
        capture: None,
        to,
        promotion: None,
    };
    if role == Role::Pawn || !previous.is_legal(played) {
        return None;
    }
    let mut replayed = previous.clone();
    replayed.play_unchecked(played);
    if PositionKey::of(&replayed) != PositionKey::of(current) {
        return None;
    }
    piece_going_back(played)
}

/// A quiet piece move's way back: the piece from its square to the one it came from.
fn piece_going_back(m: Move) -> Option<Move> {
    match m {
        Move::Normal {
            role,
            from,
            capture: None,
            to,
            promotion: None,
        } if role != Role::Pawn => Some(Move::Normal {
            role,
            from: to,
            capture: None,
            to: from,
            promotion: None,
        }),
        _ => None,
    }
}

fn analyse_dead_position(pos: &Chess, budget: &Budget) -> Answer {
    // The side to move is usually the cheaper one to refute; try the side that is not stuck
    // with insufficient material first so that the common "not dead" answer comes quickly.
    let order = if pos.has_insufficient_material(pos.turn()) {
        [!pos.turn(), pos.turn()]
    } else {
        [pos.turn(), !pos.turn()]
    };
    // The cheap stages for both sides before the costly ones for either: with much material
    // on the board, when one side's short walk meets no mate, the other's usually does.
    let mut open = Vec::with_capacity(2);
    for side in order {
        match quick_analysis(pos, side, budget) {
            Some(Unwinnability::Winnable(_)) => return Answer::No,
            Some(_) => {}
            None => open.push(side),
        }
    }
    let mut answer = Answer::Yes;
    for side in open {
        match deep_analysis(pos, side, budget).can_mate() {
            Answer::Yes => return Answer::No,
            Answer::Undetermined => answer = Answer::Undetermined,
            Answer::No => {}
        }
    }
    answer
}

/// Whether `side` can checkmate by some series of legal moves, any play of the opponent
/// (Article 6.9), within the [`Budget::thorough`] budget: a verdict rests on it.
pub fn can_checkmate(pos: &Chess, side: Color) -> Answer {
    analyze(pos, side, &Budget::thorough()).can_mate()
}

/// Decides whether `side` can ever deliver mate from `pos`, within `budget`.
pub fn analyze(pos: &Chess, side: Color, budget: &Budget) -> Unwinnability {
    quick_analysis(pos, side, budget).unwrap_or_else(|| deep_analysis(pos, side, budget))
}

/// The cheap stages of [`analyze`]: the game's end, the static proofs, a mate within two
/// plies, and (unless pawns are locked head-on) the short walk. `None` when they settle
/// nothing.
fn quick_analysis(pos: &Chess, side: Color, budget: &Budget) -> Option<Unwinnability> {
    if pos.is_checkmate() {
        return Some(if pos.turn() == side {
            Unwinnability::Unwinnable(UnwinnableReason::GameOver)
        } else {
            Unwinnability::Winnable(Vec::new())
        });
    }
    if pos.legal_moves().is_empty() {
        return Some(Unwinnability::Unwinnable(UnwinnableReason::GameOver));
    }
    if let Some(reason) = static_proof(pos, side, false) {
        return Some(Unwinnability::Unwinnable(reason));
    }
    // The shortest evidence first: an arbiter reads the line, and a mate within two plies is
    // cheap to find and the strongest answer.
    if let Some(line) = mate_within_two_plies(pos, side) {
        return Some(Unwinnability::Winnable(line));
    }
    if looks_blocked(pos.board()) {
        return None;
    }
    // A short ordered walk, without the costly proof of a blocked structure: with much
    // material on the board it runs into a mate within a few hundred positions, and small
    // forced sequences are settled outright.
    exhaustive_proof(pos, side, quick_walk_nodes(budget), false).answer()
}

/// The costly stages of [`analyze`], after [`quick_analysis`] settled nothing.
fn deep_analysis(pos: &Chess, side: Color, budget: &Budget) -> Unwinnability {
    // A blocked structure, here or (a king in check from a pawn that never moves has to step
    // away for good) one move on.
    let blocked = || static_proof(pos, side, true).is_some() || blocked_after_every_move(pos, side);
    // With pawns locked head-on and few pieces, the blocked structure is the likely answer, and
    // otherwise a mate needs the structure broken first: a long line that the walk, which offers
    // pieces to pawns first, finds sooner than the helpmate search (which, on the published
    // test positions, settles nothing here that the walk leaves open).
    if looks_blocked(pos.board()) {
        if blocked() {
            return Unwinnability::Unwinnable(UnwinnableReason::LockedStructure);
        }
        if tempo::cannot_mate(pos, side) {
            return Unwinnability::Unwinnable(UnwinnableReason::KingShuttles);
        }
        return exhaustive_proof(pos, side, budget.proof_nodes, true)
            .answer()
            .unwrap_or(Unwinnability::Undetermined);
    }
    if blocked() {
        return Unwinnability::Unwinnable(UnwinnableReason::LockedStructure);
    }
    let mut search = HelpmateSearch {
        side,
        nodes: 0,
        limit: budget.helpmate_nodes,
        table: HashMap::default(),
        line: Vec::new(),
    };
    if let Some(line) = search.run(pos, budget.max_plies) {
        return Unwinnability::Winnable(line);
    }
    if budget.proof_nodes <= quick_walk_nodes(budget) {
        return Unwinnability::Undetermined;
    }
    exhaustive_proof(pos, side, budget.proof_nodes, true)
        .answer()
        .unwrap_or(Unwinnability::Undetermined)
}

/// Positions the first, cheap walk may visit before the helpmate search takes over.
fn quick_walk_nodes(budget: &Budget) -> u64 {
    budget.proof_nodes.min(QUICK_WALK_NODES)
}

/// At least two pairs of pawns locked head-on and at most six pieces besides kings and pawns:
/// the shape of the positions the proof of a blocked structure settles. Which stages run, and in
/// what order, depends on it (and so does what is left undetermined), never an answer given.
fn looks_blocked(board: &Board) -> bool {
    let white_pawns = board.pawns() & board.white();
    let black_pawns = board.pawns() & board.black();
    let locked_pairs = (white_pawns.shift(8) & black_pawns).count();
    let pieces = (board.occupied() & !board.pawns() & !board.kings()).count();
    locked_pairs >= 2 && pieces <= 6
}

/// At most the positions the first, cheap walk visits.
const QUICK_WALK_NODES: u64 = 500;

/// Proofs that need no search. Sound: `Some` only when `side` can never mate. The proof of a
/// blocked structure is the costly one: `structure_changed` says whether it is worth trying
/// (at the start, and after a capture or a pawn move; other moves only shrink the regions it
/// reasons about, so it rarely succeeds where it failed one move earlier).
fn static_proof(pos: &Chess, side: Color, structure_changed: bool) -> Option<UnwinnableReason> {
    if pos.has_insufficient_material(side) {
        Some(UnwinnableReason::InsufficientMaterial)
    } else if structure_changed
        && pos.ep_square(EnPassantMode::Legal).is_none()
        // Castling moves a king or rook past or onto squares the proof treats as blocked (in
        // Chess960 the two may even swap squares): not modelled, so not proven here.
        && pos.castles().castling_rights().is_empty()
        && blocked::cannot_mate(pos.board(), side)
    {
        Some(UnwinnableReason::LockedStructure)
    } else {
        None
    }
}

/// Whether every legal move leads to a position that the static proofs settle: a stalemate, or
/// a position where `side` can never mate (a move that mates is not settled).
fn blocked_after_every_move(pos: &Chess, side: Color) -> bool {
    if !blocked::may_be_blocked(pos.board()) {
        return false;
    }
    pos.legal_moves().iter().all(|m| {
        let mut child = pos.clone();
        child.play_unchecked(*m);
        if child.legal_moves().is_empty() {
            !is_mate_by(&child, side)
        } else {
            static_proof(&child, side, true).is_some()
        }
    })
}

/// A mate by `side` on its next move: at once when it is to move, else after any reply.
fn mate_within_two_plies(pos: &Chess, side: Color) -> Option<Vec<String>> {
    // Only a move that gives check can mate: the others are never played.
    let mate_now = |p: &Chess| {
        p.legal_moves()
            .into_iter()
            .filter(|m| may_give_check(p, m))
            .find(|m| {
                let mut next = p.clone();
                next.play_unchecked(*m);
                is_mate_by(&next, side)
            })
    };
    if pos.turn() == side {
        return mate_now(pos).map(|m| vec![uci(m, pos.castles().mode())]);
    }
    pos.legal_moves().into_iter().find_map(|reply| {
        let mut next = pos.clone();
        next.play_unchecked(reply);
        let mode = pos.castles().mode();
        mate_now(&next).map(|m| vec![uci(reply, mode), uci(m, mode)])
    })
}

fn is_mate_by(pos: &Chess, side: Color) -> bool {
    pos.turn() != side && pos.is_checkmate()
}

/// A move of a line in UCI, castling written as the position's rules (Chess960 or standard)
/// write it.
fn uci(m: Move, mode: CastlingMode) -> String {
    m.to_uci(mode).to_string()
}

/// Depth-first helpmate search with iterative deepening.
struct HelpmateSearch {
    side: Color,
    nodes: u64,
    limit: u64,
    /// Position hash → remaining depth already searched without finding a mate.
    table: HashMap<u64, u32, BuildNoHashHasher<u64>>,
    line: Vec<Move>,
}

enum Probe {
    Mate,
    NotFound,
    OutOfBudget,
}

/// How many candidate moves the helpmate search tries at a node, best first. The search is a
/// heuristic for finding evidence; completeness comes from the exhaustive proof.
const WINNER_BREADTH: usize = 10;
const LOSER_BREADTH: usize = 6;

impl HelpmateSearch {
    fn run(&mut self, pos: &Chess, max_plies: u32) -> Option<Vec<String>> {
        // Mates land on plies made by the side: odd depths when the side moves first.
        let first = if pos.turn() == self.side { 1 } else { 2 };
        let mut depth = first;
        while depth <= max_plies {
            self.line.clear();
            match self.probe(pos, depth) {
                Probe::Mate => {
                    let mode = pos.castles().mode();
                    return Some(self.line.iter().map(|m| uci(*m, mode)).collect());
                }
                Probe::OutOfBudget => return None,
                Probe::NotFound => {}
            }
            depth += 2;
        }
        None
    }

    fn probe(&mut self, pos: &Chess, depth: u32) -> Probe {
        self.nodes += 1;
        if self.nodes > self.limit {
            return Probe::OutOfBudget;
        }
        if depth == 0 || pos.has_insufficient_material(self.side) {
            return Probe::NotFound;
        }
        let key: Zobrist64 = pos.zobrist_hash(EnPassantMode::Legal);
        let key = key.0;
        if self.table.get(&key).is_some_and(|&done| done >= depth) {
            return Probe::NotFound;
        }
        let moves = pos.legal_moves();
        let winner_to_move = pos.turn() == self.side;
        if depth == 1 {
            // Shorter mates were looked for by the previous iterations: only the last ply needs
            // the mate test.
            if winner_to_move {
                for m in moves.iter().filter(|m| may_give_check(pos, m)) {
                    let mut child = pos.clone();
                    child.play_unchecked(*m);
                    if child.is_check() && child.is_checkmate() {
                        self.line.push(*m);
                        return Probe::Mate;
                    }
                }
            }
            return Probe::NotFound;
        }
        let ordered = order_moves(pos, &moves, self.side);
        let breadth = if winner_to_move {
            WINNER_BREADTH
        } else {
            LOSER_BREADTH
        };
        for m in ordered.into_iter().take(breadth) {
            let mut child = pos.clone();
            child.play_unchecked(m);
            self.line.push(m);
            match self.probe(&child, depth - 1) {
                Probe::Mate => return Probe::Mate,
                Probe::OutOfBudget => return Probe::OutOfBudget,
                Probe::NotFound => {
                    self.line.pop();
                }
            }
        }
        self.table.insert(key, depth);
        Probe::NotFound
    }
}

/// A cheap superset of the moves that give check: the piece attacks the king from its
/// destination, or it leaves a line through the king (a discovered check), or the move is one of
/// the special kinds. Only these need to be played to look for a mate.
fn may_give_check(pos: &Chess, m: &Move) -> bool {
    let board = pos.board();
    let Some(king) = board.king_of(!pos.turn()) else {
        return false;
    };
    let (Some(from), to) = (m.from(), m.to()) else {
        return true;
    };
    if m.is_castle() || m.is_en_passant() || m.is_promotion() {
        return true;
    }
    let occupied = (board.occupied() ^ Bitboard::from_square(from)) | Bitboard::from_square(to);
    attacks::attacks(to, m.role().of(pos.turn()), occupied).contains(king)
        || attacks::queen_attacks(king, Bitboard::EMPTY).contains(from)
}

/// Orders moves for a helpmate by `winner`, best first (see [`score_moves_into`]); ties keep
/// the order of generation.
fn order_moves(pos: &Chess, moves: &MoveList, winner: Color) -> Vec<Move> {
    let mut scored = Vec::with_capacity(moves.len());
    score_moves_into(pos, moves, winner, &mut scored);
    // Stable: ties stay in generation order.
    scored.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
    scored.into_iter().map(|(_, m)| m).collect()
}

/// Appends `moves` to `scored`, each with how promising it is for a helpmate by `winner`: the
/// winner's pieces approach the opposing king and promote to queens; the loser's king heads for
/// a corner, its other pieces crowd around it and avoid capturing with pieces (which would thin
/// out the winner's material). Behind locked pawns, pawn captures and pieces offered to enemy
/// pawns come first for both sides.
fn score_moves_into(pos: &Chess, moves: &MoveList, winner: Color, scored: &mut Vec<(i32, Move)>) {
    let board = pos.board();
    let Some(loser_king) = board.king_of(!winner) else {
        scored.extend(moves.iter().map(|m| (0, *m)));
        return;
    };
    let winner_to_move = pos.turn() == winner;
    // A lone bishop mates in a corner of its own colour.
    let winner_pieces = board.by_color(winner) & !board.kings() & !board.pawns();
    let corners = if winner_pieces.any() && winner_pieces.is_subset(board.bishops()) {
        if winner_pieces.is_subset(Bitboard::DARK_SQUARES) {
            Corners::Dark
        } else if winner_pieces.is_subset(Bitboard::LIGHT_SQUARES) {
            Corners::Light
        } else {
            Corners::All
        }
    } else {
        Corners::All
    };
    // Distances by table: the walks score every move of every position they visit.
    let to_loser_king = &KING_DISTANCE[usize::from(loser_king)];
    let to_corner = &CORNER_DISTANCE[corners as usize];
    let towards_loser_king = |from: Square, to: Square| {
        i32::from(to_loser_king[usize::from(from)]) - i32::from(to_loser_king[usize::from(to)])
    };
    // Behind locked pawns a mate needs the structure to change: a pawn capture, which needs a
    // piece offered to a pawn first.
    let locked = blocked::may_be_blocked(board);
    let their_pawn_attacks = if locked {
        (board.pawns() & board.by_color(!pos.turn()))
            .into_iter()
            .fold(Bitboard::EMPTY, |acc, sq| {
                acc | attacks::pawn_attacks(!pos.turn(), sq)
            })
    } else {
        Bitboard::EMPTY
    };
    let score = |m: &Move| {
        let (from, to) = (m.from().unwrap_or(m.to()), m.to());
        let mut score: i32 = 0;
        if locked {
            if m.role() == Role::Pawn && m.is_capture() {
                score += STRUCTURE_BONUS;
            } else if m.role() != Role::King && their_pawn_attacks.contains(to) {
                score += OFFER_BONUS;
            }
        }
        if let Some(promotion) = m.promotion() {
            score += if promotion == Role::Queen { 40 } else { -40 };
        }
        if winner_to_move {
            score += 10 * towards_loser_king(from, to);
            if m.is_capture() {
                score += 2;
            }
            if m.role() == Role::King {
                score -= 3;
            }
        } else if m.role() == Role::King {
            score += 10
                * (i32::from(to_corner[usize::from(from)]) - i32::from(to_corner[usize::from(to)]))
                + 5 * (i32::from(EDGE_DISTANCE[usize::from(from)])
                    - i32::from(EDGE_DISTANCE[usize::from(to)]));
        } else {
            if m.is_capture() && m.role() != Role::Pawn {
                score -= 30;
            }
            // Crowding the own king takes away its flight squares.
            score += 8 * towards_loser_king(from, to);
        }
        score
    };
    scored.extend(moves.iter().map(|m| (score(m), *m)));
}

/// The index of the best move of `scored` not taken yet, and takes it (its score becomes
/// [`TAKEN`]); `None` when every move was taken. Among equal scores the first: moves come in
/// the order a stable sort by score gives. The walk leaves most positions after a move or two,
/// so picking each in turn costs less than sorting all.
fn take_best(scored: &mut [(i32, Move)]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &(score, _)) in scored.iter().enumerate() {
        if score != TAKEN && best.is_none_or(|b| score > scored[b].0) {
            best = Some(i);
        }
    }
    if let Some(b) = best {
        scored[b].0 = TAKEN;
    }
    best
}

/// The score of a move already taken by [`take_best`]; no move scores it (scores are sums of a
/// few small terms).
const TAKEN: i32 = i32::MIN;

/// Behind locked pawns: the weight of a pawn capture, and of a piece moved where an enemy pawn
/// can take it (the best of a few settings timed on the locked published test positions).
const STRUCTURE_BONUS: i32 = 60;
const OFFER_BONUS: i32 = 25;

/// The corners a lone king is driven to: any, or those of a lone bishop's colour.
#[derive(Clone, Copy)]
enum Corners {
    All = 0,
    Dark = 1,
    Light = 2,
}

/// King steps between two squares, by square index.
static KING_DISTANCE: [[u8; 64]; 64] = {
    let mut table = [[0; 64]; 64];
    let mut a = 0;
    while a < 64 {
        let mut b = 0;
        while b < 64 {
            table[a][b] = king_steps(a, b);
            b += 1;
        }
        a += 1;
    }
    table
};

/// King steps from a square to the nearest corner of each [`Corners`].
static CORNER_DISTANCE: [[u8; 64]; 3] = {
    const A1: usize = 0;
    const H1: usize = 7;
    const A8: usize = 56;
    const H8: usize = 63;
    let mut table = [[0; 64]; 3];
    let mut sq = 0;
    while sq < 64 {
        let dark = min(king_steps(sq, A1), king_steps(sq, H8));
        let light = min(king_steps(sq, H1), king_steps(sq, A8));
        table[Corners::All as usize][sq] = min(dark, light);
        table[Corners::Dark as usize][sq] = dark;
        table[Corners::Light as usize][sq] = light;
        sq += 1;
    }
    table
};

/// Squares from a square to the nearest edge of the board.
static EDGE_DISTANCE: [u8; 64] = {
    let mut table = [0; 64];
    let mut sq = 0;
    while sq < 64 {
        let (file, rank) = ((sq % 8) as u8, (sq / 8) as u8);
        table[sq] = min(min(file, 7 - file), min(rank, 7 - rank));
        sq += 1;
    }
    table
};

const fn king_steps(a: usize, b: usize) -> u8 {
    let files = (a % 8).abs_diff(b % 8);
    let ranks = (a / 8).abs_diff(b / 8);
    (if files > ranks { files } else { ranks }) as u8
}

const fn min(a: u8, b: u8) -> u8 {
    if a < b { a } else { b }
}

enum Exploration {
    Mate(Vec<String>),
    NoMate { positions: u64 },
    OutOfBudget,
}

impl Exploration {
    /// What the walk settled: `None` when it ran out of budget first.
    fn answer(self) -> Option<Unwinnability> {
        match self {
            Exploration::Mate(line) => Some(Unwinnability::Winnable(line)),
            Exploration::NoMate { positions } => {
                Some(Unwinnability::Unwinnable(UnwinnableReason::Exhausted {
                    positions,
                }))
            }
            Exploration::OutOfBudget => None,
        }
    }
}

/// Exact position identity for the exhaustive walk (the move counters do not matter). Hashed
/// by its Zobrist key alone, which is cheap; equality still compares the whole position, so a
/// collision costs a comparison and never merges two positions.
#[derive(Debug, PartialEq, Eq)]
struct PositionKey {
    zobrist: u64,
    board: Board,
    turn: Color,
    castling: Bitboard,
    ep: Option<Square>,
}

impl PositionKey {
    fn of(pos: &Chess) -> Self {
        let zobrist: Zobrist64 = pos.zobrist_hash(EnPassantMode::Legal);
        PositionKey {
            zobrist: zobrist.0,
            board: pos.board().clone(),
            turn: pos.turn(),
            castling: pos.castles().castling_rights(),
            ep: pos.ep_square(EnPassantMode::Legal),
        }
    }
}

impl std::hash::Hash for PositionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.zobrist);
    }
}

impl nohash_hasher::IsEnabled for PositionKey {}

/// Visits every position reachable from `start`, stopping at positions the static proofs settle.
fn exhaustive_proof(start: &Chess, side: Color, limit: u64, blocked_proofs: bool) -> Exploration {
    /// A position on the walk's path; its moves are `moves[first..end]` of the walk, with their
    /// scores, and `last` the one tried last (its index in `moves`).
    struct Frame {
        pos: Chess,
        first: usize,
        last: usize,
        end: usize,
    }
    // Sized for the quick walk's positions from the start (the thorough walks grow it).
    let mut seen: HashSet<PositionKey, BuildNoHashHasher<PositionKey>> =
        HashSet::with_capacity_and_hasher(
            usize::try_from(limit.min(QUICK_WALK_NODES)).unwrap_or(0) + 1,
            BuildNoHashHasher::default(),
        );
    seen.insert(PositionKey::of(start));
    // Every frame's moves with their scores, in stack order. The walk tries the helpmate
    // ordering first: when a mate exists it tends to be met early.
    let mut moves: Vec<(i32, Move)> = Vec::new();
    let push = |pos: Chess, moves: &mut Vec<(i32, Move)>, stack: &mut Vec<Frame>| {
        let first = moves.len();
        score_moves_into(&pos, &pos.legal_moves(), side, moves);
        if moves.len() > first {
            stack.push(Frame {
                pos,
                first,
                last: first,
                end: moves.len(),
            });
        }
    };
    let mut stack = Vec::new();
    push(start.clone(), &mut moves, &mut stack);
    while let Some(frame) = stack.last_mut() {
        let Some(best) = take_best(&mut moves[frame.first..frame.end]) else {
            moves.truncate(frame.first);
            stack.pop();
            continue;
        };
        frame.last = frame.first + best;
        let m = moves[frame.last].1;
        let mut child = frame.pos.clone();
        child.play_unchecked(m);
        if is_mate_by(&child, side) {
            // Each frame's last tried move is the path; the top frame's is `m` itself.
            let mode = start.castles().mode();
            let line = stack.iter().map(|f| uci(moves[f.last].1, mode)).collect();
            return Exploration::Mate(line);
        }
        if !seen.insert(PositionKey::of(&child)) {
            continue;
        }
        if seen.len() as u64 > limit {
            return Exploration::OutOfBudget;
        }
        let structure_changed = blocked_proofs && (m.is_capture() || m.role() == Role::Pawn);
        if static_proof(&child, side, structure_changed).is_some() {
            continue;
        }
        push(child, &mut moves, &mut stack);
    }
    Exploration::NoMate {
        positions: seen.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use shakmaty::fen::Fen;

    use super::*;

    fn pos(fen: &str) -> Chess {
        let fen: Fen = fen.parse().expect("FEN");
        fen.into_position(CastlingMode::Standard).expect("legal")
    }

    #[test]
    fn mate_in_one_is_found_with_its_line() {
        let p = pos("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1");
        assert_eq!(
            analyze(&p, Color::White, &Budget::default()),
            Unwinnability::Winnable(vec!["a1a8".to_owned()])
        );
    }

    #[test]
    fn moves_are_taken_in_the_order_of_a_stable_sort() {
        let start = Chess::default();
        let moves: Vec<Move> = start.legal_moves().into_iter().collect();
        // Many ties, in no order: the walk must take moves exactly as the sort orders them.
        let scored: Vec<(i32, Move)> = moves
            .iter()
            .enumerate()
            .map(|(i, m)| ((i as i32 * 7) % 5 - 2, *m))
            .collect();
        let mut sorted = scored.clone();
        sorted.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
        let mut remaining = scored.clone();
        let taken: Vec<(i32, Move)> =
            std::iter::from_fn(|| take_best(&mut remaining).map(|i| scored[i])).collect();
        assert_eq!(taken, sorted);
    }

    #[test]
    fn exhaustive_line_is_the_path_to_mate() {
        // Forced: the only way on is through the capture; mate follows.
        let p = pos("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1");
        match exhaustive_proof(&p, Color::White, 100_000, true) {
            Exploration::Mate(line) => {
                let mut q = p.clone();
                for u in &line {
                    let m = u
                        .parse::<shakmaty::uci::UciMove>()
                        .expect("uci")
                        .to_move(&q)
                        .expect("legal");
                    q.play_unchecked(m);
                }
                assert!(is_mate_by(&q, Color::White));
            }
            _ => panic!("a mate exists"),
        }
    }
}
