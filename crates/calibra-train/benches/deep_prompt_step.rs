//! One MaPLe, PromptSRC or HiCroPL training step on burn's flex CPU backend (issue #25 "Speed"): a ViT-B/16
//! CLIP with random weights (vision width 768, 12 blocks, 224 px; text width 512, 12 blocks,
//! projection 512), batch 32 of 224-px images, K = 5 classes, the reference settings (MaPLe: 2
//! context tokens, depth 9; PromptSRC: 4 + 4 tokens, depth 9 in both towers, its regularisers; SGD
//! momentum 0.9; HiCroPL: 16 tokens, depth 12, cross layer 6, the mapping before the step, Adam).
//! Each step runs both prompted towers forward and back (PromptSRC and HiCroPL also the frozen image
//! tower), so it costs about what a LoRA step through both towers does.
//!
//! Prints the median step time and images/s per method; compare with
//! `benches/peers/deep_prompt_step_peer.py` (PyTorch CPU, same shapes, `torch.set_num_threads(2)`):
//! `python3 benches/peers/harness.py deep-prompt-step` does both, interleaved. Not run in CI; run
//! alone with `cargo bench -p calibra-train --bench deep_prompt_step`. Env: `DEEP_PROMPT_BENCH_STEPS`
//! (default 3; the first step is a warm-up and not counted), `DEEP_PROMPT_BENCH_METHODS` (default
//! `maple,promptsrc`; add `hicropl`).

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::{Device, Int, Tensor, TensorData};
use calibra_models::clip::{ClipConfig, ClipModel, ClipTextConfig, ClipVisionConfig, EotPooling};
use calibra_models::tokenizer::ClipTokenizer;
use calibra_train::build_loss;
use calibra_train::coop::{CoopConfig, CoopError, PromptImages, train_hicropl, train_maple, train_promptsrc};

const BATCH: usize = 32;
const SIDE: usize = 224;
const CLASSES: [&str; 5] =
    ["melanocytic nevus", "melanoma", "basal cell carcinoma", "benign keratosis", "dermatofibroma"];

fn main() {
    // The heap policy the `calibra` binary applies (crate calibra-heap), so that this measures what
    // users run.
    let heap = calibra_heap::HeapPolicy::apply_from_env().expect("CALIBRA_HEAP is retain or system");
    eprintln!("heap: {}", heap.describe());
    let steps: usize =
        std::env::var("DEEP_PROMPT_BENCH_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(3).max(2);
    let methods = std::env::var("DEEP_PROMPT_BENCH_METHODS").unwrap_or_else(|_| "maple,promptsrc".into());
    let device = Device::flex();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures");
    let tok = ClipTokenizer::from_dir(fixtures.join("tokenizer/hf")).expect("fixture tokenizer");
    let config = ClipConfig::new(
        ClipVisionConfig::new(768, 12, 12, 3072, SIDE, 16),
        // Pooled at the fixture tokenizer's end-of-text id (PromptSRC's frozen template features
        // run the text tower on plain ids).
        ClipTextConfig::new(49_408, 512, 12, 8, 2048).with_pooling(EotPooling::FirstId(tok.eos_id())),
        512,
    );
    let model: ClipModel = config.init(&device);
    let classnames: Vec<String> = CLASSES.iter().map(|s| s.to_string()).collect();
    let n = BATCH * 3 * SIDE * SIDE;
    // Deterministic, non-degenerate pixels (no RNG needed for timing).
    let pixels: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1009) as f32 / 1009.0) - 0.5).collect();
    let images = Tensor::<4>::from_data(TensorData::new(pixels, [BATCH, 3, SIDE, SIDE]), &device);
    let labels: Vec<usize> = (0..BATCH).map(|i| i % CLASSES.len()).collect();
    let loss = build_loss::<&str>("ce", &[]).expect("ce");
    for method in methods.split(',') {
        let base = match method {
            "maple" => CoopConfig::maple_reference(),
            "promptsrc" => CoopConfig::promptsrc_reference(),
            "hicropl" => CoopConfig::hicropl_reference(),
            other => {
                panic!("DEEP_PROMPT_BENCH_METHODS: unknown method {other:?} (maple, promptsrc, hicropl)")
            }
        };
        // One full batch per epoch: `steps` epochs = `steps` optimiser steps.
        let config = CoopConfig { epochs: steps, batch_size: BATCH, ..base };
        let mut batches = |rows: &[usize]| -> Result<PromptImages, CoopError> {
            let index = Tensor::<1, Int>::from_data(
                TensorData::new(rows.iter().map(|&r| r as i64).collect::<Vec<_>>(), [rows.len()]),
                &device,
            );
            Ok(PromptImages::all(rows, images.clone().select(0, index)))
        };
        let mut stamps = vec![Instant::now()];
        let mut progress = |_: &calibra_train::trainer::StepReport| stamps.push(Instant::now());
        let (model, tok, names, y, l) = (&model, &tok, &classnames, &labels, loss.as_ref());
        match method {
            "maple" => {
                train_maple(model, tok, names, &mut batches, y, l, &config, &device, None, &mut progress)
                    .map(|_| ())
            }
            "promptsrc" => {
                train_promptsrc(model, tok, names, &mut batches, y, l, &config, &device, None, &mut progress)
                    .map(|_| ())
            }
            _ => train_hicropl(model, tok, names, &mut batches, y, l, &config, &device, None, &mut progress)
                .map(|_| ()),
        }
        .expect("the step runs");
        let mut times: Vec<f64> = stamps.windows(2).skip(1).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "burn flex deep-prompt step [{method}] ViT-B/16 224 px, batch {BATCH}, K {}: median {median:.4} s/step, \
             {:.2} images/s ({} steps)",
            CLASSES.len(),
            BATCH as f64 / median,
            times.len()
        );
    }
}
