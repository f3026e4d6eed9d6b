//! What a local run tells its user about where it works and what it started from: the one line
//! on stderr naming the uncommitted paths a run takes (or, with `--from-head`, leaves out), the
//! snapshot commit's message, the user's and the bot's changes apart (summary and trailers), the
//! line under the report naming a kept worktree, and `meta-agent worktrees list` and `prune`.
//! Pure functions of plain data; snapshot-tested.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use meta_agent_protocol::event::LoopPhase;
use meta_agent_protocol::records::{RunOutcome, UserSnapshot};

use super::words::plural;

/// Paths a line names before "and N more".
pub const PATHS_IN_A_LINE: usize = 10;
/// Paths the snapshot's commit message lists before "and N more".
pub const PATHS_IN_A_MESSAGE: usize = 50;

/// `a, b, c` (at most `shown`), then `and N more`.
pub fn path_list(paths: &[String], shown: usize) -> String {
    let mut list = paths
        .iter()
        .take(shown)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > shown {
        let _ = write!(list, " and {} more", paths.len() - shown);
    }
    list
}

/// Where a local run starts, as the line on stderr says it.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// From `HEAD` plus the user's uncommitted `paths`, as the snapshot commit `snapshot`.
    Snapshot {
        head: &'a str,
        snapshot: &'a str,
        paths: &'a [String],
    },
    /// From `HEAD` alone (`--from-head`), leaving the uncommitted `paths` out.
    FromHead { head: &'a str, paths: &'a [String] },
}

/// The one line naming the uncommitted paths a run took or left out (bounded list).
pub fn start_line(start: Start<'_>) -> String {
    match start {
        Start::Snapshot {
            head,
            snapshot,
            paths,
        } => format!(
            "starting from your uncommitted work on HEAD {} ({} path{}: {}), taken as snapshot \
             commit {}; your checkout stays as it is (--from-head leaves it out)",
            short(head),
            paths.len(),
            plural(paths.len() as u64),
            path_list(paths, PATHS_IN_A_LINE),
            short(snapshot)
        ),
        Start::FromHead { head, paths } => format!(
            "starting from HEAD {} (--from-head): {} uncommitted path{} left out: {}",
            short(head),
            paths.len(),
            plural(paths.len() as u64),
            path_list(paths, PATHS_IN_A_LINE)
        ),
    }
}

/// What the snapshot commit's message says.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotMessage<'a> {
    pub session: &'a str,
    /// The user's `HEAD`, and its branch when on one.
    pub head: &'a str,
    pub branch: Option<&'a str>,
    pub paths: &'a [String],
}

/// The message of the commit holding the user's uncommitted work: labelled as theirs, never as
/// the bot's work, with the session it is the base of.
pub fn snapshot_message(message: SnapshotMessage<'_>) -> String {
    let on = match message.branch {
        Some(branch) => format!("{} ({branch})", short(message.head)),
        None => short(message.head).to_owned(),
    };
    let mut text = format!(
        "meta-agent snapshot: your uncommitted changes (not meta-agent's)\n\n\
         Your working tree on top of {on} when meta-agent session {} started: tracked \
         changes, staged or not, and untracked files that are not ignored. meta-agent took them \
         as the base of its run and changed nothing here; its own changes are the commits after \
         this one. Your checkout was left as it was.\n\nPaths ({}):\n",
        message.session,
        message.paths.len()
    );
    for path in message.paths.iter().take(PATHS_IN_A_MESSAGE) {
        let _ = writeln!(text, "- {path}");
    }
    if message.paths.len() > PATHS_IN_A_MESSAGE {
        let _ = writeln!(
            text,
            "- and {} more",
            message.paths.len() - PATHS_IN_A_MESSAGE
        );
    }
    let _ = write!(
        text,
        "\nMeta-Agent-Snapshot: user-changes\nMeta-Agent-Snapshot-Of: {}\n",
        message.session
    );
    text
}

/// The trailers that tell the user's changes from the bot's (none without a snapshot).
pub fn changes_trailers(snapshot: Option<&UserSnapshot>, bot: &[String]) -> String {
    let Some(snapshot) = snapshot else {
        return String::new();
    };
    let bot = bot_list(bot);
    format!(
        "Meta-Agent-User-Changes: {} (snapshot {})\nMeta-Agent-Bot-Changes: {bot}\n",
        path_list(&snapshot.paths, PATHS_IN_A_LINE),
        short(&snapshot.commit)
    )
}

/// The summary's lines about whose changes are whose (none without a snapshot).
pub fn changes_lines(snapshot: Option<&UserSnapshot>, bot: &[String]) -> String {
    let Some(snapshot) = snapshot else {
        return String::new();
    };
    let bot = bot_list(bot);
    format!(
        "your changes (uncommitted when the run started; snapshot {}, the run's base): {}\n\
         meta-agent's changes: {bot}\n",
        short(&snapshot.commit),
        path_list(&snapshot.paths, PATHS_IN_A_LINE)
    )
}

/// The bot's changed paths in a line, `none` when it changed nothing.
fn bot_list(bot: &[String]) -> String {
    match bot.is_empty() {
        true => "none".to_owned(),
        false => path_list(bot, PATHS_IN_A_LINE),
    }
}

/// The line a person reads under the report of a run whose worktree is kept: a dry run's change
/// waits there uncommitted; any other run's work continues there on `resume`.
pub fn kept_line(path: &Path, dry_run: bool) -> String {
    let why = match dry_run {
        true => "a dry run: the change is there, uncommitted",
        false => "`meta-agent resume` continues there",
    };
    format!(
        "\nThe work is in `{}` (a git worktree of this repository; {why}; `meta-agent worktrees \
         prune` removes it once its session has ended).\n",
        path.display()
    )
}

/// What the session of a kept worktree is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionView {
    /// A meta-agent process holds the session's lock.
    InUse,
    /// The run ended: `resume --guidance` may start it again, in a new worktree if need be.
    Ended { outcome: RunOutcome, dry_run: bool },
    /// Paused or waiting for guidance: `resume` continues in this worktree.
    Waiting { phase: LoopPhase },
    /// No session record could be read for it.
    Unknown,
}

/// One worktree of `meta-agent worktrees list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeRow {
    pub session: String,
    /// The session's work branch (`None`: a dry run's, or no record).
    pub branch: Option<String>,
    pub view: SessionView,
    /// Since the session started.
    pub age: Option<Duration>,
    pub path: PathBuf,
    /// Its directory is there.
    pub present: bool,
}

/// The state column: `in use`, the outcome, `dry run`, the waiting phase, `no session`.
fn state_word(row: &WorktreeRow) -> String {
    let word = match row.view {
        SessionView::InUse => "in use".to_owned(),
        SessionView::Ended { dry_run: true, .. } => "dry run".to_owned(),
        SessionView::Ended { outcome, .. } => outcome.as_str().to_owned(),
        SessionView::Waiting { phase } => match phase {
            LoopPhase::AwaitingGuidance => "awaiting guidance".to_owned(),
            other => format!("paused ({})", other.as_str()),
        },
        SessionView::Unknown => "no session".to_owned(),
    };
    match row.present {
        true => word,
        false => format!("{word}, directory gone"),
    }
}

/// `45s`, `12m`, `3h`, `2d`.
pub fn age(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// `meta-agent worktrees list`: one line per kept worktree.
pub fn worktrees_table(rows: &[WorktreeRow]) -> String {
    if rows.is_empty() {
        return "no worktrees of meta-agent's in this repository\n".to_owned();
    }
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            [
                row.session.clone(),
                row.branch.clone().unwrap_or_else(|| "-".into()),
                state_word(row),
                row.age.map_or_else(|| "-".into(), age),
                row.path.display().to_string(),
            ]
        })
        .collect();
    let header = ["SESSION", "BRANCH", "STATE", "AGE", "WORKTREE"].map(str::to_owned);
    let widths: Vec<usize> = (0..4)
        .map(|column| {
            std::iter::once(&header)
                .chain(&cells)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&cells) {
        for (column, width) in widths.iter().enumerate() {
            let _ = write!(out, "{:<width$}  ", row[column]);
        }
        let _ = writeln!(out, "{}", row[4]);
    }
    out
}

/// `meta-agent worktrees list --json`: one object per worktree.
pub fn worktrees_json(rows: &[WorktreeRow]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            serde_json::json!({
                "session": row.session,
                "branch": row.branch,
                "state": state_word(row),
                "in_use": row.view == SessionView::InUse,
                "age_seconds": row.age.map(|age| age.as_secs()),
                "path": row.path.display().to_string(),
                "present": row.present,
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

/// Why `prune` removed a worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pruned {
    /// Its session ended (the outcome, or a dry run).
    Ended { outcome: RunOutcome, dry_run: bool },
    /// Its directory was gone: git's record of it is forgotten.
    DirectoryGone,
    /// No session record names it.
    NoSession,
}

/// `meta-agent worktrees prune`: what it removed and what it kept, and why.
pub fn prune_report(removed: &[(WorktreeRow, Pruned)], kept: &[WorktreeRow]) -> String {
    let mut out = match removed.len() {
        0 => "nothing to prune\n".to_owned(),
        count => format!("removed {count} worktree{}:\n", plural(count as u64)),
    };
    for (row, why) in removed {
        let why = match why {
            Pruned::Ended { dry_run: true, .. } => "its dry run ended".to_owned(),
            Pruned::Ended { outcome, .. } => format!("its session ended ({})", outcome.as_str()),
            Pruned::DirectoryGone => "its directory was gone; git's record forgotten".to_owned(),
            Pruned::NoSession => "no session record names it".to_owned(),
        };
        let _ = writeln!(out, "  {}: {why}\n    {}", row.session, row.path.display());
    }
    if !kept.is_empty() {
        let _ = writeln!(out, "kept {}:", kept.len());
    }
    for row in kept {
        let why = match row.view {
            SessionView::InUse => "in use by a running meta-agent".to_owned(),
            SessionView::Waiting { .. } | SessionView::Ended { .. } | SessionView::Unknown => {
                format!(
                    "{}: `meta-agent resume {}` continues there",
                    state_word(row),
                    row.session
                )
            }
        };
        let _ = writeln!(out, "  {}: {why}\n    {}", row.session, row.path.display());
    }
    out
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(count: usize) -> Vec<String> {
        (0..count).map(|n| format!("src/file{n}.py")).collect()
    }

    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";
    const SNAP: &str = "fedcba9876543210fedcba9876543210fedcba98";

    #[test]
    fn the_start_lines_name_the_paths_in_a_bounded_list() {
        let three = paths(3);
        let many = paths(14);
        let text = [
            start_line(Start::Snapshot {
                head: HEAD,
                snapshot: SNAP,
                paths: &three,
            }),
            start_line(Start::Snapshot {
                head: HEAD,
                snapshot: SNAP,
                paths: &many[..1],
            }),
            start_line(Start::FromHead {
                head: HEAD,
                paths: &many,
            }),
        ]
        .join("\n");
        insta::assert_snapshot!("start_lines", text);
    }

    #[test]
    fn the_snapshot_message_labels_the_changes_as_the_users() {
        let text = snapshot_message(SnapshotMessage {
            session: "1a2b3c4d5e-7f",
            head: HEAD,
            branch: Some("main"),
            paths: &paths(52),
        });
        let trailers = meta_agent_protocol::trailer::commit_message_trailers(&text);
        assert_eq!(
            trailers,
            [
                ("Meta-Agent-Snapshot".to_owned(), "user-changes".to_owned()),
                (
                    "Meta-Agent-Snapshot-Of".to_owned(),
                    "1a2b3c4d5e-7f".to_owned()
                )
            ],
            "no Meta-Agent-Session trailer: the snapshot is never taken for the bot's commit"
        );
        insta::assert_snapshot!("snapshot_message", text);
    }

    #[test]
    fn whose_changes_are_whose_in_the_trailers_and_the_summary() {
        let snapshot = UserSnapshot {
            commit: SNAP.into(),
            head: HEAD.into(),
            paths: vec!["calc.py".into(), "test_extra.py".into()],
        };
        let bot = vec!["calc.py".to_owned()];
        assert_eq!(changes_trailers(None, &bot), "");
        assert_eq!(changes_lines(None, &bot), "");
        let text = format!(
            "{}\n{}\n{}",
            changes_trailers(Some(&snapshot), &bot),
            changes_lines(Some(&snapshot), &bot),
            changes_lines(Some(&snapshot), &[])
        );
        insta::assert_snapshot!("changes_apart", text);
    }

    fn row(session: &str, view: SessionView, present: bool) -> WorktreeRow {
        WorktreeRow {
            session: session.into(),
            branch: Some(format!("meta-agent/fix-{session}")),
            view,
            age: Some(Duration::from_secs(7300)),
            path: PathBuf::from("/home/ada/.local/state/meta-agent/worktrees/calc-0123456789ab")
                .join(session),
            present,
        }
    }

    fn rows() -> Vec<WorktreeRow> {
        vec![
            row("19c2b0a1f3d-1a2b", SessionView::InUse, true),
            row(
                "19c2b0a1f3e-77",
                SessionView::Ended {
                    outcome: RunOutcome::Escalated,
                    dry_run: false,
                },
                true,
            ),
            WorktreeRow {
                branch: None,
                age: Some(Duration::from_secs(42)),
                ..row(
                    "19c2b0a1f3f-3",
                    SessionView::Ended {
                        outcome: RunOutcome::Committed,
                        dry_run: true,
                    },
                    true,
                )
            },
            row(
                "19c2b0a1f40-9",
                SessionView::Waiting {
                    phase: LoopPhase::Acting,
                },
                false,
            ),
            WorktreeRow {
                branch: None,
                age: None,
                ..row("old-session", SessionView::Unknown, true)
            },
        ]
    }

    #[test]
    fn the_list_shows_session_branch_state_age_and_place() {
        let text = format!(
            "{}\n{}\n{:#}",
            worktrees_table(&rows()),
            worktrees_table(&[]),
            worktrees_json(&rows()[..2])
        );
        insta::assert_snapshot!("worktrees_list", text);
    }

    #[test]
    fn prune_says_what_it_removed_and_what_it_kept() {
        let rows = rows();
        let removed = vec![
            (
                rows[1].clone(),
                Pruned::Ended {
                    outcome: RunOutcome::Escalated,
                    dry_run: false,
                },
            ),
            (rows[3].clone(), Pruned::DirectoryGone),
            (rows[4].clone(), Pruned::NoSession),
        ];
        let kept = vec![rows[0].clone()];
        let text = format!(
            "{}\n{}",
            prune_report(&removed, &kept),
            prune_report(&[], &[])
        );
        insta::assert_snapshot!("worktrees_prune", text);
    }

    #[test]
    fn a_kept_worktree_is_named_under_the_report() {
        let path = Path::new("/home/ada/.local/state/meta-agent/worktrees/calc-0123456789ab/s");
        insta::assert_snapshot!(
            "kept_lines",
            format!("{}{}", kept_line(path, false), kept_line(path, true))
        );
    }

    #[test]
    fn ages_read_in_their_largest_unit() {
        let ages: Vec<String> = [0, 59, 60, 3599, 3600, 86_399, 86_400, 200_000]
            .into_iter()
            .map(|secs| age(Duration::from_secs(secs)))
            .collect();
        assert_eq!(ages, ["0s", "59s", "1m", "59m", "1h", "23h", "1d", "2d"]);
    }
}
