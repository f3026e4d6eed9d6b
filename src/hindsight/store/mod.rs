//! The hindsight store: what is known about each signature and which resolutions cured it.
//!
//! A [`Store`] holds [`Entry`]s (in memory, optionally backed by a directory of one YAML file per
//! entry, see [`files`]) and the bundled [`Catalog`]. It answers lookups (exact id through a hash
//! index, similar templates of the same kind through [`similar`], and entries of the same family
//! through a family index: near-identical failures elsewhere), ranks resolutions by
//! confidence ([`rank`]), and records what happened (seen, outcome, captured patch, unresolved).
//! [`Store::applicable_resolutions`] enforces the trust rule: learned resolutions are offered
//! only when the reviewed store (the default branch's) holds them too.
//!
//! Every entry passes the options' redactor before it is written (entries are committed with the
//! fix they learned from, so they are outbound text).
//!
//! The store never reads a clock (every call takes `now`), never runs commands or git, and prints
//! nothing. Whether a patch still applies to today's code is the engine's check.

pub mod cache;
pub mod catalog;
pub mod dir;
pub mod entry;
pub mod files;
pub mod rank;
pub mod similar;

mod record;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use catalog::{Catalog, CatalogError, CatalogRule};
pub use entry::{
    CommandLine, Entry, EscalationContext, Fix, Outcomes, PatchFix, Resolution, Status, Timestamp,
};
pub use files::{LoadReport, SkippedFile};
pub use similar::{DEFAULT_SIMILARITY_THRESHOLD, SimilarityIndex};

use crate::hindsight::Signature;
use crate::hindsight::signature::family_key;
use crate::redact::Redactor;

/// Default directory of the store, relative to the repository root.
pub const DEFAULT_STORE_DIR: &str = ".meta-agent/hindsight";

/// Why a store operation failed. Every variant names the file or the signature.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An entry file exists but cannot be read; it is left as it is.
    #[error("refusing to overwrite corrupt entry file {path}: {reason}")]
    Corrupt {
        path: PathBuf,
        #[source]
        reason: files::EntryError,
    },
    #[error("cannot write {path}: {source}")]
    Serialize {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("signature {id:?} is not a hex id")]
    InvalidId { id: String },
    #[error("no entry for signature {id}")]
    UnknownSignature { id: String },
    #[error("signature {signature} has no resolution {resolution}")]
    UnknownResolution {
        signature: String,
        resolution: String,
    },
}

/// How a store is set up.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Backing directory; `None` keeps everything in memory.
    pub dir: Option<PathBuf>,
    /// A trusted directory `dir` lies beneath: from there down, no link is followed (the
    /// worktree, during a run, where untrusted commands have written). `None` trusts the path of
    /// `dir` as given.
    pub anchor: Option<PathBuf>,
    pub catalog: Catalog,
    /// Minimum Jaccard similarity for similar matches.
    pub similarity_threshold: f64,
    /// At most this many similar entries per lookup.
    pub similar_limit: usize,
    /// Half-life of the recency factor, in days.
    pub half_life_days: f64,
    /// Use and refresh the derived load cache (`.cache.jsonl`) in the directory.
    pub load_cache: bool,
    /// Every entry written passes it (token patterns only by default; the engine gives it the
    /// secrets the run holds).
    pub redactor: Arc<Redactor>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            dir: None,
            anchor: None,
            catalog: Catalog::default(),
            similarity_threshold: DEFAULT_SIMILARITY_THRESHOLD,
            similar_limit: 10,
            half_life_days: rank::DEFAULT_HALF_LIFE_DAYS,
            load_cache: true,
            redactor: Arc::new(Redactor::default()),
        }
    }
}

/// Where a ranked resolution came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum ResolutionSource {
    /// The entry for the signature itself.
    Exact { signature: String },
    /// The entry for a similar signature, with its similarity.
    Similar { signature: String, score: f64 },
    /// A bundled catalog rule.
    Catalog { rule: String },
}

/// A resolution with its confidence, best first in a ranking.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RankedResolution {
    pub resolution: Resolution,
    pub source: ResolutionSource,
    /// Wilson lower bound × recency, times the similarity for similar matches.
    pub confidence: f64,
    /// Whether the bundled catalog holds this very fix for this signature.
    pub from_catalog: bool,
}

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

/// Entries, their indexes, and the catalog.
#[derive(Debug, Clone, Default)]
pub struct Store {
    options: StoreOptions,
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
    /// Family key → slots, in insertion order.
    by_family: HashMap<String, Vec<usize>>,
    index: SimilarityIndex,
    report: LoadReport,
}

impl Store {
    /// Opens the store described by `options`, loading its directory if there is one.
    /// Corrupt files are skipped and listed in [`Store::load_report`].
    pub fn open(options: StoreOptions) -> Result<Store, StoreError> {
        let (entries, report) = match &options.dir {
            Some(dir) => files::load_dir(
                &files::StoreDir::open(dir, options.anchor.as_deref())?,
                options.load_cache,
            )?,
            None => (Vec::new(), LoadReport::default()),
        };
        let mut store = Store::from_entries(options, entries);
        store.report = report;
        Ok(store)
    }

    /// A store over the given entries (later duplicates are merged into earlier ones).
    pub fn from_entries(options: StoreOptions, entries: Vec<Entry>) -> Store {
        let mut store = Store {
            options,
            ..Store::default()
        };
        for entry in entries {
            store.put(entry);
        }
        store
    }

    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    pub fn catalog(&self) -> &Catalog {
        &self.options.catalog
    }

    pub fn load_report(&self) -> &LoadReport {
        &self.report
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in no particular order (sort by `signature` for output).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

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

    /// Every known resolution for `signature`, best first, each once (by resolution id).
    /// Includes unreviewed learned resolutions: see [`Store::applicable_resolutions`].
    pub fn ranked_resolutions(
        &self,
        signature: &Signature,
        now: Timestamp,
    ) -> Vec<RankedResolution> {
        let lookup = self.lookup(signature);
        let mut ranked = Vec::new();
        if let Some(entry) = lookup.exact {
            ranked.extend(self.rank_entry(signature, entry, 1.0, now));
        }
        for rule in &lookup.catalog {
            ranked.extend(rule.resolutions.iter().map(|r| RankedResolution {
                confidence: 0.0,
                source: ResolutionSource::Catalog {
                    rule: rule.name.clone(),
                },
                from_catalog: true,
                resolution: r.clone(),
            }));
        }
        for (score, entry) in &lookup.similar {
            ranked.extend(self.rank_entry(signature, entry, *score, now));
        }
        sort_ranked(&mut ranked);
        ranked
    }

    /// The resolutions of `entry` (the signature's own when `score` is 1 and the ids agree, a
    /// similar one's otherwise), their confidence scaled by `score`.
    fn rank_entry(
        &self,
        signature: &Signature,
        entry: &Entry,
        score: f64,
        now: Timestamp,
    ) -> Vec<RankedResolution> {
        let source = if entry.signature == signature.id {
            ResolutionSource::Exact {
                signature: signature.id.clone(),
            }
        } else {
            ResolutionSource::Similar {
                signature: entry.signature.clone(),
                score,
            }
        };
        let half_life = self.options.half_life_days;
        entry
            .resolutions
            .iter()
            .map(|r| RankedResolution {
                confidence: score * rank::confidence(&r.outcomes, now, half_life),
                source: source.clone(),
                from_catalog: self.in_catalog(signature, r),
                resolution: r.clone(),
            })
            .collect()
    }

    /// Whether the bundled catalog offers this very fix for `signature`.
    fn in_catalog(&self, signature: &Signature, resolution: &Resolution) -> bool {
        self.options
            .catalog
            .resolution_for(signature, &resolution.id)
            .is_some_and(|c| c.fix == resolution.fix)
    }

    /// The resolutions the engine may apply for `signature`: catalog fixes always; learned
    /// ones (commands, patches, guidance recorded by runs) only when `reviewed`, the store as it
    /// stands on the default branch, holds the same resolution for the same source signature.
    /// Whether a patch still applies cleanly is for the engine to check before applying it.
    pub fn applicable_resolutions(
        &self,
        signature: &Signature,
        reviewed: &Store,
        now: Timestamp,
    ) -> Vec<RankedResolution> {
        self.ranked_resolutions(signature, now)
            .into_iter()
            .filter(|r| r.from_catalog || reviewed.holds(&r.source, &r.resolution))
            .collect()
    }

    /// Whether this store has `resolution` (same id and content) under the source's signature.
    fn holds(&self, source: &ResolutionSource, resolution: &Resolution) -> bool {
        let signature = match source {
            ResolutionSource::Exact { signature } | ResolutionSource::Similar { signature, .. } => {
                signature
            }
            ResolutionSource::Catalog { .. } => return false,
        };
        self.get(signature)
            .and_then(|e| e.resolution(&resolution.id))
            .is_some_and(|r| r.fix == resolution.fix)
    }

    /// Inserts or replaces an entry in memory (merging a duplicate from `from_entries`); an
    /// entry without a family (an old file) gets the one its kind and template give.
    fn put(&mut self, mut entry: Entry) {
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
    fn drop_entries(&mut self, ids: &[String]) {
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

fn source_rank(source: &ResolutionSource) -> u8 {
    match source {
        ResolutionSource::Exact { .. } => 0,
        ResolutionSource::Catalog { .. } => 1,
        ResolutionSource::Similar { .. } => 2,
    }
}

fn fix_rank(fix: &Fix) -> u8 {
    match fix {
        Fix::Command(_) => 0,
        Fix::Patch(_) => 1,
        Fix::Guidance(_) => 2,
    }
}

/// Best first: confidence, then exact before catalog before similar, commands before patches
/// before guidance, then id; each resolution id kept once (its best placing).
fn sort_ranked(ranked: &mut Vec<RankedResolution>) {
    ranked.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(source_rank(&a.source).cmp(&source_rank(&b.source)))
            .then(fix_rank(&a.resolution.fix).cmp(&fix_rank(&b.resolution.fix)))
            .then(a.resolution.id.cmp(&b.resolution.id))
    });
    let mut seen = std::collections::HashSet::new();
    ranked.retain(|r| seen.insert(r.resolution.id.clone()));
}
