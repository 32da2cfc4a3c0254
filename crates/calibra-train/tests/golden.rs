//! Parity with torch: loss values and gradients w.r.t. the logits (fixtures/losses.json from
//! scripts/golden/losses.py), LR schedules (transformers, Dassl) and global-norm gradient clipping
//! (torch `clip_grad_norm_`) from scripts/golden/schedule.py.
//!
//! Tolerances: |got − want| <= tol · max(1, |want|), tol = 1e-10 for float64 and 1e-5 for float32
//! (spec §H), 1e-12 for the schedules (closed form vs torch's recursive cosine).

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Tensor, TensorData, activation};
use calibra_train::losses::{LossBatch, build_loss};
use calibra_train::schedule::{ConstantWarmupCosine, WarmupCosine};
use calibra_train::{ClipOutcome, clip_grad_norm};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(|x| x.as_f64().expect("number")).collect()
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(1.0)
}

fn host<const D: usize>(t: &Tensor<D>) -> Vec<f64> {
    t.to_data().iter::<f64>().collect()
}

fn tensor2(values: &[f64], shape: [usize; 2], device: &Device, dtype: DType) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), (device, dtype))
}

#[test]
fn losses_match_torch_values_and_gradients() {
    let doc = fixture("losses.json");
    let cases = doc["cases"].as_array().unwrap();
    let results = doc["results"].as_array().unwrap();
    assert!(results.len() >= 100, "fixture too small");
    let mut failures = Vec::new();
    let mut checked = 0;
    // Largest |got − want| / max(1, |want|) seen, per dtype (printed with --nocapture).
    let mut worst = [0.0f64; 2];
    for result in results {
        let case = cases.iter().find(|c| c["name"] == result["case"]).expect("case");
        let (n, k) = (case["n"].as_u64().unwrap() as usize, case["k"].as_u64().unwrap() as usize);
        let spec = result["spec"].as_str().unwrap();
        let args: Vec<String> =
            result["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().into()).collect();
        let loss = build_loss(spec, &args).unwrap_or_else(|e| panic!("{spec} {args:?}: {e}"));
        let logits_host = floats(&case["logits"]);
        let zero_shot_host = floats(&case["zero_shot"]);
        let targets: Vec<usize> =
            case["targets"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as usize).collect();
        let raw: Vec<Option<f64>> =
            case["multilabel_raw"].as_array().unwrap().iter().map(|v| v.as_f64()).collect();
        for (slot, (dtype, key, tol)) in
            [(DType::F64, "f64", 1e-10), (DType::F32, "f32", 1e-5)].into_iter().enumerate()
        {
            let device = Device::flex().autodiff();
            let logits = tensor2(&logits_host, [n, k], &device, dtype).require_grad();
            let batch = if spec == "bce_masked" {
                LossBatch::multilabel(logits.clone(), &raw).unwrap()
            } else {
                LossBatch::classes(logits.clone(), &targets)
                    .unwrap()
                    .with_zero_shot(tensor2(&zero_shot_host, [n, k], &device, dtype))
                    .unwrap()
            };
            let value = loss.forward(&batch).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(value.dtype(), dtype, "{spec}: loss dtype");
            let got_value = host(&value)[0];
            let grads = value.backward();
            let got_grad = host(&logits.grad(&grads).expect("logits gradient"));
            let want_value = result[key]["value"].as_f64().unwrap();
            let want_grad = floats(&result[key]["grad"]);
            let label = format!("{} / {spec} {args:?} / {key}", result["case"]);
            assert_eq!(got_grad.len(), want_grad.len(), "{label}: gradient length");
            for (g, w) in std::iter::once((&got_value, &want_value)).chain(got_grad.iter().zip(&want_grad)) {
                worst[slot] = worst[slot].max((g - w).abs() / w.abs().max(1.0));
            }
            if !close(got_value, want_value, tol) {
                failures.push(format!("{label}: value {got_value} vs torch {want_value}"));
            }
            for (i, (g, w)) in got_grad.iter().zip(&want_grad).enumerate() {
                if !close(*g, *w, tol) {
                    failures.push(format!("{label}: grad[{i}] {g} vs torch {w}"));
                }
            }
            checked += 1;
        }
    }
    eprintln!("largest scaled deviation from torch: f64 {:.2e}, f32 {:.2e}", worst[0], worst[1]);
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(checked, results.len() * 2);
}

#[test]
fn warmup_cosine_matches_transformers() {
    let doc = fixture("schedule.json");
    for s in doc["transformers_cosine"].as_array().unwrap() {
        let schedule = WarmupCosine::new(
            s["peak_lr"].as_f64().unwrap(),
            s["warmup_steps"].as_u64().unwrap() as usize,
            s["total_steps"].as_u64().unwrap() as usize,
        )
        .unwrap()
        .with_num_cycles(s["num_cycles"].as_f64().unwrap())
        .unwrap();
        for (step, want) in floats(&s["lr"]).into_iter().enumerate() {
            let got = schedule.lr(step);
            assert!((got - want).abs() <= 1e-12 * want.abs().max(1e-6), "{s}: step {step}: {got} vs {want}");
        }
    }
}

#[test]
fn constant_warmup_cosine_matches_dassl() {
    let doc = fixture("schedule.json");
    for s in doc["dassl_constant_warmup_cosine"].as_array().unwrap() {
        let schedule = ConstantWarmupCosine::new(
            s["base_lr"].as_f64().unwrap(),
            s["max_epoch"].as_u64().unwrap() as usize,
            s["warmup_epochs"].as_u64().unwrap() as usize,
            s["warmup_lr"].as_f64().unwrap(),
        )
        .unwrap();
        for (epoch, want) in floats(&s["lr"]).into_iter().enumerate() {
            let got = schedule.lr(epoch);
            assert!((got - want).abs() <= 1e-12 * want.abs().max(1e-6), "epoch {epoch}: {got} vs {want}");
        }
    }
}

#[derive(Module, Debug)]
struct TinyMlp {
    hidden: Linear,
    output: Linear,
}

impl TinyMlp {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.output.forward(activation::tanh(self.hidden.forward(x)))
    }
}

/// torch `[out, in]` row-major weights → a burn `Linear` (`[in, out]`).
fn linear(w: &[f64], b: &[f64], d_in: usize, d_out: usize, device: &Device, dtype: DType) -> Linear {
    let mut layer = LinearConfig::new(d_in, d_out).init(device);
    let weight = tensor2(w, [d_out, d_in], device, dtype).transpose();
    let bias = Tensor::<1>::from_data(TensorData::new(b.to_vec(), [d_out]), (device, dtype));
    layer.weight = Param::from_tensor(weight);
    layer.bias = Some(Param::from_tensor(bias));
    layer
}

/// Gradients of one parameter in torch layout.
fn torch_layout_weight(grads: &GradientsParams, layer: &Linear) -> Vec<f64> {
    host(&grads.get::<2>(layer.weight.id).expect("weight grad").transpose())
}

#[test]
fn global_norm_clipping_matches_torch() {
    let doc = fixture("grad_clip.json");
    let (w1, b1, w2, b2) = (floats(&doc["w1"]), floats(&doc["b1"]), floats(&doc["w2"]), floats(&doc["b2"]));
    let x = floats(&doc["x"]);
    let y: Vec<usize> = doc["y"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    let mut clipped_cases = 0;
    for case in doc["cases"].as_array().unwrap() {
        let (dtype, tol) = if case["dtype"] == "f64" { (DType::F64, 1e-10) } else { (DType::F32, 1e-5) };
        let device = Device::flex().autodiff();
        let model = TinyMlp {
            hidden: linear(&w1, &b1, 4, 6, &device, dtype),
            output: linear(&w2, &b2, 6, 3, &device, dtype),
        };
        let logits = model.forward(tensor2(&x, [5, 4], &device, dtype));
        let loss =
            build_loss::<&str>("ce", &[]).unwrap().forward(&LossBatch::classes(logits, &y).unwrap()).unwrap();
        let mut grads = GradientsParams::from_grads(loss.backward(), &model);
        let layers = [&model.hidden, &model.output];
        let read = |grads: &GradientsParams| -> Vec<Vec<f64>> {
            let mut out = Vec::new();
            for layer in layers {
                out.push(torch_layout_weight(grads, layer));
                out.push(host(&grads.get::<1>(layer.bias.as_ref().unwrap().id).expect("bias grad")));
            }
            out
        };
        let compare = |got: &[Vec<f64>], want: &Value, what: &str| {
            for (p, (g, w)) in got.iter().zip(want.as_array().unwrap()).enumerate() {
                for (i, (g, w)) in g.iter().zip(floats(w)).enumerate() {
                    assert!(
                        close(*g, w, tol),
                        "{what} param {p}[{i}] ({}): {g} vs torch {w}",
                        case["max_norm"]
                    );
                }
            }
        };
        compare(&read(&grads), &case["grads_before"], "before clipping");
        let max_norm = case["max_norm"].as_f64().unwrap();
        let ClipOutcome { total_norm, scale } = clip_grad_norm(&model, &mut grads, max_norm).unwrap();
        let want_total = case["total_norm"].as_f64().unwrap();
        assert!(close(total_norm, want_total, tol), "total norm {total_norm} vs torch {want_total}");
        compare(&read(&grads), &case["grads_after"], "after clipping");
        if scale < 1.0 {
            clipped_cases += 1;
        }
    }
    // The fixture covers both sides of the threshold (max_norm 0.05 and 0.5 clip, 100 does not).
    assert_eq!(clipped_cases, 4);
}
