//! The CRS-Bench paper's AUROC-vs-CRS comparison (shared/seeds/000_bd6db02b46293500.txt) reproduced by
//! `rank_compare` from the paper's own Table 2.
//!
//! Inputs: Table 2, "Aggregate" AUROC and CRS columns (seed file line 37, the paper body), in the
//! table's row order (the order breaks the one AUROC tie, SigLIP = RAD-DINO = 0.847).
//! Expected: §5.4 "Decision Consequences beyond AUROC" (seed line 37) — "Across 15 encoders, τ = 0.600,
//! ρ = 0.811, 21/105 pairwise choices reverse, mean absolute displacement is 1.87 ranks, and
//! Top-3/Top-5 overlap is 0.667/0.800 (Fig. 3). CheXzero moves 11→5, LLaVA-Med 5→11, PanDerm 4→1, and
//! DINOv2 6→9" — repeated in the abstract (seed line 28: "21 of 105 pairwise orderings reverse, with a
//! mean absolute rank displacement of 1.87"). Tolerance: half a unit of the paper's last printed digit.

mod common;

use calibra_crs::rank_compare::compare_rankings;
use common::crsbench::TABLE2_AGGREGATE as TABLE_2;

#[test]
fn auroc_versus_crs_statistics_of_the_paper_are_reproduced() {
    let auroc: Vec<(String, f64)> = TABLE_2.iter().map(|(e, a, _)| (e.to_string(), *a)).collect();
    let crs: Vec<(String, f64)> = TABLE_2.iter().map(|(e, _, c)| (e.to_string(), *c)).collect();
    let c = compare_rankings(&auroc, &crs).unwrap();

    assert_eq!(c.n, 15);
    assert_eq!((c.reversals, c.pairs), (21, 105));
    assert!((c.kendall_tau - 0.600).abs() <= 0.0005, "tau {}", c.kendall_tau);
    assert!((c.spearman_rho - 0.811).abs() <= 0.0005, "rho {}", c.spearman_rho);
    assert!((c.mean_abs_displacement - 1.87).abs() <= 0.005, "MAD {}", c.mean_abs_displacement);
    assert!((c.top_k_overlap[&3] - 0.667).abs() <= 0.0005, "top-3 {}", c.top_k_overlap[&3]);
    assert!((c.top_k_overlap[&5] - 0.800).abs() <= 0.0005, "top-5 {}", c.top_k_overlap[&5]);
    // The one AUROC tie at the table's precision (SigLIP, RAD-DINO); CRS has none.
    assert_eq!((c.ties_a, c.ties_b), (1, 0));

    for (encoder, from, to) in
        [("CheXzero", 11, 5), ("LLaVA-Med", 5, 11), ("PanDerm", 4, 1), ("DINOv2", 6, 9)]
    {
        let m = c.moves.iter().find(|m| m.encoder == encoder).unwrap();
        assert_eq!((m.rank_a, m.rank_b), (from, to), "{encoder}");
    }
}
