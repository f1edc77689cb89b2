//! A DGT board on a serial port, played by the test through a pseudo-terminal.

use std::{
    io::{Read, Write},
    os::fd::OwnedFd,
    sync::{Arc, Mutex},
    time::Duration,
};

use boardcast_dgt::{BoardCodes, Message, encode_message};
use boardcast_gateway::{
    outbox::Outbox,
    recorder::Recorder,
    serial::{self, SerialConfig},
};
use boardcast_schema::device::v1::{DeviceState, SourceKind, observation::Kind};
use tokio::sync::Notify;

fn open_pty() -> anyhow::Result<(std::fs::File, String, OwnedFd)> {
    let pty = nix::pty::openpty(None, None)?;
    let path = nix::unistd::ttyname(&pty.slave)?
        .to_string_lossy()
        .into_owned();
    Ok((std::fs::File::from(pty.master), path, pty.slave))
}

/// Where the gateway stores what it reads (in a directory kept while the first lives).
fn outbox_and_recorder() -> anyhow::Result<(tempfile::TempDir, Arc<Outbox>, Recorder)> {
    let dir = tempfile::tempdir()?;
    let outbox = Arc::new(Outbox::open(&dir.path().join("outbox.redb"))?);
    let recorder = Recorder::new(
        outbox.clone(),
        Arc::new(Notify::new()),
        SourceKind::DgtSerial,
    );
    Ok((dir, outbox, recorder))
}

#[tokio::test(flavor = "multi_thread")]
async fn startup_messages_watchdog_and_disconnection() -> anyhow::Result<()> {
    let (mut master, path, _slave) = open_pty()?;
    let (_dir, outbox, recorder) = outbox_and_recorder()?;
    let mut config = SerialConfig::new(&path, "dgt-1");
    config.silence = Duration::from_millis(300);
    config.no_response = Duration::from_millis(300);
    config.reopen_after = Duration::from_secs(30);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler_seen = seen.clone();
    let gateway = tokio::spawn(serial::run(config, recorder, move |m: Message| {
        let kinds = match &m {
            Message::BoardDump(codes) => vec![Kind::Placement(
                boardcast_schema::device::v1::BoardPlacement {
                    placement: codes
                        .to_board(boardcast_dgt::Orientation::Normal)
                        .board_fen()
                        .to_string(),
                },
            )],
            _ => Vec::new(),
        };
        if let Ok(mut seen) = handler_seen.lock() {
            seen.push(m);
        }
        kinds
    }));

    // The host starts the board: reset, serial number, version, board dump, updates.
    let expected = serial::startup_sequence()?;
    let mut received = vec![0u8; expected.len()];
    let mut master_reader = master.try_clone()?;
    tokio::task::spawn_blocking(move || master_reader.read_exact(&mut received).map(|_| received))
        .await??
        .iter()
        .zip(&expected)
        .for_each(|(a, b)| assert_eq!(a, b, "start-up sequence"));

    // The board answers with its start position, split over two writes.
    let start = BoardCodes::from_board(
        &shakmaty::Board::default(),
        boardcast_dgt::Orientation::Normal,
    );
    let dump = encode_message(&Message::BoardDump(start))?;
    master.write_all(&dump[..10])?;
    master.flush()?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    master.write_all(&dump[10..])?;
    master.flush()?;

    // Then it falls silent: the watchdog asks for the board, then reports it not responding.
    let mut request = [0u8; 1];
    let mut master_reader = master.try_clone()?;
    let request = tokio::task::spawn_blocking(move || {
        master_reader.read_exact(&mut request).map(|_| request)
    })
    .await??;
    assert_eq!(request, [0x42], "a board dump is requested after silence");
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The cable is pulled.
    drop(master);
    tokio::time::sleep(Duration::from_millis(500)).await;
    gateway.abort();

    assert!(matches!(
        seen.lock().map(|s| s.first().cloned()),
        Ok(Some(Message::BoardDump(_)))
    ));
    let kinds: Vec<Kind> = outbox
        .peek(100)?
        .into_iter()
        .filter_map(|p| p.observation.kind)
        .collect();
    let states: Vec<i32> = kinds
        .iter()
        .filter_map(|k| match k {
            Kind::Status(s) => Some(s.state),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        vec![
            DeviceState::Connected as i32,
            DeviceState::NotResponding as i32,
            DeviceState::Disconnected as i32
        ]
    );
    assert!(kinds.iter().any(|k| matches!(k, Kind::Placement(p) if p.placement == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR")));
    Ok(())
}

/// The board is asked for its battery at start-up and every few minutes after (here every
/// 200 ms); what a Bluetooth board answers becomes the board's status when it changed.
#[tokio::test(flavor = "multi_thread")]
async fn the_battery_is_asked_for_again_and_a_change_is_reported() -> anyhow::Result<()> {
    use boardcast_gateway::dgt::{DgtSession, DgtSessionConfig};
    let (mut master, path, _slave) = open_pty()?;
    let (_dir, outbox, recorder) = outbox_and_recorder()?;
    let mut config = SerialConfig::new(&path, "dgt-bt");
    config.battery_every = Duration::from_millis(200);
    config.reopen_after = Duration::from_secs(30);
    let mut session = DgtSession::new(DgtSessionConfig::default());
    let gateway = tokio::spawn(serial::run(config, recorder, move |m: Message| {
        session.on_message(m).kinds
    }));

    // Once in the start-up sequence, then again and again.
    let mut master_reader = master.try_clone()?;
    let asked = tokio::task::spawn_blocking(move || -> std::io::Result<usize> {
        let (mut asked, mut byte) = (0, [0u8; 1]);
        while asked < 3 {
            master_reader.read_exact(&mut byte)?;
            asked += usize::from(byte[0] == 0x4c);
        }
        Ok(asked)
    });
    let asked = tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .map_err(|_| anyhow::anyhow!("the battery was not asked for again"))???;
    assert_eq!(asked, 3);

    for percent in [76u8, 76, 40] {
        let mut payload = [0u8; 9];
        payload[0] = percent;
        master.write_all(&encode_message(&Message::Battery(payload))?)?;
        master.flush()?;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    gateway.abort();
    let reported: Vec<Option<u32>> = outbox
        .peek(100)?
        .into_iter()
        .filter_map(|p| match p.observation.kind {
            Some(Kind::Status(s)) if s.battery_percent.is_some() => Some(s.battery_percent),
            _ => None,
        })
        .collect();
    assert_eq!(reported, [Some(76), Some(40)]);
    Ok(())
}
