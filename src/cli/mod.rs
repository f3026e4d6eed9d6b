//! The command-line surface: [`args`] holds the clap types, `dispatch` turns a parsed command
//! into a call to the session layer. `main.rs` prints, logs errors and picks the exit code;
//! nothing here calls `process::exit` or does a command's work.

pub mod args;
mod dispatch;

pub use args::{Cli, Command};
pub use dispatch::run;

/// The log's default filter: `run` and `resume` show a live status instead of the log, so
/// their log starts at warnings and `-v` brings back the INFO lines; the other commands log INFO
/// by default. `-q` keeps warnings only.
pub fn log_filter(cli: &Cli) -> &'static str {
    let displayed = u32::from(matches!(cli.command, Command::Run(_) | Command::Resume(_)));
    match (cli.quiet, u32::from(cli.verbose) + 1 - displayed) {
        (true, _) | (false, 0) => "meta_agent=warn",
        (false, 1) => "meta_agent=info",
        (false, 2) => "meta_agent=debug",
        (false, _) => "trace",
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn filter(args: &[&str]) -> &'static str {
        log_filter(&Cli::parse_from(args))
    }

    #[test]
    fn run_logs_from_warnings_unless_asked_for_more() {
        assert_eq!(filter(&["m", "run", "--text", "x"]), "meta_agent=warn");
        assert_eq!(
            filter(&["m", "run", "--text", "x", "-v"]),
            "meta_agent=info"
        );
        assert_eq!(
            filter(&["m", "-vv", "run", "--text", "x"]),
            "meta_agent=debug"
        );
        assert_eq!(
            filter(&["m", "run", "--text", "x", "-q"]),
            "meta_agent=warn"
        );
        assert_eq!(filter(&["m", "gates"]), "meta_agent=info");
        assert_eq!(filter(&["m", "gates", "-v"]), "meta_agent=debug");
    }
}
