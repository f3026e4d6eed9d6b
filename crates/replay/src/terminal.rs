//! The real devices of a replay: the monotonic clock, the keyboard read from the terminal one
//! key at a time (no echo, no line buffering, restored when dropped) and stdout. When stdin is
//! not a terminal there is no keyboard: the replay plays through without waiting for keys.

use std::io::Write;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

use super::player::{Key, Keyboard, ReplayClock, Screen};

/// The system's monotonic clock.
pub struct SystemClock {
    start: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl ReplayClock for SystemClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// Keys from the terminal on stdin (none when stdin is not one).
pub struct TerminalKeys {
    /// The terminal's settings before the replay, put back on drop.
    saved: Option<Termios>,
}

impl TerminalKeys {
    /// Puts the terminal in key-at-a-time mode, if stdin is a terminal.
    pub fn open() -> Self {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(stdin.as_fd())
            .ok()
            .filter(|_| std::io::IsTerminal::is_terminal(&stdin));
        if let Some(saved) = &saved {
            let mut raw = saved.clone();
            raw.local_flags
                .remove(LocalFlags::ICANON | LocalFlags::ECHO);
            raw.control_chars[termios::SpecialCharacterIndices::VMIN as usize] = 0;
            raw.control_chars[termios::SpecialCharacterIndices::VTIME as usize] = 0;
            if let Err(error) = termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw) {
                tracing::warn!("cannot read keys from the terminal: {error}");
                return Self { saved: None };
            }
        }
        Self { saved }
    }
}

impl Drop for TerminalKeys {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, saved);
        }
    }
}

impl Keyboard for TerminalKeys {
    fn poll(&mut self) -> Option<Key> {
        self.saved.as_ref()?;
        let mut byte = [0u8; 1];
        loop {
            // VMIN = VTIME = 0: a read returns at once, with 0 bytes when no key is waiting.
            let read = nix::unistd::read(std::io::stdin().as_fd(), &mut byte).ok()?;
            if read == 0 {
                return None;
            }
            match byte[0] {
                b' ' => return Some(Key::Toggle),
                b'n' | b'N' => return Some(Key::Step),
                b'q' | b'Q' | 0x03 | 0x04 => return Some(Key::Quit),
                _ => continue,
            }
        }
    }

    fn interactive(&self) -> bool {
        self.saved.is_some()
    }
}

/// Rows to stdout, flushed at once.
pub struct Stdout;

impl Screen for Stdout {
    fn show(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            tracing::debug!("stdout is closed");
        }
    }
}
