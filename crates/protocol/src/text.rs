//! Text cut to a size on a character boundary, saying how much was cut ([`trim_to`]): how every
//! layer bounds what it keeps of untrusted output.

/// Trims `text` to at most `max` bytes on a character boundary, appending a marker that says how
/// much was cut.
pub fn trim_to(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes trimmed]", &text[..end], text.len() - end)
}
