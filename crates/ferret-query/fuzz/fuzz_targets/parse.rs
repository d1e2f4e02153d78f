//! Feeds arbitrary text to the parser and the compiler: neither may panic, every
//! error must point inside the query and carry an example that parses, and whatever
//! parses must render back to the same tree.
//!
//! Run with `cargo +nightly fuzz run parse` from `crates/ferret-query`.

#![no_main]

use ferret_query::{Clock, Options, Query, parse};
use libfuzzer_sys::fuzz_target;

const CLOCK: Clock = Clock {
    now_utc: 1_773_844_200,
    utc_offset_secs: 3600,
};

fuzz_target!(|data: &[u8]| {
    let Ok(query) = std::str::from_utf8(data) else {
        return;
    };
    match parse(query) {
        Ok(ast) => {
            let rendered = ast.to_string();
            let again = parse(&rendered).expect("a rendered query parses");
            assert_eq!(again.without_spans(), ast.without_spans(), "{rendered}");
        }
        Err(e) => {
            assert!(e.position <= query.chars().count());
            assert!(parse(&e.example).is_ok(), "example {:?}", e.example);
        }
    }
    for options in [
        Options::default(),
        Options {
            match_case: true,
            whole_word: true,
            regex: true,
            match_path: true,
        },
    ] {
        if let Err(e) = Query::compile(query, &options, &CLOCK) {
            assert!(e.position <= query.chars().count());
            assert!(
                Query::compile(&e.example, &options, &CLOCK).is_ok(),
                "example {:?}",
                e.example
            );
        }
    }
});
