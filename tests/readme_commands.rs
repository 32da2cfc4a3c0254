//! README.md opens with the two commands a newcomer runs; this keeps them true: the first must run
//! calibra successfully on the shipped example, the second must be what .ci/run runs verbatim.

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

#[test]
fn readme_main_job_runs_on_the_built_in_example() {
    let commands = readme_commands();
    let args: Vec<String> = commands[0]
        .trim_start_matches("cargo run --release -- ")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    // Same arguments, but the output goes to a temporary folder instead of target/.
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("quickstart");
    let mut args = args.clone();
    if let Some(i) = args.iter().position(|a| a == "--out") {
        args[i + 1] = out_dir.display().to_string();
    }
    let result = Command::new(env!("CARGO_BIN_EXE_calibra"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(result.status.success(), "README's main job failed: {}", String::from_utf8_lossy(&result.stderr));
    assert!(out_dir.join("report.md").is_file(), "the main job writes its report");
    assert!(String::from_utf8_lossy(&result.stdout).contains("CRS"));
}
