//! The build-test-improve engine: the loop that turns a task into a verified commit or an honest
//! escalation.
//!
//! [`decide`] is the pure "what next"; [`state`] the persisted LoopState and its history;
//! [`run`] the effectful loop; [`baseline`] the observation before any act; [`candidate`] where
//! the gates run after one (the fewest runs that keep every guarantee); [`improve`]
//! hindsight's part of the Improve phase; [`hints`] near misses shown to the model; [`scripted`]
//! the scripted and offline builders; [`tamper`] the test-tamper guard; [`evidence`] keeps the
//! existing tests as the base commit had them (tests are evidence); [`patch_gate`] the last
//! check before a commit. The loop's steps are methods of the engine (`machine`); three units
//! do their work, each holding only what it needs: `guard` (the act's change checked), `observe`
//! (the gates run, re-run and verified on a pristine checkout) and `commit` (every commit,
//! through the patch gate). The builder contract and task files are plain data in
//! [`meta_agent_protocol`]; the texts people read are rendered in [`meta_agent_render`].

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod baseline;
pub mod candidate;
mod commit;
pub mod decide;
mod digest;
mod environment;
pub mod evidence;
mod guard;
pub mod hints;
pub mod improve;
mod machine;
mod observe;
pub mod patch_gate;
pub mod pause;
pub mod run;
pub mod scripted;
pub mod state;
pub mod tamper;
mod worktree;
