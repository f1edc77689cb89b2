use boardcast_dgt::{
    BoardCodes, ClockAck, ClockSide, ClockStatus, ClockTime, Decoder, DgtSquare, Message,
    Orientation, PieceCode, encode_message,
};
use shakmaty::{Board, Square};

fn start_dump_bytes() -> Vec<u8> {
    let mut bytes = vec![0x86, 0x00, 0x43];
    bytes.extend([8, 9, 10, 12, 11, 10, 9, 8]);
    bytes.extend([7; 8]);
    bytes.extend([0; 32]);
    bytes.extend([1; 8]);
    bytes.extend([2, 3, 4, 6, 5, 4, 3, 2]);
    bytes
}

const E2_LIFTED: [u8; 5] = [0x8e, 0x00, 0x05, 52, 0];
const E4_WHITE_PAWN: [u8; 5] = [0x8e, 0x00, 0x05, 36, 1];
const CLOCK: [u8; 10] = [0x8d, 0x00, 0x0a, 0x01, 0x29, 0x59, 0x00, 0x05, 0x07, 0x01];
const CLOCK_ACK: [u8; 10] = [0x8d, 0x00, 0x0a, 0x0a, 0x10, 0x0a, 0x0a, 0x00, 0x00, 0x00];
const CLOCK_ZERO: [u8; 10] = [0x8d, 0x00, 0x0a, 0, 0, 0, 0, 0, 0, 0];
const SERIAL: [u8; 8] = [0x91, 0x00, 0x08, b'1', b'2', b'3', b'4', b'5'];
const VERSION: [u8; 5] = [0x93, 0x00, 0x05, 0x01, 0x02];
const BATTERY: [u8; 12] = [0xa0, 0x00, 0x0c, 0x58, 0, 0, 0, 0, 0, 0, 0, 0];
const UNKNOWN: [u8; 4] = [0x8f, 0x00, 0x04, 0x05];

fn long_serial() -> Vec<u8> {
    let mut bytes = vec![0xa2, 0x00, 0x0d];
    bytes.extend(b"0123456789");
    bytes
}

fn all_frames() -> Vec<u8> {
    let mut bytes = start_dump_bytes();
    for frame in [
        &E2_LIFTED[..],
        &E4_WHITE_PAWN,
        &CLOCK,
        &CLOCK_ACK,
        &CLOCK_ZERO,
        &SERIAL,
        &VERSION,
        &BATTERY,
        &UNKNOWN,
    ] {
        bytes.extend_from_slice(frame);
    }
    bytes.extend(long_serial());
    bytes
}

fn expected_messages() -> Vec<Message> {
    let start = BoardCodes::from_board(&Board::new(), Orientation::Normal);
    vec![
        Message::BoardDump(start),
        Message::FieldUpdate {
            square: DgtSquare::from_square(Square::E2, Orientation::Normal),
            piece: PieceCode::Empty,
        },
        Message::FieldUpdate {
            square: DgtSquare::from_square(Square::E4, Orientation::Normal),
            piece: PieceCode::from_u8(1).unwrap(),
        },
        Message::Clock(ClockTime {
            right: ClockSide {
                hours: 1,
                minutes: 29,
                seconds: 59,
                ..ClockSide::default()
            },
            left: ClockSide {
                hours: 0,
                minutes: 5,
                seconds: 7,
                ..ClockSide::default()
            },
            status: ClockStatus(0x01),
        }),
        Message::ClockAck(ClockAck {
            payload: [0x0a, 0x10, 0x0a, 0x0a, 0, 0, 0],
        }),
        Message::ClockIgnored,
        Message::SerialNumber("12345".into()),
        Message::Version { major: 1, minor: 2 },
        Message::Battery([0x58, 0, 0, 0, 0, 0, 0, 0, 0]),
        Message::Unknown {
            id: 0x8f,
            payload: vec![5],
        },
        Message::LongSerialNumber("0123456789".into()),
    ]
}

#[test]
fn decodes_every_message_type() {
    let messages = Decoder::new().feed(&all_frames());
    assert_eq!(messages, expected_messages());
}

#[test]
fn board_dump_is_the_start_position() {
    let messages = Decoder::new().feed(&start_dump_bytes());
    let [Message::BoardDump(codes)] = messages.as_slice() else {
        panic!("expected one dump, got {messages:?}");
    };
    assert_eq!(codes.to_board(Orientation::Normal), Board::new());
    assert_eq!(codes.start_orientation(), Some(Orientation::Normal));
    assert_ne!(codes.to_board(Orientation::Rotated), Board::new());
}

#[test]
fn rotated_start_position() {
    let codes = BoardCodes::from_board(&Board::new(), Orientation::Rotated);
    // Square 0 (a8 normally) holds the white rook from h1.
    assert_eq!(codes.0[0], PieceCode::from_u8(2).unwrap());
    assert_eq!(
        codes.0[3],
        PieceCode::from_u8(5).unwrap(),
        "white king on e1"
    );
    assert_eq!(codes.start_orientation(), Some(Orientation::Rotated));
    for index in 0..64 {
        let square = DgtSquare::new(index).unwrap();
        assert_eq!(
            square.to_square(Orientation::Rotated),
            DgtSquare::new(63 - index)
                .unwrap()
                .to_square(Orientation::Normal)
        );
    }
}

#[test]
fn square_numbering() {
    let sq = |i| DgtSquare::new(i).unwrap().to_square(Orientation::Normal);
    assert_eq!(sq(0), Square::A8);
    assert_eq!(sq(7), Square::H8);
    assert_eq!(sq(8), Square::A7);
    assert_eq!(sq(63), Square::H1);
    assert_eq!(DgtSquare::new(64), None);
}

#[test]
fn clock_side_values() {
    let messages = Decoder::new().feed(&CLOCK);
    let [Message::Clock(time)] = messages.as_slice() else {
        panic!("{messages:?}");
    };
    assert_eq!(time.right.remaining_ms(), (3600 + 29 * 60 + 59) * 1000);
    assert_eq!(time.left.remaining_ms(), (5 * 60 + 7) * 1000);
    assert!(time.status.running());
    assert!(!time.status.no_clock());
}

#[test]
fn clock_flags_and_ack_on_left_side() {
    let flags = [0x8d, 0x00, 0x0a, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x26];
    let messages = Decoder::new().feed(&flags);
    let [Message::Clock(time)] = messages.as_slice() else {
        panic!("{messages:?}");
    };
    assert!(time.right.flag_fallen && time.right.increment && time.right.flag_shown);
    assert!(time.status.lever_right_high() && time.status.low_battery());
    assert!(time.status.no_clock());

    let ack = [0x8d, 0x00, 0x0a, 0x00, 0x10, 0x0b, 0x0a, 0x00, 0x00, 0x00];
    let messages = Decoder::new().feed(&ack);
    let [Message::ClockAck(ack)] = messages.as_slice() else {
        panic!("{messages:?}");
    };
    assert_eq!(ack.ack_bytes()[0], 0x10);
    assert_eq!(ack.command(), 0x0b);
}

#[test]
fn garbage_before_between_and_inside_frames() {
    let mut bytes = vec![0x01, 0x02, 0x7f];
    bytes.extend(E2_LIFTED);
    bytes.extend([0x33, 0x44]);
    bytes.extend(E4_WHITE_PAWN);
    // A clock frame cut short by a new frame.
    bytes.extend(&CLOCK[..6]);
    bytes.extend(SERIAL);
    let messages = Decoder::new().feed(&bytes);
    assert_eq!(
        messages,
        vec![
            Message::Garbage {
                bytes: vec![0x01, 0x02, 0x7f]
            },
            Message::FieldUpdate {
                square: DgtSquare::new(52).unwrap(),
                piece: PieceCode::Empty
            },
            Message::Garbage {
                bytes: vec![0x33, 0x44]
            },
            Message::FieldUpdate {
                square: DgtSquare::new(36).unwrap(),
                piece: PieceCode::from_u8(1).unwrap()
            },
            Message::Garbage {
                bytes: CLOCK[..6].to_vec()
            },
            Message::SerialNumber("12345".into()),
        ]
    );
}

#[test]
fn known_id_with_wrong_length_is_garbage() {
    let mut bytes = vec![0x8e, 0x00, 0x07, 0x01, 0x02];
    bytes.extend(VERSION);
    let messages = Decoder::new().feed(&bytes);
    assert_eq!(
        messages,
        vec![
            Message::Garbage {
                bytes: vec![0x8e, 0x00, 0x07, 0x01, 0x02]
            },
            Message::Version { major: 1, minor: 2 },
        ]
    );
}

#[test]
fn implausible_unknown_length_is_garbage() {
    let mut decoder = Decoder::new();
    let mut messages = decoder.feed(&[0xff, 0x7f, 0x7f, 0x01]);
    messages.extend(decoder.feed(&VERSION));
    assert_eq!(
        messages,
        vec![
            Message::Garbage {
                bytes: vec![0xff, 0x7f, 0x7f, 0x01]
            },
            Message::Version { major: 1, minor: 2 },
        ]
    );
}

#[test]
fn malformed_contents_are_reported() {
    let bad_square = [0x8e, 0x00, 0x05, 64, 1];
    let bad_bcd = [0x8d, 0x00, 0x0a, 0x01, 0x6a, 0x00, 0x00, 0x00, 0x00, 0x00];
    let messages = Decoder::new().feed(&[&bad_square[..], &bad_bcd].concat());
    assert!(matches!(messages[0], Message::Malformed { id: 0x8e, .. }));
    assert!(matches!(messages[1], Message::Malformed { id: 0x8d, .. }));
}

#[test]
fn split_at_every_byte_boundary() {
    let bytes = all_frames();
    for split in 0..=bytes.len() {
        let mut decoder = Decoder::new();
        let mut messages = decoder.feed(&bytes[..split]);
        messages.extend(decoder.feed(&bytes[split..]));
        assert_eq!(messages, expected_messages(), "split at {split}");
    }
    let mut decoder = Decoder::new();
    let messages: Vec<Message> = bytes.iter().flat_map(|b| decoder.feed(&[*b])).collect();
    assert_eq!(messages, expected_messages());
}

#[test]
fn flush_reports_a_partial_frame() {
    let mut decoder = Decoder::new();
    assert!(decoder.feed(&CLOCK[..4]).is_empty());
    assert_eq!(decoder.pending_len(), 4);
    assert_eq!(
        decoder.flush(),
        vec![Message::Garbage {
            bytes: CLOCK[..4].to_vec()
        }]
    );
    assert_eq!(decoder.pending_len(), 0);
}

#[test]
fn encoder_produces_the_documented_bytes() {
    let expected = expected_messages();
    let mut bytes = Vec::new();
    for message in &expected {
        bytes.extend(encode_message(message).unwrap());
    }
    assert_eq!(bytes, all_frames());
}
