//! calibra-models: burn modules for the encoders calibra adapts and probes (ViT/DeiT, DINOv2, CLIP
//! vision and text towers, SigLIP vision), the CLIP tokenizer, and Hugging Face checkpoint IO.
//!
//! Must not depend on the evaluator side (metrics, calibrate, crs, report) nor on calibra-data.
#![forbid(unsafe_code)]

pub mod clip;
pub mod siglip;
pub mod tokenizer;
