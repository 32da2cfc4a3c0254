//! `--device` on `calibra run` and `calibra train` (and `features`, `zero-shot`, `pretrain`), and a
//! recipe's `[runtime] device` (issue 16): a device this build cannot use is one clear error before
//! any work starts (no run store or output is created), a bad name is refused with the names that work, and with the `wgpu` feature
//! `calibra train --device wgpu` names the adapter (warning when it is a software renderer) and writes
//! the records the CPU run writes, within 1e-3.

mod common;

use std::path::Path;

use common::calibra;

const DATA: &str = "synth:derm?n=64&size=32";

fn scratch() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/scratch").display().to_string()
}

fn train_args<'a>(encoder: &'a str, store: &'a str, device: &'a str) -> Vec<&'a str> {
    vec![
        "train",
        "--encoder",
        encoder,
        "--data",
        DATA,
        "--regime",
        "lora",
        "--epochs",
        "1",
        "--lr",
        "1e-3",
        "--perturbations",
        "jpeg",
        "--severities",
        "1",
        "--calibrators",
        "none,temperature",
        "--device",
        device,
        "--out",
        store,
    ]
}

#[test]
fn an_unknown_device_is_refused_with_the_names_that_work_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let encoder = scratch();
    let out = calibra(&train_args(&encoder, store.to_str().unwrap(), "tpu"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--device `tpu`") && err.contains("cpu, wgpu, wgpu:N, cuda, cuda:N"), "{err}");
    assert!(!store.exists(), "no run store before the device is known to work");
}

#[test]
fn a_recipe_names_its_device_under_runtime_with_the_line_of_a_bad_one() {
    let tmp = tempfile::tempdir().unwrap();
    let recipe = tmp.path().join("r.toml");
    let text = format!(
        "seeds = [0]\nlabel_fractions = [1.0]\ncalibrators = [\"none\"]\n\n[[encoders]]\nsource = \"{}\"\n\n\
         [[datasets]]\nname = \"derm\"\nspec = \"{DATA}\"\n\n[regimes.frozen]\nprobes = [\"logistic\"]\n\n\
         [runtime]\ndevice = \"gpu0\"\n",
        scratch()
    );
    std::fs::write(&recipe, &text).unwrap();
    let out = calibra(&["run", recipe.to_str().unwrap(), "--dry-run"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("r.toml:16") && err.contains("runtime.device") && err.contains("`gpu0`"), "{err}");

    // A valid name runs; `--device cpu` overrides the recipe's device.
    std::fs::write(&recipe, text.replace("gpu0", "cpu")).unwrap();
    let store = tmp.path().join("store");
    let out = calibra(&["run", recipe.to_str().unwrap(), "--out", store.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("device: cpu"), "the device used is said");
}

#[cfg(not(feature = "wgpu"))]
#[test]
fn wgpu_without_the_feature_names_the_feature_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let encoder = scratch();
    let out = calibra(&train_args(&encoder, store.to_str().unwrap(), "wgpu"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--device `wgpu`") && err.contains("--features wgpu"), "{err}");
    assert!(!store.exists(), "no run store before the device is known to work");
}

/// `features`, `zero-shot` and `pretrain` check a GPU device before any work too, under the same
/// words; nothing is written.
#[cfg(not(feature = "wgpu"))]
#[test]
fn the_other_device_taking_commands_refuse_wgpu_without_the_feature_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("out.safetensors");
    let out_dir = tmp.path().join("pretrained");
    let (file, dir) = (out_file.to_str().unwrap(), out_dir.to_str().unwrap());
    let encoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip").display().to_string();
    let commands: [Vec<&str>; 3] = [
        vec!["features", "--encoder", &encoder, "--data", DATA, "--device", "wgpu", "--out", file],
        vec!["zero-shot", "--encoder", &encoder, "--data", DATA, "--device", "wgpu", "--out", file],
        "pretrain --name x --hidden 16 --layers 1 --heads 2 --mlp 32 --patch 8 --image-size 32 --device wgpu --out"
            .split(' ')
            .chain([dir])
            .collect(),
    ];
    for args in commands {
        let out = calibra(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", args[0]);
        assert!(err.contains("--device `wgpu`") && err.contains("--features wgpu"), "{}: {err}", args[0]);
        assert!(!out_file.exists() && !out_dir.exists(), "{}: nothing is written", args[0]);
    }
}

/// Every record's metrics and predictions (row-major values of its predictions file), keyed by
/// (regime, condition, calibrator), from a store.
#[cfg(feature = "wgpu")]
fn records(store: &Path) -> std::collections::BTreeMap<String, (serde_json::Value, Vec<f64>)> {
    std::fs::read_to_string(store.join("runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            let key = format!("{} {} {}", r["regime"], r["condition"], r["calibrator"]);
            let values = common::read_logits(&store.join(r["paths"]["predictions"].as_str().unwrap())).1;
            (key, (r["metrics"].clone(), values))
        })
        .collect()
}

/// The same LoRA training on wgpu and on the CPU writes the same records: every metric within 1e-3
/// (200 images, so that no ranking metric hangs on one pair of near-equal logits), and every
/// prediction within 1e-2. The predictions of float32 training on two backends drift further apart
/// than the metrics: AdamW divides each gradient element by its own running magnitude, so an element
/// that is 0 on one backend and 1e-9 on the other moves its weight by a good part of the lr.
///
/// The comparison trains with the LoRA dropout off: each device draws its dropout masks from its own
/// generator (the CPU in fixed ChaCha8 chunks, `lora/branch_dropout.rs`; wgpu on the device, through
/// burn's `Dropout`), so with dropout on the two runs are two different random draws, not one
/// computation (measured on lavapipe: metrics 9.4e-7 apart with dropout off, 1.5e-3 with the default
/// 0.05, one ranking pair of the jpeg condition's AUROC flipped). The default dropout still runs on
/// wgpu below: it must train and write the same records, with finite metrics.
#[cfg(feature = "wgpu")]
#[test]
fn train_on_wgpu_writes_the_records_of_the_cpu_run() {
    let tmp = tempfile::tempdir().unwrap();
    let encoder = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/generalist").display().to_string();
    let (cpu, gpu) = (tmp.path().join("cpu"), tmp.path().join("wgpu"));
    let gpu_dropout = tmp.path().join("wgpu-dropout");
    for (store, device, dropout) in [(&cpu, "cpu", "0"), (&gpu, "wgpu", "0"), (&gpu_dropout, "wgpu", "0.05")]
    {
        let mut args = train_args(&encoder, store.to_str().unwrap(), device);
        args[4] = "synth:derm?n=200&size=32";
        args.extend(["--lora-dropout", dropout]);
        let out = calibra(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{device}: {stderr}");
        if device == "wgpu" {
            // The adapter is named; a software renderer (lavapipe here) is warned about.
            let line =
                stderr.lines().find(|l| l.starts_with("device: wgpu (--device): ")).unwrap_or_else(|| {
                    panic!("no line naming the adapter: {stderr}");
                });
            let software = line.contains("llvmpipe") || line.contains("lavapipe");
            assert_eq!(stderr.contains("a software renderer on the CPU, not a GPU"), software, "{stderr}");
        }
    }
    let (on_cpu, on_gpu) = (records(&cpu), records(&gpu));
    assert_eq!(on_cpu.keys().collect::<Vec<_>>(), on_gpu.keys().collect::<Vec<_>>());
    let with_dropout = records(&gpu_dropout);
    assert_eq!(on_cpu.keys().collect::<Vec<_>>(), with_dropout.keys().collect::<Vec<_>>());
    for (key, (metrics, values)) in &with_dropout {
        // Every metric the CPU run has as a number is a finite number here too (a null or a missing
        // metric fails).
        for (name, value) in on_cpu[key].0.as_object().unwrap() {
            if value.is_number() {
                let with = &metrics[name];
                assert!(
                    with.as_f64().is_some_and(f64::is_finite),
                    "{key} {name}: {with} with dropout on wgpu"
                );
            }
        }
        assert!(values.iter().all(|v| v.is_finite()), "{key}: a non-finite prediction with dropout on wgpu");
    }
    let (mut worst_metric, mut worst_value) = (0.0f64, 0.0f64);
    for (key, (metrics, values)) in &on_cpu {
        let (gpu_metrics, gpu_values) = &on_gpu[key];
        for (name, value) in metrics.as_object().unwrap() {
            let (Some(a), Some(b)) = (value.as_f64(), gpu_metrics[name].as_f64()) else { continue };
            assert!((a - b).abs() <= 1e-3, "{key} {name}: {b} on wgpu, {a} on the cpu");
            worst_metric = worst_metric.max((a - b).abs());
        }
        assert_eq!(values.len(), gpu_values.len(), "{key}");
        let diff = values.iter().zip(gpu_values).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        assert!(diff <= 1e-2, "{key}: predictions differ by {diff:e} on wgpu");
        worst_value = worst_value.max(diff);
    }
    eprintln!(
        "{} records; worst metric difference wgpu vs cpu {worst_metric:e}, worst prediction {worst_value:e}",
        on_cpu.len()
    );
}
