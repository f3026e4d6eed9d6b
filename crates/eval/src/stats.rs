//! The statistics of an evaluation, pure functions only: the Wilson score interval for a pass
//! rate, the unbiased pass@k estimator, mean and median, and the tests `eval compare` uses (the
//! exact sign test on paired tasks, which is McNemar's exact test when each task ran once; the
//! two-proportion z-test when the tasks are not paired; a paired bootstrap interval).

pub use meta_agent_protocol::eval::Spread;

/// z for a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of `successes` out of `n` at `z` (95 %: [`Z95`]); `(0, 1)` when
/// nothing ran.
pub fn wilson(successes: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let margin = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z2 / n;
    (
        ((centre - margin) / denominator).max(0.0),
        ((centre + margin) / denominator).min(1.0),
    )
}

/// The unbiased estimator of pass@k for one task with `n` runs of which `c` passed (Chen et
/// al. 2021): `1 - C(n-c, k) / C(n, k)`, computed as a product so large `n` does not overflow.
/// `None` when `k` is 0 or more than `n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let mut all_fail = 1.0;
    for i in (n - c + 1)..=n {
        all_fail *= 1.0 - k as f64 / i as f64;
    }
    Some(1.0 - all_fail)
}

/// Two-sided exact sign test: the probability, under "neither is better", of a split of the
/// `better + worse` discordant pairs at least this uneven. 1 when there are none.
pub fn sign_test(better: u64, worse: u64) -> f64 {
    let n = better + worse;
    if n == 0 {
        return 1.0;
    }
    let low = better.min(worse);
    let mut tail = 0.0;
    for i in 0..=low {
        tail += binomial_half(n, i);
    }
    (2.0 * tail).min(1.0)
}

/// C(n, i) / 2^n, through logarithms.
fn binomial_half(n: u64, i: u64) -> f64 {
    (ln_choose(n, i) - n as f64 * std::f64::consts::LN_2).exp()
}

fn ln_choose(n: u64, k: u64) -> f64 {
    let k = k.min(n - k);
    (0..k)
        .map(|j| ((n - j) as f64).ln() - ((j + 1) as f64).ln())
        .sum()
}

/// Two-sided p-value of the pooled two-proportion z-test (`a` of `n` against `b` of `m`).
pub fn two_proportion_p(a: u64, n: u64, b: u64, m: u64) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    let (n_f, m_f) = (n as f64, m as f64);
    let pooled = (a + b) as f64 / (n_f + m_f);
    let se = (pooled * (1.0 - pooled) * (1.0 / n_f + 1.0 / m_f)).sqrt();
    if se == 0.0 {
        return 1.0;
    }
    let z = (b as f64 / m_f - a as f64 / n_f) / se;
    (2.0 * (1.0 - normal_cdf(z.abs()))).clamp(0.0, 1.0)
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

fn erf(x: f64) -> f64 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    sign * (1.0 - poly * (-x * x).exp())
}

/// A 95 % percentile bootstrap interval of the mean of paired differences, resampling the
/// pairs `rounds` times with a fixed seed (the same input always gives the same interval).
pub fn bootstrap_mean_ci(differences: &[f64], rounds: usize, seed: u64) -> (f64, f64) {
    if differences.is_empty() {
        return (0.0, 0.0);
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let n = differences.len();
    let mut means: Vec<f64> = (0..rounds.max(1))
        .map(|_| (0..n).map(|_| differences[rng.usize(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((means.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn wilson_matches_the_textbook_values() {
        // 7 of 10 at 95 %: (0.3968, 0.8922), e.g. R's prop.test(correct = FALSE).
        let (lo, hi) = wilson(7, 10, Z95);
        assert!(close(lo, 0.39677), "{lo}");
        assert!(close(hi, 0.89223), "{hi}");
        let (lo, hi) = wilson(0, 5, Z95);
        assert!(close(lo, 0.0) && close(hi, 0.43448), "{lo} {hi}");
        assert_eq!(wilson(0, 0, Z95), (0.0, 1.0));
    }

    #[test]
    fn pass_at_k_is_the_unbiased_estimator() {
        // n = 5, c = 2, k = 2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
        assert!(close(pass_at_k(5, 2, 2).unwrap(), 0.7));
        assert!(close(pass_at_k(5, 2, 1).unwrap(), 0.4));
        assert_eq!(pass_at_k(3, 0, 2), Some(0.0));
        assert_eq!(pass_at_k(3, 2, 2), Some(1.0));
        assert_eq!(pass_at_k(3, 1, 4), None);
    }

    #[test]
    fn spread_has_mean_and_median() {
        let spread = Spread::of(&[4.0, 1.0, 3.0, 2.0]);
        assert!(close(spread.mean, 2.5) && close(spread.median, 2.5));
        assert_eq!(Spread::of(&[5.0, 1.0, 2.0]).median, 2.0);
    }

    #[test]
    fn the_sign_test_is_exact() {
        // 0 of 6 discordant pairs one way: 2 * (1/64).
        assert!(close(sign_test(0, 6), 0.03125));
        assert!(close(sign_test(1, 5), 0.21875));
        assert_eq!(sign_test(0, 0), 1.0);
    }

    #[test]
    fn the_two_proportion_test_matches_a_reference() {
        // 45/100 against 60/100, pooled: z = 2.12398, p = 0.033672 (statsmodels proportions_ztest).
        assert!((two_proportion_p(45, 100, 60, 100) - 0.033672).abs() < 1e-5);
        assert!(close(normal_cdf(1.959_964), 0.975));
    }

    #[test]
    fn the_bootstrap_is_reproducible_and_brackets_the_mean() {
        let diffs = [-1.0, -1.0, 0.0, -1.0, 0.0, -1.0];
        let (lo, hi) = bootstrap_mean_ci(&diffs, 2000, 7);
        assert_eq!((lo, hi), bootstrap_mean_ci(&diffs, 2000, 7));
        assert!(lo <= -0.66 && (-0.67..=0.0).contains(&hi), "{lo} {hi}");
    }
}
