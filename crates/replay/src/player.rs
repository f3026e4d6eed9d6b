//! Playing a trace back in its own rhythm: each row of the timeline appears when its time comes
//! (its offset from the first event, divided by the speed), on a [`Screen`], while a [`Keyboard`]
//! can pause (space), step one row (`n`) or quit (`q`). The play stops (pauses) at every event
//! that marks one of the chosen locations (`--until`).
//!
//! The time and the keys come through traits ([`ReplayClock`], [`Keyboard`]), so the timing is
//! tested with a fake clock; the real ones are in [`super::terminal`]. The loop decides nothing
//! else: what a row says is [`meta_agent_render::timeline`]'s.

use std::time::Duration;

use super::location::{Location, marks};
use meta_agent_render::timeline::{self, Row};
use meta_agent_telemetry::TraceEntry;

/// How often a waiting player looks at the keyboard.
pub const TICK: Duration = Duration::from_millis(50);

/// The replay's sense of time: a monotonic "now" and a way to wait.
pub trait ReplayClock {
    /// Time since an arbitrary start (monotonic).
    fn now(&self) -> Duration;
    fn sleep(&self, duration: Duration);
}

/// A key the player understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Space: pause, or go on.
    Toggle,
    /// `n`: show the next row, then pause.
    Step,
    /// `q`: stop here.
    Quit,
}

/// Where keys come from. A keyboard that is not interactive (no terminal) never gives a key:
/// the play then never waits for one, it ends where it would pause.
pub trait Keyboard {
    /// A key pressed since the last call, without waiting.
    fn poll(&mut self) -> Option<Key>;
    fn interactive(&self) -> bool;
}

/// Where the rows go.
pub trait Screen {
    fn show(&mut self, text: &str);
}

/// The speeds a replay plays at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speed {
    X1,
    X2,
    X4,
}

/// A speed that is not 1, 2 or 4.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a replay speed (1, 2 or 4)")]
pub struct UnknownSpeed {
    pub given: String,
}

impl std::str::FromStr for Speed {
    type Err = UnknownSpeed;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        match given.trim_end_matches(['x', '×']) {
            "1" => Ok(Speed::X1),
            "2" => Ok(Speed::X2),
            "4" => Ok(Speed::X4),
            _ => Err(UnknownSpeed {
                given: given.to_owned(),
            }),
        }
    }
}

impl Speed {
    fn factor(self) -> u32 {
        match self {
            Speed::X1 => 1,
            Speed::X2 => 2,
            Speed::X4 => 4,
        }
    }
}

/// What a replay is asked.
#[derive(Debug, Clone)]
pub struct Play {
    pub speed: Speed,
    /// Pause at every event that marks one of these.
    pub until: Vec<Location>,
}

pub use meta_agent_render::timeline::ReplayEnding as Ending;

/// The devices a replay runs on.
pub struct Devices<'a> {
    pub clock: &'a dyn ReplayClock,
    pub keys: &'a mut dyn Keyboard,
    pub screen: &'a mut dyn Screen,
}

enum Mode {
    Playing,
    Paused,
    Stepping,
}

/// Plays `entries` back; see the module documentation.
pub fn play(entries: &[TraceEntry], play: &Play, devices: Devices<'_>) -> Ending {
    let rows = timeline::rows(entries);
    let Devices {
        clock,
        keys,
        screen,
    } = devices;
    screen.show(&format!(
        "replay at {}×: {} rows; space pauses, n steps, q quits\n",
        play.speed.factor(),
        rows.len()
    ));
    let mut player = Player {
        clock,
        keys,
        screen,
        mode: Mode::Playing,
        // Where the play's clock stands against the trace's (moves on while paused).
        origin: clock.now(),
        position: Duration::ZERO,
        speed: play.speed.factor(),
    };
    for row in &rows {
        if let Some(ending) = player.show(row) {
            return ending;
        }
        let stop = stop_location(entries, row, &play.until);
        if let Some(location) = stop {
            if !player.keys.interactive() {
                return Ending::StoppedAt {
                    location,
                    seq: row.seq,
                };
            }
            player.screen.show(&format!(
                "-- paused at {} (space goes on, n steps, q quits)\n",
                location.as_str()
            ));
            player.mode = Mode::Paused;
        }
    }
    Ending::Finished
}

fn stop_location(entries: &[TraceEntry], row: &Row, until: &[Location]) -> Option<Location> {
    let entry = entries.iter().find(|entry| entry.seq == row.seq)?;
    marks(&entry.event)
        .into_iter()
        .find(|location| until.contains(location))
}

struct Player<'a> {
    clock: &'a dyn ReplayClock,
    keys: &'a mut dyn Keyboard,
    screen: &'a mut dyn Screen,
    mode: Mode,
    /// The clock's reading at the trace's start, as the play now stands.
    origin: Duration,
    /// How far into the (scaled) trace the play stood when it last paused or showed a row.
    position: Duration,
    speed: u32,
}

impl Player<'_> {
    /// Waits for the row's time (or a step), then shows it; `Some` when the play ends first.
    fn show(&mut self, row: &Row) -> Option<Ending> {
        let due = row.at / self.speed;
        loop {
            if let Some(ending) = self.handle_keys() {
                return Some(ending);
            }
            match self.mode {
                Mode::Stepping => {
                    self.mode = Mode::Paused;
                    break;
                }
                Mode::Paused => {
                    self.clock.sleep(TICK);
                }
                Mode::Playing => {
                    let elapsed = self.clock.now().saturating_sub(self.origin);
                    if elapsed >= due {
                        break;
                    }
                    self.clock.sleep((due - elapsed).min(TICK));
                }
            }
        }
        self.position = due;
        self.screen.show(&timeline::terminal_line(row));
        None
    }

    fn handle_keys(&mut self) -> Option<Ending> {
        while let Some(key) = self.keys.poll() {
            match (key, &self.mode) {
                (Key::Quit, _) => return Some(Ending::Quit),
                (Key::Step, _) => self.mode = Mode::Stepping,
                (Key::Toggle, Mode::Playing) => {
                    self.position = self.clock.now().saturating_sub(self.origin);
                    self.mode = Mode::Paused;
                }
                (Key::Toggle, Mode::Paused | Mode::Stepping) => self.resume(),
            }
        }
        None
    }

    /// Plays on from where it paused: the clock's origin moves by the time spent paused.
    fn resume(&mut self) {
        self.mode = Mode::Playing;
        self.origin = self.clock.now().saturating_sub(self.position);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::time::SystemTime;

    use super::*;
    use meta_agent_protocol::event::Event;
    use meta_agent_telemetry::Traced;

    /// Time that passes only when the player sleeps.
    #[derive(Default)]
    struct FakeClock(Cell<Duration>);

    impl ReplayClock for FakeClock {
        fn now(&self) -> Duration {
            self.0.get()
        }
        fn sleep(&self, duration: Duration) {
            self.0.set(self.0.get() + duration);
        }
    }

    /// Keys pressed at given times of the fake clock.
    struct FakeKeys<'a> {
        clock: &'a FakeClock,
        presses: Vec<(Duration, Key)>,
        interactive: bool,
    }

    impl Keyboard for FakeKeys<'_> {
        fn poll(&mut self) -> Option<Key> {
            let (at, _) = *self.presses.first()?;
            (self.clock.now() >= at).then(|| self.presses.remove(0).1)
        }
        fn interactive(&self) -> bool {
            self.interactive
        }
    }

    /// What was shown, and when on the fake clock.
    struct Recorded<'a> {
        clock: &'a FakeClock,
        shown: RefCell<Vec<(Duration, String)>>,
    }

    impl Screen for &Recorded<'_> {
        fn show(&mut self, text: &str) {
            self.shown
                .borrow_mut()
                .push((self.clock.now(), text.to_owned()));
        }
    }

    fn tool(seq: u64, at_ms: u64, success: bool) -> TraceEntry {
        TraceEntry {
            time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_000_000 + at_ms),
            seq,
            event: Traced::Known(Event::ToolCalled {
                tool: format!("tool{seq}"),
                input: String::new(),
                success,
                started_unix_ms: 0,
                duration_ms: 1,
            }),
        }
    }

    /// Four tool calls at 0 s, 1 s, 3 s and 7 s; the third fails.
    fn trace() -> Vec<TraceEntry> {
        vec![
            tool(0, 0, true),
            tool(1, 1000, true),
            tool(2, 3000, false),
            tool(3, 7000, true),
        ]
    }

    /// How a play went: when each row (not the heading or a pause line) appeared, how it
    /// ended, and the fake clock at the end.
    struct Played {
        times: Vec<u128>,
        ending: Ending,
        end: Duration,
    }

    fn played(
        speed: Speed,
        presses: Vec<(Duration, Key)>,
        until: Vec<Location>,
        interactive: bool,
    ) -> Played {
        let clock = FakeClock::default();
        let mut keys = FakeKeys {
            clock: &clock,
            presses,
            interactive,
        };
        let recorded = Recorded {
            clock: &clock,
            shown: RefCell::default(),
        };
        let mut screen = &recorded;
        let ending = play(
            &trace(),
            &Play { speed, until },
            Devices {
                clock: &clock,
                keys: &mut keys,
                screen: &mut screen,
            },
        );
        let times = recorded
            .shown
            .borrow()
            .iter()
            .filter(|(_, text)| text.starts_with('+'))
            .map(|(at, _)| at.as_millis())
            .collect();
        Played {
            times,
            ending,
            end: clock.now(),
        }
    }

    fn row_times(
        speed: Speed,
        presses: Vec<(Duration, Key)>,
        until: Vec<Location>,
    ) -> (Vec<u128>, Ending) {
        let played = played(speed, presses, until, true);
        (played.times, played.ending)
    }

    #[test]
    fn rows_appear_at_their_own_time_at_1x() {
        let (times, ending) = row_times(Speed::X1, Vec::new(), Vec::new());
        assert_eq!(times, vec![0, 1000, 3000, 7000]);
        assert_eq!(ending, Ending::Finished);
    }

    #[test]
    fn rows_appear_four_times_sooner_at_4x() {
        let (times, _) = row_times(Speed::X4, Vec::new(), Vec::new());
        assert_eq!(times, vec![0, 250, 750, 1750]);
        let (times, _) = row_times(Speed::X2, Vec::new(), Vec::new());
        assert_eq!(times, vec![0, 500, 1500, 3500]);
    }

    #[test]
    fn space_pauses_and_the_play_goes_on_where_it_stood() {
        // Paused at 0.5 s for 2 s: every later row comes 2 s late.
        let presses = vec![
            (Duration::from_millis(500), Key::Toggle),
            (Duration::from_millis(2500), Key::Toggle),
        ];
        let (times, _) = row_times(Speed::X1, presses, Vec::new());
        assert_eq!(times, vec![0, 3000, 5000, 9000]);
    }

    #[test]
    fn n_shows_the_next_row_at_once_and_q_quits() {
        let presses = vec![
            (Duration::from_millis(100), Key::Step),
            (Duration::from_millis(200), Key::Step),
            (Duration::from_millis(300), Key::Quit),
        ];
        let (times, ending) = row_times(Speed::X1, presses, Vec::new());
        assert_eq!(times, vec![0, 100, 200]);
        assert_eq!(ending, Ending::Quit);
    }

    #[test]
    fn until_pauses_at_the_location_and_space_goes_on() {
        // The failed tool call (3 s) marks on_tool_error: paused there until 4 s.
        let presses = vec![(Duration::from_millis(4000), Key::Toggle)];
        let (times, ending) = row_times(Speed::X1, presses, vec![Location::OnToolError]);
        assert_eq!(times, vec![0, 1000, 3000, 8000]);
        assert_eq!(ending, Ending::Finished);
    }

    #[test]
    fn without_a_keyboard_until_ends_the_play_at_the_location() {
        let played = played(Speed::X4, Vec::new(), vec![Location::OnToolError], false);
        assert_eq!(
            played.ending,
            Ending::StoppedAt {
                location: Location::OnToolError,
                seq: 2
            }
        );
        assert_eq!(played.times, vec![0, 250, 750]);
        assert_eq!(played.end, Duration::from_millis(750));
    }
}
