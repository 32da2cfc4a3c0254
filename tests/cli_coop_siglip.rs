//! Prompt learning on a SigLIP checkpoint (issue #25 item 5), end to end on the transformers-made
//! tiny SigLIP fixture of calibra-models (a random `SiglipModel` with a 16-token SentencePiece
//! tokenizer, scripts/golden/siglip_text.py) over a small synthetic dermatology set:
//!
//! - `calibra train --regime coop --method coop|kgcoop|prograd` trains, writes finite records whose
//!   learned head carries SigLIP's `logit_bias`, and KgCoOp's prompts differ from CoOp's;
//! - `--method maple|promptsrc|hicropl` (which prompt the image tower too, calibra's SigLIP port)
//!   train on it and write finite records under their own probe names;
//! - a context too long for SigLIP's context length is refused by name before any training.

mod common;

use std::fs;

use common::{calibra, fit_dirs, tiny_siglip_checkpoint};

const DATA: &str = "synth:derm?n=40&size=32";

fn train(ck: &std::path::Path, out: &std::path::Path, method: &str, n_ctx: &str) -> std::process::Output {
    train_with(ck, out, method, n_ctx, &[])
}

fn train_with(
    ck: &std::path::Path,
    out: &std::path::Path,
    method: &str,
    n_ctx: &str,
    extra: &[&str],
) -> std::process::Output {
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
        n_ctx,
        "--epochs",
        "2",
        "--lr",
        "0.02",
        "--calibrators",
        "none",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    calibra(&args)
}

#[test]
fn coop_methods_train_on_a_siglip_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tiny_siglip_checkpoint(tmp.path(), true);
    let mut prompts = Vec::new();
    for method in ["coop", "kgcoop", "prograd"] {
        let store = tmp.path().join(method);
        let run = train(&ck, &store, method, "2");
        assert!(run.status.success(), "{method}: {}", String::from_utf8_lossy(&run.stderr));
        let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
        let records: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(records.len(), 1, "{method}: clean × none");
        let probe = if method == "coop" { "ce".to_string() } else { format!("{method}+ce") };
        assert_eq!(records[0]["regime"], "coop");
        assert_eq!(records[0]["probe"], probe.as_str());
        for m in ["accuracy", "ece", "nll"] {
            assert!(records[0]["metrics"][m].as_f64().is_some_and(f64::is_finite), "{method}: {m}");
        }
        let fits = fit_dirs(&store);
        let prompt: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(fits[0].join("prompt.json")).unwrap()).unwrap();
        // scripts/golden/siglip_text.py sets logit_bias to -1.7.
        assert!((prompt["bias"].as_f64().unwrap() + 1.7).abs() < 1e-6, "{method}: {}", prompt["bias"]);
        prompts.push(prompt["text_features"].clone());
    }
    // KgCoOp's knowledge term always moves the prompts; ProGrad equals CoOp when no step's gradients
    // conflict (the projection is then the identity), which is what happens on this tiny run.
    assert!(prompts[0] != prompts[1], "KgCoOp learned CoOp's prompts");
}

#[test]
fn deep_prompt_methods_train_on_a_siglip_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tiny_siglip_checkpoint(tmp.path(), true);
    // The tiny SigLIP has 2 blocks per tower and a 16-token context: "a photo of a" (5 tokens in its
    // vocabulary) and "basal cell carcinoma" do not fit together, so the context starts from "a".
    for (method, extra) in [
        ("maple", &["--maple-depth", "2", "--maple-n-ctx", "1"][..]),
        ("promptsrc", &["--promptsrc-depth", "2", "--promptsrc-n-ctx", "1"][..]),
        ("hicropl", &["--hicropl-depth", "2", "--hicropl-cross-layer", "1", "--hicropl-n-ctx", "1"][..]),
    ] {
        let store = tmp.path().join(method);
        let extra = [extra, &["--ctx-init", "a"][..]].concat();
        let run = train_with(&ck, &store, method, "1", &extra);
        assert!(run.status.success(), "{method}: {}", String::from_utf8_lossy(&run.stderr));
        let text = fs::read_to_string(store.join("runs.jsonl")).unwrap();
        let records: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(records.len(), 1, "{method}: clean × none");
        assert_eq!(records[0]["probe"], format!("{method}+ce").as_str());
        for m in ["accuracy", "ece", "nll"] {
            assert!(records[0]["metrics"][m].as_f64().is_some_and(f64::is_finite), "{method}: {m}");
        }
    }
}

#[test]
fn a_context_too_long_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tiny_siglip_checkpoint(tmp.path(), true);
    let run = train(&ck, &tmp.path().join("long"), "coop", "4");
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("basal cell carcinoma") && err.contains("context length 16"), "{err}");
    assert!(!tmp.path().join("long/fits").exists(), "nothing trained before the refusal");
    // MaPLe's default context phrase does not fit the tiny context either: the error names the
    // prompt, not a context size the user did not ask for.
    let run = train_with(&ck, &tmp.path().join("maple"), "maple", "2", &["--maple-depth", "2"]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("\"a photo of a basal cell carcinoma.\" needs") && err.contains("context length 16"),
        "{err}"
    );
}
