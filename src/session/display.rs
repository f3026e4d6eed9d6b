//! The live display of a local run on stderr, one consumer of the event stream: on a terminal,
//! an `indicatif` spinner whose message is [`Live::frame`] redrawn every [`TICK`] (so the gate's
//! elapsed time moves); elsewhere, [`plain_line`]s. Everything drawn passes the redactor first.
//! What is shown is decided in `render::live`; this module only draws it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::run::now_ms;
use crate::protocol::event::{Event, EventSink};
use crate::redact::Redactor;
use crate::render::live::{Live, plain_line};

/// How often the terminal's status line is redrawn.
pub const TICK: Duration = Duration::from_millis(200);

/// The display of one run.
pub(super) struct Display {
    live: Arc<Mutex<Live>>,
    redactor: Arc<Redactor>,
    drawing: Option<Drawing>,
}

/// The terminal's status line and the thread that redraws it.
struct Drawing {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Display {
    /// A status line when stderr is a terminal, plain lines otherwise.
    pub(super) fn start(redactor: Arc<Redactor>) -> Display {
        let live = Arc::new(Mutex::new(Live::default()));
        let drawing = std::io::IsTerminal::is_terminal(&std::io::stderr())
            .then(|| Drawing::start(live.clone(), redactor.clone()));
        Display {
            live,
            redactor,
            drawing,
        }
    }

    /// Clears the status line (the outcome follows on stdout).
    pub(super) fn finish(mut self) {
        if let Some(drawing) = self.drawing.take() {
            drawing.stop();
        }
    }
}

impl Drawing {
    fn start(live: Arc<Mutex<Live>>, redactor: Arc<Redactor>) -> Drawing {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {wide_msg}") {
            bar.set_style(style);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (bar, stop) = (bar.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let frame = live
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .frame(now_ms());
                    bar.set_message(redactor.redact_text(&frame).into_owned());
                    bar.tick();
                    std::thread::sleep(TICK);
                }
            })
        };
        Drawing {
            bar,
            stop,
            ticker: Some(ticker),
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            // A ticker that panicked has nothing left to draw.
            let _ = ticker.join();
        }
        self.bar.finish_and_clear();
    }
}

impl EventSink for Display {
    fn emit(&self, event: &Event) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .fold(event, now_ms());
        if self.drawing.is_some() {
            return;
        }
        if let Some(line) = plain_line(event) {
            let line = self.redactor.redact_text(&format!("{line}\n")).into_owned();
            // A closed stderr leaves nothing to show the progress on.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
}
