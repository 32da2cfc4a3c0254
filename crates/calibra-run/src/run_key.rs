//! Run keys: SHA-256 of the canonical JSON of a fit's full configuration.
//!
//! Canonical JSON: objects with their keys sorted by Unicode code point (byte order of UTF-8), no
//! whitespace, strings escaped as serde_json escapes them, numbers in serde_json's shortest round-trip
//! form (integers as integers, floats always with a `.` or an exponent, e.g. `1.0`, `0.1`). The
//! same configuration therefore gives the same key on every run and machine, whatever the field order
//! in the recipe or the struct, and whether or not serde_json preserves insertion order.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A fit's key: 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct FitKey(pub String);

impl FitKey {
    /// The key of `config` (any serialisable value): SHA-256 of its canonical JSON.
    pub fn of<T: Serialize>(config: &T) -> FitKey {
        let value = serde_json::to_value(config).expect("a fit configuration serialises to JSON");
        FitKey(sha256_hex(canonical_json(&value).as_bytes()))
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 16 hex digits as an integer (what `--shard` reduces modulo N).
    pub fn prefix_u64(&self) -> u64 {
        u64::from_str_radix(&self.0[..16], 16).expect("a fit key is hex")
    }

    /// Whether `text` looks like a fit key (64 lowercase hex digits).
    pub fn is_valid(text: &str) -> bool {
        text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}

impl std::fmt::Display for FitKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical JSON text of `value` (see the module docs).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn key_order_does_not_matter() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,2],"x":0.5}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":0.5,"y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":0.5,"y":[1,2]},"b":1}"#);
        assert_eq!(FitKey::of(&a), FitKey::of(&b));
    }

    #[test]
    fn sha256_of_the_empty_string_is_the_standard_digest() {
        // FIPS 180-4 test vector (the digest of the empty message).
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn floats_and_integers_stay_distinct() {
        assert_ne!(FitKey::of(&serde_json::json!({"x": 1})), FitKey::of(&serde_json::json!({"x": 1.0})));
        // Numbers are written exactly as serde_json writes them (its shortest round-trip form).
        let y = serde_json::json!(1e-5).to_string();
        assert_eq!(
            canonical_json(&serde_json::json!({"y": 1e-5, "x": 1.0})),
            format!(r#"{{"x":1.0,"y":{y}}}"#)
        );
    }

    proptest! {
        #[test]
        fn canonical_json_parses_back_to_the_same_value(
            pairs in proptest::collection::btree_map("[a-z]{1,4}", -1e6f64..1e6, 0..6)
        ) {
            let value = serde_json::to_value(&pairs).unwrap();
            let text = canonical_json(&value);
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, value);
            prop_assert!(FitKey::is_valid(FitKey::of(&pairs).as_str()));
        }
    }
}
