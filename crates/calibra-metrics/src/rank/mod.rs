//! Rank statistics: average ranks, Kendall τ-a/τ-b (Knight, O(n log n)), Spearman ρ and Vigna's
//! weighted τ (spec §C13–C15).

pub mod kendall;
pub mod rankdata;
pub mod spearman;
pub mod weighted_tau;

pub use kendall::{kendall_tau_a, kendall_tau_b};
pub use rankdata::average_ranks;
pub use spearman::spearman_rho;
pub use weighted_tau::weighted_tau;
