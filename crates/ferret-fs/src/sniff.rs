//! What a file holds, judged from its bytes rather than its name: an image, some
//! other binary, or text in some encoding.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

/// How many leading bytes decide text versus binary (as git and ripgrep do).
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageFormat {
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Image(ImageFormat),
    /// Binary, with the kind of binary when its signature is known.
    Binary(&'static str),
    Text,
}

const SIGNATURES: &[(&[u8], &str)] = &[
    (b"%PDF-", "pdf"),
    (b"PK\x03\x04", "zip"),
    (b"\x1f\x8b", "gzip"),
    (b"\x7fELF", "elf"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"SQLite format 3\x00", "sqlite"),
    (b"\x00asm", "wasm"),
    (b"\xca\xfe\xba\xbe", "java-class"),
    (b"MZ", "pe"),
];

/// Classify a file from its first bytes (at least [`BINARY_SNIFF_BYTES`] when the
/// file is that long).
pub fn classify(head: &[u8]) -> Content {
    if let Some(image) = image_format(head) {
        return Content::Image(image);
    }
    if bom(head).is_some() {
        return Content::Text;
    }
    for (magic, kind) in SIGNATURES {
        // "MZ" alone is too short to trust on text; require a NUL as well.
        if head.starts_with(magic) && (*kind != "pe" || has_nul(head)) {
            return Content::Binary(kind);
        }
    }
    if has_nul(head) {
        return Content::Binary("data");
    }
    Content::Text
}

fn has_nul(head: &[u8]) -> bool {
    memchr::memchr(0, &head[..head.len().min(BINARY_SNIFF_BYTES)]).is_some()
}

pub fn image_format(head: &[u8]) -> Option<ImageFormat> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some(ImageFormat::Jpeg)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(ImageFormat::Gif)
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some(ImageFormat::Webp)
    } else {
        None
    }
}

/// The byte-order mark at the start of `bytes`, if any, with its length.
pub fn bom(bytes: &[u8]) -> Option<(&'static Encoding, usize, &'static str)> {
    if bytes.starts_with(b"\xef\xbb\xbf") {
        Some((UTF_8, 3, "utf-8-bom"))
    } else if bytes.starts_with(b"\xff\xfe") {
        Some((UTF_16LE, 2, "utf-16le"))
    } else if bytes.starts_with(b"\xfe\xff") {
        Some((UTF_16BE, 2, "utf-16be"))
    } else {
        None
    }
}

/// The encoding a text file is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub encoding: &'static Encoding,
    /// Bytes of byte-order mark to skip before decoding.
    pub bom_len: usize,
    /// The name reported to agents (`utf-8`, `utf-8-bom`, `utf-16le`, `gbk`, …).
    pub label: String,
}

/// A whole text file's bytes as text, decoded from the encoding
/// [`detect_encoding`] finds (its byte-order mark left out; bytes a legacy
/// encoding cannot map become U+FFFD): borrowed when they are UTF-8 already.
/// What `write`'s diffs and the symbols' parser read.
pub fn decoded(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    let detected = detect_encoding(bytes, true);
    detected
        .encoding
        .decode_without_bom_handling(&bytes[detected.bom_len..])
        .0
}

/// Detect the encoding from `sample`: a BOM first, then UTF-8 validity, then a
/// statistical guess among legacy encodings. `complete` says whether the sample is
/// the whole file (otherwise a multi-byte sequence cut at its end is forgiven).
pub fn detect_encoding(sample: &[u8], complete: bool) -> Detected {
    if let Some((encoding, bom_len, label)) = bom(sample) {
        return Detected {
            encoding,
            bom_len,
            label: label.to_string(),
        };
    }
    let valid_utf8 = match std::str::from_utf8(sample) {
        Ok(_) => true,
        Err(e) => !complete && e.error_len().is_none(),
    };
    if valid_utf8 {
        return Detected {
            encoding: UTF_8,
            bom_len: 0,
            label: "utf-8".to_string(),
        };
    }
    let mut detector = EncodingDetector::new(Iso2022JpDetection::Deny);
    detector.feed(sample, complete);
    let encoding = detector.guess(None, Utf8Detection::Deny);
    Detected {
        encoding,
        bom_len: 0,
        label: encoding.name().to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_is_the_text_in_its_encoding() {
        use std::borrow::Cow;
        assert!(matches!(
            decoded("déf x():".as_bytes()),
            Cow::Borrowed("déf x():")
        ));
        assert_eq!(decoded(b"\xef\xbb\xbfab"), "ab");
        assert_eq!(decoded(b"def caf\xe9_fn():\n"), "def café_fn():\n");
        assert_eq!(decoded(b"\xff\xfea\0\n\0"), "a\n");
    }

    #[test]
    fn content_is_judged_by_bytes() {
        assert_eq!(classify(b"hello\n"), Content::Text);
        assert_eq!(classify(b""), Content::Text);
        assert_eq!(classify(b"ab\0cd"), Content::Binary("data"));
        assert_eq!(classify(b"%PDF-1.7\n"), Content::Binary("pdf"));
        assert_eq!(classify(b"\x7fELF\x02\x01\x01\0"), Content::Binary("elf"));
        assert_eq!(
            classify(b"MZ is a text that starts like an exe"),
            Content::Text
        );
        assert_eq!(
            classify(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Content::Image(ImageFormat::Png)
        );
        assert_eq!(classify(b"GIF89a..."), Content::Image(ImageFormat::Gif));
        assert_eq!(
            classify(b"RIFF\0\0\0\0WEBPVP8 "),
            Content::Image(ImageFormat::Webp)
        );
        // UTF-16 text is full of NUL bytes, but its BOM says it is text.
        assert_eq!(classify(b"\xff\xfeh\0i\0"), Content::Text);
    }

    #[test]
    fn encodings_are_detected() {
        assert_eq!(detect_encoding(b"plain", true).label, "utf-8");
        assert_eq!(
            detect_encoding("h\u{e9}llo".as_bytes(), true).label,
            "utf-8"
        );
        assert_eq!(detect_encoding(b"\xef\xbb\xbfx", true).label, "utf-8-bom");
        assert_eq!(detect_encoding(b"\xff\xfex\0", true).label, "utf-16le");
        assert_eq!(detect_encoding(b"\xfe\xff\0x", true).label, "utf-16be");
        // A cut multi-byte sequence is fine in a sample, not in a whole file.
        assert_eq!(detect_encoding(b"caf\xc3", false).label, "utf-8");
        assert_ne!(detect_encoding(b"caf\xc3", true).label, "utf-8");
        let latin1 =
            b"Les \xe9l\xe8ves du lyc\xe9e ont r\xe9ussi l'examen de fran\xe7ais \xe0 No\xebl.";
        assert_eq!(detect_encoding(latin1, true).label, "windows-1252");
        let (gbk, _, _) = encoding_rs::GBK
            .encode("中文编码检测需要足够长的文本才能可靠地判断，这是一段测试文字。");
        assert_eq!(detect_encoding(&gbk, true).label, "gbk");
    }
}
