//! Split conformal validity: on exchangeable data, `P(y_test ∈ C(x_test)) ≥ 1 − α` for every method
//! (LAC, APS and RAPS with each last-label rule; for `Exclude` the guarantee is not claimed by MAPIE,
//! so it is not tested).
//!
//! The check is an exact binomial test: `S` independent seeds, each with a fresh calibration split
//! of `n` rows and ONE test row from the same distribution, so the number of covered test rows is
//! Binomial(S, p) with `p ≥ 1 − α`. The test fails when the count falls below the critical value `c`
//! with `P(Binomial(S, 1 − α) < c) ≤ 1e-6` — the stated false-alarm rate for a valid method. Fixed
//! seeds make it deterministic (it either always passes or always fails).

use calibra_calibrate::{ConformalMethod, ConformalPredictor, LastLabel, uniform_draws};

const SEEDS: usize = 3000;
const N_CAL: usize = 60;
const K: usize = 5;
const FALSE_ALARM: f64 = 1e-6;

/// ln C(n, i) p^i (1−p)^(n−i), summed for i < c: the lower tail P(X < c).
fn lower_tail(n: usize, p: f64, c: usize) -> f64 {
    let mut ln_fact = vec![0.0f64; n + 1];
    for i in 1..=n {
        ln_fact[i] = ln_fact[i - 1] + (i as f64).ln();
    }
    (0..c)
        .map(|i| {
            (ln_fact[n] - ln_fact[i] - ln_fact[n - i] + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln())
                .exp()
        })
        .sum()
}

/// The largest c with P(Binomial(n, p) < c) ≤ FALSE_ALARM.
fn critical_value(n: usize, p: f64) -> usize {
    let mut c = 0;
    while lower_tail(n, p, c + 1) <= FALSE_ALARM {
        c += 1;
    }
    c
}

/// `rows` samples of a miscalibrated model: logits `3 g` (g from the uniform stream, centred), model
/// probabilities softmax(z), labels drawn from softmax(2 z) (the model is under-confident).
fn sample(seed: u64, rows: usize) -> (Vec<f64>, Vec<usize>) {
    let u = uniform_draws(seed, rows * (K + 1));
    let (mut probs, mut labels) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let z: Vec<f64> =
            (0..K).map(|c| 3.0 * (u[r * (K + 1) + c] - 0.5) + if c == 0 { 0.8 } else { 0.0 }).collect();
        let soft = |t: f64| {
            let e: Vec<f64> = z.iter().map(|v| (t * v).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(|v| v / s).collect::<Vec<f64>>()
        };
        probs.extend(soft(1.0));
        let truth = soft(2.0);
        let draw = u[r * (K + 1) + K];
        let mut acc = 0.0;
        let mut y = K - 1;
        for (c, p) in truth.iter().enumerate() {
            acc += p;
            if draw < acc {
                y = c;
                break;
            }
        }
        labels.push(y);
    }
    (probs, labels)
}

#[test]
fn marginal_coverage_is_at_least_one_minus_alpha_binomial_test() {
    let methods = [
        ConformalMethod::Lac,
        ConformalMethod::Aps { last_label: LastLabel::Include },
        ConformalMethod::Aps { last_label: LastLabel::Randomized },
        ConformalMethod::Raps { last_label: LastLabel::Include, lambda: 0.1, k_reg: 1 },
        ConformalMethod::Raps { last_label: LastLabel::Randomized, lambda: 0.1, k_reg: 1 },
    ];
    for alpha in [0.1, 0.2] {
        let c = critical_value(SEEDS, 1.0 - alpha);
        // The critical value is well below the expected count and the test has power: a method with
        // coverage 1 − α − 0.05 would fall below it (its mean is under c).
        assert!(c < ((1.0 - alpha) * SEEDS as f64) as usize);
        assert!(((1.0 - alpha - 0.05) * SEEDS as f64) < c as f64, "critical value {c} gives no power");
        for method in methods {
            let mut covered = 0;
            for s in 0..SEEDS {
                let (cal_p, cal_y) = sample(1_000_003 * s as u64 + 17, N_CAL);
                let (test_p, test_y) = sample(1_000_003 * s as u64 + 91, 1);
                let cal_u = uniform_draws(s as u64 ^ 0xA5A5, N_CAL);
                let fitted = ConformalPredictor::fit(method, &cal_p, K, &cal_y, alpha, &cal_u).unwrap();
                let set = &fitted.predict(&test_p, K, &uniform_draws(s as u64 ^ 0x5A5A, 1)).unwrap()[0];
                covered += usize::from(set.contains(&test_y[0]));
            }
            assert!(
                covered >= c,
                "{method:?} at α = {alpha}: {covered} of {SEEDS} test rows covered, below the critical value {c} \
                 (false-alarm rate {FALSE_ALARM})"
            );
        }
    }
}
