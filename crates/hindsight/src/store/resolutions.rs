//! Which resolutions a signature has, best first, and which of them the engine may apply (the
//! trust rule: learned resolutions only when the reviewed store holds them too).

use super::entry::{Entry, Fix, Resolution, Timestamp};
use super::{Store, rank};
use crate::Signature;

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

impl Store {
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
