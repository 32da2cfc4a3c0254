//! The SHA-256 of a checkpoint file, streamed (a weights file is never read into memory whole for
//! it): what the feature cache's fingerprint and the conversions' provenance line are built from.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::ModelError;

/// SHA-256 of the file at `path`.
pub fn file_sha256(path: &Path) -> Result<[u8; 32], ModelError> {
    let io = |source| ModelError::Io { path: path.into(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(io)?;
    Ok(hasher.finalize().into())
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_file_has_the_standard_digest_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        // FIPS 180-2's SHA-256 of the empty message, as sha256sum prints it.
        assert_eq!(
            hex(&file_sha256(&empty).unwrap()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let e = file_sha256(&dir.path().join("gone.safetensors")).unwrap_err().to_string();
        assert!(e.contains("gone.safetensors"), "{e}");
    }
}
