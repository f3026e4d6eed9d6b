//! Publishing a run: the push (never forced, and only what the check before every push allows:
//! [`push::verify`]), the pull request opened or reused into the branch the plan names (or, under
//! a plan that pushes onto a pull request's own branch, the verified commit pushed there by
//! [`super::head`]), the status comment, the job summary, annotations and outputs. A fork's pull
//! request is published by [`super::offer`] instead: nothing is pushed.

use super::head::HeadPush;
use super::*;
use crate::github::api::PullRequest;
use crate::github::provenance::PushKind;
use crate::render::status::{HeadMoved, PushedToHead};
use crate::render::step::Doing;

impl Step<'_> {
    /// Pushes, opens or reuses the pull request, and writes the status comment, the job
    /// summary and the outputs, all from the run's report.
    pub(super) async fn publish(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        status: &mut Option<StatusComment>,
        report: RunReport,
        done: Done,
    ) -> Result<Done, SessionError> {
        if let Some(offer) = self.patch_offer() {
            let input = super::offer::Offered {
                prepared,
                repo,
                report: &report,
                offer,
            };
            return self.offer_patch(input, status, done).await;
        }
        if super::hold::held_at_push(&report.state) {
            return self.hold(prepared, repo, status, &report.state, done).await;
        }
        let plan = self.push_plan()?.clone();
        let mut published = report.state.clone();
        let committed = published.outcome == Some(RunOutcome::Committed) && !published.dry_run;
        let onto_head = committed && matches!(plan.kind, PushKind::HeadBranch { .. });
        let pushed = !published.dry_run
            && matches!(
                published.outcome,
                Some(RunOutcome::Committed)
                    | Some(RunOutcome::Escalated)
                    | Some(RunOutcome::Interrupted)
            );
        let mut head_push = None;
        if pushed {
            // Recorded before the push: a kill from here on is published again, not re-run.
            self.post_status(
                status,
                &View::Working {
                    trigger: self.trigger.describe_doing(Doing::Publishing),
                },
                Some(&SessionRecord::of(&published)),
            )
            .await?;
            passed(prepared, "status", "publishing", "posted");
            if onto_head {
                head_push = Some(self.push_onto_head(prepared, repo, &mut published).await?);
            } else {
                published.branch = self.push_branch(prepared, repo, &published).await?;
            }
            passed(prepared, "push", &published.branch, "pushed");
        }
        let state = &published;
        let record = SessionRecord::of(state);
        let (view, pull_url) = self.result_view(&report, state, &plan, head_push).await?;
        if let (View::Committed { .. }, Some(pull)) = (&view, &pull_url) {
            passed(prepared, "pull_request", pull, "open");
        }
        let outcome = outcome_word(state, &view);
        self.post_status(status, &view, Some(&record)).await?;
        passed(prepared, "status", outcome, "posted");
        let isolation = crate::exec::detect::detect().describe();
        let input = SummaryInput {
            trigger: &self.trigger.describe(),
            pull_url: pull_url.as_deref(),
            isolation: &isolation,
            note: None,
        };
        write_step_files(
            self.actions,
            &self.outbound(&summary::job_summary(Some(state), &input)),
            &outputs(state, pull_url.as_deref(), outcome),
        )?;
        let annotations: Vec<String> = summary::annotations(state)
            .iter()
            .map(|line| self.redactor.redact_text(line).into_owned())
            .collect();
        let mut stdout = summary::report_group(&done.stdout);
        for line in annotations {
            stdout.push_str(&line);
            stdout.push('\n');
        }
        tracing::info!(
            "step finished after {:.1} s",
            self.started.elapsed().as_secs_f64()
        );
        Ok(Done {
            stdout,
            outcome: done.outcome,
        })
    }

    /// Pushes the session's branch; when the remote branch of that name holds other history (a
    /// retry that started over), publishes it under a name of its own instead of forcing.
    /// Returns the remote branch's name.
    pub(super) async fn push_branch(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        state: &LoopState,
    ) -> Result<String, SessionError> {
        self.keep_token_fresh().await;
        let branch = &state.branch;
        let tip = repo
            .commit_of(&format!("refs/heads/{branch}"))
            .map_err(internal)?;
        match self.push_checked(prepared, repo, state, &tip, branch).await {
            Ok(()) => Ok(branch.clone()),
            Err(err) if push::was_rejected(&err) => {
                let suffix = state.session.rsplit('-').next().unwrap_or(&state.session);
                let target = format!("{branch}-{suffix}");
                tracing::warn!("{err}; publishing as `{target}` instead (never forced)");
                self.push_checked(prepared, repo, state, &tip, &target)
                    .await
                    .map_err(internal)?;
                Ok(target)
            }
            Err(err) => Err(internal(err)),
        }
    }

    /// The status comment's view of a published run, and the pull request to name (the one
    /// opened or reused; the pull request itself when its own branch got the fix).
    async fn result_view(
        &self,
        report: &RunReport,
        state: &LoopState,
        plan: &crate::github::provenance::PushPlan,
        head_push: Option<HeadPush>,
    ) -> Result<(View, Option<String>), SessionError> {
        let summary_text = summary::markdown_result(state);
        let view = match state.outcome {
            Some(RunOutcome::Committed) if state.dry_run => View::DryRun {
                summary: summary_text,
            },
            Some(RunOutcome::Committed) => {
                return self
                    .committed_view(report, state, plan, head_push, summary_text)
                    .await;
            }
            Some(RunOutcome::Escalated) => View::Escalated {
                report: report.escalation().unwrap_or(summary_text),
                branch: state.branch.clone(),
            },
            Some(RunOutcome::Interrupted) if state.paused.is_some() => View::Paused {
                why: state.interrupted.clone().unwrap_or_default(),
                branch: state.branch.clone(),
                at: state
                    .paused
                    .as_ref()
                    .map_or(crate::protocol::pause::Location::AfterPlan, |hit| hit.at),
                plan: crate::render::pause::plan_and_progress(state),
                refused: report.refused_wip(),
            },
            Some(RunOutcome::Interrupted) => View::Interrupted {
                why: state
                    .interrupted
                    .clone()
                    .unwrap_or_else(|| "interrupted".into()),
                branch: state.branch.clone(),
                refused: report.refused_wip(),
            },
            Some(RunOutcome::NothingToDo) if state.task.source.is_failing_check() => {
                View::NotReproduced(self.not_reproduced(state))
            }
            Some(RunOutcome::NothingToDo) => View::NothingToDo {
                summary: summary_text,
            },
            Some(RunOutcome::Failed) | None => View::Failed {
                reason: summary_text,
            },
        };
        Ok((view, None))
    }

    /// A committed run's view: pushed onto the pull request's branch, not pushed because it
    /// moved, or a pull request opened or reused (saying why not onto the branch when the
    /// policy asked for that).
    async fn committed_view(
        &self,
        report: &RunReport,
        state: &LoopState,
        plan: &crate::github::provenance::PushPlan,
        head_push: Option<HeadPush>,
        summary_text: String,
    ) -> Result<(View, Option<String>), SessionError> {
        let number = plan.kind.pull();
        match head_push {
            Some(HeadPush::Pushed { commit }) => {
                let pull_url = number.map(|number| self.actions.pull_url(number));
                let view = View::PushedToHead(PushedToHead {
                    branch: state.branch.clone(),
                    commit,
                    from: state.base_commit.clone(),
                    summary: summary_text,
                });
                return Ok((view, pull_url));
            }
            Some(HeadPush::Moved { refusal, kept_on }) => {
                let view = View::HeadMoved(HeadMoved {
                    branch: plan.pull_into.clone(),
                    refusal,
                    kept_on,
                    summary: summary_text,
                });
                return Ok((view, None));
            }
            None => {}
        }
        let pull = self
            .open_or_reuse_pull(state, &plan.pull_into, report.commit_message.as_deref())
            .await
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        let summary = match plan.kind {
            PushKind::Stacked {
                instead: Some(refusal),
                ..
            } => {
                let reason = crate::render::checks::head_refusal(refusal, &plan.pull_into);
                tracing::info!("not pushed onto the pull request's branch: {reason}");
                format!(
                    "{}{summary_text}",
                    crate::render::checks::stacked_instead(refusal, &plan.pull_into)
                )
            }
            PushKind::Stacked { instead: None, .. }
            | PushKind::DefaultBranch
            | PushKind::BotsOwnPull { .. }
            | PushKind::HeadBranch { .. } => summary_text,
        };
        Ok((
            View::Committed {
                pull_url: pull.clone(),
                summary,
            },
            Some(pull),
        ))
    }

    /// The check before every push ([`push::verify`]), then the push of exactly what it allowed.
    pub(super) async fn push_checked(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        state: &LoopState,
        tip: &str,
        target: &str,
    ) -> Result<(), push::PushError> {
        let remote = self.remote(prepared);
        let rules = self.branch_rules(repo);
        let refused = |detail: String| push::PushError::Unreadable {
            branch: target.to_owned(),
            detail,
        };
        let work = self.work().map_err(|err| refused(err.to_string()))?;
        let identity = crate::git::Identity::default();
        let verified = push::verify(push::VerifyInput {
            runner: &prepared.executor,
            remote: &remote,
            repo,
            rules: &rules,
            publish: &work.publish,
            tip,
            target,
            session: &state.session,
            bot_email: &identity.email,
        })
        .await?;
        push::push_verified(&prepared.executor, &remote, &verified, &rules).await
    }

    /// The open pull request of the session, its body refreshed, or a new one. The session's
    /// pull request is looked for by its branch and, when that lookup fails or finds nothing,
    /// by the session record in the bodies of the bot's open pull requests: nothing is created
    /// unless both lookups answered and neither found it. A create refused because one already
    /// exists (a race) finds it and refreshes its body too.
    pub(super) async fn open_or_reuse_pull(
        &self,
        state: &LoopState,
        base: &str,
        commit_message: Option<&str>,
    ) -> Result<String, crate::github::GitHubError> {
        self.keep_token_fresh().await;
        let repo = &self.actions.repository;
        let record = SessionRecord::of(state).encode();
        let visible = self.outbound(&crate::render::pull::pull_body(state, commit_message));
        let body = status::with_record(self.fitted(&visible, Some(&record)), Some(&record));
        if let Some(pull) = self.session_pull(state).await? {
            self.api.update_pull_body(repo, pull.number, &body).await?;
            return Ok(pull.html_url);
        }
        let title = self.redactor.redact_text(&state.task.title).into_owned();
        let new = NewPullRequest {
            title,
            body: body.clone(),
            head: state.branch.clone(),
            base: base.to_owned(),
            draft: false,
        };
        match self.api.create_pull(repo, &new).await {
            Ok(pull) => Ok(pull.html_url),
            Err(err) => match self.session_pull(state).await {
                Ok(Some(pull)) => {
                    tracing::info!("{err}; the session's pull request exists: refreshing its body");
                    self.api.update_pull_body(repo, pull.number, &body).await?;
                    Ok(pull.html_url)
                }
                _ => Err(err),
            },
        }
    }

    /// The session's open pull request: by its branch, else by the session record in the body
    /// of one of the bot's open pull requests (a branch published under another name, or a
    /// branch lookup that kept failing).
    async fn session_pull(
        &self,
        state: &LoopState,
    ) -> Result<Option<PullRequest>, crate::github::GitHubError> {
        let repo = &self.actions.repository;
        let by_branch = match self.api.open_pull_for(repo, &state.branch).await {
            Ok(Some(pull)) => return Ok(Some(pull)),
            Ok(None) => None,
            Err(err) => {
                tracing::warn!("{err}; looking for the session's pull request by its record");
                Some(err)
            }
        };
        let pulls = match self.api.open_pulls(repo).await {
            Ok(pulls) => pulls,
            Err(err) => return Err(by_branch.unwrap_or(err)),
        };
        Ok(pulls.into_iter().find(|pull| {
            pull.author.eq_ignore_ascii_case(&self.args.bot_login)
                && SessionRecord::decode(&pull.body)
                    .is_some_and(|record| record.session == state.session)
        }))
    }
}

/// A publishing step is done (logged; the kill-at-event test hook counts it).
pub(super) fn passed(prepared: &Prepared, operation: &str, target: &str, result: &str) {
    crate::session::sinks::published(
        &prepared.env.vars,
        &crate::protocol::event::Event::GitOperation {
            operation: operation.to_owned(),
            target: target.to_owned(),
            result: result.to_owned(),
        },
    );
}

/// Whether the remote's branch of the session holds its work: its head carries the session's
/// trailer (a push done before a kill is adopted, not made again).
pub(super) async fn on_remote(
    step: &Step<'_>,
    prepared: &Prepared,
    repo: &Git2Repository,
    state: &LoopState,
) -> bool {
    step.keep_token_fresh().await;
    let fetched = push::fetch_published(
        &prepared.executor,
        &step.remote(prepared),
        &state.branch,
        &step.branch_rules(repo),
    )
    .await;
    if let Err(err) = fetched {
        tracing::info!("the session's branch is not on the remote: {err}");
        return false;
    }
    repo.message(push::PUBLISHED_REF)
        .is_ok_and(|message| crate::protocol::trailer::carries_session(&message, &state.session))
}

/// The `outcome` output: the run's, but `not_reproduced` for a failure the gates did not show
/// and `branch_moved` for a verified fix the pull request's moved branch did not get.
fn outcome_word(state: &LoopState, view: &View) -> &'static str {
    match view {
        View::NotReproduced(_) => "not_reproduced",
        View::HeadMoved(_) => "branch_moved",
        View::Working { .. }
        | View::Progress { .. }
        | View::Interrupted { .. }
        | View::Paused { .. }
        | View::Held(_)
        | View::Committed { .. }
        | View::NothingToDo { .. }
        | View::Escalated { .. }
        | View::DryRun { .. }
        | View::Failed { .. }
        | View::Stopped { .. }
        | View::Status { .. }
        | View::PatchOffered(_)
        | View::PatchNotOffered { .. }
        | View::PushedToHead(_) => state.outcome.map_or("failed", RunOutcome::as_str),
    }
}

pub(super) fn outputs(
    state: &LoopState,
    pull_url: Option<&str>,
    outcome: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("outcome", outcome.to_owned()),
        ("pr-url", pull_url.unwrap_or_default().to_owned()),
        ("branch", state.branch.clone()),
        ("iterations", state.iterations_run().to_string()),
        ("session", state.session.clone()),
    ]
}
