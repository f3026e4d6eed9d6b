//! The pull-request review that offers a fork's pull request its verified fix as GitHub
//! suggestions: the review's body (with the hidden marker that finds it again, so a re-run does
//! not post it twice) and each suggestion comment. Pure.

use super::status::fence_for;

/// How the bot's suggestion review starts (hidden); the fix's hash follows.
pub const REVIEW_MARKER: &str = "<!-- meta-agent:suggestions ";

/// The hidden line that names the fix a review carries.
pub fn review_marker(fix_hash: &str) -> String {
    format!("{REVIEW_MARKER}{fix_hash} -->")
}

/// The review's body: what the suggestions are, and where the rest of the fix is.
pub fn review_body(count: usize, of: usize, fix_hash: &str) -> String {
    let what = if count == of {
        format!(
            "the whole fix as {count} suggestion{}",
            if count == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "{count} of the fix's {of} changes as suggestions (the others lie outside this pull \
             request's own lines; the whole fix is the patch in meta-agent's status comment)"
        )
    };
    format!(
        "{}\nmeta-agent verified a fix with the repository's gates. This review holds {what}: \
         **Commit suggestion** on each, or add them to a batch and commit once.\n",
        review_marker(fix_hash)
    )
}

/// One suggestion comment: the lines that replace the commented ones.
pub fn suggestion_comment(replacement: &[String]) -> String {
    let text = replacement.join("\n");
    let fence = fence_for(&text);
    if replacement.is_empty() {
        return format!("Remove these lines:\n\n{fence}suggestion\n{fence}\n");
    }
    format!("{fence}suggestion\n{text}\n{fence}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_texts() {
        insta::assert_snapshot!("review_body_whole", review_body(2, 2, "0123456789abcdef"));
        insta::assert_snapshot!("review_body_part", review_body(1, 3, "0123456789abcdef"));
        insta::assert_snapshot!(
            "suggestion_with_backticks",
            suggestion_comment(&[
                "    return sum(values) / len(values)".into(),
                "x = ```".into()
            ])
        );
        insta::assert_snapshot!("suggestion_removal", suggestion_comment(&[]));
    }
}
