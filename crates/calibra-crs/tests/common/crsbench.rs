//! The CRS-Bench paper's published numbers (shared/seeds/000_bd6db02b46293500.txt).

/// Table 2 (seed 000, line 37, "Table 2. Encoder reliability by dataset", columns "Aggregate AUROC CRS"),
/// in the table's row order, which is also Figure 2's order: (encoder, aggregate AUROC, aggregate CRS).
pub const TABLE2_AGGREGATE: [(&str, f64, f64); 15] = [
    ("PanDerm", 0.871, 0.703),
    ("MedSigLIP", 0.908, 0.701),
    ("MedGemma", 0.909, 0.645),
    ("BiomedCLIP", 0.873, 0.424),
    ("CheXzero", 0.837, 0.398),
    ("ViT-B/16", 0.853, 0.320),
    ("SigLIP", 0.847, 0.298),
    ("CLIP", 0.848, 0.284),
    ("DINOv2", 0.857, 0.266),
    ("RAD-DINO", 0.847, 0.251),
    ("LLaVA-Med", 0.861, 0.241),
    ("RETFound", 0.836, 0.187),
    ("MAE", 0.819, 0.184),
    ("BioViL", 0.795, 0.125),
    ("ResNet-50", 0.828, 0.072),
];
