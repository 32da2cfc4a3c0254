//! The report's "Not converged" section: adapted fits whose training curve says they did not learn
//! the task (calibra-crs `convergence`), listed before any ranking so that no rank built on them is
//! read silently. Empty when every fit with a curve converged.

use calibra_crs::convergence::{CHANCE_MARGIN, ConvergenceReport};

use crate::markdown::{format_number, markdown_table};

/// The section's Markdown (empty string when nothing is flagged).
pub fn convergence_section(report: &ConvergenceReport) -> String {
    if report.not_converged.is_empty() {
        return String::new();
    }
    let mut md = format!(
        "\n## Not converged\n\n**{} of {} adapted fits did not converge** (calibration-split AUROC within \
         {CHANCE_MARGIN} of chance or below it, or a training loss that did not fall). Their records are \
         in every table and ranking below; rankings of their regime compare these encoders as untrained \
         models, so read them as such.\n\n",
        report.not_converged.len(),
        report.fits_with_curves
    );
    let rows: Vec<Vec<String>> = report
        .not_converged
        .iter()
        .map(|n| {
            vec![
                n.encoder.clone(),
                n.dataset.clone(),
                n.regime.name().to_string(),
                n.probe.clone(),
                format!("{}", n.label_fraction),
                n.seed.to_string(),
                n.selected_epoch.to_string(),
                format_number(n.calibration_auroc),
                format!(
                    "{} → {}",
                    format_number(Some(n.initial_train_loss)),
                    format_number(Some(n.final_train_loss))
                ),
                n.reasons.join("; "),
            ]
        })
        .collect();
    md.push_str(&markdown_table(
        &["encoder", "dataset", "regime", "loss", "ρ", "seed", "epoch", "cal. AUROC", "train loss", "why"],
        &rows,
    ));
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use calibra_crs::Regime;
    use calibra_crs::convergence::NotConverged;

    #[test]
    fn lists_each_flagged_fit_and_is_empty_without_any() {
        assert_eq!(convergence_section(&ConvergenceReport::default()), "");
        let report = ConvergenceReport {
            fits_with_curves: 3,
            not_converged: vec![NotConverged {
                encoder: "scratch".into(),
                dataset: "derm".into(),
                regime: Regime::Lora,
                probe: "ce".into(),
                label_fraction: 1.0,
                seed: 2,
                selected_epoch: 2,
                calibration_auroc: Some(0.52),
                initial_train_loss: 1.1,
                final_train_loss: 1.05,
                reasons: vec!["near chance".into()],
            }],
        };
        let md = convergence_section(&report);
        assert!(md.contains("## Not converged") && md.contains("1 of 3 adapted fits"), "{md}");
        assert!(md.contains("| scratch | derm | lora | ce | 1 | 2 | 2 |"), "{md}");
    }
}
