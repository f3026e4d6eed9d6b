//! Recording what happened: signatures seen, outcomes of applied resolutions, captured patches,
//! escalations, imports and prunes.
//!
//! Every change is a read-modify-write of one entry. With a backing directory it happens under
//! the store lock, starting from the file as it is on disk now (another process may have written
//! it since this store loaded), so concurrent writers lose no update; a corrupt file is never
//! replaced. Each entry passes the store's redactor before it is written; the in-memory copy is
//! then refreshed from what was written.

use super::entry::{Entry, EscalationContext, Fix, PatchFix, Resolution, Status, Timestamp};
use super::files::{self, StoreLock};
use super::{Store, StoreError};
use crate::Signature;

impl Store {
    /// One occurrence of each signature (duplicates in `signatures` count once): created when
    /// new, `last_seen` moved to `now`.
    pub fn record_seen(
        &mut self,
        signatures: &[Signature],
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut done = std::collections::HashSet::new();
        for signature in signatures.iter().filter(|s| done.insert(s.id.clone())) {
            self.update(signature, now, |entry| {
                entry.occurrences += 1;
                touch(entry, now);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// One application of resolution `resolution` to signature `signature`: cured or not.
    /// The resolution may come from the entry, the catalog or a similar entry; it is added to
    /// the entry if new. A cure marks the entry resolved.
    pub fn record_outcome(
        &mut self,
        signature: &str,
        resolution: &str,
        cured: bool,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let entry = self
            .get(signature)
            .ok_or_else(|| StoreError::UnknownSignature {
                id: signature.to_string(),
            })?;
        let sig = entry.signature();
        let known = self.find_resolution(&sig, resolution, now)?;
        self.record_fix_outcome(&sig, known.fix, cured, now)
    }

    /// [`Store::record_outcome`] with the fix itself (a journal replayed elsewhere carries it):
    /// the entry is created when missing.
    pub fn record_fix_outcome(
        &mut self,
        signature: &Signature,
        fix: Fix,
        cured: bool,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let id = fix.id();
        self.update(signature, now, |entry| {
            if entry.resolution(&id).is_none() {
                entry.add_resolution(Resolution::new(fix));
            }
            if let Some(r) = entry.resolution_mut(&id) {
                r.outcomes.record(cured, now);
            }
            if cured {
                entry.status = Status::Resolved;
            }
            Ok(())
        })
    }

    fn find_resolution(
        &self,
        signature: &Signature,
        id: &str,
        now: Timestamp,
    ) -> Result<Resolution, StoreError> {
        self.ranked_resolutions(signature, now)
            .into_iter()
            .map(|r| r.resolution)
            .find(|r| r.id == id)
            .ok_or_else(|| StoreError::UnknownResolution {
                signature: signature.id.clone(),
                resolution: id.to_string(),
            })
    }

    /// A novel fix that cured `signature`: added as a patch resolution counted as one success.
    /// It is learned and unreviewed until the entry file reaches the default branch.
    /// Returns the resolution id.
    pub fn capture_patch(
        &mut self,
        signature: &Signature,
        patch: PatchFix,
        now: Timestamp,
    ) -> Result<String, StoreError> {
        let fix = Fix::Patch(patch);
        let id = fix.id();
        self.update(signature, now, |entry| {
            touch(entry, now);
            entry.add_resolution(Resolution::new(fix));
            if let Some(r) = entry.resolution_mut(&id) {
                r.outcomes.record(true, now);
            }
            entry.status = Status::Resolved;
            Ok(())
        })?;
        Ok(id)
    }

    /// A run escalated with these signatures still failing: each entry is marked escalated and
    /// keeps `context` (dated `now`) and its tags.
    pub fn record_unresolved(
        &mut self,
        signatures: &[Signature],
        context: &EscalationContext,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut context = context.clone();
        context.at = Some(now);
        for signature in signatures {
            self.update(signature, now, |entry| {
                touch(entry, now);
                entry.status = Status::Escalated;
                entry.tags.extend(context.tags.iter().cloned());
                entry.escalation = Some(context.clone());
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Folds an entry from elsewhere (an export, another branch) into this store.
    pub fn merge_entry(&mut self, other: &Entry) -> Result<(), StoreError> {
        if !files::valid_id(&other.signature) {
            return Err(StoreError::InvalidId {
                id: other.signature.clone(),
            });
        }
        let signature = other.signature();
        self.update(&signature, other.first_seen, |entry| {
            entry.merge(other);
            Ok(())
        })
    }

    /// Deletes entries (files and memory).
    pub fn remove(&mut self, ids: &[String]) -> Result<(), StoreError> {
        if let Some(dir) = self.files()? {
            let _lock = StoreLock::acquire(&dir)?;
            for id in ids {
                files::remove_entry(&dir, id)?;
            }
        }
        self.drop_entries(ids);
        Ok(())
    }

    /// Read-modify-write of one entry: from disk under the lock when backed by a directory.
    fn update(
        &mut self,
        signature: &Signature,
        now: Timestamp,
        change: impl FnOnce(&mut Entry) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if !files::valid_id(&signature.id) {
            return Err(StoreError::InvalidId {
                id: signature.id.clone(),
            });
        }
        let Some(dir) = self.files()? else {
            let mut entry = self.current_or_new(signature, now);
            change(&mut entry)?;
            self.put(entry);
            return Ok(());
        };
        let _lock = StoreLock::acquire(&dir)?;
        let mut entry = match files::read_current(&dir, &signature.id)? {
            Some(on_disk) => on_disk,
            None => self.current_or_new(signature, now),
        };
        change(&mut entry)?;
        entry.redact(&|text: &str| self.options.redactor.redact_text(text).into_owned());
        files::write_entry(&dir, &entry)?;
        self.put(entry);
        Ok(())
    }

    /// The backing directory, reached beneath the configured anchor.
    fn files(&self) -> Result<Option<files::StoreDir>, StoreError> {
        self.options
            .dir
            .as_deref()
            .map(|dir| files::StoreDir::open(dir, self.options.anchor.as_deref()))
            .transpose()
    }

    fn current_or_new(&self, signature: &Signature, now: Timestamp) -> Entry {
        self.get(&signature.id)
            .cloned()
            .unwrap_or_else(|| Entry::new(signature, now))
    }
}

/// Widens the seen interval to include `now`.
fn touch(entry: &mut Entry, now: Timestamp) {
    entry.first_seen = entry.first_seen.min(now);
    entry.last_seen = entry.last_seen.max(now);
}
