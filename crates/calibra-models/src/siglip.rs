//! SigLIP vision tower (Hugging Face `SiglipVisionModel` numerics).
