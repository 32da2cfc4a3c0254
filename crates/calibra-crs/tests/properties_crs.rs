//! Invariants of the CRS (proptest): every component in [0, 1]; inserting candidates never changes the
//! panel's scores; permuting the panel permutes the scores; a save/load round trip changes nothing.

use calibra_crs::{
    AxisWeights, ComponentWeights, CrsError, Profile, Reference, ReferenceConfig, ScoreWeights, ValueScale,
};
use proptest::prelude::*;

/// Oriented values, either continuous or on a coarse grid (to provoke ties and duplicate profiles).
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![(-1.0f64..2.0), (0u8..4).prop_map(|k| f64::from(k) * 0.25)]
}

fn profiles(prefix: &'static str, len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Profile>> {
    prop::collection::vec(prop::array::uniform4(value()), len).prop_map(move |rows| {
        rows.into_iter().enumerate().map(|(i, v)| Profile::complete(format!("{prefix}{i}"), v)).collect()
    })
}

/// Weights on the simplex (positive parts normalised to sum 1); validated by the constructors.
fn weights() -> impl Strategy<Value = ScoreWeights> {
    (prop::array::uniform4(0.0f64..1.0), prop::array::uniform3(0.0f64..1.0)).prop_filter_map(
        "weights need a positive sum",
        |(a, c)| {
            let (sa, sc): (f64, f64) = (a.iter().sum(), c.iter().sum());
            if sa < 1e-3 || sc < 1e-3 {
                return None;
            }
            let axis = AxisWeights::new(a.map(|x| x / sa)).ok()?;
            let component = ComponentWeights::new(c[0] / sc, c[1] / sc, c[2] / sc).ok()?;
            Some(ScoreWeights { axis, component })
        },
    )
}

fn build(panel: &[Profile], weights: ScoreWeights) -> Option<Reference> {
    let config = ReferenceConfig { weights, ..ReferenceConfig::default() };
    match Reference::build(panel, config) {
        Ok(r) => Some(r),
        Err(CrsError::DegenerateAnchor { .. }) => None,
        Err(e) => panic!("unexpected error {e}"),
    }
}

fn components(scores: &[calibra_crs::CrsScore]) -> Vec<[f64; 4]> {
    scores
        .iter()
        .map(|s| {
            let c = s.components;
            [c.dominance, c.ideal, c.worst, c.crs]
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_component_lies_in_the_unit_interval(
        panel in profiles("p", 2..10), candidates in profiles("c", 0..6), w in weights()
    ) {
        let Some(reference) = build(&panel, w) else { return Ok(()) };
        let mut all = reference.panel_scores();
        all.extend(reference.score(&candidates).unwrap());
        // The weights sum to 1 only within rounding, so CRS may leave [0, 1] by a few ulps at most.
        for s in &all {
            let c = s.components;
            prop_assert!((0.0..=1.0).contains(&c.dominance) && (0.0..=1.0).contains(&c.worst));
            prop_assert!((-1e-12..=1.0 + 1e-12).contains(&c.ideal), "S = {}", c.ideal);
            prop_assert!((-1e-12..=1.0 + 1e-12).contains(&c.crs), "CRS = {}", c.crs);
            prop_assert!(s.normalized.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }

    #[test]
    fn inserting_candidates_never_changes_the_panel_scores(
        panel in profiles("p", 2..10), candidates in profiles("c", 1..6), w in weights()
    ) {
        let Some(reference) = build(&panel, w) else { return Ok(()) };
        let before = components(&reference.panel_scores());
        let scored = reference.score(&candidates).unwrap();
        prop_assert_eq!(components(&reference.panel_scores()), before.clone());
        // Scoring panel ∪ candidates against the frozen reference: members keep their published scores.
        let mut mixed = panel.clone();
        mixed.extend(candidates.iter().cloned());
        let mixed_scores = reference.score(&mixed).unwrap();
        prop_assert_eq!(components(&mixed_scores[..panel.len()]), before);
        prop_assert_eq!(components(&mixed_scores[panel.len()..]), components(&scored));
        // And after a save/load round trip.
        let loaded = Reference::from_json(&reference.to_json(), std::path::Path::new("mem.json")).unwrap();
        prop_assert_eq!(components(&loaded.score(&mixed).unwrap()), components(&mixed_scores));
    }

    #[test]
    fn permuting_the_panel_permutes_the_scores(
        panel in profiles("p", 2..10), seed in any::<u64>(), w in weights()
    ) {
        let Some(reference) = build(&panel, w) else { return Ok(()) };
        // A permutation from the seed (Fisher–Yates with a simple LCG; any permutation will do).
        let mut order: Vec<usize> = (0..panel.len()).collect();
        let mut state = seed;
        for i in (1..order.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (state >> 33) as usize % (i + 1));
        }
        let permuted: Vec<Profile> = order.iter().map(|&i| panel[i].clone()).collect();
        let permuted_ref = build(&permuted, w).unwrap();
        let original = components(&reference.panel_scores());
        let after = components(&permuted_ref.panel_scores());
        for (k, &i) in order.iter().enumerate() {
            prop_assert_eq!(after[k], original[i]);
        }
    }

    #[test]
    fn normalised_panels_score_like_their_oriented_twins_with_unit_spread(
        panel in profiles("p", 2..8), w in weights()
    ) {
        // Map each axis onto [0, 1] by hand; the oriented reference (panel min/max anchors) must then
        // score the same normalised values as the normalised-scale reference (identity anchors).
        let Some(oriented) = build(&panel, w) else { return Ok(()) };
        let normalized: Vec<Profile> = oriented
            .panel_scores()
            .iter()
            .map(|s| Profile::complete(s.encoder.clone(), &s.normalized))
            .collect();
        let config = ReferenceConfig { scale: ValueScale::Normalized, weights: w, ..ReferenceConfig::default() };
        let unit = Reference::build(&normalized, config).unwrap();
        prop_assert_eq!(components(&unit.panel_scores()), components(&oriented.panel_scores()));
    }
}
