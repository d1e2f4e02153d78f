//! The argument reader: any JSON object as the arguments of any tool is
//! either accepted or refused with -32602 (a malformed call), never a panic,
//! and the refusal names a parameter or the tool.
#![no_main]

use std::sync::OnceLock;

use ferret_fs::{Policy, Roots};
use ferret_server::fuzzing::{TOOLS, arguments};
use libfuzzer_sys::fuzz_target;

fn roots() -> &'static Roots {
    static ROOTS: OnceLock<Roots> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let dir = std::env::temp_dir().join("ferret-fuzz-root");
        std::fs::create_dir_all(&dir).expect("a temporary root");
        let spec = dir.display().to_string().parse().expect("a root spec");
        Roots::open(&[spec], Policy::default()).expect("the temporary root opens")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, json)) = data.split_first() else {
        return;
    };
    let tool = TOOLS[which as usize % TOOLS.len()];
    let args: Option<serde_json::Map<String, serde_json::Value>> = if json.is_empty() {
        None
    } else {
        match serde_json::from_slice(json) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => return,
        }
    };
    if let Err(e) = arguments(tool, args.as_ref(), roots()) {
        assert_eq!(e.code.0, -32602, "{tool}: {e:?}");
        assert!(!e.message.is_empty(), "{tool}: an empty message");
    }
});
