//! LoRA (Hu et al. 2021) in the form Hugging Face PEFT uses, so adapters move between calibra and
//! PEFT unchanged:
//!
//! ```text
//! y = W₀x + b₀ + s · B (A (dropout(x))),   A ∈ R^{r×in}, B ∈ R^{out×r},
//! s = lora_alpha / r   (use_rslora: s = lora_alpha / √r)
//! ```
//!
//! Three pieces, as in PEFT: [`LoraConfig`] (the `adapter_config.json` contents and the rules that
//! pick which modules are wrapped), [`LoraLinear`] (a burn `Linear` with an optional trainable branch,
//! merge / unmerge; [`FusedQkv`] for timm's fused `attn.qkv`, one branch over q/k/v), and [`peft`] (adapter directories: `adapter_config.json` +
//! `adapter_model.safetensors` with PEFT key names and `[r, in]` / `[out, r]` layouts).
//!
//! burn 0.22 ships `Module::apply_lora`, a weight reparameterisation: it cannot apply dropout to the
//! LoRA input only, initialises A from N(0, 1/r) rather than PEFT's Kaiming-uniform, and stores the
//! factors as `[in, r]` / `[r, out]`. It is therefore not used here.

mod branch_dropout;
mod config;
mod error;
mod families;
mod inject;
mod linear;
pub mod peft;
mod slot;

pub use config::{LoraConfig, LoraInit, PEFT_INERT_OPTIONS, PEFT_METADATA_KEYS, TargetModules};
pub use error::LoraError;
pub use inject::{LoraModel, apply_lora, extract_adapter, load_adapter};
pub use linear::{BranchSettings, LoraBranch, LoraLinear};
pub use slot::{FusedQkv, LoraSlot};
