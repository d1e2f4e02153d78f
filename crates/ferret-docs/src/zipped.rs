//! The parts of a zip container (Office Open XML, OpenDocument, EPUB), read
//! within a bound on what they unpack to, so that a zip bomb is an error for
//! its file rather than an allocation.
//!
//! The bound is checked against the sizes the zip declares, before anything
//! is unpacked; a zip that lies about them is held to them by the `zip` crate
//! (it stops a part that unpacks to more than it declared), and every read is
//! capped at the bound besides.

use std::io::{Cursor, Read};

use crate::{DocError, Limits, error::brief};

pub(crate) struct Zipped<'a> {
    archive: zip::ZipArchive<Cursor<&'a [u8]>>,
    /// Unpacked bytes still allowed, over every part read.
    budget: u64,
    bound: u64,
}

impl<'a> Zipped<'a> {
    pub fn open(bytes: &'a [u8], limits: &Limits) -> Result<Zipped<'a>, DocError> {
        let archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
            DocError::malformed(format!("its zip container is damaged ({})", brief(e)))
        })?;
        Ok(Zipped {
            archive,
            budget: limits.max_unpacked_bytes,
            bound: limits.max_unpacked_bytes,
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.archive.index_for_name(name).is_some()
    }

    /// Names of the parts, in the zip's order.
    pub fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.into_owned()))
            .collect()
    }

    /// Sum of the declared unpacked sizes of the parts `wanted` picks: for
    /// parsers that open the zip themselves (calamine), checked before they do.
    pub fn check_declared(&mut self, wanted: impl Fn(&str) -> bool) -> Result<(), DocError> {
        let mut total: u64 = 0;
        for i in 0..self.archive.len() {
            let file = self.archive.by_index_raw(i).map_err(|e| {
                DocError::malformed(format!("its zip container is damaged ({})", brief(e)))
            })?;
            let Ok(name) = file.name() else { continue };
            if wanted(&name) {
                total = total.saturating_add(file.size());
            }
        }
        if total > self.bound {
            return Err(self.bomb(total));
        }
        Ok(())
    }

    /// A part as text (invalid UTF-8 replaced); `None` when the zip has no such part.
    pub fn text(&mut self, name: &str) -> Result<Option<String>, DocError> {
        Ok(self.bytes(name)?.map(|b| {
            String::from_utf8(b)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        }))
    }

    pub fn bytes(&mut self, name: &str) -> Result<Option<Vec<u8>>, DocError> {
        let Some(index) = self.archive.index_for_name(name) else {
            return Ok(None);
        };
        let budget = self.budget;
        let bound = self.bound;
        let mut file = self.archive.by_index(index).map_err(|e| match e {
            zip::result::ZipError::UnsupportedArchive(m) if m.contains("assword") => DocError::new(
                crate::DocErrorKind::Encrypted,
                "its parts are encrypted; a password is needed",
            ),
            e => DocError::malformed(format!("part `{name}` cannot be unpacked ({})", brief(e))),
        })?;
        if file.size() > budget {
            let declared = file.size();
            drop(file);
            return Err(bomb_error(declared, bound));
        }
        let mut out = Vec::with_capacity(file.size().min(budget) as usize);
        let read = (&mut file).take(budget + 1).read_to_end(&mut out);
        drop(file);
        if out.len() as u64 > budget {
            return Err(bomb_error(bound + 1, bound));
        }
        read.map_err(|e| {
            DocError::malformed(format!("part `{name}` cannot be unpacked ({})", brief(e)))
        })?;
        self.budget -= out.len() as u64;
        Ok(Some(out))
    }

    fn bomb(&self, size: u64) -> DocError {
        bomb_error(size, self.bound)
    }
}

fn bomb_error(size: u64, bound: u64) -> DocError {
    DocError::too_large(format!(
        "it unpacks to {} MB or more, over the {} MB bound (a zip bomb, or a document too large to read)",
        size >> 20,
        bound >> 20
    ))
}

/// Resolve `target` (a relationship's or manifest's href) against the folder
/// of `base` (a part's name), as zip part names: `..` climbs, never above the top.
pub(crate) fn join(base: &str, target: &str) -> String {
    if let Some(abs) = target.strip_prefix('/') {
        return abs.to_string();
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for piece in target.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    percent_decode(&joined)
}

/// `%20` and friends in hrefs (EPUB manifests use them for spaces).
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(
                std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                16,
            )
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// A zip of `(name, content)` parts, deflated.
    pub fn zip_of(parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, content) in parts {
            w.start_file(*name, options).unwrap();
            w.write_all(content).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn small_limits() -> Limits {
        Limits {
            max_unpacked_bytes: 1 << 20,
            ..Limits::default()
        }
    }

    #[test]
    fn parts_are_read_within_the_bound() {
        let z = zip_of(&[("a.xml", b"<a/>"), ("big.xml", &vec![b' '; 2 << 20])]);
        let mut zipped = Zipped::open(&z, &small_limits()).unwrap();
        assert_eq!(zipped.text("a.xml").unwrap().as_deref(), Some("<a/>"));
        assert_eq!(zipped.text("missing.xml").unwrap(), None);
        let err = zipped.text("big.xml").unwrap_err();
        assert_eq!(err.kind, crate::DocErrorKind::TooLarge);
        assert!(err.message.contains("zip bomb"), "{err}");
        assert!(zipped.check_declared(|n| n.ends_with(".xml")).is_err());
        assert!(zipped.check_declared(|n| n == "a.xml").is_ok());
    }

    #[test]
    fn a_zip_that_lies_about_its_sizes_is_still_bounded() {
        let z = zip_of(&[("big.xml", &vec![b' '; 3 << 20])]);
        let z = lie_about_sizes(z, 100);
        let mut zipped = Zipped::open(&z, &small_limits()).unwrap();
        assert!(
            zipped.check_declared(|_| true).is_ok(),
            "the lie passes the declared check"
        );
        let err = zipped.text("big.xml").unwrap_err();
        assert!(err.message.contains("larger than its declared"), "{err}");
    }

    /// Rewrite every declared uncompressed size (local headers and central
    /// directory) to `size`.
    pub fn lie_about_sizes(mut z: Vec<u8>, size: u32) -> Vec<u8> {
        let mut i = 0;
        while i + 4 <= z.len() {
            match &z[i..i + 4] {
                b"PK\x03\x04" => z[i + 22..i + 26].copy_from_slice(&size.to_le_bytes()),
                b"PK\x01\x02" => z[i + 24..i + 28].copy_from_slice(&size.to_le_bytes()),
                _ => {}
            }
            i += 1;
        }
        z
    }

    #[test]
    fn hrefs_resolve_like_paths() {
        assert_eq!(
            join("OEBPS/content.opf", "text/ch1.xhtml"),
            "OEBPS/text/ch1.xhtml"
        );
        assert_eq!(
            join("ppt/presentation.xml", "slides/slide1.xml"),
            "ppt/slides/slide1.xml"
        );
        assert_eq!(join("a/b/c.xml", "../d.xml"), "a/d.xml");
        assert_eq!(join("c.xml", "../../d.xml"), "d.xml");
        assert_eq!(join("x/y.opf", "/root.xml"), "root.xml");
        assert_eq!(join("x/y.opf", "Chapter%201.xhtml"), "x/Chapter 1.xhtml");
    }
}
