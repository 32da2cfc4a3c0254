//! The CLIP byte-level BPE tokenizer.
