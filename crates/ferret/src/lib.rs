//! The command line of the `ferret` binary as a library: the flags (`cli`)
//! and `ferret.toml` (`config`), which make each file value the default of
//! its flag. The binary (`main.rs`) is built on it; the fuzz targets
//! (`fuzz/`) feed configuration files through the same code.

pub mod cli;
pub mod config;
