//! Bounded capture of a child's output stream: the first and the last bytes, never more than the
//! cap in memory, with a marker saying how much was cut from the middle.

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};

/// What was kept of one output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Captured {
    /// The kept text (lossy UTF-8), with a truncation marker where bytes were dropped.
    pub text: String,
    /// Every byte the child wrote to the stream.
    pub total_bytes: u64,
    /// True when bytes were dropped.
    pub truncated: bool,
}

/// Head and tail of a stream, bounded by `cap` bytes in all.
#[derive(Debug)]
pub struct BoundedBuffer {
    cap: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl BoundedBuffer {
    pub fn new(cap: usize) -> Self {
        BoundedBuffer {
            cap,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
        }
    }

    /// Keeps the first half of the cap, and a rolling window of the last half.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_cap = self.cap / 2;
        let tail_cap = self.cap - head_cap;
        let room = head_cap.saturating_sub(self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..room]);
        let rest = &bytes[room..];
        let rest = &rest[rest.len().saturating_sub(tail_cap)..];
        self.tail.extend(rest);
        let excess = self.tail.len().saturating_sub(tail_cap);
        self.tail.drain(..excess);
    }

    pub fn finish(self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let dropped = self.total - kept;
        let mut bytes = self.head;
        if dropped > 0 {
            bytes.extend_from_slice(
                format!("\n[… {dropped} bytes truncated by meta-agent …]\n").as_bytes(),
            );
        }
        bytes.extend(self.tail);
        Captured {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            total_bytes: self.total,
            truncated: dropped > 0,
        }
    }
}

/// How long a stream is still read after the command's supervisor ended. Every process of the
/// command is gone by then (its PID namespace, or the supervisor's kill), so the pipe is at its
/// end at once; this bounds the wait if something escaped and holds it open.
pub const DRAIN_AFTER_EXIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Said at the end of a stream that was still held open after the command ended.
pub const HELD_OPEN_MARKER: &str =
    "\n[meta-agent: stopped reading: the output was still held open after the command ended]\n";

/// Reads a stream to its end, keeping at most `cap` bytes; once `ended` resolves (or its sender
/// is dropped), reads at most [`DRAIN_AFTER_EXIT`] longer and says so if it had to stop.
pub async fn capture<R: AsyncRead + Unpin>(
    mut reader: R,
    cap: usize,
    ended: tokio::sync::oneshot::Receiver<()>,
) -> std::io::Result<Captured> {
    let mut buffer = BoundedBuffer::new(cap);
    let mut chunk = vec![0u8; 64 * 1024];
    let deadline = async {
        let _ = ended.await;
        tokio::time::sleep(DRAIN_AFTER_EXIT).await;
    };
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            read = reader.read(&mut chunk) => {
                let read = read?;
                if read == 0 {
                    return Ok(buffer.finish());
                }
                buffer.push(&chunk[..read]);
            }
            () = &mut deadline => {
                buffer.push(HELD_OPEN_MARKER.as_bytes());
                return Ok(buffer.finish());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descendant that escaped and holds the pipe must not make the bot wait forever.
    #[tokio::test]
    async fn a_stream_held_open_after_the_end_is_read_for_a_bounded_time() {
        let (mut writer, reader) = tokio::io::duplex(1024);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"partial")
            .await
            .unwrap();
        let (ended, on_end) = tokio::sync::oneshot::channel();
        drop(ended);
        let started = std::time::Instant::now();
        let captured = capture(reader, 1024, on_end).await.unwrap();
        assert!(started.elapsed() < DRAIN_AFTER_EXIT * 3);
        assert!(captured.text.starts_with("partial"), "{}", captured.text);
        assert!(
            captured.text.contains("still held open"),
            "{}",
            captured.text
        );
        drop(writer);
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut buffer = BoundedBuffer::new(100);
        buffer.push(b"hello ");
        buffer.push(b"world");
        let captured = buffer.finish();
        assert_eq!(captured.text, "hello world");
        assert!(!captured.truncated);
        assert_eq!(captured.total_bytes, 11);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_says_so() {
        let mut buffer = BoundedBuffer::new(10);
        for _ in 0..1000 {
            buffer.push(b"0123456789");
        }
        buffer.push(b"THE-END");
        let captured = buffer.finish();
        assert!(captured.truncated);
        assert_eq!(captured.total_bytes, 10_007);
        assert!(captured.text.starts_with("01234"));
        assert!(captured.text.ends_with("E-END"), "{}", captured.text);
        assert!(captured.text.contains("bytes truncated"));
    }
}
