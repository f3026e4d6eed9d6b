//! Counting and trimming text in model tokens: the BPE of the model's family (`o200k_base` for
//! GPT-4o, GPT-4.1, GPT-5 and the `o` series; `cl100k_base` for every other model, a close
//! estimate for non-OpenAI models), with characters / 4 only when no tokenizer can be loaded.
//!
//! The BPE tables are embedded in the binary (tiktoken-rs): no network, no files. Each table is
//! built once per process and shared. Pure text work: no I/O.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// Characters per token when no tokenizer is available.
const CHARS_PER_TOKEN: usize = 4;

/// Counts tokens for one model. The table is loaded on the first count that needs it.
#[derive(Clone, Copy)]
pub struct TokenCounter {
    family: Option<Family>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.family.is_some() {
            "bpe"
        } else {
            "chars/4"
        };
        f.debug_struct("TokenCounter").field("kind", &kind).finish()
    }
}

/// Text cut to a token budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    pub text: String,
    /// Tokens left out (0 when the text fitted).
    pub omitted: usize,
}

impl TokenCounter {
    /// The tokenizer of `model`'s family.
    pub fn for_model(model: &str) -> Self {
        let family = match get_tokenizer(model) {
            Some(Tokenizer::O200kBase | Tokenizer::O200kHarmony) => Family::O200k,
            _ => Family::Cl100k,
        };
        TokenCounter {
            family: Some(family),
        }
    }

    /// The characters / 4 estimate (what is used when no table loads).
    pub fn approximate() -> Self {
        TokenCounter { family: None }
    }

    /// True when counting with a real tokenizer (this loads the table).
    pub fn is_exact(&self) -> bool {
        self.bpe().is_some()
    }

    fn bpe(&self) -> Option<&'static CoreBPE> {
        self.family.and_then(Family::bpe)
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        match self.bpe() {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => text.chars().count().div_ceil(CHARS_PER_TOKEN),
        }
    }

    /// At most `max` tokens of `text`, cut at a line end when one is in the second half of what
    /// fits (else at a character boundary).
    pub fn trim(&self, text: &str, max: usize) -> Trimmed {
        let whole = || Trimmed {
            text: text.to_owned(),
            omitted: 0,
        };
        if fits_for_sure(text, max) {
            return whole();
        }
        let tokens = self.bpe().map(|bpe| bpe.encode_ordinary(text));
        let total = tokens.as_ref().map_or_else(|| self.count(text), Vec::len);
        if total <= max {
            return whole();
        }
        let mut limit = max;
        let kept = loop {
            let prefix = self.prefix(text, tokens.as_deref(), limit);
            let kept = match prefix.rfind('\n') {
                Some(end) if end >= prefix.len() / 2 => &prefix[..=end],
                _ => prefix,
            };
            // A prefix re-encoded can merge differently at its end; shrink until it fits.
            if limit == 0 || self.count(kept) <= max {
                break kept;
            }
            limit -= 1;
        };
        Trimmed {
            text: kept.to_owned(),
            omitted: total.saturating_sub(self.count(kept)),
        }
    }

    /// The longest prefix of `text` (on a character boundary) within `max` tokens; `tokens` is
    /// `text` encoded (present with a real tokenizer).
    fn prefix<'t>(&self, text: &'t str, tokens: Option<&[u32]>, max: usize) -> &'t str {
        let (Some(bpe), Some(tokens)) = (self.bpe(), tokens) else {
            let end = text
                .char_indices()
                .nth(max * CHARS_PER_TOKEN)
                .map_or(text.len(), |(index, _)| index);
            return &text[..end];
        };
        let bytes = bpe
            .decode_bytes(&tokens[..max.min(tokens.len())])
            .unwrap_or_default();
        let mut end = bytes.len().min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        &text[..end]
    }
}

/// True when `text` cannot hold more than `max` tokens: every token covers at least one byte,
/// so a text of at most `max` bytes fits without being encoded (nor the table loaded).
pub fn fits_for_sure(text: &str, max: usize) -> bool {
    text.len() <= max
}

#[derive(Clone, Copy)]
enum Family {
    Cl100k,
    O200k,
}

impl Family {
    /// The table, built once per process; `None` when it cannot be built.
    fn bpe(self) -> Option<&'static CoreBPE> {
        static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        match self {
            Family::Cl100k => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().ok()),
            Family::O200k => O200K.get_or_init(|| tiktoken_rs::o200k_base().ok()),
        }
        .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_families_use_their_tables() {
        let text = "fn main() { println!(\"hello, world\"); }";
        let o200k = TokenCounter::for_model("gpt-4o");
        let cl100k = TokenCounter::for_model("gpt-4");
        assert!(o200k.is_exact() && cl100k.is_exact());
        assert_eq!(cl100k.count("hello world"), 2);
        assert_eq!(o200k.count("hello world"), 2);
        let unknown = TokenCounter::for_model("claude-sonnet-4-5");
        assert_eq!(unknown.count(text), cl100k.count(text));
        assert_eq!(TokenCounter::approximate().count("abcdefgh"), 2);
    }

    #[test]
    fn trimming_stays_within_the_budget_and_counts_what_was_cut() {
        let counter = TokenCounter::for_model("gpt-4.1");
        let text: String = (0..200)
            .map(|n| format!("line {n}: some words here\n"))
            .collect();
        let total = counter.count(&text);
        let trimmed = counter.trim(&text, 100);
        let kept = counter.count(&trimmed.text);
        assert!(kept <= 100, "{kept}");
        assert!(trimmed.text.ends_with('\n'));
        assert_eq!(kept + trimmed.omitted, total);
        let short = counter.trim("short", 100);
        assert_eq!((short.text.as_str(), short.omitted), ("short", 0));
    }

    #[test]
    fn trimming_never_splits_a_character() {
        let counter = TokenCounter::for_model("gpt-4o");
        let text = "日本語のテキスト".repeat(50);
        for max in [1, 3, 7, 20] {
            let trimmed = counter.trim(&text, max);
            assert!(counter.count(&trimmed.text) <= max);
            assert!(text.starts_with(&trimmed.text));
        }
        let approx = TokenCounter::approximate().trim(&text, 5);
        assert_eq!(approx.text.chars().count(), 20);
    }
}
