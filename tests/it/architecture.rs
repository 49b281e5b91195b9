//! The layers of `src/` (STYLE.md 11): every `crate::…` path names the top-level module it
//! reaches, and each module may reach only the modules its row of [`ALLOWED`] lists. Imports
//! point down the pipeline: commands → setup/agent/direct/launch → verify → host → config →
//! provider → sys/output. Comments are blanked first, as in the registry guard.

use std::collections::BTreeSet;
use std::path::Path;

/// Which top-level modules each top-level module may name (besides itself). `lib`/`main` and
/// `commands` sit on top and may name anything.
const ALLOWED: &[(&str, &[&str])] = &[
    ("cli", &["agent", "host", "provider", "setup"]),
    (
        "context",
        &[
            "host", "config", "provider", "verify", "output", "sys", "error",
        ],
    ),
    (
        "setup",
        &[
            "agent", "direct", "verify", "host", "config", "provider", "context", "sys", "output",
            "error",
        ],
    ),
    (
        "agent",
        &[
            "direct", "probe", "verify", "host", "config", "provider", "context", "sys", "output",
            "error",
        ],
    ),
    (
        "direct",
        &[
            "probe", "verify", "host", "config", "provider", "context", "sys", "output", "error",
        ],
    ),
    // The one probe of a live Host: beside verify, below the flows that use it.
    ("probe", &["verify", "host", "sys", "output", "error"]),
    // The Host's launch program (`oyster host exec`): a flow beside agent/direct/setup.
    (
        "launch",
        &[
            "direct", "verify", "host", "config", "provider", "context", "sys", "output", "error",
        ],
    ),
    ("verify", &["host", "sys", "output", "error"]),
    // Not `context`: the context is built from the stack (`host::stack`), so planning takes
    // explicit inputs (`host::plan::PlanEnv`) and the two never import each other.
    ("host", &["config", "provider", "sys", "output", "error"]),
    ("config", &["provider", "sys", "output", "error"]),
    ("provider", &["sys", "output", "error"]),
    ("output", &["sys", "error"]),
    ("sys", &["error"]),
    ("error", &["sys"]),
];

/// The top-level module a file belongs to: `src/host/plan.rs` → `host`, `src/cli.rs` → `cli`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// Every top-level module named by a `crate::` path (or a `$crate::` macro path) in `code`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // `crate::{a, b}` names several.
        if name.is_empty() && rest.starts_with('{') {
            let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
            for part in group.split(',') {
                let n: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !n.is_empty() {
                    out.insert(n);
                }
            }
        } else if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn violations(src: &Path) -> Vec<String> {
    let modules: BTreeSet<String> = std::fs::read_dir(src)
        .unwrap()
        .flatten()
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    let mut found = vec![];
    for file in super::common::rust_files(src) {
        let module = module_of(src, &file);
        if ["lib", "main", "commands"].contains(&module.as_str()) {
            continue;
        }
        let allowed = ALLOWED
            .iter()
            .find(|(m, _)| *m == module)
            .map(|(_, a)| *a)
            .unwrap_or_else(|| panic!("{module} has no row in ALLOWED; add one"));
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for target in named_modules(code) {
                // Items of the crate root (`crate::ExitStatus`, `crate::say!`) are not modules.
                if target == module || !modules.contains(&target) {
                    continue;
                }
                if !allowed.contains(&target.as_str()) {
                    found.push(format!(
                        "{}:{}: {module} imports {target}",
                        file.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn imports_only_point_down_the_pipeline() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "imports that break the layers (STYLE.md 11):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_guard_catches_an_upward_import() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("host")).unwrap();
    std::fs::write(src.join("commands.rs"), "").unwrap();
    std::fs::write(src.join("cli.rs"), "").unwrap();
    std::fs::write(
        src.join("host/plan.rs"),
        "use crate::commands::Ctx;\n// use crate::cli::X; (a comment)\nuse crate::{config, cli};\n",
    )
    .unwrap();
    std::fs::write(src.join("config.rs"), "").unwrap();
    // The context ↔ host cycle: host may not name the context.
    std::fs::write(src.join("context.rs"), "use crate::host::stack::Stack;\n").unwrap();
    std::fs::write(
        src.join("host/runner.rs"),
        "fn run(ctx: &crate::context::Context) {}\n",
    )
    .unwrap();
    let found = violations(&src);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found
            .iter()
            .any(|f| f.ends_with("runner.rs:1: host imports context")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.ends_with("plan.rs:1: host imports commands")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.ends_with("plan.rs:3: host imports cli")),
        "{found:#?}"
    );
}
