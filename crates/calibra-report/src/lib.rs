//! calibra-report: the human-facing side of an evaluation — Markdown tables and SVG figures.
//!
//! Owns: the CSV tables of an evaluation ([`evaluation_csv_files`]: `#[derive(Serialize)]` rows written
//! with the `csv` crate, sharing one set of cell-key columns), a minimal SVG writer ([`Svg`]), the figures of a calibra report (reliability diagram and
//! grid, normalised profile bars, rank-displacement chart, the transferability τ-b dot chart, the risk–coverage and coverage-under-shift line charts), Markdown table formatting, and the assembly of an
//! evaluation's report ([`eval_report`]: `report.md` plus its figures), and the terminal outputs of
//! `calibra metrics` ([`MetricsReport`]), `calibra calibrate --report` ([`CalibrationReport`],
//! [`set_table`]) and `calibra transfer score` ([`transfer_score_table`]), with their one number
//! format ([`cell`]).
//! Figures are plain SVG 1.1 with text in generic font families: producing them needs no font files,
//! no system libraries and no network, and any browser renders them. [`svg_to_png`] rasterises them
//! in pure Rust (resvg) with an embedded DejaVu Sans, and [`report_html`] makes the self-contained
//! `report.html` (figures inlined as SVG, no script, nothing fetched).
//!
//! It also owns the command pipelines whose output this crate shapes: the whole evaluation of a run
//! set ([`evaluate`] with its typed [`EvalOptions`], from `calibra eval` flags or from a recipe's
//! `[evaluator]` settings: [`store_eval_options`], and its stdout [`summary_table`]), the CRS of a
//! profiles table ([`score_profiles`]) and the comparison of two `encoder,score` orderings
//! ([`compare_score_files`]).
//!
//! Must not depend on: burn. Tables and figures do no file IO (they are bytes and strings, and any
//! caller can write them); only the pipelines read run records, predictions, references and score
//! files, and write an output directory. Figures take plain data (names and
//! numbers) so that any caller can draw them; the only calibra type they use is
//! `calibra_metrics::ReliabilityBin`, the bins the metrics crate computes ECE from. Only the report
//! assembly ([`eval_report`]) and the pipelines read calibra-crs's public `Evaluation`.
#![forbid(unsafe_code)]

mod calibration_tables;
mod capped_table;
mod convergence_report;
mod csv_cells;
mod eval_report;
mod evaluation_csv;
mod focus_csv;
mod focus_report;
mod html;
mod line_chart;
mod markdown;
mod metrics_report;
mod png;
mod profile_bars;
mod rank_displacement;
mod reliability_diagram;
mod reliability_grid;
mod selective_csv;
mod selective_report;
mod svg;
mod tau_dots;
mod text_cell;
mod transfer_report;
// Command pipelines (`calibra eval`, `report`, `crs`, `compare-ranks`): the binary only wires them.
mod bootstrap_warning;
mod crs_table;
mod eval_error;
mod eval_options;
mod eval_output;
mod eval_pipeline;
mod eval_summary;
mod evaluator_settings;
mod frozen_weights;
mod output_dir;
mod prediction_check;
mod profile_scoring;
mod reliability_figures;
mod run_records;
mod score_ranking;
mod transfer_table;

pub use calibration_tables::{CalibrationReport, ReportRow, set_fit_lines, set_table};
pub use convergence_report::convergence_section;
pub use csv_cells::{CellColumns, ConditionColumns, CsvTableError, Number, RunColumns, run_columns};
pub use eval_report::{
    ReliabilityFigure, ReportFile, ReportOptions, eval_report, eval_report_with, heading_anchor,
};
pub use evaluation_csv::evaluation_csv_files;
pub use focus_report::{encoder_analyses_section, focus_section};
pub use html::report_html;
pub use line_chart::{ChartAxes, Series, line_chart};
pub use markdown::{format_number, markdown_table};
pub use metrics_report::{
    MetricsReport, MetricsReportError, summarize_predictions, summarize_selective_predictions,
};
pub use png::{PngError, svg_to_png};
pub use profile_bars::{ProfileBar, profile_bars};
pub use rank_displacement::rank_displacement;
pub use reliability_diagram::reliability_diagram;
pub use reliability_grid::{GridPanel, reliability_grid};
pub use selective_report::selective_section;
pub use svg::Svg;
pub use tau_dots::tau_dots;
pub use text_cell::cell;
pub use transfer_report::summary_line as transfer_summary_line;

pub use crs_table::CrsRow;
pub use eval_error::EvalError;
pub use eval_options::{
    ConformalSettings, DEFAULT_BINS, DEFAULT_BOOTSTRAP, DEFAULT_CONFORMAL_ALPHA, DEFAULT_DELTA_BOOTSTRAP,
    DEFAULT_LEVEL, DEFAULT_MIN_GROUP_SIZE, EvalOptions, regime_named, robustness_name, robustness_variant,
};
pub use eval_pipeline::evaluate;
pub use eval_summary::summary_table;
pub use evaluator_settings::{SettingsError, eval_command_line, store_eval_options};
pub use frozen_weights::{FrozenWeightsError, check_frozen_weights};
pub use profile_scoring::{ProfileScoring, ProfileScoringError, ProfileScoringOptions, score_profiles};
pub use score_ranking::{ScoreFileError, compare_score_files, rank_comparison_table, read_scores};
pub use transfer_table::transfer_score_table;
