//! The Acting step: the plan carried out (a hindsight resolution, or the builder asked for a
//! change), the change's definitions read for the record, and the patch gate over what would be
//! committed (refused paths put back as HEAD has them).

use super::*;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// One Acting step; `Some` when the LLM provider refused for good and the run escalated.
    pub(super) async fn act(&self, state: &mut LoopState) -> Result<Option<Ending>, EngineError> {
        let started = Instant::now();
        let started_ms = now_ms();
        let plan = state.plan.clone().unwrap_or(Plan::Build);
        state.model_refusal = None;
        self.events.emit(&Event::PhaseStarted {
            phase: plan.phase(),
            iteration: state.iteration,
        });
        let acted = match &plan {
            Plan::Hindsight => {
                let applied = improve::apply_resolutions(self.hindsight_ctx(), state).await;
                Acted {
                    actions: applied.actions,
                    resolutions: applied.tried,
                    outcome: "hindsight resolutions applied".to_owned(),
                    ended: ActEnd::Finished,
                }
            }
            Plan::Build | Plan::AgentFix { .. } => match self.call_builder(state, &plan).await {
                Ok(done) => done,
                // The loop pauses and forgets this act (it is redone on resume).
                Err(BuildError::Paused) => return Ok(None),
                Err(error) if error.is_transient() => {
                    state.transient_error = Some(error.to_string());
                    self.transition(
                        state,
                        LoopPhase::Deciding,
                        "transient failure of the builder",
                    );
                    return Ok(None);
                }
                Err(error) if error.is_deadline() => {
                    self.guard().checked_change(state)?;
                    return self.time_spent(state).map(Some);
                }
                Err(error) if error.is_refusal() => {
                    self.guard().checked_change(state)?;
                    let reason = EscalationReason::ProviderRefused {
                        reason: error.to_string(),
                    };
                    return self.escalate(state, reason).map(Some);
                }
                Err(error) => return Err(EngineError::Builder(error)),
            },
        };
        let (diff, files) = self.guard().checked_change(state)?;
        let phase = plan.phase();
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
        self.events.emit(&Event::PhaseFinished {
            phase,
            iteration: state.iteration,
            duration_ms,
            outcome: acted.outcome.clone(),
            gates: Vec::new(),
        });
        let changed = self.changed_definitions(&diff);
        state.history.push(StepRecord {
            phase,
            iteration: state.iteration,
            started_unix_ms: started_ms,
            duration_ms,
            outcome: acted.outcome,
            actions: acted.actions,
            diff,
            files_changed: files,
            gates: Vec::new(),
            signatures: Vec::new(),
            resolutions: acted.resolutions,
            ended: acted.ended,
            changed,
        });
        state.transient_retries = 0;
        self.transition(state, LoopPhase::Observing, "run the gates");
        Ok(None)
    }

    /// Calls the builder; what it did, with no resolutions.
    pub(super) async fn call_builder(
        &self,
        state: &mut LoopState,
        plan: &Plan,
    ) -> Result<Acted, BuildError> {
        if !self.builder.available(state.builder_calls) {
            let why = if *plan == Plan::Build {
                "no builder is available (no LLM configured): the gates run on the code as it is"
            } else {
                "no builder is available for a fix"
            };
            return Ok(Acted {
                actions: vec![why.to_owned()],
                resolutions: Vec::new(),
                outcome: "skipped".into(),
                ended: ActEnd::Stopped,
            });
        }
        let request = ActRequest {
            task: &state.task,
            plan,
            iteration: state.iteration,
            call_index: state.builder_calls,
            repo_root: &self.repo.workdir(),
            context: self.failure_context(state),
            max_steps: self.config.loop_.max_agent_steps,
            progress: Progress::pausing(self.events, self.pauses),
            approved_plan: state.sub_plan.as_ref(),
        };
        self.pauses.load(&state.pauses);
        let report = self.builder.act(request).await?;
        state.pauses = self.pauses.counts();
        state.sub_plan = None;
        state.builder_calls += 1;
        state.usage.add(&report.usage);
        for path in &report.instructions {
            if !state.instructions.contains(path) {
                state.instructions.push(path.clone());
            }
        }
        state.review_missing.clear();
        state.model_refusal = report.refusal.clone();
        let ended = if report.gave_up.is_some() {
            ActEnd::Stopped
        } else {
            ActEnd::Finished
        };
        Ok(Acted {
            outcome: report.gave_up.unwrap_or(report.summary),
            actions: report.actions,
            resolutions: Vec::new(),
            ended,
        })
    }

    /// The definitions the worktree's change is in, per changed file.
    pub(super) fn changed_definitions(&self, diff: &str) -> Vec<ChangedFile> {
        if diff.is_empty() {
            return Vec::new();
        }
        let mut files = meta_agent_code::Sources::new(&self.repo.workdir());
        meta_agent_code::changed::changed_definitions(&mut files, diff)
            .into_iter()
            .map(|(path, definitions)| ChangedFile { path, definitions })
            .collect()
    }
}

/// The escalation reason for refused paths: the change itself, or what the run recorded with it.
pub(super) fn patch_refused(refusals: &[Refusal], recorded: bool) -> EscalationReason {
    EscalationReason::PatchRefused {
        recorded,
        refusals: refusals.to_vec(),
    }
}
