//! The index on disk: one file, written to a temporary name and renamed over the
//! old one, so a crash leaves the old snapshot or the new one, never half of one.
//!
//! Format (little-endian): magic `FERRETIX`, format version, a 64-bit hash of the
//! body, then the body: the configuration key (so another configuration's snapshot
//! is recognised as foreign), the roots, then each folder's children (breadth
//! first), each entry with its name and metadata.

use std::{fs, io, path::Path};

use crate::names::name_order;
use crate::store::{Kind, Meta, NewEntry, Store, from_secs, to_secs};

const MAGIC: &[u8; 8] = b"FERRETIX";
const VERSION: u32 = 3;

/// Why a snapshot was not used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("no snapshot yet")]
    Missing,
    #[error("snapshot unreadable: {0}")]
    Io(#[from] io::Error),
    #[error("snapshot is corrupt or truncated ({0})")]
    Corrupt(&'static str),
    #[error("snapshot belongs to another configuration or version")]
    Foreign,
}

/// A fast 64-bit hash for detecting corruption. Written here because a
/// corruption check needs no cryptography and no extra dependency: it mixes whole
/// 8-byte words (multiply-xorshift), so hashing tens of megabytes takes milliseconds.
pub fn hash64(data: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ data.len() as u64;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        h = (h ^ w).wrapping_mul(K);
        h ^= h >> 29;
    }
    for &b in chunks.remainder() {
        h = (h ^ b as u64).wrapping_mul(K);
    }
    h ^ (h >> 32)
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u64(out, b.len() as u64);
    out.extend_from_slice(b);
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self
            .at
            .checked_add(n)
            .ok_or(SnapshotError::Corrupt("length"))?;
        let s = self
            .data
            .get(self.at..end)
            .ok_or(SnapshotError::Corrupt("truncated"))?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, SnapshotError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, SnapshotError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().unwrap_or([0; 2]),
        ))
    }
    fn u32(&mut self) -> Result<u32, SnapshotError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn u64(&mut self) -> Result<u64, SnapshotError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    fn bytes(&mut self) -> Result<&'a [u8], SnapshotError> {
        let n = self.u64()? as usize;
        self.take(n)
    }
}

/// Serialise `store`: the roots, then folder by folder (breadth first) each
/// folder's children in name order, so ids come out compacted and every
/// folder's children in one run. The sorted orders are not stored: loading
/// rebuilds them.
pub fn encode(store: &Store, config_key: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(store.len() * 40 + 64);
    put_bytes(&mut body, config_key);
    put_u32(&mut body, store.roots().len() as u32);
    let entry = |body: &mut Vec<u8>, id: u32| {
        let name = store.name(id);
        body.extend_from_slice(&(name.len() as u16).to_le_bytes());
        body.extend_from_slice(name);
        let kind = store.kind(id);
        body.push(kind as u8);
        let m = store.meta(id);
        body.extend_from_slice(&(m.mode as u16).to_le_bytes());
        put_u64(body, m.size);
        put_u32(body, to_secs(m.mtime));
        put_u32(body, to_secs(m.btime));
        if kind == Kind::Dir {
            let (dev, ino) = store.dir(id).map_or((0, 0), |d| (d.dev, d.ino));
            put_u64(body, dev);
            put_u64(body, ino);
        }
    };
    let mut queue: std::collections::VecDeque<u32> = store.roots().iter().copied().collect();
    for &r in store.roots() {
        entry(&mut body, r);
    }
    while let Some(dir) = queue.pop_front() {
        let children = store.children(dir);
        put_u32(&mut body, children.len() as u32);
        for &c in children {
            entry(&mut body, c);
            if store.kind(c) == Kind::Dir {
                queue.push_back(c);
            }
        }
    }
    let mut out = Vec::with_capacity(body.len() + 20);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, VERSION);
    put_u64(&mut out, hash64(&body));
    out.extend_from_slice(&body);
    out
}

fn read_entry(r: &mut Reader<'_>) -> Result<NewEntry, SnapshotError> {
    let len = r.u16()? as usize;
    let name = r.take(len)?.to_vec();
    if name.is_empty() && len > 0 {
        return Err(SnapshotError::Corrupt("name"));
    }
    let kind = Kind::from_u8(r.u8()?);
    if kind == Kind::Free {
        return Err(SnapshotError::Corrupt("kind"));
    }
    let mode = r.u16()? as u32;
    let size = r.u64()?;
    let mtime = from_secs(r.u32()?);
    let btime = from_secs(r.u32()?);
    let ident = if kind == Kind::Dir {
        (r.u64()?, r.u64()?)
    } else {
        (0, 0)
    };
    Ok(NewEntry {
        name,
        kind,
        meta: Meta {
            size,
            mtime,
            btime,
            mode,
        },
        ident,
    })
}

pub fn decode(data: &[u8], config_key: &[u8]) -> Result<Store, SnapshotError> {
    if data.len() < 20 || &data[..8] != MAGIC {
        return Err(SnapshotError::Corrupt("not a ferret snapshot"));
    }
    let mut head = Reader { data, at: 8 };
    if head.u32()? != VERSION {
        return Err(SnapshotError::Foreign);
    }
    let hash = head.u64()?;
    let body = &data[20..];
    if hash64(body) != hash {
        return Err(SnapshotError::Corrupt("checksum mismatch"));
    }
    let mut r = Reader { data: body, at: 0 };
    if r.bytes()? != config_key {
        return Err(SnapshotError::Foreign);
    }
    let mut store = Store::new();
    let roots = r.u32()? as usize;
    if roots > 4096 {
        return Err(SnapshotError::Corrupt("root count"));
    }
    let mut queue = std::collections::VecDeque::new();
    for _ in 0..roots {
        let e = read_entry(&mut r)?;
        if e.kind != Kind::Dir {
            return Err(SnapshotError::Corrupt("root kind"));
        }
        let id = store.add_root(&e.name, e.meta);
        store.set_ident(id, e.ident);
        queue.push_back(id);
    }
    while let Some(dir) = queue.pop_front() {
        let count = r.u32()? as usize;
        // Each entry takes at least 21 bytes: refuse counts the data cannot hold.
        if count > (body.len() - r.at) / 21 {
            return Err(SnapshotError::Corrupt("entry count"));
        }
        let mut batch = Vec::with_capacity(count);
        for _ in 0..count {
            batch.push(read_entry(&mut r)?);
        }
        if batch
            .windows(2)
            .any(|w| name_order(&w[0].name, &w[1].name) != std::cmp::Ordering::Less)
        {
            return Err(SnapshotError::Corrupt("children out of order"));
        }
        for id in store.insert_walked(dir, batch) {
            if store.kind(id) == Kind::Dir {
                queue.push_back(id);
            }
        }
    }
    if r.at != body.len() {
        return Err(SnapshotError::Corrupt("trailing bytes"));
    }
    store.rebuild();
    store.shrink_to_fit();
    Ok(store)
}

pub fn load(path: &Path, config_key: &[u8]) -> Result<Store, SnapshotError> {
    let data = match fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(SnapshotError::Missing),
        Err(e) => return Err(e.into()),
    };
    decode(&data, config_key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Kind, Meta};

    fn sample() -> Store {
        let mut s = Store::new();
        let root = s.add_root(b"r", Meta::default());
        let d = s.insert_new(root, b"d\xffir", Kind::Dir, Meta::default());
        s.insert_new(
            d,
            b"f.txt",
            Kind::File,
            Meta {
                size: 5,
                mtime: 7,
                btime: crate::store::UNKNOWN_TIME,
                mode: 0o600,
            },
        );
        s.insert_new(d, b"a", Kind::Symlink, Meta::default());
        s
    }

    #[test]
    fn round_trips() {
        let s = sample();
        let bytes = encode(&s, b"key");
        let back = decode(&bytes, b"key").unwrap();
        assert_eq!(back.len(), 4);
        let f = back.lookup(back.roots()[0], b"d\xffir/f.txt").unwrap();
        assert_eq!(back.meta(f).size, 5);
        assert_eq!(back.meta(f).btime, crate::store::UNKNOWN_TIME);
        assert_eq!(
            encode(&back, b"key"),
            bytes,
            "a loaded snapshot saves the same"
        );
    }

    #[test]
    fn corrupt_truncated_and_foreign_snapshots_are_refused() {
        let bytes = encode(&sample(), b"key");
        assert!(matches!(
            decode(&bytes, b"other"),
            Err(SnapshotError::Foreign)
        ));
        assert!(matches!(
            decode(&bytes[..bytes.len() - 3], b"key"),
            Err(SnapshotError::Corrupt(_))
        ));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 0xff;
        assert!(matches!(
            decode(&flipped, b"key"),
            Err(SnapshotError::Corrupt(_))
        ));
        assert!(matches!(
            decode(b"garbage", b"key"),
            Err(SnapshotError::Corrupt(_))
        ));
        assert!(decode(&[], b"key").is_err());
    }
}
