//! The path normaliser: whatever an agent types, a path that is accepted has
//! no `..`, no empty or `.` component, no NUL and no separator inside a
//! component, and normalising its own rendering gives it back.
#![no_main]

use ferret_fs::path::{Requested, normalize};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| {
    let Ok(requested) = normalize(input) else {
        return;
    };
    let (parts, absolute) = match &requested {
        Requested::Relative(p) => (p, false),
        Requested::Absolute(p) => (p, true),
    };
    for part in parts {
        assert!(!part.is_empty() && part != "." && part != "..", "{input:?} gave {part:?}");
        assert!(!part.contains('/') && !part.contains('\\') && !part.contains('\0'), "{input:?} gave {part:?}");
    }
    // Relative paths are written back with `./` in front: without it a first
    // component such as `z:` would read as a Windows drive (a crash this
    // target found; the normaliser's test `a_drive_lookalike_after_dot_slash_is_a_folder_name`).
    let rendered = format!("{}{}", if absolute { "/" } else { "./" }, parts.join("/"));
    // Quotes and surrounding spaces are stripped once; a rendered path that
    // still looks quoted or padded would be stripped again, so skip those.
    let reparsed = normalize(&rendered);
    if !rendered.starts_with(['"', '\'', '`']) && rendered.trim() == rendered {
        assert_eq!(reparsed.ok(), Some(requested), "{input:?} -> {rendered:?}");
    }
});
