//! Per-file coverage state shared by the lcov and Cobertura readers: which lines are instrumented
//! and covered (two bitmaps, so a line seen twice counts once), branch states keyed by line, and
//! the summary counts a tool wrote when it gave no per-line data. Turns into the public report
//! types; does no I/O.

use std::collections::BTreeMap;

use super::{CoverageFormat, CoverageReport, FileCoverage, percent};

/// Highest source line number accepted; bounds the bitmap of one file to about 1 MiB.
pub(super) const MAX_LINE: u32 = 4_000_000;
/// Bound on the bitmaps of all files together, so a hostile report cannot exhaust memory.
pub(super) const MAX_LINE_STATE_BYTES: usize = 256 * 1024 * 1024;

/// Why a line could not be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TallyError {
    LineTooLarge(u32),
    StateTooLarge,
}

impl std::fmt::Display for TallyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TallyError::LineTooLarge(line) => {
                write!(f, "line number {line} is beyond the {MAX_LINE}-line limit")
            }
            TallyError::StateTooLarge => write!(
                f,
                "per-line state for this report passes {} MiB",
                MAX_LINE_STATE_BYTES / (1024 * 1024)
            ),
        }
    }
}

/// Covered and total counts, added up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub covered: u64,
    pub total: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.covered += other.covered;
        self.total += other.total;
    }
}

/// Identifies one branch: its line and a tool-specific id within the line.
pub(super) type BranchKey = (u32, u64);

/// One branch (or, for Cobertura, one line's conditions): 24 bytes.
#[derive(Debug, Clone, Copy)]
struct Branch {
    id: u64,
    line: u32,
    covered: u32,
    total: u32,
}

/// What is known of one source file.
#[derive(Debug, Default)]
pub(super) struct FileTally {
    instrumented: Vec<u64>,
    covered: Vec<u64>,
    /// Branch outcomes, sorted by key and merged up to `merged_branches`, then appended; a
    /// branch seen twice keeps the larger covered and total counts.
    branches: Vec<Branch>,
    merged_branches: usize,
    /// Line counts from summaries (lcov `LF`/`LH`) of records without per-line data.
    pub summary_lines: Counts,
    /// Branch counts from summaries (lcov `BRF`/`BRH`) of records without per-branch data.
    pub summary_branches: Counts,
}

impl FileTally {
    fn line_counts(&self) -> Counts {
        let ones = |words: &[u64]| words.iter().map(|w| u64::from(w.count_ones())).sum();
        let mut counts = Counts {
            covered: ones(&self.covered),
            total: ones(&self.instrumented),
        };
        counts.add(self.summary_lines);
        counts
    }

    fn branch_counts(&self) -> Counts {
        let mut counts = Counts::default();
        for branch in &self.branches {
            counts.add(Counts {
                covered: u64::from(branch.covered),
                total: u64::from(branch.total),
            });
        }
        counts.add(self.summary_branches);
        counts
    }

    fn to_file_coverage(&self, path: &str) -> FileCoverage {
        let lines = self.line_counts();
        let branches = self.branch_counts();
        let has_branches = branches.total > 0;
        FileCoverage {
            path: path.to_owned(),
            lines_covered: lines.covered,
            lines_total: lines.total,
            line_percent: percent(lines.covered, lines.total),
            branches_covered: has_branches.then_some(branches.covered),
            branches_total: has_branches.then_some(branches.total),
            branch_percent: has_branches.then(|| percent(branches.covered, branches.total)),
        }
    }
}

impl FileTally {
    /// Records that `line` is instrumented, and covered when `hit`, charging new bitmap words
    /// to `budget`.
    pub fn record_line(
        &mut self,
        line: u32,
        hit: bool,
        budget: &mut LineBudget,
    ) -> Result<(), TallyError> {
        if line > MAX_LINE {
            return Err(TallyError::LineTooLarge(line));
        }
        let word = (line / 64) as usize;
        let grow_words = (word + 1).saturating_sub(self.instrumented.len());
        if grow_words > 0 {
            budget.charge(grow_words * 16)?;
            self.instrumented.resize(word + 1, 0);
            self.covered.resize(word + 1, 0);
        }
        let bit = 1u64 << (line % 64);
        self.instrumented[word] |= bit;
        if hit {
            self.covered[word] |= bit;
        }
        Ok(())
    }

    /// Records a branch outcome, merging with an earlier sighting of the same branch.
    pub fn record_branch(&mut self, (line, id): BranchKey, counts: Counts) {
        let narrow = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        self.branches.push(Branch {
            id,
            line,
            covered: narrow(counts.covered),
            total: narrow(counts.total),
        });
        if self.branches.len() > 2 * self.merged_branches + 1024 {
            self.merge_branches();
        }
    }

    /// Sorts the branches by key and merges duplicates, so each branch is held once.
    fn merge_branches(&mut self) {
        self.branches.sort_unstable_by_key(|b| (b.line, b.id));
        self.branches.dedup_by(|later, kept| {
            let same = (later.line, later.id) == (kept.line, kept.id);
            if same {
                kept.covered = kept.covered.max(later.covered);
                kept.total = kept.total.max(later.total);
            }
            same
        });
        self.branches.shrink_to_fit();
        self.merged_branches = self.branches.len();
    }
}

/// Bytes of bitmap handed out so far, against [`MAX_LINE_STATE_BYTES`].
#[derive(Debug, Default)]
pub(super) struct LineBudget {
    used: usize,
}

impl LineBudget {
    fn charge(&mut self, bytes: usize) -> Result<(), TallyError> {
        if self.used + bytes > MAX_LINE_STATE_BYTES {
            return Err(TallyError::StateTooLarge);
        }
        self.used += bytes;
        Ok(())
    }
}

/// Every file of a report, by path. A reader takes a file's tally out while it reads a record
/// or class of that file, and puts it back at the end.
#[derive(Debug, Default)]
pub(super) struct ReportTally {
    files: BTreeMap<String, FileTally>,
    pub budget: LineBudget,
}

impl ReportTally {
    /// The tally of `path` so far (empty the first time), taken out of the report.
    pub fn take(&mut self, path: &str) -> FileTally {
        self.files.remove(path).unwrap_or_default()
    }

    /// Puts back the tally of `path`.
    pub fn put(&mut self, path: String, mut file: FileTally) {
        if file.branches.len() > file.merged_branches {
            file.merge_branches();
        }
        self.files.insert(path, file);
    }

    /// True when no file has any branch, per-branch or summary.
    pub fn has_no_branches(&self) -> bool {
        self.files.values().all(|f| f.branch_counts().total == 0)
    }

    /// The report, with totals added up from the files (sorted by path).
    pub fn into_report(self, format: CoverageFormat) -> CoverageReport {
        let files: Vec<FileCoverage> = self
            .files
            .iter()
            .map(|(path, tally)| tally.to_file_coverage(path))
            .collect();
        let lines = sum(files.iter().map(|f| (f.lines_covered, f.lines_total)));
        let branches = sum(files.iter().map(|f| {
            (
                f.branches_covered.unwrap_or(0),
                f.branches_total.unwrap_or(0),
            )
        }));
        let has_branches = branches.total > 0;
        CoverageReport {
            format,
            line_percent: percent(lines.covered, lines.total),
            lines_covered: lines.covered,
            lines_total: lines.total,
            branch_percent: has_branches.then(|| percent(branches.covered, branches.total)),
            branches_covered: has_branches.then_some(branches.covered),
            branches_total: has_branches.then_some(branches.total),
            files,
        }
    }
}

fn sum(pairs: impl Iterator<Item = (u64, u64)>) -> Counts {
    let mut counts = Counts::default();
    pairs.for_each(|(covered, total)| counts.add(Counts { covered, total }));
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_seen_twice_counts_once_and_is_covered_if_either_hit() {
        let mut tally = ReportTally::default();
        let mut file = tally.take("a.rs");
        file.record_line(3, false, &mut tally.budget).unwrap();
        file.record_line(3, true, &mut tally.budget).unwrap();
        tally.put("a.rs".into(), file);
        let mut file = tally.take("a.rs");
        file.record_line(70, false, &mut tally.budget).unwrap();
        tally.put("a.rs".into(), file);
        let report = tally.into_report(CoverageFormat::Lcov);
        assert_eq!((report.lines_covered, report.lines_total), (1, 2));
        assert_eq!(report.line_percent, 50.0);
        assert_eq!(report.branch_percent, None);
    }

    #[test]
    fn branches_merge_by_key_and_files_sort_by_path() {
        let mut tally = ReportTally::default();
        let half = Counts {
            covered: 1,
            total: 2,
        };
        let full = Counts {
            covered: 2,
            total: 2,
        };
        let mut b = tally.take("b.py");
        b.record_branch((4, 0), half);
        b.record_branch((4, 0), full);
        tally.put("b.py".into(), b);
        let mut a = tally.take("a.py");
        a.record_line(1, true, &mut tally.budget).unwrap();
        tally.put("a.py".into(), a);
        let report = tally.into_report(CoverageFormat::Cobertura);
        assert_eq!(report.files[0].path, "a.py");
        assert_eq!(report.branches_covered, Some(2));
        assert_eq!(report.branches_total, Some(2));
        assert_eq!(report.files[0].branch_percent, None);
    }

    #[test]
    fn huge_line_numbers_are_refused() {
        let mut budget = LineBudget::default();
        let err = FileTally::default()
            .record_line(MAX_LINE + 1, true, &mut budget)
            .unwrap_err();
        assert_eq!(err, TallyError::LineTooLarge(MAX_LINE + 1));
    }
}
