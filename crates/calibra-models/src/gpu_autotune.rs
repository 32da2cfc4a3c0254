//! How hard cubecl's autotune searches in a build with the experimental `gpu-autotune` feature:
//! calibra's default is cubecl's `minimal` level, unless the user chose a level.
//!
//! With autotune on, cubecl compiles and times candidate kernels for every new matmul, reduction and
//! fused block the first time a process meets it, and keeps the result in memory only (calibra does
//! not build cubecl's on-disk cache), so every process tunes again. On an NVIDIA H200 a ViT-B/16 LoRA
//! step ran at the same speed at `minimal` as at cubecl's default, `balanced` (0.264 against 0.263
//! s/step), while the process's warm-up took 29 s against 37–112 s (benches/RESULTS.md "On a GPU again";
//! the driver's shader cache was warm for the `minimal` run, so part of that gap is the cache). A user
//! who wants the wider search sets `CUBECL_AUTOTUNE_LEVEL` (`minimal`, `balanced`, `extensive`,
//! `full`) or the `[autotune] level` of a `cubecl.toml`, and calibra leaves it alone.

/// Installs calibra's autotune default into cubecl's process-wide configuration, once, before the
/// first GPU device is made. A no-op when the user chose a level (the environment variable, or a
/// `cubecl.toml` / `burn.toml` with a level other than cubecl's default), and when cubecl has already
/// read its configuration (it can be set only before its first use).
#[cfg(feature = "gpu-autotune")]
pub(crate) fn install_default_autotune_level() {
    use burn::cubecl::config::autotune::AutotuneLevel;
    use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("CUBECL_AUTOTUNE_LEVEL").is_some() {
            return;
        }
        // The configuration cubecl itself would load: config files from the working directory up,
        // then its environment variables.
        let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
        if !matches!(config.autotune.level, AutotuneLevel::Balanced) {
            return; // a config file chose a level
        }
        config.autotune.level = AutotuneLevel::Minimal;
        let _already_read = !CubeClRuntimeConfig::try_set(config);
    });
}

#[cfg(all(test, feature = "gpu-autotune"))]
mod tests {
    use burn::cubecl::config::autotune::AutotuneLevel;
    use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};

    #[test]
    fn the_default_level_becomes_minimal_unless_the_environment_chose_one() {
        super::install_default_autotune_level();
        let level = CubeClRuntimeConfig::get().autotune.level.clone();
        match std::env::var("CUBECL_AUTOTUNE_LEVEL").ok().as_deref() {
            None => assert!(matches!(level, AutotuneLevel::Minimal), "{level:?}"),
            Some("full" | "3") => assert!(matches!(level, AutotuneLevel::Full), "{level:?}"),
            Some(_) => {}
        }
    }
}

/// Without the `gpu-autotune` feature cubecl does not autotune: nothing to set.
#[cfg(all(not(feature = "gpu-autotune"), any(feature = "wgpu", feature = "cuda")))]
pub(crate) fn install_default_autotune_level() {}
