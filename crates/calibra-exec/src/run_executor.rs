//! The executor of `calibra run` (and `calibra train`): dispatches each fit to its regime's module,
//! on one burn device (the CPU backend unless `--device` / `[runtime] device` names another), with
//! one dataset cache that the runner reads too.

use burn::tensor::Device;
use calibra_crs::Regime;
use calibra_run::baseline::BaselineExecutor;
use calibra_run::{DatasetCache, ExecError, Executor, FitMethod, FitOutcome, FitSpec, RunContext};

use crate::{adapted, coop, estimate, frozen, zero_shot};

/// Probes this executor fits on frozen features (besides `prior`).
const LEARNED_PROBES: [&str; 3] = ["logistic", "mlp", "knn"];

/// Frozen probes, LoRA and full fine-tuning, CoOp, zero-shot, estimates, plus the `prior` baseline.
pub struct RunExecutor {
    baseline: BaselineExecutor,
    pub(crate) device: Device,
    pub(crate) datasets: DatasetCache,
}

impl Default for RunExecutor {
    fn default() -> Self {
        Self::new()
    }
}

impl RunExecutor {
    /// Everything runs on burn's CPU backend.
    pub fn new() -> Self {
        Self::on(Device::flex())
    }

    /// Everything that runs a network (feature passes, fine-tuning, CoOp, zero-shot) runs on `device`
    /// (e.g. from [`calibra_models::parse_device`], which checks that it comes up); probes,
    /// calibrators and metrics stay on the CPU.
    pub fn on(device: Device) -> Self {
        RunExecutor { baseline: BaselineExecutor::default(), device, datasets: DatasetCache::default() }
    }
}

impl Executor for RunExecutor {
    fn supports(&self, fit: &FitSpec) -> Result<(), String> {
        match (&fit.config.method, fit.config.regime) {
            (FitMethod::Probe { probe, .. }, Regime::Frozen) if probe == "prior" => {
                self.baseline.supports(fit)
            }
            (FitMethod::Probe { probe, .. }, Regime::Frozen) if LEARNED_PROBES.contains(&probe.as_str()) => {
                Ok(())
            }
            (FitMethod::Lora { .. } | FitMethod::Full { .. }, _) => adapted::supports(fit),
            (FitMethod::Coop { .. }, _) => coop::supports(fit),
            (FitMethod::ZeroShot { .. }, _) => zero_shot::supports(self, fit),
            (FitMethod::Estimate { .. }, Regime::Estimate) => Ok(()),
            _ => Err(format!(
                "regime {} / {} is not wired into `calibra run` yet; this build runs frozen probes \
                 (logistic, mlp, knn, prior), LoRA, full fine-tuning, CoOp and zero-shot",
                fit.config.regime, fit.config.probe
            )),
        }
    }

    fn fit<'a>(&'a self, fit: &'a FitSpec, ctx: &mut RunContext<'_>) -> Result<FitOutcome<'a>, ExecError> {
        match &fit.config.method {
            FitMethod::Probe { probe, .. } if probe == "prior" => self.baseline.fit(fit, ctx),
            FitMethod::Probe { probe, layer } => frozen::fit(self, fit, probe, *layer, ctx),
            FitMethod::Lora { .. } | FitMethod::Full { .. } => adapted::fit(self, fit, ctx),
            FitMethod::Coop { .. } => coop::fit(self, fit, ctx),
            FitMethod::ZeroShot { .. } => zero_shot::fit(self, fit, ctx),
            FitMethod::Estimate { estimators, layer } => estimate::fit(self, fit, estimators, *layer, ctx),
        }
    }

    fn datasets(&self) -> Option<&DatasetCache> {
        Some(&self.datasets)
    }
}

#[cfg(test)]
mod device_names {
    use calibra_models::DeviceKind;
    use calibra_run::names::device_problem;

    /// Recipe validation (calibra-run, free of burn) accepts exactly the device names
    /// calibra-models parses.
    #[test]
    fn recipe_validation_and_the_device_parser_agree() {
        for name in [
            "cpu",
            "CPU",
            "flex",
            "ndarray",
            "wgpu",
            "wgpu:0",
            "wgpu:12",
            "cuda",
            "cuda:3",
            " Cuda:1 ",
            "cpu:0",
            "ndarray:1",
            "cuda:",
            "cuda:-1",
            "cuda:x",
            "wgpu:1:2",
            "tpu",
            "",
            "metal",
        ] {
            let parsed = name.parse::<DeviceKind>();
            assert_eq!(device_problem(name).is_none(), parsed.is_ok(), "`{name}`: {parsed:?}");
        }
    }
}
