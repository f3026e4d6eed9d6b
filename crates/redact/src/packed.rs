//! Secrets packed away: text gzipped, then base64-encoded (standard or URL-safe alphabet, as a
//! log line or a JSON field would carry it), starts `H4sI`. Such a run is unpacked within a size
//! cap and its text searched by the caller's test; a run whose text holds a secret is the
//! secret's range as a whole. Pure over text; this module decides nothing about what a secret is.

use std::io::Read;
use std::ops::Range;
use std::sync::LazyLock;

use base64::Engine as _;
use base64::alphabet::{Alphabet, STANDARD, URL_SAFE};
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::Regex;

/// Bytes unpacked from one run, at most (a larger stream is searched up to here).
const MAX_UNPACKED: u64 = 1 << 20;

/// A base64 run that starts as a gzip stream does (`1f 8b 08`), in either alphabet.
static GZIP_RUN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"H4sI[A-Za-z0-9+/_-]{12,}={0,2}").ok());

/// The gzip+base64 runs in `text` whose unpacked text `finds` something in, with what it found.
pub fn runs_holding<T>(text: &str, finds: impl Fn(&str) -> Option<T>) -> Vec<(Range<usize>, T)> {
    if !text.contains("H4sI") {
        return Vec::new();
    }
    let Some(run) = GZIP_RUN.as_ref() else {
        return Vec::new();
    };
    run.find_iter(text)
        .filter_map(|found| {
            let inner = unpack(found.as_str())?;
            finds(&inner).map(|what| (found.range(), what))
        })
        .collect()
}

/// The text of one run: decoded in whichever alphabet reads it, then gunzipped as far as the
/// stream goes (a truncated stream still gives what it held) and the cap allows.
fn unpack(run: &str) -> Option<String> {
    let digits = run.trim_end_matches('=');
    // A final lone digit carries no whole byte.
    let digits = match digits.len() % 4 {
        1 => &digits[..digits.len() - 1],
        _ => digits,
    };
    let bytes = [&STANDARD, &URL_SAFE]
        .into_iter()
        .find_map(|alphabet| lenient(alphabet).decode(digits).ok())?;
    let mut decoder = flate2::read::MultiGzDecoder::new(bytes.as_slice()).take(MAX_UNPACKED);
    let mut out = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match decoder.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(read) => out.extend_from_slice(&chunk[..read]),
        }
    }
    (!out.is_empty()).then(|| String::from_utf8_lossy(&out).into_owned())
}

/// A decoder for `alphabet` that takes padding or none and trailing bits as they come.
fn lenient(alphabet: &Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use base64::engine::general_purpose;

    use super::*;

    fn gzip(text: &str) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn both_alphabets_with_or_without_padding_and_a_truncated_stream_unpack() {
        let packed = gzip("config: token=abc\n".repeat(20).as_str());
        for encoded in [
            general_purpose::STANDARD.encode(&packed),
            general_purpose::URL_SAFE_NO_PAD.encode(&packed),
        ] {
            assert!(encoded.starts_with("H4sI"), "{encoded}");
            assert!(unpack(&encoded).unwrap().contains("token=abc"));
            let cut = &encoded[..encoded.len() * 2 / 3];
            assert!(unpack(cut).unwrap().contains("token=abc"), "truncated");
        }
        assert_eq!(unpack("H4sIAAAAAAAAA"), None, "no stream, no text");
    }

    #[test]
    fn only_runs_whose_text_holds_a_secret_are_named() {
        let with = general_purpose::STANDARD.encode(gzip("key=SECRET-VALUE"));
        let without = general_purpose::STANDARD.encode(gzip("nothing here at all"));
        let text = format!("a {without} b {with} c");
        let runs = runs_holding(&text, |inner| inner.contains("SECRET-VALUE").then_some(()));
        assert_eq!(runs.len(), 1);
        assert_eq!(&text[runs[0].0.clone()], with);
    }
}
