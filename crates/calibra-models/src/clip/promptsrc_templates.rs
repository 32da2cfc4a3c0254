//! PromptSRC's textual-diversity template set: the 60 ImageNet prompt templates of OpenAI's CLIP
//! release (`openai/CLIP notebooks/Prompt_Engineering_for_ImageNet.ipynb`, MIT licence), which
//! PromptSRC (`muzairkhattak/PromptSRC trainers/imagenet_templates.py`, `IMAGENET_TEMPLATES`) averages
//! the frozen text features over. Order as there (it does not change the mean, up to rounding).

/// The 60 templates, each with one `{}` for the class name.
pub const PROMPTSRC_TEMPLATES: [&str; 60] = [
    "a photo of a {}.",
    "a bad photo of a {}.",
    "a photo of many {}.",
    "a sculpture of a {}.",
    "a photo of the hard to see {}.",
    "a low resolution photo of the {}.",
    "a rendering of a {}.",
    "graffiti of a {}.",
    "a bad photo of the {}.",
    "a cropped photo of the {}.",
    "a tattoo of a {}.",
    "the embroidered {}.",
    "a photo of a hard to see {}.",
    "a bright photo of a {}.",
    "a photo of a clean {}.",
    "a photo of a dirty {}.",
    "a dark photo of the {}.",
    "a drawing of a {}.",
    "a photo of my {}.",
    "the plastic {}.",
    "a photo of the cool {}.",
    "a close-up photo of a {}.",
    "a black and white photo of the {}.",
    "a painting of the {}.",
    "a painting of a {}.",
    "a pixelated photo of the {}.",
    "a sculpture of the {}.",
    "a bright photo of the {}.",
    "a cropped photo of a {}.",
    "a plastic {}.",
    "a photo of the dirty {}.",
    "a jpeg corrupted photo of a {}.",
    "a blurry photo of the {}.",
    "a photo of the {}.",
    "a good photo of the {}.",
    "a rendering of the {}.",
    "a {} in a video game.",
    "a photo of one {}.",
    "a doodle of a {}.",
    "a close-up photo of the {}.",
    "the origami {}.",
    "the {} in a video game.",
    "a sketch of a {}.",
    "a doodle of the {}.",
    "a origami {}.",
    "a low resolution photo of a {}.",
    "the toy {}.",
    "a rendition of the {}.",
    "a photo of the clean {}.",
    "a photo of a large {}.",
    "a rendition of a {}.",
    "a photo of a nice {}.",
    "a photo of a weird {}.",
    "a blurry photo of a {}.",
    "a cartoon {}.",
    "art of a {}.",
    "a sketch of the {}.",
    "a embroidered {}.",
    "a pixelated photo of a {}.",
    "itap of the {}.",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_has_one_slot_and_they_are_distinct() {
        assert!(PROMPTSRC_TEMPLATES.iter().all(|t| t.matches("{}").count() == 1));
        let distinct: std::collections::BTreeSet<_> = PROMPTSRC_TEMPLATES.iter().collect();
        assert_eq!(distinct.len(), 60);
    }
}
