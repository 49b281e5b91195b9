//! The suite's own layout (issue 28, "Tests that stand on their own"): test files by subject,
//! none over 800 lines, so a reader finds a behaviour's tests by its name.

use std::path::Path;

/// The most lines a file of tests/it may have.
const MAX_LINES: usize = 800;

#[test]
fn no_test_file_is_over_800_lines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut over = vec![];
    for path in crate::common::rust_files(&dir) {
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        let name = path.strip_prefix(&dir).unwrap().display().to_string();
        if lines > MAX_LINES {
            over.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(over.is_empty(), "split these by subject (at most {MAX_LINES} lines each): {over:#?}");
}
