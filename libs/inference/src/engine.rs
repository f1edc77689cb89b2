//! The inference state machine.

use std::collections::HashMap;

use shakmaty::{Board, Chess, Color, Move, Piece, Position, Square, san::SanPlus};

use crate::search::{Reconstruction, reconstruct};
use crate::types::{
    Config, Event, InferenceError, Input, IrregularityCause, Orientation, Output, PlyMove, Seq,
};
use boardcast_rules::result_signal::{ResultSignal, kings_signal};

/// Touch evidence and move bases keep at most this many entries between two matched placements,
/// so a board in chaos for hours cannot grow memory without bound.
const MAX_TRACKED: usize = 64;

type NodeId = usize;
const ROOT: NodeId = 0;

/// Completed moves more than this many plies back keep only their own node: the other moves
/// that were possible there are forgotten, so a long game holds about 35 positions per recent
/// ply and one per older ply instead of 35 for every ply. A board that goes back further than
/// this and shows another move there is no longer matched by placement (it is reported as an
/// irregular position like any other unknown placement).
pub const KEPT_PLIES: u32 = 8;

#[derive(Debug, Clone)]
struct Node {
    pos: Chess,
    parent: Option<NodeId>,
    mv: Option<Move>,
    ply: u32,
    /// Its successors, once made ([`Inference::add_children`]).
    children: Option<Children>,
    /// The input that last made this node current.
    reached_seq: Option<Seq>,
    /// Pruned: out of the index and its parent's children, waiting for the nodes to be
    /// compacted (see [`Inference::prune`]).
    forgotten: bool,
}

/// A node's successors, one per legal move: made together, they sit side by side in the nodes
/// (compaction keeps their order), so they are a range, of which the forgotten ones are no
/// longer children. A range rather than a list: deciding an observation copies the engine, and
/// with it every node, and a list per node was an allocation each.
#[derive(Debug, Clone, Copy)]
struct Children {
    first: NodeId,
    len: usize,
}

impl Children {
    fn ids(self) -> std::ops::Range<NodeId> {
        self.first..self.first + self.len
    }
}

/// The children of `nodes[id]`: its successors not forgotten.
fn children(nodes: &[Node], id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
    nodes[id]
        .children
        .map_or(ROOT..ROOT, Children::ids)
        .filter(|&child| !nodes[child].forgotten)
}

#[derive(Debug, Clone, Copy)]
struct SquareChange {
    square: Square,
    piece: Piece,
    seq: Seq,
}

/// A placement that matched nothing, still unresolved.
#[derive(Debug, Clone)]
struct Pending {
    placement: Board,
    last_change_ms: i64,
    updates: u32,
    seqs: Vec<Seq>,
    reported: bool,
    /// The last search made for this placement (by the side constraint it had).
    reconstruction_tried: Option<Option<Color>>,
}

/// A clock press waiting for the board to catch up (see [`Config::press_grace_ms`]).
#[derive(Debug, Clone, Copy)]
struct DeferredPress {
    side: Color,
    seq: Seq,
    time_ms: i64,
}

/// Infers moves from board placements; see the crate documentation.
#[derive(Debug, Clone)]
pub struct Inference {
    config: Config,
    nodes: Vec<Node>,
    /// How many of `nodes` are forgotten.
    forgotten: usize,
    /// Placement → the newest node with it.
    index: HashMap<Board, NodeId>,
    current: NodeId,
    confirmed_plies: u32,
    orientation: Orientation,
    /// The last board as the sensors reported it (before orientation).
    sensed: Option<Board>,
    pending: Option<Pending>,
    lifts: Vec<SquareChange>,
    places: Vec<SquareChange>,
    /// Board-changing inputs since the last matched placement.
    run: Vec<Seq>,
    signal: Option<ResultSignal>,
    game_over: bool,
    deferred_press: Option<DeferredPress>,
}

impl Inference {
    /// An engine for a game starting at `start`, with the default [`Config`].
    pub fn new(start: Chess) -> Inference {
        Inference::with_config(start, Config::default())
    }

    pub fn with_config(start: Chess, config: Config) -> Inference {
        let mut engine = Inference {
            config,
            nodes: Vec::new(),
            forgotten: 0,
            index: HashMap::new(),
            current: ROOT,
            confirmed_plies: 0,
            orientation: Orientation::Normal,
            sensed: None,
            pending: None,
            lifts: Vec::new(),
            places: Vec::new(),
            run: Vec::new(),
            signal: None,
            game_over: false,
            deferred_press: None,
        };
        engine.reset_graph(start);
        engine
    }

    /// Replaces the game with the authoritative one: `moves` played from `start`, all counted
    /// as confirmed. Use it after a move was completed elsewhere or an arbiter correction.
    /// Orientation and the last sensed board are kept.
    pub fn sync(&mut self, start: Chess, moves: &[Move]) -> Result<(), InferenceError> {
        let mut pos = start.clone();
        for (index, &m) in moves.iter().enumerate() {
            if !pos.is_legal(m) {
                return Err(InferenceError::IllegalMove {
                    index,
                    uci: m.to_uci(shakmaty::CastlingMode::Standard).to_string(),
                });
            }
            pos.play_unchecked(m);
        }
        self.reset_graph(start);
        for &m in moves {
            let child = self.child_by_move(self.current, m);
            self.current = child;
            self.expand(child);
        }
        self.confirmed_plies = self.nodes[self.current].ply;
        self.clear_tracking();
        self.signal = None;
        self.game_over = false;
        self.prune();
        Ok(())
    }

    /// Positions the engine holds (for memory accounting and tests).
    pub fn positions_held(&self) -> usize {
        self.nodes.len() - self.forgotten
    }

    /// The position the board is in according to the inferred game.
    pub fn position(&self) -> &Chess {
        &self.nodes[self.current].pos
    }

    /// The game's start position.
    pub fn start_position(&self) -> &Chess {
        &self.nodes[ROOT].pos
    }

    /// The inferred game: the moves from the start position to the current one.
    pub fn moves(&self) -> Vec<PlyMove> {
        let mut chain = self.path_to_root(self.current);
        chain.reverse();
        chain.into_iter().map(|n| self.ply_move(n)).collect()
    }

    /// The moves of [`Inference::moves`] alone, without their SAN (cheap: for comparisons made
    /// on every observation).
    pub fn line(&self) -> Vec<Move> {
        let mut chain = self.path_to_root(self.current);
        chain.reverse();
        chain.into_iter().filter_map(|n| self.nodes[n].mv).collect()
    }

    /// How many moves lead from the start position to the current one.
    pub fn line_len(&self) -> u32 {
        self.nodes[self.current].ply
    }

    /// How many of [`Inference::moves`] the clock has confirmed.
    pub fn confirmed_plies(&self) -> u32 {
        self.confirmed_plies
    }

    pub fn orientation(&self) -> Orientation {
        self.orientation
    }

    /// Sets the orientation, e.g. from a setting the operator made.
    pub fn set_orientation(&mut self, orientation: Orientation) {
        self.orientation = orientation;
    }

    /// Whether a result has been signalled with the kings since the game started.
    pub fn result_signalled(&self) -> bool {
        self.game_over
    }

    /// Feeds one observation and returns what it means.
    pub fn observe(&mut self, input: Input) -> Vec<Output> {
        let Input {
            seq,
            time_ms,
            event,
        } = input;
        let mut out = Vec::new();
        if let Some(press) = self.due_press(time_ms) {
            self.deferred_press = None;
            out.extend(self.settle_press(press.side, press.seq));
        }
        let board_changed = matches!(
            event,
            Event::Lifted { .. } | Event::Placed { .. } | Event::Placement(_)
        );
        out.extend(match event {
            Event::Lifted { square } => {
                let mut board = self.sensed_or_current();
                board.discard_piece_at(square);
                self.on_board(board, seq, time_ms)
            }
            Event::Placed { square, piece } => {
                let mut board = self.sensed_or_current();
                board.set_piece_at(square, piece);
                self.on_board(board, seq, time_ms)
            }
            Event::Placement(board) => self.on_board(board, seq, time_ms),
            Event::ClockPressed { side } => self.on_clock_press(side, seq, time_ms),
            Event::Tick => self.on_tick(seq, time_ms),
        });
        // The board caught up with a press made during the last scan.
        if board_changed
            && self.pending.is_none()
            && let Some(press) = self.deferred_press.take()
        {
            out.extend(self.settle_press(press.side, press.seq));
        }
        out
    }

    fn reset_graph(&mut self, start: Chess) {
        self.nodes.clear();
        self.forgotten = 0;
        self.index.clear();
        self.nodes.push(Node {
            pos: start,
            parent: None,
            mv: None,
            ply: 0,
            children: None,
            reached_seq: None,
            forgotten: false,
        });
        self.current = ROOT;
        self.confirmed_plies = 0;
        self.deferred_press = None;
        self.expand(ROOT);
    }

    /// Forgets what branches off the game more than [`KEPT_PLIES`] completed moves back, keeping
    /// the line from the start to the current node whole. A forgotten node leaves the index and
    /// its parent's children at once, so nothing reaches it; the nodes are compacted only when
    /// half of them are forgotten (this runs on every press that settles a move, and moving
    /// every node along for each ply's few forgotten ones was a tenth of replaying a game).
    fn prune(&mut self) {
        let floor = self.confirmed_plies.saturating_sub(KEPT_PLIES);
        if floor == 0 {
            return;
        }
        let mut on_line = vec![false; self.nodes.len()];
        on_line[ROOT] = true;
        for n in self.path_to_root(self.current) {
            on_line[n] = true;
        }
        // The ply at which each node's branch leaves the line (its own ply on the line).
        let mut branch_ply = vec![0u32; self.nodes.len()];
        let mut keep = vec![false; self.nodes.len()];
        let mut newly_forgotten = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            branch_ply[id] = match (on_line[id], node.parent) {
                (true, _) | (false, None) => node.ply,
                (false, Some(parent)) => branch_ply[parent],
            };
            keep[id] = !node.forgotten && (on_line[id] || branch_ply[id] >= floor);
            if !keep[id] && !node.forgotten {
                newly_forgotten.push(id);
            }
        }
        if newly_forgotten.is_empty() {
            return;
        }
        for &id in &newly_forgotten {
            // Forgotten, it is no longer among its parent's children.
            let node = &mut self.nodes[id];
            node.forgotten = true;
            node.children = None;
        }
        self.index.retain(|_, id| keep[*id]);
        self.forgotten += newly_forgotten.len();
        if self.forgotten * 2 > self.nodes.len() {
            self.compact(&keep);
        }
    }

    /// Drops the forgotten nodes (`keep` false), renumbering the others in order: parents still
    /// precede their children, so the root stays first.
    fn compact(&mut self, keep: &[bool]) {
        let mut new_id = vec![None; self.nodes.len()];
        let mut next = 0;
        for (id, &kept) in keep.iter().enumerate() {
            if kept {
                new_id[id] = Some(next);
                next += 1;
            }
        }
        // In place: the index keeps its table (renumbering needs no hashing) and the nodes their
        // vector.
        let mut id = 0;
        self.nodes.retain_mut(|node| {
            let kept = keep[id];
            id += 1;
            if kept {
                node.parent = node.parent.and_then(|p| new_id[p]);
                if let Some(children) = node.children.as_mut() {
                    // The kept ones, still side by side.
                    let mut kept_ids = children.ids().filter_map(|c| new_id[c]);
                    let first = kept_ids.next();
                    *children = Children {
                        first: first.unwrap_or(ROOT),
                        len: first.map_or(0, |_| 1 + kept_ids.count()),
                    };
                }
            }
            kept
        });
        for id in self.index.values_mut() {
            *id = new_id[*id].unwrap_or(ROOT);
        }
        self.current = new_id[self.current].unwrap_or(ROOT);
        self.forgotten = 0;
    }

    fn clear_tracking(&mut self) {
        self.pending = None;
        self.lifts.clear();
        self.places.clear();
        self.run.clear();
    }

    fn sensed_or_current(&self) -> Board {
        match &self.sensed {
            Some(board) => board.clone(),
            None => orient(self.position().board(), self.orientation),
        }
    }

    /// Makes `id` findable by placement (newest wins) together with its legal successors.
    fn expand(&mut self, id: NodeId) {
        if self.nodes[id].children.is_none() {
            self.add_children(id);
        }
        // Indexed again (some may have been unindexed): this runs on every placement the board
        // shows.
        for child in children(&self.nodes, id) {
            self.index
                .insert(self.nodes[child].pos.board().clone(), child);
        }
        self.index.insert(self.nodes[id].pos.board().clone(), id);
    }

    /// Adds a node for each legal move from `id`'s position.
    fn add_children(&mut self, id: NodeId) {
        let pos = self.nodes[id].pos.clone();
        let ply = self.nodes[id].ply + 1;
        let first = self.nodes.len();
        for m in pos.legal_moves() {
            let mut next = pos.clone();
            next.play_unchecked(m);
            self.nodes.push(Node {
                pos: next,
                parent: Some(id),
                mv: Some(m),
                ply,
                children: None,
                reached_seq: None,
                forgotten: false,
            });
        }
        self.nodes[id].children = Some(Children {
            first,
            len: self.nodes.len() - first,
        });
    }

    fn unindex_children(&mut self, id: NodeId) {
        for child in children(&self.nodes, id) {
            let board = self.nodes[child].pos.board();
            if self.index.get(board) == Some(&child) {
                self.index.remove(board);
            }
        }
    }

    fn child_by_move(&mut self, id: NodeId, m: Move) -> NodeId {
        self.expand(id);
        let existing = children(&self.nodes, id).find(|&c| self.nodes[c].mv == Some(m));
        match existing {
            Some(child) => child,
            None => {
                // Only reached for moves legal in the node, which expand() always created;
                // adding the node keeps the engine consistent regardless.
                let mut next = self.nodes[id].pos.clone();
                next.play_unchecked(m);
                self.nodes.push(Node {
                    pos: next,
                    parent: Some(id),
                    mv: Some(m),
                    ply: self.nodes[id].ply + 1,
                    children: None,
                    reached_seq: None,
                    forgotten: false,
                });
                self.nodes.len() - 1
            }
        }
    }

    fn ply_move(&self, id: NodeId) -> PlyMove {
        let node = &self.nodes[id];
        let (mv, san) = match (node.mv, node.parent) {
            (Some(mv), Some(parent)) => {
                let san = SanPlus::from_move(self.nodes[parent].pos.clone(), mv).to_string();
                (mv, san)
            }
            // The root has no move; never asked for, as chains exclude it.
            _ => (
                Move::Put {
                    role: shakmaty::Role::Pawn,
                    to: Square::A1,
                },
                String::new(),
            ),
        };
        PlyMove {
            ply: node.ply,
            mv,
            san,
        }
    }

    /// Nodes from `id` up to, excluding, the root: `id` first.
    fn path_to_root(&self, id: NodeId) -> Vec<NodeId> {
        self.path_to(id, ROOT)
    }

    /// Nodes from `id` up to, excluding, its ancestor `ancestor`: `id` first.
    fn path_to(&self, id: NodeId, ancestor: NodeId) -> Vec<NodeId> {
        let mut path = Vec::new();
        let mut at = id;
        while at != ancestor {
            path.push(at);
            match self.nodes[at].parent {
                Some(parent) => at = parent,
                None => break,
            }
        }
        path
    }

    fn common_ancestor(&self, a: NodeId, b: NodeId) -> NodeId {
        let (mut a, mut b) = (a, b);
        while self.nodes[a].ply > self.nodes[b].ply {
            a = self.nodes[a].parent.unwrap_or(ROOT);
        }
        while self.nodes[b].ply > self.nodes[a].ply {
            b = self.nodes[b].parent.unwrap_or(ROOT);
        }
        while a != b {
            a = self.nodes[a].parent.unwrap_or(ROOT);
            b = self.nodes[b].parent.unwrap_or(ROOT);
        }
        a
    }

    fn on_board(&mut self, raw: Board, seq: Seq, time_ms: i64) -> Vec<Output> {
        if self.sensed.as_ref() == Some(&raw) {
            return Vec::new();
        }
        let previous = orient(&self.sensed_or_current(), self.orientation);
        self.sensed = Some(raw.clone());
        let mut out = Vec::new();

        if let Some(seen_as) = start_orientation(&raw)
            && let Some(outputs) = self.on_start_placement(seen_as, &raw, seq)
        {
            return outputs;
        }

        let mut previous = previous;
        if let Some(turned) = self.turned_round(&raw) {
            // What the board showed before was read the other way round: no touches from it,
            // and an irregularity reported meanwhile is over.
            self.orientation = turned;
            self.finish_pending(seq, &mut out);
            self.clear_tracking();
            previous = orient(&raw, turned);
            out.push(Output::OrientationChanged {
                orientation: turned,
                basis: vec![seq],
            });
        }
        let board = orient(&raw, self.orientation);
        if let Some(result) = kings_signal(&board) {
            if self.signal != Some(result) {
                self.signal = Some(result);
                self.game_over = true;
                self.clear_tracking();
                out.push(Output::ResultSignalled {
                    result,
                    basis: vec![seq],
                });
            }
            return out;
        }
        self.signal = None;

        self.track_changes(&previous, &board, seq);
        push_bounded(&mut self.run, seq);

        match self.index.get(&board).copied() {
            Some(id) if id == self.current => self.on_back_to_current(&board, seq, &mut out),
            Some(id) => {
                self.finish_pending(seq, &mut out);
                out.extend(self.touches());
                self.move_to(id, seq, &mut out);
                self.clear_tracking();
            }
            None => {
                let pending = self.pending.get_or_insert_with(|| Pending {
                    placement: board.clone(),
                    last_change_ms: time_ms,
                    updates: 0,
                    seqs: Vec::new(),
                    reported: false,
                    reconstruction_tried: None,
                });
                if pending.placement != board {
                    pending.reconstruction_tried = None;
                }
                pending.placement = board;
                pending.last_change_ms = time_ms;
                pending.updates += 1;
                push_bounded(&mut pending.seqs, seq);
            }
        }
        out
    }

    /// The orientation in which `raw` shows the game's current position when it is not the one
    /// the board is read in (`Config::turned_round_anywhere`): the board was turned round, or a
    /// spare put on the table the other way round. No placement reached by moving pieces shows a
    /// position turned round (the kings would have to change places), so nothing else reads so.
    fn turned_round(&self, raw: &Board) -> Option<Orientation> {
        let turned = match self.orientation {
            Orientation::Normal => Orientation::Rotated,
            Orientation::Rotated => Orientation::Normal,
        };
        (self.config.turned_round_anywhere
            && !self.game_over
            && orient(raw, turned) == *self.position().board())
        .then_some(turned)
    }

    /// The start placement seen in `seen_as`: orientation change on a fresh board, a new game
    /// on a board that had one. `None` when it is an ordinary placement.
    fn on_start_placement(
        &mut self,
        seen_as: Orientation,
        raw: &Board,
        seq: Seq,
    ) -> Option<Vec<Output>> {
        let fresh = self.current == ROOT && *self.start_position() == Chess::default();
        if fresh {
            if seen_as == self.orientation {
                return None;
            }
            self.orientation = seen_as;
            self.clear_tracking();
            return Some(vec![Output::OrientationChanged {
                orientation: seen_as,
                basis: vec![seq],
            }]);
        }
        let ply = self.nodes[self.current].ply;
        if !self.game_over && ply < self.config.new_game_min_plies {
            return None;
        }
        if seen_as == self.orientation {
            // Knights going back and forth reach the start placement by legal moves.
            let board = orient(raw, seen_as);
            if let Some(&id) = self.index.get(&board)
                && self.nodes[id].parent == Some(self.current)
            {
                return None;
            }
        }
        self.orientation = seen_as;
        self.reset_graph(Chess::default());
        self.clear_tracking();
        self.signal = None;
        self.game_over = false;
        Some(vec![Output::NewGame {
            orientation: seen_as,
            basis: vec![seq],
        }])
    }

    fn on_back_to_current(&mut self, board: &Board, seq: Seq, out: &mut Vec<Output>) {
        let ghost = match &self.pending {
            Some(pending) if !pending.reported && pending.updates == 1 => {
                let current = self.position().board();
                // A piece showing where the position has none (or another piece): not a hand.
                let appeared = pending
                    .placement
                    .iter()
                    .any(|(sq, piece)| current.piece_at(sq) != Some(piece));
                appeared.then(|| Output::GhostIgnored {
                    placement: pending.placement.clone(),
                    basis: pending.seqs.iter().copied().chain([seq]).collect(),
                })
            }
            _ => None,
        };
        match ghost {
            Some(ghost) => out.push(ghost),
            None => {
                self.finish_pending(seq, out);
                out.extend(self.touches());
            }
        }
        debug_assert_eq!(board, self.position().board());
        self.clear_tracking();
    }

    fn finish_pending(&mut self, seq: Seq, out: &mut Vec<Output>) {
        if let Some(pending) = self.pending.take()
            && pending.reported
        {
            out.push(Output::IrregularityCleared { basis: vec![seq] });
        }
    }

    fn track_changes(&mut self, previous: &Board, board: &Board, seq: Seq) {
        for square in Square::ALL {
            let (before, after) = (previous.piece_at(square), board.piece_at(square));
            if before == after {
                continue;
            }
            if let Some(piece) = before {
                push_bounded(&mut self.lifts, SquareChange { square, piece, seq });
            }
            if let Some(piece) = after {
                push_bounded(&mut self.places, SquareChange { square, piece, seq });
            }
        }
    }

    /// Touch evidence since the last matched placement: each lifted piece and where it went.
    fn touches(&self) -> Vec<Output> {
        let mut used = vec![false; self.places.len()];
        self.lifts
            .iter()
            .map(|lift| {
                let landing = self.places.iter().enumerate().find(|(i, place)| {
                    !used[*i] && place.piece == lift.piece && place.seq >= lift.seq
                });
                match landing {
                    Some((i, place)) => {
                        used[i] = true;
                        Output::Touch {
                            piece: lift.piece,
                            from: lift.square,
                            to: Some(place.square),
                            basis: dedup(vec![lift.seq, place.seq]),
                        }
                    }
                    None => Output::Touch {
                        piece: lift.piece,
                        from: lift.square,
                        to: None,
                        basis: vec![lift.seq],
                    },
                }
            })
            .collect()
    }

    /// Makes `target` the current node and reports the moves that changed.
    fn move_to(&mut self, target: NodeId, seq: Seq, out: &mut Vec<Output>) {
        let old = self.current;
        let ancestor = self.common_ancestor(old, target);
        let undone = self.path_to(old, ancestor);
        let mut added = self.path_to(target, ancestor);
        added.reverse();
        let confirmed = undone
            .iter()
            .filter(|&&n| self.nodes[n].ply <= self.confirmed_plies)
            .count();
        let basis = self.run.clone();
        let undone_moves: Vec<PlyMove> = undone.iter().map(|&n| self.ply_move(n)).collect();
        let added_moves: Vec<PlyMove> = added.iter().map(|&n| self.ply_move(n)).collect();

        if undone_moves.len() == 1 && added_moves.len() == 1 && confirmed == 0 {
            out.push(Output::ProvisionalRevised {
                from_move: undone_moves[0].clone(),
                to_move: added_moves[0].clone(),
                basis,
            });
        } else {
            if !undone_moves.is_empty() {
                out.push(Output::Takeback {
                    undone: undone_moves,
                    confirmed,
                    basis: basis.clone(),
                });
            }
            for mv in added_moves {
                out.push(Output::MoveProvisional {
                    mv,
                    basis: basis.clone(),
                });
            }
        }
        // Successors of abandoned provisional nodes stay out of reach: a lifted piece could
        // otherwise match the continuation of a revised move (a queen seen on b6 on its way to
        // b7, then lifted from b7, looks like Qb6 Bxb6). They come back if the node is reached
        // again. A confirmed move's successors stay: the game's completed moves stand until an
        // arbiter decides otherwise, so a board that shows the game going on from them (the
        // placement that took them back was a misread or a stray hand) is back on the game.
        for &n in &undone {
            let confirmed = self.nodes[n].ply <= self.confirmed_plies;
            if !(confirmed && self.config.confirmed_line_stays_reachable) {
                self.unindex_children(n);
            }
        }
        self.confirmed_plies = self.confirmed_plies.min(self.nodes[ancestor].ply);
        for &n in &added {
            self.nodes[n].reached_seq = Some(seq);
        }
        self.current = target;
        self.expand(target);
    }

    /// Tries to explain the pending placement by several missed moves.
    /// `Err(ambiguous)` when no unique sequence explains the placement.
    fn try_reconstruct(
        &mut self,
        last_mover: Option<Color>,
        seq: Seq,
        out: &mut Vec<Output>,
    ) -> Result<(), bool> {
        let Some(pending) = self.pending.as_mut() else {
            return Ok(());
        };
        if pending.reconstruction_tried == Some(last_mover) {
            return Err(false);
        }
        pending.reconstruction_tried = Some(last_mover);
        let target = pending.placement.clone();
        let mut basis = pending.seqs.clone();
        basis.push(seq);
        let result = reconstruct(
            self.position(),
            &target,
            self.config.max_reconstruct_plies,
            last_mover,
            self.config.reconstruct_budget,
        );
        match result {
            Reconstruction::Unique(moves) => {
                let mut at = self.current;
                for m in moves {
                    at = self.child_by_move(at, m);
                    self.nodes[at].reached_seq = Some(seq);
                }
                let added = {
                    let mut path = self.path_to(at, self.current);
                    path.reverse();
                    path
                };
                self.pending = None;
                out.extend(self.touches());
                out.push(Output::Reconstructed {
                    moves: added.iter().map(|&n| self.ply_move(n)).collect(),
                    basis,
                });
                self.current = at;
                self.expand(at);
                self.clear_tracking();
                Ok(())
            }
            Reconstruction::Ambiguous => Err(true),
            Reconstruction::NotFound => Err(false),
        }
    }

    fn report_irregularity(
        &mut self,
        cause: IrregularityCause,
        ambiguous: bool,
        seq: Seq,
    ) -> Option<Output> {
        let pending = self.pending.as_mut()?;
        if pending.reported {
            return None;
        }
        pending.reported = true;
        Some(Output::Irregularity {
            placement: pending.placement.clone(),
            cause,
            ambiguous,
            basis: pending.seqs.iter().copied().chain([seq]).collect(),
        })
    }

    fn on_clock_press(&mut self, side: Color, seq: Seq, time_ms: i64) -> Vec<Output> {
        let mut out = Vec::new();
        if let Some(press) = self.deferred_press.take() {
            out.extend(self.settle_press(press.side, press.seq));
        }
        if self.pending.is_some() && self.config.press_grace_ms > 0 && !self.game_over {
            self.deferred_press = Some(DeferredPress { side, seq, time_ms });
            return out;
        }
        out.extend(self.settle_press(side, seq));
        out
    }

    /// What a clock press by `side` means for the board as it is now.
    fn settle_press(&mut self, side: Color, seq: Seq) -> Vec<Output> {
        let mut out = Vec::new();
        // After a result the board is being cleared or reset: nothing there is irregular.
        if self.game_over {
            return out;
        }
        if self.pending.is_some()
            && let Err(ambiguous) = self.try_reconstruct(Some(side), seq, &mut out)
        {
            let cause = IrregularityCause::ClockPressed { side };
            out.extend(self.report_irregularity(cause, ambiguous, seq));
            return out;
        }
        let ply = self.nodes[self.current].ply;
        if self.position().turn() == side {
            out.push(Output::ClockPressWithoutMove {
                side,
                basis: vec![seq],
            });
            return out;
        }
        let mut unconfirmed = self.path_to(self.current, ROOT);
        unconfirmed.retain(|&n| self.nodes[n].ply > self.confirmed_plies);
        unconfirmed.reverse();
        for n in unconfirmed {
            let basis = self.nodes[n].reached_seq.into_iter().chain([seq]).collect();
            out.push(Output::MoveConfirmed {
                mv: self.ply_move(n),
                basis,
            });
        }
        self.confirmed_plies = ply;
        self.prune();
        out
    }

    /// Whether a clock tick at `time_ms` would conclude nothing (`observe` would return no
    /// output): the common case, answered without running it, for callers that would otherwise
    /// run it on a copy of the engine to find out.
    pub fn tick_would_be_idle(&self, time_ms: i64) -> bool {
        self.due_press(time_ms).is_none() && self.quiet_period_continues(time_ms)
    }

    /// The deferred press whose grace period is over at `time_ms`.
    fn due_press(&self, time_ms: i64) -> Option<DeferredPress> {
        self.deferred_press
            .filter(|press| time_ms.saturating_sub(press.time_ms) > self.config.press_grace_ms)
    }

    /// Whether the unmatched placement (if any) is still within its quiet period at `time_ms`,
    /// or is not to be reported at all.
    fn quiet_period_continues(&self, time_ms: i64) -> bool {
        let Some(pending) = &self.pending else {
            return true;
        };
        self.game_over
            || pending.reported
            || time_ms.saturating_sub(pending.last_change_ms) < self.config.quiet_ms
            // A player may hold a piece while thinking; only the clock press makes that
            // irregular.
            || is_subset(&pending.placement, self.position().board())
    }

    fn on_tick(&mut self, seq: Seq, time_ms: i64) -> Vec<Output> {
        let mut out = Vec::new();
        if self.quiet_period_continues(time_ms) {
            return out;
        }
        let Some(pending) = &self.pending else {
            return out;
        };
        let unmatched_for_ms = time_ms.saturating_sub(pending.last_change_ms);
        if let Err(ambiguous) = self.try_reconstruct(None, seq, &mut out) {
            let cause = IrregularityCause::Quiet { unmatched_for_ms };
            out.extend(self.report_irregularity(cause, ambiguous, seq));
        }
        out
    }
}

fn push_bounded<T>(items: &mut Vec<T>, item: T) {
    if items.len() >= MAX_TRACKED {
        items.remove(0);
    }
    items.push(item);
}

fn dedup(mut seqs: Vec<Seq>) -> Vec<Seq> {
    seqs.dedup();
    seqs
}

/// The board read in `orientation` (rotating is its own inverse).
fn orient(board: &Board, orientation: Orientation) -> Board {
    let mut board = board.clone();
    if orientation == Orientation::Rotated {
        board.rotate_180();
    }
    board
}

/// In which orientation `raw` shows the standard start position, if any.
fn start_orientation(raw: &Board) -> Option<Orientation> {
    let start = Board::new();
    [Orientation::Normal, Orientation::Rotated]
        .into_iter()
        .find(|&o| orient(raw, o) == start)
}

/// Every piece of `part` stands on the same square in `whole`, and some are missing.
fn is_subset(part: &Board, whole: &Board) -> bool {
    part.occupied().count() < whole.occupied().count()
        && part
            .iter()
            .all(|(sq, piece)| whole.piece_at(sq) == Some(piece))
}
