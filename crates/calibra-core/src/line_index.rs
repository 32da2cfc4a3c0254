//! Physical line numbers for CSV records. The csv crate's `Position::line` does not count blank
//! lines, so an error after a blank line named the wrong line; this reader wrapper remembers where
//! every `\n` and `\r` is, and [`LineIndex::line_of`] maps a record's byte offset to the 1-based line
//! of the file. The csv crate's offset of a record that follows blank lines is where those blank lines
//! start, so they are skipped first.

use std::cell::RefCell;
use std::io::Read;
use std::rc::Rc;

/// The byte offsets of the newlines read so far, shared between the reader and its user.
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    breaks: Rc<RefCell<Breaks>>,
}

/// Offsets of the `\n` and of the `\r` bytes, each in increasing order.
#[derive(Debug, Default)]
struct Breaks {
    newlines: Vec<u64>,
    returns: Vec<u64>,
}

impl LineIndex {
    /// Wrap `inner`: every byte read through the result is indexed here.
    pub fn reader<R: Read>(&self, inner: R) -> IndexedReader<R> {
        IndexedReader { inner, offset: 0, breaks: self.breaks.clone() }
    }

    /// The 1-based physical line of the first byte at or after `offset` that is not part of a blank
    /// line's terminator (`\n` or `\r\n`); the bytes must have been read through the reader.
    pub fn line_of(&self, offset: u64) -> u64 {
        let b = self.breaks.borrow();
        let has = |list: &[u64], at: u64| list.binary_search(&at).is_ok();
        let mut at = offset;
        loop {
            if has(&b.newlines, at) {
                at += 1;
            } else if has(&b.returns, at) && has(&b.newlines, at + 1) {
                at += 2;
            } else {
                break;
            }
        }
        1 + b.newlines.partition_point(|&n| n < at) as u64
    }
}

/// A reader that records the offset of every newline it passes on.
pub struct IndexedReader<R> {
    inner: R,
    offset: u64,
    breaks: Rc<RefCell<Breaks>>,
}

impl<R: Read> Read for IndexedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut breaks = self.breaks.borrow_mut();
        for (i, &b) in buf[..n].iter().enumerate() {
            match b {
                b'\n' => breaks.newlines.push(self.offset + i as u64),
                b'\r' => breaks.returns.push(self.offset + i as u64),
                _ => {}
            }
        }
        self.offset += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_physical_lines_blank_ones_included() {
        let text = b"a\n\nbb\r\n\nc";
        let index = LineIndex::default();
        let mut read = Vec::new();
        index.reader(&text[..]).read_to_end(&mut read).unwrap();
        assert_eq!(read, text);
        // `a` at 0 (line 1), `bb` at 3 (line 3), `c` at 8 (line 5); an offset at the start of the
        // blank lines before a record (as the csv crate reports it) names the record's line.
        assert_eq!([index.line_of(0), index.line_of(3), index.line_of(8)], [1, 3, 5]);
        assert_eq!([index.line_of(2), index.line_of(7)], [3, 5]);
    }
}
