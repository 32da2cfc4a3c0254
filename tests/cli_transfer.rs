//! End to end: `calibra transfer score` on .npy and `calibra features`-style safetensors inputs made in
//! the test (a tiny .npy writer below), checked against the library, plus its bad-input errors.

mod common;

use std::path::Path;

use calibra_data::Target;
use calibra_train::features::FeatureSet;
use calibra_transfer::{Estimator, Features, ScoreOptions, Targets, score};
use common::calibra;

/// Write a C-ordered little-endian .npy (format 1.0).
fn write_npy(path: &Path, descr: &str, shape: &[usize], body: &[u8]) {
    let shape_txt = match shape {
        [n] => format!("({n},)"),
        s => format!("({})", s.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_txt}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(body);
    std::fs::write(path, out).unwrap();
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn data(n: usize, d: usize, c: usize) -> (Vec<f64>, Vec<usize>) {
    let y: Vec<usize> = (0..n).map(|i| (i * 7) % c).collect();
    let x = (0..n * d)
        .map(|k| {
            let (i, j) = (k / d, k % d);
            let h = ((k as u64).wrapping_mul(2654435761) % 1000) as f64 / 1000.0 - 0.5;
            h + if j % c == y[i] { 0.8 } else { 0.0 }
        })
        .collect();
    (x, y)
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn npy_inputs_give_the_library_numbers_for_every_estimator() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d, c) = (48, 6, 3);
    let (x, y) = data(n, d, c);
    let fp = dir.path().join("features.npy");
    let lp = dir.path().join("labels.npy");
    write_npy(&fp, "<f8", &[n, d], &f64_bytes(&x));
    let yb: Vec<u8> = y.iter().flat_map(|&v| (v as i64).to_le_bytes()).collect();
    write_npy(&lp, "<i8", &[n], &yb);
    let (fs, ls) = (fp.to_str().unwrap(), lp.to_str().unwrap());
    let got = run_json(&["transfer", "score", "--features", fs, "--labels", ls, "--format", "json"]);
    assert_eq!(
        (got["n"].as_u64(), got["d"].as_u64(), got["num_classes"].as_u64()),
        (Some(48), Some(6), Some(3))
    );
    let want = score(
        &Features::new(x, n, d).unwrap(),
        &Targets::Classes(y),
        &Estimator::ALL,
        &ScoreOptions::default(),
    )
    .unwrap();
    for name in Estimator::NAMES {
        let v = got["scores"][name].as_f64().unwrap_or_else(|| panic!("{name} missing: {got}"));
        assert_eq!(v, want.scores[name].unwrap(), "{name}");
    }
    // A subset, by name; the table names each estimator.
    let sub = run_json(&[
        "transfer",
        "score",
        "--features",
        fs,
        "--labels",
        ls,
        "--estimators",
        "gbc,logme",
        "--format",
        "json",
    ]);
    let keys: Vec<&String> = sub["scores"].as_object().unwrap().keys().collect();
    assert_eq!(keys, vec!["gbc", "logme"]);
    let table =
        calibra(&["transfer", "score", "--features", fs, "--labels", ls, "--estimators", "transrate"]);
    assert!(table.status.success());
    assert!(String::from_utf8_lossy(&table.stdout).contains("transrate"));
    // Unknown estimator names the bad one and the valid ones.
    let bad = calibra(&["transfer", "score", "--features", fs, "--labels", ls, "--estimators", "logme,leep"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("`leep`") && err.contains("knn_agreement"), "{err}");
}

#[test]
fn bad_inputs_name_the_row_and_the_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (10, 3);
    let (mut x, y) = data(n, d, 2);
    x[7 * d + 2] = f64::NAN;
    let fp = dir.path().join("f.npy");
    write_npy(&fp, "<f8", &[n, d], &f64_bytes(&x));
    let lp = dir.path().join("l.npy");
    let yb: Vec<u8> = y.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect();
    write_npy(&lp, "<i4", &[n], &yb);
    let out =
        calibra(&["transfer", "score", "--features", fp.to_str().unwrap(), "--labels", lp.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("row 7"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Label count ≠ rows.
    let (x, _) = data(n, d, 2);
    write_npy(&fp, "<f8", &[n, d], &f64_bytes(&x));
    write_npy(&lp, "<i4", &[n - 1], &yb[..(n - 1) * 4]);
    let out =
        calibra(&["transfer", "score", "--features", fp.to_str().unwrap(), "--labels", lp.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("9 label rows for 10 feature rows"), "{err}");
    // A singleton class: GBC is null and the note says why, the rest is computed.
    let mut y1 = y.clone();
    y1[3] = 2;
    let yb: Vec<u8> = y1.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect();
    write_npy(&lp, "<i4", &[n], &yb);
    let out = calibra(&[
        "transfer",
        "score",
        "--features",
        fp.to_str().unwrap(),
        "--labels",
        lp.to_str().unwrap(),
        "--estimators",
        "gbc,hscore",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["scores"]["gbc"].is_null() && v["scores"]["hscore"].is_f64(), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("gbc: class 2 has 1 sample"));
}

#[test]
fn feature_safetensors_carry_their_labels_and_multilabel_npy_works() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (30, 4);
    let (x, y) = data(n, d, 3);
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let set = FeatureSet {
        ids: (0..n).map(|i| format!("s{i}")).collect(),
        classes: vec!["a".into(), "b".into(), "c".into()],
        targets: y.iter().map(|&c| Target::Class(c)).collect(),
        layers: vec![(0.5, x32.iter().map(|v| v * 2.0).collect()), (1.0, x32.clone())],
        dim: d,
        fingerprint: "test".into(),
        splits: None,
    };
    let sp = dir.path().join("feat.safetensors");
    set.write(&sp, &[]).unwrap();
    let got = run_json(&[
        "transfer",
        "score",
        "--features",
        sp.to_str().unwrap(),
        "--estimators",
        "logme",
        "--format",
        "json",
    ]);
    let f = Features::from_f32(&x32, n, d).unwrap();
    let want =
        score(&f, &Targets::Classes(y.clone()), &[Estimator::Logme], &ScoreOptions::default()).unwrap();
    assert_eq!(got["scores"]["logme"].as_f64().unwrap(), want.scores["logme"].unwrap());
    let bad_layer = calibra(&["transfer", "score", "--features", sp.to_str().unwrap(), "--layer", "0.25"]);
    assert!(String::from_utf8_lossy(&bad_layer.stderr).contains("--layer 0.25"));

    // f32 features + [N, 3] multilabel with -1 = missing.
    let fp = dir.path().join("f32.npy");
    let b: Vec<u8> = x32.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&fp, "<f4", &[n, d], &b);
    let lab: Vec<i8> = (0..n * 3)
        .map(|k| {
            let (row, col) = (k / 3, k % 3);
            // Both classes in every label column (and some missing entries).
            if k % 11 == 0 { -1 } else { ((row * (col + 1) + row / 3) % 2) as i8 }
        })
        .collect();
    let lp = dir.path().join("ml.npy");
    write_npy(&lp, "|i1", &[n, 3], &lab.iter().map(|v| *v as u8).collect::<Vec<_>>());
    let got = run_json(&[
        "transfer",
        "score",
        "--features",
        fp.to_str().unwrap(),
        "--labels",
        lp.to_str().unwrap(),
        "--estimators",
        "logme,hscore",
        "--format",
        "json",
    ]);
    assert_eq!(got["num_classes"].as_u64(), Some(3));
    let values = lab.iter().map(|&v| if v < 0 { None } else { Some(v == 1) }).collect();
    let want = score(
        &f,
        &Targets::Multilabel { labels: 3, values },
        &[Estimator::Logme, Estimator::Hscore],
        &ScoreOptions::default(),
    )
    .unwrap();
    assert_eq!(got["scores"]["hscore"].as_f64().unwrap(), want.scores["hscore"].unwrap());
}

#[test]
fn features_of_every_split_score_one_split_as_that_splits_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let ck = common::tiny_vit_checkpoint(dir.path());
    let features = |split: &str, out: &Path| {
        let o = calibra(&[
            "features",
            "--encoder",
            ck.to_str().unwrap(),
            "--data",
            "synth:derm?n=60&size=32",
            "--split",
            split,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "features --split {split}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let all = dir.path().join("all.safetensors");
    let said = features("all", &all);
    assert!(said.contains("60 samples (") && said.contains(" train, ") && said.contains(" test)"), "{said}");
    let set = FeatureSet::read(&all).unwrap();
    assert_eq!(set.splits.as_ref().map(Vec::len), Some(60));

    let train = dir.path().join("train.safetensors");
    features("train", &train);
    let score_of = |path: &Path, split: Option<&str>| {
        let mut args =
            vec!["transfer", "score", "--features", path.to_str().unwrap(), "--estimators", "logme,hscore"];
        if let Some(s) = split {
            args.extend(["--split", s]);
        }
        args.extend(["--format", "json"]);
        run_json(&args)
    };
    let from_all = score_of(&all, Some("train"));
    let own = score_of(&train, None);
    assert_eq!(from_all["n"], own["n"]);
    for e in ["logme", "hscore"] {
        let (a, b) = (from_all["scores"][e].as_f64().unwrap(), own["scores"][e].as_f64().unwrap());
        assert!(
            (a - b).abs() <= 1e-4 * b.abs().max(1.0),
            "{e}: {a} from the all-split file, {b} from its own"
        );
    }

    // --split on a one-split file, and an unknown split name, are refused with the reason.
    let one = calibra(&["transfer", "score", "--features", train.to_str().unwrap(), "--split", "test"]);
    let err = String::from_utf8_lossy(&one.stderr);
    assert!(!one.status.success() && err.contains("records no split per row"), "{err}");
    let bad_out = dir.path().join("dev.safetensors");
    let bad = calibra(&[
        "features",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        "synth:derm",
        "--split",
        "dev",
        "--out",
        bad_out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("`dev`") && err.contains("all"), "{err}");
}
