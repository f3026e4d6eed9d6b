//! Maxima.

/// The largest value, if any.
pub fn largest(values: &[i64]) -> Option<i64> {
    values.iter().copied().min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_value() {
        assert_eq!(largest(&[3, 9, 2]), Some(9));
    }
}
