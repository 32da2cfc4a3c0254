//! MedGemma's (Gemma 3's) multimodal projector, `Gemma3MultiModalProjector` of transformers 5.24:
//! the vision stack up to the decoder's input, the representation CRS-Bench probes for MedGemma
//! ("the MedGemma-4B vision stack after projection into its generative interface").
//!
//! ```text
//! tokens [b, p·p, d]  (the SigLIP tower's last_hidden_state, p patches a side)
//! → average pool k×k, k = p / t, t² = mm_tokens_per_image     [b, t², d]
//! → Gemma RMSNorm: x / √(mean(x²) + ε) · (1 + w)              (ε = the tower's layer_norm_eps)
//! → · W, W [d, text hidden]                                   [b, t², text hidden]
//! ```
//!
//! calibra's feature is the mean of the `t²` projected tokens. A SigLIP tower directory carries the
//! projector when its `config.json` has a `calibra_projector` object (`calibra convert vision-tower
//! --projector` writes it; transformers ignores the key) and its weights the two
//! `multi_modal_projector.*` tensors under their transformers names.

use burn::module::{Module, Param};
use burn::prelude::*;
use serde_json::Value;

use crate::error::ModelError;
use crate::hf::HfConfig;

/// The `config.json` key of a SigLIP tower directory that carries the projector.
pub const PROJECTOR_KEY: &str = "calibra_projector";

/// The projector's options (`calibra_projector` in the tower's `config.json`).
#[derive(burn::config::Config, Debug, PartialEq)]
pub struct Gemma3ProjectorConfig {
    /// `mm_tokens_per_image` of the Gemma 3 config (a square: 256 for MedGemma).
    pub mm_tokens_per_image: usize,
    /// `text_config.hidden_size` (2560 for MedGemma 4B): the feature width.
    pub text_hidden_size: usize,
}

impl Gemma3ProjectorConfig {
    /// The `calibra_projector` object of `cfg`, if any.
    pub fn from_tower_config(cfg: &HfConfig) -> Result<Option<Self>, ModelError> {
        let Some(v) = cfg.json.get(PROJECTOR_KEY) else { return Ok(None) };
        let obj = v.as_object().ok_or_else(|| cfg.invalid(format!("'{PROJECTOR_KEY}' must be an object")))?;
        match obj.get("type").and_then(Value::as_str) {
            Some("gemma3") => {}
            other => {
                return Err(cfg.unsupported(format!(
                    "'{PROJECTOR_KEY}.type' = {other:?}: only \"gemma3\" (Gemma3MultiModalProjector) is implemented"
                )));
            }
        }
        let nested = HfConfig::from_value(cfg.path.clone(), v.clone());
        Ok(Some(Self {
            mm_tokens_per_image: nested.req_size("mm_tokens_per_image")?,
            text_hidden_size: nested.req_size("text_hidden_size")?,
        }))
    }

    /// The `calibra_projector` object [`Self::from_tower_config`] reads.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "type": "gemma3",
            "mm_tokens_per_image": self.mm_tokens_per_image,
            "text_hidden_size": self.text_hidden_size,
        })
    }

    /// `√mm_tokens_per_image`, rounded: the tokens a side after pooling (checked by
    /// [`Self::tokens_per_side`]).
    fn side(&self) -> usize {
        (self.mm_tokens_per_image as f64).sqrt().round() as usize
    }

    /// Tokens a side after pooling, checked against the tower's `patches_per_side` (the average pool
    /// must tile the patch grid exactly).
    pub fn tokens_per_side(&self, patches_per_side: usize, cfg: &HfConfig) -> Result<usize, ModelError> {
        let t = self.side();
        if t == 0 || t * t != self.mm_tokens_per_image || !patches_per_side.is_multiple_of(t) {
            return Err(cfg.invalid(format!(
                "'{PROJECTOR_KEY}.mm_tokens_per_image' = {}: must be a square whose side divides the {patches_per_side} \
                 patches a side",
                self.mm_tokens_per_image
            )));
        }
        Ok(t)
    }

    /// The module with zero weights (a checkpoint overwrites them), for a tower of width `d_vision`
    /// and `patches_per_side` patches a side ([`Self::tokens_per_side`] checks that they fit).
    pub fn init(
        &self,
        d_vision: usize,
        patches_per_side: usize,
        eps: f64,
        device: &Device,
    ) -> Gemma3Projector {
        Gemma3Projector {
            input_projection: Param::from_tensor(Tensor::zeros([d_vision, self.text_hidden_size], device)),
            soft_emb_norm: Param::from_tensor(Tensor::zeros([d_vision], device)),
            patches_per_side,
            tokens_per_side: self.side().max(1),
            eps,
        }
    }
}

/// `Gemma3MultiModalProjector` (see the module docs).
#[derive(Module, Debug)]
pub struct Gemma3Projector {
    /// `mm_input_projection_weight`, `[d_vision, text hidden]` (used as `x · W`).
    pub input_projection: Param<Tensor<2>>,
    /// `mm_soft_emb_norm.weight`, `[d_vision]` (Gemma's RMSNorm scales by `1 + w`).
    pub soft_emb_norm: Param<Tensor<1>>,
    /// Patches a side of the tower's grid.
    #[module(skip)]
    pub patches_per_side: usize,
    /// Tokens a side after pooling.
    #[module(skip)]
    pub tokens_per_side: usize,
    /// The RMSNorm's ε.
    #[module(skip)]
    pub eps: f64,
}

impl Gemma3Projector {
    /// `tokens: [b, p·p, d]` (the tower's native grid: the caller checks it) → `[b, t², text hidden]`.
    pub fn forward(&self, tokens: Tensor<3>) -> Tensor<3> {
        let [b, _, d] = tokens.dims();
        let t = self.tokens_per_side;
        let k = self.patches_per_side / t;
        // Token r·p + c with r = i·k + a, c = j·k + e sits at [b, i, a, j, e, :].
        let pooled = tokens.reshape([b, t, k, t, k, d]).mean_dim(4).mean_dim(2).reshape([b, t * t, d]);
        let mean_square = pooled.clone().powi_scalar(2).mean_dim(2);
        let scale = (self.soft_emb_norm.val() + 1.0).reshape([1, 1, d]);
        let normed = pooled / (mean_square + self.eps).sqrt() * scale;
        normed.matmul(self.input_projection.val().unsqueeze_dim::<3>(0))
    }

    /// The feature: the mean of the projected tokens, `[b, text hidden]`.
    pub fn pooled(&self, tokens: Tensor<3>) -> Tensor<2> {
        self.forward(tokens).mean_dim(1).squeeze_dim::<2>(1)
    }

    /// The feature width.
    pub fn width(&self) -> usize {
        self.input_projection.dims()[1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_written_object_reads_back() {
        let cfg = Gemma3ProjectorConfig { mm_tokens_per_image: 256, text_hidden_size: 2560 };
        let tower = HfConfig::from_value("config.json", serde_json::json!({ PROJECTOR_KEY: cfg.to_json() }));
        assert_eq!(Gemma3ProjectorConfig::from_tower_config(&tower).unwrap(), Some(cfg.clone()));
        assert_eq!(cfg.tokens_per_side(64, &tower).unwrap(), 16);
        let e = cfg.tokens_per_side(60, &tower).unwrap_err().to_string();
        assert!(e.contains("mm_tokens_per_image"), "{e}");
    }
}
