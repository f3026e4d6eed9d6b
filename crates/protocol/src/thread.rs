//! How much of an issue's or a pull request's conversation a task carries, one rule for the
//! GitHub layer (which reads the thread) and the shared memory (which keeps conversations): the
//! numbers and the [`Window`] that applies them.

/// Comments kept whole.
pub const RECENT: usize = 10;
/// Past this many comments the older ones are summarized.
pub const SUMMARIZE_AFTER: usize = 20;
/// The longest text kept from one comment, in characters.
pub const MAX_COMMENT_CHARS: usize = 1_500;

/// A conversation split for a prompt: the older messages (summarised past [`SUMMARIZE_AFTER`],
/// else left out with a count) and the last [`RECENT`], kept whole. One split for the issue's
/// comments and the memory's conversations.
#[derive(Debug, Clone, PartialEq)]
pub struct Window<'a, T> {
    pub older: &'a [T],
    pub recent: &'a [T],
}

impl<'a, T> Window<'a, T> {
    /// The last [`RECENT`] of `messages` and the ones before them.
    pub fn of(messages: &'a [T]) -> Window<'a, T> {
        let split = messages.len().saturating_sub(RECENT);
        let (older, recent) = messages.split_at(split);
        Window { older, recent }
    }

    /// Whether the older messages are summarised (more than [`SUMMARIZE_AFTER`] in all).
    pub fn summarize(&self) -> bool {
        self.older.len() + self.recent.len() > SUMMARIZE_AFTER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_ten_are_recent_and_older_ones_are_summarised_past_twenty() {
        let twenty: Vec<u32> = (1..=20).collect();
        let window = Window::of(&twenty);
        assert_eq!((window.older.len(), window.recent[0]), (10, 11));
        assert!(!window.summarize());
        let more: Vec<u32> = (1..=21).collect();
        assert!(Window::of(&more).summarize());
        let few = [1, 2];
        assert_eq!(Window::of(&few[..]).older, &[] as &[i32]);
    }
}
