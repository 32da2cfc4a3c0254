//! Transformer building blocks shared by every encoder family (ViT/DeiT, DINOv2, CLIP, SigLIP).
//!
//! Parameter names inside these modules are the crate's canonical layout; each family maps its
//! Hugging Face key names onto them with a [`crate::hf::KeyMap`].

pub mod attention;
mod attention_rows;
pub mod block;
mod elementwise;
pub mod frozen_linear;
pub mod gelu;
pub mod layer_norm;
pub mod mlp;
pub mod patch;
pub mod pos_embed;
pub mod quick_gelu;
mod saved_input_backward;
pub mod softmax_attention;
#[cfg(test)]
mod test_tensors;
pub mod token_ids;
mod vector_math;

pub use attention::{MultiHeadSelfAttention, MultiHeadSelfAttentionConfig};
pub use block::{LayerScale, TransformerBlock, TransformerBlockConfig, run_blocks};
pub use frozen_linear::{FrozenLinearBackend, TransposeCache, frozen_linear};
pub use gelu::{GeluBackend, gelu_exact};
pub use layer_norm::{LayerNorm, LayerNormBackend, LayerNormConfig};
pub use mlp::{Activation, Mlp, MlpConfig};
pub use patch::{PatchEmbedding, PatchEmbeddingConfig};
pub use pos_embed::interpolate_patch_positions;
pub use quick_gelu::{QuickGeluBackend, quick_gelu};
pub use softmax_attention::{SoftmaxAttentionBackend, softmax_attention};
pub use token_ids::token_id_tensor;
