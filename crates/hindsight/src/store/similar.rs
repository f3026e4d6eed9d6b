//! Similar-signature search: token-set (Jaccard) similarity over templates, per kind, through an
//! inverted index (token → entries) with prefix filtering, so a query touches only entries that
//! can reach the threshold.
//!
//! The index holds entry slots (positions in the store's entry list), not entries; the store
//! rebuilds it when slots move. This module does no I/O.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::SignatureKind;

/// Default minimum Jaccard similarity for a similar match.
pub const DEFAULT_SIMILARITY_THRESHOLD: f64 = 0.6;

/// The distinct tokens of a template: runs of letters, digits and `_`, lowercased, plus
/// placeholders such as `<path>` kept whole.
pub fn tokens(template: &str) -> Vec<String> {
    let mut out: Vec<String> = template
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '<' || c == '>'))
        .filter(|t| !t.is_empty() && *t != "<" && *t != ">")
        .map(str::to_lowercase)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// FNV-1a for the index's small keys: several times faster than SipHash here. The keys are
/// tokens of the repository's own templates, not attacker-chosen input at lookup time.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// One hit: an entry slot and its Jaccard similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimilarHit {
    pub slot: usize,
    pub score: f64,
}

/// Inverted index over the token sets of every entry's template.
#[derive(Debug, Default, Clone)]
pub struct SimilarityIndex {
    vocabulary: FnvMap<String, u32>,
    /// Number of distinct tokens per slot (zero for slots never inserted).
    sizes: Vec<u16>,
    postings: FnvMap<(SignatureKind, u32), Vec<u32>>,
}

impl SimilarityIndex {
    /// Indexes `template` as slot `slot`. Slots must come in increasing order (posting lists
    /// stay sorted, which the query relies on).
    pub fn insert(&mut self, slot: usize, kind: SignatureKind, template: &str) {
        let tokens = tokens(template);
        if self.sizes.len() <= slot {
            self.sizes.resize(slot + 1, 0);
        }
        self.sizes[slot] = u16::try_from(tokens.len()).unwrap_or(u16::MAX);
        for token in tokens {
            let id = self.intern(token);
            self.postings
                .entry((kind, id))
                .or_default()
                .push(slot as u32);
        }
    }

    fn intern(&mut self, token: String) -> u32 {
        let next = self.vocabulary.len() as u32;
        *self.vocabulary.entry(token).or_insert(next)
    }

    /// Slots of the same kind whose template has Jaccard similarity at least `threshold` with
    /// `template`, best first (ties by slot), at most `limit`.
    pub fn query(
        &self,
        kind: SignatureKind,
        template: &str,
        threshold: f64,
        limit: usize,
    ) -> Vec<SimilarHit> {
        let query = tokens(template);
        if query.is_empty() {
            return Vec::new();
        }
        let threshold = threshold.clamp(f64::EPSILON, 1.0);
        let lists = self.posting_lists(kind, &query);
        let mut hits = self.score(&lists, query.len(), threshold);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
        hits.truncate(limit);
        hits
    }

    /// The postings of each query token in this kind, rarest first.
    fn posting_lists<'a>(&'a self, kind: SignatureKind, query: &[String]) -> Vec<&'a [u32]> {
        let mut lists: Vec<&[u32]> = query
            .iter()
            .filter_map(|t| self.vocabulary.get(t))
            .filter_map(|id| self.postings.get(&(kind, *id)))
            .map(Vec::as_slice)
            .collect();
        lists.sort_by_key(|l| l.len());
        lists
    }

    /// Counts shared tokens per slot over the posting lists, then scores the slots that can
    /// reach `threshold`. Prefix filtering: a slot sharing at least `ceil(t * n)` tokens appears
    /// in one of the `n - ceil(t * n) + 1` rarest query tokens' lists (tokens unknown to the
    /// index count as the rarest), so only slots first met there become candidates.
    fn score(&self, lists: &[&[u32]], n: usize, threshold: f64) -> Vec<SimilarHit> {
        let min_overlap = ((threshold * n as f64) - 1e-9).ceil().max(1.0) as usize;
        let unknown = n - lists.len();
        let prefix = (n + 1 - min_overlap.min(n)).saturating_sub(unknown);
        let mut counts = vec![0u8; self.sizes.len()];
        let mut candidates = Vec::new();
        let (head, tail) = lists.split_at(prefix.min(lists.len()));
        for &slot in head.iter().flat_map(|l| l.iter()) {
            let count = &mut counts[slot as usize];
            if *count == 0 {
                candidates.push(slot);
            }
            *count = count.saturating_add(1);
        }
        for list in tail {
            count_in(list, &candidates, &mut counts);
        }
        candidates
            .into_iter()
            .filter_map(|slot| self.hit(slot, counts[slot as usize], n, threshold))
            .collect()
    }

    fn hit(&self, slot: u32, shared: u8, n: usize, threshold: f64) -> Option<SimilarHit> {
        let shared = usize::from(shared);
        let size = usize::from(self.sizes[slot as usize]);
        let score = shared as f64 / (n + size - shared) as f64;
        (score + 1e-12 >= threshold).then_some(SimilarHit {
            slot: slot as usize,
            score,
        })
    }
}

/// Adds one to the count of every candidate in `list` (sorted): by binary search when the
/// candidates are few next to the list, else by a scan (counts of non-candidates do not matter).
fn count_in(list: &[u32], candidates: &[u32], counts: &mut [u8]) {
    let searched = candidates.len() * (usize::BITS - list.len().leading_zeros()) as usize;
    if searched < list.len() {
        for &slot in candidates {
            if list.binary_search(&slot).is_ok() {
                let count = &mut counts[slot as usize];
                *count = count.saturating_add(1);
            }
        }
    } else {
        for &slot in list {
            let count = &mut counts[slot as usize];
            *count = count.saturating_add(1);
        }
    }
}

/// Jaccard similarity of two templates' token sets (the reference the index must agree with).
pub fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (tokens(a), tokens(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.iter().filter(|t| b.binary_search(t).is_ok()).count();
    shared as f64 / (a.len() + b.len() - shared) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tokens_keep_placeholders_and_codes() {
        assert_eq!(
            tokens("error[E0308]: mismatched types in <path>"),
            vec!["<path>", "e0308", "error", "in", "mismatched", "types"]
        );
    }

    #[test]
    fn finds_similar_templates_of_the_same_kind_only() {
        let mut index = SimilarityIndex::default();
        index.insert(
            0,
            SignatureKind::Compile,
            "error[E0308]: mismatched types expected u32 found i64",
        );
        index.insert(
            1,
            SignatureKind::Compile,
            "error[E0425]: cannot find value x in this scope",
        );
        index.insert(
            2,
            SignatureKind::Lint,
            "error[E0308]: mismatched types expected u32 found u64",
        );
        let hits = index.query(
            SignatureKind::Compile,
            "error[E0308]: mismatched types expected u32 found u64",
            0.6,
            10,
        );
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].slot, 0);
        assert!((hits[0].score - 7.0 / 9.0).abs() < 1e-9);
    }

    fn word() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "error", "expected", "found", "type", "u32", "i64", "<path>", "test", "assert", "left",
            "right", "panic", "value", "scope", "module",
        ])
        .prop_map(str::to_string)
    }

    proptest! {
        #[test]
        fn index_agrees_with_brute_force(
            templates in prop::collection::vec(prop::collection::vec(word(), 1..8), 1..30),
            query in prop::collection::vec(prop_oneof![word(), Just("novel".to_string()), Just("unseen".to_string())], 1..8),
            threshold in 0.2f64..1.0,
        ) {
            let templates: Vec<String> = templates.iter().map(|w| w.join(" ")).collect();
            let query = query.join(" ");
            let mut index = SimilarityIndex::default();
            for (slot, t) in templates.iter().enumerate() {
                index.insert(slot, SignatureKind::Other, t);
            }
            let mut got: Vec<usize> = index
                .query(SignatureKind::Other, &query, threshold, usize::MAX)
                .iter().map(|h| h.slot).collect();
            got.sort_unstable();
            let want: Vec<usize> = templates.iter().enumerate()
                .filter(|(_, t)| jaccard(t, &query) + 1e-12 >= threshold)
                .map(|(slot, _)| slot).collect();
            prop_assert_eq!(got, want);
        }
    }
}
