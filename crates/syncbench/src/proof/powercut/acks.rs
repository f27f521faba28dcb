//! The acknowledgement stream: one header line naming the run, then one line per record whose durable
//! write returned, and a line when the writer retires (deletes) old records to bound its disk use.
//!
//! ```text
//! syncbench-powercut 1 run=00c0ffee00c0ffee method=fdatasync durable=yes dir=/data
//! overwrite 0 0
//! append 1 0
//! new_file 2 0
//! retire append 0 16383
//! ```
//! A last line without its newline (the writer vanished mid-line) is ignored.

use super::record::{Kind, RecordId};
use crate::core::method::SyncMethod;
use std::collections::HashMap;
use std::path::PathBuf;

/// The first word of an acks file.
pub const HEADER_WORD: &str = "syncbench-powercut";
const VERSION: &str = "1";

/// Who the acknowledgements come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunHeader {
    /// The run id in every record.
    pub run: u64,
    /// The method named on the command line (written as `run` spells it).
    pub method: SyncMethod,
    /// Whether that method promises durability.
    pub durable: bool,
    /// The directory written to, canonical.
    pub dir: PathBuf,
}

impl RunHeader {
    /// The header line (with its newline).
    pub fn line(&self) -> String {
        let durable = if self.durable { "yes" } else { "no" };
        format!(
            "{HEADER_WORD} {VERSION} run={:016x} method={} durable={durable} dir={}\n",
            self.run,
            self.method,
            self.dir.display()
        )
    }

    /// Parse a header line; `None` if it is not one.
    pub fn parse(line: &str) -> Option<RunHeader> {
        let rest = line.strip_prefix(HEADER_WORD)?.strip_prefix(' ')?.strip_prefix(VERSION)?.strip_prefix(' ')?;
        let (fields, dir) = rest.split_once(" dir=")?;
        let mut words = fields.split(' ');
        let run = u64::from_str_radix(words.next()?.strip_prefix("run=")?, 16).ok()?;
        let method = SyncMethod::from_name(words.next()?.strip_prefix("method=")?)?;
        let durable = match words.next()?.strip_prefix("durable=")? {
            "yes" => true,
            "no" => false,
            _ => return None,
        };
        Some(RunHeader { run, method, durable, dir: PathBuf::from(dir) })
    }
}

/// One record acknowledged: the line the witness gets (with its newline).
pub fn ack_line(id: RecordId) -> String {
    format!("{} {} {}\n", id.kind.name(), id.seq, id.slot)
}

/// Records of `kind` with slots `first..=last` deleted by the writer: verify no longer expects them.
pub fn retire_line(kind: Kind, first: u64, last: u64) -> String {
    format!("retire {} {first} {last}\n", kind.name())
}

/// An acks file, read.
#[derive(Clone, Debug, Default)]
pub struct Acks {
    /// Every acknowledged record, in order.
    pub records: Vec<RecordId>,
    /// Slots retired per kind (inclusive ranges).
    pub retired: HashMap<Kind, Vec<(u64, u64)>>,
    /// Lines that are neither: a torn last line is not counted here.
    pub bad_lines: usize,
}

impl Acks {
    /// Whether `slot` of `kind` was retired.
    pub fn is_retired(&self, kind: Kind, slot: u64) -> bool {
        self.retired.get(&kind).is_some_and(|r| r.iter().any(|&(a, b)| (a..=b).contains(&slot)))
    }
}

/// Parse an acks file's text: its header and its lines. `Err` names what is wrong with it.
pub fn parse(text: &str) -> Result<(RunHeader, Acks), String> {
    // Only whole lines count: the writer may have lost its power in the middle of one.
    let whole = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    let mut lines = whole.lines();
    let first = lines.next().ok_or("it is empty (no header line: the writer never started)")?;
    let header = RunHeader::parse(first).ok_or("its first line is not a `syncbench-powercut 1` header")?;
    let mut acks = Acks::default();
    for line in lines {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["retire", kind, first, last] => match (Kind::from_name(kind), first.parse(), last.parse()) {
                (Some(kind), Ok(first), Ok(last)) => acks.retired.entry(kind).or_default().push((first, last)),
                _ => acks.bad_lines += 1,
            },
            [kind, seq, slot] => match (Kind::from_name(kind), seq.parse(), slot.parse()) {
                (Some(kind), Ok(seq), Ok(slot)) => acks.records.push(RecordId { kind, seq, slot }),
                _ => acks.bad_lines += 1,
            },
            _ if line.starts_with(HEADER_WORD) => return Err("it holds the acks of more than one run".into()),
            _ => acks.bad_lines += 1,
        }
    }
    Ok((header, acks))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> RunHeader {
        RunHeader { run: 0xabc, method: SyncMethod::Fdatasync, durable: true, dir: PathBuf::from("/mnt/a b") }
    }

    #[test]
    fn header_and_lines_round_trip_and_a_torn_last_line_is_ignored() {
        let id = RecordId { kind: Kind::NewFile, seq: 9, slot: 2 };
        let text = format!("{}{}{}append 10 1", header().line(), ack_line(id), retire_line(Kind::Append, 0, 5));
        let (h, acks) = parse(&text).unwrap();
        assert_eq!(h, header());
        assert_eq!(acks.records, vec![id]);
        assert!(acks.is_retired(Kind::Append, 5) && !acks.is_retired(Kind::Append, 6));
        assert_eq!(acks.bad_lines, 0);
    }

    #[test]
    fn no_header_or_two_runs_are_refused() {
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("append 1 1\n").unwrap_err().contains("header"));
        let two = format!("{}{}", header().line(), header().line());
        assert!(parse(&two).unwrap_err().contains("more than one run"));
        let unknown_method = header().line().replace("method=fdatasync", "method=fsync_writethrough");
        assert!(parse(&unknown_method).unwrap_err().contains("header"), "a method this syncbench does not know");
    }
}
