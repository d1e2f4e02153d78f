//! Extracted text kept by file identity, so a document is extracted once per
//! version: a few recent results in memory, every result on disk in the state
//! directory (`<state>/documents/`) when there is one.
//!
//! A [`Key`] is what identifies one version of one file without reading it:
//! device, inode, size, and modification and change times to the nanosecond
//! (the change time also moves when a file is replaced under the same name and
//! size with its old mtime put back, as `tar` and `rsync` do).

use std::{
    collections::VecDeque,
    fs,
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use sha2::{Digest, Sha256};

use crate::{DocError, Extracted, extracted};

/// One version of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Key {
    /// The key of an open file.
    pub fn of(file: &impl std::os::fd::AsFd) -> std::io::Result<Key> {
        let st = rustix::fs::fstat(file)?;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Ok(Key {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec as i64),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec as i64),
        })
    }

    fn id(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}",
            self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns
        )
    }

    fn file_name(&self) -> String {
        let digest = Sha256::digest(self.id().as_bytes());
        let mut name = String::with_capacity(40);
        for b in &digest[..16] {
            name.push_str(&format!("{b:02x}"));
        }
        name.push_str(".doc");
        name
    }
}

pub type Cached = Result<Arc<Extracted>, DocError>;

/// Where results are kept, and how much.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// `None`: memory only (as with `--no-persist`).
    pub dir: Option<PathBuf>,
    /// Text kept in memory, over all documents.
    pub memory_bytes: usize,
    /// Bytes kept on disk; the least recently written go first.
    pub disk_bytes: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            dir: None,
            memory_bytes: 64 << 20,
            disk_bytes: 1 << 30,
        }
    }
}

pub struct Cache {
    config: CacheConfig,
    memory: Mutex<Memory>,
    /// Bytes on disk, learnt when the folder is first used.
    disk: Mutex<Option<u64>>,
}

#[derive(Default)]
struct Memory {
    entries: VecDeque<(Key, Cached)>,
    bytes: usize,
}

fn cost(c: &Cached) -> usize {
    c.as_ref()
        .map_or(64, |d| d.text.len() + 64 * d.parts.len() + 256)
}

impl Cache {
    pub fn new(config: CacheConfig) -> Cache {
        Cache {
            config,
            memory: Mutex::new(Memory::default()),
            disk: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.config.dir.as_deref()
    }

    /// The result kept for `key`, from memory or disk.
    pub fn get(&self, key: &Key) -> Option<Cached> {
        {
            let mut m = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = m.entries.iter().position(|(k, _)| k == key) {
                let entry = m.entries.remove(i)?;
                let found = entry.1.clone();
                m.entries.push_back(entry);
                return Some(found);
            }
        }
        let path = self.config.dir.as_ref()?.join(key.file_name());
        let bytes = fs::read(&path).ok()?;
        let found: Cached = extracted::decode(&bytes, Some(&key.id()))?.map(Arc::new);
        self.remember(key, found.clone());
        Some(found)
    }

    /// Keep `result` for `key` (transient failures are not kept).
    pub fn put(&self, key: &Key, result: &Cached) {
        if result.as_ref().is_err_and(DocError::is_transient) {
            return;
        }
        self.remember(key, result.clone());
        if let Some(dir) = &self.config.dir {
            let owned = result.as_ref().map(|d| (**d).clone()).map_err(Clone::clone);
            let bytes = extracted::encode(&owned, Some(&key.id()));
            if let Err(e) = self.write(dir, key, &bytes) {
                tracing::warn!("document cache: cannot write to {}: {e}", dir.display());
            }
        }
    }

    fn remember(&self, key: &Key, result: Cached) {
        let mut m = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        let c = cost(&result);
        if c > self.config.memory_bytes {
            return;
        }
        m.entries.retain(|(k, _)| k != key);
        m.bytes = m.entries.iter().map(|(_, r)| cost(r)).sum();
        while m.bytes + c > self.config.memory_bytes {
            let Some((_, old)) = m.entries.pop_front() else {
                break;
            };
            m.bytes -= cost(&old);
        }
        m.bytes += c;
        m.entries.push_back((*key, result));
    }

    /// Atomically (a temporary file renamed into place), readable by the owner only.
    fn write(&self, dir: &Path, key: &Key, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let target = dir.join(key.file_name());
        let tmp = dir.join(format!(".{}.{}.tmp", key.file_name(), std::process::id()));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        drop(f);
        fs::rename(&tmp, &target)?;
        let mut disk = self.disk.lock().unwrap_or_else(|p| p.into_inner());
        let used = disk.get_or_insert_with(|| folder_bytes(dir));
        *used += bytes.len() as u64;
        if *used > self.config.disk_bytes {
            *used = evict(dir, self.config.disk_bytes * 3 / 4);
        }
        Ok(())
    }
}

fn cache_files(dir: &Path) -> Vec<(std::time::SystemTime, u64, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".doc"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect()
}

fn folder_bytes(dir: &Path) -> u64 {
    cache_files(dir).iter().map(|(_, len, _)| len).sum()
}

/// Remove the oldest results until at most `keep` bytes remain; what remains.
fn evict(dir: &Path, keep: u64) -> u64 {
    let mut files = cache_files(dir);
    files.sort();
    let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
    for (_, len, path) in files {
        if total <= keep {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Format, Meta};

    fn doc(text: &str) -> Cached {
        Ok(Arc::new(Extracted {
            format: Format::Docx,
            text: text.into(),
            lines: 1,
            parts: vec![],
            meta: Meta::default(),
        }))
    }

    fn key(ino: u64) -> Key {
        Key {
            dev: 1,
            ino,
            size: 10,
            mtime_ns: 5,
            ctime_ns: 6,
        }
    }

    #[test]
    fn results_survive_a_new_cache_on_the_same_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let config = CacheConfig {
            dir: Some(tmp.path().join("documents")),
            ..CacheConfig::default()
        };
        let cache = Cache::new(config.clone());
        assert!(cache.get(&key(1)).is_none());
        cache.put(&key(1), &doc("hello\n"));
        let err: Cached = Err(DocError::new(
            crate::DocErrorKind::Encrypted,
            "needs a password",
        ));
        cache.put(&key(2), &err);
        cache.put(
            &key(3),
            &Err(DocError::new(crate::DocErrorKind::Timeout, "slow")),
        );
        let again = Cache::new(config);
        assert_eq!(again.get(&key(1)).unwrap().unwrap().text, "hello\n");
        assert_eq!(
            again.get(&key(2)).unwrap().unwrap_err().kind,
            crate::DocErrorKind::Encrypted
        );
        assert!(
            again.get(&key(3)).is_none(),
            "a timeout is worth another try"
        );
        let changed = Key {
            mtime_ns: 7,
            ..key(1)
        };
        assert!(again.get(&changed).is_none());
    }

    #[test]
    fn memory_and_disk_are_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        let cache = Cache::new(CacheConfig {
            dir: Some(dir.clone()),
            memory_bytes: 2000,
            disk_bytes: 3000,
        });
        for i in 0..10 {
            cache.put(&key(i), &doc(&"x".repeat(700)));
        }
        let m = cache.memory.lock().unwrap();
        assert!(m.bytes <= 2000 && !m.entries.is_empty(), "{}", m.bytes);
        drop(m);
        assert!(folder_bytes(&dir) <= 3000, "{}", folder_bytes(&dir));
        assert!(cache.get(&key(9)).is_some(), "the newest stays");
    }

    #[test]
    fn keys_come_from_the_open_file() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        fs::write(&p, b"abc").unwrap();
        let k1 = Key::of(&fs::File::open(&p).unwrap()).unwrap();
        assert_eq!(k1.size, 3);
        std::thread::sleep(std::time::Duration::from_millis(10));
        fs::write(&p, b"abd").unwrap();
        let k2 = Key::of(&fs::File::open(&p).unwrap()).unwrap();
        assert_ne!(k1, k2, "a rewrite is a new version");
        assert_eq!(k1.ino, k2.ino);
    }
}
