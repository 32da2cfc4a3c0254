//! The line every device-taking subcommand prints before work starts: which device, from where,
//! and the adapter a GPU backend found, with a warning when that adapter is a software renderer.

use anyhow::{Context, Result};
use burn::tensor::Device;
use calibra_models::{DeviceKind, adapter_identity, parse_device};

/// Brings up and checks the device `name` (from `origin`: `--device`, or a recipe's key), then prints
/// `device: NAME (ORIGIN)[: ADAPTER]` on stderr, and the software-renderer warning where it applies.
pub fn announce_device(name: &str, origin: &str) -> Result<Device> {
    let device = parse_device(name).with_context(|| format!("{origin} `{name}`"))?;
    match adapter_identity(&device) {
        Some(adapter) => {
            eprintln!("device: {name} ({origin}): {}", adapter.name);
            if let Some(warning) = adapter.software_warning(name) {
                eprintln!("{warning}");
            }
        }
        None => eprintln!("device: {name} ({origin})"),
    }
    Ok(device)
}

/// [`announce_device`] for the subcommands whose `--device` defaults to `cpu`: the CPU stays quiet
/// (its line would only repeat the default); any other name is checked and announced here, before
/// the job starts, and the job brings the same device up again from its name.
pub fn announce_unless_cpu(name: &str) -> Result<()> {
    if !matches!(name.parse::<DeviceKind>(), Ok(DeviceKind::Cpu)) {
        announce_device(name, "--device")?;
    }
    Ok(())
}
