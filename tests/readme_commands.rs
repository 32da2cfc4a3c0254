//! README.md opens with the two commands a newcomer runs; this keeps them true: the first must be the
//! quickstart study with a valid recipe, the second must be what .ci/run runs verbatim.

use std::path::Path;
use std::process::Command;

fn readme_commands() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let block = readme.split("```sh\n").nth(1).expect("README.md opens with a ```sh block");
    let block = &block[..block.find("```").expect("the block is closed")];
    block.lines().map(|l| l.split('#').next().unwrap().trim().to_string()).filter(|l| !l.is_empty()).collect()
}

#[test]
fn readme_opens_with_exactly_two_commands_and_ci_runs_the_test_command() {
    let commands = readme_commands();
    assert_eq!(commands.len(), 2, "README.md must open with exactly two commands: {commands:?}");
    assert!(
        commands[0].starts_with("cargo run --release -- "),
        "first command runs calibra: {}",
        commands[0]
    );
    let ci = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == commands[1]),
        ".ci/run must run README's test command `{}` verbatim",
        commands[1]
    );
}

/// The first command runs the quickstart study (`calibra run recipes/quickstart.toml ... --report`):
/// minutes of release-build time, too long for a debug build on every CI run. Here its exact arguments
/// (the store moved to a temporary folder) go through `--dry-run`, which validates the recipe, finds
/// the shipped checkpoints and expands the grid; `tests/quickstart_promises.rs` runs a miniature of the
/// same recipe end to end (kill + resume, shards + merge, the report traced to the records).
#[test]
fn readme_main_job_is_the_quickstart_and_its_recipe_is_valid() {
    let commands = readme_commands();
    let mut args: Vec<String> = commands[0]
        .trim_start_matches("cargo run --release -- ")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(args[..2], ["run", "recipes/quickstart.toml"], "the main job runs the quickstart recipe");
    assert!(args.iter().any(|a| a == "--report"), "the main job ends with the report");
    let out = tempfile::tempdir().unwrap();
    let i = args.iter().position(|a| a == "--out").expect("the main job names its run store");
    args[i + 1] = out.path().join("quickstart").display().to_string();
    args.push("--dry-run".into());
    let result = Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(result.status.success(), "README's main job: {}", String::from_utf8_lossy(&result.stderr));
    assert!(
        stdout.contains("recipe valid") && stdout.contains("coop") && stdout.contains("zero-shot"),
        "{stdout}"
    );
}
