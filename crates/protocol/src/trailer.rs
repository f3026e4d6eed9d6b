//! Commit trailers: reading a message's `Key: value` trailers the way git does ([`commit_message_trailers`]), and
//! the trailer that names a commit's session (`Meta-Agent-Session: <id>`), by which the engine,
//! the check before a push and the GitHub layer tell the bot's own commits of a session.

mod parse;

pub use parse::commit_message_trailers;

/// Whether a commit message carries `session`'s `Meta-Agent-Session` trailer.
pub fn carries_session(message: &str, session: &str) -> bool {
    let trailer = format!("Meta-Agent-Session: {session}");
    message.lines().any(|line| line.trim() == trailer)
}
