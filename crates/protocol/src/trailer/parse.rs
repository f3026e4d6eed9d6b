//! Reading `Key: value` trailers from a commit message the way `git interpret-trailers --parse`
//! does (default configuration: `:` separator, `#` comments, the `---` divider). Used to check the
//! messages the engine writes; it must not write or reformat messages.

/// Line prefixes git itself generates; one of them lets a block with non-trailer lines count.
const GIT_GENERATED_PREFIXES: [&str; 2] = ["Signed-off-by: ", "(cherry picked from commit "];

/// The trailers of `message` as (key, value) pairs, in order, with continuation lines unfolded.
pub fn commit_message_trailers(message: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = message.lines().collect();
    let end = end_of_message(&lines);
    let lines = &lines[..end];
    match trailer_block_start(lines) {
        Some(start) => parse_block(&lines[start..]),
        None => Vec::new(),
    }
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

fn is_comment(line: &str) -> bool {
    line.starts_with('#')
}

/// Lines before the `---` divider, with trailing comment and blank lines dropped.
fn end_of_message(lines: &[&str]) -> usize {
    let divider = lines
        .iter()
        .position(|l| {
            l.strip_prefix("---")
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
        })
        .unwrap_or(lines.len());
    let mut end = divider;
    while end > 0 && (is_blank(lines[end - 1]) || is_comment(lines[end - 1])) {
        end -= 1;
    }
    end
}

/// The index just past the title paragraph (the first paragraph never holds trailers).
fn end_of_title(lines: &[&str]) -> usize {
    lines
        .iter()
        .position(|l| !is_comment(l) && is_blank(l))
        .unwrap_or(lines.len())
}

/// Where the separator `:` is, when `line` starts with a token (`[A-Za-z0-9-]+`, optional spaces).
fn separator_pos(line: &str) -> Option<usize> {
    let mut whitespace_found = false;
    for (i, c) in line.char_indices() {
        if c == ':' {
            return (i >= 1).then_some(i);
        }
        if !whitespace_found && (c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        if i != 0 && c.is_whitespace() {
            whitespace_found = true;
            continue;
        }
        return None;
    }
    None
}

fn is_trailer_line(line: &str) -> bool {
    separator_pos(line).is_some() && !line.starts_with(char::is_whitespace)
}

#[derive(Default)]
struct BlockCount {
    trailers: usize,
    non_trailers: usize,
    possible_continuations: usize,
    recognized_prefix: bool,
}

impl BlockCount {
    fn is_trailer_block(&self) -> bool {
        (self.recognized_prefix && self.trailers * 3 >= self.non_trailers)
            || (self.trailers > 0 && self.non_trailers == 0)
    }

    fn count(&mut self, line: &str) {
        if GIT_GENERATED_PREFIXES.iter().any(|p| line.starts_with(p)) {
            self.trailers += 1;
            self.possible_continuations = 0;
            self.recognized_prefix = true;
        } else if is_trailer_line(line) {
            self.trailers += 1;
            self.possible_continuations = 0;
        } else if line.starts_with(char::is_whitespace) {
            self.possible_continuations += 1;
        } else {
            self.non_trailers += 1 + self.possible_continuations;
            self.possible_continuations = 0;
        }
    }
}

/// Scans the last paragraph from the bottom up, as git's `find_trailer_block_start` does.
fn trailer_block_start(lines: &[&str]) -> Option<usize> {
    let title_end = end_of_title(lines);
    let mut count = BlockCount::default();
    let mut only_spaces = true;
    for index in (title_end..lines.len()).rev() {
        let line = lines[index];
        if is_comment(line) {
            count.non_trailers += count.possible_continuations;
            count.possible_continuations = 0;
        } else if is_blank(line) {
            if only_spaces {
                continue;
            }
            count.non_trailers += count.possible_continuations;
            return count.is_trailer_block().then_some(index + 1);
        } else {
            only_spaces = false;
            count.count(line);
        }
    }
    None
}

fn parse_block(block: &[&str]) -> Vec<(String, String)> {
    let mut trailers: Vec<(String, String)> = Vec::new();
    let mut last_is_trailer = false;
    for line in block {
        if is_comment(line) {
            last_is_trailer = false;
            continue;
        }
        if last_is_trailer && line.starts_with(char::is_whitespace) {
            if let Some((_, value)) = trailers.last_mut() {
                value.push('\n');
                value.push_str(line);
            }
            continue;
        }
        last_is_trailer = match separator_pos(line) {
            Some(sep) if !line.starts_with(char::is_whitespace) => {
                let key = line[..sep].trim().to_string();
                trailers.push((key, line[sep + 1..].to_string()));
                true
            }
            _ => false,
        };
    }
    trailers
        .into_iter()
        .map(|(key, value)| (key, unfold(&value)))
        .collect()
}

/// Collapses each newline and the whitespace after it into one space, then trims.
fn unfold(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(message: &str) -> Vec<(String, String)> {
        commit_message_trailers(message)
    }

    #[test]
    fn reads_the_last_paragraph() {
        let got = pairs("Fix it\n\nBody text.\n\nMeta-Agent-Iterations: 2\nFixes : #4\n");
        assert_eq!(
            got,
            vec![
                ("Meta-Agent-Iterations".into(), "2".into()),
                ("Fixes".into(), "#4".into())
            ]
        );
    }

    #[test]
    fn the_title_is_never_a_trailer() {
        assert!(pairs("Key: value\n").is_empty());
    }

    #[test]
    fn a_mixed_paragraph_is_not_a_trailer_block() {
        assert!(pairs("T\n\nKey: v\nplain prose\n").is_empty());
    }

    #[test]
    fn signed_off_by_lets_a_mostly_trailer_block_count() {
        let got = pairs("T\n\nKey: v\nplain\nSigned-off-by: A <a@b>\n");
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn continuation_lines_are_unfolded() {
        let got = pairs("T\n\nKey: one\n  two\n   three\n");
        assert_eq!(got, vec![("Key".into(), "one two three".into())]);
    }

    #[test]
    fn divider_and_trailing_comments_end_the_message() {
        let got = pairs("T\n\nA: 1\n# comment\n---\nB: 2\n");
        assert_eq!(got, vec![("A".into(), "1".into())]);
    }
}
