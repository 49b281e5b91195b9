//! The no-id-branching guard: only `src/provider/registry.rs` may name a provider id.
//!
//! Any string literal equal to an id outside the registry fails the build. That covers every
//! comparison shape at once (`==`, `!=`, `match` arms, `.contains(..)`, `matches!`), and also
//! catches ids smuggled into tables elsewhere. Comments are blanked first, so they may explain.

use std::path::Path;

/// Blanks `//` comments (keeping line numbers) so prose can mention ids.
fn strip_comments(line: &str) -> &str {
    let mut in_str = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

#[test]
fn provider_ids_appear_only_in_the_registry() {
    let ids = super::common::provider_ids();
    assert!(
        ids.len() >= 2,
        "the registry lists the supported providers: {ids:?}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = super::common::rust_files(&root.join("src"));
    files.extend(super::common::rust_files(&root.join("launchd/src")));
    let mut hits = vec![];
    for f in &files {
        if f.ends_with("src/provider/registry.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = strip_comments(line);
            for id in &ids {
                for shape in [format!("\"{id}\""), format!("'{id}'"), format!("\"{id}_")] {
                    if code.contains(&shape) {
                        hits.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "provider ids outside src/provider/registry.rs (use a registry field instead):\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_guard_sees_every_comparison_shape() {
    for line in [
        r#"if id == "claude" {"#,
        r#"if "codex" != id {"#,
        r#"    "claude" => 1,"#,
        r#"["claude", "codex"].contains(&id)"#,
        r#"matches!(id, "codex")"#,
        r#"map.get("claude_command")"#,
    ] {
        let code = strip_comments(line);
        assert!(
            ["\"claude\"", "\"codex\"", "\"claude_"]
                .iter()
                .any(|s| code.contains(s)),
            "{line}"
        );
    }
    assert_eq!(strip_comments(r#"x // "claude" in a comment"#).trim(), "x");
    assert_eq!(strip_comments(r#"let s = "a//b";"#), r#"let s = "a//b";"#);
}
