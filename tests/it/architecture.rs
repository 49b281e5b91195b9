//! The layers of `src/`: every path that reaches another top-level module (`crate::host::x`,
//! `super::super::host::x`, `$crate::output::…` in a macro, a rustfmt-wrapped
//! `use crate::{\n    host,\n};`, a path in an expression or a type) names that module, and
//! each module may name only the modules its row of [`ALLOWED`] lists. Imports point down the
//! pipeline: commands → setup/agent/direct/launch → probe → verify → host → config → provider
//! → sys/output.
//!
//! The sources are parsed with `syn`, not scanned by line, so layout (wrapping, comments,
//! strings that look like paths) cannot hide or fake an import. Macro arguments are token
//! streams to the parser; the guard reads the `crate::`/`super::` paths in them token by token.

use std::collections::BTreeSet;
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Which top-level modules each top-level module may name (besides itself). `lib`/`main` and
/// `commands` sit on top and may name anything. A cycle between two rows is refused by
/// [`the_layers_have_no_cycle`]; the only ones tolerated are listed in [`CYCLE_EXCEPTIONS`].
#[rustfmt::skip]
const ALLOWED: &[(&str, &[&str])] = &[
    // clap's structs, resolved once into the `Invocation` the commands read.
    ("cli", &["invocation", "agent", "context", "host", "provider", "setup", "output", "error"]),
    // The resolved command line: plain types the commands read, nothing of clap's.
    ("invocation", &["agent", "context", "host", "setup", "output"]),
    ("context", &["launchctl", "systemd", "host", "config", "provider", "verify", "output", "sys", "error"]),
    ("setup", &["agent", "manager", "systemd", "service", "undo", "direct", "verify", "host", "config", "provider", "context", "launchctl", "sys", "output", "error"]),
    ("agent", &["service", "systemd", "unit", "undo", "direct", "probe", "verify", "host", "config", "provider", "context", "launchctl", "sys", "output", "error"]),
    ("direct", &["probe", "verify", "host", "config", "provider", "context", "sys", "output", "error"]),
    // Fleets of Macs (issue 32): the MDM profile, oyster's signature, the inventory; reads
    // what the flows below it know, changes nothing.
    ("fleet", &["agent", "probe", "verify", "host", "config", "provider", "context", "sys", "output", "error"]),
    // The one probe of a live Host: beside verify, below the flows that use it.
    ("probe", &["verify", "host", "sys", "output", "error"]),
    // The Host's launch program (`oyster host exec`): a flow beside agent/direct/setup.
    ("launch", &["direct", "verify", "host", "config", "provider", "context", "sys", "output", "error"]),
    ("verify", &["host", "sys", "output", "error"]),
    // One way to take side effects back (setup's journal, the lifecycle's rollback): below
    // both, above the audit log it records to.
    ("undo", &["sys", "output", "error"]),
    // Which manager runs the Host here, and its job: the one room naming both backends.
    ("manager", &["agent", "unit", "service", "systemd", "context", "host", "sys", "error"]),
    // The systemd user manager behind the seam: beside `agent` (launchd's job).
    ("unit", &["service", "systemd", "direct", "verify", "host", "config", "context", "sys", "output", "error"]),
    // The service-manager seam: the neutral observation, the one pure decision, the steps and
    // the receipt; below every manager (launchd's agent, systemd) that fills and takes them.
    ("service", &["host", "verify", "config", "sys", "output", "error"]),
    // The one door to launchd (the located launchctl, its typed codes and domains, the print
    // parser): owned by the context, below every flow that loads or reads a job.
    ("launchctl", &["provider", "sys", "output", "error"]),
    // The one door to systemd --user (the located systemctl, its verbs, the `show` parser,
    // the unit renderer, the manager probe): typed values only, below every flow that will
    // install or read a unit.
    ("systemd", &["sys", "output", "error"]),
    // Not `context`: the context is built from the stack (`host::stack`), so planning takes
    // explicit inputs (`host::plan::PlanEnv`) and the two never import each other.
    ("host", &["config", "provider", "sys", "output", "error"]),
    ("config", &["provider", "sys", "output", "error"]),
    ("provider", &["sys", "output", "error"]),
    ("output", &["sys", "error"]),
    ("sys", &[]),
    ("error", &["sys"]),
];

/// Edges that close a cycle in [`ALLOWED`] and are tolerated only while the code that needs
/// them is being moved. Each entry must still be used: once the code no longer takes the edge,
/// [`every_cycle_exception_is_still_taken`] fails and the entry is deleted, so the cycle is
/// forbidden from then on.
const CYCLE_EXCEPTIONS: &[(&str, &str)] = &[
    // None: `host::plan` takes explicit inputs (`PlanEnv`) and the launch program moved to
    // `launch/`, so `host` no longer names `context` and the cycle is forbidden.
];

fn allowed(module: &str) -> Vec<&'static str> {
    let row = ALLOWED
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, a)| a.to_vec())
        .unwrap_or_else(|| panic!("{module} has no row in ALLOWED; add one"));
    let extra = CYCLE_EXCEPTIONS.iter().filter(|(from, _)| *from == module).map(|(_, to)| *to);
    row.into_iter().chain(extra).collect()
}

/// The module path of a file: `src/host/plan.rs` → `[host, plan]`, `src/host/mod.rs` →
/// `[host]`, `src/cli.rs` → `[cli]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> =
        rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Collects `(line, top-level module)` for every path of one file that leaves its module.
struct Refs {
    /// The module the visitor is in: the file's path plus any inline `mod x { … }`.
    here: Vec<String>,
    found: BTreeSet<(usize, String)>,
}

impl Refs {
    /// The top-level module a path starting with `segs` reaches, if it names one through
    /// `crate`/`$crate` or `super`; `self::` and bare names stay where they are (a bare name
    /// was brought in by a `use` that is checked itself).
    fn reach(&mut self, segs: &[String], line: usize) {
        let target = match segs.first().map(String::as_str) {
            Some("crate" | "$crate") => segs.get(1).cloned(),
            Some("super") => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let mut at = self.here.clone();
                if ups > at.len() {
                    panic!("{segs:?} climbs above the crate root from {:?}", self.here);
                }
                at.truncate(at.len() - ups);
                at.first().or(segs.get(ups)).cloned()
            }
            _ => None,
        };
        if let Some(t) = target.filter(|t| t != "self" && t != "super") {
            self.found.insert((line, t));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.use_leaf(prefix, &r.ident),
            syn::UseTree::Glob(g) => {
                let line = g.star_token.span.start().line;
                self.reach(prefix, line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &syn::Ident) {
        let mut segs = prefix.to_vec();
        segs.push(ident.to_string());
        self.reach(&segs, ident.span().start().line);
    }

    /// `crate :: a`, `$ crate :: a`, `super :: super :: a` inside a macro's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let flat = flatten(tokens);
        for (k, tok) in flat.iter().enumerate() {
            let TokenTree::Ident(id) = tok else { continue };
            let name = id.to_string();
            if name != "crate" && name != "super" {
                continue;
            }
            // A path starts here unless it continues one (the second `super` of
            // `super::super`). A `crate::{a, b}` group inside a macro counts as `a` only: rare
            // in macro arguments, and `use` items (parsed, not tokens) see every name.
            if k >= 2 && is_colons(&flat[k - 2..k]) {
                continue;
            }
            let dollar =
                k >= 1 && matches!(&flat[k - 1], TokenTree::Punct(p) if p.as_char() == '$');
            let mut segs = vec![if dollar { "$crate".to_owned() } else { name }];
            let mut j = k + 1;
            while j + 2 < flat.len() && is_colons(&flat[j..j + 2]) {
                let TokenTree::Ident(next) = &flat[j + 2] else {
                    break;
                };
                segs.push(next.to_string());
                j += 3;
            }
            self.reach(&segs, id.span().start().line);
        }
    }
}

/// A token stream with its groups opened, so `::` pairs and idents are neighbours.
fn flatten(tokens: TokenStream) -> Vec<TokenTree> {
    let mut out = vec![];
    for t in tokens {
        match t {
            TokenTree::Group(g) => out.extend(flatten(g.stream())),
            other => out.push(other),
        }
    }
    out
}

fn is_colons(toks: &[TokenTree]) -> bool {
    toks.len() == 2 && toks.iter().all(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item_use(&mut self, node: &'ast syn::ItemUse) {
        let mut prefix = vec![];
        if node.leading_colon.is_some() {
            // `use ::x` names an external crate.
            return;
        }
        self.use_tree(&mut prefix, &node.tree);
    }

    fn visit_path(&mut self, node: &'ast syn::Path) {
        if node.leading_colon.is_none() {
            let segs: Vec<String> = node.segments.iter().map(|s| s.ident.to_string()).collect();
            if let Some(first) = node.segments.first() {
                self.reach(&segs, first.ident.span().start().line);
            }
        }
        syn::visit::visit_path(self, node);
    }

    fn visit_macro(&mut self, node: &'ast syn::Macro) {
        self.tokens(node.tokens.clone());
        syn::visit::visit_macro(self, node);
    }

    fn visit_item_mod(&mut self, node: &'ast syn::ItemMod) {
        self.here.push(node.ident.to_string());
        syn::visit::visit_item_mod(self, node);
        self.here.pop();
    }
}

/// `(line, module)` for every path in `code` (a file at module path `here`) that reaches
/// another top-level module.
fn references(here: &[String], code: &str) -> Result<BTreeSet<(usize, String)>, syn::Error> {
    let file = syn::parse_file(code)?;
    let mut refs = Refs { here: here.to_vec(), found: BTreeSet::new() };
    refs.visit_file(&file);
    Ok(refs.found)
}

/// The top-level modules of `src` (a file `x.rs` or a directory `x/`).
fn top_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect()
}

/// Every import in `src` that its module's row does not allow: `file:line: a imports b`.
/// `taken` receives every cross-module edge seen, allowed or not.
fn violations_and_edges(src: &Path, taken: &mut BTreeSet<(String, String)>) -> Vec<String> {
    let modules = top_modules(src);
    let mut found = vec![];
    for file in super::common::rust_files(src) {
        let here = module_path(src, &file);
        let module = here[0].clone();
        if ["lib", "main", "commands"].contains(&module.as_str()) {
            continue;
        }
        let allowed = allowed(&module);
        let text = std::fs::read_to_string(&file).unwrap();
        let refs = references(&here, &text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        for (line, target) in refs {
            // Items of the crate root (`crate::ExitStatus`, `crate::say!`) are not modules.
            if target == module || !modules.contains(&target) {
                continue;
            }
            taken.insert((module.clone(), target.clone()));
            if !allowed.contains(&target.as_str()) {
                found.push(format!("{}:{line}: {module} imports {target}", file.display()));
            }
        }
    }
    found
}

fn violations(src: &Path) -> Vec<String> {
    violations_and_edges(src, &mut BTreeSet::new())
}

fn real_src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn imports_only_point_down_the_pipeline() {
    let found = violations(&real_src());
    assert!(
        found.is_empty(),
        "imports that break the layers (see ALLOWED in tests/it/architecture.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_layers_have_no_cycle() {
    // Depth-first search over ALLOWED alone: a module that can reach itself is a cycle.
    fn reaches(from: &str, to: &str, seen: &mut BTreeSet<String>) -> bool {
        ALLOWED
            .iter()
            .find(|(m, _)| *m == from)
            .map_or(&[][..], |(_, a)| *a)
            .iter()
            .any(|next| *next == to || (seen.insert((*next).to_owned()) && reaches(next, to, seen)))
    }
    for (module, _) in ALLOWED {
        assert!(
            !reaches(module, module, &mut BTreeSet::new()),
            "{module} can reach itself through ALLOWED: a layer cycle"
        );
    }
    // Each exception is one that closes a cycle (otherwise it belongs in ALLOWED).
    for (from, to) in CYCLE_EXCEPTIONS {
        assert!(
            reaches(to, from, &mut BTreeSet::new()),
            "{from} → {to} closes no cycle: move it into ALLOWED"
        );
    }
}

#[test]
fn every_cycle_exception_is_still_taken() {
    let mut taken = BTreeSet::new();
    violations_and_edges(&real_src(), &mut taken);
    for (from, to) in CYCLE_EXCEPTIONS {
        assert!(
            taken.contains(&((*from).to_owned(), (*to).to_owned())),
            "{from} no longer imports {to}: delete the ({from:?}, {to:?}) line of \
             CYCLE_EXCEPTIONS in tests/it/architecture.rs, so the cycle stays forbidden"
        );
    }
}

/// A `src/` in a temp dir with the given files (and empty `commands.rs`, `cli.rs`,
/// `config.rs`, `context.rs` so those names are modules).
fn fixture(files: &[(&str, &str)]) -> (tempfile::TempDir, Vec<String>) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    for m in ["commands.rs", "cli.rs", "config.rs", "context.rs"] {
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join(m), "").unwrap();
    }
    for (path, text) in files {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let found = violations(&src);
    (t, found)
}

#[test]
fn the_guard_catches_an_upward_import() {
    let (_t, found) = fixture(&[(
        "host/plan.rs",
        "use crate::commands::Ctx;\n// use crate::cli::X; (a comment)\nuse crate::{config, cli};\n\
         const S: &str = \"crate::cli::in_a_string\";\n",
    )]);
    assert_eq!(
        found.iter().map(|f| f.rsplit("plan.rs").next().unwrap()).collect::<Vec<_>>(),
        [":1: host imports commands", ":3: host imports cli"],
        "{found:#?}"
    );
}

#[test]
fn the_guard_catches_a_wrapped_import_as_rustfmt_writes_it() {
    // The shape the line scanner could not see: the module on a line of its own.
    let (_t, found) =
        fixture(&[("host/plan.rs", "use crate::{\n    config::Config,\n    commands,\n};\n")]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].ends_with(":3: host imports commands"), "{found:#?}");
}

#[test]
fn the_guard_catches_an_import_reached_through_super() {
    let (_t, found) = fixture(&[
        // From `host::plan`, `super::super` is the crate root.
        ("host/plan.rs", "use super::super::commands::Ctx;\nuse super::stack;\n"),
        // From `host` (a mod.rs), one `super` is enough; an inline `mod` adds a level.
        (
            "host/mod.rs",
            "mod plan;\nmod stack;\nuse super::cli;\nmod inner {\n    use super::super::{\n        \
             commands::Ctx,\n    };\n    use super::plan;\n}\n",
        ),
        ("host/stack.rs", ""),
    ]);
    let tails: Vec<&str> = found.iter().map(|f| f.rsplit("src/").next().unwrap()).collect();
    assert_eq!(
        tails,
        [
            "host/mod.rs:3: host imports cli",
            "host/mod.rs:6: host imports commands",
            "host/plan.rs:1: host imports commands",
        ],
        "{found:#?}"
    );
}

#[test]
fn the_guard_catches_paths_in_expressions_types_and_macros() {
    let (_t, found) = fixture(&[(
        "config.rs",
        "fn f(x: crate::cli::Args) {\n    let y = crate::commands::run(\n        x,\n    );\n    \
         say!(\"{}\", crate::context::now());\n}\nmacro_rules! m { () => { $crate::cli::X } }\n",
    )]);
    let tails: Vec<&str> = found.iter().map(|f| f.rsplit("src/").next().unwrap()).collect();
    assert_eq!(
        tails,
        [
            "config.rs:1: config imports cli",
            "config.rs:2: config imports commands",
            "config.rs:5: config imports context",
            "config.rs:7: config imports cli",
        ],
        "{found:#?}"
    );
}

#[test]
fn the_guard_lets_allowed_and_local_paths_through() {
    let (_t, found) = fixture(&[
        (
            "host/plan.rs",
            "use crate::{\n    config,\n};\nuse super::stack::Stack;\nuse self::x::Y;\n\
             pub(crate) fn f() -> crate::ExitStatus { crate::say!(\"x\"); super::stack::g() }\n\
             mod x { pub struct Y; }\n",
        ),
        ("host/stack.rs", ""),
    ]);
    assert_eq!(found, Vec::<String>::new());
}

/// Only two rooms print: `commands/` (the user interface) and `launch/` (the Host's launch
/// program, whose output is the Host log), with `output/` itself and the crate root. Every
/// other module says its progress, notes and warnings through the `Reporter` it is handed (a
/// unit test hands in a recorder), never through the printer's global or its `say!` and
/// `tell!` macros. Read as tokens: comments and strings cannot fake or hide a call.
#[test]
fn only_commands_and_launch_print() {
    /// `say!`, `tell!` and `printer(…)` in a token stream, groups included.
    fn calls(tokens: TokenStream, file: &Path, found: &mut Vec<String>) {
        let toks: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, t) in toks.iter().enumerate() {
            if let TokenTree::Group(g) = t {
                calls(g.stream(), file, found);
            }
            let (TokenTree::Ident(id), Some(next)) = (t, toks.get(i + 1)) else {
                continue;
            };
            let bang = matches!(next, TokenTree::Punct(p) if p.as_char() == '!');
            let call = matches!(next, TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
            if (bang && (id == "say" || id == "tell")) || (call && id == "printer") {
                found.push(format!("{}: {id}", file.display()));
            }
        }
    }
    const MAY_PRINT: &[&str] = &["commands", "launch", "output", "lib.rs", "main.rs"];
    let src = real_src();
    let mut found = vec![];
    let mut looked = 0;
    for file in super::common::rust_files(&src) {
        let room = file.strip_prefix(&src).unwrap().components().next().unwrap();
        if MAY_PRINT.contains(&room.as_os_str().to_str().unwrap()) {
            continue;
        }
        looked += 1;
        let text = std::fs::read_to_string(&file).unwrap();
        calls(text.parse().unwrap(), &file, &mut found);
    }
    assert!(looked > 40, "only {looked} files outside the printing rooms were read");
    assert!(found.is_empty(), "{found:#?}");
    // The check sees both forms.
    let mut seen = vec![];
    calls(
        "fn f() { crate::say!(\"x\"); let o = crate::output::printer(); }".parse().unwrap(),
        Path::new("fixture.rs"),
        &mut seen,
    );
    assert_eq!(seen, ["fixture.rs: say", "fixture.rs: printer"]);
}

/// Issue 30 item 3: every file oyster reads goes through the one reader in `src/sys/` (regular
/// files only, size-capped, non-blocking: `read_regular`, `open_regular`, `read_head`, the log
/// tail), never `fs::read`, `fs::read_to_string`, `io::read_to_string` or `File::open`, which
/// follow links, block on a FIFO and read `/dev/zero` without end. Read as tokens (comments
/// and strings cannot fake or hide a call; `use std::fs::{read, …}` is caught too); unit-test
/// modules (`#[cfg(test)] mod …`, `*tests.rs`) may read their fixtures directly.
#[test]
fn files_are_read_only_through_the_bounded_reader_in_sys() {
    fn ident(t: &TokenTree) -> Option<String> {
        match t {
            TokenTree::Ident(i) => Some(i.to_string()),
            _ => None,
        }
    }
    /// Whether `toks[i..]` starts with `#[cfg(test)]`.
    fn cfg_test(toks: &[TokenTree], i: usize) -> bool {
        matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == '#')
            && matches!(toks.get(i + 1), Some(TokenTree::Group(g))
                if g.delimiter() == proc_macro2::Delimiter::Bracket
                    && g.stream().to_string().replace(' ', "") == "cfg(test)")
    }
    fn raw_reads(tokens: TokenStream, file: &Path, found: &mut Vec<String>) {
        let toks: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            // `#[cfg(test)] mod name { … }` or `#[cfg(test)] mod name;`: skipped whole.
            if cfg_test(&toks, i) && toks.get(i + 2).and_then(ident).as_deref() == Some("mod") {
                i += 5;
                continue;
            }
            let t = &toks[i];
            i += 1;
            if let TokenTree::Group(g) = t {
                raw_reads(g.stream(), file, found);
                continue;
            }
            let TokenTree::Ident(id) = t else { continue };
            let forbidden: &[&str] = match id.to_string().as_str() {
                "fs" => &["read", "read_to_string"],
                "io" => &["read_to_string"],
                "File" => &["open"],
                _ => continue,
            };
            if !toks.get(i..i + 2).is_some_and(is_colons) {
                continue;
            }
            let names: Vec<String> = match toks.get(i + 2) {
                Some(TokenTree::Ident(n)) => vec![n.to_string()],
                Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Brace => {
                    flatten(g.stream()).iter().filter_map(ident).collect()
                }
                _ => continue,
            };
            for n in names.iter().filter(|n| forbidden.contains(&n.as_str())) {
                found.push(format!("{}:{}: {id}::{n}", file.display(), id.span().start().line));
            }
        }
    }
    let src = real_src();
    let mut found = vec![];
    for file in super::common::rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("sys") || rel.to_string_lossy().ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        raw_reads(text.parse().unwrap(), rel, &mut found);
    }
    assert!(
        found.is_empty(),
        "read these through crate::sys::fs (read_regular, open_regular, read_head): {found:#?}"
    );
    // The check sees every form, and lets the reader's own names and test modules through.
    let mut seen = vec![];
    raw_reads(
        "use std::fs::{self, write, read};\n\
         fn f() { let a = std::fs::read_to_string(p); let b = File::open(p);\n\
         let c = std::io::read_to_string(r); let d = fs::read(p);\n\
         let ok = crate::sys::fs::read_regular(p, 9); let s = f.read_to_string(&mut s); }\n\
         #[cfg(test)]\nmod tests { fn g() { std::fs::read(p); } }"
            .parse()
            .unwrap(),
        Path::new("x.rs"),
        &mut seen,
    );
    assert_eq!(
        seen,
        [
            "x.rs:1: fs::read",
            "x.rs:2: fs::read_to_string",
            "x.rs:2: File::open",
            "x.rs:3: io::read_to_string",
            "x.rs:3: fs::read"
        ]
    );
}

/// Issue 28 item 8: at most [`MAX_LONG_FNS`] functions in `src/` over [`LONG_FN`] lines,
/// counted from the `fn` line to the closing brace inclusive (as `wc -l` of the item would):
/// free fns, methods, trait default bodies, fns nested in fns, test fns and tables alike.
const LONG_FN: usize = 80;
const MAX_LONG_FNS: usize = 3;

/// `file:line: name (N lines)` for every function of `code` longer than [`LONG_FN`] lines.
fn long_fns(file: &Path, code: &str) -> Vec<String> {
    struct Long<'f> {
        file: &'f Path,
        found: Vec<String>,
    }
    impl Long<'_> {
        fn measure(&mut self, sig: &syn::Signature, body: &syn::Block) {
            let first = sig.fn_token.span.start().line;
            let lines = body.brace_token.span.close().start().line + 1 - first;
            if lines > LONG_FN {
                let (file, name) = (self.file.display(), &sig.ident);
                self.found.push(format!("{file}:{first}: {name} ({lines} lines)"));
            }
        }
    }
    impl<'ast> Visit<'ast> for Long<'_> {
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            self.measure(&f.sig, &f.block);
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            self.measure(&f.sig, &f.block);
            syn::visit::visit_impl_item_fn(self, f);
        }
        fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
            if let Some(body) = &f.default {
                self.measure(&f.sig, body);
            }
            syn::visit::visit_trait_item_fn(self, f);
        }
    }
    let parsed =
        syn::parse_file(code).unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
    let mut long = Long { file, found: vec![] };
    long.visit_file(&parsed);
    long.found
}

#[test]
fn long_functions_in_src_are_at_most_three() {
    let src = real_src();
    let mut found = vec![];
    for file in super::common::rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        found.extend(long_fns(file.strip_prefix(&src).unwrap(), &text));
    }
    assert!(
        found.len() <= MAX_LONG_FNS,
        "{} functions in src/ are over {LONG_FN} lines (at most {MAX_LONG_FNS}): split them \
         into named steps:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_long_function_guard_counts_from_fn_to_the_closing_brace() {
    // `n` statement lines between the `fn` line and the `}` line: an item of `n + 2` lines.
    let body = |n: usize| "    let _ = 0;\n".repeat(n);
    let code = format!(
        "/// Doc lines and attributes are not counted.\n#[cfg(test)]\n\
         fn eighty() {{\n{}}}\n\
         fn eighty_one(\n    x: u8,\n) {{\n{}}}\n\
         struct S;\nimpl S {{\n    fn method() {{\n{}    }}\n}}\n\
         trait T {{\n    fn required();\n    fn provided() {{\n{}    }}\n}}\n\
         mod tests {{\n    fn outer() {{\n        fn nested() {{\n{}        }}\n    }}\n}}\n",
        body(78),
        body(77),
        body(79),
        body(80),
        body(79),
    );
    assert_eq!(
        long_fns(Path::new("x.rs"), &code),
        [
            "x.rs:83: eighty_one (81 lines)",
            "x.rs:166: method (81 lines)",
            "x.rs:250: provided (82 lines)",
            "x.rs:334: outer (83 lines)",
            "x.rs:335: nested (81 lines)",
        ]
    );
}
