//! The price table: US dollars per million input and output tokens, by model name prefix.
//!
//! Approximate list prices, used to enforce the cost cap and to report spend; a model not in the
//! table costs 0 (local servers, new models). Not a billing record.

use super::Usage;

/// (model name prefix, dollars per million input tokens, dollars per million output tokens).
/// Longer prefixes come before shorter ones that they extend.
const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("o4-mini", 1.10, 4.40),
    ("claude-opus-4", 15.00, 75.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-3-7-sonnet", 3.00, 15.00),
    ("claude-3-5-sonnet", 3.00, 15.00),
    ("claude-haiku-4", 1.00, 5.00),
    ("claude-3-5-haiku", 0.80, 4.00),
];

/// The cost of `usage` on `model`, 0 when the model is unknown.
pub fn cost_usd(model: &str, usage: Usage) -> f64 {
    let Some(&(_, input, output)) = PRICES.iter().find(|(prefix, ..)| model.starts_with(prefix))
    else {
        return 0.0;
    };
    (usage.input_tokens as f64 * input + usage.output_tokens as f64 * output) / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_by_prefix_and_unknown_at_zero() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
        };
        assert!((cost_usd("gpt-4o-mini-2024-07-18", usage) - 0.21).abs() < 1e-9);
        assert!((cost_usd("gpt-4o", usage) - 3.5).abs() < 1e-9);
        assert!((cost_usd("claude-sonnet-4-5", usage) - 4.5).abs() < 1e-9);
        assert_eq!(cost_usd("llama3:8b", usage), 0.0);
    }
}
