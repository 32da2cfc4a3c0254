//! From a key path in a TOML document (`regimes.lora.r`, `encoders[2].source`) to the 1-based line
//! where its value starts, so that validation errors found after deserialisation can quote the line.

use toml::de::{DeTable, DeValue};

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A dotted key path with array indices, displayed as `a.b[2].c`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Step>);

impl KeyPath {
    /// The root (empty path).
    pub fn root() -> Self {
        KeyPath(Vec::new())
    }

    /// This path extended by a table key.
    pub fn key(&self, key: &str) -> Self {
        let mut steps = self.0.clone();
        steps.push(Step::Key(key.to_string()));
        KeyPath(steps)
    }

    /// This path extended by an array index.
    pub fn index(&self, i: usize) -> Self {
        let mut steps = self.0.clone();
        steps.push(Step::Index(i));
        KeyPath(steps)
    }
}

impl std::fmt::Display for KeyPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(k) if i == 0 => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// 1-based line of byte offset `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The line of the value at `path` in `text`, or of its deepest existing ancestor; `None` when the
/// document does not parse or the path's first key is absent.
pub fn line_of_path(text: &str, path: &KeyPath) -> Option<usize> {
    let root = DeValue::Table(DeTable::parse(text).ok()?.into_inner());
    let mut span: Option<std::ops::Range<usize>> = None;
    let mut current: &DeValue<'_> = &root;
    for step in &path.0 {
        let next = match step {
            Step::Key(k) => current.get(k.as_str()),
            Step::Index(n) => current.get(*n),
        };
        match next {
            Some(v) => {
                span = Some(v.span());
                current = v.get_ref();
            }
            None => break,
        }
    }
    span.map(|s| line_of(text, s.start))
}

/// The deepest key path whose value's (or key's) span contains byte `offset` (where a
/// deserialisation error points); `None` when the document does not parse or no value contains it.
/// Tables and arrays of tables are searched whatever their own spans (a `[[table]]`'s span does not
/// always cover its body).
pub fn path_at(text: &str, offset: usize) -> Option<KeyPath> {
    fn search(value: &DeValue<'_>, path: &KeyPath, offset: usize) -> Option<KeyPath> {
        let children: Vec<(KeyPath, &toml::Spanned<DeValue<'_>>, bool)> = match value {
            DeValue::Table(t) => {
                t.iter().map(|(k, v)| (path.key(k.get_ref()), v, k.span().contains(&offset))).collect()
            }
            DeValue::Array(a) => a.iter().enumerate().map(|(i, v)| (path.index(i), v, false)).collect(),
            _ => return None,
        };
        for (child, v, on_key) in children {
            if let Some(deeper) = search(v.get_ref(), &child, offset) {
                return Some(deeper);
            }
            if on_key || v.span().contains(&offset) {
                return Some(child);
            }
        }
        None
    }
    let root = DeTable::parse(text).ok()?;
    search(&DeValue::Table(root.into_inner()), &KeyPath::root(), offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lines_of_nested_keys_and_array_items() {
        let text = "seeds = [0, 1]\n\n[[encoders]]\nsource = \"a\"\n\n[[encoders]]\nname = \"b\"\nsource = \"b\"\n\n[regimes.lora]\nr = 8\n";
        let p = KeyPath::root();
        assert_eq!(line_of_path(text, &p.key("seeds")), Some(1));
        assert_eq!(line_of_path(text, &p.key("encoders").index(1).key("source")), Some(8));
        assert_eq!(line_of_path(text, &p.key("regimes").key("lora").key("r")), Some(11));
        // A missing leaf falls back to its deepest existing ancestor.
        assert!(matches!(line_of_path(text, &p.key("encoders").index(0).key("name")), Some(3 | 4)));
        assert_eq!(line_of_path(text, &p.key("nothing")), None);
        assert_eq!(p.key("encoders").index(1).key("source").to_string(), "encoders[1].source");
        let offset = text.find("\"b\"").unwrap();
        assert_eq!(path_at(text, offset), Some(p.key("encoders").index(1).key("name")));
        assert_eq!(path_at(text, text.find("8").unwrap()), Some(p.key("regimes").key("lora").key("r")));
    }
}
