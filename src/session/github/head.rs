//! Publishing a verified fix onto a person's pull request's own branch (the Action's
//! `pull-request-fix: push`, when [`crate::github::provenance::plan`] allowed it): the verified
//! commit is pushed through the same check as every push ([`push::verify`]), which allows it
//! only while the branch is still at the commit the work started from, and the push names that
//! commit, so it can only fast-forward; git refuses anything else, and the bot never forces. A
//! branch the author moved meanwhile gets nothing: the fix is kept on the bot's own branch and
//! the status comment says so.

use super::*;
use crate::github::provenance::PushRefusal;
use crate::github::push::PushError;

/// How a push onto the pull request's branch went.
pub(super) enum HeadPush {
    /// The branch now ends with the fix.
    Pushed { commit: String },
    /// The branch moved: nothing pushed onto it; the fix is on the bot's branch `kept_on`.
    Moved { refusal: String, kept_on: String },
}

impl Step<'_> {
    /// Pushes the session's verified commit onto the plan's pull request branch; when that
    /// branch moved, pushes the session's own branch instead and says why.
    pub(super) async fn push_onto_head(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        state: &mut LoopState,
    ) -> Result<HeadPush, SessionError> {
        self.keep_token_fresh().await;
        let head = self.push_plan()?.pull_into.clone();
        let tip = repo
            .commit_of(&format!("refs/heads/{}", state.branch))
            .map_err(internal)?;
        let err = match self.push_checked(prepared, repo, state, &tip, &head).await {
            Ok(()) => {
                state.branch = head;
                return Ok(HeadPush::Pushed { commit: tip });
            }
            Err(err) => err,
        };
        let Some(refusal) = moved(&err) else {
            return Err(internal(err));
        };
        tracing::warn!("{err}; the fix is kept on the bot's own branch");
        let kept_on = self.push_branch(prepared, repo, state).await?;
        state.branch = kept_on.clone();
        Ok(HeadPush::Moved { refusal, kept_on })
    }
}

/// Why a refused push onto a pull request's branch is the branch having moved, if it is: the
/// check saw a new tip, or git refused a push that would not fast-forward (the author pushed
/// between the check and the push).
fn moved(err: &PushError) -> Option<String> {
    match err {
        PushError::Untrusted {
            refusal: refusal @ PushRefusal::BranchMoved { .. },
            ..
        } => Some(refusal.to_string()),
        PushError::Failed { branch, .. } if push::was_rejected(err) => {
            Some(crate::render::checks::not_fast_forward(branch))
        }
        PushError::Untrusted { .. }
        | PushError::Failed { .. }
        | PushError::Refused { .. }
        | PushError::BadRemote { .. }
        | PushError::Unreadable { .. } => None,
    }
}
