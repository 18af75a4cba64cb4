//! What the property tests of every parser of others' input share (frames
//! and recordings, viewer messages and flags, selectors, the demo API's
//! requests): how many cases they run, and input damaged byte by byte.
//!
//! Used as a dev-dependency only: `make fuzz CASES=N` sets
//! `WATCHLIFE_FUZZ_CASES`, and `make test` runs each property's own default.

use proptest::prelude::*;
use proptest::test_runner::Config;

/// Variables that set the cases of every property, the first one set
/// winning: ours (`make fuzz`), then proptest's own.
pub const CASES_VARIABLES: [&str; 2] = ["WATCHLIFE_FUZZ_CASES", "PROPTEST_CASES"];

/// A property's configuration: `cases` cases, unless one of
/// [`CASES_VARIABLES`] holds a number.
pub fn config(cases: u32) -> Config {
    let from_env = CASES_VARIABLES
        .iter()
        .find_map(|name| std::env::var(name).ok()?.parse().ok());
    Config {
        cases: from_env.unwrap_or(cases),
        ..Config::default()
    }
}

/// Most edits made to one valid input.
const MOST_EDITS: usize = 5;

/// `valid` with one to [`MOST_EDITS`] edits: a byte flipped, inserted or
/// removed, or the input cut short. What a damaged file or a broken
/// connection hands a parser.
pub fn mutated(valid: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let edit = (0u8..4, any::<usize>(), any::<u8>());
    proptest::collection::vec(edit, 1..=MOST_EDITS).prop_map(move |edits| {
        let mut bytes = valid.clone();
        for (kind, i, b) in edits {
            let len = bytes.len();
            match kind {
                0 if len > 0 => bytes[i % len] ^= b.max(1),
                1 => bytes.insert(i % (len + 1), b),
                2 if len > 0 => {
                    bytes.remove(i % len);
                }
                3 => bytes.truncate(i % (len + 1)),
                _ => {}
            }
        }
        bytes
    })
}

/// [`mutated`] for text: the damaged bytes read as UTF-8, an invalid
/// sequence replaced by U+FFFD.
pub fn mutated_text(valid: String) -> impl Strategy<Value = String> {
    mutated(valid.into_bytes()).prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn damage_changes_the_input_within_its_bounds() {
        let valid = b"{\"seq\":1}".to_vec();
        let mut runner = TestRunner::deterministic();
        let mut changed = 0;
        for _ in 0..200 {
            let damaged = mutated(valid.clone())
                .new_tree(&mut runner)
                .unwrap()
                .current();
            assert!(damaged.len() <= valid.len() + MOST_EDITS);
            changed += usize::from(damaged != valid);
        }
        assert!(changed > 150, "only {changed} of 200 differ");
    }
}
