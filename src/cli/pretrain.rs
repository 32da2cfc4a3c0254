//! `calibra pretrain`: make the tiny encoders shipped in `checkpoints/` from the synthetic suite
//! (`--panel`: the ViT panel and the contrastive `tiny-clip`; `--clip`: `tiny-clip` alone), or one ViT
//! of your own (`--name X --task SPEC ...`), deterministically, each with a MODEL_CARD.md that records
//! the exact command and the measured training loss and accuracy.

use std::path::PathBuf;

use anyhow::{Context, Result};
use calibra_train::pretrain::VitArchitecture;
use calibra_train::pretrain_job::{PretrainJob, PretrainSelection, run_pretrain_job, shell_command};

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

pub fn run(args: &PretrainArgs) -> Result<()> {
    super::device_notice::announce_unless_cpu(&args.device)?;
    let selection = if args.clip {
        PretrainSelection::Clip
    } else if args.panel {
        PretrainSelection::Panel { only: args.only.clone() }
    } else {
        let arch = VitArchitecture {
            hidden_size: args.hidden,
            num_layers: args.layers,
            num_heads: args.heads,
            intermediate_size: args.mlp,
            patch_size: args.patch,
            image_size: args.image_size,
        };
        let name = args.name.clone().context("--name is required without --panel or --clip")?;
        let (tasks, rounds, seed) = (args.task.clone(), args.rounds, args.seed);
        PretrainSelection::One { name, arch, tasks, rounds, seed }
    };
    let job = PretrainJob {
        selection,
        n: args.n,
        epochs: args.epochs,
        lr: args.lr,
        batch_size: args.batch_size,
        clip_epochs: args.clip_epochs,
        clip_lr: args.clip_lr,
        clip_batch_size: args.clip_batch_size,
        out: args.out.clone(),
        device: args.device.clone(),
        command: shell_command(std::env::args().skip(1)),
    };
    for line in run_pretrain_job(&job, &mut |line| eprintln!("{line}"))? {
        println!("{line}");
    }
    Ok(())
}
