//! Numerical optimisers used by the calibrators: a bounded 1-D minimiser (scipy's `fminbound`, used
//! by temperature scaling) and a limited-memory BFGS with a strong-Wolfe line search (vector, matrix
//! and Dirichlet scaling, Platt). Both are deterministic and allocation-light.

pub mod bounded_scalar;
pub mod lbfgs;

pub use bounded_scalar::{BoundedScalarResult, minimize_scalar_bounded};
pub use lbfgs::{LbfgsOptions, LbfgsResult, LbfgsTermination, minimize_lbfgs};
