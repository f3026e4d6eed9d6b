//! A reader adapter that bounds how far the XML reader can buffer: it fails once more than
//! [`MAX_EVENT_BYTES`] pass without a `<` or `>`, so no single tag or text node (and so no
//! quick-xml event buffer) can grow without bound. Passes the bytes through unchanged.

use std::io::Read;

/// Longest tag or text run accepted between two markup characters.
pub(super) const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// Passes bytes through, failing once more than [`MAX_EVENT_BYTES`] go by without a `<` or `>`.
pub(super) struct RunGuard<R> {
    inner: R,
    run: usize,
}

impl<R> RunGuard<R> {
    pub fn new(inner: R) -> Self {
        RunGuard { inner, run: 0 }
    }
}

impl<R: Read> Read for RunGuard<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        let chunk = &out[..n];
        let is_markup = |b: &u8| matches!(b, b'<' | b'>');
        let longest = match (
            chunk.iter().position(is_markup),
            chunk.iter().rposition(is_markup),
        ) {
            (Some(first), Some(last)) => {
                let inner = if last - first > MAX_EVENT_BYTES {
                    longest_run(&chunk[first..=last])
                } else {
                    0
                };
                let longest = (self.run + first).max(inner);
                self.run = n - last - 1;
                longest
            }
            _ => {
                self.run += n;
                self.run
            }
        };
        if longest.max(self.run) > MAX_EVENT_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("more than {MAX_EVENT_BYTES} bytes without markup"),
            ));
        }
        Ok(n)
    }
}

/// The longest stretch of `bytes` without `<` or `>`.
fn longest_run(bytes: &[u8]) -> usize {
    bytes
        .split(|b| matches!(b, b'<' | b'>'))
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_without_markup_fail_and_markup_resets_the_count() {
        let mut ok = vec![b'x'; MAX_EVENT_BYTES];
        ok.push(b'<');
        ok.extend(vec![b'y'; MAX_EVENT_BYTES]);
        let mut out = Vec::new();
        assert!(RunGuard::new(ok.as_slice()).read_to_end(&mut out).is_ok());
        let too_long = vec![b'x'; MAX_EVENT_BYTES + 1];
        let err = RunGuard::new(too_long.as_slice())
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }
}
