//! Deep prompts in both CLIP towers (MaPLe, Khattak et al. CVPR 2023; reference
//! `muzairkhattak/multimodal-prompt-learning clip/model.py`, `ResidualAttentionBlock_MaPLe` and
//! `VisionTransformer_MaPLe`): learned tokens that take the place of the previous block's prompt
//! rows before each of the first blocks.
//!
//! ```text
//! text:   x₀ = prompts + pos              (prompts: [SOT, ctx (m rows), class, ".", EOT, …])
//!         before block i, 1 ≤ i ≤ J:  x[:, 1..1+m] ← deep_text[i-1]
//! vision: x₀ = pre_LN([cls ; patches] + pos ; shared)     shared: m rows appended after the patches
//!         before block i, 1 ≤ i ≤ J:  x[:, n-m..n] ← deep_vision[i-1]
//! ```
//!
//! Block 0 sees the first-layer prompts of the input (the text `ctx` spliced into the prompt, the
//! vision `shared` rows); the pooled rows (text EOT, vision class token) never move.
//!
//! [`ClassPrompts`] builds the first-layer class prompts the deep-prompt methods (MaPLe, PromptSRC's
//! independent prompts, HiCroPL) share: the reference code of each builds them the same way. The
//! same layout on SigLIP's towers is [`crate::siglip_deep_prompts`].

use burn::prelude::*;

use super::deep_prompt_model::DeepPromptModel;
use super::model::ClipModel;
use super::prompt::normal_values;
use super::prompt_text::PromptTokenizer;
use super::text::ClipTextTransformer;
use super::vision::ClipVisionTransformer;
use crate::error::ModelError;
use crate::layers::TransformerBlock;

/// A `[rows, cols]` matrix of `N(0, 0.02²)` values from a seeded ChaCha8 stream (the reference's
/// `nn.init.normal_(·, std=0.02)` for prompt vectors).
pub(crate) fn normal_matrix(rows: usize, cols: usize, seed: u64, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(normal_values(rows * cols, 0.02, seed), [rows, cols]), device)
}

/// The first-layer class prompts of a deep-prompt method (reference: `MultiModalPromptLearner` /
/// `VLPromptLearner.__init__`), laid out by the family's [`PromptTokenizer`]: the class prompt
/// `"{prefix} {classname}."` embedded by the frozen token embedding, its rows `slots..slots+m`
/// replaced by the learned context (`slots` = 1 after CLIP's start token, 0 for SigLIP, which has
/// none). With an init phrase and `m ≤ 4` the prefix is the whole phrase and the context starts as
/// the embeddings of its first `m` tokens (the tokens after them stay fixed words of the prompt, as
/// in the reference); otherwise the `m` slots precede the class name and the context starts
/// `N(0, 0.02²)` from `seed` (the reference's `"X X … X"` prefix, whose placeholder embeddings are
/// replaced anyway).
pub(crate) struct ClassPrompts {
    /// Initial first-layer text context `[m, dt]`.
    pub ctx: Tensor<2>,
    /// Frozen embeddings before the context rows `[K, slots, dt]` (`None` when `slots` is 0).
    pub prefix: Option<Tensor<3>>,
    /// Frozen embeddings after the context rows `[K, L-slots-m, dt]`.
    pub suffix: Tensor<3>,
    /// The pooled row of each class prompt (CLIP's EOT, SigLIP's last position).
    pub pooled: Vec<usize>,
    /// The first context row.
    pub slots: usize,
}

impl ClassPrompts {
    /// Errors (named with `method`): no classes, `m == 0`, an init phrase with fewer than `m`
    /// tokens, or a prompt longer than the context length.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        method: &str,
        model: &dyn DeepPromptModel,
        tokenizer: &dyn PromptTokenizer,
        classnames: &[String],
        m: usize,
        ctx_init: Option<&str>,
        seed: u64,
        device: &Device,
    ) -> Result<Self, ModelError> {
        let err = |what: String| ModelError::Input(format!("{method} prompt learner: {what}"));
        let tok = |what: &str, e: &dyn std::fmt::Display| err(format!("{what}: {e}"));
        if classnames.is_empty() {
            return Err(err("no class names".into()));
        }
        if m == 0 {
            return Err(err("n_ctx must be >= 1".into()));
        }
        let dt = model.token_width();
        let phrase = ctx_init.filter(|p| !p.trim().is_empty() && m <= 4).map(|p| p.replace('_', " "));
        if let Some(phrase) = &phrase {
            let n = tokenizer.content_ids(phrase).map_err(|e| tok("context phrase", &e))?.len();
            if n < m {
                return Err(err(format!(
                    "the init phrase {phrase:?} has {n} tokens, fewer than n_ctx = {m}"
                )));
            }
        }
        // The class prompts next: a context too long for them is refused before anything the size
        // of the context is allocated.
        let mut rows = Vec::with_capacity(classnames.len());
        for name in classnames {
            let name = name.replace('_', " ");
            let laid = match &phrase {
                Some(phrase) => tokenizer.slotted_prompt(0, &format!("{phrase} {name}.")),
                None => tokenizer.slotted_prompt(m, &format!("{name}.")),
            }
            .map_err(|e| tok(&format!("class {name:?}"), &e))?;
            if laid.pooled < laid.slots_start + m {
                return Err(err(format!("the prompt of class {name:?} does not fit the context length")));
            }
            rows.push(laid);
        }
        let ctx = match &phrase {
            Some(phrase) => {
                let laid = tokenizer.slotted_prompt(0, phrase).map_err(|e| tok("context phrase", &e))?;
                model.embed_prompt_ids(&[laid.ids], device)?.narrow(1, laid.slots_start, m).reshape([m, dt])
            }
            None => normal_matrix(m, dt, seed, device),
        };
        let slots = rows[0].slots_start;
        let pooled: Vec<usize> = rows.iter().map(|r| r.pooled).collect();
        let ids: Vec<Vec<u32>> = rows.into_iter().map(|r| r.ids).collect();
        let embedding = model.embed_prompt_ids(&ids, device)?; // [K, L, dt]
        let l = embedding.dims()[1];
        Ok(ClassPrompts {
            ctx,
            prefix: (slots > 0).then(|| embedding.clone().narrow(1, 0, slots)),
            suffix: embedding.narrow(1, slots + m, l - slots - m),
            pooled,
            slots,
        })
    }
}

/// The first-layer class prompts `[K, L, dt]`: `[prefix_k, ctx, suffix_k]`.
pub(crate) fn assemble(prefix: Option<&Tensor<3>>, ctx: Tensor<2>, suffix: &Tensor<3>) -> Tensor<3> {
    let k = suffix.dims()[0];
    let [m, dt] = ctx.dims();
    let ctx = ctx.unsqueeze_dim::<3>(0).expand([k, m, dt]);
    let mut parts: Vec<Tensor<3>> = prefix.into_iter().cloned().collect();
    parts.extend([ctx, suffix.clone()]);
    Tensor::cat(parts, 1)
}

/// `x` with rows `start..start + m` of every sequence replaced by `rows: [m, d]`.
fn replace_rows(x: Tensor<3>, start: usize, rows: Tensor<2>) -> Tensor<3> {
    let [b, n, d] = x.dims();
    let m = rows.dims()[0];
    let rows = rows.unsqueeze_dim::<3>(0).expand([b, m, d]);
    let mut parts = Vec::with_capacity(3);
    if start > 0 {
        parts.push(x.clone().narrow(1, 0, start));
    }
    parts.push(rows);
    if start + m < n {
        parts.push(x.narrow(1, start + m, n - start - m));
    }
    Tensor::cat(parts, 1)
}

/// Runs `blocks` over `x`, `deep[i-1]` (`[m, d]`) replacing rows `start..start+m` of every sequence
/// before block `i ≥ 1` (the deep-prompt forward of both towers of CLIP and SigLIP).
pub(crate) fn run_prompted_blocks(
    blocks: &[TransformerBlock],
    mut x: Tensor<3>,
    start: usize,
    deep: &[Tensor<2>],
) -> Tensor<3> {
    for (i, block) in blocks.iter().enumerate() {
        if i >= 1
            && let Some(rows) = deep.get(i - 1)
        {
            x = replace_rows(x, start, rows.clone());
        }
        x = block.forward(x);
    }
    x
}

/// The vision tower's embedded tokens `x: [b, n, d]` with `shared: [m, d]` appended after them, once
/// `shared` and `deep` (the later blocks' prompts) are checked against the tower (`tower` names it
/// in errors, `n_layers` its blocks).
pub(crate) fn append_vision_prompts(
    tower: &str,
    x: Tensor<3>,
    shared: Tensor<2>,
    deep: &[Tensor<2>],
    n_layers: usize,
) -> Result<Tensor<3>, ModelError> {
    let [b, _, d] = x.dims();
    let [m, ds] = shared.dims();
    if ds != d || m == 0 {
        return Err(ModelError::Input(format!(
            "{tower}: shared prompts are [{m}, {ds}], expected [m > 0, {d}]"
        )));
    }
    check_deep(tower, deep, m, d, n_layers)?;
    Ok(Tensor::cat(vec![x, shared.unsqueeze_dim::<3>(0).expand([b, m, d])], 1))
}

/// Checks that every deep prompt is `[m, d]` and that there are fewer than `n_layers` of them.
pub(crate) fn check_deep(
    tower: &str,
    deep: &[Tensor<2>],
    m: usize,
    d: usize,
    n_layers: usize,
) -> Result<(), ModelError> {
    if deep.len() >= n_layers {
        return Err(ModelError::Input(format!(
            "{tower}: {} deep prompts need more than {n_layers} blocks (prompt depth must be at most \
             the number of blocks)",
            deep.len()
        )));
    }
    if let Some((i, t)) = deep.iter().enumerate().find(|(_, t)| t.dims() != [m, d]) {
        return Err(ModelError::Input(format!(
            "{tower}: deep prompt {} is {:?}, expected [{m}, {d}]",
            i + 1,
            t.dims()
        )));
    }
    Ok(())
}

impl ClipTextTransformer {
    /// The pooled rows `[b, d]` (before the projection) of prompt embeddings `embeds: [b, n, d]`
    /// (without positions) whose rows `slots..slots+m` are the first-layer context (`slots` is 1,
    /// after the start token, for CLIP's own prompts), with `deep[i-1]` (`[m, d]`) replacing those
    /// rows before block `i` (module docs).
    pub fn forward_deep_prompts(
        &self,
        embeds: Tensor<3>,
        slots: usize,
        pool_positions: &[usize],
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        let [b, n, d] = embeds.dims();
        let m = deep.first().map_or(0, |t| t.dims()[0]);
        check_deep("CLIP text", deep, m, d, self.n_layers())?;
        if slots + m > n || n > self.max_positions() {
            return Err(ModelError::Input(format!(
                "CLIP text: {m} deep prompt rows do not fit a sequence of {n} (context length {})",
                self.max_positions()
            )));
        }
        if pool_positions.len() != b || pool_positions.iter().any(|&p| p >= n || p < slots + m) {
            return Err(ModelError::Input(format!(
                "CLIP text: need one pooling position in {}..{n} per sequence ({b}), got {pool_positions:?}",
                slots + m
            )));
        }
        let pos = self.position_embedding.weight.val().narrow(0, 0, n).unsqueeze_dim::<3>(0);
        let x = embeds + pos;
        let x = run_prompted_blocks(&self.blocks, x, slots, deep);
        let last = self.final_layer_norm.forward(x);
        let index: Vec<i64> = pool_positions.iter().enumerate().map(|(i, &p)| (i * n + p) as i64).collect();
        let index = Tensor::<1, Int>::from_data(TensorData::new(index, [b]), &last.device());
        Ok(last.reshape([b * n, d]).select(0, index))
    }
}

impl ClipVisionTransformer {
    /// The pooled class token `[b, d]` (after `post_layernorm`, before the projection) with
    /// `shared: [m, d]` appended to the embedded patches before `pre_layrnorm` and `deep[i-1]`
    /// (`[m, d]`) replacing those last `m` rows before block `i` (module docs).
    pub fn forward_deep_prompts(
        &self,
        images: Tensor<4>,
        shared: Tensor<2>,
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        let x = self.embed_positions(images)?;
        let n = x.dims()[1];
        let x = append_vision_prompts("CLIP vision", x, shared, deep, self.n_layers())?;
        let x = self.pre_layernorm.forward(x);
        let x = run_prompted_blocks(&self.blocks, x, n, deep);
        Ok(self.pool_hidden(x))
    }
}

impl ClipModel {
    /// Text features `[b, p]` (projected, not normalised) of deep-prompted text (see
    /// [`ClipTextTransformer::forward_deep_prompts`]).
    pub fn text_features_deep_prompts(
        &self,
        embeds: Tensor<3>,
        slots: usize,
        pool_positions: &[usize],
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        Ok(self.text_projection.forward(self.text_model.forward_deep_prompts(
            embeds,
            slots,
            pool_positions,
            deep,
        )?))
    }

    /// Image features `[b, p]` (projected, not normalised) of deep-prompted images (see
    /// [`ClipVisionTransformer::forward_deep_prompts`]).
    pub fn image_features_deep_prompts(
        &self,
        images: Tensor<4>,
        shared: Tensor<2>,
        deep: &[Tensor<2>],
    ) -> Result<Tensor<2>, ModelError> {
        Ok(self.visual_projection.forward(self.vision_model.forward_deep_prompts(images, shared, deep)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_replaced_in_place_and_the_rest_is_kept() {
        let device = Device::flex();
        let x = Tensor::<3>::from_data(
            TensorData::new((0..2 * 5).map(|v| v as f32).collect::<Vec<_>>(), [1, 5, 2]),
            &device,
        );
        let rows = Tensor::<2>::from_data(TensorData::new(vec![-1.0f32, -2.0, -3.0, -4.0], [2, 2]), &device);
        let mid: Vec<f32> = replace_rows(x.clone(), 1, rows.clone()).to_data().iter::<f32>().collect();
        assert_eq!(mid, vec![0.0, 1.0, -1.0, -2.0, -3.0, -4.0, 6.0, 7.0, 8.0, 9.0]);
        let end: Vec<f32> = replace_rows(x, 3, rows).to_data().iter::<f32>().collect();
        assert_eq!(end, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0, -2.0, -3.0, -4.0]);
    }
}
