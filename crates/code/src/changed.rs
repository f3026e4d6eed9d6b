//! What a change touched, read as code: the lines a unified diff adds or changes, per file (new
//! side), and the definitions that hold them. The diff is read by its hunk headers and line
//! prefixes (git's own format, never the code inside it); the definitions come from the
//! language readers.

use super::resolve::enclosing;
use super::sources::Sources;

/// Files of one diff read at most.
const MAX_FILES: usize = 50;
/// Definitions named per file at most.
const MAX_DEFINITIONS: usize = 8;

/// The changed lines of each file of a unified diff, new side, in diff order: a removal counts
/// at the line that now follows it. Deleted files are left out.
pub fn changed_lines(diff: &str) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    let mut current: Option<usize> = None;
    let mut line = 0usize;
    let mut in_hunk = false;
    for text in diff.lines() {
        if let Some(path) = text.strip_prefix("+++ ") {
            in_hunk = false;
            current = path.strip_prefix("b/").map(|path| {
                out.push((path.to_owned(), Vec::new()));
                out.len() - 1
            });
            continue;
        }
        if text.starts_with("diff --git ") {
            (in_hunk, current) = (false, None);
            continue;
        }
        if let Some(start) = hunk_start(text) {
            (line, in_hunk) = (start, true);
            continue;
        }
        let Some((_, lines)) = current.filter(|_| in_hunk).and_then(|at| out.get_mut(at)) else {
            continue;
        };
        match text.as_bytes().first() {
            Some(b'+') => {
                lines.push(line.max(1));
                line += 1;
            }
            Some(b'-') => lines.push(line.max(1)),
            Some(b' ') => line += 1,
            _ => {}
        }
    }
    for (_, lines) in &mut out {
        lines.sort_unstable();
        lines.dedup();
    }
    out.truncate(MAX_FILES);
    out
}

/// The new side's first line of a hunk header `@@ -a,b +c,d @@ …`.
fn hunk_start(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("@@ -")?;
    let (_, new) = rest.split_once(" +")?;
    let end = new.find([',', ' '])?;
    new[..end].parse().ok()
}

/// Each changed file with the definitions (`Owner.name` for methods) its changed lines are in,
/// in order of first change.
pub fn changed_definitions(files: &mut Sources, diff: &str) -> Vec<(String, Vec<String>)> {
    changed_lines(diff)
        .into_iter()
        .map(|(path, lines)| {
            let mut names: Vec<String> = Vec::new();
            for line in lines {
                if let Some(def) = enclosing(files, &path, line) {
                    let name = def.qualified();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            names.truncate(MAX_DEFINITIONS);
            (path, names)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/winstats/window.py b/winstats/window.py\nindex cbeb50e..52e436b 100644\n--- a/winstats/window.py\n+++ b/winstats/window.py\n@@ -3,4 +3,4 @@\n \n def windows(values, size):\n     \"\"\"Every run of `size` consecutive values.\"\"\"\n-    return [values[i : i + size] for i in range(len(values) - size)]\n+    return [values[i : i + size] for i in range(len(values) - size + 1)]\ndiff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\ndiff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+def f():\n+    return 1\n";

    #[test]
    fn changed_lines_are_counted_on_the_new_side() {
        assert_eq!(
            changed_lines(DIFF),
            [
                ("winstats/window.py".to_owned(), vec![6]),
                ("new.py".to_owned(), vec![1, 2]),
            ]
        );
    }

    #[test]
    fn the_definitions_a_change_is_in() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("winstats")).unwrap();
        std::fs::write(
            dir.path().join("winstats/window.py"),
            "\"\"\"Windows.\"\"\"\n\n\ndef windows(values, size):\n    \"\"\"Every run of `size` consecutive values.\"\"\"\n    return [values[i : i + size] for i in range(len(values) - size + 1)]\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("new.py"), "def f():\n    return 1\n").unwrap();
        let found = changed_definitions(&mut Sources::new(dir.path()), DIFF);
        assert_eq!(
            found,
            [
                ("winstats/window.py".to_owned(), vec!["windows".to_owned()]),
                ("new.py".to_owned(), vec!["f".to_owned()]),
            ]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn any_diff_text_reads_without_panic_and_lines_stay_in_their_hunk(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    "\\+\\+\\+ b/[a-z]{1,6}\\.py",
                    "@@ -[0-9]{1,3},[0-9]{1,2} \\+[0-9]{1,3},[0-9]{1,2} @@[ a-z]{0,10}",
                    "[ +-][ -~]{0,20}",
                    "[ -~]{0,20}",
                ],
                0..40,
            )
        ) {
            let diff = lines.join("\n");
            let hunk_max: usize = lines
                .iter()
                .filter_map(|l| hunk_start(l))
                .max()
                .unwrap_or(0);
            for (path, changed) in changed_lines(&diff) {
                proptest::prop_assert!(!path.is_empty());
                for line in changed {
                    proptest::prop_assert!(line >= 1 && line <= hunk_max + lines.len());
                }
            }
        }
    }
}
