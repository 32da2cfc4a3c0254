//! One module a LoRA branch sits on, as PEFT sees the model: a `Linear` ([`LoraLinear`]), or timm's
//! fused `attn.qkv` Linear (`d → 3·d`), which calibra loads split into q/k/v projections and adapts
//! with one branch over the three ([`FusedQkv`]), so that the trained parameters are PEFT's one
//! `lora_A` `[r, d]` and one `lora_B` `[3·d, r]`.

use burn::module::Module;
use burn::tensor::{Device, Tensor};

use super::linear::{LoraBranch, LoraLinear};
use crate::layers::MultiHeadSelfAttention;

/// A LoRA-capable module of a model, borrowed for the walk in `inject.rs`.
pub enum LoraSlot<'a> {
    /// A Linear layer (q/k/v/o projections, MLP `fc1` / `fc2`, timm's `attn.proj`).
    Linear(&'a mut LoraLinear),
    /// timm's fused `attn.qkv`.
    FusedQkv(FusedQkv<'a>),
}

/// The q/k/v projections of one attention and its packed-qkv branch
/// ([`MultiHeadSelfAttention::qkv_lora`]): PEFT's LoRA on timm's `qkv = Linear(d, 3·d)`,
///
/// ```text
/// [q ‖ k ‖ v] = x W_qkv + b_qkv + s · B (A (dropout(x))),   A ∈ R^{r×d}, B ∈ R^{3d×r},
/// ```
///
/// with `W_qkv` the three projections stacked (rows `0..d` = q, `d..2d` = k, `2d..3d` = v of timm's
/// `[3·d, d]` weight, as the loader split them).
pub struct FusedQkv<'a> {
    pub q: &'a mut LoraLinear,
    pub k: &'a mut LoraLinear,
    pub v: &'a mut LoraLinear,
    pub branch: &'a mut Option<LoraBranch>,
    pub merged: &'a mut bool,
}

impl<'a> FusedQkv<'a> {
    /// The fused view of `attn`, and its output projection (borrowed alongside).
    pub fn of(attn: &'a mut MultiHeadSelfAttention) -> (Self, &'a mut LoraLinear) {
        let MultiHeadSelfAttention { q_proj, k_proj, v_proj, o_proj, qkv_lora, qkv_merged, .. } = attn;
        (FusedQkv { q: q_proj, k: k_proj, v: v_proj, branch: qkv_lora, merged: qkv_merged }, o_proj)
    }

    /// The three projections in timm's order.
    fn parts(&mut self) -> [&mut LoraLinear; 3] {
        [&mut *self.q, &mut *self.k, &mut *self.v]
    }

    /// Add `sign · s·(BA)ᵀ` to the q/k/v weights, column block by column block (burn's `[in, out]`).
    fn fold(&mut self, sign: f32) {
        let Some(branch) = self.branch.as_ref() else { return };
        let delta = branch.delta_weight(); // [d, 3·d]
        let d = self.q.dims().1;
        for (j, part) in self.parts().into_iter().enumerate() {
            let block: Tensor<2> = delta.clone().narrow(1, j * d, d).mul_scalar(sign);
            part.base.weight = part.base.weight.clone().map(|w| w + block);
        }
    }

    /// Fold the branch into the q/k/v weights (PEFT's `merge`); a no-op without a branch or when
    /// already merged.
    pub fn merge(&mut self) {
        if self.branch.is_some() && !*self.merged {
            self.fold(1.0);
            *self.merged = true;
        }
    }

    /// Undo [`merge`](Self::merge) (exact up to float rounding).
    pub fn unmerge(&mut self) {
        if self.branch.is_some() && *self.merged {
            self.fold(-1.0);
            *self.merged = false;
        }
    }
}

impl LoraSlot<'_> {
    /// `(d_in, d_out)` of the Linear PEFT wraps (`d_out = 3·d` for a fused qkv).
    pub fn dims(&self) -> (usize, usize) {
        match self {
            LoraSlot::Linear(l) => l.dims(),
            LoraSlot::FusedQkv(f) => {
                let (d_in, d) = f.q.dims();
                (d_in, 3 * d)
            }
        }
    }

    /// The device of the base weights.
    pub fn device(&self) -> Device {
        match self {
            LoraSlot::Linear(l) => l.base.weight.val().device(),
            LoraSlot::FusedQkv(f) => f.q.base.weight.val().device(),
        }
    }

    /// The branch, if the module carries one.
    pub fn branch(&self) -> Option<&LoraBranch> {
        match self {
            LoraSlot::Linear(l) => l.lora.as_ref(),
            LoraSlot::FusedQkv(f) => f.branch.as_ref(),
        }
    }

    /// The branch, mutably.
    pub fn branch_mut(&mut self) -> Option<&mut LoraBranch> {
        match self {
            LoraSlot::Linear(l) => l.lora.as_mut(),
            LoraSlot::FusedQkv(f) => f.branch.as_mut(),
        }
    }

    /// Whether the branch is folded into the base weights.
    pub fn is_merged(&self) -> bool {
        match self {
            LoraSlot::Linear(l) => l.merged,
            LoraSlot::FusedQkv(f) => *f.merged,
        }
    }

    /// Put `branch` on the module (replacing any, unmerged) and freeze its base weights.
    pub fn attach(&mut self, branch: LoraBranch) {
        match self {
            LoraSlot::Linear(l) => {
                l.base = l.base.clone().no_grad();
                l.lora = Some(branch);
                l.merged = false;
            }
            LoraSlot::FusedQkv(f) => {
                for part in f.parts() {
                    part.base = part.base.clone().no_grad();
                }
                *f.branch = Some(branch);
                *f.merged = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::MultiHeadSelfAttentionConfig;
    use burn::tensor::TensorData;

    fn max_abs_diff(a: Tensor<3>, b: Tensor<3>) -> f32 {
        (a - b).abs().max().into_data().as_slice::<f32>().unwrap()[0]
    }

    fn filled(rows: usize, cols: usize, f: impl Fn(usize) -> f32, device: &Device) -> Tensor<2> {
        Tensor::from_data(TensorData::new((0..rows * cols).map(f).collect::<Vec<_>>(), [rows, cols]), device)
    }

    /// The fused branch adds `s·B A x` split into q, k and v: the same as three per-projection
    /// branches with A shared and B cut into its row blocks; merging keeps the output.
    #[test]
    fn a_fused_qkv_branch_is_three_branches_sharing_a_and_merges() {
        let device = Device::flex();
        let (d, r, s) = (8, 3, 1.5);
        let attn = MultiHeadSelfAttentionConfig::new(d, 2).init(&device);
        let x = Tensor::<3>::from_data(
            TensorData::new((0..2 * 5 * d).map(|i| ((i * 29 % 17) as f32 - 8.0) / 9.0).collect(), [2, 5, d]),
            &device,
        );
        let a = filled(r, d, |i| ((i * 7 % 11) as f32 - 5.0) / 10.0, &device);
        let b = filled(3 * d, r, |i| ((i * 5 % 13) as f32 - 6.0) / 8.0, &device);

        let mut fused = attn.clone();
        let (view, _) = FusedQkv::of(&mut fused);
        LoraSlot::FusedQkv(view).attach(LoraBranch::from_factors(a.clone(), b.clone(), s, 0.0));
        let y_fused = fused.forward(x.clone());

        let mut split = attn.clone();
        for (j, part) in [&mut split.q_proj, &mut split.k_proj, &mut split.v_proj].into_iter().enumerate() {
            let bj = b.clone().narrow(0, j * d, d);
            LoraSlot::Linear(part).attach(LoraBranch::from_factors(a.clone(), bj, s, 0.0));
        }
        let y_split = split.forward(x.clone());
        assert!(max_abs_diff(y_fused.clone(), y_split) < 1e-5);
        assert!(max_abs_diff(y_fused.clone(), attn.forward(x.clone())) > 1e-2, "the branch acts");

        let (mut view, _) = FusedQkv::of(&mut fused);
        view.merge();
        assert!(fused.qkv_merged);
        assert!(max_abs_diff(fused.forward(x.clone()), y_fused.clone()) < 1e-5);
        let (mut view, _) = FusedQkv::of(&mut fused);
        view.unmerge();
        assert!(!fused.qkv_merged);
        assert!(max_abs_diff(fused.forward(x), y_fused) < 1e-5);
    }
}
