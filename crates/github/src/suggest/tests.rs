//! Suggestions read from real unified diffs: applied together they make the fixed file, each
//! stays within the pull request's hunks and the size limit.

use proptest::prelude::*;

use super::*;

/// A git-format diff of one file from `old` to `new` (three lines of context).
fn diff(path: &str, old: &str, new: &str) -> String {
    let body = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .to_string();
    if body.is_empty() {
        return String::new();
    }
    format!(
        "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n{body}"
    )
}

/// `old` with every suggestion applied (they do not overlap), bottom first.
fn apply(old: &str, suggestions: &[Suggestion]) -> String {
    let mut lines: Vec<String> = old.lines().map(str::to_owned).collect();
    let mut sorted = suggestions.to_vec();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.start));
    for s in sorted {
        lines.splice(s.start - 1..s.end, s.replacement.iter().cloned());
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn everywhere(path: &str) -> Commentable {
    Commentable {
        path: path.into(),
        ranges: vec![(1, usize::MAX / 2)],
    }
}

#[test]
fn a_replaced_line_an_insertion_and_a_deletion() {
    let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
    let new = "a\nB\nc\nd\ne\nf\ng\nh\nnew\ni\nj\nl\n";
    let found = suggestions(&diff("x.py", old, new), &[everywhere("x.py")]);
    assert_eq!(
        found,
        vec![
            Suggestion {
                path: "x.py".into(),
                start: 2,
                end: 2,
                replacement: vec!["B".into()],
            },
            Suggestion {
                path: "x.py".into(),
                start: 8,
                end: 8,
                replacement: vec!["h".into(), "new".into()],
            },
            Suggestion {
                path: "x.py".into(),
                start: 11,
                end: 11,
                replacement: vec![],
            },
        ]
    );
    assert_eq!(apply(old, &found), new);
    assert_eq!(change_count(&diff("x.py", old, new)), 3);
}

#[test]
fn insertions_around_the_first_line_share_their_anchor() {
    let old = "x\ny\n";
    let new = "a\nx\nb\ny\n";
    let found = suggestions(&diff("x.py", old, new), &[everywhere("x.py")]);
    assert_eq!(apply(old, &found), new, "{found:?}");
    assert_eq!(found.len(), 1, "{found:?}");
}

#[test]
fn only_small_changes_inside_the_pull_requests_hunks_are_suggested() {
    let old: String = (1..=40).map(|n| format!("line {n}\n")).collect();
    let mut new = old.replace("line 5\n", "line five\n");
    new = new.replace("line 30\n", "line thirty\n");
    let block: String = (1..=20).map(|n| format!("added {n}\n")).collect();
    new = new.replace("line 20\n", &format!("line 20\n{block}"));
    let fix = diff("calc.py", &old, &new);
    let pull_patch = "@@ -10,3 +10,4 @@\n line 10\n+a\n line 11\n line 12\n@@ -27,4 +28,6 @@\n line 27\n+p\n+q\n line 28\n line 29\n line 30\n";
    let allowed = Commentable::from_patch("calc.py", pull_patch);
    assert_eq!(allowed.ranges, vec![(10, 13), (28, 33)]);
    let found = suggestions(&fix, &[allowed]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].start, found[0].end), (30, 30));
    assert!(
        suggestions(&fix, &[]).is_empty(),
        "no file of the pull request"
    );
}

#[test]
fn new_deleted_renamed_and_binary_files_get_no_suggestion() {
    let fix = "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x\ndiff --git a/g.py b/g.py\ndeleted file mode 100644\n--- a/g.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\ndiff --git a/o.py b/p.py\nsimilarity index 90%\nrename from o.py\nrename to p.py\n--- a/o.py\n+++ b/p.py\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/b.bin b/b.bin\nBinary files a/b.bin and b/b.bin differ\n";
    let all: Vec<Commentable> = ["n.py", "g.py", "o.py", "p.py", "b.bin"]
        .into_iter()
        .map(everywhere)
        .collect();
    assert_eq!(suggestions(fix, &all), Vec::new());
    assert_eq!(change_count(fix), 4, "one change per file");
}

proptest! {
    #[test]
    fn suggestions_applied_together_make_the_fixed_file(
        old in prop::collection::vec("[a-e]{0,3}", 1..40),
        edits in prop::collection::vec((0usize..60, 0u8..3, "[v-z]{1,3}"), 0..8),
    ) {
        let mut new = old.clone();
        for (at, kind, text) in &edits {
            let at = at % (new.len() + 1);
            match kind {
                0 => new.insert(at, text.clone()),
                1 if at < new.len() => { new.remove(at); }
                _ if at < new.len() => new[at] = text.clone(),
                _ => {}
            }
        }
        let old_text: String = old.iter().map(|l| format!("{l}\n")).collect();
        let new_text: String = new.iter().map(|l| format!("{l}\n")).collect();
        let fix = diff("f.txt", &old_text, &new_text);
        let found: Vec<Suggestion> = unified::parse(&fix)
            .iter()
            .flat_map(|file| file.hunks.iter().flat_map(|hunk| changes("f.txt", hunk)))
            .collect();
        for pair in found.windows(2) {
            prop_assert!(pair[0].end < pair[1].start, "{:?}", found);
        }
        prop_assert_eq!(apply(&old_text, &found), new_text);
    }
}
