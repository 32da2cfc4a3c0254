//! Mutating a valid input one byte at a time: overwrite, insert or delete at a position taken modulo
//! the current length, with the bytes that matter to a format drawn more often than chance would.

use proptest::prelude::*;

/// One edit of a byte string; the position is reduced modulo the length when applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByteEdit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

/// `bytes` after `edits`, in order. An edit of an empty string other than an insertion does nothing.
pub fn apply_edits(mut bytes: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for edit in edits {
        match *edit {
            ByteEdit::Set(i, b) if !bytes.is_empty() => {
                let at = i % bytes.len();
                bytes[at] = b;
            }
            ByteEdit::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            ByteEdit::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % bytes.len());
            }
            _ => {}
        }
    }
    bytes
}

/// Edits whose bytes are any byte half of the time and one of `interesting` (a format's delimiters,
/// digits, BOM bytes, ...) the other half.
pub fn byte_edit(interesting: &'static [u8]) -> impl Strategy<Value = ByteEdit> {
    let byte = prop_oneof![any::<u8>(), prop::sample::select(interesting.to_vec())];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| ByteEdit::Set(i, b)),
        (any::<usize>(), byte).prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        any::<usize>().prop_map(ByteEdit::Delete),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order_modulo_the_length() {
        let out = apply_edits(
            b"abc".to_vec(),
            &[ByteEdit::Set(4, b'X'), ByteEdit::Insert(9, b'-'), ByteEdit::Delete(3)],
        );
        // Set at 4 % 3 = 1 → aXc; insert at 9 % 4 = 1 → a-Xc; delete at 3 % 4 = 3 → a-X.
        assert_eq!(out, b"a-X");
        assert_eq!(apply_edits(Vec::new(), &[ByteEdit::Set(0, 1), ByteEdit::Delete(0)]), Vec::<u8>::new());
        assert_eq!(apply_edits(Vec::new(), &[ByteEdit::Insert(5, 7)]), vec![7]);
    }

    proptest! {
        #[test]
        fn each_edit_changes_the_length_by_at_most_one(
            bytes in prop::collection::vec(any::<u8>(), 0..20),
            edit in byte_edit(b",\n"),
        ) {
            let before = bytes.len();
            let after = apply_edits(bytes, std::slice::from_ref(&edit)).len();
            match edit {
                ByteEdit::Set(..) => prop_assert_eq!(after, before),
                ByteEdit::Insert(..) => prop_assert_eq!(after, before + 1),
                ByteEdit::Delete(..) => prop_assert_eq!(after, before.saturating_sub(1)),
            }
        }
    }
}
