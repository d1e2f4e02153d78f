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
use crate::wire::{ALIGN, Reader, Writer};
pub use crate::wire::{Hasher, SnapshotError, hash64};

const MAGIC: &[u8; 8] = b"FERRETIX";
/// 5: names fold to their composed form (NFC), so the name lists and trigram
/// lists of a version 4 snapshot are not this build's. 6: the rank order and
/// the entries moved since it was built. 7: names fold without their
/// diacritics, so a version 6 snapshot's name masks and lists are not this
/// build's. 8: posting lists hold runs of consecutive ids, and records
/// keep a size in four bytes (larger sizes beside them).
const VERSION: u32 = 8;

/// The header's length: magic, version, byte order, hash. A multiple of
/// [`ALIGN`], so that the body's aligned arrays are aligned in the file.
const HEADER: usize = 24;

/// Written as the byte order mark: arrays are stored as they lie in memory.
const ORDER: u32 = 0x0102_0304;

const _: () = assert!(HEADER.is_multiple_of(ALIGN));

fn header(hash: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&ORDER.to_ne_bytes());
    h[16..24].copy_from_slice(&hash.to_le_bytes());
    h
}

/// The snapshot of `store`, in memory (what [`write`] puts in a file).
pub fn encode(store: &Store, config_key: &[u8]) -> Vec<u8> {
    let mut out = io::Cursor::new(Vec::new());
    write(store, config_key, &mut out).expect("writing to memory cannot fail");
    out.into_inner()
}

/// Write the snapshot of `store` to `file` (at its start) as it is made,
/// holding no copy of it: the bytes are counted once, then written and
/// hashed, and the hash put in the header. Returns the bytes written.
pub fn write(
    store: &Store,
    config_key: &[u8],
    file: &mut (impl io::Write + io::Seek),
) -> io::Result<u64> {
    let mut count = Writer::count();
    count.bytes(config_key);
    store.write_to(&mut count);
    let body = count.len();
    file.write_all(&header(0))?;
    let mut w = Writer::stream(&mut *file, Hasher::new(body), HEADER as u64);
    w.bytes(config_key);
    store.write_to(&mut w);
    let len = w.len();
    let hash = w.finish()?;
    debug_assert_eq!(len, HEADER as u64 + body);
    file.seek(io::SeekFrom::Start(16))?;
    file.write_all(&hash.to_le_bytes())?;
    Ok(len)
}

/// How much of a snapshot is checked before it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Every byte against the hash and every reference between the arrays:
    /// what a server that will live on a snapshot does.
    Checked,
    /// The header, the configuration key and the layout (every array's
    /// length inside the file) only: what a one-shot `ferret search` does,
    /// to answer in milliseconds. A damaged byte elsewhere can then give a
    /// wrong answer or stop the search on a bounds check, never read
    /// outside the file.
    Layout,
}

/// A store from snapshot bytes (copied out of them), checked whole.
pub fn decode(data: &[u8], config_key: &[u8]) -> Result<Store, SnapshotError> {
    read(data, None, config_key, Trust::Checked)
}

fn read(
    data: &[u8],
    map: Option<&std::sync::Arc<memmap2::Mmap>>,
    config_key: &[u8],
    trust: Trust,
) -> Result<Store, SnapshotError> {
    if data.len() < HEADER || &data[..8] != MAGIC {
        return Err(SnapshotError::Corrupt("not a ferret snapshot"));
    }
    let mut head = Reader {
        data,
        at: 8,
        map: None,
        deep: true,
    };
    // Another version, or arrays written in another byte order.
    if head.u32()? != VERSION || head.take(4)? != ORDER.to_ne_bytes() {
        return Err(SnapshotError::Foreign);
    }
    let hash = head.u64()?;
    let body = &data[HEADER..];
    let deep = trust == Trust::Checked;
    if deep && hash64(body) != hash {
        return Err(SnapshotError::Corrupt("checksum mismatch"));
    }
    let mut r = Reader {
        data: body,
        at: 0,
        map: map.map(|m| (m, HEADER)),
        deep,
    };
    if r.bytes()? != config_key {
        return Err(SnapshotError::Foreign);
    }
    let store = Store::read_from(&mut r)?;
    if !r.at_end() {
        return Err(SnapshotError::Corrupt("trailing bytes"));
    }
    if deep {
        store.check().map_err(SnapshotError::Corrupt)?;
    }
    Ok(store)
}

/// The snapshot at `path`, memory-mapped: its big arrays are read in place
/// (and copied only when the store changes them), checked as `trust` says.
pub fn load_with(path: &Path, config_key: &[u8], trust: Trust) -> Result<Store, SnapshotError> {
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(SnapshotError::Missing),
        Err(e) => return Err(e.into()),
    };
    // SAFETY: the snapshot is ferret's own file in its private state folder,
    // replaced only by renaming a new file over it (never written in place),
    // so the mapped bytes do not change under the map; the map is private
    // and read-only.
    let map = std::sync::Arc::new(unsafe { memmap2::Mmap::map(&file) }?);
    let store = read(&map, Some(&map), config_key, trust)?;
    if trust == Trust::Checked {
        // Checking read every page: they leave the process's memory, and
        // searches bring back those they read. (A restart's reconciling
        // walk builds a second tree beside the loaded one; with every page
        // of the file still resident too, that was its peak.)
        // SAFETY: as for the map above: dropped pages are read back from
        // the file, unchanged.
        let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
    }
    Ok(store)
}

/// [`load_with`], checked whole.
pub fn load(path: &Path, config_key: &[u8]) -> Result<Store, SnapshotError> {
    load_with(path, config_key, Trust::Checked)
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

    /// The copy a snapshot is written from shares every array with the
    /// store (none is copied to take it) and keeps the moment it was taken
    /// however the store changes after; once it is let go, a change copies
    /// nothing.
    #[test]
    fn a_copy_for_a_snapshot_shares_the_arrays_and_keeps_its_moment() {
        let mut s = sample();
        let root = s.roots()[0];
        for i in 0..100 {
            s.insert_new(
                root,
                format!("report_{i}.txt").as_bytes(),
                Kind::File,
                Meta::default(),
            );
        }
        crate::orders::rebuild_store(&mut s);
        let before = encode(&s, b"key");
        let copy = s.for_snapshot();
        let mut part = 0;
        while let Some(mine) = s.part_bytes(part) {
            assert!(!mine.is_empty() || part > 0);
            assert_eq!(
                mine.as_ptr(),
                copy.part_bytes(part).unwrap().as_ptr(),
                "part {part} copied"
            );
            part += 1;
        }
        assert!(part > 10, "every part compared");
        assert_eq!(s.dirs.as_ptr(), copy.dirs.as_ptr());
        let f = s.lookup(root, b"report_3.txt").unwrap();
        s.set_meta(
            f,
            Meta {
                size: 77,
                ..s.meta(f)
            },
        );
        s.insert_new(root, b"late.txt", Kind::File, Meta::default());
        assert_ne!(
            s.records.as_ptr(),
            copy.records.as_ptr(),
            "the store's records copied to change"
        );
        assert_eq!(encode(&copy, b"key"), before, "the copy as it was taken");
        assert_eq!(copy.meta(f).size, 0);
        drop(copy);
        drop(s.for_snapshot());
        let records = s.records.as_ptr();
        s.set_meta(
            f,
            Meta {
                size: 78,
                ..s.meta(f)
            },
        );
        assert_eq!(s.records.as_ptr(), records, "shared no longer: not copied");
        assert_eq!(s.meta(f).size, 78);
        s.check().unwrap();
    }

    /// Records keep a size in four bytes; sizes of 4 GiB and more are kept
    /// beside them, changed, freed with their entry and saved.
    #[test]
    fn sizes_of_four_gib_and_more_are_kept_whole() {
        let mut s = sample();
        let root = s.roots()[0];
        let sizes = [
            0,
            u64::from(u32::MAX) - 1,
            u64::from(u32::MAX),
            1 << 32,
            5 << 30,
            u64::MAX,
        ];
        let meta = |size| Meta {
            size,
            ..Meta::default()
        };
        let ids: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                s.insert_new(root, format!("f{i}").as_bytes(), Kind::File, meta(size))
            })
            .collect();
        let check = |s: &Store, want: &[u64]| {
            for (&id, &size) in ids.iter().zip(want) {
                assert_eq!(s.meta(id).size, size);
            }
        };
        check(&s, &sizes);
        let back = decode(&encode(&s, b"key"), b"key").unwrap();
        check(&back, &sizes);
        // Large to small and back; a large one freed, its slot taken by a
        // small file, which is not taken for large.
        s.set_meta(ids[3], meta(7));
        s.set_meta(ids[0], meta(6 << 30));
        s.remove(ids[4]);
        let reused = s.insert_new(root, b"again", Kind::File, meta(12));
        assert_eq!(reused, ids[4], "the freed slot is reused");
        assert_eq!(s.meta(reused).size, 12);
        let want = [6 << 30, sizes[1], sizes[2], 7, 12, u64::MAX];
        check(&s, &want);
        let back = decode(&encode(&s, b"key"), b"key").unwrap();
        check(&back, &want);
        assert_eq!(back.big.len(), 3);
        // A load refuses a marked record without its size, and a size kept
        // for a record that is not marked.
        assert!(back.check().is_ok());
        let mut lost = back.clone();
        lost.big.remove(&ids[0]);
        assert!(lost.check().is_err());
        let mut stray = back.clone();
        stray.big.insert(ids[3], 7);
        assert!(stray.check().is_err());
    }

    #[test]
    fn a_snapshot_streamed_through_many_buffers_loads_whole() {
        let mut s = sample();
        // Enough entries that the stream hands on several buffers, and
        // arrays larger than one go straight through.
        let root = s.roots()[0];
        for i in 0..60_000u32 {
            s.insert_new(
                root,
                format!("file-{i:06}.txt").as_bytes(),
                Kind::File,
                Meta::default(),
            );
        }
        crate::orders::rebuild_store(&mut s);
        let bytes = encode(&s, b"key");
        assert!(bytes.len() > 2 * crate::wire::STREAM_BUFFER_FOR_TESTS);
        // The hash made on the way is the hash of the body, and every array
        // lies where its length says (the load checks both, every reference
        // too).
        let back = decode(&bytes, b"key").unwrap();
        assert_eq!(back.len(), s.len());
        assert!(back.lookup(back.roots()[0], b"file-059999.txt").is_some());
        assert_eq!(
            encode(&back, b"key"),
            bytes,
            "a loaded snapshot saves the same"
        );
    }

    #[test]
    fn the_hash_of_pieces_is_the_hash_of_the_whole() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for cuts in [
            vec![],
            vec![1],
            vec![3, 5, 8],
            vec![7, 7, 300, 301, 999],
            vec![8, 16, 24],
        ] {
            let mut h = Hasher::new(data.len() as u64);
            let mut at = 0;
            for &c in &cuts {
                h.update(&data[at..c]);
                at = c;
            }
            h.update(&data[at..]);
            assert_eq!(h.finish(), hash64(&data), "cuts {cuts:?}");
        }
        // The same value as the hash written before pieces were hashed.
        assert_eq!(
            hash64(b""),
            0xCBF2_9CE4_8422_2325 ^ (0xCBF2_9CE4_8422_2325 >> 32)
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

    /// Each part's bytes, as the read-back compares them, are the array
    /// `adopt_part` takes for that part: after it is taken, the store reads
    /// the very bytes of the map that were compared; every part is named,
    /// and each but the empty ones is taken.
    #[test]
    fn the_bytes_compared_are_the_array_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let mut s = sample();
        crate::orders::rebuild_store(&mut s);
        fs::write(&path, encode(&s, b"key")).unwrap();
        let mut saved = load_with(&path, b"key", Trust::Layout).unwrap();
        let mut taken = 0;
        for part in 0.. {
            let Some(theirs) = saved.part_bytes(part) else {
                assert!(s.part_bytes(part).is_none(), "as many parts");
                assert_eq!(part, 3 + crate::names::Names::PARTS + 6);
                break;
            };
            let (at, len) = (theirs.as_ptr(), theirs.len());
            assert_eq!(s.part_bytes(part).unwrap(), theirs, "part {part}");
            s.adopt_part(&mut saved, part, true).unwrap();
            let mine = s.part_bytes(part).unwrap();
            if len > 0 {
                assert_eq!((mine.as_ptr(), mine.len()), (at, len), "part {part}");
                taken += 1;
            }
        }
        assert!(taken >= 10, "{taken}");
        s.check().unwrap();
    }

    /// A mapped snapshot answers from the file's own bytes, whatever it
    /// trusts, and a change copies only what it changes; damage is refused
    /// by the checked load, truncation and another configuration by both.
    #[test]
    fn a_mapped_snapshot_answers_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let mut s = sample();
        crate::orders::rebuild_store(&mut s);
        let bytes = encode(&s, b"key");
        fs::write(&path, &bytes).unwrap();
        for trust in [Trust::Checked, Trust::Layout] {
            let mut back = load_with(&path, b"key", trust).unwrap();
            assert!(back.records.is_mapped() && back.base.by_name.is_mapped());
            assert_eq!(encode(&back, b"key"), bytes, "{trust:?}");
            let f = back.lookup(back.roots()[0], b"d\xffir/f.txt").unwrap();
            back.set_meta(
                f,
                crate::store::Meta {
                    size: 9,
                    ..back.meta(f)
                },
            );
            assert!(!back.records.is_mapped() && back.base.by_name.is_mapped());
            assert_eq!(back.meta(f).size, 9);
        }
        assert_eq!(fs::read(&path).unwrap(), bytes, "the file is never written");
        let mut damaged = bytes.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x55;
        fs::write(&path, &damaged).unwrap();
        assert!(matches!(
            load_with(&path, b"key", Trust::Checked),
            Err(SnapshotError::Corrupt(_))
        ));
        fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        for trust in [Trust::Checked, Trust::Layout] {
            assert!(load_with(&path, b"key", trust).is_err(), "{trust:?}");
        }
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            load_with(&path, b"other", Trust::Layout),
            Err(SnapshotError::Foreign)
        ));
        assert!(matches!(
            load_with(&dir.path().join("none"), b"key", Trust::Layout),
            Err(SnapshotError::Missing)
        ));
    }
}
