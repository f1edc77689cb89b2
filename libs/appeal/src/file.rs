//! The game record file: length-delimited `RecordFileItem`s — a header, the records exactly as
//! stored and the board's observations, and an end listing every game — written as a stream and
//! read back whole.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use boardcast_game::events::GameEventRecord;
use boardcast_schema::appeal::v1::{
    ExportedGameSummary, ExportedObservation, ExportedRecord, RecordFileEnd, RecordFileHeader,
    RecordFileItem, record_file_item::Item,
};
use prost::Message as _;

/// What `RecordFileHeader.format` says.
pub const FORMAT: &str = "boardcast game record file";
/// The layout this version writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// No item is larger: a game's record is at most a NATS message (a few MB).
const MAX_ITEM_BYTES: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("reading the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("item {item} (byte {offset}): {reason}")]
    Malformed {
        item: u64,
        offset: u64,
        reason: String,
    },
    #[error("not a boardcast game record file (it does not start with the header)")]
    NotARecordFile,
    #[error("the file is format version {0}; this boardcast reads version {FORMAT_VERSION}")]
    UnsupportedVersion(u32),
}

/// One game's part of a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportedGame {
    pub game_id: String,
    /// In the order of the file (the log's order unless someone reordered them).
    pub records: Vec<ExportedRecord>,
    pub observations: Vec<ExportedObservation>,
}

/// A whole file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordFile {
    pub header: RecordFileHeader,
    /// In the order their first item appears.
    pub games: Vec<ExportedGame>,
    /// `None` when the file was cut short.
    pub end: Option<RecordFileEnd>,
}

impl RecordFile {
    /// Reads a file; an error names the item and byte where it went wrong.
    pub fn read(input: impl Read) -> Result<RecordFile, FileError> {
        let mut input = std::io::BufReader::new(input);
        let mut offset = 0u64;
        let mut index = 0u64;
        let mut header = None;
        let mut games: Vec<ExportedGame> = Vec::new();
        let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
        let mut end = None;
        loop {
            let frame = read_frame(&mut input, &mut offset, index);
            // Before its header, a file whose first item neither frames nor decodes is some
            // other file (a PGN, a TRF), not a damaged record file.
            let Some(bytes) = (match frame {
                Err(FileError::Malformed { .. }) if header.is_none() => {
                    return Err(FileError::NotARecordFile);
                }
                frame => frame?,
            }) else {
                break;
            };
            let malformed = |reason: String| FileError::Malformed {
                item: index,
                offset,
                reason,
            };
            let item = match RecordFileItem::decode(bytes.as_slice()) {
                Err(_) if header.is_none() => return Err(FileError::NotARecordFile),
                item => item.map_err(|e| malformed(format!("undecodable: {e}")))?,
            };
            match (item.item, &header) {
                (Some(Item::Header(h)), None) if index == 0 => {
                    if h.format != FORMAT {
                        return Err(FileError::NotARecordFile);
                    }
                    if h.format_version != FORMAT_VERSION {
                        return Err(FileError::UnsupportedVersion(h.format_version));
                    }
                    header = Some(h);
                }
                (_, None) => return Err(FileError::NotARecordFile),
                (_, Some(_)) if end.is_some() => {
                    return Err(malformed("an item after the end".into()));
                }
                (Some(Item::Record(r)), Some(_)) => {
                    game_entry(&mut games, &mut by_id, &r.game_id)
                        .records
                        .push(r);
                }
                (Some(Item::Observation(o)), Some(_)) => {
                    game_entry(&mut games, &mut by_id, &o.game_id)
                        .observations
                        .push(o);
                }
                (Some(Item::End(e)), Some(_)) => end = Some(e),
                (Some(Item::Header(_)), Some(_)) => {
                    return Err(malformed("a second header".into()));
                }
                (None, Some(_)) => return Err(malformed("an empty item".into())),
            }
            index += 1;
        }
        Ok(RecordFile {
            header: header.ok_or(FileError::NotARecordFile)?,
            games,
            end,
        })
    }

    /// Writes the file item by item, as read (the tests alter files this way).
    pub fn write(&self, out: impl Write) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(out);
        write_item(&mut out, Item::Header(self.header.clone()))?;
        for game in &self.games {
            for r in &game.records {
                write_item(&mut out, Item::Record(r.clone()))?;
            }
            for o in &game.observations {
                write_item(&mut out, Item::Observation(o.clone()))?;
            }
        }
        if let Some(end) = &self.end {
            write_item(&mut out, Item::End(end.clone()))?;
        }
        out.flush()
    }

    pub fn game(&self, game_id: &str) -> Option<&ExportedGame> {
        self.games.iter().find(|g| g.game_id == game_id)
    }
}

fn game_entry<'a>(
    games: &'a mut Vec<ExportedGame>,
    by_id: &mut BTreeMap<String, usize>,
    game_id: &str,
) -> &'a mut ExportedGame {
    let index = *by_id.entry(game_id.to_owned()).or_insert_with(|| {
        games.push(ExportedGame {
            game_id: game_id.to_owned(),
            ..Default::default()
        });
        games.len() - 1
    });
    &mut games[index]
}

/// The next length-delimited item, or `None` at a clean end of the file.
fn read_frame(
    input: &mut impl Read,
    offset: &mut u64,
    index: u64,
) -> Result<Option<Vec<u8>>, FileError> {
    let start = *offset;
    let mut length: u64 = 0;
    for shift in (0..64).step_by(7) {
        let mut byte = [0u8; 1];
        if input.read(&mut byte)? == 0 {
            if shift == 0 {
                return Ok(None);
            }
            return Err(FileError::Malformed {
                item: index,
                offset: start,
                reason: "the file ends inside an item's length".into(),
            });
        }
        *offset += 1;
        length |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            break;
        }
    }
    if length > MAX_ITEM_BYTES {
        return Err(FileError::Malformed {
            item: index,
            offset: start,
            reason: format!("an item of {length} bytes (at most {MAX_ITEM_BYTES})"),
        });
    }
    let mut bytes = Vec::new();
    let read = input.take(length).read_to_end(&mut bytes)?;
    *offset += read as u64;
    if read as u64 != length {
        return Err(FileError::Malformed {
            item: index,
            offset: start,
            reason: format!("the file ends inside the item ({read} of {length} bytes)"),
        });
    }
    Ok(Some(bytes))
}

fn write_item(out: &mut impl Write, item: Item) -> std::io::Result<()> {
    let bytes = RecordFileItem { item: Some(item) }.encode_length_delimited_to_vec();
    out.write_all(&bytes)
}

/// Writes a file as the records come: header first, then records and observations in any
/// order, and `finish` writes the end with each game's count and last hash.
pub struct RecordFileWriter<W: Write> {
    out: W,
    /// Per game: records, last record's hash, observations.
    summaries: BTreeMap<String, ExportedGameSummary>,
}

impl<W: Write> RecordFileWriter<W> {
    pub fn new(mut out: W, header: RecordFileHeader) -> std::io::Result<Self> {
        let header = RecordFileHeader {
            format: FORMAT.to_owned(),
            format_version: FORMAT_VERSION,
            ..header
        };
        write_item(&mut out, Item::Header(header))?;
        Ok(RecordFileWriter {
            out,
            summaries: BTreeMap::new(),
        })
    }

    fn summary(&mut self, game_id: &str) -> &mut ExportedGameSummary {
        self.summaries
            .entry(game_id.to_owned())
            .or_insert_with(|| ExportedGameSummary {
                game_id: game_id.to_owned(),
                ..Default::default()
            })
    }

    /// A record of `game_id`'s log, its stored bytes exactly.
    pub fn record(
        &mut self,
        game_id: &str,
        stream_seq: u64,
        payload: Vec<u8>,
    ) -> std::io::Result<()> {
        // The hash is read for the end's summary only; an undecodable payload is written as it
        // is and found by verification.
        let hash = GameEventRecord::decode(payload.as_slice())
            .map(|r| r.hash)
            .unwrap_or_default();
        let summary = self.summary(game_id);
        summary.records += 1;
        summary.head_hash = hash;
        write_item(
            &mut self.out,
            Item::Record(ExportedRecord {
                game_id: game_id.to_owned(),
                stream_seq,
                payload,
            }),
        )
    }

    /// An observation of `game_id`'s board, its stored bytes exactly.
    pub fn observation(
        &mut self,
        game_id: &str,
        stream_seq: u64,
        payload: Vec<u8>,
        stored_unix_ms: i64,
    ) -> std::io::Result<()> {
        self.summary(game_id).observations += 1;
        write_item(
            &mut self.out,
            Item::Observation(ExportedObservation {
                game_id: game_id.to_owned(),
                stream_seq,
                payload,
                stored_unix_ms,
            }),
        )
    }

    /// Writes the end and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        let games = std::mem::take(&mut self.summaries).into_values().collect();
        write_item(&mut self.out, Item::End(RecordFileEnd { games }))?;
        self.out.flush()?;
        Ok(self.out)
    }
}
