//! `calibra convert`. `openai-clip`: an OpenAI CLIP `.pt` state dict (CheXzero's release format; the
//! tiny fixture of calibra-models written by scripts/golden/encoders_openai_clip.py) becomes an
//! OpenCLIP directory that `calibra features` reads; bad input fails with a message and no output.

mod common;

use std::path::{Path, PathBuf};

use common::{calibra, feature_width};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-models/tests/fixtures/openai_clip").join(name)
}

#[test]
fn a_converted_state_dict_serves_as_an_encoder() {
    let tmp = tempfile::tempdir().unwrap();
    let ck = tmp.path().join("tiny-chexzero");
    let source = fixture("legacy_nested.pt");
    let run = calibra(&[
        "convert",
        "openai-clip",
        source.to_str().unwrap(),
        "--out",
        ck.to_str().unwrap(),
        "--preprocess",
        "chexzero",
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    for needle in [
        "entry 'state_dict'",
        "prefix 'module.'",
        "vision 8 px, patch 4, width 64, depth 1",
        "input_resolution",
        "--encoder",
    ] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }

    let width = feature_width(&ck, "synth:chest?n=24&size=28", &tmp.path().join("f.safetensors"));
    assert_eq!(width, 64, "the vision width");

    // A second conversion to the same place is refused, and leaves the first intact.
    let again = calibra(&["convert", "openai-clip", source.to_str().unwrap(), "--out", ck.to_str().unwrap()]);
    assert_ne!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert!(ck.join("open_clip_model.safetensors").is_file());
}

#[test]
fn bad_input_is_refused_with_a_message_and_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let source = fixture("state_dict.pt");
    for (args, needle) in [
        (vec!["--mean", "0.5,0.5"], "--mean: expected 3"),
        (vec!["--std", "0.5,-1,0.5"], "positive"),
        (vec!["--key", "model"], "'model'"),
    ] {
        let mut all =
            vec!["convert", "openai-clip", source.to_str().unwrap(), "--out", out.to_str().unwrap()];
        all.extend(args);
        let run = calibra(&all);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_ne!(run.status.code(), Some(0), "{all:?}");
        assert!(stderr.contains(needle), "{all:?}: missing `{needle}` in {stderr}");
        assert!(!out.exists());
    }
    let missing = tmp.path().join("missing.pt");
    let run = calibra(&["convert", "openai-clip", missing.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_ne!(run.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&run.stderr).contains("missing.pt"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
}

#[test]
fn a_multimodal_vision_tower_is_extracted_and_serves_as_an_encoder() {
    let tmp = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/calibra-models/tests/fixtures/vision_towers/gemma3-sharded");
    let ck = tmp.path().join("tiny-medgemma-vision");
    let run = calibra(&["convert", "vision-tower", source.to_str().unwrap(), "--out", ck.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    for needle in ["siglip_vision_model", "gemma3", "'vision_tower.'", "preprocessor_config.json copied"] {
        assert!(stdout.contains(needle), "missing `{needle}` in:\n{stdout}");
    }
    let width = feature_width(&ck, "synth:chest?n=24&size=28", &tmp.path().join("f.safetensors"));
    assert_eq!(width, 32, "the tower's width");

    // The multimodal directory itself is refused with the command that helps.
    let run = calibra(&[
        "features",
        "--encoder",
        source.to_str().unwrap(),
        "--data",
        "synth:chest?n=24&size=28",
        "--out",
        tmp.path().join("g.safetensors").to_str().unwrap(),
    ]);
    assert_ne!(run.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("calibra convert vision-tower"), "{stderr}");
}
