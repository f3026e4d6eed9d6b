//! What a run teaches hindsight at its end: the outcome of every resolution tried, the novel fix
//! of a committed run (code only, never a file holding a secret), the escalation of one that
//! gave up; written once into the repository's store and journaled for the shared memory.

use super::*;

/// Opens the repository's store for writing (end of a real run).
pub(super) fn writable(view: &HindsightView) -> Result<Store, HindsightStepError> {
    let catalog = if view.catalog {
        Catalog::bundled()?
    } else {
        Catalog::default()
    };
    Store::open(StoreOptions {
        dir: Some(view.dir.clone()),
        anchor: Some(view.anchor.clone()),
        catalog,
        redactor: view.redactor.clone(),
        ..StoreOptions::default()
    })
    .map_err(HindsightStepError::from)
}

/// Every signature seen in the run, from its observations.
pub(super) fn seen(state: &LoopState) -> Vec<Signature> {
    let mut all: BTreeMap<String, Signature> = BTreeMap::new();
    for record in state.history.iter().flat_map(|step| step.signatures.iter()) {
        all.insert(record.id.clone(), signature_of(record));
    }
    all.into_values().collect()
}

/// At a commit: occurrences, the outcomes of applied resolutions, and the run's change captured
/// as a patch for every signature it cured that no resolution cured. Dry runs record nothing.
pub fn record_success<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
) -> Result<(), HindsightStepError> {
    if state.dry_run {
        return Ok(());
    }
    let mut store = writable(ctx.view)?;
    let now = now();
    let all = seen(state);
    store.record_seen(&all, now)?;
    learn_seen(ctx.view, state, &all, now);
    record_outcomes(&mut store, ctx.view, state, now)?;
    let cured_by_resolution: BTreeSet<&str> = state
        .history
        .iter()
        .flat_map(|s| s.resolutions.iter())
        .filter(|r| r.cured == Some(true))
        .map(|r| r.signature.as_str())
        .collect();
    let novel: Vec<&Signature> = all
        .iter()
        .filter(|s| !cured_by_resolution.contains(s.id.as_str()))
        .collect();
    let code_diff = code_only(&state.worktree_diff, &ctx.view.dir, &ctx.repo.workdir());
    if novel.is_empty() || code_diff.is_empty() {
        return Ok(());
    }
    let secrets = ctx.view.redactor.find_secrets(&code_diff);
    if !secrets.is_empty() {
        let paths = paths_holding(&code_diff, &secrets);
        tracing::warn!(
            "hindsight: the run's change holds a secret (in {}); it is not learned as a patch",
            paths.join(", ")
        );
        return Ok(());
    }
    let files = state
        .history
        .iter()
        .flat_map(|s| s.files_changed.iter().cloned())
        .filter(|f| !f.starts_with(".meta-agent/"))
        .collect();
    let patch = PatchFix {
        diff: code_diff,
        files,
        source: Some(format!("meta-agent session {}", state.session)),
    };
    for signature in novel {
        store.capture_patch(signature, patch.clone(), now)?;
        let patch = patch.clone();
        ctx.view
            .learn(state, signature, Change::Patch { patch }, now);
    }
    Ok(())
}

pub(super) fn learn_seen(
    view: &HindsightView,
    state: &LoopState,
    all: &[Signature],
    now: Timestamp,
) {
    for signature in all {
        view.learn(state, signature, Change::Seen, now);
    }
}

pub(super) fn record_outcomes(
    store: &mut Store,
    view: &HindsightView,
    state: &LoopState,
    now: Timestamp,
) -> Result<(), HindsightStepError> {
    for tried in state.history.iter().flat_map(|s| s.resolutions.iter()) {
        let Some(cured) = tried.cured else {
            continue;
        };
        let signature = store.get(&tried.signature).map(Entry::signature);
        let known = signature
            .as_ref()
            .and_then(|s| view.known_fix(s, &tried.resolution, now));
        match (signature, known) {
            (Some(signature), Some(fix)) => {
                store.record_fix_outcome(&signature, fix.clone(), cured, now)?;
                view.learn(state, &signature, Change::Outcome { fix, cured }, now);
            }
            _ => store.record_outcome(&tried.signature, &tried.resolution, cured, now)?,
        }
    }
    Ok(())
}

/// The files of `diff` (named by their `diff --git` headers) where `secrets` were found, sorted,
/// once each.
pub(super) fn paths_holding(diff: &str, secrets: &[meta_agent_redact::SecretMatch]) -> Vec<String> {
    const HEADER: &str = "diff --git a/";
    let mut paths: Vec<String> = secrets
        .iter()
        .filter_map(|found| {
            let before = diff.get(..found.range.start)?;
            let rest = &before[before.rfind(HEADER)? + HEADER.len()..];
            rest.split(" b/").next().map(str::to_owned)
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The run's diff without the store's own files.
pub(super) fn code_only(diff: &str, store_dir: &Path, workdir: &Path) -> String {
    let prefix = store_dir
        .strip_prefix(workdir)
        .unwrap_or(store_dir)
        .display()
        .to_string();
    diff.split_inclusive('\n')
        .fold((String::new(), true), |(mut out, keep), line| {
            let keep = if let Some(rest) = line.strip_prefix("diff --git a/") {
                !rest.starts_with(&prefix)
            } else {
                keep
            };
            if keep {
                out.push_str(line);
            }
            (out, keep)
        })
        .0
}

/// At an escalation: occurrences, outcomes, and the remaining signatures marked unresolved with
/// the escalation context. Dry runs record nothing.
pub fn record_escalation<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
    reason: &str,
) -> Result<(), HindsightStepError> {
    if state.dry_run {
        return Ok(());
    }
    let mut store = writable(ctx.view)?;
    let now = now();
    let all = seen(state);
    store.record_seen(&all, now)?;
    learn_seen(ctx.view, state, &all, now);
    record_outcomes(&mut store, ctx.view, state, now)?;
    let remaining: Vec<Signature> = state.signatures.iter().map(signature_of).collect();
    let tags = state
        .signatures
        .iter()
        .map(|s| format!("gate:{}", s.gate))
        .collect();
    let context = EscalationContext {
        reason: reason.to_owned(),
        run: Some(format!("session {}", state.session)),
        branch: Some(state.branch.clone()),
        summary: Some(format!(
            "{} iteration(s); task: {}",
            state.iteration, state.task.title
        )),
        tags,
        at: None,
    };
    store.record_unresolved(&remaining, &context, now)?;
    for signature in &remaining {
        let context = context.clone();
        ctx.view
            .learn(state, signature, Change::Unresolved { context }, now);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_named_by_the_file_that_holds_it() {
        let diff = "diff --git a/a.py b/a.py\n+x = 1\ndiff --git a/keys.py b/keys.py\n+T = \
                    'ghp_abcdefghijklmnopqrstuvwxyz0123456789'\n+U = \
                    'ghp_0123456789abcdefghijklmnopqrstuvwxyz'\n";
        let found = meta_agent_redact::Redactor::default().find_secrets(diff);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(paths_holding(diff, &found), ["keys.py"]);
    }
}
