//! calibra-train: the training losses (CE, label smoothing, focal, MDCA, MbLS, MCM, ZS-Norm, range
//! penalty), schedules and trainers.
//!
//! Must not depend on the evaluator side (metrics, calibrate, crs, report).
#![forbid(unsafe_code)]
