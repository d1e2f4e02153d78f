//! Tests of the whole language, on made-up entries: one or more per row of every table
//! of the spec (`spec`), the errors (`errors`), and properties (`props`).

mod content;
mod errors;
mod fake;
mod props;
mod spec;
