//! Run-time device selection (`--device cpu|wgpu|cuda|ndarray`).

use std::str::FromStr;

use burn::tensor::Device;

use crate::error::ModelError;

/// A compute device kind named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// burn's pure-Rust `flex` CPU backend (always compiled).
    Cpu,
    /// WebGPU/Vulkan/Metal through `wgpu` (cargo feature `wgpu`).
    Wgpu,
    /// NVIDIA CUDA (cargo feature `cuda`; its build downloads LLVM, so it is never a default).
    Cuda,
    /// burn's older `ndarray` CPU backend (cargo feature `ndarray`; deprecated in burn 0.22 in favour
    /// of `flex`), kept for comparisons.
    Ndarray,
}

impl FromStr for DeviceKind {
    type Err = ModelError;

    /// Parses `cpu` (alias `flex`), `wgpu`, `cuda`, `ndarray` (case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" | "flex" => Ok(Self::Cpu),
            "wgpu" => Ok(Self::Wgpu),
            "cuda" => Ok(Self::Cuda),
            "ndarray" => Ok(Self::Ndarray),
            _ => Err(ModelError::Device {
                name: s.to_string(),
                message: "expected one of: cpu, wgpu, cuda, ndarray".into(),
            }),
        }
    }
}

impl DeviceKind {
    /// The device, or an error saying which cargo feature to enable when the backend was not
    /// compiled in.
    pub fn device(self) -> Result<Device, ModelError> {
        match self {
            Self::Cpu => Ok(Device::flex()),
            Self::Wgpu => wgpu_device(),
            Self::Cuda => cuda_device(),
            Self::Ndarray => ndarray_device(),
        }
    }
}

#[cfg(feature = "wgpu")]
fn wgpu_device() -> Result<Device, ModelError> {
    Ok(Device::wgpu(Default::default()))
}

#[cfg(not(feature = "wgpu"))]
fn wgpu_device() -> Result<Device, ModelError> {
    Err(ModelError::Device {
        name: "wgpu".into(),
        message: "this build has no wgpu backend; rebuild with `--features wgpu`".into(),
    })
}

#[cfg(feature = "cuda")]
fn cuda_device() -> Result<Device, ModelError> {
    Ok(Device::cuda(0))
}

#[cfg(not(feature = "cuda"))]
fn cuda_device() -> Result<Device, ModelError> {
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

/// Parses a device name and returns the device (see [`DeviceKind::from_str`]).
pub fn parse_device(name: &str) -> Result<Device, ModelError> {
    name.parse::<DeviceKind>()?.device()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_rejects_unknown() {
        assert_eq!("CPU".parse::<DeviceKind>().unwrap(), DeviceKind::Cpu);
        assert_eq!("wgpu".parse::<DeviceKind>().unwrap(), DeviceKind::Wgpu);
        assert_eq!("cuda".parse::<DeviceKind>().unwrap(), DeviceKind::Cuda);
        let err = "tpu".parse::<DeviceKind>().unwrap_err().to_string();
        assert!(err.contains("tpu") && err.contains("cpu, wgpu, cuda, ndarray"), "{err}");
        assert!(parse_device("cpu").is_ok());
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
        let err = parse_device("cuda").unwrap_err().to_string();
        assert!(err.contains("--features cuda"), "{err}");
    }
}
