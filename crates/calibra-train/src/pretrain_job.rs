//! What `calibra pretrain` makes, in one call: the shipped panel (every member or `--only` some),
//! the tiny CLIP alone, or one ViT of the caller's own; each checkpoint trained
//! ([`crate::pretrain::pretrain`], [`crate::pretrain_clip::pretrain_clip`]) and given its
//! MODEL_CARD.md with the command that made it. Progress goes to a line callback; the result is one
//! summary line per checkpoint.

use std::path::PathBuf;

use calibra_models::parse_device;

use crate::pretrain::{PretrainError, PretrainPlan, VitArchitecture, io, model_card, panel, pretrain};
use crate::pretrain_clip::{TINY_CLIP, clip_model_card, pretrain_clip, tiny_clip_plan};
use crate::trainer::TrainConfig;

/// Which checkpoints to make.
#[derive(Debug, Clone)]
pub enum PretrainSelection {
    /// The shipped panel (its ViTs and `tiny-clip`); `only` non-empty: just these members.
    Panel { only: Vec<String> },
    /// `tiny-clip` alone.
    Clip,
    /// One ViT of the caller's own: trained on `tasks` round-robin for `rounds` rounds (none: random
    /// initialisation only), from weights seeded by `seed`, with the job's epochs, lr and batch size.
    One { name: String, arch: VitArchitecture, tasks: Vec<String>, rounds: usize, seed: u64 },
}

/// A `calibra pretrain` run.
#[derive(Debug, Clone)]
pub struct PretrainJob {
    pub selection: PretrainSelection,
    /// Panel: samples per task; epochs per task visit; peak lr and batch size of every ViT member.
    pub n: usize,
    pub epochs: usize,
    pub lr: f64,
    pub batch_size: usize,
    /// `tiny-clip`: epochs, peak lr and contrastive batch size.
    pub clip_epochs: usize,
    pub clip_lr: f64,
    pub clip_batch_size: usize,
    /// Output directory (created); each checkpoint is `<out>/<name>/`.
    pub out: PathBuf,
    /// Compute device name (`cpu`, ...).
    pub device: String,
    /// The command line recorded in the model cards ([`shell_command`]).
    pub command: String,
}

/// `calibra` and its arguments as typed, each quoted for a POSIX shell where needed: the command
/// line the model cards record.
pub fn shell_command(args: impl Iterator<Item = String>) -> String {
    let quote = |a: String| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_=./,:".contains(c)) {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    std::iter::once("calibra".to_string()).chain(args.map(quote)).collect::<Vec<_>>().join(" ")
}

/// The ViT plans of `job` and whether it makes `tiny-clip`. An `--only` name that is not a panel
/// member is an error listing the panel.
fn plans(job: &PretrainJob) -> Result<(Vec<PretrainPlan>, bool), PretrainError> {
    match &job.selection {
        PretrainSelection::Clip => Ok((Vec::new(), true)),
        PretrainSelection::One { name, arch, tasks, rounds, seed } => {
            let train = TrainConfig {
                lr: job.lr,
                batch_size: job.batch_size,
                seed: *seed,
                ..PretrainPlan::default_train(job.epochs)
            };
            let (name, arch, tasks, rounds, seed) = (name.clone(), *arch, tasks.clone(), *rounds, *seed);
            Ok((vec![PretrainPlan { name, arch, seed, tasks, rounds, train, holdout_every: 5 }], false))
        }
        PretrainSelection::Panel { only } => {
            let mut plans = panel(job.n, job.epochs);
            for plan in &mut plans {
                plan.train.lr = job.lr;
                plan.train.batch_size = job.batch_size;
            }
            if only.is_empty() {
                return Ok((plans, true));
            }
            let mut known: Vec<String> = plans.iter().map(|p| p.name.clone()).collect();
            known.push(TINY_CLIP.to_string());
            if let Some(name) = only.iter().find(|n| !known.contains(n)) {
                return Err(PretrainError::Invalid(format!(
                    "--only {name}: not a panel member; the panel is {}",
                    known.join(", ")
                )));
            }
            plans.retain(|p| only.contains(&p.name));
            Ok((plans, only.iter().any(|n| n == TINY_CLIP)))
        }
    }
}

/// Makes the checkpoints of `job`, writing each one's MODEL_CARD.md; `log` receives the progress
/// lines. Returns one summary line per checkpoint (name, parameters, bytes, seconds, directory).
pub fn run_pretrain_job(job: &PretrainJob, log: &mut dyn FnMut(&str)) -> Result<Vec<String>, PretrainError> {
    let device = parse_device(&job.device).map_err(|e| PretrainError::Invalid(format!("--device: {e}")))?;
    let (plans, make_clip) = plans(job)?;
    std::fs::create_dir_all(&job.out).map_err(io(&job.out))?;
    let mut summary = Vec::new();
    for plan in &plans {
        let started = std::time::Instant::now();
        log(&format!("pretrain {}: {} task(s), {} round(s)", plan.name, plan.tasks.len(), plan.rounds));
        let name = plan.name.clone();
        let mut last_label = String::new();
        let report = pretrain(plan, &job.out, &device, &mut |label, step| {
            if label != last_label || step.step % 20 == 0 || step.step == step.total_steps {
                log(&format!(
                    "  {name} {label}: step {}/{} loss {:.4} lr {:.2e}",
                    step.step, step.total_steps, step.loss, step.lr
                ));
                last_label = label.to_string();
            }
        })
        .map_err(|e| PretrainError::Invalid(format!("pretraining {}: {e}", plan.name)))?;
        let card = report.dir.join("MODEL_CARD.md");
        std::fs::write(&card, model_card(plan, &report, &job.command)).map_err(io(&card))?;
        let elapsed = started.elapsed().as_secs_f64();
        for t in &report.tasks {
            log(&format!(
                "  {}: {} final train loss {:.4}, held-out accuracy {:.4}",
                plan.name, t.spec, t.final_train_loss, t.holdout_accuracy
            ));
        }
        summary.push(format!(
            "{}  {} parameters, {} bytes, {:.1} s  -> {}",
            plan.name,
            report.parameters,
            report.weights_bytes,
            elapsed,
            report.dir.display()
        ));
    }
    if make_clip {
        summary.push(make_tiny_clip(job, &device, log)?);
    }
    Ok(summary)
}

/// `tiny-clip` with its model card; its summary line.
fn make_tiny_clip(
    job: &PretrainJob,
    device: &burn::tensor::Device,
    log: &mut dyn FnMut(&str),
) -> Result<String, PretrainError> {
    let plan = tiny_clip_plan(job.n, job.clip_epochs, job.clip_lr, job.clip_batch_size);
    let started = std::time::Instant::now();
    log(&format!(
        "pretrain {}: {} task(s), {} epoch(s), contrastive",
        plan.name,
        plan.tasks.len(),
        plan.train.epochs
    ));
    let name = plan.name.clone();
    let mut epoch_losses: Vec<f64> = Vec::new();
    let report = pretrain_clip(&plan, &job.out, device, &mut |step| {
        epoch_losses.push(step.loss);
        if step.step % 20 == 0 || step.step == step.total_steps {
            let mean = epoch_losses.iter().sum::<f64>() / epoch_losses.len() as f64;
            log(&format!(
                "  {name}: step {}/{} (epoch {}) loss {:.4} (mean since last report {:.4}) lr {:.2e}",
                step.step,
                step.total_steps,
                step.epoch + 1,
                step.loss,
                mean,
                step.lr
            ));
            epoch_losses.clear();
        }
    })
    .map_err(|e| PretrainError::Invalid(format!("pretraining {}: {e}", plan.name)))?;
    let card = report.dir.join("MODEL_CARD.md");
    std::fs::write(&card, clip_model_card(&plan, &report, &job.command)).map_err(io(&card))?;
    for t in &report.tasks {
        let score = match (t.accuracy_p1, t.mean_auroc_p1()) {
            (Some(acc), _) => format!(
                "zero-shot P1 top-1 {acc:.4}, ensemble {:.4} (majority {:.4})",
                t.accuracy_ensemble.unwrap_or(f64::NAN),
                t.majority_accuracy
            ),
            (None, auroc) => format!("zero-shot P1 mean label AUROC {:.4}", auroc.unwrap_or(f64::NAN)),
        };
        log(&format!("  {}: {} {score}", plan.name, t.spec));
    }
    Ok(format!(
        "{}  {} parameters, {} bytes, {:.1} s  -> {}",
        plan.name,
        report.parameters,
        report.weights_bytes,
        started.elapsed().as_secs_f64(),
        report.dir.display()
    ))
}
