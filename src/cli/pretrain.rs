//! `calibra pretrain`: make the tiny encoders shipped in `checkpoints/` from the synthetic suite
//! (`--panel`: the ViT panel and the contrastive `tiny-clip`; `--clip`: `tiny-clip` alone), or one ViT
//! of your own (`--name X --task SPEC ...`), deterministically, each with a MODEL_CARD.md that records
//! the exact command and the measured training loss and accuracy.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use calibra_models::parse_device;
use calibra_train::pretrain::{PretrainPlan, VitArchitecture, model_card, panel, pretrain};
use calibra_train::pretrain_clip::{TINY_CLIP, clip_model_card, pretrain_clip, tiny_clip_plan};
use calibra_train::trainer::TrainConfig;

#[derive(Debug, clap::Args)]
pub struct PretrainArgs {
    /// Make the whole shipped panel: scratch, generalist, derm-specialist, chest-specialist,
    /// broad-medical, tiny-clip.
    #[arg(long, conflicts_with_all = ["name", "task", "rounds"])]
    pub panel: bool,
    /// Make only the panel's tiny CLIP (`tiny-clip`: both towers trained contrastively on synthetic
    /// captions of synth:derm, synth:fundus and synth:chest); same as `--panel --only tiny-clip`.
    #[arg(long, conflicts_with_all = ["name", "task", "rounds", "panel"])]
    pub clip: bool,
    /// With `--panel`: make only these members (comma-separated names).
    #[arg(long, value_delimiter = ',', requires = "panel")]
    pub only: Vec<String>,
    /// The checkpoint to make (a directory name under --out).
    #[arg(long, required_unless_present_any = ["panel", "clip"])]
    pub name: Option<String>,
    /// A training task (a calibra-data SPEC, e.g. `synth:derm?n=1000&size=32`). Repeatable: several
    /// tasks train round-robin with one head each. None: random initialisation only.
    #[arg(long, value_name = "SPEC")]
    pub task: Vec<String>,
    /// Round-robin rounds over the tasks (`--name` only).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// Output directory.
    #[arg(long, default_value = "checkpoints")]
    pub out: PathBuf,
    /// `--panel`: samples per task (the generalist's shapes task gets twice as many).
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
    /// Epochs per task visit (`--panel`: per single-task member; broad-medical does this many rounds
    /// of one epoch per task).
    #[arg(long, default_value_t = 6)]
    pub epochs: usize,
    /// Seed of the initial weights and of training (`--name` only; the panel uses 0).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Peak learning rate (AdamW, warmup + cosine).
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    #[arg(long, default_value_t = 32)]
    pub batch_size: usize,
    /// ViT hidden size (`--name` only).
    #[arg(long, default_value_t = VitArchitecture::default().hidden_size)]
    pub hidden: usize,
    #[arg(long, default_value_t = VitArchitecture::default().num_layers)]
    pub layers: usize,
    #[arg(long, default_value_t = VitArchitecture::default().num_heads)]
    pub heads: usize,
    #[arg(long, default_value_t = VitArchitecture::default().intermediate_size)]
    pub mlp: usize,
    #[arg(long, default_value_t = VitArchitecture::default().patch_size)]
    pub patch: usize,
    #[arg(long, default_value_t = VitArchitecture::default().image_size)]
    pub image_size: usize,
    /// tiny-clip: epochs over the pooled training images of its three tasks.
    #[arg(long, default_value_t = CLIP_EPOCHS)]
    pub clip_epochs: usize,
    /// tiny-clip: peak learning rate (AdamW, warmup + cosine).
    #[arg(long, default_value_t = CLIP_LR)]
    pub clip_lr: f64,
    /// tiny-clip: contrastive batch size (image-caption pairs per step).
    #[arg(long, default_value_t = CLIP_BATCH_SIZE)]
    pub clip_batch_size: usize,
    /// Compute device (`cpu`; others as `calibra features --device`).
    #[arg(long, default_value = "cpu")]
    pub device: String,
}

/// The shipped tiny-clip's optimisation (see checkpoints/tiny-clip/MODEL_CARD.md).
const CLIP_EPOCHS: usize = 15;
const CLIP_LR: f64 = 1e-3;
const CLIP_BATCH_SIZE: usize = 64;

/// The command line as typed, quoted for a POSIX shell where needed (recorded in the model cards).
fn command_line() -> String {
    let quote = |a: String| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_=./,:".contains(c)) {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    std::iter::once("calibra".to_string())
        .chain(std::env::args().skip(1).map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn run(args: &PretrainArgs) -> Result<()> {
    let device = parse_device(&args.device).context("--device")?;
    let mut make_clip = args.clip;
    let plans: Vec<PretrainPlan> = if args.clip {
        Vec::new()
    } else if args.panel {
        let mut plans = panel(args.n, args.epochs);
        for plan in &mut plans {
            plan.train.lr = args.lr;
            plan.train.batch_size = args.batch_size;
        }
        make_clip = true;
        if !args.only.is_empty() {
            let mut known: Vec<String> = plans.iter().map(|p| p.name.clone()).collect();
            known.push(TINY_CLIP.to_string());
            for name in &args.only {
                if !known.contains(name) {
                    bail!("--only {name}: not a panel member; the panel is {}", known.join(", "));
                }
            }
            plans.retain(|p| args.only.contains(&p.name));
            make_clip = args.only.iter().any(|n| n == TINY_CLIP);
        }
        plans
    } else {
        let name = args.name.clone().context("--name is required without --panel or --clip")?;
        vec![PretrainPlan {
            name,
            arch: VitArchitecture {
                hidden_size: args.hidden,
                num_layers: args.layers,
                num_heads: args.heads,
                intermediate_size: args.mlp,
                patch_size: args.patch,
                image_size: args.image_size,
            },
            seed: args.seed,
            tasks: args.task.clone(),
            rounds: args.rounds,
            train: TrainConfig {
                lr: args.lr,
                batch_size: args.batch_size,
                seed: args.seed,
                ..PretrainPlan::default_train(args.epochs)
            },
            holdout_every: 5,
        }]
    };
    let command = command_line();
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut summary = Vec::new();
    for plan in &plans {
        let started = std::time::Instant::now();
        eprintln!("pretrain {}: {} task(s), {} round(s)", plan.name, plan.tasks.len(), plan.rounds);
        let name = plan.name.clone();
        let mut last_label = String::new();
        let report = pretrain(plan, &args.out, &device, &mut |label, step| {
            if label != last_label || step.step % 20 == 0 || step.step == step.total_steps {
                eprintln!(
                    "  {name} {label}: step {}/{} loss {:.4} lr {:.2e}",
                    step.step, step.total_steps, step.loss, step.lr
                );
                last_label = label.to_string();
            }
        })
        .with_context(|| format!("pretraining {}", plan.name))?;
        let card = report.dir.join("MODEL_CARD.md");
        std::fs::write(&card, model_card(plan, &report, &command))
            .with_context(|| format!("writing {}", card.display()))?;
        let elapsed = started.elapsed().as_secs_f64();
        for t in &report.tasks {
            eprintln!(
                "  {}: {} final train loss {:.4}, held-out accuracy {:.4}",
                plan.name, t.spec, t.final_train_loss, t.holdout_accuracy
            );
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
        let plan = tiny_clip_plan(args.n, args.clip_epochs, args.clip_lr, args.clip_batch_size);
        let started = std::time::Instant::now();
        eprintln!(
            "pretrain {}: {} task(s), {} epoch(s), contrastive",
            plan.name,
            plan.tasks.len(),
            plan.train.epochs
        );
        let name = plan.name.clone();
        let mut epoch_losses: Vec<f64> = Vec::new();
        let report = pretrain_clip(&plan, &args.out, &device, &mut |step| {
            epoch_losses.push(step.loss);
            if step.step % 20 == 0 || step.step == step.total_steps {
                let mean = epoch_losses.iter().sum::<f64>() / epoch_losses.len() as f64;
                eprintln!(
                    "  {name}: step {}/{} (epoch {}) loss {:.4} (mean since last report {:.4}) lr {:.2e}",
                    step.step,
                    step.total_steps,
                    step.epoch + 1,
                    step.loss,
                    mean,
                    step.lr
                );
                epoch_losses.clear();
            }
        })
        .with_context(|| format!("pretraining {}", plan.name))?;
        let card = report.dir.join("MODEL_CARD.md");
        std::fs::write(&card, clip_model_card(&plan, &report, &command))
            .with_context(|| format!("writing {}", card.display()))?;
        for t in &report.tasks {
            let score = match (t.accuracy_p1, t.mean_auroc_p1()) {
                (Some(acc), _) => format!(
                    "zero-shot P1 top-1 {acc:.4}, ensemble {:.4} (majority {:.4})",
                    t.accuracy_ensemble.unwrap_or(f64::NAN),
                    t.majority_accuracy
                ),
                (None, auroc) => format!("zero-shot P1 mean label AUROC {:.4}", auroc.unwrap_or(f64::NAN)),
            };
            eprintln!("  {}: {} {score}", plan.name, t.spec);
        }
        summary.push(format!(
            "{}  {} parameters, {} bytes, {:.1} s  -> {}",
            plan.name,
            report.parameters,
            report.weights_bytes,
            started.elapsed().as_secs_f64(),
            report.dir.display()
        ));
    }
    for line in summary {
        println!("{line}");
    }
    Ok(())
}
