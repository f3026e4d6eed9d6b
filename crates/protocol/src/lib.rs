//! The plain data every layer shares: what a run is asked to do ([`task`]), what can happen
//! during it ([`event`]), how untrusted text is made safe to show a model ([`untrusted`]) and to
//! publish ([`markdown`]).
//!
//! No I/O beyond reading a task file, no policy, no decisions: the engine, the agent, the session
//! layer and the renderers all depend on this module, and it depends on none of them.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod asked;
pub mod builder;
pub mod chat;
pub mod clock;
pub mod deadline;
pub mod ending;
pub mod eval;
pub mod event;
pub mod gates;
pub mod ignored;
pub mod interrupt;
pub mod kinds;
pub mod lang;
pub mod markdown;
pub mod memory;
pub mod path;
pub mod pause;
pub mod phase;
pub mod publish;
pub mod records;
pub mod refusal;
pub mod reports;
pub mod signature;
pub mod state;
pub mod subplan;
pub mod task;
pub mod termination;
pub mod test_id;
pub mod test_path;
pub mod text;
pub mod thread;
pub mod trace;
pub mod trailer;
pub mod untrusted;
