//! A small Server-Sent Events parser: bytes in, whole events out.
//!
//! Pure and incremental: [`SseParser::feed`] takes whatever chunk the network produced and
//! returns the events completed by it. Comments and `id:`/`retry:` fields are ignored. It does
//! not decide whether a stream ended properly; the provider modules do.

/// One event: its `event:` name, if any, and its `data:` lines joined by newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// A line of the stream that is not UTF-8 (the stream cannot be read further).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an event line is not UTF-8 (invalid at byte {valid_up_to} of the line)")]
pub struct NotUtf8 {
    pub valid_up_to: usize,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseParser {
    /// Consumes `chunk`, returning the events it completed. Fails on a line that is not UTF-8.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, NotUtf8> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.pending.drain(..=end).collect();
            let line = std::str::from_utf8(&raw)
                .map_err(|err| NotUtf8 {
                    valid_up_to: err.valid_up_to(),
                })?
                .trim_end_matches(['\n', '\r']);
            if let Some(event) = self.line(line) {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// Handles one line; a blank line completes an event.
    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if self.data.is_empty() && event.is_none() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"event: ping\r\nda").unwrap().is_empty());
        let events = parser
            .feed(b"ta: {}\r\n\r\n: comment\n\ndata: a\ndata: b\n\n")
            .unwrap();
        let names: Vec<_> = events.iter().map(|e| e.event.clone()).collect();
        assert_eq!(names, [Some("ping".to_string()), None]);
        assert_eq!(events[0].data, "{}");
        assert_eq!(events[1].data, "a\nb");
    }

    proptest::proptest! {
        #[test]
        fn chunk_boundaries_do_not_matter(cuts in proptest::collection::vec(0usize..120, 0..8)) {
            let stream = "event: a\r\ndata: {\"x\": 1}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\nevent: b\ndata: \u{e9}t\u{e9}\n\n".as_bytes();
            let whole = SseParser::default().feed(stream).unwrap();
            proptest::prop_assert_eq!(whole.len(), 3);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(stream.len())).collect();
            cuts.sort_unstable();
            let (mut parser, mut events, mut start) = (SseParser::default(), Vec::new(), 0);
            for cut in cuts.into_iter().chain([stream.len()]) {
                events.extend(parser.feed(&stream[start..cut]).unwrap());
                start = cut;
            }
            proptest::prop_assert_eq!(events, whole);
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_says_where_it_breaks() {
        let mut parser = SseParser::default();
        let error = parser.feed(b"data: ok\xff\n").unwrap_err();
        assert_eq!(error, NotUtf8 { valid_up_to: 8 });
        assert!(error.to_string().contains("byte 8"), "{error}");
    }

    #[test]
    fn unfinished_event_is_not_returned() {
        let mut parser = SseParser::default();
        assert!(parser.feed(b"data: [DONE]\n").unwrap().is_empty());
    }
}
