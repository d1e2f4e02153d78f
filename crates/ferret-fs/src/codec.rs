//! The text encoding of a file that is edited or written: detected from its
//! bytes, decoded, and encoded back without changing a byte that was not edited.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

use crate::{
    error::{ErrorCode, FsError, FsResult},
    sniff,
};

/// A text encoding that ferret can decode and re-encode without changing bytes.
#[derive(Debug, Clone)]
pub struct Codec {
    pub encoding: &'static Encoding,
    pub bom: Vec<u8>,
    /// As `read` reports it (`utf-8`, `utf-8-bom`, `utf-16le`, `gbk`, …).
    pub label: String,
}

impl Codec {
    pub fn detect(bytes: &[u8]) -> Codec {
        let detected = sniff::detect_encoding(bytes, true);
        Codec {
            encoding: detected.encoding,
            bom: bytes[..detected.bom_len].to_vec(),
            label: detected.label,
        }
    }

    fn undecodable(&self, shown: &str) -> FsError {
        FsError::new(
            ErrorCode::BinaryContent,
            format!(
                "`{shown}` is not valid {} text, so editing it could change bytes it does not touch; nothing was written",
                self.label
            ),
        )
        .hint("replace the whole file with `write` mode overwrite if that is intended")
        .suggest("write")
    }

    /// The text of a whole file, or an error when it would not round-trip.
    pub fn decode(&self, bytes: &[u8], shown: &str) -> FsResult<String> {
        let body = &bytes[self.bom.len()..];
        let text = if self.encoding == UTF_8 {
            std::str::from_utf8(body).ok().map(str::to_string)
        } else if self.encoding == UTF_16LE || self.encoding == UTF_16BE {
            if !body.len().is_multiple_of(2) {
                None
            } else {
                let units: Vec<u16> = body
                    .chunks_exact(2)
                    .map(|c| {
                        if self.encoding == UTF_16LE {
                            u16::from_le_bytes([c[0], c[1]])
                        } else {
                            u16::from_be_bytes([c[0], c[1]])
                        }
                    })
                    .collect();
                String::from_utf16(&units).ok()
            }
        } else {
            self.encoding
                .decode_without_bom_handling_and_without_replacement(body)
                .map(|c| c.into_owned())
        };
        let text = text.ok_or_else(|| self.undecodable(shown))?;
        // Legacy encodings: insist that the text encodes back to the same bytes.
        if self.encoding != UTF_8
            && self.encoding != UTF_16LE
            && self.encoding != UTF_16BE
            && self.encode(&text, shown).ok().as_deref() != Some(body)
        {
            return Err(self.undecodable(shown));
        }
        Ok(text)
    }

    /// Encode text in this encoding (without the byte-order mark). Characters the
    /// encoding cannot represent are refused rather than replaced.
    pub fn encode(&self, text: &str, shown: &str) -> FsResult<Vec<u8>> {
        if self.encoding == UTF_8 {
            return Ok(text.as_bytes().to_vec());
        }
        if self.encoding == UTF_16LE {
            return Ok(text.encode_utf16().flat_map(u16::to_le_bytes).collect());
        }
        if self.encoding == UTF_16BE {
            return Ok(text.encode_utf16().flat_map(u16::to_be_bytes).collect());
        }
        let (bytes, _, unmappable) = self.encoding.encode(text);
        if unmappable {
            let bad: String = text
                .chars()
                .filter(|c| self.encoding.encode(&c.to_string()).2)
                .take(10)
                .collect();
            return Err(FsError::new(
                ErrorCode::IoError,
                format!(
                    "`{shown}` is {} and cannot hold these characters: {bad:?}; nothing was written",
                    self.label
                ),
            )
            .hint(format!(
                "use only characters that {} can encode, or convert the file with `write`",
                self.label
            )));
        }
        Ok(bytes.into_owned())
    }
}
