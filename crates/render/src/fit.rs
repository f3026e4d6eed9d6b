//! What is written to GitHub fits GitHub's limits and stays valid Markdown: comment and pull
//! request bodies are capped at 65,536 characters, the step summary at 1 MiB. A text over its
//! cap is cut at a line boundary, any code fence or `<details>` block left open by the cut is
//! closed, and a last line says how much was left out and where the whole text is (the run's
//! artifact). Pure.

/// GitHub's cap on an issue comment's or a pull request's body, in characters.
pub const MAX_BODY_CHARS: usize = 65_536;
/// GitHub's cap on a step's summary (`GITHUB_STEP_SUMMARY`), in bytes.
pub const MAX_STEP_SUMMARY_BYTES: usize = 1 << 20;

/// How a text is measured against its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Unicode scalar values (GitHub's "characters" for bodies).
    Chars,
    /// UTF-8 bytes (the step summary's limit).
    Bytes,
}

impl Measure {
    fn of(self, text: &str) -> usize {
        match self {
            Measure::Chars => text.chars().count(),
            Measure::Bytes => text.len(),
        }
    }
}

/// A text cut to fit, if it had to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub text: String,
    /// Lines left out (0 when the text fitted as it was).
    pub lines_left_out: usize,
}

/// `text` within `cap` (measured by `measure`): unchanged when it fits; otherwise its first
/// lines, open fences and `<details>` closed, and a note naming how many lines were left out
/// and `whole` (where the whole text is, e.g. the run's artifact).
pub fn fit(text: &str, cap: usize, measure: Measure, whole: &str) -> Fitted {
    if measure.of(text) <= cap {
        return Fitted {
            text: text.to_owned(),
            lines_left_out: 0,
        };
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = String::new();
    let mut used = 0;
    let mut open = Open::default();
    for (index, line) in lines.iter().enumerate() {
        let after = open.after(line);
        let tail = tail_note(lines.len() - index, &after, whole);
        if used + measure.of(line) + measure.of(&tail) > cap {
            break;
        }
        kept.push_str(line);
        used += measure.of(line);
        open = after;
    }
    let left_out = lines.len() - kept.split_inclusive('\n').count();
    let mut tail = tail_note(left_out, &open, whole);
    if measure.of(&kept) + measure.of(&tail) > cap {
        // Even the note does not fit beside one line: the note alone, cut to the cap.
        tail = cut(&tail, cap, measure);
        kept.clear();
    }
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(&tail);
    Fitted {
        text: kept,
        lines_left_out: left_out,
    }
}

/// The blocks a cut would leave open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Open {
    /// The fence of an open code block (three or more backticks or tildes).
    fence: Option<String>,
    /// `<details>` blocks opened and not yet closed (outside code).
    details: usize,
}

impl Open {
    /// The open blocks once `line` is kept.
    fn after(&self, line: &str) -> Open {
        let trimmed = line.trim_start();
        let mut next = self.clone();
        match &self.fence {
            Some(fence) => {
                let line = trimmed.trim_end();
                let mark = fence.chars().next().unwrap_or('`');
                if line.starts_with(fence.as_str()) && line.chars().all(|c| c == mark) {
                    next.fence = None;
                }
            }
            None => {
                if let Some(fence) = opening_fence(trimmed) {
                    next.fence = Some(fence);
                } else {
                    next.details += trimmed.matches("<details").count();
                    next.details = next
                        .details
                        .saturating_sub(trimmed.matches("</details>").count());
                }
            }
        }
        next
    }

    /// What closes the open blocks.
    fn closing(&self) -> String {
        let mut out = String::new();
        if let Some(fence) = &self.fence {
            out.push_str(fence);
            out.push('\n');
        }
        for _ in 0..self.details {
            out.push_str("\n</details>\n");
        }
        out
    }
}

/// The fence a line opens, if it opens one (```` ```lang ```` or `~~~`).
fn opening_fence(line: &str) -> Option<String> {
    let mark = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run: String = line.chars().take_while(|c| *c == mark).collect();
    (run.chars().count() >= 3).then_some(run)
}

/// Closes what is open and says what was left out.
fn tail_note(left_out: usize, open: &Open, whole: &str) -> String {
    format!(
        "{}\n> **Cut to fit GitHub's limit:** {left_out} more line{} left out; {whole}.\n",
        open.closing(),
        if left_out == 1 { "" } else { "s" }
    )
}

/// The first characters (or bytes, at a character boundary) of `text` within `cap`.
fn cut(text: &str, cap: usize, measure: Measure) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let mut next = out.clone();
        next.push(c);
        if measure.of(&next) > cap {
            break;
        }
        out = next;
    }
    out
}

/// Whether every code fence of `text` is closed and its `<details>` blocks balance.
pub fn balanced(text: &str) -> bool {
    let open = text
        .split_inclusive('\n')
        .fold(Open::default(), |open, line| open.after(line));
    open == Open::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_that_fits_is_unchanged() {
        let fitted = fit("short\n", 100, Measure::Chars, "see the artifact");
        assert_eq!(fitted.text, "short\n");
        assert_eq!(fitted.lines_left_out, 0);
    }

    #[test]
    fn a_cut_inside_a_fence_and_details_closes_both_and_counts_what_was_left() {
        let mut text = String::from("# Report\n\n<details><summary>log</summary>\n\n```text\n");
        for i in 0..500 {
            text.push_str(&format!("line {i} of the log\n"));
        }
        text.push_str("```\n</details>\n");
        let fitted = fit(
            &text,
            2_000,
            Measure::Chars,
            "the whole report is in the artifact",
        );
        assert!(
            fitted.text.chars().count() <= 2_000,
            "{}",
            fitted.text.len()
        );
        assert!(balanced(&fitted.text), "{}", fitted.text);
        assert!(fitted.text.starts_with("# Report\n"));
        assert!(fitted.text.contains("line 0 of the log"));
        assert!(fitted.lines_left_out > 400);
        assert!(
            fitted.text.contains(&format!(
                "{} more lines left out; the whole report is in the artifact.",
                fitted.lines_left_out
            )),
            "{}",
            fitted.text
        );
    }

    #[test]
    fn bytes_are_measured_for_the_step_summary() {
        let text = "é".repeat(1_000) + "\n" + &"ü".repeat(1_000) + "\n";
        let fitted = fit(&text, 2_500, Measure::Bytes, "see the artifact");
        assert!(fitted.text.len() <= 2_500);
        assert_eq!(fitted.lines_left_out, 1);
    }

    #[test]
    fn balance_is_judged_by_fences_and_details() {
        assert!(balanced("a\n```\ncode\n```\n<details>x</details>\n"));
        assert!(!balanced("a\n```rust\ncode\n"));
        assert!(!balanced("<details>\nx\n"));
    }
}
