//! Where a failure happened, read from its text when the test case names no `file`/`line`:
//! vitest writes no such attributes, but marks the failing line of the test file in the failure
//! text as ` ❯ test/base.test.ts:36:41` (the first such line outside `node_modules` is the
//! test's own code). Pure; never panics on any text.

/// The marker vitest puts before a location in a failure's text.
const VITEST_MARKER: &str = "❯ ";

/// The first ` ❯ path:line:column` (or ` ❯ path:line`) in `body` whose path is not under
/// `node_modules`, as the path and the line.
pub fn runner_location(body: &str) -> Option<(String, u32)> {
    body.lines()
        .filter_map(|line| line.trim_start().strip_prefix(VITEST_MARKER))
        .filter_map(parse_location)
        .find(|(path, _)| !path.split('/').any(|part| part == "node_modules"))
}

/// `path:line:column` or `path:line` (the path may hold colons itself) as path and line.
fn parse_location(text: &str) -> Option<(String, u32)> {
    let (rest, last) = text.trim_end().rsplit_once(':')?;
    let last: u32 = last.parse().ok()?;
    let with_column = rest
        .rsplit_once(':')
        .and_then(|(path, line)| Some((path, line.parse::<u32>().ok()?)));
    let (path, line) = with_column.unwrap_or((rest, last));
    let path = path.trim();
    (!path.is_empty() && !path.contains(char::is_whitespace) && line > 0)
        .then(|| (path.to_owned(), line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn vitest_locations_are_read_from_the_failure_text() {
        let body = "AssertionError: expected 6 to be 7\n\n- 7\n+ 6\n\n ❯ sample.test.js:6:47\n";
        assert_eq!(runner_location(body), Some(("sample.test.js".into(), 6)));
        let nested = " ❯ node_modules/chai/index.js:3:1\n ❯ test/base.test.ts:36:41\n";
        assert_eq!(
            runner_location(nested),
            Some(("test/base.test.ts".into(), 36))
        );
        assert_eq!(
            runner_location(" ❯ src/a.ts:12\n"),
            Some(("src/a.ts".into(), 12))
        );
        assert_eq!(runner_location("no marker here: a.ts:3:4"), None);
        assert_eq!(runner_location(" ❯ not a location\n"), None);
        assert_eq!(runner_location(" ❯ a.ts:0:1\n"), None);
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_panicking(body in "\\PC*") {
            let _ = runner_location(&body);
        }

        #[test]
        fn a_written_location_reads_back(
            dirs in prop::collection::vec("[a-z_][a-z0-9_.-]{0,8}", 0..3),
            file in "[a-z][a-z0-9_-]{0,8}\\.(test|spec)\\.(ts|js|tsx)",
            line in 1u32..100_000,
            column in proptest::option::of(1u32..500),
            before in "[^❯\n]{0,40}",
        ) {
            let mut path = dirs.join("/");
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(&file);
            let at = match column {
                Some(column) => format!("{path}:{line}:{column}"),
                None => format!("{path}:{line}"),
            };
            let body = format!("{before}\n ❯ {at}\n");
            let read = runner_location(&body);
            if path.split('/').any(|part| part == "node_modules") {
                prop_assert_eq!(read, None);
            } else {
                prop_assert_eq!(read, Some((path, line)));
            }
        }
    }
}
