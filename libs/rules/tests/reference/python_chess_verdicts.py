#!/usr/bin/env python3
"""python-chess's repetition and move-rule verdicts, per ply, for the differential tests.

Input (stdin, JSON): {"games": [{"fen": "<FEN or null>", "moves": ["e2e4", ...]}, ...]}
Output (stdout, JSON): {"chess_version": "...", "elapsed_s": <seconds>, "games": [[<ply 0>, ...], ...]}
(`elapsed_s`: the time python-chess took for the verdicts alone, without reading and writing JSON,
for the benchmark against the rules library)
where each ply object holds python-chess's answers for the position after that ply:
  count           - occurrences of the position so far, by python-chess's transposition key
                    (the identity of Article 9.2 since 2009: pieces, turn, castling rights,
                    en passant only when legal)
  threefold_board - board.is_repetition(3)
  threefold_claim - board.can_claim_threefold_repetition() (includes the intended-move variant)
  fifty_board     - board.is_fifty_moves() (halfmove clock >= 100 and a legal move exists)
  fifty_claim     - board.can_claim_fifty_moves() (includes the intended-move variant)
  fivefold        - board.is_fivefold_repetition()
  seventyfive     - board.is_seventyfive_moves()
"""
import collections
import json
import sys
import time

import chess


def verdicts(board, counts):
    key = board._transposition_key()
    return {
        "count": counts[key],
        "threefold_board": board.is_repetition(3),
        "threefold_claim": board.can_claim_threefold_repetition(),
        "fifty_board": board.is_fifty_moves(),
        "fifty_claim": board.can_claim_fifty_moves(),
        "fivefold": board.is_fivefold_repetition(),
        "seventyfive": board.is_seventyfive_moves(),
    }


def run_game(game):
    fen = game.get("fen")
    board = chess.Board(fen) if fen else chess.Board()
    counts = collections.Counter([board._transposition_key()])
    plies = [verdicts(board, counts)]
    for uci in game["moves"]:
        board.push(chess.Move.from_uci(uci))
        counts[board._transposition_key()] += 1
        plies.append(verdicts(board, counts))
    return plies


def main():
    request = json.load(sys.stdin)
    started = time.perf_counter()
    games = [run_game(game) for game in request["games"]]
    elapsed = time.perf_counter() - started
    json.dump({"chess_version": chess.__version__, "elapsed_s": elapsed, "games": games}, sys.stdout)


if __name__ == "__main__":
    main()
