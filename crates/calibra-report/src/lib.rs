//! calibra-report: the human-facing side of an evaluation — Markdown tables and SVG figures.
//!
//! Owns: a minimal SVG writer ([`Svg`]), the three figures of a calibra report (reliability diagram,
//! normalised profile bars, rank-displacement chart), Markdown table formatting, and the assembly of an
//! evaluation's report ([`eval_report`]: `report.md` plus its figures).
//! Figures are plain SVG 1.1 with text in generic font families: producing them needs no font files,
//! no system libraries and no network, and any browser renders them.
//!
//! Must not depend on: burn, or file IO (callers write the files). Figures take plain data (names and
//! numbers) so that any caller can draw them; the only calibra type they use is
//! `calibra_metrics::ReliabilityBin`, the bins the metrics crate computes ECE from. Only the report
//! assembly ([`eval_report`]) reads calibra-crs's public `Evaluation`.
#![forbid(unsafe_code)]

mod convergence_report;
mod eval_report;
mod focus_report;
mod markdown;
mod profile_bars;
mod rank_displacement;
mod reliability_diagram;
mod svg;

pub use convergence_report::convergence_section;
pub use eval_report::{ReliabilityFigure, ReportFile, eval_report};
pub use focus_report::{encoder_analyses_section, focus_section};
pub use markdown::{format_number, markdown_table};
pub use profile_bars::{ProfileBar, profile_bars};
pub use rank_displacement::rank_displacement;
pub use reliability_diagram::reliability_diagram;
pub use svg::Svg;
