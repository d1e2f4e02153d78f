//! The index on disk: one file, written to a temporary name and renamed over the
//! old one, so a crash leaves the old snapshot or the new one, never half of one.
//!
//! Format (little-endian): magic `FERRETIX`, format version, a 64-bit hash of the
//! body, then the body: the configuration key (so another configuration's
//! snapshot is recognised as foreign) and the store's own arrays, the sorted
//! orders and name lists included, so a restart answers as soon as the file is
//! read: nothing is sorted again. Every reference is checked before the store is
//! trusted ([`Store::check`]).

use std::{fs, io, path::Path};

use crate::store::Store;
pub use crate::wire::SnapshotError;
use crate::wire::{Reader, Writer};

const MAGIC: &[u8; 8] = b"FERRETIX";
/// 5: names fold to their composed form (NFC), so the name lists and trigram
/// lists of a version 4 snapshot are not this build's. 6: the rank order and
/// the entries moved since it was built.
const VERSION: u32 = 6;

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

pub fn encode(store: &Store, config_key: &[u8]) -> Vec<u8> {
    let mut w = Writer {
        out: Vec::with_capacity(store.len() * 96 + 64),
    };
    w.bytes(config_key);
    store.write_to(&mut w);
    let body = w.out;
    let mut out = Vec::with_capacity(body.len() + 20);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&hash64(&body).to_le_bytes());
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
    let store = Store::read_from(&mut r)?;
    if !r.at_end() {
        return Err(SnapshotError::Corrupt("trailing bytes"));
    }
    store.check().map_err(SnapshotError::Corrupt)?;
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
