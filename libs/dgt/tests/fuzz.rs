//! Property tests: the decoder never panics, stays bounded, accounts for every byte, and
//! recovers every valid frame whatever garbage and split points surround it.

use boardcast_dgt::{
    BoardCodes, ClockAck, ClockSide, ClockStatus, ClockTime, Decoder, DgtSquare, MAX_FRAME_LEN,
    MAX_GARBAGE_CHUNK, Message, PieceCode, encode_message,
};
use proptest::prelude::*;

fn piece_code() -> impl Strategy<Value = PieceCode> {
    (0u8..16).prop_map(|c| PieceCode::from_u8(c).expect("code below 16"))
}

fn clock_side() -> impl Strategy<Value = ClockSide> {
    (0u8..10, 0u8..60, 0u8..60, any::<[bool; 3]>()).prop_map(|(h, m, s, f)| ClockSide {
        hours: h,
        minutes: m,
        seconds: s,
        flag_fallen: f[0],
        increment: f[1],
        flag_shown: f[2],
    })
}

fn digits(len: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(b'0'..=b'9', len)
        .prop_map(|d| d.into_iter().map(char::from).collect())
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        proptest::collection::vec(piece_code(), 64).prop_map(|codes| {
            let mut board = BoardCodes::default();
            board.0.copy_from_slice(&codes);
            Message::BoardDump(board)
        }),
        (0u8..64, piece_code()).prop_map(|(square, piece)| Message::FieldUpdate {
            square: DgtSquare::new(square).expect("below 64"),
            piece
        }),
        (clock_side(), clock_side(), 0u8..0x80)
            .prop_filter("all-zero frames are not times", |(r, l, s)| {
                *s != 0 || *r != ClockSide::default() || *l != ClockSide::default()
            })
            .prop_map(|(right, left, status)| Message::Clock(ClockTime {
                right,
                left,
                status: ClockStatus(status)
            })),
        proptest::collection::vec(0u8..0x80, 7).prop_map(|mut p| {
            p[0] = (p[0] & 0x70) | 0x0a;
            let mut payload = [0; 7];
            payload.copy_from_slice(&p);
            Message::ClockAck(ClockAck { payload })
        }),
        Just(Message::ClockIgnored),
        digits(5).prop_map(Message::SerialNumber),
        digits(10).prop_map(Message::LongSerialNumber),
        (0u8..0x80, 0u8..0x80).prop_map(|(major, minor)| Message::Version { major, minor }),
        proptest::collection::vec(0u8..0x80, 9).prop_map(|b| {
            let mut bytes = [0; 9];
            bytes.copy_from_slice(&b);
            Message::Battery(bytes)
        }),
        (
            (0x80u8..=0xff).prop_filter("unknown ids only", |id| {
                boardcast_dgt::expected_len(*id).is_none()
            }),
            proptest::collection::vec(0u8..0x80, 0..20)
        )
            .prop_map(|(id, payload)| Message::Unknown { id, payload }),
    ]
}

/// How many input bytes a decoded item stands for.
fn byte_count(message: &Message) -> usize {
    match message {
        Message::Garbage { bytes } => bytes.len(),
        Message::Malformed { payload, .. } => payload.len() + 3,
        other => encode_message(other)
            .expect("decoded messages re-encode")
            .len(),
    }
}

fn decode_in_chunks(bytes: &[u8], splits: &[usize]) -> Vec<Message> {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    let mut at = 0;
    for &split in splits {
        let end = (at + split).min(bytes.len());
        out.extend(decoder.feed(&bytes[at..end]));
        assert!(decoder.pending_len() <= MAX_FRAME_LEN + MAX_GARBAGE_CHUNK);
        at = end;
    }
    out.extend(decoder.feed(&bytes[at..]));
    out.extend(decoder.flush());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_bytes_never_panic_and_every_byte_is_accounted_for(
        bytes in proptest::collection::vec(any::<u8>(), 0..2000),
        splits in proptest::collection::vec(0usize..64, 0..40),
    ) {
        let messages = decode_in_chunks(&bytes, &splits);
        let total: usize = messages.iter().map(byte_count).sum();
        prop_assert_eq!(total, bytes.len());
        for message in &messages {
            if let Message::Garbage { bytes } = message {
                prop_assert!(!bytes.is_empty() && bytes.len() <= MAX_GARBAGE_CHUNK);
            }
        }
    }

    #[test]
    fn valid_messages_round_trip(
        messages in proptest::collection::vec(message(), 0..30),
        splits in proptest::collection::vec(0usize..80, 0..40),
    ) {
        let bytes: Vec<u8> = messages
            .iter()
            .flat_map(|m| encode_message(m).expect("valid message encodes"))
            .collect();
        prop_assert_eq!(decode_in_chunks(&bytes, &splits), messages);
    }

    #[test]
    fn valid_frames_survive_garbage_around_them(
        items in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..12), message()),
            1..20
        ),
        tail in proptest::collection::vec(any::<u8>(), 0..12),
        splits in proptest::collection::vec(0usize..80, 0..40),
    ) {
        let mut bytes = Vec::new();
        for (garbage, message) in &items {
            bytes.extend(garbage);
            bytes.extend(encode_message(message).expect("valid message encodes"));
        }
        bytes.extend(&tail);
        let decoded = decode_in_chunks(&bytes, &splits);
        // Garbage may itself look like a frame, so the real messages must appear in order
        // among the decoded ones, with nothing lost.
        let mut remaining = decoded.iter();
        for (_, message) in &items {
            prop_assert!(
                remaining.any(|d| d == message),
                "lost {:?} in {:?}", message, decoded
            );
        }
        let total: usize = decoded.iter().map(byte_count).sum();
        prop_assert_eq!(total, bytes.len());
    }
}
