//! Helpers shared by the parity tests that read golden vectors from JSON.

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
