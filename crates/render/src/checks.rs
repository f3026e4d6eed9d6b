//! What the status comment of a pull request says about a fix for its failing checks beyond
//! the common views: a failure the repository's gates do not reproduce (flaky, or the runner's
//! infrastructure), a fix pushed onto the pull request's own branch, a fix that could not be
//! pushed because the branch moved meanwhile (or git refused the push), and a fix proposed as a
//! stacked pull request although the policy asked for a push ([`HeadRefusal`]); and why the bot
//! leaves a pull request alone ([`Declined`]). Pure text from plain values.

use meta_agent_protocol::publish::{Declined, HeadRefusal};

/// A failed run that the gates do not reproduce on the same commit.
#[derive(Debug, Clone, PartialEq)]
pub struct NotReproduced {
    /// The failed run's page.
    pub run_url: String,
    pub workflow: String,
    /// The commit the gates ran on (the one that failed).
    pub commit: String,
    /// What the failed run showed (the digest of its failed jobs, Markdown).
    pub seen: String,
    /// The run's result here (gates, iterations).
    pub summary: String,
}

/// A verified fix pushed onto a pull request's own branch.
#[derive(Debug, Clone, PartialEq)]
pub struct PushedToHead {
    pub branch: String,
    /// The fix's commit.
    pub commit: String,
    /// The commit it was made on (the head the checks failed on).
    pub from: String,
    pub summary: String,
}

/// A verified fix not pushed because the pull request's branch moved.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadMoved {
    pub branch: String,
    /// Why the push was refused (the check's or git's words).
    pub refusal: String,
    /// The bot's branch the fix is kept on.
    pub kept_on: String,
    pub summary: String,
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The view of a failure that did not reproduce.
pub fn not_reproduced(view: &NotReproduced, phrase: &str) -> String {
    let run = if view.run_url.is_empty() {
        format!("The `{}` run", view.workflow)
    } else {
        format!("The [`{}` run]({})", view.workflow, view.run_url)
    };
    let mut out = format!(
        "### meta-agent: the failure did not reproduce\n\n{run} failed, but the repository's \
         gates pass on the same commit (`{}`) here, before anything was changed: the failure is \
         flaky, or it came from the runner's infrastructure (the network, a cancelled or \
         out-of-resources job), not from the code. Nothing was changed and no model was asked. \
         Re-run the failed jobs; reply `{phrase} fix` if it fails again.\n\n",
        short(&view.commit)
    );
    if !view.seen.trim().is_empty() {
        out.push_str(&format!(
            "<details><summary>What the failed run showed</summary>\n\n{}\n</details>\n\n",
            view.seen.trim()
        ));
    }
    out.push_str(&view.summary);
    out.push('\n');
    out
}

/// The view of a fix pushed onto the pull request's branch.
pub fn pushed_to_head(view: &PushedToHead) -> String {
    format!(
        "### meta-agent: fix pushed to `{branch}`\n\nThe repository's gates pass with the fix \
         (verified on a fresh checkout). It is pushed onto this pull request's branch \
         `{branch}` as commit `{commit}`, on top of `{from}` where the checks failed: a \
         fast-forward, nothing of yours rewritten. Pull before you push again.\n\n{summary}\n",
        branch = view.branch,
        commit = short(&view.commit),
        from = short(&view.from),
        summary = view.summary
    )
}

/// The view of a fix that could not be pushed because the branch moved.
pub fn head_moved(view: &HeadMoved, phrase: &str) -> String {
    format!(
        "### meta-agent: verified fix not pushed, `{branch}` moved\n\nA fix passed the \
         repository's gates (verified on a fresh checkout), but the push onto `{branch}` was \
         refused: {refusal}. Nothing was pushed onto it. The fix is kept \
          on `{kept}`; the next failing check of the new head, or `{phrase} fix`, \
         starts again from there.\n\n{summary}\n",
        branch = view.branch,
        refusal = view.refusal.trim_end_matches('.'),
        kept = view.kept_on,
        summary = view.summary
    )
}

/// The note on a stacked pull request proposed although the policy asked for a push onto the
/// pull request's branch `branch`; `refusal` says why that was not allowed.
pub fn stacked_instead(refusal: HeadRefusal, branch: &str) -> String {
    format!(
        "**Not pushed onto the pull request's branch** (`pull-request-fix: push`): {}; the \
         fix is proposed as a stacked pull request instead.\n\n",
        head_refusal(refusal, branch)
    )
}

/// Why a fix goes to a stacked pull request instead of onto `branch`, for the log, the status
/// comment and the pull request.
pub fn head_refusal(refusal: HeadRefusal, branch: &str) -> String {
    match refusal {
        HeadRefusal::Protected => format!("`{branch}` is a protected branch"),
        HeadRefusal::DefaultBranch => format!("`{branch}` is the default branch"),
        HeadRefusal::NoMaintainerEdits => {
            format!("the author of `{branch}` does not allow maintainers' edits")
        }
    }
}

/// Why git refused a push onto a pull request's branch `branch` (it would not fast-forward).
pub fn not_fast_forward(branch: &str) -> String {
    format!(
        "git refused a push onto `{branch}` that would not fast-forward: the author pushed \
         meanwhile, and the bot never forces"
    )
}

/// Why the bot leaves a pull request alone, for the log and the job summary.
pub fn declined(declined: &Declined) -> String {
    match declined {
        Declined::Closed { pull } => {
            format!("pull request #{pull} is closed: there is nothing to fix on it")
        }
        Declined::Draft { pull } => format!(
            "pull request #{pull} is a draft: its failing checks are left to its author \
             (`pull-request-drafts: true` heals them too)"
        ),
        Declined::Excluded { pull, branch, glob } => format!(
            "pull request #{pull}'s branch `{branch}` matches `{glob}` of \
             `pull-request-exclude`: its failing checks are left alone"
        ),
        Declined::Fork { pull } => format!(
            "pull request #{pull} comes from a fork: its failing checks are never healed \
             (a maintainer's `/agent fix` offers a patch)"
        ),
        Declined::BotsOwn { pull } => format!(
            "pull request #{pull} is the bot's own: its failing checks are not healed again \
             (no self-healing loops)"
        ),
        Declined::HeadMoved { pull, run, head } => format!(
            "pull request #{pull}'s head moved since the failed run ({} → {}): the checks of \
             the new head decide",
            short(run),
            short(head)
        ),
        Declined::NoPullRequest { branch } => format!(
            "no open pull request of this repository has `{branch}` as its head: failed runs \
             of other branches than the default one are healed only for pull requests"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> String {
        "**Task:** Fix the failing `CI` checks of #8: Mean rounds down\n\n| Gate | Result |\n|---|---|\n| tests | ✅ pass |\n".into()
    }

    #[test]
    fn each_check_view_reads_as_a_person_reads_it() {
        insta::assert_snapshot!(
            "check_not_reproduced",
            not_reproduced(
                &NotReproduced {
                    run_url: "https://github.com/octo/calc/actions/runs/901".into(),
                    workflow: "CI".into(),
                    commit: "0123456789abcdef0123456789abcdef01234567".into(),
                    seen: "## What failed\n\n### Job `tests`\n- Network tests/test_calc.py:9: Connection reset by peer\n".into(),
                    summary: summary(),
                },
                "/agent"
            )
        );
        insta::assert_snapshot!(
            "check_pushed_to_head",
            pushed_to_head(&PushedToHead {
                branch: "feature/mean".into(),
                commit: "fedcba9876543210fedcba9876543210fedcba98".into(),
                from: "0123456789abcdef0123456789abcdef01234567".into(),
                summary: summary(),
            })
        );
        insta::assert_snapshot!(
            "check_head_moved",
            head_moved(
                &HeadMoved {
                    branch: "feature/mean".into(),
                    refusal: "`feature/mean` moved while the fix was made (from 0123456789ab to 89abcdef0123): the author pushed meanwhile, and the bot never forces".into(),
                    kept_on: "meta-agent/fix-the-failing-ci-checks-of-8".into(),
                    summary: summary(),
                },
                "/agent"
            )
        );
        insta::assert_snapshot!(
            "check_stacked_instead",
            stacked_instead(HeadRefusal::Protected, "feature/mean")
        );
    }

    #[test]
    fn why_a_pull_request_is_left_alone_or_not_pushed_onto() {
        let pull = 8;
        let leaves = [
            Declined::Closed { pull },
            Declined::Draft { pull },
            Declined::Excluded {
                pull,
                branch: "release/2.0".into(),
                glob: "release/*".into(),
            },
            Declined::Fork { pull },
            Declined::BotsOwn { pull },
            Declined::HeadMoved {
                pull,
                run: "0123456789abcdef0123456789abcdef01234567".into(),
                head: "89abcdef0123456789abcdef0123456789abcdef".into(),
            },
            Declined::NoPullRequest {
                branch: "feature/x".into(),
            },
        ];
        let refusals = [
            HeadRefusal::Protected,
            HeadRefusal::DefaultBranch,
            HeadRefusal::NoMaintainerEdits,
        ]
        .into_iter()
        .map(|refusal| head_refusal(refusal, "feature/mean"));
        let lines: Vec<String> = leaves
            .iter()
            .map(declined)
            .chain(refusals)
            .chain([not_fast_forward("feature/mean")])
            .collect();
        insta::assert_snapshot!("check_reasons", lines.join("\n"));
    }

    #[test]
    fn a_failure_without_a_run_link_or_digest_still_says_what_happened() {
        let text = not_reproduced(
            &NotReproduced {
                run_url: String::new(),
                workflow: "CI".into(),
                commit: "abc".into(),
                seen: " \n".into(),
                summary: String::new(),
            },
            "/agent",
        );
        assert!(text.contains("The `CI` run failed"), "{text}");
        assert!(!text.contains("<details>"), "{text}");
    }
}
