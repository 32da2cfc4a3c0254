//! CLIP vision and text towers (Hugging Face `CLIPModel` numerics).
