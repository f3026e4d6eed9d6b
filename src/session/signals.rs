//! SIGTERM and SIGINT during a run (Ctrl-C; a GitHub job cancelled or timed out, which the
//! runner ends with SIGINT then SIGTERM): the first interrupts the run
//! ([`crate::protocol::interrupt`]): the running command is stopped, the work in progress
//! committed (on GitHub pushed), the session saved, and the process exits with
//! [`Code::Interrupted`]. A second signal while that pause is under way exits at once with the
//! same code: the session as last saved (before the step that was running) is what `resume`
//! continues from.

use std::sync::OnceLock;

use tokio::signal::unix::{SignalKind, signal};

use crate::exit::Code;
use crate::protocol::interrupt::Interrupt;

/// The process's one listener: installed by the first run that asks.
static LISTENER: OnceLock<Interrupt> = OnceLock::new();

/// The run's interruption, the signal listener installed on first use (within the runtime). When
/// the handlers cannot be installed, the run is not interruptible and says so.
pub fn interrupt() -> Interrupt {
    LISTENER.get_or_init(listen).clone()
}

fn listen() -> Interrupt {
    let (terminate, interrupt) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(terminate), Ok(interrupt)) => (terminate, interrupt),
        (Err(err), _) | (_, Err(err)) => {
            tracing::warn!(
                "cannot listen for SIGTERM/SIGINT ({err}): a signal ends the run as it is"
            );
            return Interrupt::never();
        }
    };
    let (setter, reader) = Interrupt::pair();
    tokio::spawn(async move {
        let (mut terminate, mut interrupt) = (terminate, interrupt);
        let mut received = 0u32;
        loop {
            let why = tokio::select! {
                _ = terminate.recv() => "received SIGTERM (the job was cancelled or timed out)",
                _ = interrupt.recv() => "received SIGINT (Ctrl-C)",
            };
            received += 1;
            if received > 1 {
                eprintln!("meta-agent: {why} again while pausing: exiting now");
                crate::exit::now(Code::Interrupted);
            }
            tracing::warn!(
                "{why}: pausing (the work in progress is kept; a second signal exits at once)"
            );
            setter.interrupt(why);
        }
    });
    reader
}
