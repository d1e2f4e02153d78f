//! A [`Table`] as bytes, so that a restart does not parse every file again:
//! each file's path, modification time, size, when it was read and what it
//! held (files that could not be read are left out: they are tried again).
//! The caller writes and reads the bytes (this crate does no I/O); a table
//! read back (each file taken in as it is read, so the table is never held
//! twice) is checked file by file by the caller's next [`Table::refresh`],
//! which parses again only what moved since.
//!
//! Layout (little-endian): [`MAGIC`], the format and extraction versions,
//! the crate's version, the [`Limits`], the caller's key, the files, and a
//! CRC-32 of everything before it. Bytes that were written by another
//! version, under other limits or for another key, or that are cut or
//! altered, are refused whole. Written by hand because it is a few fields
//! per record and the crate otherwise needs no serialisation framework.

use crate::{
    extract::{Kind, Limits, Skip, Symbol},
    find::fold,
    table::{Source, State, Status, Table},
};

const MAGIC: &[u8; 8] = b"frtsymb\n";
/// The layout's version.
const FORMAT: u32 = 2;
/// What extraction gives for the same bytes: bumped whenever a grammar, a
/// query or the turning of captures into symbols changes, so that outlines
/// saved by an older binary are parsed again.
const EXTRACTION: u32 = 2;

/// Why saved bytes were not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

fn cut() -> Refused {
    Refused("cut short".into())
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Refused> {
        if self.rest.len() < n {
            return Err(cut());
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Refused> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Refused> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().map_err(|_| cut())?,
        ))
    }
    fn u64(&mut self) -> Result<u64, Refused> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| cut())?,
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8], Refused> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, Refused> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| Refused("a name is not UTF-8".into()))
    }
}

fn header(w: &mut Writer, limits: Limits, key: &[u8]) {
    w.0.extend_from_slice(MAGIC);
    w.u32(FORMAT);
    w.u32(EXTRACTION);
    w.bytes(env!("CARGO_PKG_VERSION").as_bytes());
    w.u64(limits.max_bytes as u64);
    w.u64(limits.max_symbols as u64);
    w.u64(limits.max_time.as_millis() as u64);
    w.bytes(key);
}

const NO_CONTAINER: u32 = u32::MAX;

fn kind_code(k: Kind) -> u8 {
    crate::KINDS
        .iter()
        .position(|&x| x == k)
        .expect("every kind is in KINDS") as u8
}

impl Table {
    /// The table as bytes for [`Table::from_bytes`]; `key` names what it
    /// belongs to (the caller's roots and rules), and bytes saved under
    /// another key are refused.
    pub fn to_bytes(&self, key: &[u8]) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        header(&mut w, self.limits(), key);
        // A file that could not be read is not kept: it is tried again
        // after a restart (see `Table::insert_saved`).
        let st = self.stats();
        w.u64((st.files - st.unreadable) as u64);
        let files = self.held().filter(|f| f.4 != Status::Unreadable);
        for (path, mtime, size, read_at, status, symbols) in files {
            w.bytes(path.as_bytes());
            w.u64(mtime as u64);
            w.u64(size);
            w.u64(read_at as u64);
            match status {
                Status::Read { errors, truncated } => {
                    w.u8(0);
                    w.u8(u8::from(errors) | (u8::from(truncated) << 1));
                    w.u32(symbols.len() as u32);
                    for s in symbols {
                        w.bytes(s.name.as_bytes());
                        w.u8(kind_code(s.kind));
                        match s.container {
                            Some(c) => w.bytes(c.as_bytes()),
                            None => w.u32(NO_CONTAINER),
                        }
                        w.u32(s.line);
                        w.u32(s.end_line);
                        w.u32(s.doc_line);
                    }
                }
                Status::Skipped(Skip::TooLarge) => w.u8(2),
                Status::Skipped(Skip::TimedOut) => w.u8(3),
                Status::Unreadable => w.u8(4),
            }
        }
        let crc = crc32fast::hash(&w.0);
        w.u32(crc);
        w.0
    }

    /// A table from [`Table::to_bytes`]'s bytes, extracted (from now on)
    /// within `limits`; refused when the bytes were saved by another
    /// version of this crate, under other limits or another `key`, or are
    /// damaged.
    pub fn from_bytes(bytes: &[u8], limits: Limits, key: &[u8]) -> Result<Table, Refused> {
        if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(Refused("not a saved symbols table".into()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body).to_le_bytes() != crc {
            return Err(Refused("damaged (its checksum does not match)".into()));
        }
        let mut expected = Writer(Vec::new());
        header(&mut expected, limits, key);
        if !body.starts_with(&expected.0) {
            return Err(Refused(
                "saved by another version, under other limits or for other roots".into(),
            ));
        }
        let mut r = Reader {
            rest: &body[expected.0.len()..],
        };
        let count = r.u64()? as usize;
        // Each file is taken in as it is read, so that the table is never
        // held twice.
        let mut table = Table::new(limits);
        for _ in 0..count {
            let path = r.string()?;
            let mtime = r.u64()? as i64;
            let size = r.u64()?;
            let read_at = r.u64()? as i64;
            let state = match r.u8()? {
                0 => {
                    let flags = r.u8()?;
                    let n = r.u32()? as usize;
                    let mut symbols = Vec::with_capacity(n.min(limits.max_symbols));
                    for _ in 0..n {
                        let name = r.string()?;
                        let kind = crate::KINDS
                            .get(r.u8()? as usize)
                            .copied()
                            .ok_or_else(|| Refused("an unknown kind".into()))?;
                        let container = match r.u32()? {
                            NO_CONTAINER => None,
                            len => Some(
                                String::from_utf8(r.take(len as usize)?.to_vec())
                                    .map_err(|_| Refused("a name is not UTF-8".into()))?,
                            ),
                        };
                        let (line, end_line, doc_line) = (r.u32()?, r.u32()?, r.u32()?);
                        let folded = fold(&name);
                        symbols.push((
                            Symbol {
                                name,
                                kind,
                                container,
                                line,
                                end_line,
                                doc_line,
                            },
                            folded,
                        ));
                    }
                    State::Read(symbols, flags & 1 != 0, flags & 2 != 0)
                }
                2 => State::Skipped(Skip::TooLarge),
                3 => State::Skipped(Skip::TimedOut),
                4 => State::Unreadable,
                _ => return Err(Refused("an unknown file state".into())),
            };
            table.insert_saved(&Source { path, mtime, size }, read_at, state);
        }
        if !r.rest.is_empty() {
            return Err(Refused("bytes past the last file".into()));
        }
        table.shrink_to_fit();
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::{find::NameQuery, table::Stats};

    fn source(path: &str, mtime: i64) -> Source {
        Source {
            path: path.into(),
            mtime,
            size: 1,
        }
    }

    fn answer(table: &Table, q: &str) -> Vec<(String, String, Option<String>, u32, u32)> {
        table
            .search(&NameQuery::new(q), |_, _| true, 0, 50)
            .hits
            .iter()
            .map(|h| {
                (
                    h.path.to_string(),
                    h.symbol.name.clone(),
                    h.symbol.container.clone(),
                    h.symbol.line,
                    h.symbol.end_line,
                )
            })
            .collect()
    }

    #[test]
    fn a_table_read_back_answers_alike_and_parses_nothing_again() {
        let files: HashMap<&str, &[u8]> = [
            (
                "src/a.rs",
                &b"/// doc\nstruct Parser;\nimpl Parser {\n    fn parse(&self) {}\n}\n"[..],
            ),
            (
                "b.py",
                b"class Parser:\n    def parse(self):\n        pass\n",
            ),
            ("big.go", b"package x\n"),
            ("gone.c", b"int parse(void) { return 0; }\n"),
        ]
        .into_iter()
        .collect();
        let sources: Vec<Source> = files.keys().map(|p| source(p, 10)).collect();
        let limits = Limits::default();
        let mut table = Table::new(limits);
        // `gone.c` unreadable (as a sensitive file is); read long after
        // the files' times, so they are settled.
        table.refresh(&sources, 100, 1, |p| {
            (p != "gone.c").then(|| files[p].to_vec())
        });
        let bytes = table.to_bytes(b"roots A");
        let back = Table::from_bytes(&bytes, limits, b"roots A").expect("reads back");
        // All but the unreadable file, which the next refresh tries again.
        assert_eq!(table.stats().unreadable, 1);
        let expected = Stats {
            files: table.stats().files - 1,
            unreadable: 0,
            ..table.stats()
        };
        assert_eq!(back.stats(), expected);
        for q in ["parse", "Parser", "pars", "prase"] {
            assert_eq!(answer(&back, q), answer(&table, q), "{q}");
        }
        let doc = back
            .search(&NameQuery::new("Parser"), |p, _| p == "src/a.rs", 0, 1)
            .hits[0]
            .symbol
            .doc_line;
        assert_eq!(doc, 1);
        // Nothing moved: nothing is parsed again; what moved is.
        let mut back = back;
        let r = back.refresh(&sources, 200, 1, |p| {
            assert_eq!(p, "gone.c", "only the unreadable file is tried again");
            None
        });
        assert_eq!(r.read, 1);
        let mut moved = sources.clone();
        moved.retain(|s| s.path != "b.py");
        moved.push(source("b.py", 150));
        let r = back.refresh(&moved, 200, 1, |p| Some(files[p].to_vec()));
        assert_eq!(r.read, 1);
    }

    #[test]
    fn other_keys_limits_and_damaged_bytes_are_refused() {
        let mut table = Table::new(Limits::default());
        table.refresh(&[source("a.rs", 1)], 100, 1, |_| {
            Some(b"fn a() {}\n".to_vec())
        });
        let bytes = table.to_bytes(b"k");
        assert!(Table::from_bytes(&bytes, Limits::default(), b"k").is_ok());
        assert!(Table::from_bytes(&bytes, Limits::default(), b"other").is_err());
        let fewer = Limits {
            max_symbols: 10,
            ..Limits::default()
        };
        assert!(Table::from_bytes(&bytes, fewer, b"k").is_err());
        for at in [0, 9, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(
                Table::from_bytes(&bad, Limits::default(), b"k").is_err(),
                "{at}"
            );
        }
        for len in [0, 5, bytes.len() - 5, bytes.len() - 1] {
            assert!(Table::from_bytes(&bytes[..len], Limits::default(), b"k").is_err());
        }
        assert!(Table::from_bytes(b"", Limits::default(), b"k").is_err());
    }
}
