//! SHA-256 keys: the one source of per-sample randomness, so that results never depend on the order
//! of a manifest, the number of threads or the machine.

use sha2::{Digest, Sha256};

/// SHA-256 of the parts joined by a NUL byte (so `("ab", "c")` and `("a", "bc")` differ).
pub fn sha256_parts(parts: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0u8]);
        }
        hasher.update(part.as_bytes());
    }
    hasher.finalize().into()
}

/// The first 8 bytes of [`sha256_parts`] as a big-endian `u64`: a sort key that is uniform and
/// independent of everything but the parts.
pub fn sha256_key(parts: &[&str]) -> u64 {
    let digest = sha256_parts(parts);
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separator_matters() {
        assert_ne!(sha256_parts(&["ab", "c"]), sha256_parts(&["a", "bc"]));
    }

    #[test]
    fn known_digest_of_empty_string() {
        // SHA-256("") is a published constant (FIPS 180-4 test vector).
        let d = sha256_parts(&[""]);
        assert_eq!(d[0], 0xe3);
        assert_eq!(d[31], 0x55);
    }
}
