//! calibra-probe: probes fitted on frozen features (logistic regression, MLP, k-NN). Pure f64.
//!
//! Must not depend on burn.
#![forbid(unsafe_code)]
