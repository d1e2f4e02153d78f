//! `ferret.toml`: any text is read as a configuration file and checked
//! against the real flags of `ferret serve` (each value with its flag's own
//! parser), giving the command line's defaults or an error naming the line;
//! never a panic.
#![no_main]

use clap::CommandFactory;
use ferret_cli::{cli::Cli, config};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let file = match config::parse(text) {
        Ok(file) => file,
        Err(message) => {
            assert!(!message.is_empty());
            return;
        }
    };
    if let Err(message) = config::apply(Cli::command(), &file) {
        assert!(message.contains("line") || message.contains('`'), "{message}");
    }
});
