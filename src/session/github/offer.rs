//! Publishing for a fork's pull request: the verified fix is offered, never pushed. The patch
//! (the verified commit against the pull request's head, the bot's own records left out) is
//! written as `fix.patch` to the run's files, shown fenced in the status comment, and, where its
//! changes are small and lie on the pull request's own lines, posted as suggestions in a review
//! the author can commit from. No branch leaves the runner and no pull request is opened.

use super::*;
use crate::github::api::{NewReview, NewReviewComment};
use crate::github::provenance::{PatchOffer, PatchOnly};
use crate::github::suggest::{self, Commentable};
use crate::render::review;
use crate::render::status::{NoPatch, PatchOffered, Suggested};
use crate::render::step;
use crate::render::step::StepNote;

/// The file the fix is written to, in the run's files.
pub const FIX_PATCH: &str = "fix.patch";

/// A run to publish as an offered patch.
pub(super) struct Offered<'a> {
    pub(super) prepared: &'a Prepared,
    pub(super) repo: &'a Git2Repository,
    pub(super) report: &'a RunReport,
    pub(super) offer: &'a PatchOffer,
}

impl Step<'_> {
    /// Offers the run's verified fix (or says why there is none) in the status comment, the
    /// review and the run's files; pushes nothing.
    pub(super) async fn offer_patch(
        &self,
        input: Offered<'_>,
        status: &mut Option<StatusComment>,
        done: Done,
    ) -> Result<Done, SessionError> {
        let state = &input.report.state;
        let summary_text = summary::markdown_result(state);
        let view = match state.outcome {
            Some(RunOutcome::Committed) if state.dry_run => View::DryRun {
                summary: summary_text,
            },
            Some(RunOutcome::Committed) => self.offered_view(&input, summary_text).await?,
            Some(RunOutcome::Escalated) => View::PatchNotOffered {
                why: NoPatch::Escalated,
                report: input.report.escalation().unwrap_or(summary_text),
            },
            Some(RunOutcome::Interrupted) => View::PatchNotOffered {
                why: NoPatch::Stopped {
                    interrupted: state.interrupted.clone(),
                },
                report: summary_text,
            },
            Some(RunOutcome::NothingToDo) => View::NothingToDo {
                summary: summary_text,
            },
            Some(RunOutcome::Failed) | None => View::Failed {
                reason: summary_text,
            },
        };
        let record = SessionRecord::of(state);
        self.post_status(status, &view, Some(&record)).await?;
        let outcome = state.outcome.map_or("failed", RunOutcome::as_str);
        let isolation = crate::exec::detect::detect().describe();
        let summary_input = SummaryInput {
            trigger: &self.trigger.describe(),
            pull_url: None,
            isolation: &isolation,
            note: Some(step::note(StepNote::PatchOffered)),
        };
        let mut outputs = super::publish::outputs(state, None, outcome);
        for (name, value) in &mut outputs {
            if *name == "branch" {
                value.clear();
            }
        }
        write_step_files(
            self.actions,
            &self.outbound(&summary::job_summary(Some(state), &summary_input)),
            &outputs,
        )?;
        Ok(Done {
            stdout: summary::report_group(&done.stdout),
            outcome: done.outcome,
        })
    }

    /// The verified fix written out, suggested in a review, and described for the comment.
    async fn offered_view(
        &self,
        input: &Offered<'_>,
        summary_text: String,
    ) -> Result<View, SessionError> {
        let patch = self.fix_patch(input)?;
        self.write_fix_patch(input, &patch)?;
        let suggestions = self.suggest(input.offer, &patch).await;
        let shown = (self.outbound(&patch) == patch).then_some(patch);
        let head_repo = match &input.offer.why {
            PatchOnly::Fork { head_repo } => head_repo.clone(),
            PatchOnly::DeletedFork => "a deleted fork".to_owned(),
        };
        Ok(View::PatchOffered(PatchOffered {
            head_repo,
            patch: shown,
            suggestions,
            summary: summary_text,
        }))
    }

    /// The verified commit against the pull request's head, without the bot's own records,
    /// redacted like everything that leaves.
    fn fix_patch(&self, input: &Offered<'_>) -> Result<String, SessionError> {
        let state = &input.report.state;
        if state.base_commit != input.offer.head_sha {
            return Err(SessionError::Internal(format!(
                "the work started from {}, not the pull request's head {}",
                super::origin::short(&state.base_commit),
                super::origin::short(&input.offer.head_sha)
            )));
        }
        let commit = match &input.report.commit {
            Some(commit) => commit.clone(),
            None => input.repo.head().map_err(internal)?.commit,
        };
        let diff = input
            .repo
            .diff_between(&state.base_commit, &commit)
            .map_err(internal)?;
        let store = input.prepared.config.hindsight.path.to_string_lossy();
        let store = format!("{}/", store.trim_end_matches('/'));
        let without_records = crate::git::unified::without_files(&diff, |path| {
            !store.starts_with('/') && path.starts_with(&store)
        });
        Ok(self.redactor.redact_text(&without_records).into_owned())
    }

    /// `fix.patch` in the session's directory and where the Action uploads the run's files.
    fn write_fix_patch(&self, input: &Offered<'_>, patch: &str) -> Result<(), SessionError> {
        let sessions = crate::engine::state::SessionStore::for_git_dir(&input.repo.git_dir());
        let mut places = vec![sessions.session_dir(&input.report.state.session)];
        places.extend(self.args.out.clone());
        for dir in places {
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(dir.join(FIX_PATCH), patch))
                .map_err(|err| SessionError::Internal(format!("{}: {err}", dir.display())))?;
        }
        Ok(())
    }

    /// Posts the fix's small changes on the pull request's own lines as suggestions in one
    /// review (once: a review of the same fix is found again by its marker). A failure is
    /// logged: the patch in the comment and the run's files still offers the fix.
    async fn suggest(&self, offer: &PatchOffer, patch: &str) -> Option<Suggested> {
        if self.args.dry_run {
            return None;
        }
        let repo = &self.actions.repository;
        let files = match self.api.pull_files(repo, offer.pull).await {
            Ok(files) => files,
            Err(err) => {
                tracing::warn!("reading the pull request's files for suggestions: {err}");
                return None;
            }
        };
        let commentable: Vec<Commentable> = files
            .iter()
            .filter_map(|file| {
                let hunks = file.patch.as_deref()?;
                Some(Commentable::from_patch(&file.filename, hunks))
            })
            .collect();
        let comments: Vec<NewReviewComment> = suggest::suggestions(patch, &commentable)
            .into_iter()
            .filter_map(|found| self.suggestion(found))
            .collect();
        if comments.is_empty() {
            return None;
        }
        let suggested = Suggested {
            count: comments.len(),
            of: suggest::change_count(patch),
        };
        let hash = crate::hindsight::store::entry::stable_hash(patch);
        match self.review_exists(offer.pull, &hash).await {
            Ok(true) => return Some(suggested),
            Ok(false) => {}
            Err(err) => {
                tracing::warn!("reading the pull request's reviews: {err}");
                return None;
            }
        }
        let review = NewReview {
            commit_id: offer.head_sha.clone(),
            body: self.outbound(&review::review_body(suggested.count, suggested.of, &hash)),
            event: "COMMENT",
            comments,
        };
        self.keep_token_fresh().await;
        match self.api.create_review(repo, offer.pull, &review).await {
            Ok(_) => Some(suggested),
            Err(err) => {
                tracing::warn!("posting the suggestions: {err}");
                None
            }
        }
    }

    /// A suggestion's review comment, unless its text would not leave unchanged.
    fn suggestion(&self, found: suggest::Suggestion) -> Option<NewReviewComment> {
        let body = review::suggestion_comment(&found.replacement);
        if self.outbound(&body) != body {
            return None;
        }
        let several = found.start < found.end;
        Some(NewReviewComment {
            path: found.path,
            body,
            line: found.end,
            side: "RIGHT",
            start_line: several.then_some(found.start),
            start_side: several.then_some("RIGHT"),
        })
    }

    /// Whether the bot already reviewed the pull request with this fix.
    async fn review_exists(
        &self,
        pull: u64,
        hash: &str,
    ) -> Result<bool, crate::github::GitHubError> {
        let marker = review::review_marker(hash);
        let reviews = self.api.reviews(&self.actions.repository, pull).await?;
        Ok(reviews.iter().any(|existing| {
            existing
                .user
                .login
                .eq_ignore_ascii_case(&self.args.bot_login)
                && existing.body.starts_with(&marker)
        }))
    }
}
