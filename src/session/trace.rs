//! `meta-agent trace show RUN` and `meta-agent trace replay RUN`: a recorded run read back. RUN
//! is a path (a run's directory, the artifact's zip, a trace file) or, when no such path exists,
//! a session of the repository at `--repo` (its directory under `.git/meta-agent/sessions/`).

use std::path::{Path, PathBuf};

use super::{Done, Overrides, SessionError};
use crate::engine::state::SessionStore;
use crate::git::Repository;
use crate::replay::terminal::{Stdout, SystemClock, TerminalKeys};
use crate::replay::{Devices, Location, Play, Speed};
use crate::telemetry::TraceEntry;

/// What `trace replay` was asked.
#[derive(Debug, Clone)]
pub struct ReplayRequest {
    pub run: String,
    pub speed: Speed,
    pub until: Vec<Location>,
}

/// `meta-agent trace show RUN`: the timeline, at once.
pub fn show(overrides: &Overrides, run: &str) -> Result<Done, SessionError> {
    let entries = load(overrides, run)?;
    let rows = crate::render::timeline::rows(&entries);
    Ok(Done::ok(crate::render::timeline::to_terminal(&rows)))
}

/// `meta-agent trace replay RUN`: the timeline in real time on the terminal (see
/// [`crate::replay::player`]).
pub fn replay(overrides: &Overrides, request: &ReplayRequest) -> Result<Done, SessionError> {
    let entries = load(overrides, &request.run)?;
    let clock = SystemClock::default();
    let mut keys = TerminalKeys::open();
    let ending = crate::replay::play(
        &entries,
        &Play {
            speed: request.speed,
            until: request.until.clone(),
        },
        Devices {
            clock: &clock,
            keys: &mut keys,
            screen: &mut Stdout,
        },
    );
    drop(keys);
    Ok(Done::ok(crate::render::timeline::replay_ending(ending)))
}

fn load(overrides: &Overrides, run: &str) -> Result<Vec<TraceEntry>, SessionError> {
    let path = locate(overrides, run)?;
    Ok(crate::replay::source::load(&path)?)
}

/// The path RUN names: itself when it exists, else its session's directory.
fn locate(overrides: &Overrides, run: &str) -> Result<PathBuf, SessionError> {
    let given = Path::new(run);
    if given.exists() {
        return Ok(given.to_owned());
    }
    let checkout = super::run::open_repo(&super::prepared::repo_root(overrides)?)?;
    let sessions = SessionStore::for_git_dir(&checkout.git_dir());
    // Validates the id (no path in it) and that the session exists.
    let state = sessions.load(Some(run)).map_err(|err| {
        SessionError::Usage(format!(
            "{run}: not a file, a directory or a session of this repository ({err})"
        ))
    })?;
    Ok(sessions.session_dir(&state.session))
}
