//! calibra-run: recipes (TOML), grid expansion, run keys, the append-only run store with resume,
//! sharding and merging.
//!
//! Must not depend on burn.
#![forbid(unsafe_code)]
