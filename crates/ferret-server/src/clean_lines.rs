//! What a stdio client sends, made text the protocol layer can read.
//!
//! rmcp drops a line that is not valid JSON without a word (as the other
//! official SDKs do: no id can be read to answer), so a client whose request
//! holds a byte that is not UTF-8, or an unpaired UTF-16 surrogate escape
//! (`"\ud800"`, which JSON's grammar allows and Python's `json.dumps` writes
//! for a lone surrogate), waits for an answer forever. Each line is cleaned
//! before rmcp reads it: such bytes and escapes become U+FFFD, the
//! replacement character, so the request is answered (a name holding U+FFFD
//! matches nothing that was not given so) instead of hanging its client.
//! Written here because no kept crate repairs JSON text in place, and a
//! serde pass would re-encode every line.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};

/// Lines longer than this are passed on as they come, uncleaned: rmcp
/// drops them anyway (its own limit is 16 MiB), and cleaning one would mean
/// holding it whole.
const MAX_CLEANED: usize = 16 * 1024 * 1024;

/// `input` as a reader whose lines are cleaned (see the module's doc). A
/// task copies it across until it ends; the reader then ends too.
pub(crate) fn cleaned(input: impl AsyncRead + Unpin + Send + 'static) -> impl AsyncRead + Unpin {
    let (mut tx, rx) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        let mut input = BufReader::with_capacity(64 * 1024, input);
        let mut line = Vec::new();
        let mut warned = false;
        loop {
            line.clear();
            // Read a line, but never hold more than MAX_CLEANED of one.
            let mut whole = true;
            loop {
                let buf = match input.fill_buf().await {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::error!(error = %e, "reading the client's input failed");
                        return;
                    }
                };
                if buf.is_empty() {
                    break;
                }
                let (take, end) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (i + 1, true),
                    None => (buf.len(), false),
                };
                line.extend_from_slice(&buf[..take]);
                input.consume(take);
                if end {
                    break;
                }
                if line.len() > MAX_CLEANED {
                    // Pass it on as it is, and the rest of it as it comes.
                    whole = false;
                    break;
                }
            }
            if line.is_empty() {
                return; // The client closed its end.
            }
            let out = if whole { clean(&line) } else { None };
            if out.is_some() && !warned {
                warned = true;
                tracing::warn!(
                    "a request held bytes that are not UTF-8 or an unpaired surrogate escape: read as U+FFFD"
                );
            }
            if tx.write_all(out.as_deref().unwrap_or(&line)).await.is_err() {
                return; // The server stopped reading.
            }
            if !whole {
                // The rest of the long line, uncleaned.
                loop {
                    let buf = match input.fill_buf().await {
                        Ok(b) if !b.is_empty() => b,
                        _ => return,
                    };
                    let (take, end) = match memchr::memchr(b'\n', buf) {
                        Some(i) => (i + 1, true),
                        None => (buf.len(), false),
                    };
                    if tx.write_all(&buf[..take]).await.is_err() {
                        return;
                    }
                    input.consume(take);
                    if end {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// `line` cleaned, or `None` when it needs nothing: bytes that are not
/// UTF-8 become U+FFFD, and so does each `\uXXXX` escape of a surrogate
/// that is not half of a pair.
fn clean(line: &[u8]) -> Option<Vec<u8>> {
    let text = String::from_utf8_lossy(line);
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = match text {
        std::borrow::Cow::Owned(_) => Some(Vec::with_capacity(bytes.len())),
        std::borrow::Cow::Borrowed(_) => None,
    };
    // Only lines with a `\u` escape of a surrogate need the walk below.
    let mut i = 0;
    let mut copied = 0;
    while let Some(at) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + at;
        let Some(&next) = bytes.get(at + 1) else {
            break;
        };
        if next != b'u' {
            // Any other escape, `\\` included: its two bytes as they are.
            i = at + 2;
            continue;
        }
        let Some(unit) = hex4(bytes, at + 2) else {
            i = at + 2;
            continue;
        };
        if !(0xD800..=0xDFFF).contains(&unit) {
            i = at + 6;
            continue;
        }
        let paired = unit <= 0xDBFF
            && bytes.get(at + 6) == Some(&b'\\')
            && bytes.get(at + 7) == Some(&b'u')
            && hex4(bytes, at + 8).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if paired {
            i = at + 12;
            continue;
        }
        let o = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
        o.extend_from_slice(&bytes[copied..at]);
        o.extend_from_slice(br"\ufffd");
        i = at + 6;
        copied = i;
    }
    let mut o = out?;
    o.extend_from_slice(&bytes[copied..]);
    Some(o)
}

/// The four hex digits at `at`, as a number.
fn hex4(bytes: &[u8], at: usize) -> Option<u16> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u16::from_str_radix(text, 16)
        .ok()
        .filter(|_| digits.iter().all(u8::is_ascii_hexdigit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleaned_text(line: &[u8]) -> String {
        String::from_utf8(clean(line).unwrap_or_else(|| line.to_vec())).unwrap()
    }

    #[test]
    fn lone_surrogates_and_bad_bytes_become_replacement_characters() {
        assert_eq!(clean(br#"{"q":"caf\u00e9"}"#), None);
        assert_eq!(clean(br#"{"q":"\ud83d\ude00"}"#), None, "a pair");
        assert_eq!(clean(br#"{"q":"a\\ud800"}"#), None, "an escaped backslash");
        assert_eq!(cleaned_text(br#"{"q":"\ud800"}"#), r#"{"q":"\ufffd"}"#);
        assert_eq!(
            cleaned_text(br#"{"q":"\uDC00x\ud800\u0041"}"#),
            r#"{"q":"\ufffdx\ufffd\u0041"}"#
        );
        assert_eq!(cleaned_text(br#"{"q":"\\\ud800"}"#), r#"{"q":"\\\ufffd"}"#);
        assert_eq!(
            cleaned_text(b"{\"q\":\"caf\xff\"}"),
            "{\"q\":\"caf\u{FFFD}\"}"
        );
        assert_eq!(
            cleaned_text(b"{\"q\":\"\xff\\ud800\"}"),
            "{\"q\":\"\u{FFFD}\\ufffd\"}"
        );
        // Every cleaned line parses; a short or broken escape is left alone.
        for line in [
            &br#"{"q":"\ud800"}"#[..],
            b"{\"q\":\"\xc3\"}",
            br#"{"q":"\u12"}"#,
        ] {
            let text = cleaned_text(line);
            let parsed = serde_json::from_str::<serde_json::Value>(&text);
            assert_eq!(parsed.is_ok(), !text.contains(r"\u12"), "{text}");
        }
    }

    #[tokio::test]
    async fn lines_pass_through_in_order_and_the_end_is_passed_on() {
        use tokio::io::AsyncReadExt;
        let input: &[u8] = b"{\"a\":1}\n{\"q\":\"\\ud800\"}\n\nlast without newline";
        let mut out = String::new();
        cleaned(input).read_to_string(&mut out).await.unwrap();
        assert_eq!(
            out,
            "{\"a\":1}\n{\"q\":\"\\ufffd\"}\n\nlast without newline"
        );
    }
}
