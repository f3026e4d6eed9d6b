//! The encoded forms of one exact secret value that the redactor also looks for (in any ASCII
//! letter case, see the parent module): ROT13 and reversed ROT13, reversed, hex
//! (lower and upper), URL-encoded, JSON-escaped and base64 (standard and URL-safe, at each of the
//! three byte alignments). Pure functions over bytes; this module decides nothing about where the
//! forms are searched.

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Every form of `value` worth searching for, the raw value first, without duplicates or empties.
pub fn forms(value: &str) -> Vec<String> {
    let reversed: String = value.chars().rev().collect();
    let mut out = vec![rot13(value), rot13(&reversed), value.to_owned(), reversed];
    out.push(hex(value.as_bytes(), false));
    out.push(hex(value.as_bytes(), true));
    out.push(url_encode(value, false));
    out.push(url_encode(value, true));
    out.push(json_escape(value));
    for alphabet in [STANDARD, URL_SAFE] {
        for shift in 0..3 {
            out.push(base64_core(value.as_bytes(), shift, alphabet));
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|form| !form.is_empty() && seen.insert(form.clone()));
    out
}

/// ROT13 of `value` (ASCII letters rotated, the rest as is).
pub fn rot13(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
            'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
            _ => c,
        })
        .collect()
}

/// Hex encoding of `bytes`, in lower or upper case.
pub fn hex(bytes: &[u8], upper: bool) -> String {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(digits[usize::from(byte >> 4)]));
        out.push(char::from(digits[usize::from(byte & 0x0f)]));
    }
    out
}

/// Percent-encodes every byte outside the URL-unreserved set (`A-Za-z0-9-._~`).
pub fn url_encode(value: &str, lower: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push_str(&hex(&[byte], !lower));
        }
    }
    out
}

/// The value as it appears inside a JSON string literal (without the quotes).
pub fn json_escape(value: &str) -> String {
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    quoted
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .map_or(quoted.clone(), str::to_owned)
}

/// Plain base64 (standard alphabet, with padding) of `bytes`.
pub fn base64(bytes: &[u8]) -> String {
    let mut out = encode_groups(bytes, STANDARD);
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// The base64 characters that depend only on `bytes` when they start `shift` bytes into a 3-byte
/// group of a longer stream: the characters mixed with neighbouring bytes are dropped at both
/// ends, so the core appears in any base64 text that encodes the value at that alignment.
pub fn base64_core(bytes: &[u8], shift: usize, alphabet: &[u8; 64]) -> String {
    let mut padded = vec![0u8; shift];
    padded.extend_from_slice(bytes);
    let encoded = encode_groups(&padded, alphabet);
    let skip = match shift {
        0 => 0,
        1 => 2,
        _ => 3,
    };
    let end = if padded.len().is_multiple_of(3) {
        encoded.len()
    } else {
        encoded.len().saturating_sub(1)
    };
    encoded.get(skip..end).unwrap_or_default().to_owned()
}

/// Base64 characters for `bytes`, without padding.
fn encode_groups(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let count = chunk.len() + 1;
        for i in 0..count {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(alphabet[index as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn every_alignment_core_appears_in_shifted_encoding() {
        let value = b"s3cr3t-canary-value";
        for prefix in ["", "x", "xy", "xyz", "wxyz"] {
            for suffix in ["", "a", "ab"] {
                let mut data = prefix.as_bytes().to_vec();
                data.extend_from_slice(value);
                data.extend_from_slice(suffix.as_bytes());
                let text = base64(&data);
                let shift = prefix.len() % 3;
                let core = base64_core(value, shift, STANDARD);
                assert!(core.len() >= 20, "{core}");
                assert!(
                    text.contains(&core),
                    "{prefix:?} {suffix:?}: {text} / {core}"
                );
            }
        }
    }

    #[test]
    fn hex_url_and_json_forms() {
        assert_eq!(hex(b"\x01\xab", false), "01ab");
        assert_eq!(hex(b"\x01\xab", true), "01AB");
        assert_eq!(url_encode("a b/c", true), "a%20b%2fc");
        assert_eq!(url_encode("a b/c", false), "a%20b%2Fc");
        assert_eq!(json_escape("a\"b\\c"), "a\\\"b\\\\c");
    }
}
