//! The build-test-improve engine: the loop that turns a task into a verified commit or an honest
//! escalation.
//!
//! [`decide`] is the pure "what next"; [`state`] the persisted LoopState and its history;
//! [`run`] the effectful loop; [`improve`] hindsight's part of the Improve phase; [`builder`] the
//! trait the coding agent implements (and the scripted and offline builders); the texts people
//! read are rendered in [`crate::render`]; [`tamper`] the test-tamper guard; [`evidence`] keeps
//! the existing tests as the base commit had them (tests are evidence); [`task`]
//! task files.

pub mod baseline;
pub mod decide;
mod digest;
pub mod evidence;
mod evidence_guard;
pub mod hints;
pub mod improve;
mod observe;
mod once;
pub mod patch_gate;
pub mod run;
pub mod scripted;
pub mod state;
pub mod tamper;
