//! The `meta-agent` binary: parse the command line, run, print, exit with a documented code
//! (see `meta_agent::exit`). Everything else lives in the library.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use meta_agent::cli::{self, Cli, Command};
use meta_agent::exec::supervisor;
use meta_agent::exit::{Code, FailureClass};
use meta_agent::session::Environment;

fn main() -> ExitCode {
    // Before anything else: children of the same user must not read our memory or environ.
    let protected = meta_agent::exec::sandbox::protect_this_process();
    let cli = Cli::parse();
    if let Command::Supervise(args) = &cli.command {
        return ExitCode::from(supervisor::supervise(args));
    }
    // The environment is read once: its redactor covers stderr and every session of the process.
    let env = Environment::from_process();
    init_tracing(cli::log_filter(&cli), &env);
    if let Err(err) = protected {
        tracing::warn!("cannot mark meta-agent non-dumpable: {err}");
    }
    Code::pick(run(&cli, &env)).into()
}

fn run(cli: &Cli, env: &Environment) -> Result<meta_agent::exit::Outcome, FailureClass> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("error: cannot start the async runtime: {err}");
            FailureClass::Internal
        })?;
    match runtime.block_on(cli::run(cli, env)) {
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

fn init_tracing(default: &str, env: &Environment) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let stderr = meta_agent::redact::writer::RedactingStderr::new(env.redactor.clone());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
}
