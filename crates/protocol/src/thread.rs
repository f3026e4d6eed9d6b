//! How much of an issue's or a pull request's conversation a task carries, one rule for the
//! GitHub layer (which reads the thread) and the shared memory (which keeps conversations).

/// Comments kept whole.
pub const RECENT: usize = 10;
/// Past this many comments the older ones are summarized.
pub const SUMMARIZE_AFTER: usize = 20;
/// The longest text kept from one comment, in characters.
pub const MAX_COMMENT_CHARS: usize = 1_500;
