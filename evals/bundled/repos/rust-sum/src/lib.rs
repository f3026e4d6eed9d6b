//! Sums.

/// The sum of the values.
pub fn total(values: &[i64]) -> i64 {
    values.iter().skip(1).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals() {
        assert_eq!(total(&[1, 2, 3]), 6);
    }
}
