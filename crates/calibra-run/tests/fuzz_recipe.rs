//! Fuzzing without nightly (issue 20): the recipe parser and validator on arbitrary text and on
//! mutated valid recipes returns a recipe or an error naming the file, never a panic or a hang; a
//! recipe it accepts expands into a grid. CI-sized case counts
//! (`PROPTEST_CASES=N` or `CALIBRA_FUZZ_SCALE=K` runs more; see calibra-testkit).

mod support;

use calibra_run::{Recipe, ValidationOptions, expand};
use proptest::prelude::*;

const OPTIONS: ValidationOptions = ValidationOptions { check_paths: false };

#[derive(Debug, Clone)]
enum Edit {
    Set(usize, char),
    Insert(usize, char),
    Delete(usize),
    /// Replace the line at this index by another line of the recipe (repeated or moved keys).
    Line(usize, usize),
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let len = chars.len().max(1);
        match *e {
            Edit::Set(i, c) if !chars.is_empty() => chars[i % len] = c,
            Edit::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
            Edit::Delete(i) if !chars.is_empty() => {
                chars.remove(i % len);
            }
            Edit::Line(a, b) => {
                let s: String = chars.iter().collect();
                let mut lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let n = lines.len();
                    lines[a % n] = lines[b % n];
                    chars = (lines.join("\n") + "\n").chars().collect();
                }
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn edit() -> impl Strategy<Value = Edit> {
    let c = prop_oneof![
        any::<char>(),
        prop::sample::select("[]{}=\",.\n-0123456789e#".chars().collect::<Vec<_>>())
    ];
    prop_oneof![
        (any::<usize>(), c.clone()).prop_map(|(i, c)| Edit::Set(i, c)),
        (any::<usize>(), c).prop_map(|(i, c)| Edit::Insert(i, c)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Line(a, b)),
    ]
}

proptest! {
    #![proptest_config(calibra_testkit::fuzz_config(256))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        if let Err(e) = Recipe::parse(&text, "fuzz.toml", OPTIONS) {
            prop_assert!(e.to_string().contains("fuzz.toml"), "{}", e);
        }
    }

    #[test]
    fn mutated_recipes_parse_or_name_the_file(edits in prop::collection::vec(edit(), 1..6)) {
        let text = apply(support::RECIPE, &edits);
        match Recipe::parse(&text, "fuzz.toml", OPTIONS) {
            Ok(recipe) => {
                let _ = expand(&recipe);
            }
            Err(e) => prop_assert!(e.to_string().contains("fuzz.toml"), "{}", e),
        }
    }
}
