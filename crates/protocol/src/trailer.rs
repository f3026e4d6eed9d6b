//! The trailer that names a commit's session (`Meta-Agent-Session: <id>`): how the engine, the
//! check before a push and the GitHub layer tell the bot's own commits of a session.

/// Whether a commit message carries `session`'s `Meta-Agent-Session` trailer.
pub fn carries_session(message: &str, session: &str) -> bool {
    let trailer = format!("Meta-Agent-Session: {session}");
    message.lines().any(|line| line.trim() == trailer)
}
