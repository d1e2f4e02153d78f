//! The command line of the `ferret` binary as a library: the flags (`cli`)
//! and `ferret.toml` (`config`), which make each file value the default of
//! its flag. The binary (`main.rs`) is built on it; the fuzz targets
//! (`fuzz/`) feed configuration files through the same code.
//!
//! ```
//! // The units the flags and ferret.toml take sizes and ages in.
//! assert_eq!(ferret_cli::cli::parse_bytes("64K"), Ok(65536));
//! assert!(ferret_cli::cli::parse_age("3d").is_ok());
//! ```

pub mod cli;
pub mod config;
