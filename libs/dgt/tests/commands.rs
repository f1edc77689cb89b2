use boardcast_dgt::{ClockCommand, Command, EncodeError, Hms, RunFlags, encode_command};

#[test]
fn single_byte_commands() {
    let cases = [
        (Command::Reset, 0x40),
        (Command::SendClock, 0x41),
        (Command::SendBoard, 0x42),
        (Command::SendUpdates, 0x43),
        (Command::SendUpdatesBoard, 0x44),
        (Command::SerialNumber, 0x45),
        (Command::SendUpdatesNice, 0x4b),
        (Command::Battery, 0x4c),
        (Command::Version, 0x4d),
        (Command::LongSerialNumber, 0x55),
    ];
    for (command, byte) in cases {
        assert_eq!(encode_command(&command).unwrap(), vec![byte], "{command:?}");
    }
}

#[test]
fn set_and_run() {
    let command = Command::Clock(ClockCommand::SetAndRun {
        left: Hms {
            hours: 1,
            minutes: 30,
            seconds: 0,
        },
        right: Hms {
            hours: 0,
            minutes: 5,
            seconds: 59,
        },
        flags: RunFlags {
            left_counts_down: true,
            right_counts_down: true,
            pause: false,
            toggle_on_lever: true,
        },
    });
    assert_eq!(
        encode_command(&command).unwrap(),
        vec![0x2b, 0x0a, 0x03, 0x0a, 1, 30, 0, 0, 5, 59, 0x0b, 0x00]
    );
}

#[test]
fn text_and_beep() {
    let text = Command::Clock(ClockCommand::Text {
        text: "BOARD 12".into(),
        beep: false,
    });
    let mut expected = vec![0x2b, 0x0c, 0x03, 0x0c];
    expected.extend(b"BOARD 12");
    expected.extend([0x00, 0x00]);
    assert_eq!(encode_command(&text).unwrap(), expected);

    let beep = Command::Clock(ClockCommand::Beep { duration: 4 });
    assert_eq!(
        encode_command(&beep).unwrap(),
        vec![0x2b, 0x04, 0x03, 0x0b, 4, 0x00]
    );
    assert_eq!(
        encode_command(&Command::Clock(ClockCommand::EndDisplay)).unwrap(),
        vec![0x2b, 0x03, 0x03, 0x03, 0x00]
    );
}

#[test]
fn invalid_commands_are_errors() {
    let short = Command::Clock(ClockCommand::Text {
        text: "short".into(),
        beep: true,
    });
    assert!(matches!(
        encode_command(&short),
        Err(EncodeError::BadText { .. })
    ));
    let bad_time = Command::Clock(ClockCommand::SetAndRun {
        left: Hms {
            hours: 10,
            minutes: 0,
            seconds: 0,
        },
        right: Hms::default(),
        flags: RunFlags::default(),
    });
    assert!(encode_command(&bad_time).is_err());
    assert_eq!(
        Hms::from_ms(5_400_999),
        Some(Hms {
            hours: 1,
            minutes: 30,
            seconds: 0
        })
    );
}
