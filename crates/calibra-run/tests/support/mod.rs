//! Test executors and helpers shared by the integration tests of calibra-run.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use calibra_crs::RunRecord;
use calibra_run::executor::{ExecError, Executor, RunContext};
use calibra_run::fitted::FitOutcome;
use calibra_run::grid::FitSpec;
use calibra_run::store::{PredictionsData, RunOutput};
use calibra_run::{Recipe, ValidationOptions};

/// A recipe over two hub encoders and one synthetic dataset: 2 encoders × (2 probes × 2 fractions ×
/// 2 seeds frozen + 2 seeds LoRA on one encoder) = 18 fits, each with (1 clean + 2×2 perturbed +
/// 1 shift) × 2 calibrators = 12 slots.
pub const RECIPE: &str = r#"seeds = [0, 1]
label_fractions = [0.1, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
source = "hf:org/alpha"

[[encoders]]
name = "beta"
source = "hf:org/beta"

[[datasets]]
spec = "synth:derm?n=40"
shift = [{ name = "derm-b", spec = "synth:fundus?n=40" }]

[perturbations]
names = ["jpeg", "contrast"]
severities = [1, 3]

[regimes.frozen]
probes = ["logistic", "knn"]

[regimes.lora]
r = 4
alpha = 8.0
dropout = 0.0
lr = 1e-4
epochs = 2
targets = ["query", "value"]
encoders = ["beta"]
label_fractions = [1.0]

[[losses]]
name = "mcm"
args = { alpha = 0.5, beta = 1.0 }
"#;

pub fn recipe() -> Recipe {
    Recipe::parse(RECIPE, "test.toml", ValidationOptions { check_paths: false }).unwrap()
}

/// A number in [0, 1) derived from the bytes of `parts` (FNV-1a), so outputs are deterministic.
pub fn unit(parts: &[&str]) -> f64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for b in p.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// An executor for tests: one record per requested slot, metrics derived deterministically from the fit
/// key, the slot and `salt`, and a two-row predictions file. `fail_on` makes fits whose description
/// contains it fail; `calls` counts executions.
#[derive(Default)]
pub struct TestExecutor {
    pub salt: String,
    pub fail_on: Option<String>,
    pub calls: RefCell<usize>,
    /// Emit a record with a wrong encoder name (an executor bug the runner must catch).
    pub wrong_encoder: bool,
    /// Fits whose description contains this panic, after starting an atomic write (a temporary file in
    /// the feature cache and one in the fit's directory) that the unwind leaves unfinished.
    pub panic_on: Option<String>,
}

impl Executor for TestExecutor {
    fn supports(&self, _fit: &FitSpec) -> Result<(), String> {
        Ok(())
    }

    fn fit<'e>(&'e self, fit: &FitSpec, ctx: &mut RunContext<'_>) -> Result<FitOutcome<'e>, ExecError> {
        *self.calls.borrow_mut() += 1;
        if let Some(f) = &self.fail_on
            && fit.describe().contains(f.as_str())
        {
            return Err(format!("simulated failure of {}", fit.describe()).into());
        }
        if let Some(f) = &self.panic_on
            && fit.describe().contains(f.as_str())
        {
            let pid = std::process::id();
            let pass = ctx.feature_dir(&calibra_run::grid::FeaturePass {
                encoder: fit.config.encoder.name.clone(),
                dataset: fit.config.dataset.name.clone(),
                condition: fit.slots[0].condition.clone(),
            });
            std::fs::create_dir_all(&pass).unwrap();
            std::fs::write(pass.join(format!(".features.safetensors.tmp-{pid}")), "half").unwrap();
            std::fs::create_dir_all(ctx.fit_dir().join(format!("checkpoint.tmp-{pid}"))).unwrap();
            std::fs::write(ctx.fit_dir().join("state.json.tmp"), "half").unwrap();
            let half: Vec<f32> = vec![1.0; 2];
            assert_eq!(half.len(), 3, "simulated panic in {}", fit.describe());
        }
        ctx.report("working");
        let c = &fit.config;
        let mut outputs = Vec::new();
        for slot in &ctx.missing {
            let cond = slot.condition.to_string();
            let auroc = 0.5 + 0.5 * unit(&[fit.key.as_str(), &cond, &slot.calibrator, &self.salt]);
            let ece = 0.2 * unit(&[&cond, fit.key.as_str(), &slot.calibrator, &self.salt]);
            let p = unit(&[fit.key.as_str(), &cond]);
            let csv = format!("id,label,prob_a,prob_b\ns0,0,{p},{}\ns1,1,{},{p}\n", 1.0 - p, 1.0 - p);
            outputs.push(RunOutput {
                record: RunRecord {
                    encoder: if self.wrong_encoder { "nobody".into() } else { c.encoder.name.clone() },
                    dataset: c.dataset.name.clone(),
                    regime: c.regime,
                    probe: c.probe.clone(),
                    calibrator: slot.calibrator.clone(),
                    label_fraction: c.label_fraction,
                    seed: c.seed,
                    condition: slot.condition.clone(),
                    metrics: BTreeMap::from([("macro_auroc".to_string(), auroc), ("ece".to_string(), ece)]),
                    paths: BTreeMap::new(),
                    timings: BTreeMap::new(),
                    versions: BTreeMap::new(),
                    training: None,
                },
                predictions: PredictionsData::Bytes(csv.into_bytes()),
            });
        }
        Ok(FitOutcome::Records(outputs))
    }
}

/// The sorted lines of a store's runs.jsonl.
pub fn sorted_lines(dir: &Path) -> Vec<String> {
    let mut lines: Vec<String> =
        std::fs::read_to_string(dir.join("runs.jsonl")).unwrap().lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
