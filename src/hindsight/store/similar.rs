//! Similar-signature search: token-set (Jaccard) similarity over templates, per kind, through an
//! inverted index (token → entries) with prefix filtering, so a query touches only entries that
//! can reach the threshold.
//!
//! The index holds entry slots (positions in the store's entry list), not entries; the store
//! rebuilds it when slots move. This module does no I/O.

use std::collections::HashMap;

use crate::hindsight::SignatureKind;

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

/// One hit: an entry slot and its Jaccard similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimilarHit {
    pub slot: usize,
    pub score: f64,
}

/// Inverted index over the token sets of every entry's template.
#[derive(Debug, Default, Clone)]
pub struct SimilarityIndex {
    vocabulary: HashMap<String, u32>,
    /// Sorted token ids per slot (empty for slots never inserted).
    sets: Vec<Vec<u32>>,
    postings: HashMap<(SignatureKind, u32), Vec<u32>>,
}

impl SimilarityIndex {
    /// Indexes `template` as slot `slot` (slots are inserted in increasing order).
    pub fn insert(&mut self, slot: usize, kind: SignatureKind, template: &str) {
        let mut ids: Vec<u32> = tokens(template)
            .into_iter()
            .map(|t| self.intern(t))
            .collect();
        ids.sort_unstable();
        for &id in &ids {
            self.postings
                .entry((kind, id))
                .or_default()
                .push(slot as u32);
        }
        if self.sets.len() <= slot {
            self.sets.resize(slot + 1, Vec::new());
        }
        self.sets[slot] = ids;
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
        let probe = self.probe_tokens(kind, &query, threshold);
        let known = self.known_ids(&query);
        let mut hits = self.verify(&probe, &known, query.len(), threshold);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
        hits.truncate(limit);
        hits
    }

    /// Sorted ids of the query's tokens that the index knows.
    fn known_ids(&self, query: &[String]) -> Vec<u32> {
        let mut ids: Vec<u32> = query
            .iter()
            .filter_map(|t| self.vocabulary.get(t).copied())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Prefix filtering: a set with overlap at least `ceil(t * n)` must contain one of the
    /// `n - ceil(t * n) + 1` rarest query tokens, so only their postings are read.
    fn probe_tokens<'a>(
        &'a self,
        kind: SignatureKind,
        query: &[String],
        threshold: f64,
    ) -> Vec<&'a [u32]> {
        let n = query.len();
        let min_overlap = ((threshold * n as f64) - 1e-9).ceil().max(1.0) as usize;
        let prefix = n + 1 - min_overlap.min(n);
        let mut lists: Vec<&[u32]> = query
            .iter()
            .map(|t| {
                self.vocabulary
                    .get(t)
                    .and_then(|id| self.postings.get(&(kind, *id)))
                    .map_or(&[][..], Vec::as_slice)
            })
            .collect();
        lists.sort_by_key(|l| l.len());
        lists.truncate(prefix);
        lists
    }

    fn verify(&self, probe: &[&[u32]], known: &[u32], n: usize, threshold: f64) -> Vec<SimilarHit> {
        let mut seen = std::collections::HashSet::new();
        let min_len = (threshold * n as f64 - 1e-9).ceil() as usize;
        let max_len = (n as f64 / threshold + 1e-9).floor() as usize;
        let mut hits = Vec::new();
        for &slot in probe.iter().flat_map(|l| l.iter()) {
            if !seen.insert(slot) {
                continue;
            }
            let set = &self.sets[slot as usize];
            if set.len() < min_len || set.len() > max_len {
                continue;
            }
            let shared = overlap(known, set);
            let score = shared as f64 / (n + set.len() - shared) as f64;
            if score + 1e-12 >= threshold {
                hits.push(SimilarHit {
                    slot: slot as usize,
                    score,
                });
            }
        }
        hits
    }
}

/// Size of the intersection of two sorted id lists.
fn overlap(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut count) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                count += 1;
                i += 1;
                j += 1;
            }
        }
    }
    count
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
            query in prop::collection::vec(word(), 1..8),
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
