//! Resource URIs: any string is a path `resources/read` then resolves through
//! the roots, or the error it answers; an accepted path has no `..` left and
//! resolving it never panics.
#![no_main]

use std::sync::OnceLock;

use ferret_fs::{Policy, Roots};
use ferret_server::fuzzing::resource_path;
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

fuzz_target!(|uri: &str| {
    let Ok(path) = resource_path(uri) else {
        return;
    };
    if let Ok(ferret_fs::Target::In(_, rel)) = roots().resolve(&path) {
        assert!(
            !rel.as_str().split('/').any(|c| c == ".."),
            "{uri:?} resolved to {:?}",
            rel.as_str()
        );
    }
});
