//! Finding entries: by id, by id prefix, and for a signature (its exact entry, similar templates
//! of the same kind, matching catalog rules, and entries of the same family).

use super::Store;
use super::catalog::CatalogRule;
use super::entry::Entry;
use crate::Signature;
use crate::signature::family_key;

/// What a lookup found for one signature.
#[derive(Debug, Clone)]
pub struct Lookup<'a> {
    pub exact: Option<&'a Entry>,
    /// Entries of the same kind with similar templates, best first, with their similarity.
    pub similar: Vec<(f64, &'a Entry)>,
    pub catalog: Vec<&'a CatalogRule>,
    /// Entries of the same family (see [`Store::lookup_family`]).
    pub family: Vec<&'a Entry>,
}

impl Store {
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.by_id.get(id).map(|&slot| &self.entries[slot])
    }

    /// Entries whose id starts with `prefix`, sorted by id.
    pub fn find_prefix(&self, prefix: &str) -> Vec<&Entry> {
        if let Some(entry) = self.get(prefix) {
            return vec![entry];
        }
        let mut found: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| e.signature.starts_with(prefix))
            .collect();
        found.sort_by(|a, b| a.signature.cmp(&b.signature));
        found
    }

    /// Exact entry, similar entries of the same kind, and matching catalog rules.
    pub fn lookup(&self, signature: &Signature) -> Lookup<'_> {
        let exact = self.get(&signature.id);
        let similar = self
            .index
            .query(
                signature.kind,
                &signature.template,
                self.options.similarity_threshold,
                self.options.similar_limit + 1,
            )
            .into_iter()
            .map(|hit| (hit.score, &self.entries[hit.slot]))
            .filter(|(_, e)| e.signature != signature.id)
            .take(self.options.similar_limit)
            .collect();
        let catalog = self.options.catalog.matching(signature).collect();
        Lookup {
            exact,
            similar,
            catalog,
            family: self.lookup_family(signature),
        }
    }

    /// Entries of the same family as `signature` (near-identical failures: another test, file
    /// or repository), without the signature's own entry: cured ones first, then the most
    /// recently seen, then by id. A hint for the model, never a fix to apply blindly.
    pub fn lookup_family(&self, signature: &Signature) -> Vec<&Entry> {
        let family = family_key(signature.kind, &signature.template);
        let mut found: Vec<&Entry> = self
            .by_family
            .get(&family)
            .into_iter()
            .flatten()
            .map(|&slot| &self.entries[slot])
            .filter(|e| e.signature != signature.id)
            .collect();
        found.sort_by(|a, b| {
            b.ever_cured()
                .cmp(&a.ever_cured())
                .then(b.last_seen.cmp(&a.last_seen))
                .then(a.signature.cmp(&b.signature))
        });
        found
    }
}
