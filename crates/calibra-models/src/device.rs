//! Run-time device selection (`--device cpu|wgpu[:N]|cuda[:N]|ndarray`), with an up-front check
//! that the device works, so a missing driver is one clear error before any work starts rather
//! than a panic inside the first fit.

use std::str::FromStr;

use burn::tensor::{Device, Tensor};

use crate::error::ModelError;

/// A compute device kind named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// burn's pure-Rust `flex` CPU backend (always compiled).
    Cpu,
    /// WebGPU/Vulkan/Metal through `wgpu` (cargo feature `wgpu`): `None` lets wgpu pick the best
    /// adapter (a high-power GPU first; `CUBECL_WGPU_DEFAULT_DEVICE` overrides), `Some(i)` is the
    /// i-th discrete GPU.
    Wgpu(Option<usize>),
    /// NVIDIA CUDA GPU `index` (cargo feature `cuda`; its build downloads LLVM, so it is never a
    /// default).
    Cuda(usize),
    /// burn's older `ndarray` CPU backend (cargo feature `ndarray`; deprecated in burn 0.22 in favour
    /// of `flex`), kept for comparisons.
    Ndarray,
}

const EXPECTED: &str = "expected one of: cpu, wgpu, wgpu:N, cuda, cuda:N, ndarray (N a device index)";

impl FromStr for DeviceKind {
    type Err = ModelError;

    /// Parses `cpu` (alias `flex`), `wgpu`, `wgpu:N`, `cuda` (= `cuda:0`), `cuda:N`, `ndarray`
    /// (case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| ModelError::Device { name: s.to_string(), message: format!("{why}{EXPECTED}") };
        let lower = s.trim().to_ascii_lowercase();
        let (kind, index) = match lower.split_once(':') {
            Some((kind, index)) => {
                let index = index
                    .parse::<usize>()
                    .map_err(|_| bad(&format!("`{index}` is not a device index (0, 1, ...); ")))?;
                (kind, Some(index))
            }
            None => (lower.as_str(), None),
        };
        match (kind, index) {
            ("cpu" | "flex", None) => Ok(Self::Cpu),
            ("wgpu", index) => Ok(Self::Wgpu(index)),
            ("cuda", index) => Ok(Self::Cuda(index.unwrap_or(0))),
            ("ndarray", None) => Ok(Self::Ndarray),
            ("cpu" | "flex" | "ndarray", Some(_)) => Err(bad("a CPU backend takes no index; ")),
            _ => Err(bad("")),
        }
    }
}

impl std::fmt::Display for DeviceKind {
    /// The canonical name: `cpu`, `wgpu`, `wgpu:N`, `cuda:N`, `ndarray`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cpu => write!(f, "cpu"),
            Self::Wgpu(None) => write!(f, "wgpu"),
            Self::Wgpu(Some(i)) => write!(f, "wgpu:{i}"),
            Self::Cuda(i) => write!(f, "cuda:{i}"),
            Self::Ndarray => write!(f, "ndarray"),
        }
    }
}

impl DeviceKind {
    /// The device, checked to work (see [`check_device`]), or an error saying which cargo feature to
    /// enable when the backend was not compiled in.
    pub fn device(self) -> Result<Device, ModelError> {
        let device = match self {
            Self::Cpu => return Ok(Device::flex()),
            Self::Wgpu(index) => wgpu_device(index)?,
            Self::Cuda(index) => cuda_device(index)?,
            Self::Ndarray => ndarray_device()?,
        };
        check_device(&self.to_string(), &device, self.hint())?;
        Ok(device)
    }

    /// What to install when the device does not come up.
    fn hint(self) -> &'static str {
        match self {
            Self::Wgpu(_) => {
                "calibra looked for a wgpu adapter (Vulkan, Metal, DX12 or OpenGL). Install the GPU's \
                 Vulkan driver; on a machine without a GPU, Mesa's lavapipe runs Vulkan on the CPU \
                 (Debian/Ubuntu: apt-get install mesa-vulkan-drivers libvulkan1)"
            }
            Self::Cuda(_) => {
                "calibra looked for an NVIDIA GPU through the CUDA driver (libcuda) and NVRTC. Check \
                 `nvidia-smi`, the device index, and that the CUDA toolkit's NVRTC library is on the \
                 library path"
            }
            Self::Cpu | Self::Ndarray => "",
        }
    }
}

/// Runs one tiny computation on `device` and reads it back. burn's GPU devices are lazy, and a
/// missing adapter or driver panics inside the backend on first use; this turns that into
/// [`ModelError::Device`] naming the device, the backend's message and `hint`, before any real
/// work starts. The panic is caught with the default hook silenced for the duration.
pub fn check_device(name: &str, device: &Device, hint: &str) -> Result<(), ModelError> {
    let probe = device.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(move || {
        let t = Tensor::<1>::from_floats([1.0, 2.0, 3.0], &probe);
        (t.clone() + t).into_data().convert::<f32>().try_to_vec::<f32>().map_err(|e| format!("{e:?}"))
    });
    std::panic::set_hook(previous);
    let failure = match outcome {
        Ok(Ok(values)) if values == [2.0, 4.0, 6.0] => return Ok(()),
        Ok(Ok(values)) => format!("a test computation gave {values:?} instead of [2, 4, 6]"),
        Ok(Err(e)) => format!("reading a test computation back failed: {e}"),
        Err(panic) => panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the backend panicked".into()),
    };
    Err(ModelError::Device {
        name: name.to_string(),
        message: format!("the device does not work: {failure}. {hint}"),
    })
}

#[cfg(feature = "wgpu")]
fn wgpu_device(index: Option<usize>) -> Result<Device, ModelError> {
    use burn::tensor::DeviceKind as Kind;
    crate::gpu_autotune::install_default_autotune_level();
    Ok(Device::wgpu(match index {
        None => Kind::DefaultDevice,
        Some(i) => Kind::DiscreteGpu(i),
    }))
}

#[cfg(not(feature = "wgpu"))]
fn wgpu_device(_index: Option<usize>) -> Result<Device, ModelError> {
    Err(ModelError::Device {
        name: "wgpu".into(),
        message: "this build has no wgpu backend; rebuild with `--features wgpu`".into(),
    })
}

#[cfg(feature = "cuda")]
fn cuda_device(index: usize) -> Result<Device, ModelError> {
    crate::gpu_autotune::install_default_autotune_level();
    Ok(Device::cuda(index))
}

#[cfg(not(feature = "cuda"))]
fn cuda_device(_index: usize) -> Result<Device, ModelError> {
    Err(ModelError::Device {
        name: "cuda".into(),
        message:
            "this build has no CUDA backend; rebuild with `--features cuda` (its build script downloads \
                  LLVM, so it needs network access)"
                .into(),
    })
}

#[cfg(feature = "ndarray")]
#[allow(deprecated)] // selected on purpose, for comparisons with the older backend
fn ndarray_device() -> Result<Device, ModelError> {
    Ok(Device::ndarray())
}

#[cfg(not(feature = "ndarray"))]
fn ndarray_device() -> Result<Device, ModelError> {
    Err(ModelError::Device {
        name: "ndarray".into(),
        message: "this build has no ndarray backend; rebuild with `--features calibra-models/ndarray` \
                  (deprecated in burn 0.22; `cpu` is faster)"
            .into(),
    })
}

/// What the driver calls a GPU-API device, and whether it is a CPU behind that API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterIdentity {
    /// The device as it names itself (`NVIDIA H200`, `llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub name: String,
    /// A software renderer (Mesa's lavapipe/llvmpipe, SwiftShader): wgpu reports it as a CPU
    /// adapter, and cubecl gives it no physical card.
    pub software: bool,
}

impl AdapterIdentity {
    /// The warning a user should see before work starts on a software renderer: `wgpu` falls back
    /// to one when no GPU driver loads, and it runs many times slower than the `cpu` backend.
    pub fn software_warning(&self, device: &str) -> Option<String> {
        self.software.then(|| {
            format!(
                "warning: --device {device} runs on `{}`, a software renderer on the CPU, not a GPU (no GPU \
                 driver was found, or this machine has no GPU). It is many times slower than `--device cpu`; \
                 install the GPU's Vulkan driver, or use `--device cpu`",
                self.name
            )
        })
    }
}

/// Who `device` is, for GPU-API devices (`wgpu`, `cuda`); `None` for burn's own CPU backends,
/// which report no identity, and in builds without a GPU backend. Opens the device: call it after
/// [`check_device`].
pub fn adapter_identity(device: &Device) -> Option<AdapterIdentity> {
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    {
        device
            .identity()
            .map(|identity| AdapterIdentity { software: identity.physical.is_none(), name: identity.name })
    }
    #[cfg(not(any(feature = "wgpu", feature = "cuda")))]
    {
        let _ = device;
        None
    }
}

/// Parses a device name and returns the checked device (see [`DeviceKind::from_str`] and
/// [`DeviceKind::device`]).
pub fn parse_device(name: &str) -> Result<Device, ModelError> {
    name.parse::<DeviceKind>()?.device()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_rejects_unknown() {
        assert_eq!("CPU".parse::<DeviceKind>().unwrap(), DeviceKind::Cpu);
        assert_eq!("wgpu".parse::<DeviceKind>().unwrap(), DeviceKind::Wgpu(None));
        assert_eq!("wgpu:1".parse::<DeviceKind>().unwrap(), DeviceKind::Wgpu(Some(1)));
        assert_eq!("cuda".parse::<DeviceKind>().unwrap(), DeviceKind::Cuda(0));
        assert_eq!(" CUDA:3 ".parse::<DeviceKind>().unwrap(), DeviceKind::Cuda(3));
        for (name, canonical) in
            [("flex", "cpu"), ("cuda", "cuda:0"), ("wgpu:2", "wgpu:2"), ("ndarray", "ndarray")]
        {
            assert_eq!(name.parse::<DeviceKind>().unwrap().to_string(), canonical);
        }
        let err = "tpu".parse::<DeviceKind>().unwrap_err().to_string();
        assert!(err.contains("tpu") && err.contains("cpu, wgpu, wgpu:N, cuda, cuda:N, ndarray"), "{err}");
        let err = "cuda:x".parse::<DeviceKind>().unwrap_err().to_string();
        assert!(err.contains("`x` is not a device index"), "{err}");
        let err = "cpu:0".parse::<DeviceKind>().unwrap_err().to_string();
        assert!(err.contains("takes no index"), "{err}");
        assert!(parse_device("cpu").is_ok());
    }

    #[test]
    fn the_check_passes_on_the_cpu_backend() {
        check_device("cpu", &Device::flex(), "").unwrap();
    }

    #[test]
    fn the_cpu_backend_has_no_adapter_and_only_a_software_adapter_is_warned_about() {
        assert_eq!(adapter_identity(&Device::flex()), None);
        let software = AdapterIdentity { name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(), software: true };
        let warning = software.software_warning("wgpu").unwrap();
        assert!(
            warning.contains("--device wgpu runs on `llvmpipe") && warning.contains("--device cpu"),
            "{warning}"
        );
        let card = AdapterIdentity { name: "NVIDIA H200".into(), software: false };
        assert_eq!(card.software_warning("wgpu"), None);
    }

    #[cfg(not(feature = "ndarray"))]
    #[test]
    fn ndarray_without_feature_names_the_feature() {
        let err = parse_device("ndarray").unwrap_err().to_string();
        assert!(err.contains("--features calibra-models/ndarray"), "{err}");
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_feature_names_the_feature() {
        for name in ["cuda", "cuda:1"] {
            let err = parse_device(name).unwrap_err().to_string();
            assert!(err.contains("--features cuda"), "{err}");
        }
    }
}

#[cfg(all(test, not(feature = "wgpu")))]
mod without_wgpu {
    #[test]
    fn wgpu_without_feature_names_the_feature() {
        let err = super::parse_device("wgpu:0").unwrap_err().to_string();
        assert!(err.contains("--features wgpu"), "{err}");
    }
}
