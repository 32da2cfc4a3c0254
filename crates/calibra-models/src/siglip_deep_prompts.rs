//! Deep prompts on SigLIP's towers: calibra's port of the CLIP layout of [`crate::clip::deep_prompts`]
//! (MaPLe, PromptSRC's independent prompts, HiCroPL). No reference implementation exists for
//! SigLIP; MVC-Bench lists SigLIP backbones for its prompt methods without publishing code. The
//! port keeps every CLIP rule and changes only what SigLIP's towers force:
//!
//! ```text
//! text:   x₀ = prompts + pos         prompts: [ctx (m rows), tokens(text), </s>, pad…] (no start token)
//!         before block i, 1 ≤ i ≤ J:  x[:, 0..m] ← deep_text[i-1]
//!         feature = head(final_LN(x)[:, L-1])              (the last position, as SigLIP pools)
//! vision: x₀ = [patches + pos ; shared]        shared: m rows appended after the patches (no CLS,
//!                                              no pre-LayerNorm in SigLIP)
//!         before block i, 1 ≤ i ≤ J:  x[:, n..n+m] ← deep_vision[i-1]
//!         feature = head(post_LN(x[:, 0..n]))   the prompt rows are dropped before the pooling head
//! ```
//!
//! - The text context takes the first `m` positions: SigLIP has no start token to keep in front
//!   (as CoOp on SigLIP, [`crate::clip::prompt_text`]).
//! - The vision prompts act through attention inside the blocks only. CLIP reads its class token,
//!   a row that existed before prompting; SigLIP's attention-pooling head reads every token, so the
//!   port drops the prompt rows before it, and the head pools the same patch tokens it was trained
//!   on. With no prompts both towers give SigLIP's own features.
//! - Logits are SigLIP's, `exp(logit_scale)·cos + logit_bias`.
//!
//! `scripts/golden/deep_prompts_siglip.py` states the same port in torch on transformers'
//! `SiglipModel` and checks it, with the prompts removed, against `get_text_features` /
//! `get_image_features`.

use burn::prelude::*;

use crate::clip::deep_prompts::{append_vision_prompts, check_deep, run_prompted_blocks};
use crate::error::ModelError;
use crate::siglip::SiglipVisionTransformer;
use crate::siglip_text::SiglipTextTransformer;

impl SiglipTextTransformer {
    /// The text feature `[b, p]` (after `head`) of prompt embeddings `embeds: [b, n, d]` (without
    /// positions) whose rows `slots..slots+m` are the first-layer context, `deep[i-1]` replacing
    /// them before block `i` (module docs). SigLIP pools the last position: every `pooled` must be
    /// `n − 1`.
    pub fn forward_deep_prompts(
        &self,
        embeds: Tensor<3>,
        slots: usize,
        pooled: &[usize],
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        let [b, n, d] = embeds.dims();
        let m = deep.first().map_or(0, |t| t.dims()[0]);
        check_deep("SigLIP text", deep, m, d, self.n_layers())?;
        if n == 0 || slots + m > n || n > self.max_positions() {
            return Err(ModelError::Input(format!(
                "SigLIP text: {m} deep prompt rows from row {slots} do not fit a sequence of {n} (context \
                 length {})",
                self.max_positions()
            )));
        }
        if pooled.len() != b || pooled.iter().any(|&p| p + 1 != n) {
            return Err(ModelError::Input(format!(
                "SigLIP text pools the last of its {n} positions; got pooled rows {pooled:?} for {b} prompts"
            )));
        }
        let pos = self.position_embedding.weight.val().narrow(0, 0, n).unsqueeze_dim::<3>(0);
        let x = embeds + pos;
        let x = run_prompted_blocks(&self.blocks, x, slots, deep);
        let last = self.final_layer_norm.forward(x);
        Ok(self.head.forward(last.narrow(1, n - 1, 1).reshape([b, d])))
    }
}

impl SiglipVisionTransformer {
    /// The pooled image feature `[b, d]` with `shared: [m, d]` appended after the patch tokens and
    /// `deep[i-1]` replacing those rows before block `i`; the prompt rows are dropped before
    /// `post_layernorm` and the pooling head (module docs).
    pub fn forward_deep_prompts(
        &self,
        images: Tensor<4>,
        shared: Tensor<2>,
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        let x = self.embed(images)?;
        let n = x.dims()[1];
        let x = append_vision_prompts("SigLIP vision", x, shared, deep, self.n_layers())?;
        let x = run_prompted_blocks(&self.blocks, x, n, deep);
        Ok(self.pool_hidden(x.narrow(1, 0, n)))
    }
}
