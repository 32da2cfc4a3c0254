//! Helpers shared by the end-to-end tests of the `calibra` binary.
#![allow(dead_code)] // each test file uses the subset it needs

use std::path::Path;
use std::process::{Command, Output};

/// Run the calibra binary built for these tests.
pub fn calibra(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_calibra")).args(args).output().expect("the calibra binary runs")
}

/// Path of a file shipped in `examples/`.
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name).display().to_string()
}

/// Run calibra, require success, and parse stdout as one JSON document.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = calibra(args);
    assert!(out.status.success(), "calibra {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}
