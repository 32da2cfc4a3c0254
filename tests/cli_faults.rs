//! Issue 20 end to end: the store under a live lock and a broken journal, `eval` on a crashed or
//! impossible store, what `--dry-run` finds up front, and the weak messages made clear.
mod common;

use common::calibra;
use std::path::Path;
use std::process::{Command, Stdio};

/// One synthetic dataset, the `prior` probe (no encoder is read), 3 seeds × 2
/// fractions = 6 fits of (clean + 1 perturbation) × 2 calibrators.
const PRIOR: &str = r#"seeds = [0, 1, 2]
label_fractions = [0.5, 1.0]
calibrators = ["none", "temperature"]

[[encoders]]
name = "none"
source = "hf:calibra/none"

[[datasets]]
spec = "synth:derm?n=120"

[perturbations]
names = ["jpeg"]
severities = [1]

[regimes.frozen]
probes = ["prior"]
"#;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string()
}

fn run_store(dir: &Path) -> (String, String) {
    let recipe = write(dir, "recipe.toml", PRIOR);
    let store = dir.join("store").display().to_string();
    let out = calibra(&["run", &recipe, "--out", &store]);
    assert!(out.status.success(), "{}", stderr(&out));
    (recipe, store)
}

/// Defect 1: `--break-lock` broke the lock of a live process. A lock naming a live pid on this host
/// is refused with its pid, host and start time; the same lock of a dead pid is broken (a requeued job).
#[test]
fn break_lock_refuses_a_live_holder_and_breaks_a_dead_one() {
    let dir = tempfile::tempdir().unwrap();
    let (recipe, store) = run_store(dir.path());
    let mut holder = Command::new("sleep").arg("60").stdout(Stdio::null()).spawn().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let lock =
        format!("{{\"pid\":{},\"host\":\"{}\",\"started_unix_s\":{}}}\n", holder.id(), host(), now + 1);
    std::fs::write(Path::new(&store).join(".lock"), &lock).unwrap();
    let out = calibra(&["run", &recipe, "--out", &store, "--resume", "--break-lock"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("refusing to break the lock"), "{err}");
    assert!(err.contains(&format!("pid {}", holder.id())) && err.contains(&host()), "{err}");
    assert!(err.contains(&format!("started at unix time {}", now + 1)) && err.contains("kill"), "{err}");
    assert_eq!(std::fs::read_to_string(Path::new(&store).join(".lock")).unwrap(), lock);
    holder.kill().unwrap();
    holder.wait().unwrap();
    let out = calibra(&["run", &recipe, "--out", &store, "--resume", "--break-lock"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!Path::new(&store).join(".lock").exists());
}

/// Defect 1, second half: a store written by two processes at once (journal entries in pairs claiming
/// the same bytes) is refused by `run --resume`, `merge` and `eval` with a pointer to the repair, and
/// `calibra merge --repair` rebuilds it with every committed record exactly once.
#[test]
fn merge_repair_rebuilds_a_store_two_processes_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let (recipe, store) = run_store(dir.path());
    let runs = std::fs::read(Path::new(&store).join("runs.jsonl")).unwrap();
    let journal = std::fs::read_to_string(Path::new(&store).join("journal/fits.jsonl")).unwrap();
    let (mut doubled, mut doubled_journal) = (Vec::new(), String::new());
    for line in journal.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let (a, b) = (e["start"].as_u64().unwrap() as usize, e["end"].as_u64().unwrap() as usize);
        doubled.extend_from_slice(&runs[a..b]);
        doubled.extend_from_slice(&runs[a..b]);
        doubled_journal.push_str(&format!("{line}\n{line}\n"));
    }
    std::fs::write(Path::new(&store).join("runs.jsonl"), &doubled).unwrap();
    std::fs::write(Path::new(&store).join("journal/fits.jsonl"), &doubled_journal).unwrap();
    let out = calibra(&["run", &recipe, "--out", &store, "--resume"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("calibra merge --repair"), "{}", stderr(&out));
    let out = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("calibra merge --repair"), "{}", stderr(&out));

    let out = calibra(&["merge", "--repair", &store]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "{} duplicates dropped",
            journal
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["records"].as_u64().unwrap()
                })
                .sum::<u64>()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(Path::new(&store).join("runs.jsonl")).unwrap(), runs);
    assert_eq!(std::fs::read_to_string(Path::new(&store).join("journal/fits.jsonl")).unwrap(), journal);
    let out = calibra(&["run", &recipe, "--out", &store, "--resume"]);
    assert!(out.status.success() && stderr(&out).contains("0 run now"), "{}", stderr(&out));
    let again = calibra(&["merge", "--repair", &store]);
    assert!(again.status.success() && stderr(&again).contains("nothing to repair"), "{}", stderr(&again));
}

/// Weak message: `eval` on a crashed store stopped at the torn tail instead of reading the committed
/// records (what `--resume` keeps).
#[test]
fn eval_reads_the_committed_records_of_a_crashed_store() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = run_store(dir.path());
    let clean = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability", "--format", "json"]);
    assert!(clean.status.success(), "{}", stderr(&clean));
    let runs = Path::new(&store).join("runs.jsonl");
    let mut bytes = std::fs::read(&runs).unwrap();
    let first_line = bytes[..bytes.iter().position(|&b| b == b'\n').unwrap() + 1].to_vec();
    bytes.extend_from_slice(&first_line); // an append whose journal line never landed…
    bytes.extend_from_slice(&first_line[..40]); // …and a torn one
    std::fs::write(&runs, &bytes).unwrap();
    let out = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("past the last committed fit") && stderr(&out).contains("--resume"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.stdout, clean.stdout, "the committed records evaluate as before the crash");
}

/// Defect 6: an impossible metric value is refused at load, naming file and line; a value that
/// disagrees with the record's predictions file is a warning, an error under --strict.
#[test]
fn eval_refuses_impossible_metrics_and_checks_records_against_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = run_store(dir.path());
    let runs = Path::new(&store).join("runs.jsonl");
    let text = std::fs::read_to_string(&runs).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let v: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    let auroc = v["metrics"]["macro_auroc"].as_f64().unwrap();
    let edit = |to: &str| {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        l[1] = l[1].replace(&format!("\"macro_auroc\":{auroc}"), &format!("\"macro_auroc\":{to}"));
        assert_ne!(l[1], lines[1]);
        std::fs::write(&runs, l.join("\n") + "\n").unwrap();
    };
    edit("5.0");
    let out = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("runs.jsonl:2") && err.contains("`macro_auroc` is 5, outside its range [0, 1]"),
        "{err}"
    );
    let other = if auroc > 0.5 { 0.25 } else { 0.75 };
    edit(&other.to_string());
    let out = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning: 1 run record(s) disagree") && err.contains("runs.jsonl:2"), "{err}");
    assert!(err.contains(&format!("`macro_auroc` is {other} but its predictions file")), "{err}");
    let out = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability", "--strict"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("(--strict)"), "{}", stderr(&out));
    // An untouched store gives no warning.
    std::fs::write(&runs, &text).unwrap();
    let out = calibra(&["eval", &store, "--bootstrap", "0", "--no-stability", "--strict"]);
    assert!(out.status.success() && !stderr(&out).contains("disagree"), "{}", stderr(&out));
}

/// Defect 8 and 7: `--dry-run` refuses what can be known up front.
#[test]
fn dry_run_refuses_what_can_be_known_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let dry = |text: &str| {
        let recipe = write(dir.path(), "r.toml", text);
        calibra(&["run", &recipe, "--dry-run"])
    };
    let ok = dry(PRIOR);
    assert!(ok.status.success(), "{}", stderr(&ok));
    for (from, to, needle) in [
        ("synth:derm?n=120", "synth:derm?n=abc", "n=abc"),
        ("severities = [1]", "severities = [4]", "outside 1..=3"),
        // A probe that reads the encoder: the hub id must be in the local cache.
        ("probes = [\"prior\"]", "probes = [\"logistic\"]", "not in the local Hugging Face cache"),
    ] {
        let out = dry(&PRIOR.replace(from, to));
        assert!(!out.status.success(), "{to}");
        assert!(stderr(&out).contains(needle), "{to}: {}", stderr(&out));
    }
    // Zero-shot on a ViT.
    let vit = common::tiny_vit_checkpoint(dir.path());
    let text = PRIOR.replace("hf:calibra/none", &vit.display().to_string())
        + "\n[regimes.zero-shot]\ntemplates = [\"P1\"]\n";
    let out = dry(&text);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("regimes.zero-shot") && stderr(&out).contains("model_type `vit`"),
        "{}",
        stderr(&out)
    );
}

/// Weak messages: each gets a clear message.
#[test]
fn weak_messages_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let (recipe, store) = run_store(dir.path());
    // `run --out FILE`.
    let file = write(dir.path(), "a-file", "x");
    let out = calibra(&["run", &recipe, "--out", &file]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--out names a run store directory, and this is a file"),
        "{}",
        stderr(&out)
    );
    // Negative numbers reach the value parsers.
    for (args, needle) in [
        (vec!["--bins", "-1"], "not a number of bins"),
        (vec!["--seed", "-1"], "not a seed"),
        (vec!["--level", "1.5"], "strictly between 0 and 1"),
        (vec!["--bootstrap", "-2"], "not a count"),
    ] {
        let mut argv = vec!["eval", store.as_str()];
        argv.extend(args.iter().copied());
        let out = calibra(&argv);
        assert!(!out.status.success(), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(needle) && !err.contains("-- -1"), "{args:?}: {err}");
    }
    // A tiny bootstrap is warned about.
    let out = calibra(&["eval", &store, "--bootstrap", "1", "--no-stability"]);
    assert!(stderr(&out).contains("warning: --bootstrap 1 leaves"), "{}", stderr(&out));
    // A stale `.report.tmp-PID` left by a killed report is removed by the next one.
    let stale = Path::new(&store).join(".report.tmp-4294967");
    std::fs::create_dir_all(stale.join("figures")).unwrap();
    let out =
        calibra(&["eval", &store, "--bootstrap", "0", "--no-stability", "--out", &format!("{store}/report")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stale.exists(), "{}", stderr(&out));
    // A one-class folder is a problem, not "problems: none".
    let folder = dir.path().join("one-class/only");
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..10 {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/calibra-data/tests/fixtures/bad/ok.png"),
            folder.join(format!("{i}.png")),
        )
        .unwrap();
    }
    let out =
        calibra(&["data", "inspect", &format!("imagefolder:{}", dir.path().join("one-class").display())]);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &stderr(&out);
    assert!(text.contains("only 1 class (`only`)") && !text.contains("problems: none"), "{text}");
    // A directory given as a CSV.
    let out = calibra(&["metrics", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is a directory; expected a predictions CSV file"), "{}", stderr(&out));
}
