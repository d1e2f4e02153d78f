//! The byte layout the snapshot is written in: little-endian numbers and
//! length-prefixed runs, read back without ever reading past the end. The
//! store and its parts write themselves with it ([`crate::snapshot`] frames
//! the whole).

use std::{io, sync::Arc};

use bytemuck::Pod;

use crate::arr::Arr;

/// A fast 64-bit hash for detecting corruption. Written here because a
/// corruption check needs no cryptography and no extra dependency: it mixes whole
/// 8-byte words (multiply-xorshift), so hashing tens of megabytes takes milliseconds.
pub fn hash64(data: &[u8]) -> u64 {
    let mut h = Hasher::new(data.len() as u64);
    h.update(data);
    h.finish()
}

const HASH_K: u64 = 0x9E37_79B9_7F4A_7C15;

/// [`hash64`] of bytes that come in pieces (a snapshot streamed to its
/// file, a mapped file read a part at a time); the total length must be
/// known at the start.
pub struct Hasher {
    h: u64,
    tail: [u8; 8],
    held: usize,
}

impl Hasher {
    /// A hash of `len` bytes to come.
    pub fn new(len: u64) -> Hasher {
        Hasher {
            h: 0xCBF2_9CE4_8422_2325 ^ len,
            tail: [0; 8],
            held: 0,
        }
    }

    #[inline]
    fn word(&mut self, w: [u8; 8]) {
        self.h = (self.h ^ u64::from_le_bytes(w)).wrapping_mul(HASH_K);
        self.h ^= self.h >> 29;
    }

    /// The next piece.
    pub fn update(&mut self, mut data: &[u8]) {
        if self.held > 0 {
            let take = (8 - self.held).min(data.len());
            self.tail[self.held..self.held + take].copy_from_slice(&data[..take]);
            self.held += take;
            data = &data[take..];
            if self.held < 8 {
                return;
            }
            self.word(self.tail);
            self.held = 0;
        }
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            self.word(c.try_into().unwrap_or([0; 8]));
        }
        let rest = chunks.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.held = rest.len();
    }

    /// The hash, equal to [`hash64`] of the pieces joined.
    pub fn finish(self) -> u64 {
        let mut h = self.h;
        for &b in &self.tail[..self.held] {
            h = (h ^ b as u64).wrapping_mul(HASH_K);
        }
        h ^ (h >> 32)
    }
}

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

/// Appends little-endian values: counted only, or handed on to a file as
/// they come (with the snapshot's hash worked out on the way), so that
/// saving a large index does not hold a copy of it.
pub(crate) struct Writer<'a> {
    /// Bytes not yet handed on (a stream's buffer).
    out: Vec<u8>,
    /// Bytes counted or handed on before `out`.
    done: u64,
    /// Where they go; `None` counts them only.
    to: Option<Sink<'a>>,
}

struct Sink<'a> {
    file: &'a mut dyn io::Write,
    hash: Hasher,
    /// The first write that failed (the rest are skipped).
    error: Option<io::Error>,
}

impl Sink<'_> {
    fn send(&mut self, b: &[u8]) {
        self.hash.update(b);
        if self.error.is_none()
            && let Err(e) = self.file.write_all(b)
        {
            self.error = Some(e);
        }
    }
}

/// How much a streaming writer holds before handing it on.
const STREAM_BUFFER: usize = 1 << 20;
#[cfg(test)]
pub(crate) const STREAM_BUFFER_FOR_TESTS: usize = STREAM_BUFFER;

impl<'a> Writer<'a> {
    /// Only counts the bytes ([`Writer::len`]).
    pub fn count() -> Writer<'static> {
        Writer {
            out: Vec::new(),
            done: 0,
            to: None,
        }
    }

    /// Hands the bytes on to `file`, hashing them with `hash`; `start` is
    /// where they begin in the file (a multiple of [`ALIGN`]), so arrays are
    /// aligned in it.
    pub fn stream(file: &'a mut dyn io::Write, hash: Hasher, start: u64) -> Writer<'a> {
        debug_assert_eq!(start % ALIGN as u64, 0);
        Writer {
            out: Vec::with_capacity(STREAM_BUFFER),
            done: start,
            to: Some(Sink {
                file,
                hash,
                error: None,
            }),
        }
    }

    /// Bytes written so far (for a stream, from the file's start).
    pub fn len(&self) -> u64 {
        self.done + self.out.len() as u64
    }

    /// The end: what is left handed on, and the hash of it all (0 for a
    /// count), or the first write's error.
    pub fn finish(mut self) -> io::Result<u64> {
        self.hand_on();
        match self.to {
            Some(Sink { error: Some(e), .. }) => Err(e),
            Some(sink) => Ok(sink.hash.finish()),
            None => Ok(0),
        }
    }

    fn hand_on(&mut self) {
        if let Some(sink) = &mut self.to {
            sink.send(&self.out);
        }
        self.done += self.out.len() as u64;
        self.out.clear();
    }

    fn put(&mut self, b: &[u8]) {
        if self.to.is_none() {
            self.done += b.len() as u64;
            return;
        }
        if self.out.len() + b.len() > STREAM_BUFFER {
            self.hand_on();
        }
        match &mut self.to {
            // A large array goes straight on, not through the buffer.
            Some(sink) if b.len() > STREAM_BUFFER => {
                sink.send(b);
                self.done += b.len() as u64;
            }
            _ => self.out.extend_from_slice(b),
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    pub fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.put(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.put(b);
    }
    pub fn u32s(&mut self, v: &[u32]) {
        self.u64(v.len() as u64);
        if cfg!(target_endian = "little") {
            self.put(bytemuck::cast_slice(v));
        } else {
            for x in v {
                self.put(&x.to_le_bytes());
            }
        }
    }
    /// An array as its bytes in memory, its length first, aligned to eight
    /// bytes so that a mapped snapshot can read it in place
    /// ([`Reader::array`]).
    pub fn array<T: Pod>(&mut self, v: &[T]) {
        self.u64(v.len() as u64);
        let pad = self.len().next_multiple_of(ALIGN as u64) - self.len();
        self.put(&[0u8; ALIGN][..pad as usize]);
        self.put(bytemuck::cast_slice(v));
    }
}

/// Arrays start at multiples of this from the body's start (which the
/// snapshot's header keeps at a multiple of it in the file).
pub(crate) const ALIGN: usize = 8;

/// Reads what a [`Writer`] wrote, refusing to read past the end.
pub(crate) struct Reader<'a> {
    pub data: &'a [u8],
    pub at: usize,
    /// When `data` is a run of a mapped file: the map, and where `data`
    /// starts in it. Arrays are then read in place.
    pub map: Option<(&'a Arc<memmap2::Mmap>, usize)>,
    /// Whether every reference is checked as it is read (a long-lived
    /// process), or only the layout (a one-shot search trusts the rest: a
    /// bad reference then stops it with a bounds check, never reads
    /// outside the file).
    pub deep: bool,
}

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
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
    pub fn u8(&mut self) -> Result<u8, SnapshotError> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, SnapshotError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    pub fn u64(&mut self) -> Result<u64, SnapshotError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], SnapshotError> {
        let n = self.len()?;
        self.take(n)
    }
    /// A length that the rest of the data could hold (at one byte an item).
    pub fn len(&mut self) -> Result<usize, SnapshotError> {
        let n = self.u64()?;
        if n > (self.data.len() - self.at) as u64 {
            return Err(SnapshotError::Corrupt("length"));
        }
        Ok(n as usize)
    }
    pub fn u32s(&mut self) -> Result<Vec<u32>, SnapshotError> {
        let n = self.len()?;
        let raw = self.take(n.checked_mul(4).ok_or(SnapshotError::Corrupt("length"))?)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    /// What [`Writer::array`] wrote: in place when reading a mapped file,
    /// else copied.
    pub fn array<T: Pod>(&mut self) -> Result<Arr<T>, SnapshotError> {
        let n = self.len()?;
        let pad = self.at.next_multiple_of(ALIGN) - self.at;
        self.take(pad)?;
        let start = self.at;
        let bytes = n
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(SnapshotError::Corrupt("length"))?;
        let raw = self.take(bytes)?;
        match self.map {
            Some((map, base)) => {
                Arr::mapped(map, base + start, n).ok_or(SnapshotError::Corrupt("alignment"))
            }
            None => Ok(Arr::from(bytemuck::pod_collect_to_vec::<u8, T>(raw))),
        }
    }
    pub fn at_end(&self) -> bool {
        self.at == self.data.len()
    }
}
