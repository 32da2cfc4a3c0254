//! Two-layer feed-forward network with a selectable activation.

use burn::module::Module;
use burn::nn::LinearConfig;

use super::gelu::gelu_exact;
use super::quick_gelu::quick_gelu;
use crate::lora::LoraLinear;
use burn::prelude::*;
use burn::tensor::activation::gelu_approximate;

/// Activation of the MLP hidden layer.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `x · Φ(x) = x/2 · (1 + erf(x/√2))` (HF `gelu`).
    GeluExact,
    /// `x/2 · (1 + tanh(√(2/π)(x + 0.044715 x³)))` (HF `gelu_new`, `gelu_pytorch_tanh`, SigLIP).
    GeluTanh,
    /// `x · σ(1.702 x)` (HF `quick_gelu`, OpenAI CLIP).
    QuickGelu,
}

impl Activation {
    /// Maps a Hugging Face `hidden_act` string; `None` for anything not listed above.
    ///
    /// `gelu` → exact; `gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`(≈) are *not* all identical in
    /// HF: only `gelu_new` and `gelu_pytorch_tanh` are the tanh form and are accepted.
    pub fn from_hf(name: &str) -> Option<Self> {
        match name {
            "gelu" => Some(Self::GeluExact),
            "gelu_new" | "gelu_pytorch_tanh" => Some(Self::GeluTanh),
            "quick_gelu" => Some(Self::QuickGelu),
            _ => None,
        }
    }

    /// Applies the activation element-wise.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Self::GeluExact => gelu_exact(x),
            Self::GeluTanh => gelu_approximate(x),
            Self::QuickGelu => quick_gelu(x),
        }
    }
}

/// Configuration of [`Mlp`].
#[derive(Config, Debug)]
pub struct MlpConfig {
    /// Input/output width.
    pub d_model: usize,
    /// Hidden width (`intermediate_size`).
    pub d_hidden: usize,
    /// Hidden activation.
    pub activation: Activation,
}

/// `fc2(act(fc1(x)))`.
#[derive(Module, Debug)]
pub struct Mlp {
    /// `[d_model, d_hidden]`.
    pub fc1: LoraLinear,
    /// `[d_hidden, d_model]`.
    pub fc2: LoraLinear,
    /// Hidden activation.
    #[module(skip)]
    pub activation: Activation,
}

impl MlpConfig {
    /// Builds the module with random weights.
    pub fn init(&self, device: &Device) -> Mlp {
        Mlp {
            fc1: LoraLinear::plain(LinearConfig::new(self.d_model, self.d_hidden).init(device)),
            fc2: LoraLinear::plain(LinearConfig::new(self.d_hidden, self.d_model).init(device)),
            activation: self.activation,
        }
    }
}

impl Mlp {
    /// `x: [..., d_model]` → `[..., d_model]`.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        self.fc2.forward(self.activation.forward(self.fc1.forward(x)))
    }
}
