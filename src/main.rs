//! The `meta-agent` binary: parse the command line, run, print, exit with a documented code
//! (see `meta_agent::exit`). Everything else lives in the library.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use meta_agent::cli::{self, Cli, Command};
use meta_agent::exec::supervisor;
use meta_agent::exit::{Code, FailureClass};

fn main() -> ExitCode {
    // Before anything else: children of the same user must not read our memory or environ.
    let protected = meta_agent::exec::sandbox::protect_this_process();
    let cli = Cli::parse();
    if let Command::Supervise(args) = &cli.command {
        return ExitCode::from(supervisor::supervise(args));
    }
    init_tracing(cli.verbose);
    if let Err(err) = protected {
        tracing::warn!("cannot mark meta-agent non-dumpable: {err}");
    }
    Code::pick(run(&cli)).into()
}

fn run(cli: &Cli) -> Result<meta_agent::exit::Outcome, FailureClass> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("error: cannot start the async runtime: {err}");
            FailureClass::Internal
        })?;
    match runtime.block_on(cli::run(cli)) {
        Ok(done) => {
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(done.stdout.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return Err(FailureClass::Internal);
            }
            Ok(done.outcome)
        }
        Err(err) => {
            let class = err.class();
            eprintln!("error: {:#}", anyhow::Error::from(err));
            Err(class)
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "meta_agent=info",
        1 => "meta_agent=debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let redactor =
        meta_agent::redact::Redactor::from_env(std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        }));
    let stderr = meta_agent::redact::writer::RedactingStderr::new(std::sync::Arc::new(redactor));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
}
