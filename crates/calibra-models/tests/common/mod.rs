//! Helpers shared by calibra-models' integration tests: golden vectors read from JSON, and checkpoint
//! copies with an edited `config.json` for the refusal tests. Each test binary uses some of them.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use burn::prelude::*;
use calibra_models::Encoder;
use serde_json::Value;

/// Flattens a nested JSON array of numbers, returning the values (as f32) and the shape.
pub fn flat(v: &Value) -> (Vec<f32>, Vec<usize>) {
    fn rec(v: &Value, out: &mut Vec<f32>, shape: &mut Vec<usize>, depth: usize) {
        match v {
            Value::Array(a) => {
                if shape.len() == depth {
                    shape.push(a.len());
                }
                for x in a {
                    rec(x, out, shape, depth + 1);
                }
            }
            x => out.push(x.as_f64().expect("number") as f32),
        }
    }
    let (mut out, mut shape) = (Vec::new(), Vec::new());
    rec(v, &mut out, &mut shape, 0);
    (out, shape)
}

/// `max |got − want|` over a golden JSON array of `got`'s shape, printed, and asserted to be at most
/// `tol`.
pub fn assert_within<const D: usize>(
    name: &str,
    got: burn::tensor::Tensor<D>,
    want: &Value,
    tol: f32,
) -> f32 {
    let (want, shape) = flat(want);
    assert_eq!(got.dims().to_vec(), shape, "{name}: shape");
    let got: Vec<f32> = got.into_data().try_to_vec::<f32>().unwrap();
    let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    eprintln!("{name}: max |diff| {max:e}");
    assert!(max <= tol, "{name}: max |diff| {max:e} > {tol:e}");
    max
}

/// A temporary copy of the checkpoint `src` (`model.safetensors` as is) whose `config.json` is
/// `src`'s after `edit`.
pub fn copy_with_config(src: &Path, edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("model.safetensors"), tmp.path().join("model.safetensors")).unwrap();
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    edit(&mut cfg);
    std::fs::write(tmp.path().join("config.json"), serde_json::to_string_pretty(&cfg).unwrap()).unwrap();
    tmp
}

/// The error loading `dir` gives; panics if it loads.
pub fn load_err(dir: &Path) -> String {
    match Encoder::load_dir(dir, &Device::flex()) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e.to_string(),
    }
}

/// Float32 golden tensors by name: (shape, values).
pub type GoldenTensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// Reads every tensor of a float32 safetensors file.
pub fn read_tensors(path: &Path) -> GoldenTensors {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensors()
        .into_iter()
        .map(|(name, view)| {
            assert_eq!(view.dtype(), safetensors::Dtype::F32, "{name}");
            let values =
                view.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            (name, (view.shape().to_vec(), values))
        })
        .collect()
}

/// `max |got − expected|`, after checking the shapes agree.
pub fn max_abs_diff<const D: usize>(got: &Tensor<D>, expected: &(Vec<usize>, Vec<f32>)) -> f32 {
    assert_eq!(got.dims().to_vec(), expected.0, "shape");
    let got = got.to_data().try_to_vec::<f32>().unwrap();
    got.iter().zip(&expected.1).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max)
}

/// `max |got − want|`, printed under `name` and asserted to be at most `tol`.
pub fn assert_close_to<const D: usize>(
    name: &str,
    got: &Tensor<D>,
    want: &(Vec<usize>, Vec<f32>),
    tol: f32,
) -> f32 {
    let diff = max_abs_diff(got, want);
    eprintln!("{name}: max |diff| {diff:e}");
    assert!(diff <= tol, "{name}: max |diff| {diff:e} > {tol:e}");
    diff
}

/// The golden tensor `name` as a batch of images on `device`.
pub fn golden_images(g: &GoldenTensors, name: &str, device: &Device) -> Tensor<4> {
    let (shape, values) = &g[name];
    let shape: [usize; 4] = shape.as_slice().try_into().unwrap();
    Tensor::from_data(TensorData::new(values.clone(), shape), device)
}
