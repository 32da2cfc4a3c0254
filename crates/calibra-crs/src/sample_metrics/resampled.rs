//! The sample metrics of one [`SampleTable`] on many resamples of its rows (bootstrap replicates), with
//! the table's sorting, validation and per-row work done once instead of once per resample.
//!
//! A [`ResampledMetrics`] is prepared once per table (`O(n·K log n)`): every column's scores sorted into
//! tie groups (the one-vs-rest columns; the observed cells of each multilabel label), and every row's
//! validity, top-label confidence, ECE bin, correctness and Brier term. A [`Resample`] (a multiset of
//! row indices, kept both in draw order and as a count per row) is then evaluated in `O(n·K)` with no
//! sorting, validation or allocation proportional to `n`:
//!
//! - **AUROC**: a weighted Mann–Whitney pass over each column's precomputed tie groups. With `P_g`,
//!   `N_g` the positive and negative counts of group `g` (groups in decreasing score) and `A_g` the
//!   negatives above it, `2U = 2·n₊·n₋ − Σ_g P_g (2·A_g + N_g)` (mid-rank ties: a tied pair counts ½),
//!   exact in integers and divided once, as in `calibra_metrics::binary_auroc`.
//! - **ECE, Brier, accuracy**: the precomputed per-row terms summed over the resample **in draw order**,
//!   so every floating-point sum is the same sequence of additions as in [`SampleTable::metric`].
//!
//! Every value is therefore bit-for-bit the value [`SampleTable::metric`] gives on the same rows
//! (checked against it in this module's tests), including the undefined cases: a single-label resample
//! holding a row that fails validation (probabilities not summing to 1, a class out of range) is
//! undefined for AUROC, ECE, accuracy and the multiclass Brier score, as there; a NaN score makes its
//! AUROC column NaN, as there.

use calibra_metrics::input::validate_probabilities;
use calibra_metrics::{Binning, bin_index};

use super::{SampleMetric, SampleTable, SampleTargets};

/// A multiset of row indices of a table with `n` rows: the rows in draw order and the count of each row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resample {
    rows: Vec<usize>,
    counts: Vec<u32>,
}

impl Resample {
    /// The multiset `rows` of a table with `n` rows.
    ///
    /// # Panics
    /// If a row index is `≥ n`.
    pub fn new(rows: Vec<usize>, n: usize) -> Self {
        let mut resample = Resample::default();
        resample.refill(n, |buffer| buffer.extend_from_slice(&rows));
        resample
    }

    /// Every row once (`0..n`).
    pub fn all(n: usize) -> Self {
        Resample { rows: (0..n).collect(), counts: vec![1; n] }
    }

    /// Replaces the content, keeping the buffers: `fill` pushes the rows (in draw order) into an empty
    /// vector.
    ///
    /// # Panics
    /// If a row index is `≥ n`.
    pub fn refill(&mut self, n: usize, fill: impl FnOnce(&mut Vec<usize>)) {
        self.rows.clear();
        fill(&mut self.rows);
        self.counts.clear();
        self.counts.resize(n, 0);
        for &i in &self.rows {
            assert!(i < n, "row {i} out of range for a table of {n} rows");
            self.counts[i] += 1;
        }
    }

    /// The rows in draw order.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }
}

/// One score column sorted in decreasing order into tie groups (`-0.0` ties `0.0`); NaN scores apart.
#[derive(Debug, Clone, Default)]
struct RankedColumn {
    /// Row of each entry, by decreasing score.
    rows: Vec<u32>,
    /// Whether each entry is a positive.
    positive: Vec<bool>,
    /// Exclusive end (in `rows`) of each tie group.
    group_ends: Vec<u32>,
    /// Rows whose score is NaN, with whether they are positives.
    nan_rows: Vec<(u32, bool)>,
}

impl RankedColumn {
    fn new(mut items: Vec<(f64, u32, bool)>) -> Self {
        let mut column = RankedColumn::default();
        items.retain(|&(score, row, positive)| {
            if score.is_nan() {
                column.nan_rows.push((row, positive));
            }
            !score.is_nan()
        });
        // Decreasing score; -0.0 and 0.0 are adjacent in this order and compare equal below.
        items.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (j, &(score, row, positive)) in items.iter().enumerate() {
            if j > 0 && score != items[j - 1].0 {
                column.group_ends.push(j as u32);
            }
            column.rows.push(row);
            column.positive.push(positive);
        }
        if !items.is_empty() {
            column.group_ends.push(items.len() as u32);
        }
        column
    }

    /// `(AUROC, defined)` of the column on the resample with row counts `counts`: defined when both a
    /// positive and a negative are drawn; NaN when undefined or a drawn score is NaN.
    fn auroc(&self, counts: &[u32]) -> (f64, bool) {
        let (mut nan_pos, mut nan_neg) = (0u64, 0u64);
        for &(row, positive) in &self.nan_rows {
            let c = u64::from(counts[row as usize]);
            *(if positive { &mut nan_pos } else { &mut nan_neg }) += c;
        }
        let (mut pos, mut neg, mut above, mut ties_and_below) = (0u64, 0u64, 0u64, 0u64);
        let mut start = 0usize;
        for &end in &self.group_ends {
            let end = end as usize;
            let (mut p, mut q) = (0u64, 0u64);
            for (&row, &positive) in self.rows[start..end].iter().zip(&self.positive[start..end]) {
                let c = u64::from(counts[row as usize]);
                if positive {
                    p += c;
                } else {
                    q += c;
                }
            }
            // Σ_g P_g (2·A_g + N_g): the pairs a positive does NOT win, counted twice (ties once).
            ties_and_below += p * (2 * above + q);
            above += q;
            pos += p;
            neg += q;
            start = end;
        }
        let defined = pos + nan_pos > 0 && neg + nan_neg > 0;
        if !defined || nan_pos + nan_neg > 0 {
            return (f64::NAN, defined);
        }
        let twice_u = 2 * pos * neg - ties_and_below;
        (twice_u as f64 / (2 * pos * neg) as f64, true)
    }
}

/// Per-row terms of a single-label table.
#[derive(Debug, Clone)]
struct ClassRows {
    /// Every row is valid (no per-resample validity scan needed).
    all_valid: bool,
    /// Row passes the validation of the single-label metrics (probabilities, class in `0..k`).
    valid: Vec<bool>,
    /// Top-label confidence (argmax, ties → lowest index), its ECE bin and whether it is correct.
    confidence: Vec<f64>,
    bin: Vec<usize>,
    correct: Vec<bool>,
    /// The row's Brier term: `(p₁ − 1[y = 1])²` for K = 2 (not validated), `Σ_k (p_k − 1[y = k])²` otherwise.
    brier: Vec<f64>,
    /// One-vs-rest columns: column 1 for K = 2, every column otherwise.
    columns: Vec<RankedColumn>,
}

/// Per-cell terms of a multilabel table (row-major `n × L`, masked cells skipped).
#[derive(Debug, Clone)]
struct LabelCells {
    /// Per row: observed cells with `1[p ≥ 0.5] = y`, and observed cells.
    row_hits: Vec<(usize, usize)>,
    /// ECE bin of each cell's score.
    bin: Vec<usize>,
    /// `(p − y)²` of each cell.
    brier: Vec<f64>,
    /// Each label's observed cells, ranked.
    columns: Vec<RankedColumn>,
}

#[derive(Debug, Clone)]
enum Prepared {
    Classes(ClassRows),
    Labels(LabelCells),
}

/// A table prepared for evaluating [`SampleMetric`]s on many resamples (see the module documentation).
#[derive(Debug, Clone)]
pub struct ResampledMetrics<'a> {
    table: &'a SampleTable,
    n_bins: usize,
    prepared: Prepared,
}

/// Per-bin sums of a reliability diagram, accumulated in draw order.
#[derive(Debug, Clone, Copy, Default)]
struct BinSums {
    count: usize,
    confidence: f64,
    outcome: f64,
}

/// ECE from bin sums, with the arithmetic of `calibra_metrics::expected_calibration_error` on
/// `BinAccumulator::bins` (bin means first, then `count/n · |acc − conf|` summed in bin order).
fn ece_of_bins(bins: &[BinSums], n: usize) -> f64 {
    bins.iter()
        .filter(|b| b.count > 0)
        .map(|b| {
            let count = b.count as f64;
            let (confidence, accuracy) = (b.confidence / count, b.outcome / count);
            b.count as f64 / n as f64 * (accuracy - confidence).abs()
        })
        .sum()
}

impl<'a> ResampledMetrics<'a> {
    /// Prepares `table` for ECE with `n_bins` right-closed bins.
    ///
    /// # Panics
    /// If `n_bins == 0`.
    pub fn new(table: &'a SampleTable, n_bins: usize) -> Self {
        assert!(n_bins > 0, "the number of ECE bins must be at least 1");
        let (k, n) = (table.k, table.len());
        let prepared = match &table.targets {
            SampleTargets::Classes(classes) => {
                let mut rows = ClassRows {
                    all_valid: false,
                    valid: Vec::with_capacity(n),
                    confidence: Vec::with_capacity(n),
                    bin: Vec::with_capacity(n),
                    correct: Vec::with_capacity(n),
                    brier: Vec::with_capacity(n),
                    columns: Vec::new(),
                };
                for (row, &y) in table.probs.chunks_exact(k).zip(classes) {
                    rows.valid.push(y < k && validate_probabilities(row, k).is_ok());
                    // calibra_metrics' argmax: strictly greater wins, so ties go to the lowest index.
                    let (mut best, mut conf) = (0, row[0]);
                    for (j, &v) in row.iter().enumerate().skip(1) {
                        if v > conf {
                            (best, conf) = (j, v);
                        }
                    }
                    rows.confidence.push(conf);
                    rows.bin.push(bin_index(conf, n_bins, Binning::RightClosed));
                    rows.correct.push(best == y);
                    rows.brier.push(if k == 2 {
                        let d = row[1] - if y == 1 { 1.0 } else { 0.0 };
                        d * d
                    } else {
                        row.iter()
                            .enumerate()
                            .map(|(j, &p)| {
                                let d = if j == y { p - 1.0 } else { p };
                                d * d
                            })
                            .sum::<f64>()
                    });
                }
                rows.all_valid = rows.valid.iter().all(|&v| v);
                let columns: Vec<usize> = if k == 2 { vec![1] } else { (0..k).collect() };
                rows.columns = columns
                    .into_iter()
                    .map(|c| {
                        RankedColumn::new(
                            (0..n).map(|i| (table.probs[i * k + c], i as u32, classes[i] == c)).collect(),
                        )
                    })
                    .collect();
                Prepared::Classes(rows)
            }
            SampleTargets::Labels(labels) => {
                let bin = table.probs.iter().map(|&p| bin_index(p, n_bins, Binning::RightClosed)).collect();
                let brier = table
                    .probs
                    .iter()
                    .zip(labels)
                    .map(|(&p, t)| {
                        let d = p - if *t == Some(true) { 1.0 } else { 0.0 };
                        d * d
                    })
                    .collect();
                let columns = (0..k)
                    .map(|j| {
                        RankedColumn::new(
                            (0..n)
                                .filter_map(|i| {
                                    labels[i * k + j].map(|t| (table.probs[i * k + j], i as u32, t))
                                })
                                .collect(),
                        )
                    })
                    .collect();
                let row_hits = (0..n)
                    .map(|i| {
                        let cells = table.probs[i * k..(i + 1) * k].iter().zip(&labels[i * k..(i + 1) * k]);
                        cells.fold((0, 0), |(h, c), (&p, t)| match t {
                            Some(t) => (h + usize::from((p >= 0.5) == *t), c + 1),
                            None => (h, c),
                        })
                    })
                    .collect();
                Prepared::Labels(LabelCells { row_hits, bin, brier, columns })
            }
        };
        ResampledMetrics { table, n_bins, prepared }
    }

    /// The prepared table.
    pub fn table(&self) -> &'a SampleTable {
        self.table
    }

    /// `metric` on `resample`: the value of [`SampleTable::metric`] on `resample.rows()`, bit for bit;
    /// `None` when undefined.
    ///
    /// # Panics
    /// If `resample` was made for a table of another length.
    pub fn metric(&self, metric: SampleMetric, resample: &Resample) -> Option<f64> {
        let rows = &resample.rows[..];
        assert_eq!(resample.counts.len(), self.table.len(), "the resample is of a table of another length");
        if rows.is_empty() {
            return None;
        }
        let n = rows.len();
        let value = match &self.prepared {
            Prepared::Classes(c) => {
                let validated = metric != SampleMetric::Brier || self.table.k != 2;
                if validated && !c.all_valid && rows.iter().any(|&i| !c.valid[i]) {
                    return None;
                }
                match metric {
                    SampleMetric::MacroAuroc => {
                        // Strict macro average: every column must be defined.
                        let mut per_class = Vec::with_capacity(c.columns.len());
                        for column in &c.columns {
                            let (value, defined) = column.auroc(&resample.counts);
                            if !defined {
                                return None;
                            }
                            per_class.push(value);
                        }
                        per_class.iter().sum::<f64>() / per_class.len() as f64
                    }
                    SampleMetric::Ece => {
                        let mut bins = vec![BinSums::default(); self.n_bins];
                        for &i in rows {
                            let b = &mut bins[c.bin[i]];
                            b.count += 1;
                            b.confidence += c.confidence[i];
                            b.outcome += if c.correct[i] { 1.0 } else { 0.0 };
                        }
                        ece_of_bins(&bins, n)
                    }
                    SampleMetric::Brier => rows.iter().map(|&i| c.brier[i]).sum::<f64>() / n as f64,
                    SampleMetric::Accuracy => {
                        rows.iter().filter(|&&i| c.correct[i]).count() as f64 / n as f64
                    }
                }
            }
            Prepared::Labels(cells) => {
                let (l, labels) = match &self.table.targets {
                    SampleTargets::Labels(labels) => (self.table.k, labels),
                    SampleTargets::Classes(_) => unreachable!("prepared as multilabel"),
                };
                match metric {
                    SampleMetric::MacroAuroc => {
                        // Skip-undefined macro average over the labels.
                        let included: Vec<f64> = cells
                            .columns
                            .iter()
                            .map(|column| column.auroc(&resample.counts))
                            .filter(|&(_, defined)| defined)
                            .map(|(value, _)| value)
                            .collect();
                        if included.is_empty() {
                            f64::NAN
                        } else {
                            included.iter().sum::<f64>() / included.len() as f64
                        }
                    }
                    SampleMetric::Accuracy => {
                        // Integer counts: the order of the sums does not matter.
                        let (hits, observed) = rows.iter().fold((0usize, 0usize), |(h, c), &i| {
                            (h + cells.row_hits[i].0, c + cells.row_hits[i].1)
                        });
                        if observed == 0 { f64::NAN } else { hits as f64 / observed as f64 }
                    }
                    SampleMetric::Ece | SampleMetric::Brier => {
                        // Per label: its observed cells in draw order.
                        let ece = metric == SampleMetric::Ece;
                        let mut observed = vec![0usize; l];
                        let mut brier = vec![0.0f64; l];
                        let mut bins = vec![BinSums::default(); if ece { l * self.n_bins } else { 0 }];
                        for &i in rows {
                            for j in 0..l {
                                let cell = i * l + j;
                                let Some(t) = labels[cell] else { continue };
                                observed[j] += 1;
                                if ece {
                                    let b = &mut bins[j * self.n_bins + cells.bin[cell]];
                                    b.count += 1;
                                    b.confidence += self.table.probs[cell];
                                    b.outcome += if t { 1.0 } else { 0.0 };
                                } else {
                                    brier[j] += cells.brier[cell];
                                }
                            }
                        }
                        let per_label: Vec<f64> = (0..l)
                            .filter(|&j| observed[j] > 0)
                            .map(|j| {
                                if ece {
                                    ece_of_bins(&bins[j * self.n_bins..(j + 1) * self.n_bins], observed[j])
                                } else {
                                    brier[j] / observed[j] as f64
                                }
                            })
                            .collect();
                        if per_label.is_empty() {
                            f64::NAN
                        } else {
                            per_label.iter().sum::<f64>() / per_label.len() as f64
                        }
                    }
                }
            }
        };
        value.is_finite().then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Probabilities with many ties: each row's weights are small integers, normalised.
    fn tied_row(rng: &mut ChaCha8Rng, k: usize) -> Vec<f64> {
        let w: Vec<f64> = (0..k).map(|_| f64::from(rng.random_range(0u32..4))).collect();
        let s: f64 = w.iter().sum();
        if s == 0.0 { vec![1.0 / k as f64; k] } else { w.iter().map(|x| x / s).collect() }
    }

    fn random_table(rng: &mut ChaCha8Rng, multilabel: bool) -> SampleTable {
        let n = rng.random_range(0..40usize);
        let k = rng.random_range(1..6usize);
        let ids = (0..n).map(|i| format!("s{i}")).collect();
        let tied = rng.random_bool(0.5);
        let mut probs = Vec::with_capacity(n * k);
        if multilabel {
            let mut labels = Vec::with_capacity(n * k);
            for _ in 0..n * k {
                let p = match rng.random_range(0..20) {
                    0 => f64::NAN,
                    1 => 0.0,
                    2 => -0.0,
                    _ if tied => f64::from(rng.random_range(0u32..5)) / 4.0,
                    _ => rng.random::<f64>(),
                };
                probs.push(p);
                labels.push(match rng.random_range(0..4) {
                    0 => None,
                    1 => Some(true),
                    _ => Some(false),
                });
            }
            return SampleTable::new(ids, k, probs, SampleTargets::Labels(labels));
        }
        let mut classes = Vec::with_capacity(n);
        for _ in 0..n {
            let mut row = if tied {
                tied_row(rng, k)
            } else {
                let w: Vec<f64> = (0..k).map(|_| rng.random::<f64>() + 1e-3).collect();
                let s: f64 = w.iter().sum();
                w.iter().map(|x| x / s).collect()
            };
            // Rarely an invalid row: not summing to 1, or NaN.
            match rng.random_range(0..60) {
                0 => row[0] += 0.25,
                1 => row[k - 1] = f64::NAN,
                _ => {}
            }
            probs.extend(row);
            // Rarely a class out of range.
            classes.push(if rng.random_range(0..80) == 0 { k } else { rng.random_range(0..k) });
        }
        SampleTable::new(ids, k, probs, SampleTargets::Classes(classes))
    }

    fn bits(v: Option<f64>) -> Option<u64> {
        v.map(f64::to_bits)
    }

    /// The oracle is the definition, [`SampleTable::metric`] on the materialised rows: every value must
    /// be identical bit for bit (so also within any tolerance), undefined exactly where it is undefined.
    #[test]
    fn equals_the_materialised_definition_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(2026);
        let mut compared = [0usize; 2];
        let mut undefined = 0usize;
        for case in 0..600 {
            let multilabel = case % 2 == 1;
            let table = random_table(&mut rng, multilabel);
            let n_bins = [1, 3, 10, 15][case % 4];
            let prepared = ResampledMetrics::new(&table, n_bins);
            let n = table.len();
            for _ in 0..8 {
                // Bootstrap draws (n of n), smaller subsets (often one class only) and the empty draw.
                let size = match rng.random_range(0..3) {
                    0 => n,
                    1 if n > 0 => rng.random_range(1..=n.min(4)),
                    _ => rng.random_range(0..=n),
                };
                let rows: Vec<usize> =
                    if n == 0 { vec![] } else { (0..size).map(|_| rng.random_range(0..n)).collect() };
                let resample = Resample::new(rows.clone(), n);
                for m in SampleMetric::ALL {
                    let expected = table.metric(m, &rows, n_bins);
                    let actual = prepared.metric(m, &resample);
                    assert_eq!(
                        bits(actual),
                        bits(expected),
                        "case {case} {m} n_bins {n_bins} rows {rows:?}: {actual:?} vs {expected:?}"
                    );
                    compared[usize::from(expected.is_some())] += 1;
                    undefined += usize::from(expected.is_none() && !rows.is_empty());
                }
            }
        }
        // The cases cover both defined and undefined values (not only empty draws).
        assert!(compared[1] > 5_000 && undefined > 1_000, "{compared:?} {undefined}");
    }

    proptest::proptest! {
        /// The same identity on proptest's (shrinkable) single-label tables: coarse scores (ties), any
        /// multiset of rows.
        #[test]
        fn matches_the_definition_on_any_multiset(
            rows in proptest::collection::vec((1u32..4, 1u32..4, 1u32..4, 0usize..3), 1..25),
            draw in proptest::collection::vec(0usize..1000, 0..40),
            n_bins in 1usize..20,
        ) {
            let n = rows.len();
            let probs: Vec<f64> = rows
                .iter()
                .flat_map(|&(a, b, c, _)| {
                    let s = f64::from(a + b + c);
                    [f64::from(a) / s, f64::from(b) / s, f64::from(c) / s]
                })
                .collect();
            let classes = rows.iter().map(|r| r.3).collect();
            let ids = (0..n).map(|i| i.to_string()).collect();
            let table = SampleTable::new(ids, 3, probs, SampleTargets::Classes(classes));
            let draw: Vec<usize> = draw.into_iter().map(|i| i % n).collect();
            let prepared = ResampledMetrics::new(&table, n_bins);
            let resample = Resample::new(draw.clone(), n);
            for m in SampleMetric::ALL {
                proptest::prop_assert_eq!(
                    bits(prepared.metric(m, &resample)),
                    bits(table.metric(m, &draw, n_bins))
                );
            }
        }
    }

    #[test]
    fn resample_counts_follow_the_rows() {
        let r = Resample::new(vec![2, 0, 2], 4);
        assert_eq!(r.rows(), &[2, 0, 2]);
        assert_eq!(r.counts, vec![1, 0, 2, 0]);
        assert_eq!(Resample::all(3).counts, vec![1, 1, 1]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn an_out_of_range_row_panics() {
        let _ = Resample::new(vec![3], 3);
    }
}
