//! Whatever a file holds, reading it is an answer — the file read or an error naming where —
//! never a panic; and a round asked of what was read is an answer too.

use boardcast_trf::TrfFile;
use proptest::prelude::*;

/// Lines that look like a TRF's: record ids it reads, with fields of digits, letters, colours,
/// result codes and blanks at any column, and other bytes.
fn line() -> impl Strategy<Value = String> {
    let id = prop::sample::select(vec![
        "001", "012", "042", "132", "142", "240", "300", "310", "013", "XXR", "###", "IND", "999",
    ]);
    let field = prop::collection::vec(
        prop::sample::select(vec![
            " ",
            "  ",
            "1",
            "12",
            "0000",
            "w",
            "b",
            "-",
            "=",
            "+",
            "H",
            "Z",
            "U",
            "/",
            "2026/01/10",
            "\t",
            "é",
            "GM",
            "g",
            "x",
        ]),
        0..60,
    );
    (id, field).prop_map(|(id, parts)| format!("{id}{}", parts.concat()))
}

proptest! {
    #[test]
    fn any_file_is_read_or_refused_without_a_panic(
        lines in prop::collection::vec(line(), 0..30),
        crlf in any::<bool>(),
        round in 0u32..12,
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        if let Ok(file) = TrfFile::parse(&text) {
            let _ = file.round(round);
            let _ = file.to_text();
            let _ = boardcast_trf::lichess_players(&file);
        }
    }

    #[test]
    fn any_bytes_are_read_or_refused_without_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = TrfFile::parse_bytes(&bytes);
    }
}
