//! `report.html` in a real browser: a report of a small study (six encoders, frozen probes over five
//! label fractions, a perturbation, LoRA, CoOp with two losses, zero-shot over two templates, post-hoc
//! calibrators, three seeds) is written to a temporary directory and loaded by headless Chromium
//! (`--dump-dom`). The test fails on any console message, on a figure that is not inlined, and on an
//! internal link (`href="#…"`) without its target.
//!
//! Chromium is Debian's `chromium` (`.ci/install-chromium` installs it; `.ci/run` calls that). Where it
//! is absent the test says so loudly and passes, except with `CI=true`, where it fails. With
//! `CALIBRA_REPORT_SCREENSHOT=PATH` it also writes a screenshot of the first screen (how
//! `docs/report-screenshot.png` is made).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use calibra_crs::{
    BootstrapConfig, Condition, Evaluation, EvaluationOptions, Regime, RunRecord, RunRecordSet,
};
use calibra_metrics::{Binning, expected_calibration_error, reliability_bins};
use calibra_report::{ReliabilityFigure, eval_report, report_html};

const ENCODERS: [&str; 6] =
    ["scratch", "generalist", "derm-specialist", "chest-specialist", "broad-medical", "tiny-clip"];
const DATASETS: [&str; 2] = ["derm", "fundus"];

#[allow(clippy::too_many_arguments)] // one fixture constructor, every argument a record field
fn record(
    enc: usize,
    ds: usize,
    regime: Regime,
    probe: &str,
    cal: &str,
    frac: f64,
    seed: u64,
    condition: Condition,
) -> RunRecord {
    // Deterministic, distinct values: quality by encoder, a dataset offset, small seed noise.
    let q = [0.0, 0.03, 0.08, 0.05, 0.07, 0.06][enc] + 0.01 * ds as f64;
    let noise = 0.004 * seed as f64;
    let frac_gain = 0.12 * frac.powf(0.3);
    let adapt = match (regime, probe) {
        (Regime::Frozen, _) => 0.0,
        (Regime::Lora, _) => 0.02 - 0.01 * enc as f64,
        (Regime::Coop, "ce") => 0.03,
        (Regime::Coop, _) => 0.01,
        (Regime::ZeroShot, "zero-shot:P1") => -0.1,
        _ => -0.05,
    };
    let hit = if matches!(condition, Condition::Clean) { 0.0 } else { 0.04 + 0.01 * enc as f64 };
    let auroc = 0.62 + q + noise + frac_gain + adapt - hit;
    let ece = (0.09 - 0.4 * q + 0.003 * seed as f64 + hit) * if cal == "none" { 1.0 } else { 0.55 };
    RunRecord {
        encoder: ENCODERS[enc].into(),
        dataset: DATASETS[ds].into(),
        regime,
        probe: probe.into(),
        calibrator: cal.into(),
        label_fraction: frac,
        seed,
        condition,
        metrics: BTreeMap::from([
            ("macro_auroc".to_string(), auroc),
            ("ece".to_string(), ece),
            ("accuracy".to_string(), auroc - 0.1),
            ("brier".to_string(), 0.3 - 0.2 * q + ece / 4.0),
        ]),
        paths: BTreeMap::from([(
            "predictions".to_string(),
            format!("predictions/{enc}-{ds}-{probe}-{cal}-{frac}-{seed}.parquet"),
        )]),
        timings: BTreeMap::new(),
        versions: BTreeMap::new(),
        training: None,
    }
}

fn study() -> RunRecordSet {
    let mut r = Vec::new();
    let blur = Condition::Perturbation { perturbation: "gaussian-blur".into(), severity: 2 };
    for enc in 0..ENCODERS.len() {
        for ds in 0..DATASETS.len() {
            for seed in 0..3 {
                for cal in ["none", "temperature"] {
                    for frac in [0.01, 0.05, 0.1, 0.25, 1.0] {
                        r.push(record(
                            enc,
                            ds,
                            Regime::Frozen,
                            "logistic",
                            cal,
                            frac,
                            seed,
                            Condition::Clean,
                        ));
                    }
                    r.push(record(enc, ds, Regime::Frozen, "logistic", cal, 1.0, seed, blur.clone()));
                    if enc < 5 {
                        r.push(record(enc, ds, Regime::Lora, "ce", cal, 1.0, seed, Condition::Clean));
                    } else {
                        for probe in ["ce", "mcm", "zero-shot:P1", "zero-shot:P2"] {
                            let regime =
                                if probe.starts_with("zero") { Regime::ZeroShot } else { Regime::Coop };
                            r.push(record(enc, ds, regime, probe, cal, 1.0, seed, Condition::Clean));
                        }
                    }
                }
            }
        }
    }
    RunRecordSet::from_records(r, "runs.jsonl").unwrap()
}

/// Reliability bins for every record, as `calibra eval` computes them from predictions files.
fn figures(set: &RunRecordSet) -> Vec<ReliabilityFigure> {
    set.records()
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let r = &l.record;
            let n = 60;
            let conf: Vec<f64> = (0..n).map(|k| 0.35 + 0.6 * ((k * 37 + i) % n) as f64 / n as f64).collect();
            let outcome: Vec<f64> = conf
                .iter()
                .enumerate()
                .map(|(k, c)| f64::from(((k * 13 + i) % 100) as f64 / 100.0 < *c - 0.05))
                .collect();
            let bins = reliability_bins(&conf, &outcome, 15, Binning::RightClosed);
            ReliabilityFigure {
                run: format!("{} / {} / {} / seed {}", r.encoder, r.dataset, r.regime, r.seed),
                encoder: r.encoder.clone(),
                dataset: r.dataset.clone(),
                regime: r.regime.to_string(),
                probe: r.probe.clone(),
                calibrator: r.calibrator.clone(),
                label_fraction: r.label_fraction,
                clean: r.condition == Condition::Clean,
                seed: r.seed,
                source: r.paths["predictions"].clone(),
                ece: expected_calibration_error(&bins, n),
                bins,
            }
        })
        .collect()
}

/// Writes report.md, report.html and the figures into `dir`; returns the path of report.html.
fn write_report(dir: &Path) -> PathBuf {
    let set = study();
    let options = EvaluationOptions {
        bootstrap: Some(BootstrapConfig { replicates: 200, seed: 0, ..BootstrapConfig::default() }),
        ..EvaluationOptions::default()
    };
    let e = Evaluation::build(&set, &options).unwrap();
    let files = eval_report(&e, &figures(&set));
    let svgs: BTreeMap<String, String> = files
        .iter()
        .filter(|f| f.path.ends_with(".svg"))
        .map(|f| (f.path.clone(), f.contents.clone()))
        .collect();
    for f in &files {
        let path = dir.join(&f.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &f.contents).unwrap();
    }
    let md = &files.iter().find(|f| f.path == "report.md").unwrap().contents;
    let html = dir.join("report.html");
    std::fs::write(&html, report_html(md, &svgs)).unwrap();
    html
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
    })
}

fn headless(browser: &Path, profile: &Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

#[test]
fn report_html_loads_in_headless_chromium_without_errors_and_with_every_figure_and_anchor() {
    let Some(browser) = chromium() else {
        let msg = "CHROMIUM NOT FOUND: report.html was NOT checked in a browser (install it with .ci/install-chromium)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
        eprintln!("\n!!!!! {msg} !!!!!\n");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = write_report(dir.path());
    let text = std::fs::read_to_string(&html).unwrap();
    // Self-contained: no script, nothing to fetch (the SVG namespace URI is a name, not a fetch).
    for fetch in ["<script", "src=\"http", "href=\"http", "url(", "@import", "<link"] {
        assert!(!text.contains(fetch), "report.html holds {fetch}");
    }
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let images = md.lines().filter(|l| l.starts_with("![")).count();
    assert!(images >= 5, "profiles, rank charts and reliability grids: {images}");
    assert!(md.lines().count() <= 1500, "report.md has {} lines", md.lines().count());

    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", html.display());
    let out = headless(&browser, profile.path()).arg("--dump-dom").arg(&url).output().unwrap();
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(dom.contains("<h2 id=\"summary\">Summary</h2>"), "the summary heads the page");
    // Every image line of report.md is an inlined SVG figure in the loaded page; none is an <img>.
    assert_eq!(dom.matches("<figure").count(), images, "figures in the DOM");
    assert_eq!(dom.matches("<figure").count(), dom.matches("</svg>").count(), "each figure holds its SVG");
    assert!(!dom.contains("<img"), "a figure was not inlined");
    // Every internal link has its target.
    let ids: std::collections::BTreeSet<&str> =
        dom.split(" id=\"").skip(1).filter_map(|t| t.split('"').next()).collect();
    let links: Vec<&str> = dom.split("href=\"#").skip(1).filter_map(|t| t.split('"').next()).collect();
    assert!(links.len() >= 5, "the contents bar and the summary link sections: {links:?}");
    for l in &links {
        assert!(ids.contains(l), "broken internal link #{l}");
    }
    // The frozen-vs-adapted comparison answers every method, none skipped.
    for method in [
        "| coop | ce |",
        "| coop | mcm |",
        "zero-shot (mean over templates)",
        "zero-shot (best template)",
        "| lora | ce |",
    ] {
        assert!(md.contains(method), "{method}");
    }
    assert!(!md.contains("select one in the axis configuration"));

    if let Ok(shot) = std::env::var("CALIBRA_REPORT_SCREENSHOT") {
        let out = headless(&browser, profile.path())
            .args(["--hide-scrollbars", "--window-size=1280,1000", &format!("--screenshot={shot}")])
            .arg(&url)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
