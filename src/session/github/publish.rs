//! Publishing a run: the push (never forced, and only what the check before every push allows:
//! [`push::verify`]), the pull request opened or reused into the branch the plan names, the
//! status comment, the job summary, annotations and outputs. A fork's pull request is published
//! by [`super::offer`] instead: nothing is pushed.

use super::*;
use crate::github::api::PullRequest;

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
        let base = self.push_plan()?.pull_into.clone();
        let mut published = report.state.clone();
        let pushed = !published.dry_run
            && matches!(
                published.outcome,
                Some(RunOutcome::Committed)
                    | Some(RunOutcome::Escalated)
                    | Some(RunOutcome::Interrupted)
            );
        if pushed {
            // Recorded before the push: a kill from here on is published again, not re-run.
            self.post_status(
                status,
                &View::Working {
                    trigger: format!("{} (publishing)", self.trigger.describe()),
                },
                Some(&SessionRecord::of(&published)),
            )
            .await?;
            passed(prepared, "status", "publishing", "posted");
            published.branch = self.push_branch(prepared, repo, &published).await?;
            passed(prepared, "push", &published.branch, "pushed");
        }
        let state = &published;
        let record = SessionRecord::of(state);
        let outcome = state.outcome.map_or("failed", RunOutcome::as_str);
        let summary_text = summary::markdown_result(state);
        let mut pull_url = None;
        let view = match state.outcome {
            Some(RunOutcome::Committed) if state.dry_run => View::DryRun {
                summary: summary_text,
            },
            Some(RunOutcome::Committed) => {
                let pull = self
                    .open_or_reuse_pull(state, &base, report.commit_message.as_deref())
                    .await
                    .map_err(|err| SessionError::Internal(err.to_string()))?;
                pull_url = Some(pull.clone());
                passed(prepared, "pull_request", &pull, "open");
                View::Committed {
                    pull_url: pull,
                    summary: summary_text,
                }
            }
            Some(RunOutcome::Escalated) => View::Escalated {
                report: report.escalation.clone().unwrap_or(summary_text),
                branch: state.branch.clone(),
            },
            Some(RunOutcome::Interrupted) => View::Interrupted {
                why: state
                    .interrupted
                    .clone()
                    .unwrap_or_else(|| "interrupted".into()),
                branch: state.branch.clone(),
                refused: report.refused_wip.clone(),
            },
            Some(RunOutcome::NothingToDo) => View::NothingToDo {
                summary: summary_text,
            },
            Some(RunOutcome::Failed) | None => View::Failed {
                reason: summary_text,
            },
        };
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
        let mut stdout = format!(
            "::group::meta-agent report\n{}\n::endgroup::\n",
            done.stdout
        );
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

    /// The check before every push ([`push::verify`]), then the push of exactly what it allowed.
    async fn push_checked(
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
fn passed(prepared: &Prepared, operation: &str, target: &str, result: &str) {
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
        .is_ok_and(|message| crate::engine::once::carries_session(&message, &state.session))
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
