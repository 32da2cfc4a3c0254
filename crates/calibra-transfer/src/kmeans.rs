//! Seeded k-means (Lloyd) with greedy k-means++ seeding, after scikit-learn's `KMeans(n_init=1)`:
//! `2 + ⌊ln k⌋` candidate centres per step, the one that most lowers the potential wins; Lloyd
//! iterations until the labels stop changing or the total squared centre shift is at most
//! `1e-4 · mean column variance`, at most 300 iterations; an empty cluster is moved to the point
//! farthest from its centre. The random stream (ChaCha8) is not numpy's, so the initial centres
//! differ from scikit-learn's for the same seed; only the procedure is the same.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

const ROWS: usize = 1024;

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Nearest centre (lowest index on ties) and its squared distance, per row.
fn assign(x: &[f64], n: usize, d: usize, centres: &[f64], k: usize) -> Vec<(usize, f64)> {
    let starts: Vec<usize> = (0..n).step_by(ROWS).collect();
    starts
        .par_iter()
        .flat_map_iter(|&s| {
            (s..(s + ROWS).min(n)).map(move |i| {
                let row = &x[i * d..(i + 1) * d];
                let mut best = (0, f64::INFINITY);
                for c in 0..k {
                    let dd = dist2(row, &centres[c * d..(c + 1) * d]);
                    if dd < best.1 {
                        best = (c, dd);
                    }
                }
                best
            })
        })
        .collect()
}

/// Labels of `k` clusters of the row-major `x` (`n × d`, `k ≤ n`).
pub fn kmeans(x: &[f64], n: usize, d: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut centres = kmeans_pp(x, n, d, k, &mut rng);
    let mut var_sum = 0.0;
    for j in 0..d {
        let m = (0..n).map(|i| x[i * d + j]).sum::<f64>() / n as f64;
        var_sum += (0..n).map(|i| (x[i * d + j] - m).powi(2)).sum::<f64>() / n as f64;
    }
    let tol = 1e-4 * var_sum / d as f64;
    let mut labels: Vec<usize> = vec![usize::MAX; n];
    for _ in 0..300 {
        let a = assign(x, n, d, &centres, k);
        let new_labels: Vec<usize> = a.iter().map(|p| p.0).collect();
        if new_labels == labels {
            return labels;
        }
        labels = new_labels;
        let mut sums = vec![0.0; k * d];
        let mut counts = vec![0usize; k];
        for (i, &c) in labels.iter().enumerate() {
            counts[c] += 1;
            for (s, v) in sums[c * d..(c + 1) * d].iter_mut().zip(&x[i * d..(i + 1) * d]) {
                *s += v;
            }
        }
        // Empty clusters take the points farthest from their centres.
        let mut far: Vec<usize> = (0..n).collect();
        far.sort_by(|&p, &q| a[q].1.total_cmp(&a[p].1).then(p.cmp(&q)));
        let mut next_far = 0;
        for c in 0..k {
            if counts[c] == 0 {
                let p = far[next_far];
                next_far += 1;
                let old = labels[p];
                counts[old] -= 1;
                for j in 0..d {
                    sums[old * d + j] -= x[p * d + j];
                }
                labels[p] = c;
                counts[c] = 1;
                sums[c * d..(c + 1) * d].copy_from_slice(&x[p * d..(p + 1) * d]);
            }
        }
        let mut shift = 0.0;
        for c in 0..k {
            for j in 0..d {
                let v = sums[c * d + j] / counts[c].max(1) as f64;
                shift += (v - centres[c * d + j]).powi(2);
                centres[c * d + j] = v;
            }
        }
        if shift <= tol {
            break;
        }
    }
    assign(x, n, d, &centres, k).into_iter().map(|p| p.0).collect()
}

/// Greedy k-means++ seeding.
fn kmeans_pp(x: &[f64], n: usize, d: usize, k: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    let trials = 2 + (k as f64).ln().floor() as usize;
    let mut centres = Vec::with_capacity(k * d);
    let first = rng.random_range(0..n);
    centres.extend_from_slice(&x[first * d..(first + 1) * d]);
    let mut closest: Vec<f64> =
        (0..n).map(|i| dist2(&x[i * d..(i + 1) * d], &x[first * d..(first + 1) * d])).collect();
    let mut pot: f64 = closest.iter().sum();
    for _ in 1..k {
        let mut cum = Vec::with_capacity(n);
        let mut acc = 0.0;
        for v in &closest {
            acc += v;
            cum.push(acc);
        }
        let mut best: Option<(f64, usize, Vec<f64>)> = None;
        for _ in 0..trials {
            let r = rng.random::<f64>() * pot;
            let cand = cum.partition_point(|c| *c < r).min(n - 1);
            let row = &x[cand * d..(cand + 1) * d];
            let dists: Vec<f64> =
                (0..n).map(|i| closest[i].min(dist2(&x[i * d..(i + 1) * d], row))).collect();
            let p: f64 = dists.iter().sum();
            if best.as_ref().is_none_or(|b| p < b.0) {
                best = Some((p, cand, dists));
            }
        }
        let (p, cand, dists) = best.expect("at least two trials");
        pot = p;
        closest = dists;
        centres.extend_from_slice(&x[cand * d..(cand + 1) * d]);
    }
    centres
}
