//! Frozen references: save/load round trips bit for bit, atomic writes, versioning, validation,
//! estimator checks and per-domain references.

use calibra_crs::{
    AXES, Axis, AxisEstimators, CrsError, Profile, REFERENCE_VERSION, Reference, ReferenceConfig, ValueScale,
    build_per_domain,
};
use std::collections::BTreeMap;

fn panel() -> Vec<Profile> {
    vec![
        Profile::complete("A", [0.90, -0.05, 0.95, 0.80]),
        Profile::complete("B", [0.85, -0.10, 0.90, 0.70]),
        Profile::complete("C", [0.95, -0.02, 0.97, 0.60]),
        Profile::complete("D", [0.80, -0.15, 1.01, 0.90]),
    ]
}

fn bits(scores: &[calibra_crs::CrsScore]) -> Vec<[u64; 4]> {
    scores
        .iter()
        .map(|s| {
            let c = s.components;
            [c.dominance.to_bits(), c.ideal.to_bits(), c.worst.to_bits(), c.crs.to_bits()]
        })
        .collect()
}

#[test]
fn save_and_load_restore_the_reference_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ref.json");
    let config = ReferenceConfig { domain: Some("ISIC".into()), ..ReferenceConfig::default() };
    let reference = Reference::build(&panel(), config).unwrap();
    reference.save(&path).unwrap();
    let loaded = Reference::load(&path).unwrap();
    assert_eq!(loaded, reference);
    assert_eq!(loaded.domain(), Some("ISIC"));
    assert_eq!(bits(&loaded.panel_scores()), bits(&reference.panel_scores()));
    let candidate = [Profile::complete("new", [0.93, -0.03, 0.99, 0.85])];
    assert_eq!(bits(&loaded.score(&candidate).unwrap()), bits(&reference.score(&candidate).unwrap()));
    // Only the target is left in the directory: the temporary file was renamed over it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], REFERENCE_VERSION);
    assert_eq!(json["anchors"]["calibration"]["lower"], -0.15);
    assert_eq!(json["panel"][0]["encoder"], "A");
}

#[test]
fn scoring_candidates_never_changes_the_panel() {
    let reference = Reference::build(&panel(), ReferenceConfig::default()).unwrap();
    let before = bits(&reference.panel_scores());
    let candidates = vec![
        Profile::complete("far above", [0.99, -0.001, 1.2, 1.0]),
        Profile::complete("far below", [0.5, -0.4, 0.5, 0.1]),
        Profile::complete("inside", [0.88, -0.07, 0.93, 0.75]),
    ];
    let together = reference.score(&candidates).unwrap();
    assert_eq!(bits(&reference.panel_scores()), before);
    // Each candidate alone scores as in company: candidates are not each other's peers.
    for (c, s) in candidates.iter().zip(&together) {
        assert_eq!(bits(&reference.score(std::slice::from_ref(c)).unwrap()), bits(std::slice::from_ref(s)));
    }
    // A panel member scored as a candidate is that member (n_k = |R| − 1): identical scores.
    let members = reference.score(&panel()).unwrap();
    assert_eq!(bits(&members), before);
    assert!(members.iter().all(|s| s.in_panel) && together.iter().all(|s| !s.in_panel));
    // Contrast: recomputing the reference on the cohort moves the panel's scores.
    let mut cohort = panel();
    cohort.extend(candidates);
    let recomputed = Reference::build(&cohort, ReferenceConfig::default()).unwrap();
    assert_ne!(bits(&recomputed.panel_scores()[..4]), before);
}

#[test]
fn changed_members_and_other_estimators_are_refused() {
    let reference = Reference::build(&panel(), ReferenceConfig::default()).unwrap();
    let err = reference.score(&[Profile::complete("B", [0.85, -0.11, 0.90, 0.70])]).unwrap_err();
    assert!(matches!(err, CrsError::PanelMemberChanged { axis: Axis::Calibration, .. }), "{err}");
    let adaptive = AxisEstimators { calibration: "adaptive_ece_15".into(), ..AxisEstimators::default() };
    let err = reference.score_measured(&panel(), &adaptive, ValueScale::Oriented).unwrap_err();
    assert_eq!(
        err.to_string(),
        "calibration was measured with `adaptive_ece_15` but the reference was built with `ece_15_equal_width`"
    );
    let err =
        reference.score_measured(&panel(), &AxisEstimators::default(), ValueScale::Normalized).unwrap_err();
    assert!(err.to_string().contains("scale was measured with `normalized`"), "{err}");
    assert!(reference.score_measured(&panel(), &AxisEstimators::default(), ValueScale::Oriented).is_ok());
    let missing = Profile::new("X", [Some(0.9), None, Some(0.9), Some(0.9)]);
    assert!(matches!(
        reference.score(&[missing]),
        Err(CrsError::MissingAxis { axis: Axis::Calibration, .. })
    ));
    let twice = [Profile::complete("Y", [0.9; 4]), Profile::complete("Y", [0.8; 4])];
    assert!(matches!(reference.score(&twice), Err(CrsError::DuplicateEncoder { .. })));
}

#[test]
fn normalised_references_use_identity_anchors_and_check_the_range() {
    let config = ReferenceConfig { scale: ValueScale::Normalized, ..ReferenceConfig::default() };
    let one = Reference::build(&[Profile::complete("only", [0.3, 0.4, 0.5, 0.6])], config.clone()).unwrap();
    for axis in AXES {
        assert_eq!((one.anchors().get(axis).lower, one.anchors().get(axis).upper), (0.0, 1.0));
    }
    // A one-member panel scoring its own member has no peers: D = 0 by convention.
    assert_eq!(one.panel_scores()[0].components.dominance, 0.0);
    let err = Reference::build(&[Profile::complete("bad", [0.3, 1.4, 0.5, 0.6])], config).unwrap_err();
    assert!(matches!(err, CrsError::OutsideUnitInterval { axis: Axis::Calibration, .. }), "{err}");
    assert!(matches!(Reference::build(&[], ReferenceConfig::default()), Err(CrsError::EmptyPanel)));
}

#[test]
fn damaged_or_foreign_reference_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ref.json");
    let reference = Reference::build(&panel(), ReferenceConfig::default()).unwrap();
    let good: serde_json::Value = serde_json::from_str(&reference.to_json()).unwrap();
    let load_with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut doc = good.clone();
        edit(&mut doc);
        std::fs::write(&path, doc.to_string()).unwrap();
        Reference::load(&path).unwrap_err().to_string()
    };
    let err = load_with(&|d| d["version"] = 2.into());
    assert!(
        err.contains("reference format version 2 is not supported (this build reads version 1)"),
        "{err}"
    );
    let err = load_with(&|d| d["format"] = "something-else".into());
    assert!(err.contains("`format` is `something-else`"), "{err}");
    let err = load_with(&|d| d["panel"][1]["values"]["robustness"] = 0.71.into());
    assert!(err.contains("panel member `B`: stored") && err.contains("differs from the recomputed"), "{err}");
    let err = load_with(&|d| d["component_weights"]["worst"] = 0.2.into());
    assert!(err.contains("component weights") && err.contains("must sum to 1"), "{err}");
    let err = load_with(&|d| d["anchors"]["robustness"]["upper"] = (-1.0).into());
    assert!(err.contains("robustness anchors") && err.contains("degenerate"), "{err}");
    let err = load_with(&|d| d["extra"] = 1.into());
    assert!(err.contains("unknown field `extra`"), "{err}");
    std::fs::write(&path, "not json").unwrap();
    assert!(
        Reference::load(&path).unwrap_err().to_string().contains("ref.json: not a calibra CRS reference")
    );
    let absent = dir.path().join("absent.json");
    assert!(matches!(Reference::load(&absent), Err(CrsError::Io { .. })));
    // Saving into a directory that does not exist fails cleanly and names the path.
    let err = reference.save(&dir.path().join("no/such/dir/ref.json")).unwrap_err();
    assert!(err.to_string().contains("no/such/dir/ref.json"), "{err}");
}

#[test]
fn per_domain_references_leave_out_unobserved_cells() {
    let mut by_domain = BTreeMap::new();
    by_domain.insert("ISIC".to_string(), panel());
    let mut aptos = panel();
    // BioViL-like: no interface for this dataset, so the whole cell is unobserved.
    aptos.push(Profile::new("chest-only", [None; 4]));
    by_domain.insert("APTOS".to_string(), aptos);
    let refs = build_per_domain(&by_domain, &ReferenceConfig::default()).unwrap();
    assert_eq!(refs.keys().collect::<Vec<_>>(), ["APTOS", "ISIC"]);
    assert_eq!(refs["APTOS"].domain(), Some("APTOS"));
    assert_eq!(refs["APTOS"].panel_len(), 4);
    assert_eq!(refs["APTOS"].panel_scores(), refs["ISIC"].panel_scores());
    // A partially observed cell is an error, never imputed.
    by_domain.get_mut("ISIC").unwrap().push(Profile::new("half", [Some(0.9), None, Some(0.9), Some(0.9)]));
    let err = build_per_domain(&by_domain, &ReferenceConfig::default()).unwrap_err();
    assert!(matches!(err, CrsError::MissingAxis { ref encoder, .. } if encoder == "half"), "{err}");
}
