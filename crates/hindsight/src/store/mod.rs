//! The hindsight store: what is known about each signature and which resolutions cured it.
//!
//! A [`Store`] holds [`Entry`]s (in memory, optionally backed by a directory of one YAML file per
//! entry, see [`files`]) and the bundled [`Catalog`]. This file holds the store's types and how it
//! opens; the rest is in named files: `lookup.rs` (exact id through a hash index, similar templates
//! of the same kind through [`similar`], entries of the same family: near-identical failures
//! elsewhere), `resolutions.rs` (ranking by confidence from [`rank`], and the trust rule of
//! [`Store::applicable_resolutions`]: learned resolutions are offered only when the reviewed
//! store, the default branch's, holds them too), `index.rs` (the in-memory indexes) and `record.rs`
//! (seen, outcome, captured patch, unresolved).
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

mod index;
mod lookup;
mod record;
mod resolutions;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use catalog::{Catalog, CatalogError, CatalogRule};
pub use entry::{
    CommandLine, Entry, EscalationContext, Fix, Outcomes, PatchFix, Resolution, Status, Timestamp,
};
pub use files::{LoadReport, SkippedFile};
pub use lookup::Lookup;
pub use resolutions::{RankedResolution, ResolutionSource};
pub use similar::{DEFAULT_SIMILARITY_THRESHOLD, SimilarityIndex};

use meta_agent_redact::Redactor;

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
}
