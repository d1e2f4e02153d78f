//! A file name as ferret shows it, and back.
//!
//! Linux names are bytes; paths reach agents as JSON strings, which must be
//! UTF-8. A name that is UTF-8 is shown as it is. A name that is not (a
//! Latin-1 `caf\xE9.txt` from an old archive, a zip's CP437 names) used to be
//! shown with U+FFFD in place of its odd bytes, and that shown path named no
//! file: several names showed alike, and none could be read back. Here such
//! a name is shown with each byte that is not part of a UTF-8 character as
//! `%XX` (two upper-case hex digits) and each `%` of it as `%25`
//! (`caf%E9.txt`), so that what is shown gives back the bytes:
//! [`escaped_bytes`] of a shown component is the name's bytes exactly when
//! decoding its `%XX` gives bytes that are not UTF-8, which a name that needed
//! no escaping never gives back to itself.
//!
//! One case stays ambiguous, as any escape into UTF-8 must: a name that *is*
//! UTF-8 and reads as such an escape (`caf%E9.txt` written with a literal
//! `%`), beside a name of the bytes it decodes to. Whoever resolves a shown
//! path takes the name as written when it exists (see ferret-fs), so nothing
//! that was reachable before is lost; the escaped twin is then out of reach.
//!
//! Written here because no kept crate does this exact reversible form:
//! `percent-encoding` escapes whole byte classes of every name (a `%` or a
//! space in a UTF-8 name would change how it is shown), and `OsStr`'s
//! lossy and debug forms do not round-trip.
//!
//! Pure: no I/O, no dependencies.

#![deny(missing_docs)]

use std::borrow::Cow;

/// `name` as shown: itself when it is UTF-8, else escaped (see the crate's
/// documentation).
pub fn shown(name: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(name) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(name.len() + 8);
            push_escaped(&mut out, name);
            Cow::Owned(out)
        }
    }
}

/// Append `name` as [`shown`] shows it to `out`.
pub fn push_shown(out: &mut String, name: &[u8]) {
    match std::str::from_utf8(name) {
        Ok(s) => out.push_str(s),
        Err(_) => push_escaped(out, name),
    }
}

/// A path's bytes (names joined by `/`) as shown: each name as [`shown`]
/// shows it.
pub fn shown_path(path: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(path) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(path.len() + 8);
            push_shown_path(&mut out, path);
            Cow::Owned(out)
        }
    }
}

/// Append the path `path` as [`shown_path`] shows it to `out`.
pub fn push_shown_path(out: &mut String, path: &[u8]) {
    if let Ok(text) = std::str::from_utf8(path) {
        out.push_str(text);
        return;
    }
    for (i, name) in path.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        push_shown(out, name);
    }
}

/// The bytes of the path `shown` (names joined by `/`), each escaped name
/// given back as the bytes it stands for ([`escaped_bytes`]): the inverse
/// of [`shown_path`].
pub fn path_bytes(shown: &str) -> Cow<'_, [u8]> {
    if !shown.contains('%') {
        return Cow::Borrowed(shown.as_bytes());
    }
    let names: Vec<Cow<'_, [u8]>> = shown
        .split('/')
        .map(|n| escaped_bytes(n).map_or(Cow::Borrowed(n.as_bytes()), Cow::Owned))
        .collect();
    Cow::Owned(names.join(&b'/'))
}

/// The escaped form of a name that is not UTF-8.
fn push_escaped(out: &mut String, mut name: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let byte = |out: &mut String, b: u8| {
        out.push('%');
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    };
    loop {
        match std::str::from_utf8(name) {
            Ok(valid) => {
                push_valid(out, valid);
                return;
            }
            Err(e) => {
                let (valid, rest) = name.split_at(e.valid_up_to());
                // (Checked valid up to there by `from_utf8` itself.)
                push_valid(out, std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                for &b in &rest[..bad] {
                    byte(out, b);
                }
                name = &rest[bad..];
            }
        }
    }
}

/// A part of a name that is UTF-8, its `%` escaped.
fn push_valid(out: &mut String, valid: &str) {
    for (i, part) in valid.split('%').enumerate() {
        if i > 0 {
            out.push_str("%25");
        }
        out.push_str(part);
    }
}

/// The bytes of the name whose shown form is `component` (one name, no
/// `/`), when it is the escaped form of a name that is not UTF-8; `None`
/// when it stands for itself.
pub fn escaped_bytes(component: &str) -> Option<Vec<u8>> {
    if !component.contains('%') {
        return None;
    }
    let bytes = component.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut decoded = false;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|&b| hex(b)),
                bytes.get(i + 2).and_then(|&b| hex(b)),
            )
        {
            out.push(h << 4 | l);
            i += 3;
            decoded = true;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // Only what `shown` makes: bytes that are not UTF-8, shown again as
    // exactly this component (lower-case digits, or a `%` left bare, are
    // written by hand, not shown by ferret).
    (decoded && std::str::from_utf8(&out).is_err() && shown(&out) == component).then_some(out)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_utf8_name_is_shown_as_it_is_and_stands_for_itself() {
        for name in [
            "report.txt",
            "100%.txt",
            "caf%E9.txt",
            "Łódź",
            "%",
            "%%41",
            "",
        ] {
            assert_eq!(shown(name.as_bytes()), name);
            // `caf%E9.txt` reads as an escape: it is one only when that
            // name is not itself (its bytes decode to Latin-1, not UTF-8,
            // so a name that needed no escaping is never decoded).
            assert_ne!(escaped_bytes(name).as_deref(), Some(name.as_bytes()));
        }
        assert_eq!(escaped_bytes("report%20x.txt"), None, "decodes to UTF-8");
        assert_eq!(escaped_bytes("caf%e9.txt"), None, "not as ferret shows it");
    }

    #[test]
    fn a_name_not_utf8_is_escaped_and_given_back() {
        let name = b"caf\xE9 100%.txt";
        let s = shown(name);
        assert_eq!(s, "caf%E9 100%25.txt");
        assert_eq!(escaped_bytes(&s).as_deref(), Some(&name[..]));
        // A character cut short, and lone continuation bytes.
        let name = b"\xE2\x82-\x80\x80\xFF";
        assert_eq!(shown(name), "%E2%82-%80%80%FF");
        assert_eq!(escaped_bytes(&shown(name)).as_deref(), Some(&name[..]));
        let mut out = String::from("a/");
        push_shown(&mut out, b"b\xFF");
        assert_eq!(out, "a/b%FF");
        // Paths, name by name, and back.
        let path = b"/docs/caf\xE9 100%/x.txt";
        assert_eq!(shown_path(path), "/docs/caf%E9 100%25/x.txt");
        assert_eq!(&*path_bytes(&shown_path(path)), &path[..]);
        assert_eq!(shown_path(b"docs/100%.txt"), "docs/100%.txt");
        assert_eq!(&*path_bytes("docs/100%.txt"), b"docs/100%.txt");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Every name shows as UTF-8 and comes back whole: from its shown
        /// form when it is not UTF-8, as that form itself when it is.
        #[test]
        fn every_name_comes_back(name in proptest::collection::vec(
            prop_oneof![Just(b'%'), Just(b'E'), Just(b'9'), Just(0xE9u8), Just(0xC3u8), Just(0xA9u8), any::<u8>()],
            0..12,
        )) {
            let s = shown(&name);
            match std::str::from_utf8(&name) {
                Ok(text) => {
                    prop_assert_eq!(&*s, text);
                    prop_assert!(escaped_bytes(&s).is_none_or(|b| b != name));
                }
                Err(_) => {
                    prop_assert_eq!(escaped_bytes(&s), Some(name.clone()));
                }
            }
        }
    }
}
