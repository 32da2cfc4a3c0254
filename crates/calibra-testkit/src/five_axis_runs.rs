//! A run set with all five CRS axes, built from the committed example `examples/selective_runs`: its
//! records with absolute predictions paths, an ECE per record and label-fraction runs (without
//! predictions) added, so that the four default axes are observed beside the selective one.

use std::path::{Path, PathBuf};

/// Writes `dir/runs.jsonl` from `example_dir/runs.jsonl` (the `examples/selective_runs` folder) and
/// returns its path. The added values only need spread between the encoders; they are not checked
/// against anything.
///
/// # Panics
/// If the example cannot be read or `dir` cannot be written (a broken test set-up).
pub fn five_axis_runs(example_dir: &Path, dir: &Path) -> PathBuf {
    let text =
        std::fs::read_to_string(example_dir.join("runs.jsonl")).expect("examples/selective_runs/runs.jsonl");
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line).expect("a JSON record");
        let p = v["paths"]["predictions"].as_str().expect("a predictions path").to_string();
        v["paths"]["predictions"] = example_dir.join(p).display().to_string().into();
        let spread = if v["encoder"] == "EncA" { 0.0 } else { 0.03 };
        v["metrics"]["ece"] = (0.03 + spread + 0.01 * (i % 2) as f64).into();
        lines.push(v.to_string());
        if v["condition"]["kind"] == "clean" {
            for f in [0.01, 0.05, 0.1, 0.25] {
                let mut low = v.clone();
                low["label_fraction"] = f.into();
                low["paths"] = serde_json::json!({});
                let auroc = v["metrics"]["macro_auroc"].as_f64().expect("a macro_auroc metric");
                low["metrics"] =
                    serde_json::json!({ "macro_auroc": auroc * (0.8 + 0.5 * f - spread), "ece": 0.05 });
                lines.push(low.to_string());
            }
        }
    }
    let path = dir.join("runs.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write runs.jsonl");
    path
}
