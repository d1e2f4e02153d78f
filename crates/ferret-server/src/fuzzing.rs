//! Entry points for the fuzz targets in `fuzz/`: the argument reader of every
//! tool and the resource URIs, reached without a server or a client. Not an
//! API: hidden from the docs, kept only so the targets call the code the
//! server runs.

use ferret_fs::Roots;
use rmcp::{ErrorData, model::JsonObject};

/// Every tool whose arguments [`arguments`] reads.
pub const TOOLS: &[&str] = &[
    "search", "locate", "grep", "changes", "read", "list", "stat", "write", "edit", "manage",
];

/// Read `args` as `tool`'s arguments, as a call would before any work: `Ok`
/// or the `-32602` error naming the parameter.
pub fn arguments(tool: &str, args: Option<&JsonObject>, roots: &Roots) -> Result<(), ErrorData> {
    match tool {
        "search" => crate::index_tools::parse_search(args).map(drop),
        "locate" => crate::index_tools::parse_locate(args).map(drop),
        "grep" => crate::grep_tool::parse(args, roots).map(drop),
        "changes" => crate::changes_tool::parse_changes(args).map(drop),
        "read" => crate::read_tool::parse_read(args).map(drop),
        "list" => crate::tools::parse_list(args).map(drop),
        "stat" => crate::tools::parse_stat(args).map(drop),
        "write" => crate::write_tools::parse_write(args).map(drop),
        "edit" => crate::write_tools::parse_edit(args).map(drop),
        "manage" => crate::write_tools::parse_manage(args).map(drop),
        other => unreachable!("`{other}` is not in TOOLS"),
    }
}

/// The shown path a `file://` URI names, or the error `resources/read` answers.
pub fn resource_path(uri: &str) -> Result<String, ErrorData> {
    crate::resources::path_of(uri)
}
