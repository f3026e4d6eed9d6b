//! Text kept from a JUnit report: bounded captures of element text, raw start tags kept for
//! later, and attribute values read from them only when a failure is kept.
//!
//! Captures never grow past their bound whatever the input holds; nothing here decodes text
//! that is not kept. Custom entities are never expanded: only the five predefined ones and
//! character references are resolved.

use std::borrow::Cow;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesRef, BytesStart};

use crate::trim_to;

/// Element text collected across Text, CData and reference events, keeping at most `max` bytes
/// and counting the rest. The buffer is reused from one test case to the next.
#[derive(Debug, Default)]
pub(super) struct TextCapture {
    bytes: Vec<u8>,
    total: u64,
}

impl TextCapture {
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.total = 0;
    }

    /// Appends `chunk`, keeping at most `max` bytes in all.
    pub(super) fn push(&mut self, chunk: &[u8], max: usize) {
        self.total += chunk.len() as u64;
        let room = max.saturating_sub(self.bytes.len()).min(chunk.len());
        self.bytes.extend_from_slice(&chunk[..room]);
    }

    /// Appends the text a general reference stands for: `&lt;` and friends, `&#..;`; any other
    /// entity is kept literally, never expanded.
    pub(super) fn push_reference(&mut self, reference: &BytesRef<'_>, max: usize) {
        let mut utf8 = [0u8; 4];
        let resolved: &[u8] = match reference.resolve_char_ref() {
            Ok(Some(ch)) => ch.encode_utf8(&mut utf8).as_bytes(),
            _ => match predefined_entity(reference) {
                Some(text) => text.as_bytes(),
                None => {
                    self.push(b"&", max);
                    self.push(reference, max);
                    return self.push(b";", max);
                }
            },
        };
        self.push(resolved, max);
    }

    /// The kept text, with the same "trimmed" marker as [`trim_to`] when bytes were cut.
    pub(super) fn finish(&self) -> String {
        let end = match std::str::from_utf8(&self.bytes) {
            Ok(_) => self.bytes.len(),
            Err(cut_inside_char) => cut_inside_char.valid_up_to(),
        };
        let kept = String::from_utf8_lossy(&self.bytes[..end]);
        let cut = self.total - end as u64;
        if cut == 0 {
            kept.into_owned()
        } else {
            format!("{kept}… [{cut} bytes trimmed]")
        }
    }
}

fn predefined_entity(reference: &BytesRef<'_>) -> Option<&'static str> {
    Some(match &**reference {
        b"lt" => "<",
        b"gt" => ">",
        b"amp" => "&",
        b"apos" => "'",
        b"quot" => "\"",
        _ => return None,
    })
}

/// A start tag's raw bytes (name and attributes), copied into a reused buffer so its attributes
/// can be read later, only if needed.
#[derive(Debug, Default)]
pub(super) struct RawTag {
    bytes: Vec<u8>,
    name_len: usize,
}

impl RawTag {
    pub(super) fn set(&mut self, tag: &BytesStart<'_>) {
        self.bytes.clear();
        self.bytes.extend_from_slice(tag);
        self.name_len = tag.name().as_ref().len();
    }

    /// Writes the raw values of the attributes `keys` into `out` (cleared first), each followed by
    /// a NUL: the identity of a test case, compared without decoding or allocating. Returns
    /// whether the first key has a non-empty value.
    pub(super) fn write_identity(&self, keys: &[&[u8]], out: &mut Vec<u8>) -> bool {
        out.clear();
        let Ok(text) = std::str::from_utf8(&self.bytes) else {
            return false;
        };
        let tag = BytesStart::from_content(Cow::Borrowed(text), self.name_len);
        for key in keys {
            if let Ok(Some(found)) = tag.try_get_attribute(*key) {
                out.extend_from_slice(&found.value);
            }
            out.push(0);
        }
        out.first().is_some_and(|b| *b != 0)
    }

    /// The attribute `key`, unescaped (custom entities left as written), trimmed to `max` bytes.
    pub(super) fn attribute(&self, key: &[u8], max: usize) -> Option<String> {
        let text = std::str::from_utf8(&self.bytes).ok()?;
        let tag = BytesStart::from_content(Cow::Borrowed(text), self.name_len);
        attribute(&tag, key, max)
    }
}

/// The attribute `key` of `tag`, unescaped when possible, trimmed to `max` bytes.
pub(super) fn attribute(tag: &BytesStart<'_>, key: &[u8], max: usize) -> Option<String> {
    let found = tag.try_get_attribute(key).ok()??;
    let value = match found.normalized_value(XmlVersion::Implicit1_0) {
        Ok(value) => value,
        Err(_) => String::from_utf8_lossy(&found.value),
    };
    Some(trim_to(&value, max))
}
