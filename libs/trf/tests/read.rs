//! Reading Tournament Report Files as pairing programs write them: a Swiss-Manager export with
//! JaVaFo's `XXR` line (JaVaFo's own sample), a TRF-26 team event (the Grandmommy's Cup of the
//! TRF-26 examples), a bbpPairings test file; and malformed copies of them refused with the
//! line and column at fault.

use boardcast_trf::{ByeKind, Colour, RoundPairings, Title, TrfError, TrfFile};

fn bytes(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/files/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn read(name: &str) -> TrfFile {
    TrfFile::parse_bytes(&bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn text(name: &str) -> String {
    String::from_utf8(bytes(name)).expect("UTF-8")
}

/// Every game of the round is the file's: White's record names Black with `w` in that round,
/// Black's names White with `b`; and every player is in exactly one place of the round.
fn assert_round_is_the_file(file: &TrfFile, pairings: &RoundPairings) {
    let round = pairings.round;
    let mut placed = Vec::new();
    for table in &pairings.tables {
        let white = file.players[&table.white]
            .round(round)
            .expect("white's round");
        let black = file.players[&table.black]
            .round(round)
            .expect("black's round");
        assert_eq!(
            (white.opponent, white.colour),
            (Some(table.black), Some(Colour::White))
        );
        assert_eq!(
            (black.opponent, black.colour),
            (Some(table.white), Some(Colour::Black))
        );
        placed.extend([table.white, table.black]);
    }
    for forfeit in &pairings.forfeits {
        placed.extend([forfeit.white, forfeit.black]);
    }
    placed.extend(pairings.byes.iter().map(|b| b.player));
    placed.extend(&pairings.not_paired);
    placed.sort_unstable();
    let all: Vec<u32> = file.players.keys().copied().collect();
    assert_eq!(placed, all, "round {round}: every player once");
    // Tables numbered from 1, a forfeit keeping its own; without a gap, but in a team event,
    // where a board left empty keeps its table in its match's.
    let mut numbers: Vec<u32> = pairings.tables.iter().map(|t| t.table).collect();
    numbers.extend(pairings.forfeits.iter().map(|f| f.table));
    numbers.sort_unstable();
    if pairings.matches.is_empty() {
        assert_eq!(
            numbers,
            (1..=(pairings.tables.len() + pairings.forfeits.len()) as u32).collect::<Vec<_>>()
        );
    } else {
        numbers.dedup();
        assert_eq!(
            numbers.len(),
            pairings.tables.len() + pairings.forfeits.len()
        );
        for table in &pairings.tables {
            assert!(
                pairings
                    .matches
                    .iter()
                    .any(|m| (m.first_table..=m.last_table).contains(&table.table)),
                "round {round}: table {} in no match",
                table.table
            );
        }
    }
}

#[test]
fn a_swiss_manager_export_with_javafos_lines_is_read_whole() {
    let file = read("javafo_sample2.trf");
    assert!(file.notes.is_empty(), "{:?}", file.notes);
    let t = &file.tournament;
    assert_eq!(t.name, "XX Open Internacional de Gros");
    assert_eq!(t.city, "Donostia");
    assert_eq!(t.start.map(|d| d.pgn()).as_deref(), Some("2010.09.24"));
    assert_eq!(t.end.map(|d| d.pgn()).as_deref(), Some("2010.10.02"));
    assert_eq!(t.rounds, Some(9));
    assert_eq!(file.players.len(), 52);
    let first = &file.players[&1];
    assert_eq!(
        (
            first.title,
            first.name.as_str(),
            first.rating,
            first.federation.as_str()
        ),
        (Some(Title::GM), "Mirzoev Azer", Some(2527), "AZE")
    );
    assert_eq!(first.fide_id, "13400304");
    // JaVaFo's one-letter titles; an unrated player without a FIDE id.
    assert_eq!(file.players[&2].title, Some(Title::IM));
    assert_eq!(file.players[&3].title, Some(Title::FM));
    assert_eq!(
        (file.players[&6].rating, file.players[&6].fide_id.as_str()),
        (None, "")
    );
    for round in 1..=4 {
        assert_round_is_the_file(&file, &file.round(round).expect("paired"));
    }
    let first_round = file.round(1).expect("round 1");
    assert_eq!(first_round.tables.len(), 22);
    // Before the first round every score is 0: boards follow the better starting rank.
    assert_eq!(
        (first_round.tables[0].white, first_round.tables[0].black),
        (1, 26)
    );
    assert_eq!(
        (first_round.tables[1].white, first_round.tables[1].black),
        (27, 2)
    );
    // Forfeits keep the tables the pairing program printed them on (the better rank's: 13,
    // 16, 20), and the games after them stay on theirs.
    let forfeited: Vec<(u32, u32, u32)> = first_round
        .forfeits
        .iter()
        .map(|f| (f.table, f.white, f.black))
        .collect();
    assert_eq!(forfeited, [(13, 13, 39), (16, 42, 16), (20, 46, 20)]);
    assert_eq!(first_round.table_count(), 25);
    let fourteenth = first_round.tables.iter().find(|t| t.table == 14);
    assert_eq!(fourteenth.map(|t| t.white.min(t.black)), Some(14));
    let byes: Vec<(u32, ByeKind)> = first_round
        .byes
        .iter()
        .map(|b| (b.player, b.kind))
        .collect();
    assert_eq!(
        byes,
        [(28, ByeKind::ZeroPoint), (52, ByeKind::PairingAllocated)]
    );
    // Round 4: the three pairs of players on 3 points first, by the better starting rank.
    let fourth = file.round(4).expect("round 4");
    let top: Vec<(u32, u32)> = fourth.tables[..3]
        .iter()
        .map(|t| (t.white, t.black))
        .collect();
    assert_eq!(top, [(4, 1), (2, 5), (6, 3)]);
    assert!(
        fourth
            .byes
            .iter()
            .any(|b| b.player == 29 && b.kind == ByeKind::HalfPoint),
        "{:?}",
        fourth.byes
    );
    // Round 5 has byes announced and no pairings yet.
    let missing = file.round(5).expect_err("not paired");
    assert!(
        missing.to_string().contains("last round paired in it: 4"),
        "{missing}"
    );
}

#[test]
fn a_trf26_team_event_is_read_with_its_teams_matches_and_line_ups() {
    let file = read("grandmommyscup.trf");
    assert!(file.notes.is_empty(), "{:?}", file.notes);
    let t = &file.tournament;
    assert_eq!(t.name, "Grandmommy's Cup");
    assert_eq!(t.rounds, Some(14));
    assert_eq!(t.time_control, "40/6000+30:20/3000+30:1500+30");
    assert_eq!(t.team_board_colours, "WBWB");
    assert_eq!(
        t.round_dates
            .first()
            .copied()
            .flatten()
            .map(|d| d.pgn())
            .as_deref(),
        Some("2024.12.01")
    );
    assert_eq!(file.players.len(), 249);
    assert_eq!(
        file.teams.len(),
        50,
        "the 310 records, not the older 013 ones as well"
    );
    let india = &file.teams[0];
    assert_eq!(
        (india.number, india.name.as_str(), india.nickname.as_str()),
        (1, "India", "IND")
    );
    assert_eq!(india.players, [1, 5, 15, 28, 44]);
    assert_eq!(file.line_ups.len(), 141);
    for round in 1..=7 {
        let pairings = file.round(round).expect("paired");
        assert_round_is_the_file(&file, &pairings);
        // Four tables a match (the file's `352 WBWB`), one after another: a board left empty
        // keeps its table.
        for (index, m) in pairings.matches.iter().enumerate() {
            assert_eq!(
                (m.first_table, m.last_table),
                (4 * index as u32 + 1, 4 * index as u32 + 4),
                "round {round}: {m:?}"
            );
        }
    }
    let first = file.round(1).expect("round 1");
    let team_byes: Vec<(u32, ByeKind)> = first.team_byes.iter().map(|b| (b.team, b.kind)).collect();
    assert_eq!(
        team_byes,
        [(3, ByeKind::FullPoint), (39, ByeKind::HalfPoint)]
    );
    // India's match: its boards in India's order, colours alternating from board 1.
    let india_match = first
        .matches
        .iter()
        .find(|m| m.first_team == 1 || m.second_team == 1)
        .expect("India plays round 1");
    let boards = &first.tables[..]
        .iter()
        .filter(|t| (india_match.first_table..=india_match.last_table).contains(&t.table))
        .copied()
        .collect::<Vec<_>>();
    let india_players: Vec<u32> = boards
        .iter()
        .map(|t| {
            if india.players.contains(&t.white) {
                t.white
            } else {
                t.black
            }
        })
        .collect();
    assert_eq!(india_players, [1, 5, 15, 28]);
    let india_white: Vec<bool> = boards
        .iter()
        .map(|t| india.players.contains(&t.white))
        .collect();
    assert_eq!(india_white, [false, true, false, true]);
}

#[test]
fn a_bbppairings_test_file_is_read() {
    let file = read("dutch_2025_C5.trf");
    assert_eq!(file.players.len(), 6);
    let second = file.round(2).expect("round 2");
    assert_round_is_the_file(&file, &second);
    let games: Vec<(u32, u32)> = second.tables.iter().map(|t| (t.white, t.black)).collect();
    assert_eq!(games, [(2, 1), (4, 3), (6, 5)]);
}

#[test]
fn line_ends_encodings_and_unknown_records_change_nothing_but_notes() {
    let crlf = read("javafo_sample2.trf");
    let lf = TrfFile::parse(&text("javafo_sample2.trf").replace("\r\n", "\n")).expect("LF");
    let json = |f: &TrfFile| serde_json::to_value((&f.tournament, &f.players)).expect("JSON");
    assert_eq!(json(&crlf), json(&lf));
    // Latin-1, as some programs still write names.
    let mut latin1 = bytes("javafo_sample2.trf");
    let at = latin1
        .windows(5)
        .position(|w| w == b"Azer ")
        .expect("the name");
    latin1[at + 4] = 0xE9;
    let read = TrfFile::parse_bytes(&latin1).expect("Latin-1");
    assert_eq!(read.players[&1].name, "Mirzoev Azeré");
    assert!(read.notes[0].text.contains("Latin-1"), "{:?}", read.notes);
    let with_unknown =
        text("javafo_sample2.trf").replace("XXR 9", "XXR 9\r\n999 a record of another program");
    let read = TrfFile::parse(&with_unknown).expect("unknown records are skipped");
    assert_eq!(read.notes.len(), 1);
    assert_eq!(read.notes[0].line, 14);
    assert!(read.notes[0].text.contains("\"999\""), "{:?}", read.notes);
}

/// The file with `line` (1-based) replaced by what `edit` makes of it.
fn edited(line: usize, edit: impl Fn(&str) -> String) -> String {
    text("javafo_sample2.trf")
        .split("\r\n")
        .enumerate()
        .map(|(i, l)| if i + 1 == line { edit(l) } else { l.to_owned() })
        .collect::<Vec<_>>()
        .join("\r\n")
}

fn refused(text: &str) -> (usize, usize, String) {
    match TrfFile::parse(text) {
        Err(TrfError::At {
            line,
            column,
            message,
        }) => (line, column, message),
        other => panic!("expected a refusal at a line and column, got {other:?}"),
    }
}

#[test]
fn malformed_files_are_refused_with_the_line_and_column_at_fault() {
    // Player 10 (line 23) cut short inside round 2's block, after the opponent.
    let (line, column, message) = refused(&edited(23, |l| l[..105].to_owned()));
    assert_eq!((line, column), (23, 107), "{message}");
    assert!(message.contains("cut short"), "{message}");
    // Player 1's first opponent is no player.
    let (line, column, message) =
        refused(&edited(14, |l| l.replacen("    26 w 1", "    99 w 1", 1)));
    assert_eq!((line, column), (14, 92), "{message}");
    assert!(message.contains("opponent 99"), "{message}");
    // Player 26 (line 39) says White in round 1 too.
    let (line, column, message) =
        refused(&edited(39, |l| l.replacen("     1 b 0", "     1 w 0", 1)));
    assert_eq!((line, column), (14, 97), "{message}");
    assert!(message.contains("both 1 and 26"), "{message}");
    // Player 26 names someone else in round 1.
    let (line, _, message) = refused(&edited(39, |l| l.replacen("     1 b 0", "     2 b 0", 1)));
    assert_eq!(line, 14, "{message}");
    // A result code that is none.
    let (line, column, message) =
        refused(&edited(14, |l| l.replacen("    26 w 1", "    26 w x", 1)));
    assert_eq!((line, column), (14, 99), "{message}");
    // Two players with one starting rank.
    let (line, column, _) = refused(&edited(15, |l| l.replacen("001    2", "001    1", 1)));
    assert_eq!((line, column), (15, 5));
}

#[test]
fn the_players_and_teams_are_written_as_lichess_takes_them() {
    let file = read("javafo_sample2.trf");
    let players = boardcast_trf::lichess_players(&file);
    let lines: Vec<&str> = players.lines().collect();
    assert_eq!(lines.len(), 52);
    assert_eq!(lines[0], "Mirzoev Azer / 13400304 / GM");
    assert_eq!(lines[3], "Guijarro Galan Jose Luis / 32004478");
    // No FIDE id: the rating and title as the file has them.
    assert_eq!(lines[5], "Gorrochategui Torres, Eugenio");
    let team_event = read("grandmommyscup.trf");
    let teams = boardcast_trf::lichess_teams(&team_event);
    let lines: Vec<&str> = teams.lines().collect();
    assert_eq!(
        lines.len(),
        team_event
            .teams
            .iter()
            .map(|t| t.players.len())
            .sum::<usize>()
    );
    assert_eq!(lines[0], "India; 70123454321");
    assert!(
        boardcast_trf::lichess_teams(&file).is_empty(),
        "no teams, no lines"
    );
}

/// A `001` record with its round blocks (opponent, colour, result).
fn player_line(rank: u32, name: &str, rounds: &[(u32, char, char)]) -> String {
    let mut line = format!(
        "001 {rank:>4}      {name:<33} 2000 ESP {:>11} {:<10} {:>4} {:>4}",
        "", "", "", ""
    );
    for (opponent, colour, result) in rounds {
        line.push_str(&format!("  {opponent:>4} {colour} {result}"));
    }
    line
}

#[test]
fn ties_are_broken_by_the_rank_of_the_pairs_higher_player() {
    // After round 1: 1 lost to 5 (5 has 1 point), 10 beat 6 (10 has 1 point). Round 2 pairs 1
    // (0) with 10 (1), and 5 (1) with 6 (0): equal highest scores and sums; the higher players
    // are 10 and 5, so 5's game is board 1.
    let text = [
        player_line(1, "One", &[(5, 'w', '0'), (10, 'w', ' ')]),
        player_line(5, "Five", &[(1, 'b', '1'), (6, 'w', ' ')]),
        player_line(6, "Six", &[(10, 'w', '0'), (5, 'b', ' ')]),
        player_line(10, "Ten", &[(6, 'b', '1'), (1, 'b', ' ')]),
    ]
    .join("\n");
    let file = TrfFile::parse(&text).expect("reads");
    let second = file.round(2).expect("round 2");
    let games: Vec<(u32, u32)> = second.tables.iter().map(|t| (t.white, t.black)).collect();
    assert_eq!(games, [(5, 6), (1, 10)]);
}

#[test]
fn windows_1252_names_and_blank_colours_are_read_as_meant() {
    let mut bytes = bytes("javafo_sample2.trf");
    let at = bytes
        .windows(5)
        .position(|w| w == b"Azer ")
        .expect("the name");
    bytes[at] = 0x8A; // Š in Windows-1252
    let file = TrfFile::parse_bytes(&bytes).expect("reads");
    assert_eq!(file.players[&1].name, "Mirzoev Šzer");
    assert_eq!(
        boardcast_trf::encode_windows_1252(&boardcast_trf::decode_windows_1252(&bytes)),
        bytes
    );
    // A game without its colour (a line shifted by a column) is refused, not read as colourless.
    let (line, column, message) =
        refused(&edited(14, |l| l.replacen("    26 w 1", "    26   1", 1)));
    assert_eq!((line, column), (14, 97), "{message}");
}

/// Eight players of four clubs (`013` records, as pairing programs write them for club prizes
/// in an individual open), round 1 paired top half against bottom half.
fn club_open(kind_line: &str, clubs: &[&str]) -> String {
    let mut text = format!("012 Club Open\n022 Town\n{kind_line}XXR 5\n");
    for (rank, (opponent, colour)) in [
        (5, 'w'),
        (6, 'b'),
        (7, 'w'),
        (8, 'b'),
        (1, 'b'),
        (2, 'w'),
        (3, 'b'),
        (4, 'w'),
    ]
    .into_iter()
    .enumerate()
    {
        let rank = rank + 1;
        // Columns as TRF16 has them: name from 15, rating 49–52, FIDE id to 68, points 81–84,
        // the first round's opponent 92–95 and colour 97.
        text += &format!(
            "001 {rank:>4} m    {:<33} {:>4} ESP {:>11} {:<10} {:>4} {:>4}  {opponent:>4} {colour}\n",
            format!("Player{rank}, X"),
            2450 - 50 * (rank - 1),
            1000 + rank,
            "1980",
            "0.0",
            ""
        );
    }
    for club in clubs {
        text += &format!("{club}\n");
    }
    text
}

#[test]
fn clubs_of_an_individual_open_do_not_make_a_team_event() {
    let paired_as_published = [(1, 5), (6, 2), (3, 7), (8, 4)];
    let four_clubs = [
        "013 Club A                             1    8",
        "013 Club B                             2    7",
        "013 Club C                             3    6",
        "013 Club D                             4    5",
    ];
    // The type of tournament says so: individual, whatever the clubs' games look like.
    let declared =
        TrfFile::parse(&club_open("092 Individual: Swiss-System\n", &four_clubs)).expect("read");
    assert_eq!(declared.tournament.kind, "Individual: Swiss-System");
    let round = declared.round(1).expect("round 1");
    assert!(round.matches.is_empty());
    let games: Vec<(u32, u32)> = round.tables.iter().map(|t| (t.white, t.black)).collect();
    assert_eq!(games, paired_as_published);
    // Without it, clubs whose players meet several clubs are clubs.
    let uneven = TrfFile::parse(&club_open(
        "",
        &[
            "013 Club A                             1    2    3",
            "013 Club B                             4    5    6",
            "013 Club C                             7    8",
        ],
    ))
    .expect("read");
    let round = uneven.round(1).expect("round 1");
    assert!(round.matches.is_empty());
    let games: Vec<(u32, u32)> = round.tables.iter().map(|t| (t.white, t.black)).collect();
    assert_eq!(games, paired_as_published);
    // With nothing else to go on, teams meeting team against team on several boards are a team
    // event's matches; a team event's file says so (`092`, or TRF-26's `310` records).
    let undeclared = TrfFile::parse(&club_open("", &four_clubs)).expect("read");
    assert_eq!(undeclared.round(1).expect("round 1").matches.len(), 2);
    let team = TrfFile::parse(&club_open("092 Team Swiss\n", &four_clubs)).expect("read");
    assert_eq!(team.round(1).expect("round 1").matches.len(), 2);
}

#[test]
fn a_team_events_matches_are_listed_by_standings() {
    let file = read("grandmommyscup.trf");
    let team_of = |rank: u32| file.teams.iter().find(|t| t.players.contains(&rank));
    // A team's game points in a round, boards the other team left empty included (`0000 - +`),
    // and the team it met: a player's opponent's, or its line-up's.
    let scored = |team: u32, round: u32| -> (u32, Option<u32>) {
        let players = &file
            .teams
            .iter()
            .find(|t| t.number == team)
            .expect("the team")
            .players;
        let mut points = 0;
        let mut met = file
            .line_ups
            .iter()
            .find(|l| l.round == round && l.team == team)
            .map(|l| l.opponent);
        for &rank in players {
            let Some(entry) = file.players[&rank].round(round) else {
                continue;
            };
            points += entry.outcome.map_or(0, |o| o.half_points());
            if let Some(other) = entry.opponent.and_then(team_of) {
                met = Some(other.number);
            }
        }
        (points, met)
    };
    // Match points before each round, from the file's own results (won 2, drawn 1, lost 0).
    for round in 2..=7 {
        let pairings = file.round(round).expect("paired");
        let points_of = |team: u32| -> u32 {
            (1..round)
                .map(|earlier| {
                    let bye = file
                        .byes
                        .iter()
                        .find(|b| b.round == earlier && b.id == team)
                        .map(|b| match b.kind {
                            ByeKind::FullPoint | ByeKind::PairingAllocated => 2,
                            ByeKind::HalfPoint => 1,
                            ByeKind::ZeroPoint => 0,
                        });
                    let (own, met) = scored(team, earlier);
                    let theirs = met.map_or(0, |other| scored(other, earlier).0);
                    match bye {
                        Some(points) => points,
                        None if own + theirs == 0 => 0,
                        None => match own.cmp(&theirs) {
                            std::cmp::Ordering::Greater => 2,
                            std::cmp::Ordering::Equal => 1,
                            std::cmp::Ordering::Less => 0,
                        },
                    }
                })
                .sum()
        };
        let leading: Vec<(u32, u32)> = pairings
            .matches
            .iter()
            .map(|m| {
                let (a, b) = (points_of(m.first_team), points_of(m.second_team));
                (a.max(b), a + b)
            })
            .collect();
        let mut sorted = leading.clone();
        sorted.sort_by(|x, y| y.cmp(x));
        assert_eq!(leading, sorted, "round {round}: the top match first");
    }
}

#[test]
fn a_utf16_file_or_one_without_players_is_refused_with_why() {
    let text = "012 Open\r\n001    1 m    Player1, X                        2450 ESP        1001 1980        0.0\r\n";
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let refused = TrfFile::parse_bytes(&utf16).expect_err("UTF-16");
    assert!(refused.to_string().contains("UTF-16"), "{refused}");
    let refused = TrfFile::parse("012 Open\n022 Town\n").expect_err("no players");
    assert!(
        refused.to_string().contains("no player record"),
        "{refused}"
    );
    assert!(TrfFile::parse_bytes(text.as_bytes()).is_ok());
}

#[test]
fn a_round_date_outside_the_tournaments_is_said_and_not_used() {
    let player =
        "001    1 m    Player1, X                        2450 ESP        1001 1980        0.0";
    let with_dates = |dates: &str| {
        format!(
            "012 Open\n042 2026/01/10\n052 2026/01/18\n{:<91}{dates}\n{player}\n",
            "132"
        )
    };
    // YY/MM/DD as the record has it: used.
    let file = TrfFile::parse(&with_dates("26/01/10  26/01/11")).expect("reads");
    let dates: Vec<Option<String>> = file
        .tournament
        .round_dates
        .iter()
        .map(|d| d.map(|d| d.pgn()))
        .collect();
    assert_eq!(
        dates,
        [Some("2026.01.10".to_owned()), Some("2026.01.11".to_owned())]
    );
    // Day/month/year, and a date longer than its 8 columns: they read as 2012, and are not
    // used.
    let file = TrfFile::parse(&with_dates("12/01/26  12.01.2026")).expect("reads");
    assert_eq!(file.tournament.round_dates, [None, None]);
    assert_eq!(
        file.notes
            .iter()
            .filter(|n| n.text.contains("outside the tournament's dates"))
            .count(),
        2,
        "{:?}",
        file.notes
    );
}

/// A player record with `blocks` as its round blocks (`"   3 w 1"` …), columns as TRF16 has them.
fn player_with_blocks(rank: u32, blocks: &[&str]) -> String {
    let mut line = format!(
        "001 {rank:>4} m    {:<33} {:>4} ESP {:>11} {:<10} {:>4} {:>4}  ",
        format!("Player{rank}, X"),
        2400 - 10 * rank,
        1000 + rank,
        "1980",
        "0.0",
        ""
    );
    line += &blocks.join("  ");
    line
}

#[test]
fn older_byes_and_forfeits_without_colours_are_read() {
    // Round 1: 1–2 played; 3 and 4 forfeited without colours (nobody played); 5 has a bye written
    // the older way (`0000 - +`), 6 a half-point one (`0000 - =`).
    let lines = [
        player_with_blocks(1, &["   2 w 1"]),
        player_with_blocks(2, &["   1 b 0"]),
        player_with_blocks(3, &["   4 - +"]),
        player_with_blocks(4, &["   3 - -"]),
        player_with_blocks(5, &["0000 - +"]),
        player_with_blocks(6, &["0000 - ="]),
    ];
    let file = TrfFile::parse(&format!("012 Open\n{}\n", lines.join("\n"))).expect("reads");
    let round = file.round(1).expect("round 1");
    assert_eq!(round.tables.len(), 1);
    assert_eq!(
        round
            .forfeits
            .iter()
            .map(|f| (f.white.min(f.black), f.white.max(f.black)))
            .collect::<Vec<_>>(),
        [(3, 4)]
    );
    let byes: Vec<(u32, ByeKind)> = round.byes.iter().map(|b| (b.player, b.kind)).collect();
    assert_eq!(byes, [(5, ByeKind::FullPoint), (6, ByeKind::HalfPoint)]);
    assert!(round.not_paired.is_empty(), "{:?}", round.not_paired);
}

#[test]
fn a_team_boards_left_empty_keep_their_tables() {
    let file = read("grandmommyscup.trf");
    let mut gaps = 0;
    for round in 1..=7 {
        let pairings = file.round(round).expect("paired");
        for m in &pairings.matches {
            for table in m.first_table..=m.last_table {
                if pairings.tables.iter().any(|t| t.table == table) {
                    continue;
                }
                // No game at this table: the line-up the boards are placed by (the lower team
                // number's) has the board empty, or its player there had no opponent (the other
                // team left the board empty).
                gaps += 1;
                let board = (table - m.first_table) as usize;
                let team = m.first_team.min(m.second_team);
                let Some(line_up) = file
                    .line_ups
                    .iter()
                    .find(|l| l.round == round && l.team == team)
                else {
                    // Without a line-up the games take the match's first tables, in order.
                    assert!(
                        pairings
                            .tables
                            .iter()
                            .filter(|t| (table..=m.last_table).contains(&t.table))
                            .count()
                            == 0,
                        "round {round}: a game after the empty table {table} of {m:?}"
                    );
                    continue;
                };
                let player = line_up.players.get(board).copied().flatten();
                assert!(
                    player.is_none_or(|p| file.players[&p]
                        .round(round)
                        .is_none_or(|e| e.opponent.is_none())),
                    "round {round}, table {table}: {player:?} played"
                );
            }
        }
    }
    assert!(gaps > 0, "the file has boards left empty");
}

#[test]
fn a_team_record_whose_members_are_not_where_the_format_puts_them_is_noted() {
    let file = TrfFile::parse(&club_open(
        "092 Individual: Swiss-System\n",
        &["013 Club A  1    8"],
    ))
    .expect("reads");
    assert!(
        file.notes
            .iter()
            .any(|n| n.text.contains("team \"Club A  1    8\" has no member")),
        "{:?}",
        file.notes
    );
}
