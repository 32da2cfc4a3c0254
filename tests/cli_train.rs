//! `calibra train --regime lora` end to end on the transformers-made tiny ViT fixture: records for
//! every condition, a PEFT adapter directory that reproduces the recorded logits when loaded back
//! onto the base checkpoint, identical bytes from an identical command at another thread count and
//! heap policy, and `--resume` of a finished store changes nothing.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{calibra, fit_dirs};

fn checkpoint(dir: &Path) -> PathBuf {
    common::tiny_vit_checkpoint(dir)
}

const DATA: &str = "synth:derm?n=160&size=32";

fn train(ck: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    train_with_env(ck, out, extra, &[])
}

fn train_with_env(ck: &Path, out: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut args = vec![
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "lora",
        "--epochs",
        "2",
        "--lr",
        "1e-3",
        "--perturbations",
        "contrast",
        "--severities",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::calibra_with_env(&args, env)
}

#[test]
fn lora_training_writes_records_and_an_adapter_that_reproduces_them() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let store = tmp.path().join("store");
    let out = train(&ck, &store, &["--threads", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("lora: epoch 2"), "{stderr}");

    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // (clean + contrast:2) × (none + temperature).
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(r["regime"], "lora");
        assert_eq!(r["probe"], "ce");
        assert!(r["metrics"]["ece"].as_f64().is_some());
    }

    // The adapter: PEFT layout, the head saved as modules_to_save.
    let fits = fit_dirs(&store);
    assert_eq!(fits.len(), 1);
    let adapter = fits[0].join("adapter");
    let config: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(adapter.join("adapter_config.json")).unwrap()).unwrap();
    assert_eq!(config["modules_to_save"], serde_json::json!(["classifier"]));
    assert_eq!(config["r"], 8);

    // Loaded back onto the base checkpoint, the adapter gives the recorded clean-test logits.
    let clean =
        records.iter().find(|r| r["condition"]["kind"] == "clean" && r["calibrator"] == "none").unwrap();
    common::assert_adapter_reproduces(
        &ck,
        &adapter,
        &store.join(clean["paths"]["predictions"].as_str().unwrap()),
        DATA,
    );

    // The same command gives the same bytes, on 1 thread as on 3, and with glibc's own heap policy
    // as with calibra's (README "Guarantees"); resuming a finished store adds nothing.
    let twin = tmp.path().join("twin");
    let out = train_with_env(&ck, &twin, &["--threads", "1"], &[("CALIBRA_HEAP", "system")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rel = clean["paths"]["predictions"].as_str().unwrap();
    assert_eq!(fs::read(store.join(rel)).unwrap(), fs::read(twin.join(rel)).unwrap());
    assert_eq!(
        fs::read(adapter.join("adapter_model.safetensors")).unwrap(),
        fs::read(twin.join(fits[0].strip_prefix(&store).unwrap()).join("adapter/adapter_model.safetensors"))
            .unwrap()
    );
    let again = train(&ck, &store, &["--resume"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(fs::read_to_string(store.join("runs.jsonl")).unwrap(), text);
}

#[test]
fn bad_flags_fail_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = checkpoint(tmp.path());
    let store = tmp.path().join("store");
    let out = train(&ck, &store, &["--lora-targets", "query,nonsense"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nonsense"), "{stderr}");
    assert!(!store.join("runs.jsonl").exists());

    let out = calibra(&[
        "train",
        "--encoder",
        "no/such/dir",
        "--data",
        DATA,
        "--regime",
        "lora",
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/dir"));

    let out = train(&ck, &store, &["--threads", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads must be at least 1, got 0"));
    assert!(!store.join("runs.jsonl").exists());

    let untouched = tmp.path().join("untouched");
    let out = train_with_env(&ck, &untouched, &[], &[("CALIBRA_HEAP", "jemalloc")]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CALIBRA_HEAP=\"jemalloc\" is not a heap policy"), "{stderr}");
    assert!(!untouched.exists(), "nothing is written when the heap policy is unknown");
}

#[test]
fn coop_trains_a_prompt_on_the_tiny_clip_and_writes_records() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = common::tiny_clip_checkpoint(tmp.path());
    let store = tmp.path().join("store");
    let out = calibra(&[
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "coop",
        "--n-ctx",
        "4",
        "--epochs",
        "3",
        "--lr",
        "0.02",
        "--loss",
        "mcm",
        "--loss-arg",
        "alpha=0.1",
        "--loss-arg",
        "beta=0.01",
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 2); // clean × (none + temperature)
    for r in &records {
        assert_eq!(r["regime"], "coop");
        assert_eq!(r["probe"], "mcm");
    }
    let fits = fit_dirs(&store);
    let prompt: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(fits[0].join("prompt.json")).unwrap()).unwrap();
    assert_eq!(prompt["losses"].as_array().unwrap().len(), 3 * 3); // 112 train images / 32 per step
}

/// `calibra train --regime coop --method kgcoop|prograd` (issue #25, item 1) on the shipped tiny CLIP:
/// each method's records carry `<method>+<loss>` (plain CoOp: the loss alone) and its learned prompts
/// and results differ from plain CoOp's, trained on the same data, context init and seed.
#[test]
fn coop_methods_train_from_the_cli_on_the_shipped_tiny_clip() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let run = |method: &str, extra: &[&str]| -> (Vec<serde_json::Value>, serde_json::Value) {
        let store = tmp.path().join(method);
        let mut args = vec![
            "train",
            "--encoder",
            ck.to_str().unwrap(),
            "--data",
            DATA,
            "--regime",
            "coop",
            "--method",
            method,
            "--n-ctx",
            "4",
            "--ctx-init",
            "a photo of a",
            "--epochs",
            "3",
            "--lr",
            "0.02",
            "--calibrators",
            "none",
            "--out",
            store.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = calibra(&args);
        assert!(out.status.success(), "{method}: {}", String::from_utf8_lossy(&out.stderr));
        let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
        let records = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let fits = fit_dirs(&store);
        assert_eq!(fits.len(), 1, "{method}");
        let prompt = serde_json::from_str(&fs::read_to_string(fits[0].join("prompt.json")).unwrap()).unwrap();
        (records, prompt)
    };
    let (coop, coop_prompt) = run("coop", &[]);
    assert_eq!(coop.len(), 1);
    assert_eq!((coop[0]["regime"].as_str(), coop[0]["probe"].as_str()), (Some("coop"), Some("ce")));
    for (method, extra) in [("kgcoop", &["--kgcoop-lambda", "8"][..]), ("prograd", &[][..])] {
        let (records, prompt) = run(method, extra);
        assert_eq!(records.len(), 1, "{method}");
        let r = &records[0];
        assert_eq!(r["regime"], "coop", "{method}");
        assert_eq!(r["probe"], format!("{method}+ce"), "{method}");
        assert_ne!(prompt["text_features"], coop_prompt["text_features"], "{method}: same prompts as CoOp");
        assert_ne!(prompt["losses"], coop_prompt["losses"], "{method}: same training losses as CoOp");
        assert_ne!(r["metrics"], coop[0]["metrics"], "{method}: same metrics as CoOp");
    }
    // `--print-recipe` shows the method as a recipe key (and plain CoOp none).
    let print = |extra: &[&str]| {
        let mut args = vec!["train", "--encoder", "e", "--data", DATA, "--regime", "coop", "--print-recipe"];
        args.extend_from_slice(extra);
        let out = calibra(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(print(&["--method", "prograd"]).contains("methods = [\"prograd\"]"));
    let src = print(&["--method", "promptsrc", "--promptsrc-depth", "3"]);
    assert!(src.contains("methods = [\"promptsrc\"]") && src.contains("promptsrc_depth = 3"), "{src}");
    let maple = print(&["--method", "maple", "--maple-depth", "3"]);
    assert!(maple.contains("methods = [\"maple\"]") && maple.contains("maple_depth = 3"), "{maple}");
    assert!(!print(&[]).contains("methods"));
    let hi = print(&["--method", "hicropl", "--hicropl-depth", "3", "--hicropl-cross-layer", "2"]);
    assert!(
        hi.contains("methods = [\"hicropl\"]")
            && hi.contains("hicropl_depth = 3")
            && hi.contains("hicropl_cross_layer = 2"),
        "{hi}"
    );
    // An unknown method is refused with the list of the methods.
    let out = calibra(&[
        "train",
        "--encoder",
        "e",
        "--data",
        DATA,
        "--regime",
        "coop",
        "--method",
        "hicorpl",
        "--out",
        "o",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown CoOp method `hicorpl`")
            && err.contains("coop, kgcoop, prograd, maple, promptsrc, hicropl"),
        "{err}"
    );
}

/// `calibra train --regime coop --method hicropl` (issue #25) on the shipped tiny CLIP, whose towers
/// have 3 blocks (so depth 3, cross layer 2): the fit trains on images and its records carry
/// `hicropl+ce`.
#[test]
fn hicropl_trains_from_the_cli_on_the_shipped_tiny_clip() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/tiny-clip");
    let store = tmp.path().join("hicropl");
    let out = calibra(&[
        "train",
        "--encoder",
        ck.to_str().unwrap(),
        "--data",
        DATA,
        "--regime",
        "coop",
        "--method",
        "hicropl",
        "--hicropl-depth",
        "3",
        "--hicropl-cross-layer",
        "2",
        "--hicropl-n-ctx",
        "4",
        "--epochs",
        "2",
        "--calibrators",
        "none",
        "--out",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 1);
    assert_eq!(
        (records[0]["regime"].as_str(), records[0]["probe"].as_str()),
        (Some("coop"), Some("hicropl+ce"))
    );
    let accuracy = records[0]["metrics"]["accuracy"].as_f64().unwrap();
    assert!(accuracy.is_finite() && (0.0..=1.0).contains(&accuracy), "{accuracy}");
}
