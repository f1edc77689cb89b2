//! `boardcast pair`: a round set up from the Tournament Report File a pairing program exported
//! is the file's round — every game on its board with its players — and a file or command
//! that cannot be read as meant sets nothing up.

mod support;

use anyhow::Context as _;
use boardcast_access::{Grant, Role};
use boardcast_schema::game::v1::{GameResult, ListGamesRequest};
use boardcast_testkit::{GameService, TestNats, TestUsers, program, repo_root};
use boardcast_trf::TrfFile;

const TOURNAMENT: &str = "gros-2010";

fn trf(name: &str) -> std::path::PathBuf {
    repo_root().join("libs/trf/tests/files").join(name)
}

/// `boardcast pair` with `args`, as the operator whose token is given (none: no token).
fn pair(args: &[&str], token: Option<&str>) -> anyhow::Result<std::process::Output> {
    let mut command = std::process::Command::new(program("boardcast")?);
    command.arg("pair").args(args).env_remove("BOARDCAST_TOKEN");
    if let Some(token) = token {
        command.env("BOARDCAST_TOKEN", token);
    }
    Ok(command.output()?)
}

#[test]
fn a_dry_run_prints_the_round_without_a_system() -> anyhow::Result<()> {
    let file = trf("javafo_sample2.trf");
    let out = pair(
        &["--trf", file.to_str().unwrap_or_default(), "--round", "4"],
        None,
    )?;
    assert!(!out.status.success(), "--tournament is required");
    let out = pair(
        &[
            "--trf",
            file.to_str().unwrap_or_default(),
            "--round",
            "4",
            "--tournament",
            TOURNAMENT,
            "--dry-run",
            "--boards",
            "hall-01..hall-30",
        ],
        None,
    )?;
    // The file's time control ("moves/time, increment") is none this reads: refused as the
    // real run refuses it, not passed and refused later.
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give --time-control"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = pair(
        &[
            "--trf",
            file.to_str().unwrap_or_default(),
            "--round",
            "4",
            "--tournament",
            TOURNAMENT,
            "--dry-run",
            "--boards",
            "hall-01..hall-30",
            "--time-control",
            "40/7200:3600+30",
        ],
        None,
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let round: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(round["time_control"], "40/7200:3600+30");
    let boards = round["boards"].as_array().expect("boards");
    assert_eq!(boards.len(), 22);
    let first = &boards[0];
    assert_eq!(first["board"], 1);
    assert_eq!(first["board_id"], "hall-01", "the range's zeros kept");
    assert_eq!(first["white"]["name"], "Guijarro Galan Jose Luis");
    assert_eq!(first["black"]["name"], "Mirzoev Azer");
    assert_eq!(first["black"]["title"], "GM");
    assert_eq!(first["black"]["rating"], 2527);
    assert_eq!(first["black"]["fide_id"], "13400304");
    assert_eq!(first["black"]["federation"], "AZE");
    let byes = round["byes"].as_array().expect("byes apart");
    assert!(
        byes.iter()
            .any(|b| b["player"]["rank"] == 29 && b["kind"] == "half_point"),
        "{byes:?}"
    );
    // The forfeit keeps the table the pairing program printed it on, and its board stays
    // empty: the games after it are on the boards that list gave them.
    let forfeits = round["forfeits"].as_array().expect("forfeits apart");
    assert_eq!(forfeits.len(), 1);
    assert_eq!(forfeits[0]["board"], 5);
    assert_eq!(boards[4]["board"], 6);
    assert_eq!(boards[4]["board_id"], "hall-06");
    assert_eq!(boards[21]["board_id"], "hall-23");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_round_set_up_is_the_files_and_a_bad_file_sets_up_nothing() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let users = TestUsers::shared()?;
    let grant = |role| Grant {
        tournament: TOURNAMENT.into(),
        role,
        boards: Vec::new(),
    };
    let operator = users.add("pair-operator", &[grant(Role::Operator)])?;
    let observer = users.add("pair-observer", &[grant(Role::Observer)])?;
    for token in [&operator, &observer] {
        game_service.wait_for_user(token).await?;
    }
    let mut client = game_service.client_as(&operator).await?;
    let set_up =
        async |client: &mut boardcast_schema::game::v1::game_service_client::GameServiceClient<
            _,
        >|
               -> anyhow::Result<Vec<_>> {
            Ok(client
                .list_games(ListGamesRequest {
                    tournament_id: TOURNAMENT.into(),
                    round: 0,
                })
                .await?
                .into_inner()
                .games)
        };
    let url = game_service.url();
    let source = std::fs::read_to_string(trf("javafo_sample2.trf"))?;
    let dir = tempfile::tempdir()?;
    let write = |name: &str, text: &str| -> anyhow::Result<String> {
        let path = dir.path().join(name);
        std::fs::write(&path, text)?;
        Ok(path.to_string_lossy().into_owned())
    };
    let good = write("round.trf", &source)?;
    let common = |file: &str| -> Vec<String> {
        [
            "--trf",
            file,
            "--round",
            "4",
            "--tournament",
            TOURNAMENT,
            "--game-service",
            &url,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let run = |args: Vec<String>, token: Option<&str>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pair(&args, token)
    };
    let with = |file: &str, extra: &[&str]| {
        let mut args = common(file);
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    };

    // Refusals, each with its reason, each setting nothing up.
    let malformed = write(
        "malformed.trf",
        &source.replacen("    26 w 1", "    99 w 1", 1),
    )?;
    let refusals: Vec<(Vec<String>, Option<&str>, &str)> = vec![
        (
            with(
                &malformed,
                &["--boards", "hall-1..hall-30", "--time-control", "90+30"],
            ),
            Some(&operator),
            "line 14, column 92",
        ),
        (
            with(&good, &["--time-control", "90+30"]),
            Some(&operator),
            "--boards hall-1..hall-23",
        ),
        (
            with(
                &good,
                &["--boards", "hall-1..hall-20", "--time-control", "90+30"],
            ),
            Some(&operator),
            "only 20 boards",
        ),
        (
            with(&good, &["--boards", "hall-1..hall-30"]),
            Some(&operator),
            "give --time-control",
        ),
        (
            with(
                &good,
                &["--boards", "hall-1..hall-30", "--time-control", "90+30"],
            ),
            Some(&observer),
            "refused",
        ),
        (
            with(
                &good,
                &["--boards", "hall-1..hall-30", "--time-control", "90+30"],
            ),
            None,
            "refused",
        ),
    ];
    for (args, token, reason) in refusals {
        let out = run(args.clone(), token)?;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should be refused");
        assert!(said.contains(reason), "{args:?}: {said}");
        assert!(
            set_up(&mut client).await?.is_empty(),
            "{args:?} set nothing up"
        );
    }

    // The operator sets round 4 up from the file.
    let out = run(
        with(
            &good,
            &["--boards", "hall-1..hall-30", "--time-control", "90+30"],
        ),
        Some(&operator),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("22 games set up, on hall-1..hall-30"),
        "{said}"
    );
    let file = TrfFile::parse(&source)?;
    let pairings = file.round(4)?;
    let mut games = set_up(&mut client).await?;
    games.sort_by_key(|g| g.info.as_ref().map_or(0, |i| i.board_number));
    assert_eq!(games.len(), pairings.tables.len());
    for (game, table) in games.iter().zip(&pairings.tables) {
        let info = game.info.as_ref().expect("set up");
        assert_eq!(info.round, 4);
        assert_eq!(info.board_number, table.table);
        assert_eq!(info.board_id, format!("hall-{}", table.table));
        assert_eq!(info.event_name, "XX Open Internacional de Gros");
        assert_eq!(info.site, "Donostia");
        assert_eq!(info.date, "2010.09.24");
        for (player, rank) in [(&info.white, table.white), (&info.black, table.black)] {
            let player = player.as_ref().expect("a player");
            let in_file = &file.players[&rank];
            assert_eq!(player.name, in_file.name);
            assert_eq!(player.rating, in_file.rating.unwrap_or(0));
            assert_eq!(
                player.title,
                in_file.title.map(|t| t.as_str()).unwrap_or("")
            );
            assert_eq!(player.fide_id, in_file.fide_id);
            assert_eq!(player.federation, in_file.federation);
        }
    }
    // The same again (the operator ran it twice, or lost its answer): the same request,
    // answered with the games it set up, nothing created twice.
    let again = run(
        with(
            &good,
            &["--boards", "hall-1..hall-30", "--time-control", "90+30"],
        ),
        Some(&operator),
    )?;
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(said.contains("nothing changed"), "{said}");
    assert_eq!(set_up(&mut client).await?.len(), pairings.tables.len());
    // Another round set-up for the same boards (another time control): refused.
    let other = run(
        with(
            &good,
            &["--boards", "hall-1..hall-30", "--time-control", "60+30"],
        ),
        Some(&operator),
    )?;
    assert!(!other.status.success());
    let said = String::from_utf8_lossy(&other.stderr);
    assert!(said.contains("already set up by another request"), "{said}");
    Ok(())
}

/// The file as the pairing program exported it after pairing `round`: that round's games
/// without results (forfeits and byes, known beforehand, keep theirs), the points without them.
fn paired_not_played(text: &str, round: u32) -> String {
    let result_column = 92 + 10 * (round as usize - 1) + 7;
    text.split_inclusive('\n')
        .map(|line| {
            let mut chars: Vec<char> = line.chars().collect();
            let played = line.starts_with("001")
                && chars
                    .get(result_column - 1)
                    .is_some_and(|c| matches!(c, '1' | '0' | '='))
                && chars
                    .get(result_column - 8..result_column - 4)
                    .and_then(|o| o.iter().collect::<String>().trim().parse::<u32>().ok())
                    .is_some_and(|opponent| opponent != 0);
            if played {
                // The points as the program wrote them then: without that result.
                let taken = match chars[result_column - 1] {
                    '1' => 1.0,
                    '=' => 0.5,
                    _ => 0.0,
                };
                let points: f64 = chars[80..84]
                    .iter()
                    .collect::<String>()
                    .trim()
                    .parse()
                    .expect("the points");
                for (slot, c) in chars[80..84]
                    .iter_mut()
                    .zip(format!("{:>4.1}", points - taken).chars())
                {
                    *slot = c;
                }
                chars[result_column - 1] = ' ';
            }
            chars.into_iter().collect::<String>()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_played_on_simulated_boards_goes_back_to_the_pairing_program() -> anyhow::Result<()>
{
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let users = TestUsers::shared()?;
    let operator = users.add(
        "results-operator",
        &[Grant {
            tournament: TOURNAMENT.into(),
            role: Role::Operator,
            boards: Vec::new(),
        }],
    )?;
    game_service.wait_for_user(&operator).await?;
    let url = game_service.url();
    let dir = tempfile::tempdir()?;
    let exported = paired_not_played(&std::fs::read_to_string(trf("javafo_sample2.trf"))?, 4);
    let export_path = dir.path().join("after-pairing-round-4.trf");
    std::fs::write(&export_path, &exported)?;
    let export = export_path.to_string_lossy().into_owned();
    let out = pair(
        &[
            "--trf",
            &export,
            "--round",
            "4",
            "--tournament",
            TOURNAMENT,
            "--game-service",
            &url,
            "--boards",
            "sim-1..sim-23",
            "--time-control",
            "40/7200:3600+30",
        ],
        Some(&operator),
    )?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Boards 1 to 22 play the London Chess Classic's games to their results (board 5, the
    // forfeit's, has no game); board 23 does not start.
    let status = std::process::Command::new(program("boardcast")?)
        .args([
            "simulate",
            "--boards",
            "22",
            "--speed",
            "max",
            "--game-service",
            "none",
        ])
        .arg("--pgn")
        .arg(repo_root().join("data/london-classic-2016.pgn"))
        .args(["--nats", &nats.url()])
        .output()?;
    let said = String::from_utf8_lossy(&status.stderr);
    assert!(status.status.success(), "{said}");
    // Its progress, every tenth of the boards, and their end.
    assert!(
        said.contains("11 of 22 boards played") && said.contains("22 of 22 boards played"),
        "{said}"
    );
    let mut client = game_service.client_as(&operator).await?;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
    let games = loop {
        let games = client
            .list_games(ListGamesRequest {
                tournament_id: TOURNAMENT.into(),
                round: 4,
            })
            .await?
            .into_inner()
            .games;
        if games.iter().filter(|g| g.result != 0).count() == 21 {
            break games;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the games did not all end"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };

    // `boardcast results` as the operator runs it: from `trf_in` (or the games alone) into
    // `trf_out`, `--differing` as given.
    let results = |trf_in: Option<&std::path::Path>,
                   trf_out: &std::path::Path,
                   differing: Option<&str>|
     -> anyhow::Result<std::process::Output> {
        let mut command = std::process::Command::new(program("boardcast")?);
        command
            .args([
                "results",
                "--tournament",
                TOURNAMENT,
                "--game-service",
                &url,
            ])
            .arg("--trf-out")
            .arg(trf_out)
            .env("BOARDCAST_TOKEN", &operator);
        if let Some(trf_in) = trf_in {
            command.arg("--trf-in").arg(trf_in);
        }
        if let Some(choice) = differing {
            command.args(["--differing", choice]);
        }
        Ok(command.output()?)
    };
    let written_path = dir.path().join("results.trf");
    let out = results(Some(&export_path), &written_path, None)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("21 results written"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no result in the game log yet: round 4 board 23")
            && said.contains("left blank"),
        "{said}"
    );
    // The simulated boards ended their games themselves (a mate seen, the result signalled on
    // the board) and no arbiter declared a result: the operator is told to check them.
    let by_the_board: Vec<&str> = said
        .lines()
        .skip_while(|l| !l.contains("no arbiter's result since"))
        .skip(1)
        .filter(|l| l.starts_with("  round 4 board "))
        .collect();
    assert!(!by_the_board.is_empty(), "{said}");
    assert!(
        by_the_board
            .iter()
            .all(|l| l.contains("result signalled on the board")
                || l.contains("checkmate")
                || l.contains("stalemate")
                || l.contains("flag")
                || l.contains("position")
                || l.contains("repetition")
                || l.contains("75-move")),
        "{by_the_board:?}"
    );

    // The file the pairing program reads back: each game's result as its log says, board 23
    // blank, the points summed again, every other column as exported.
    let written = std::fs::read_to_string(&written_path)?;
    let before = TrfFile::parse(&exported)?;
    let after = TrfFile::parse(&written)?;
    let tables = before.round(4)?.tables;
    assert_eq!(
        after.round(4)?.tables,
        tables,
        "re-imports to the same pairings"
    );
    for game in &games {
        let info = game.info.as_ref().expect("set up");
        let table = *tables
            .iter()
            .find(|t| t.table == info.board_number)
            .expect("the game's table");
        let codes = |rank: u32| {
            after.players[&rank]
                .round(4)
                .and_then(|e| e.outcome)
                .map(|o| o.code())
        };
        let expected = match game.result {
            1 => Some(('1', '0')),
            2 => Some(('0', '1')),
            3 => Some(('=', '=')),
            _ => None,
        };
        assert_eq!(
            codes(table.white).zip(codes(table.black)),
            expected,
            "board {}",
            info.board_number
        );
    }
    // The points of every player given a result summed again (the others' are as exported).
    let given: Vec<u32> = tables
        .iter()
        .filter(|t| {
            after.players[&t.white]
                .round(4)
                .and_then(|e| e.outcome)
                .is_some()
        })
        .flat_map(|t| [t.white, t.black])
        .collect();
    assert_eq!(given.len(), 2 * 21);
    for player in after.players.values().filter(|p| given.contains(&p.rank)) {
        let summed: u32 = player
            .rounds
            .iter()
            .filter_map(|e| e.outcome)
            .map(|o| o.half_points())
            .sum();
        let line = written
            .lines()
            .find(|l| l.starts_with("001") && l[4..8].trim() == player.rank.to_string())
            .expect("the player's line");
        assert_eq!(
            line[80..84].trim(),
            format!("{:.1}", f64::from(summed) / 2.0),
            "player {}'s points",
            player.rank
        );
    }
    for (old, new) in exported.lines().zip(written.lines()) {
        let masked = |l: &str| {
            l.char_indices()
                .filter(|(i, _)| !(80..84).contains(i) && *i != 128)
                .map(|(_, c)| c)
                .collect::<String>()
        };
        assert_eq!(masked(old), masked(new));
    }

    // The arbiter corrects a result in the pairing program (the scoresheet says otherwise) and
    // exports again: the file's result is never overwritten silently.
    let corrected_game = games
        .iter()
        .find(|g| g.result == 1)
        .and_then(|g| g.info.as_ref())
        .context("a game White won")?;
    let corrected_table = *tables
        .iter()
        .find(|t| t.table == corrected_game.board_number)
        .context("its table")?;
    let corrected: String = written
        .split_inclusive('\n')
        .map(|line| {
            let rank = line
                .starts_with("001")
                .then(|| line[4..8].trim().parse::<u32>().ok())
                .flatten();
            let mut chars: Vec<char> = line.chars().collect();
            // The result swapped, and the points with it, as the pairing program writes them.
            let change = if rank == Some(corrected_table.white) {
                chars[128] = '0';
                -1.0
            } else if rank == Some(corrected_table.black) {
                chars[128] = '1';
                1.0
            } else {
                0.0
            };
            if change != 0.0 {
                let points: f64 = chars[80..84]
                    .iter()
                    .collect::<String>()
                    .trim()
                    .parse()
                    .unwrap_or(0.0);
                for (slot, c) in chars[80..84]
                    .iter_mut()
                    .zip(format!("{:>4.1}", points + change).chars())
                {
                    *slot = c;
                }
            }
            chars.into_iter().collect::<String>()
        })
        .collect();
    let corrected_path = dir.path().join("corrected.trf");
    std::fs::write(&corrected_path, &corrected)?;
    let again_path = dir.path().join("again.trf");
    let results_again =
        |differing: Option<&str>| results(Some(&corrected_path), &again_path, differing);
    let refused = results_again(None)?;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(&format!(
            "round 4 board {} ({}): the file has 0 – 1, the game log 1 – 0",
            corrected_game.board_number,
            games
                .iter()
                .find(|g| g.info.as_ref() == Some(corrected_game))
                .map_or("", |g| g.game_id.as_str())
        )),
        "{said}"
    );
    assert!(!again_path.exists(), "nothing written");
    let outcome_of = |text: &str, rank: u32| -> anyhow::Result<Option<char>> {
        Ok(TrfFile::parse(text)?.players[&rank]
            .round(4)
            .and_then(|e| e.outcome)
            .map(|o| o.code()))
    };
    let kept = results_again(Some("keep-file"))?;
    assert!(
        kept.status.success(),
        "{}",
        String::from_utf8_lossy(&kept.stderr)
    );
    let kept_text = std::fs::read_to_string(&again_path)?;
    assert_eq!(outcome_of(&kept_text, corrected_table.white)?, Some('0'));
    // Every other game's result as the log has it.
    assert_eq!(
        kept_text.lines().filter(|l| l.starts_with("001")).count(),
        written.lines().filter(|l| l.starts_with("001")).count()
    );
    let taken = results_again(Some("take-log"))?;
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    assert_eq!(
        outcome_of(
            &std::fs::read_to_string(&again_path)?,
            corrected_table.white
        )?,
        Some('1')
    );
    assert_eq!(std::fs::read_to_string(&again_path)?, written);

    // Without the pairing program's file: a TRF of the games alone, with the same games, colours
    // and results.
    let scratch_path = dir.path().join("from-the-games.trf");
    let out = results(None, &scratch_path, None)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scratch_text = std::fs::read_to_string(&scratch_path)?;
    let scratch = TrfFile::parse(&scratch_text)?;
    assert_eq!(scratch.tournament.name, "XX Open Internacional de Gros");
    assert_eq!(
        scratch.players.len(),
        2 * tables.len(),
        "the players of the games"
    );
    let games_there = scratch.round(4)?;
    assert_eq!(games_there.tables.len(), tables.len());
    let by_name = |f: &TrfFile, rank: u32| f.players[&rank].name.clone();
    for table in &games_there.tables {
        let (white, black) = (
            by_name(&scratch, table.white),
            by_name(&scratch, table.black),
        );
        let same = tables
            .iter()
            .find(|t| by_name(&before, t.white) == white)
            .expect("the game");
        assert_eq!(by_name(&before, same.black), black, "the same colours");
        let outcome = |f: &TrfFile, rank: u32| f.players[&rank].round(4).and_then(|e| e.outcome);
        assert_eq!(
            outcome(&scratch, table.white),
            outcome(&after, same.white),
            "{white} – {black}"
        );
        assert_eq!(
            outcome(&scratch, table.black),
            outcome(&after, same.black),
            "{white} – {black}"
        );
    }

    // Neither player of board 23 came: the arbiter declares both lost, and the pairing
    // program's file says so (a forfeit loss each). Board 1's Black is found to have broken the
    // rules: the arbiter declares the game lost by Black and decides White's score, a draw
    // (Article 12.9), so the result becomes ½-0, a draw and a loss in the file.
    let declare = |board: u32, result: GameResult, reason: &str, article: &str| {
        let (game_service, reason, article) =
            (&game_service, reason.to_owned(), article.to_owned());
        async move {
            game_service
                .client()
                .await?
                .act(boardcast_schema::game::v1::ActRequest {
                    game_id: boardcast_game::game_id_for(TOURNAMENT, 4, board),
                    action: Some(boardcast_schema::game::v1::ArbiterAction {
                        action: Some(boardcast_schema::game::v1::arbiter_action::Action::Result(
                            boardcast_schema::game::v1::DeclareResult {
                                result: result as i32,
                                reason,
                                article,
                            },
                        )),
                        ..Default::default()
                    }),
                    request_id: boardcast_kit::client::new_request_id(),
                })
                .await?;
            anyhow::Ok(())
        }
    };
    declare(23, GameResult::BothLose, "neither player came", "6.7.1").await?;
    declare(
        1,
        GameResult::WhiteHalfBlackZero,
        "Black lost for a breach of the rules; White's score is the arbiter's",
        "12.9",
    )
    .await?;
    let double_path = dir.path().join("double-forfeit.trf");
    let out = results(Some(&export_path), &double_path, None)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("22 results written"));
    let table_23 = *tables.iter().find(|t| t.table == 23).context("table 23")?;
    let double_text = std::fs::read_to_string(&double_path)?;
    assert_eq!(
        (
            outcome_of(&double_text, table_23.white)?,
            outcome_of(&double_text, table_23.black)?
        ),
        (Some('-'), Some('-'))
    );
    let table_1 = *tables.iter().find(|t| t.table == 1).context("table 1")?;
    assert_eq!(
        (
            outcome_of(&double_text, table_1.white)?,
            outcome_of(&double_text, table_1.black)?
        ),
        (Some('='), Some('0'))
    );
    Ok(())
}

#[test]
fn the_lichess_texts_are_printed_for_pasting() -> anyhow::Result<()> {
    let run = |what: &str, file: &str| -> anyhow::Result<std::process::Output> {
        Ok(std::process::Command::new(program("boardcast")?)
            .args(["lichess-text", what, "--trf"])
            .arg(trf(file))
            .output()?)
    };
    let players = run("players", "javafo_sample2.trf")?;
    assert!(players.status.success());
    let text = String::from_utf8(players.stdout)?;
    assert_eq!(text.lines().count(), 52);
    // As lichess splits a line at `/`: name, FIDE id, title, rating.
    assert!(text.starts_with("Mirzoev Azer / 13400304 / GM\n"), "{text}");
    assert!(
        text.lines().any(|l| l == "Gorrochategui Torres, Eugenio"),
        "unrated, no FIDE id, no title: the name alone"
    );
    let teams = run("teams", "grandmommyscup.trf")?;
    assert!(teams.status.success());
    let text = String::from_utf8(teams.stdout)?;
    assert!(text.starts_with("India; 70123454321\n"), "{text}");
    let none = run("teams", "javafo_sample2.trf")?;
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("holds no teams"));
    Ok(())
}

/// What `games` say of themselves, by table: board, players, moves seen.
fn by_table(
    games: &[boardcast_schema::game::v1::GameState],
) -> std::collections::BTreeMap<u32, (String, String, String, usize)> {
    games
        .iter()
        .filter_map(|g| {
            let info = g.info.as_ref()?;
            let name = |p: &Option<boardcast_schema::game::v1::Player>| {
                p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
            };
            Some((
                info.board_number,
                (
                    info.board_id.clone(),
                    name(&info.white),
                    name(&info.black),
                    g.moves.len() + g.provisional_line.len(),
                ),
            ))
        })
        .collect()
}

/// Board `board` shows `placement`, as its `device_seq`th observation, published to NATS.
async fn board_shows(
    js: &async_nats::jetstream::Context,
    board: &str,
    device_seq: u64,
    placement: &str,
) -> anyhow::Result<()> {
    use boardcast_schema::device::v1::{BoardPlacement, observation::Kind};
    let shown = Kind::Placement(BoardPlacement {
        placement: placement.into(),
    });
    boardcast_testkit::publish_observation(js, board, device_seq, shown).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_paired_again_is_set_up_again_until_its_games_begin() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
    let users = TestUsers::shared()?;
    let grant = |role| Grant {
        tournament: TOURNAMENT.into(),
        role,
        boards: Vec::new(),
    };
    let operator = users.add("revise-operator", &[grant(Role::Operator)])?;
    let arbiter = users.add("revise-arbiter", &[grant(Role::Arbiter)])?;
    for token in [&operator, &arbiter] {
        game_service.wait_for_user(token).await?;
    }
    let mut client = game_service.client_as(&operator).await?;
    let url = game_service.url();
    let source = std::fs::read_to_string(trf("javafo_sample2.trf"))?;
    let file = TrfFile::parse(&source)?;
    let tables = file.round(4)?.tables;
    let dir = tempfile::tempdir()?;
    let write = |name: &str, text: &str| -> anyhow::Result<String> {
        let path = dir.path().join(name);
        std::fs::write(&path, text)?;
        Ok(path.to_string_lossy().into_owned())
    };
    let run = |file: &str, extra: &[&str], token: &str| {
        let mut args = vec![
            "--trf",
            file,
            "--round",
            "4",
            "--tournament",
            TOURNAMENT,
            "--game-service",
            &url,
            "--time-control",
            "90+30",
        ];
        args.extend(extra);
        pair(&args, Some(token))
    };
    let round =
        async |client: &mut boardcast_schema::game::v1::game_service_client::GameServiceClient<
            _,
        >|
               -> anyhow::Result<_> {
            Ok(by_table(
                &client
                    .list_games(ListGamesRequest {
                        tournament_id: TOURNAMENT.into(),
                        round: 4,
                    })
                    .await?
                    .into_inner()
                    .games,
            ))
        };

    let good = write("round.trf", &source)?;
    let out = run(&good, &["--boards", "hall-1..hall-30"], &operator)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Table 1's game begins: its board shows 1.e4.
    board_shows(
        &js,
        "hall-1",
        1,
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR",
    )
    .await?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while round(&mut client).await?.get(&1).map(|t| t.3) != Some(1) {
        anyhow::ensure!(std::time::Instant::now() < deadline, "1.e4 was not seen");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let before = round(&mut client).await?;

    // The director corrects two names (table 1's White, table 2's Black) and puts table 2 on
    // hall-30 (hall-2's clock is broken).
    let name = |rank: u32| file.players[&rank].name.clone();
    let misspelt = |name: &str| format!("{}x", &name[..name.len() - 1]);
    let (white_1, black_2) = (name(tables[0].white), name(tables[1].black));
    let corrected = write(
        "corrected.trf",
        &source.replacen(&white_1, &misspelt(&white_1), 1).replacen(
            &black_2,
            &misspelt(&black_2),
            1,
        ),
    )?;
    let map: String = tables
        .iter()
        .map(|t| {
            let board = if t.table == 2 { 30 } else { t.table };
            format!("{} hall-{board}\n", t.table)
        })
        .collect();
    let map = write("boards.txt", &map)?;

    // Refusals, each with its reason, each changing nothing.
    let refusals: Vec<(Vec<&str>, &str, &str)> = vec![
        // Without --revise: the games exist.
        (vec!["--board-map", &map], &operator, "--revise"),
        // Not the operator's nor a chief arbiter's to set up.
        (vec!["--board-map", &map, "--revise"], &arbiter, "refused"),
        // Table 1's 1.e4 stands on its board, not pressed: the game cannot leave that board
        // now, so nothing of the round changes.
        (
            vec!["--boards", "hall-2..hall-31", "--revise"],
            &operator,
            "board 1: game gros-2010-r4-b1: a move stands on the board",
        ),
    ];
    for (extra, token, reason) in refusals {
        let out = run(&corrected, &extra, token)?;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} should be refused");
        assert!(said.contains(reason), "{extra:?}: {said}");
        assert_eq!(
            round(&mut client).await?,
            before,
            "{extra:?} changed nothing"
        );
    }
    // A time control other than the one table 1 is played with: refused too.
    let out = pair(
        &[
            "--trf",
            &corrected,
            "--round",
            "4",
            "--tournament",
            TOURNAMENT,
            "--game-service",
            &url,
            "--time-control",
            "60+30",
            "--board-map",
            &map,
            "--revise",
        ],
        Some(&operator),
    )?;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("not its time control"), "{said}");
    assert_eq!(round(&mut client).await?, before);

    // Revised: the names, and table 2 on hall-30; table 1 keeps its move.
    let out = run(&corrected, &["--board-map", &map, "--revise"], &operator)?;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("22 games set up (2 of them set up again)"),
        "{said}"
    );
    assert!(
        said.contains("set up again: gros-2010-r4-b2 on hall-30"),
        "{said}"
    );
    let after = round(&mut client).await?;
    let mut expected = before.clone();
    if let Some(t) = expected.get_mut(&1) {
        t.1 = misspelt(&white_1);
    }
    if let Some(t) = expected.get_mut(&2) {
        t.0 = "hall-30".into();
        t.2 = misspelt(&black_2);
    }
    assert_eq!(after, expected);
    // Sent again: nothing more to change.
    let out = run(&corrected, &["--board-map", &map, "--revise"], &operator)?;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("nothing changed"), "{said}");

    // hall-30's observations are table 2's game's now; hall-2 carries none of the round.
    board_shows(
        &js,
        "hall-30",
        1,
        "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR",
    )
    .await?;
    while round(&mut client).await?.get(&2).map(|t| t.3) != Some(1) {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "1.d4 was not seen on hall-30"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let boards = client
        .list_boards(boardcast_schema::game::v1::ListBoardsRequest::default())
        .await?
        .into_inner()
        .boards;
    let on = |board: &str| {
        boards
            .iter()
            .find(|b| b.board_id == board)
            .map(|b| b.game_id.clone())
    };
    assert_eq!(on("hall-30").as_deref(), Some("gros-2010-r4-b2"));
    assert_eq!(on("hall-2"), None);

    // The round's log, exported, verifies: every revision decided again as recorded.
    support::export_verifies(&nats.url(), TOURNAMENT, 4)?;
    Ok(())
}
