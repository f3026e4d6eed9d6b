//! The in-memory indexes over the entries (by id, by family, by template similarity), kept in
//! step with every insertion and removal.

use super::entry::Entry;
use super::{SimilarityIndex, Store};
use crate::signature::family_key;

impl Store {
    /// Inserts or replaces an entry in memory (merging a duplicate from `from_entries`); an
    /// entry without a family (an old file) gets the one its kind and template give.
    pub(super) fn put(&mut self, mut entry: Entry) {
        if entry.family.is_empty() {
            entry.family = family_key(entry.kind, &entry.template);
        }
        match self.by_id.get(&entry.signature) {
            Some(&slot) => {
                if self.entries[slot].family != entry.family {
                    self.unindex_family(slot);
                    self.index_family(slot, &entry.family);
                }
                self.entries[slot] = entry;
            }
            None => {
                let slot = self.entries.len();
                self.index.insert(slot, entry.kind, &entry.template);
                self.index_family(slot, &entry.family);
                self.by_id.insert(entry.signature.clone(), slot);
                self.entries.push(entry);
            }
        }
    }

    fn index_family(&mut self, slot: usize, family: &str) {
        self.by_family
            .entry(family.to_owned())
            .or_default()
            .push(slot);
    }

    fn unindex_family(&mut self, slot: usize) {
        let family = &self.entries[slot].family;
        if let Some(slots) = self.by_family.get_mut(family) {
            slots.retain(|s| *s != slot);
        }
    }

    /// Removes entries from memory and rebuilds the indexes.
    pub(super) fn drop_entries(&mut self, ids: &[String]) {
        let entries = std::mem::take(&mut self.entries);
        self.by_id.clear();
        self.by_family.clear();
        self.index = SimilarityIndex::default();
        for entry in entries {
            if !ids.contains(&entry.signature) {
                self.put(entry);
            }
        }
    }
}
