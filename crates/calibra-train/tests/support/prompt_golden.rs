//! Shared by the deep-prompt golden tests (`tests/maple.rs`, `tests/promptsrc.rs`): the tiny CLIP
//! fixture of calibra-models, the golden JSON reader, the scripts' `wave` formula and an in-memory
//! image-batch source. Included with `#[path]`, so some items are unused in one of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor, TensorData};
use calibra_models::clip::ClipModel;
use calibra_models::tokenizer::ClipTokenizer;
use calibra_train::coop::CoopError;
use serde_json::Value;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibra-models/tests/fixtures")
}

/// The tiny CLIP fixture and its tokenizer, on the CPU.
pub fn load() -> (ClipModel, ClipTokenizer, Device) {
    let device = Device::flex();
    let (model, _) = ClipModel::load(fixtures().join("clip").to_str().unwrap(), &device).unwrap();
    let tok = ClipTokenizer::from_dir(fixtures().join("tokenizer/hf")).unwrap();
    (model, tok, device)
}

/// `tests/golden/<name>`, parsed.
pub fn golden(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every number of a (nested) JSON array, flattened.
pub fn floats(v: &Value) -> Vec<f32> {
    fn rec(v: &Value, out: &mut Vec<f32>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| rec(x, out)),
            x => out.push(x.as_f64().expect("number") as f32),
        }
    }
    let mut out = Vec::new();
    rec(v, &mut out);
    out
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().into()).collect()
}

pub fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
}

/// The scripts' `wave`: `amplitude · sin(0.7·j + phase)` over the flat index, in f64, then f32.
pub fn wave(n: usize, amplitude: f64, phase: f64) -> Vec<f32> {
    (0..n).map(|j| (amplitude * (0.7 * j as f64 + phase).sin()) as f32).collect()
}

/// The golden images: `wave(…, 1, 0.5)` of the JSON's `image_shape`.
pub fn images(g: &Value, device: &Device) -> Tensor<4> {
    let s = usizes(&g["image_shape"]);
    let n: usize = s.iter().product();
    Tensor::from_data(TensorData::new(wave(n, 1.0, 0.5), [s[0], s[1], s[2], s[3]]), device)
}

pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

pub fn host(t: Tensor<2>) -> Vec<f32> {
    t.to_data().iter::<f32>().collect()
}

/// The batch source of a test: rows of an in-memory image tensor.
pub fn rows_of(images: &Tensor<4>) -> impl FnMut(&[usize]) -> Result<Tensor<4>, CoopError> + '_ {
    move |rows: &[usize]| {
        let index = Tensor::<1, Int>::from_data(
            TensorData::new(rows.iter().map(|&r| r as i64).collect::<Vec<_>>(), [rows.len()]),
            &images.device(),
        );
        Ok(images.clone().select(0, index))
    }
}
