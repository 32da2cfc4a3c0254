//! A batch of token-id rows as the `[b, n]` Int tensor a text tower's token embedding reads, checked
//! first so that a ragged batch or an id outside the vocabulary is an error naming the row, not a
//! panic inside the embedding lookup. Shared by the CLIP and SigLIP text towers.

use burn::prelude::*;

use crate::error::ModelError;

/// `ids` (every row of one length, every id `< vocab`) as a `[b, n]` tensor on `device`; `tower`
/// names the tower in messages (`CLIP text`).
pub fn token_id_tensor(
    tower: &str,
    ids: &[Vec<u32>],
    vocab: usize,
    device: &Device,
) -> Result<Tensor<2, Int>, ModelError> {
    let b = ids.len();
    let n = ids.first().map_or(0, Vec::len);
    if b == 0 || n == 0 {
        return Err(ModelError::Input(format!("{tower}: empty batch or empty sequence")));
    }
    for (row, r) in ids.iter().enumerate() {
        if r.len() != n {
            return Err(ModelError::Input(format!(
                "{tower}: row {row} has {} ids, row 0 has {n} (pad the batch to one length)",
                r.len()
            )));
        }
        if let Some(&bad) = r.iter().find(|&&i| i as usize >= vocab) {
            return Err(ModelError::Input(format!("{tower}: row {row}: id {bad} >= vocab size {vocab}")));
        }
    }
    let flat: Vec<i64> = ids.iter().flatten().map(|&i| i64::from(i)).collect();
    Ok(Tensor::<2, Int>::from_data(TensorData::new(flat, [b, n]), device))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ragged_empty_and_out_of_vocabulary_batches_are_named() {
        let device = Device::flex();
        let err = |ids: &[Vec<u32>]| token_id_tensor("T", ids, 10, &device).unwrap_err().to_string();
        assert!(err(&[]).contains("T: empty batch"));
        assert!(err(&[vec![1, 2], vec![3]]).contains("row 1 has 1 ids, row 0 has 2"));
        assert!(err(&[vec![1, 2], vec![3, 10]]).contains("row 1: id 10 >= vocab size 10"));
        let t = token_id_tensor("T", &[vec![1, 2, 3], vec![4, 5, 9]], 10, &device).unwrap();
        assert_eq!(t.dims(), [2, 3]);
        assert_eq!(t.into_data().convert::<i64>().try_to_vec::<i64>().unwrap(), vec![1, 2, 3, 4, 5, 9]);
    }
}
