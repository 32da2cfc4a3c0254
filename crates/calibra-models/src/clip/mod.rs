//! CLIP vision and text towers (Hugging Face `CLIPModel` numerics), the joint model, the zero-shot
//! classifier, the CoOp prompt learner, MaPLe's coupled, PromptSRC's independent and HiCroPL's cross-mapped deep prompts; native OpenCLIP checkpoints load into the same modules
//! ([`open_clip`]).

pub mod deep_prompt_model;
pub mod deep_prompts;
pub mod hicropl;
pub mod ivlp;
pub mod keys;
pub mod maple;
pub mod model;
pub mod open_clip;
pub mod prompt;
pub mod prompt_mapper;
pub mod prompt_text;
pub mod promptsrc_templates;
pub mod save;
pub mod text;
pub mod vision;
pub mod zero_shot;

pub use deep_prompt_model::DeepPromptModel;
pub use hicropl::{HicroplConfig, HicroplMapper, HicroplPromptLearner, teacher_from_descriptions};
pub use ivlp::{IvlpConfig, IvlpPromptLearner, IvlpValues};
pub use maple::{MapleConfig, MaplePromptLearner, MapleValues};
pub use model::{ClipConfig, ClipModel, ClipOutput, l2_normalize};
pub use prompt::{ClassTokenPosition, ContextInit, PromptLearner, PromptLearnerConfig};
pub use prompt_text::{OpenClipBertTokenizer, PromptTextEncoder, PromptTokenizer, SlottedPrompt};
pub use promptsrc_templates::PROMPTSRC_TEMPLATES;
pub use text::{ClipTextConfig, ClipTextTransformer, EotPooling};
pub use vision::{ClipVisionConfig, ClipVisionTransformer, TowerOutput};
pub use zero_shot::{MVC_BENCH_TEMPLATES, ZeroShotClassifier, fill_template};
