//! Hugging Face checkpoint IO: resolving a checkpoint directory (local or HF cache), reading
//! `config.json`, and loading/saving `model.safetensors` through burn-store with an explicit
//! per-family key-remapping table.

pub mod config;
pub mod file_sha256;
pub mod floats;
pub mod keymap;
pub mod load;
pub mod resolve;
pub mod staged_dir;
pub mod torch_state_dict;
pub mod vision_tower;

pub use config::{HfConfig, read_config};
pub use keymap::{KeyMap, KeyRule};
pub use load::{LoadOptions, WeightLayout, load_safetensors, save_safetensors};
pub use resolve::{Checkpoint, has_model_config, resolve_checkpoint};
