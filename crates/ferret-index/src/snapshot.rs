//! The index on disk: one file, written to a temporary name and renamed over the
//! old one, so a crash leaves the old snapshot or the new one, never half of one.
//!
//! Format (little-endian): magic `FERRETIX`, format version, a 64-bit hash of the
//! body, then the body: the configuration key (so another configuration's snapshot
//! is recognised as foreign), the roots, the records and the name arena.

use std::{fs, io, path::Path};

use crate::store::{NONE, Record, Store};

const MAGIC: &[u8; 8] = b"FERRETIX";
const VERSION: u32 = 2;

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

/// Serialise `store` (compacted first when it holds many tombstones).
pub fn encode(store: &Store, config_key: &[u8]) -> Vec<u8> {
    let compacted;
    let store = if store.garbage_ratio() > 0.0 {
        compacted = store.compact();
        &compacted
    } else {
        store
    };
    let mut body = Vec::with_capacity(store.records.len() * 34 + store.names.len() + 64);
    put_bytes(&mut body, config_key);
    put_u32(&mut body, store.roots.len() as u32);
    for &r in &store.roots {
        put_u32(&mut body, r);
    }
    put_u64(&mut body, store.records.len() as u64);
    for (r, &off) in store.records.iter().zip(&store.offsets) {
        put_u32(&mut body, off);
        body.extend_from_slice(&r.name_len.to_le_bytes());
        body.push(r.kind);
        body.push(r.flags);
        put_u32(&mut body, r.parent);
        put_u32(&mut body, r.first_child);
        put_u32(&mut body, r.next_sibling);
        body.extend_from_slice(&r.mode.to_le_bytes());
        put_u64(&mut body, r.size);
        put_u32(&mut body, r.mtime);
        put_u32(&mut body, r.btime);
    }
    put_bytes(&mut body, &store.names);
    let mut out = Vec::with_capacity(body.len() + 20);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, VERSION);
    put_u64(&mut out, hash64(&body));
    out.extend_from_slice(&body);
    out
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
    for _ in 0..roots {
        store.roots.push(r.u32()?);
    }
    let count = r.u64()? as usize;
    if count > body.len() / 34 + 1 {
        return Err(SnapshotError::Corrupt("record count"));
    }
    store.records.reserve_exact(count);
    store.offsets.reserve_exact(count);
    for _ in 0..count {
        store.offsets.push(r.u32()?);
        store.records.push(Record {
            name_len: r.u16()?,
            kind: r.u8()?,
            flags: r.u8()?,
            parent: r.u32()?,
            first_child: r.u32()?,
            next_sibling: r.u32()?,
            mode: r.u16()?,
            size: r.u64()?,
            mtime: r.u32()?,
            btime: r.u32()?,
        });
    }
    store.names = r.bytes()?.to_vec();
    // Check every reference before trusting the structure.
    let n = store.records.len() as u32;
    let ok_ref = |id: u32| id == NONE || id < n;
    for (rec, &off) in store.records.iter().zip(&store.offsets) {
        let end = off as usize + rec.name_len as usize;
        if end >= store.names.len()
            || !ok_ref(rec.parent)
            || !ok_ref(rec.first_child)
            || !ok_ref(rec.next_sibling)
        {
            return Err(SnapshotError::Corrupt("dangling reference"));
        }
    }
    if store.roots.iter().any(|&id| id >= n) {
        return Err(SnapshotError::Corrupt("root reference"));
    }
    store.lower = store.names.iter().map(u8::to_ascii_lowercase).collect();
    store.non_ascii = (0..n)
        .filter(|&id| store.records[id as usize].flags & 1 != 0)
        .collect();
    store.live = store
        .records
        .iter()
        .filter(|r| r.kind != crate::store::Kind::Free as u8)
        .count();
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
                btime: -1,
                mode: 0o600,
            },
        );
        s
    }

    #[test]
    fn round_trips() {
        let s = sample();
        let bytes = encode(&s, b"key");
        let back = decode(&bytes, b"key").unwrap();
        assert_eq!(back.len(), 3);
        let f = back.lookup(back.roots()[0], b"d\xffir/f.txt").unwrap();
        assert_eq!(back.meta(f).size, 5);
        assert_eq!(back.non_ascii.len(), 1);
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
