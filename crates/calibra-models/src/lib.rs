//! calibra-models: burn modules for the encoders calibra adapts and probes (ViT/DeiT, DINOv2, CLIP
//! vision and text towers, SigLIP vision, ResNet), the CLIP tokenizer, and Hugging Face checkpoint IO.
//!
//! Must not depend on the evaluator side (metrics, calibrate, crs, report) nor on calibra-data.
#![forbid(unsafe_code)]

pub mod device;
pub mod error;
mod gpu_autotune;
pub mod hf;
pub mod layers;

pub mod bert;

pub mod dinov2;
pub mod encoder;
pub mod encoder_output;
pub mod gemma3_projector;
pub mod vit;

// LoRA layers and PEFT adapter IO (written by the lead; keep this line).
pub mod lora;

pub mod clip;
pub mod resnet;
pub mod sentencepiece;
pub mod siglip;
pub mod siglip_deep_prompts;
pub mod siglip_model;
pub mod siglip_text;
pub mod siglip_tokenizer;
pub mod timm;
pub mod tokenizer;
pub mod tokenizer_train;

pub use device::{AdapterIdentity, DeviceKind, adapter_identity, parse_device};
pub use encoder::{Encoder, EncoderModel};
pub use encoder_output::EncoderOutput;
pub use error::{KeyReport, ModelError};
