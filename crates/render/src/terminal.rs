//! What `meta-agent run` and `resume` print at the end (and write to `report.md`): the final
//! summary, in a dry run the diff, the gates, the commit message or the escalation report.

use crate::run_report::RunReport;

/// What a paused run says: why, where the work is, how to go on; and what the patch gate
/// refused of the work in progress, under its own heading (a pause is not an escalation).
fn paused(report: &RunReport, why: &str) -> String {
    let state = &report.state;
    let refused_note = report.refused_wip();
    let refused = refused_note.as_deref();
    let kept = match (&report.commit, state.dry_run, refused) {
        (_, true, _) => "nothing (a dry run commits nothing)".to_owned(),
        (Some(commit), false, _) => format!(
            "the work in progress, committed on `{}` ({})",
            state.branch,
            &commit[..commit.len().min(12)]
        ),
        (None, false, Some(_)) => format!(
            "`{}` as it was (the patch gate refused the work in progress, see below)",
            state.branch
        ),
        (None, false, None) => format!("`{}` as it was (nothing new to commit)", state.branch),
    };
    let mut out = match &state.paused {
        None => format!(
            "\n--- interrupted ---\nStopped: {why}, during {}.\nKept: {kept}; the session is saved.\n\
             `meta-agent resume {}` continues from there.\n",
            state.phase.as_str(),
            state.session
        ),
        Some(hit) => format!(
            "\n--- paused ---\nStopped: {why}.\nKept: {kept}; the session is saved.\n{}.\n\
             `meta-agent debug context {}` shows what the run holds here.\n",
            super::pause::how_to_continue(&state.session, hit.at),
            state.session
        ),
    };
    if let Some(note) = refused {
        out.push_str(&format!(
            "\n--- work in progress refused by the patch gate ---{note}"
        ));
    }
    out
}

/// The one line `-q` prints: the outcome and where the work is.
pub fn outcome_line(report: &RunReport) -> String {
    let state = &report.state;
    let outcome = state.outcome.map_or("unfinished", |o| o.as_str());
    match (&report.commit, state.dry_run) {
        (Some(commit), false) => format!(
            "{outcome}: {} ({})\n",
            state.branch,
            &commit[..commit.len().min(12)]
        ),
        (Some(_) | None, true) => format!("{outcome} (dry run)\n"),
        (None, false) => format!("{outcome}\n"),
    }
}

/// What a person reads at the end: summary, and in a dry run the diff; the gates; the commit
/// message or the escalation report.
pub fn render(report: &RunReport, verbose: bool) -> String {
    let mut out = super::outcome::final_summary(&report.state, verbose);
    if report.state.dry_run && !report.diff.is_empty() {
        out.push_str("\n--- diff (dry run: not committed) ---\n");
        out.push_str(&report.diff);
    }
    if let Some(gates) = &report.gates {
        out.push_str("\n--- gates ---\n");
        out.push_str(&super::gates::to_terminal(gates));
    }
    if let Some(message) = &report.commit_message {
        let label = if report.state.dry_run {
            "commit message (dry run: not committed)"
        } else {
            "commit message"
        };
        out.push_str(&format!("\n--- {label} ---\n{message}"));
    }
    if let Some(why) = &report.state.interrupted {
        out.push_str(&paused(report, why));
    }
    if let Some(escalation) = &report.escalation() {
        out.push_str(&format!("\n--- escalation report ---\n{escalation}"));
        let every = super::outcome::failures_beyond_report(&report.state);
        if !every.is_empty() {
            out.push_str(&format!("\n--- every remaining failure ---\n{every}"));
        }
    }
    out
}
