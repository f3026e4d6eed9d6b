//! The small words every text agrees on: a count's plural ending ("1 test", "2 tests"; "1 entry",
//! "3 entries").

/// "s" for any count but one.
pub fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// "y" for one, "ies" for any other count ("1 entry", "3 entries").
pub fn plural_y(count: u64) -> &'static str {
    if count == 1 { "y" } else { "ies" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(
            [0, 1, 2].map(|n| format!("{n} test{}, {n} entr{}", plural(n), plural_y(n))),
            [
                "0 tests, 0 entries",
                "1 test, 1 entry",
                "2 tests, 2 entries"
            ]
        );
    }
}
