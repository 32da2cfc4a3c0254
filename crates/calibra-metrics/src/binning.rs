//! Equal-width confidence binning with the three bin-edge conventions of the reference libraries
//! (spec §C1), reliability-diagram bins, and ECE / MCE computed from those bins (spec §C2, §C3).
//!
//! Edges are `linspace(0, 1, B + 1)` in f64, computed exactly as numpy does: `e_b = b · (1/B)` for
//! `b < B` and `e_B = 1.0`. Bin membership is decided by comparing against these edge values (not by
//! `ceil(B·c)`), so an edge-valued confidence lands where numpy's `searchsorted` puts it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::MetricsError;

/// Which bin an edge-valued confidence `c = e_b` belongs to (spec §C1).
///
/// | convention | bins | `c = e_b`, `0 < b < B` | `c = 1.0` | `c = 0.0` |
/// |---|---|---|---|---|
/// | `RightClosed` `(lo, hi]` | B | left bin `b − 1` | last bin | bin 0 |
/// | `LeftClosed` `[lo, hi)`, last closed | B | right bin `b` | last bin | bin 0 |
/// | `Torchmetrics` `[lo, hi)` | B + 1 | right bin `b` | extra bin `B` = `[1, 1]` | bin 0 |
///
/// `RightClosed` is Guo et al. / focal-calibration / MVC-Bench (the framework default), `LeftClosed`
/// is netcal / `numpy.histogram`, `Torchmetrics` is `torch.bucketize(c, edges, right=True) − 1`.
/// Confidences below 0 go to bin 0, above 1 to the last bin (`Torchmetrics`: bin `B`).
///
/// Note: `Torchmetrics` here uses the same numpy-style f64 edges; `torch.linspace` in f64 differs from
/// numpy's `linspace` by one ulp at some edges (e.g. B = 10: 0.6 vs 0.6000000000000001), so an input
/// exactly on such an edge may be binned differently from torchmetrics itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Binning {
    /// `(lo, hi]`; the spec's `right_closed`.
    #[default]
    RightClosed,
    /// `[lo, hi)` with the last bin closed; the spec's `left_closed`.
    LeftClosed,
    /// `[lo, hi)` plus an extra bin `[1, 1]` for confidences equal to 1.
    Torchmetrics,
}

impl Binning {
    /// All conventions, in declaration order.
    pub const ALL: [Binning; 3] = [Binning::RightClosed, Binning::LeftClosed, Binning::Torchmetrics];

    /// The name used by `FromStr`, `Display` and serde.
    pub fn name(self) -> &'static str {
        match self {
            Binning::RightClosed => "right-closed",
            Binning::LeftClosed => "left-closed",
            Binning::Torchmetrics => "torchmetrics",
        }
    }

    /// Number of bins this convention produces for `n_bins` equal-width intervals
    /// (`n_bins + 1` for `Torchmetrics`).
    pub fn num_bins(self, n_bins: usize) -> usize {
        match self {
            Binning::Torchmetrics => n_bins + 1,
            _ => n_bins,
        }
    }
}

impl fmt::Display for Binning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Binning {
    type Err = MetricsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Binning::ALL.into_iter().find(|b| b.name() == s).ok_or_else(|| {
            MetricsError::InvalidArgument(format!(
                "unknown binning {s:?}: expected one of right-closed, left-closed, torchmetrics"
            ))
        })
    }
}

/// Edge `b` of `linspace(0, 1, n_bins + 1)` exactly as numpy computes it (`b · (1/B)`, last edge 1).
#[inline]
pub(crate) fn edge(b: usize, n_bins: usize) -> f64 {
    if b >= n_bins { 1.0 } else { b as f64 * (1.0 / n_bins as f64) }
}

/// Order-preserving integer key of a non-negative f64 (`−0.0` is normalised to `+0.0` first): for
/// `x, y ≥ 0`, `x < y ⇔ key(x) < key(y)`. Sorting these keys is much faster than sorting f64 with
/// `total_cmp`; `f64::from_bits(key)` gives the value back. Callers pass validated probabilities.
#[inline]
pub(crate) fn nonnegative_sort_key(x: f64) -> u64 {
    debug_assert!(x >= 0.0, "sort key of a negative or NaN value {x}");
    (x + 0.0).to_bits()
}

/// Bin of confidence `c` among `n_bins` equal-width bins under `binning` (spec §C1), O(1).
///
/// - `RightClosed`: number of inner edges `e_1..e_{B−1}` strictly below `c` (`searchsorted(side=left)`).
/// - `LeftClosed`: number of inner edges `≤ c` (`searchsorted(side=right)`).
/// - `Torchmetrics`: number of edges `e_0..e_B` that are `≤ c`, minus one, floored at 0; returns
///   `n_bins` for `c ≥ 1`.
///
/// NaN goes to bin 0 (the saturating cast of `floor(NaN)`), so that the bin's mean, and any ECE
/// computed from it, becomes NaN.
///
/// # Panics
/// If `n_bins == 0`.
pub fn bin_index(c: f64, n_bins: usize, binning: Binning) -> usize {
    assert!(n_bins > 0, "bin_index: n_bins must be at least 1");
    locate(c, n_bins, binning, |b| edge(b, n_bins))
}

/// The bin search of [`bin_index`] over an edge function `edge_at(b) = e_b` (computed on the fly, or
/// looked up in a precomputed table by [`BinAccumulator`]).
#[inline(always)]
fn locate(c: f64, n_bins: usize, binning: Binning, edge_at: impl Fn(usize) -> f64) -> usize {
    // Candidate from floor(B·c) (a saturating cast: NaN and negatives give 0), then corrected by at
    // most a step or two against the exact edge values.
    let guess = (c * n_bins as f64).floor() as usize;
    match binning {
        Binning::RightClosed => {
            let mut m = guess.min(n_bins - 1);
            while m < n_bins - 1 && edge_at(m + 1) < c {
                m += 1;
            }
            while m > 0 && edge_at(m) >= c {
                m -= 1;
            }
            m
        }
        Binning::LeftClosed => {
            let mut m = guess.min(n_bins - 1);
            while m < n_bins - 1 && edge_at(m + 1) <= c {
                m += 1;
            }
            while m > 0 && edge_at(m) > c {
                m -= 1;
            }
            m
        }
        Binning::Torchmetrics => {
            let mut m = guess.min(n_bins);
            while m < n_bins && edge_at(m + 1) <= c {
                m += 1;
            }
            while m > 0 && edge_at(m) > c {
                m -= 1;
            }
            m
        }
    }
}

/// One bin of a reliability diagram.
///
/// `confidence` and `accuracy` are the mean confidence and mean outcome of the samples in the bin; they
/// are NaN for an empty bin and serialise as JSON `null` (and `null` deserialises back to NaN).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    /// Lower edge of the bin.
    pub lower: f64,
    /// Upper edge of the bin.
    pub upper: f64,
    /// Number of samples in the bin.
    pub count: usize,
    /// Mean confidence in the bin (NaN if empty).
    #[serde(serialize_with = "nan_as_null", deserialize_with = "null_as_nan")]
    pub confidence: f64,
    /// Mean outcome (accuracy, or positive rate) in the bin (NaN if empty).
    #[serde(serialize_with = "nan_as_null", deserialize_with = "null_as_nan")]
    pub accuracy: f64,
}

fn nan_as_null<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() { s.serialize_some(v) } else { s.serialize_none() }
}

fn null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Running sums of one bin.
#[derive(Debug, Clone, Copy, Default)]
struct BinSums {
    count: usize,
    confidence: f64,
    outcome: f64,
}

/// Running per-bin sums with a precomputed edge table; one pass, no per-row allocation.
#[derive(Debug, Clone)]
pub(crate) struct BinAccumulator {
    n_bins: usize,
    binning: Binning,
    /// `e_0..e_B` plus a trailing 1.0 so that `edges[b + 1]` exists for the extra torchmetrics bin.
    edges: Vec<f64>,
    sums: Vec<BinSums>,
}

impl BinAccumulator {
    pub(crate) fn new(n_bins: usize, binning: Binning) -> Self {
        assert!(n_bins > 0, "n_bins must be at least 1");
        BinAccumulator {
            n_bins,
            binning,
            edges: (0..=n_bins + 1).map(|b| edge(b, n_bins)).collect(),
            sums: vec![BinSums::default(); binning.num_bins(n_bins)],
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, confidence: f64, outcome: f64) {
        let edges = &self.edges;
        let b = locate(confidence, self.n_bins, self.binning, |b| edges[b]);
        let bin = &mut self.sums[b];
        bin.count += 1;
        bin.confidence += confidence;
        bin.outcome += outcome;
    }

    pub(crate) fn bins(&self) -> Vec<ReliabilityBin> {
        self.sums
            .iter()
            .enumerate()
            .map(|(b, sums)| {
                let count = sums.count;
                let (confidence, accuracy) = if count == 0 {
                    (f64::NAN, f64::NAN)
                } else {
                    (sums.confidence / count as f64, sums.outcome / count as f64)
                };
                ReliabilityBin { lower: self.edges[b], upper: self.edges[b + 1], count, confidence, accuracy }
            })
            .collect()
    }
}

/// Reliability-diagram bins of `confidence` against `outcome` (1 = correct / positive, 0 otherwise)
/// over `n_bins` equal-width bins, O(n).
///
/// `Torchmetrics` returns `n_bins + 1` bins, the last one `[1, 1]`; the others return `n_bins` bins.
/// Bin `b` spans `[e_b, e_{b+1}]` with `e = linspace(0, 1, n_bins + 1)`; which side an edge value
/// goes to is given by [`bin_index`]. Counts always sum to `confidence.len()`.
///
/// # Panics
/// If the slices differ in length or `n_bins == 0`.
pub fn reliability_bins(
    confidence: &[f64],
    outcome: &[f64],
    n_bins: usize,
    binning: Binning,
) -> Vec<ReliabilityBin> {
    assert_eq!(
        confidence.len(),
        outcome.len(),
        "reliability_bins: {} confidences but {} outcomes",
        confidence.len(),
        outcome.len()
    );
    let mut acc = BinAccumulator::new(n_bins, binning);
    for (&c, &o) in confidence.iter().zip(outcome) {
        acc.add(c, o);
    }
    acc.bins()
}

/// Expected calibration error from bins: `ECE = Σ_b (n_b / n) · |acc_b − conf_b|` over non-empty bins.
///
/// `n` is the total sample count (normally the sum of the counts; Mukhoti's AdaECE passes a larger
/// `n` because its lowest sample falls in no bin). Returns NaN for `n == 0` or if a non-empty bin has
/// a NaN mean.
pub fn expected_calibration_error(bins: &[ReliabilityBin], n: usize) -> f64 {
    if n == 0 {
        return f64::NAN;
    }
    bins.iter()
        .filter(|b| b.count > 0)
        .map(|b| b.count as f64 / n as f64 * (b.accuracy - b.confidence).abs())
        .sum()
}

/// Maximum calibration error: `MCE = max over non-empty bins of |acc_b − conf_b|`.
///
/// Equals torchmetrics `norm="max"` and netcal MCE (which let empty bins contribute 0). NaN if no bin
/// is non-empty or a non-empty bin has a NaN mean.
pub fn maximum_calibration_error(bins: &[ReliabilityBin]) -> f64 {
    let mut max = f64::NAN;
    for b in bins.iter().filter(|b| b.count > 0) {
        let gap = (b.accuracy - b.confidence).abs();
        if gap.is_nan() {
            return f64::NAN;
        }
        if max.is_nan() || gap > max {
            max = gap;
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        for b in Binning::ALL {
            assert_eq!(b.to_string().parse::<Binning>(), Ok(b));
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{}\"", b.name()));
            assert_eq!(serde_json::from_str::<Binning>(&json).unwrap(), b);
        }
        assert_eq!(Binning::default(), Binning::RightClosed);
        assert!(matches!("right_closed".parse::<Binning>(), Err(MetricsError::InvalidArgument(_))));
    }

    #[test]
    fn edges_are_numpy_linspace() {
        // numpy: y = arange(B+1) * (1/B); y[-1] = 1. Definitional; checked against the exact rationals
        // where they are representable (B = 4, 8: dyadic edges are exact).
        for b in 0..=8 {
            assert_eq!(edge(b, 8), b as f64 / 8.0);
        }
        assert_eq!(edge(4, 4), 1.0);
    }

    #[test]
    fn edge_values_go_where_each_convention_says() {
        // Definitional (spec §C1 table), on dyadic edges that are exact in f64:
        // B = 4, e = 0, .25, .5, .75, 1.
        let b = 4;
        for (c, rc, lc, tm) in [
            (0.0, 0, 0, 0),
            (0.25, 0, 1, 1),
            (0.5, 1, 2, 2),
            (0.75, 2, 3, 3),
            (1.0, 3, 3, 4),
            (0.3, 1, 1, 1),
            (-0.1, 0, 0, 0),
            (1.5, 3, 3, 4),
        ] {
            assert_eq!(bin_index(c, b, Binning::RightClosed), rc, "right-closed c={c}");
            assert_eq!(bin_index(c, b, Binning::LeftClosed), lc, "left-closed c={c}");
            assert_eq!(bin_index(c, b, Binning::Torchmetrics), tm, "torchmetrics c={c}");
        }
        assert_eq!(bin_index(f64::NAN, b, Binning::RightClosed), 0);
    }

    #[test]
    fn bin_index_agrees_with_searchsorted_on_the_edges() {
        // Definitional: compare with a linear scan of the edge array for edge values and neighbours.
        for n_bins in [1usize, 2, 3, 7, 10, 15, 20, 33] {
            let edges: Vec<f64> = (0..=n_bins).map(|b| edge(b, n_bins)).collect();
            let mut probes = vec![];
            for &e in &edges {
                probes.extend([e, e.next_up(), e.next_down()]);
            }
            for c in probes.into_iter().filter(|c| (0.0..=1.0).contains(c)) {
                let inner = &edges[1..n_bins];
                assert_eq!(
                    bin_index(c, n_bins, Binning::RightClosed),
                    inner.iter().filter(|&&e| e < c).count()
                );
                assert_eq!(
                    bin_index(c, n_bins, Binning::LeftClosed),
                    inner.iter().filter(|&&e| e <= c).count()
                );
                assert_eq!(
                    bin_index(c, n_bins, Binning::Torchmetrics),
                    edges.iter().filter(|&&e| e <= c).count() - 1
                );
            }
        }
    }

    #[test]
    fn empty_bins_serialise_as_null() {
        let bins = reliability_bins(&[0.9], &[1.0], 2, Binning::Torchmetrics);
        assert_eq!(bins.len(), 3);
        assert_eq!((bins[2].lower, bins[2].upper), (1.0, 1.0));
        let json = serde_json::to_value(bins[0]).unwrap();
        assert!(json["confidence"].is_null() && json["accuracy"].is_null());
        let back: ReliabilityBin = serde_json::from_value(json).unwrap();
        assert!(back.confidence.is_nan() && back.count == 0);
        let json = serde_json::to_value(bins[1]).unwrap();
        assert_eq!(json["confidence"], 0.9);
    }

    #[test]
    fn ece_and_mce_of_a_tiny_exact_case() {
        // Exact by construction (dyadic values): bin (0.5,1] holds conf {0.75, 0.75}, outcomes {1, 0}:
        // gap |0.5 − 0.75| = 0.25, weight 1 → ECE = MCE = 0.25.
        let bins = reliability_bins(&[0.75, 0.75], &[1.0, 0.0], 2, Binning::RightClosed);
        assert_eq!(expected_calibration_error(&bins, 2), 0.25);
        assert_eq!(maximum_calibration_error(&bins), 0.25);
        assert!(expected_calibration_error(&bins, 0).is_nan());
        assert!(maximum_calibration_error(&reliability_bins(&[], &[], 3, Binning::LeftClosed)).is_nan());
        let bins = reliability_bins(&[f64::NAN, 0.75], &[1.0, 0.0], 2, Binning::RightClosed);
        assert!(expected_calibration_error(&bins, 2).is_nan());
        assert!(maximum_calibration_error(&bins).is_nan());
    }

    proptest! {
        #[test]
        fn counts_sum_to_n_and_ece_mce_in_unit_interval(
            rows in prop::collection::vec((0.0f64..=1.0, any::<bool>()), 1..200),
            n_bins in 1usize..40,
        ) {
            let conf: Vec<f64> = rows.iter().map(|r| r.0).collect();
            let out: Vec<f64> = rows.iter().map(|r| f64::from(u8::from(r.1))).collect();
            for binning in Binning::ALL {
                let bins = reliability_bins(&conf, &out, n_bins, binning);
                prop_assert_eq!(bins.len(), binning.num_bins(n_bins));
                prop_assert_eq!(bins.iter().map(|b| b.count).sum::<usize>(), conf.len());
                for (i, b) in bins.iter().enumerate() {
                    let expected = conf.iter().filter(|&&c| bin_index(c, n_bins, binning) == i).count();
                    prop_assert_eq!(b.count, expected);
                }
                for b in bins.iter().filter(|b| b.count > 0) {
                    prop_assert!(b.lower - 1e-12 <= b.confidence && b.confidence <= b.upper + 1e-12);
                }
                let ece = expected_calibration_error(&bins, conf.len());
                let mce = maximum_calibration_error(&bins);
                prop_assert!((0.0..=1.0).contains(&ece), "ece {}", ece);
                prop_assert!((0.0..=1.0).contains(&mce), "mce {}", mce);
                prop_assert!(ece <= mce + 1e-15);
            }
        }
    }
}
