//! The query language: any text either parses or is an error that points
//! inside the query and carries an example that parses; whatever parses
//! renders back to the same tree. With any of the search tool's options the
//! text compiles or fails the same way (its rendering, the caret under the
//! position, works), and a compiled query evaluates against an entry without
//! panicking.
//!
//! (This replaces `crates/ferret-query/fuzz`'s `parse` target: its checks are
//! the first half here.)
#![no_main]

use std::borrow::Cow;

use ferret_query::{Clock, Entry, Kind, Options, Query, parse};
use libfuzzer_sys::fuzz_target;

struct File;

impl Entry for File {
    fn name(&self) -> &[u8] {
        b"report-2026.final.PDF"
    }
    fn rel_path(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(b"docs/q3/report-2026.final.PDF")
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn size(&self) -> u64 {
        48_213
    }
    fn modified(&self) -> Option<i64> {
        Some(1_780_000_000)
    }
    fn created(&self) -> Option<i64> {
        None
    }
    fn mode(&self) -> u32 {
        0o644
    }
    fn depth(&self) -> u32 {
        3
    }
    fn for_each_child(&self, _f: &mut dyn FnMut(&[u8], Kind) -> bool) {}
}

const CLOCK: Clock = Clock {
    now_utc: 1_780_000_000,
    utc_offset_secs: 3600,
};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    match parse(text) {
        Ok(ast) => {
            let rendered = ast.to_string();
            let again = parse(&rendered).expect("a rendered query parses");
            assert_eq!(again.without_spans(), ast.without_spans(), "{rendered}");
        }
        Err(e) => {
            assert!(e.position <= text.chars().count());
            assert!(parse(&e.example).is_ok(), "example {:?}", e.example);
        }
    }
    let options = Options {
        match_case: flags & 1 != 0,
        whole_word: flags & 2 != 0,
        regex: flags & 4 != 0,
        match_path: flags & 8 != 0,
    };
    match Query::compile(text, &options, &CLOCK) {
        Ok(query) => {
            let _ = query.matches(&File);
        }
        Err(e) => {
            assert!(e.position <= text.chars().count());
            assert!(
                Query::compile(&e.example, &options, &CLOCK).is_ok(),
                "example {:?}",
                e.example
            );
            let _ = e.render(text);
        }
    }
});
