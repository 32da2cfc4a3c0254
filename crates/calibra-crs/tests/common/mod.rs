//! Data shared by the integration tests of calibra-crs.

pub mod crsbench;
