//! The documented exit codes of `meta-agent`, and the one function that picks them.
//!
//! | code | name            | meaning                                                         |
//! |------|-----------------|-----------------------------------------------------------------|
//! | 0    | `Success`       | the command did what was asked; for `gates`, every gate passed  |
//! | 1    | `GatesFailed`   | at least one gate failed (or a report was unreadable)           |
//! | 2    | `UsageError`    | bad command line or bad configuration (file, line and key named)|
//! | 3    | `InternalError` | something went wrong inside meta-agent or the machine           |
//! | 4    | `Escalated`     | `run`/`resume` stopped with a report for maintainers (no commit) |
//! | 5    | `Interrupted`   | `run`/`resume`/`github` paused by SIGTERM/SIGINT: work kept, `resume` continues |
//!
//! `run` and `resume` exit 0 when they committed verified work or found nothing to do.
//!
//! Scripts and CI steps rely on these numbers: they never change meaning. Nothing else in the
//! crate calls `std::process::exit` ([`now`] is the one call, for a second interrupting signal).

use std::process::ExitCode;

/// What a command ended with, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The command did what was asked (for `gates`: all passed).
    Success,
    /// Gates ran and at least one failed.
    GatesFailed,
    /// A run ended with an escalation report instead of a commit.
    Escalated,
    /// A run was paused by a signal: the work in progress kept, the session saved.
    Interrupted,
}

/// How a command failed before it could produce an [`Outcome`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// The user can fix it: a bad flag, a bad config file, a missing input file.
    Usage,
    /// A bug or an environment problem.
    Internal,
}

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    Success = 0,
    GatesFailed = 1,
    UsageError = 2,
    InternalError = 3,
    Escalated = 4,
    Interrupted = 5,
}

impl Code {
    /// The one place that maps outcomes and failures to exit codes.
    pub fn pick(result: Result<Outcome, FailureClass>) -> Code {
        match result {
            Ok(Outcome::Success) => Code::Success,
            Ok(Outcome::GatesFailed) => Code::GatesFailed,
            Ok(Outcome::Escalated) => Code::Escalated,
            Ok(Outcome::Interrupted) => Code::Interrupted,
            Err(FailureClass::Usage) => Code::UsageError,
            Err(FailureClass::Internal) => Code::InternalError,
        }
    }
}

/// Ends the process at once with `code` (a second SIGTERM/SIGINT while a run pauses).
pub fn now(code: Code) -> ! {
    std::process::exit(i32::from(code as u8))
}

impl From<Code> for ExitCode {
    fn from(code: Code) -> ExitCode {
        ExitCode::from(code as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_documented_code() {
        assert_eq!(Code::pick(Ok(Outcome::Success)) as u8, 0);
        assert_eq!(Code::pick(Ok(Outcome::GatesFailed)) as u8, 1);
        assert_eq!(Code::pick(Err(FailureClass::Usage)) as u8, 2);
        assert_eq!(Code::pick(Err(FailureClass::Internal)) as u8, 3);
        assert_eq!(Code::pick(Ok(Outcome::Escalated)) as u8, 4);
        assert_eq!(Code::pick(Ok(Outcome::Interrupted)) as u8, 5);
    }
}
