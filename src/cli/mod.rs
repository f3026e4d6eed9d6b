//! The command-line surface: [`args`] holds the clap types, `dispatch` turns a parsed command
//! into a call to the session layer. `main.rs` prints, logs errors and picks the exit code;
//! nothing here calls `process::exit` or does a command's work.

pub mod args;
mod dispatch;

pub use args::{Cli, Command};
pub use dispatch::run;
