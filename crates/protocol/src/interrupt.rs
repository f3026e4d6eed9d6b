//! The run's interruption: a SIGTERM or SIGINT (Ctrl-C, a cancelled or timed-out GitHub job)
//! caught by the session layer and seen by everything that takes time. The executor stops the
//! running command's whole process tree; the engine ends the current step, keeps the work in
//! progress and saves the session, so `resume` (`/agent fix` on GitHub) continues from there.
//!
//! One [`Interrupter`] sets it once; any number of [`Interrupt`] clones read it. The default
//! `Interrupt` is never set (commands and tests that cannot be interrupted).

use tokio::sync::watch;

/// Why the run was interrupted, as a person would say it ("received SIGTERM ...").
pub type Why = String;

/// The reading side: cheap to clone, never set when made by [`Interrupt::never`].
#[derive(Debug, Clone)]
pub struct Interrupt {
    receiver: Option<watch::Receiver<Option<Why>>>,
}

/// The setting side (held by the signal listener).
#[derive(Debug)]
pub struct Interrupter {
    sender: watch::Sender<Option<Why>>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt::never()
    }
}

impl Interrupt {
    /// An interruption that never comes.
    pub fn never() -> Interrupt {
        Interrupt { receiver: None }
    }

    /// A setter and its reader.
    pub fn pair() -> (Interrupter, Interrupt) {
        let (sender, receiver) = watch::channel(None);
        (
            Interrupter { sender },
            Interrupt {
                receiver: Some(receiver),
            },
        )
    }

    /// Why the run was interrupted, once it was.
    pub fn reason(&self) -> Option<Why> {
        self.receiver
            .as_ref()
            .and_then(|receiver| receiver.borrow().clone())
    }

    /// Resolves once the run is interrupted (never for [`Interrupt::never`], nor when the
    /// setter is gone without setting it).
    pub async fn wait(&self) {
        let Some(receiver) = &self.receiver else {
            return std::future::pending().await;
        };
        let mut receiver = receiver.clone();
        if receiver.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Interrupter {
    /// Interrupts the run (the first reason stays). False when it already was.
    pub fn interrupt(&self, why: impl Into<Why>) -> bool {
        let why = why.into();
        self.sender.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(why);
            true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_reason_stays_and_every_reader_sees_it() {
        let (setter, interrupt) = Interrupt::pair();
        let other = interrupt.clone();
        assert_eq!(interrupt.reason(), None);
        let waiting = tokio::spawn(async move { other.wait().await });
        assert!(setter.interrupt("received SIGTERM"));
        assert!(!setter.interrupt("received SIGINT"));
        waiting.await.unwrap();
        assert_eq!(interrupt.reason().as_deref(), Some("received SIGTERM"));
    }

    #[tokio::test]
    async fn never_is_never_set() {
        let never = Interrupt::never();
        assert_eq!(never.reason(), None);
        let waited = tokio::time::timeout(std::time::Duration::from_millis(20), never.wait()).await;
        assert!(waited.is_err());
    }
}
