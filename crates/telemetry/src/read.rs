//! Reading a trace back (the inverse of [`super::TraceFile`]): one [`TraceEntry`] per line, its
//! time, its sequence number and its event. The text is untrusted (an artifact downloaded from
//! anywhere): a line that is not a trace record is an error naming the line; an event this
//! version does not know (a newer writer) is kept by name as [`Traced::Unknown`], never dropped.
//!
//! Pure: it parses a string; where the string comes from is the caller's business.

use serde::Deserialize;

use meta_agent_protocol::event::Event;

pub use meta_agent_protocol::trace::{TraceEntry, Traced};

/// Why a trace cannot be read; names the line (counting from 1).
#[derive(Debug, thiserror::Error)]
pub enum TraceReadError {
    #[error("trace line {line}: not a JSON object: {source}")]
    NotJson {
        line: usize,
        source: serde_json::Error,
    },
    #[error("trace line {line}: no `{field}` field a trace record has")]
    Missing { line: usize, field: &'static str },
    #[error("trace line {line}: `{time}` is not an RFC 3339 time: {message}")]
    Time {
        line: usize,
        time: String,
        message: String,
    },
}

#[derive(Deserialize)]
struct Header {
    time: Option<String>,
    seq: Option<u64>,
    event: Option<String>,
}

/// Every record of `text`, in the file's order (blank lines skipped).
pub fn read_trace(text: &str) -> Result<Vec<TraceEntry>, TraceReadError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| read_line(index + 1, line))
        .collect()
}

fn read_line(line: usize, text: &str) -> Result<TraceEntry, TraceReadError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| TraceReadError::NotJson { line, source })?;
    let header =
        Header::deserialize(&value).map_err(|source| TraceReadError::NotJson { line, source })?;
    let missing = |field| TraceReadError::Missing { line, field };
    let time = header.time.ok_or_else(|| missing("time"))?;
    let seq = header.seq.ok_or_else(|| missing("seq"))?;
    let name = header.event.ok_or_else(|| missing("event"))?;
    let time = humantime::parse_rfc3339(&time).map_err(|error| TraceReadError::Time {
        line,
        time: time.clone(),
        message: error.to_string(),
    })?;
    let event = match Event::deserialize(value) {
        Ok(event) => Traced::Known(event),
        Err(_) => Traced::Unknown { name },
    };
    Ok(TraceEntry { time, seq, event })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::{NoRedaction, TraceFile};
    use meta_agent_protocol::event::{EventSink, LoopPhase};

    fn written(events: &[Event]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let clock = Arc::new(|| SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_314_548_007));
        let trace = TraceFile::open(&path, clock, Arc::new(NoRedaction)).unwrap();
        for event in events {
            trace.emit(event);
        }
        drop(trace);
        std::fs::read_to_string(&path).unwrap()
    }

    #[test]
    fn reads_back_what_the_trace_file_wrote() {
        let events = vec![
            // No gates: the field is left out of the line, and read back empty.
            Event::PhaseFinished {
                phase: meta_agent_protocol::records::StepPhase::Build,
                iteration: 1,
                duration_ms: 3,
                outcome: "changed".into(),
                gates: Vec::new(),
            },
            Event::StateChanged {
                from: LoopPhase::Idle,
                to: LoopPhase::Planning,
                iteration: 1,
                reason: "task received".into(),
            },
            Event::GateFinished {
                gate: "tests".into(),
                status: meta_agent_protocol::records::GateStatus::Failed,
                duration_ms: 4200,
                detail: "11/12 passed".into(),
                counts: meta_agent_protocol::records::GateCounts {
                    tests_passed: Some(11),
                    tests_total: Some(12),
                    ..Default::default()
                },
            },
        ];
        let entries = read_trace(&written(&events)).unwrap();
        let read: Vec<Traced> = entries.iter().map(|entry| entry.event.clone()).collect();
        assert_eq!(
            read,
            events.into_iter().map(Traced::Known).collect::<Vec<_>>()
        );
        assert_eq!(entries[2].seq, 3);
        assert_eq!(
            entries[0].time,
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_314_548_007)
        );
    }

    #[test]
    fn an_event_from_a_newer_writer_is_kept_by_name() {
        let text = r#"{"time":"2026-11-22T02:29:08.007Z","seq":0,"event":"paused","location":"x"}"#;
        let entries = read_trace(text).unwrap();
        assert_eq!(
            entries[0].event,
            Traced::Unknown {
                name: "paused".into()
            }
        );
    }

    #[test]
    fn a_broken_line_is_named() {
        let text =
            "{\"time\":\"2026-11-22T02:29:08.007Z\",\"seq\":0,\"event\":\"x\"}\n\nnot json\n";
        let error = read_trace(text).unwrap_err().to_string();
        assert!(
            error.starts_with("trace line 3: not a JSON object"),
            "{error}"
        );
        let error = read_trace(r#"{"seq":0,"event":"x"}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(error, "trace line 1: no `time` field a trace record has");
        let error = read_trace(r#"{"time":"soon","seq":0,"event":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("trace line 1: `soon` is not an RFC 3339 time"),
            "{error}"
        );
    }

    proptest! {
        #[test]
        fn any_text_reads_whole_or_fails_without_panicking(text in "\\PC{0,200}(\n\\PC{0,80}){0,4}") {
            if let Ok(entries) = read_trace(&text) {
                let lines = text.lines().filter(|line| !line.trim().is_empty()).count();
                prop_assert_eq!(entries.len(), lines);
            }
        }

        #[test]
        fn any_reason_round_trips(reason in "\\PC{0,120}", iteration in 0u32..1000) {
            let event = Event::StateChanged {
                from: LoopPhase::Acting,
                to: LoopPhase::Observing,
                iteration,
                reason,
            };
            let entries = read_trace(&written(std::slice::from_ref(&event))).unwrap();
            prop_assert_eq!(&entries[0].event, &Traced::Known(event));
        }
    }
}
