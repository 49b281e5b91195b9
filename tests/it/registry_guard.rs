//! The no-id-branching guard: `src/provider/registry.rs` is the only file that may name a
//! provider fact or pick a provider by position.
//!
//! Every string value of the registry's `Provider { … }` entries (ids, binaries, display names,
//! command keys, npm packages, version patterns, native dirs), read from the file itself, is
//! forbidden inside any string literal of another file under `src/` or `launchd/src/`. A
//! literal is what every comparison shape is made of (`==`, `!=`, `match` arms,
//! `.contains(..)`, `matches!`), and it also catches facts copied into tables or messages
//! elsewhere; a value built at compile time (`concat!("cla", "ude")`, `stringify!(claude)`)
//! counts as the literal it makes. Indexing `PROVIDERS` (or a `use … PROVIDERS as X` alias) and
//! `ptr::eq`/`ptr::addr_eq` (however imported) are forbidden too: both single out a provider
//! by position or identity instead of by a registry field. Unit tests inside `src/` are held
//! to the same rule (a test that hard-codes a fact goes stale with the registry just as product
//! code does); the failure lists their hits apart, so it is clear which is which.
//!
//! The sources are parsed with `syn`: comments (doc comments included) may explain, and the
//! shape of an expression is read from the syntax tree rather than from the text around it.
//! Macro arguments are parsed as expressions where they are ones (`assert!`, `format!`), and
//! otherwise read token by token.

use std::collections::BTreeSet;
use std::path::Path;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::Visit;

const REGISTRY: &str = "src/provider/registry.rs";

/// A registry fact: one string value of one `Provider { … }` entry.
#[derive(Debug, Clone)]
struct Fact {
    /// `claude.display_name`, for messages.
    name: String,
    value: String,
}

/// The string values of every literal under one syntax node.
#[derive(Default)]
struct Strings(Vec<String>);

impl<'ast> Visit<'ast> for Strings {
    fn visit_lit_str(&mut self, node: &'ast syn::LitStr) {
        self.0.push(node.value());
    }
}

/// Every string value of every `Provider { … }` entry in the registry source, with the
/// field it belongs to (the struct definition has no literals, so it adds nothing).
fn registry_facts(registry_src: &str) -> Vec<Fact> {
    #[derive(Default)]
    struct Entries(Vec<Fact>);
    impl<'ast> Visit<'ast> for Entries {
        fn visit_expr_struct(&mut self, node: &'ast syn::ExprStruct) {
            if node.path.segments.last().is_some_and(|s| s.ident == "Provider") {
                let fields: Vec<(String, Vec<String>)> = node
                    .fields
                    .iter()
                    .map(|f| {
                        let syn::Member::Named(name) = &f.member else {
                            panic!("a Provider entry with an unnamed field");
                        };
                        let mut lits = Strings::default();
                        lits.visit_expr(&f.expr);
                        (name.to_string(), lits.0)
                    })
                    .collect();
                let id = fields
                    .iter()
                    .find(|(n, _)| n == "id")
                    .and_then(|(_, v)| v.first().cloned())
                    .unwrap_or_else(|| format!("entry {}", self.0.len()));
                for (field, values) in fields {
                    for value in values {
                        self.0.push(Fact { name: format!("{id}.{field}"), value });
                    }
                }
            }
            syn::visit::visit_expr_struct(self, node);
        }
    }
    let file = syn::parse_file(registry_src).expect("the registry parses");
    let mut entries = Entries::default();
    entries.visit_file(&file);
    entries.0
}

/// Whether `hay` holds `needle` with no letter or digit glued to either side (`claude` is in
/// `claude_command` and `~/.claude/x`, not in `claudette`).
fn contains_fact(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(k, _)| {
        !hay[..k].chars().next_back().is_some_and(char::is_alphanumeric)
            && !hay[k + needle.len()..].chars().next().is_some_and(char::is_alphanumeric)
    })
}

/// The names a file gives to `PROVIDERS` and to `ptr::eq`/`ptr::addr_eq` through `use`.
#[derive(Default)]
struct Aliases {
    providers: BTreeSet<String>,
    ptr_eq: BTreeSet<String>,
}

impl Aliases {
    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        let mut leaf = |prefix: &[String], name: &syn::Ident, as_name: &syn::Ident| {
            let name = name.to_string();
            if name == "PROVIDERS" {
                self.providers.insert(as_name.to_string());
            }
            if (name == "eq" || name == "addr_eq") && prefix.last().is_some_and(|p| p == "ptr") {
                self.ptr_eq.insert(as_name.to_string());
            }
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => leaf(prefix, &n.ident, &n.ident),
            syn::UseTree::Rename(r) => leaf(prefix, &r.ident, &r.rename),
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Aliases {
    fn visit_item_use(&mut self, node: &'ast syn::ItemUse) {
        self.tree(&mut vec![], &node.tree);
    }
}

/// Walks one file and records every breach: `(line, what, in test code)`.
struct Scan<'f> {
    facts: &'f [Fact],
    aliases: Aliases,
    /// Depth of `#[cfg(test)] mod` blocks around the visitor.
    in_test: usize,
    out: Vec<(usize, String, bool)>,
}

impl Scan<'_> {
    fn literal(&mut self, value: &str, line: usize) {
        let named: BTreeSet<String> = self
            .facts
            .iter()
            .filter(|f| contains_fact(value, &f.value))
            .map(|f| format!("{} {:?}", f.name, f.value))
            .collect();
        if !named.is_empty() {
            let names = named.into_iter().collect::<Vec<_>>().join(", ");
            self.hit(line, format!("literal {value:?} holds {names}"));
        }
    }

    fn hit(&mut self, line: usize, what: String) {
        self.out.push((line, what, self.in_test > 0));
    }

    fn lit(&mut self, lit: &syn::Lit) {
        let line = lit.span().start().line;
        match lit {
            syn::Lit::Str(s) => self.literal(&s.value(), line),
            syn::Lit::ByteStr(b) => self.literal(&String::from_utf8_lossy(&b.value()), line),
            syn::Lit::CStr(c) => self.literal(&c.value().to_string_lossy(), line),
            _ => {}
        }
    }

    fn is_providers(&self, expr: &syn::Expr) -> bool {
        let syn::Expr::Path(p) = expr else {
            return false;
        };
        p.path.segments.last().is_some_and(|s| {
            s.ident == "PROVIDERS"
                || (p.path.segments.len() == 1
                    && self.aliases.providers.contains(&s.ident.to_string()))
        })
    }

    fn is_ptr_eq(&self, path: &syn::Path) -> bool {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        match segs.as_slice() {
            [one] => self.aliases.ptr_eq.contains(one),
            [.., ptr, eq] => ptr == "ptr" && (eq == "eq" || eq == "addr_eq"),
            [] => false,
        }
    }

    /// A macro's tokens when they are not a list of expressions: literals, `PROVIDERS[…]` and
    /// `ptr::eq` read token by token.
    fn tokens(&mut self, tokens: TokenStream) {
        let toks: Vec<TokenTree> = tokens.into_iter().collect();
        for (k, tok) in toks.iter().enumerate() {
            match tok {
                TokenTree::Literal(l) => self.lit(&syn::Lit::new(l.clone())),
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id)
                    if id == "PROVIDERS" || self.aliases.providers.contains(&id.to_string()) =>
                {
                    if matches!(toks.get(k + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket)
                    {
                        self.hit(
                            id.span().start().line,
                            "`PROVIDERS[…]` picks a provider by position".into(),
                        );
                    }
                }
                TokenTree::Ident(id) if id == "ptr" => {
                    let colons = toks[k + 1..]
                        .iter()
                        .take(2)
                        .filter(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))
                        .count();
                    if colons == 2
                        && matches!(toks.get(k + 3), Some(TokenTree::Ident(e)) if e == "eq" || e == "addr_eq")
                    {
                        self.hit(
                            id.span().start().line,
                            "`ptr::eq` tells providers apart by address".into(),
                        );
                    }
                }
                _ => {}
            }
        }
    }
}

/// Whether an item's attributes hold `#[cfg(test)]`.
fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "test")
    })
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_lit(&mut self, node: &'ast syn::Lit) {
        self.lit(node);
    }

    fn visit_attribute(&mut self, node: &'ast syn::Attribute) {
        // Doc comments (`///`, `#[doc = …]`) may explain; other attributes' literals count.
        if node.path().is_ident("doc") {
            return;
        }
        if let syn::Meta::List(l) = &node.meta {
            self.tokens(l.tokens.clone());
        }
        syn::visit::visit_attribute(self, node);
    }

    fn visit_item_mod(&mut self, node: &'ast syn::ItemMod) {
        let test = cfg_test(&node.attrs);
        self.in_test += usize::from(test);
        syn::visit::visit_item_mod(self, node);
        self.in_test -= usize::from(test);
    }

    fn visit_expr_index(&mut self, node: &'ast syn::ExprIndex) {
        if self.is_providers(&node.expr) {
            let line = node.bracket_token.span.open().start().line;
            self.hit(line, "`PROVIDERS[…]` picks a provider by position".into());
        }
        syn::visit::visit_expr_index(self, node);
    }

    fn visit_expr_path(&mut self, node: &'ast syn::ExprPath) {
        if self.is_ptr_eq(&node.path) {
            let line = node.path.segments[0].ident.span().start().line;
            self.hit(line, "`ptr::eq` tells providers apart by address".into());
        }
        syn::visit::visit_expr_path(self, node);
    }

    fn visit_macro(&mut self, node: &'ast syn::Macro) {
        let name = node.path.segments.last().map(|s| s.ident.to_string());
        let line = node.path.segments[0].ident.span().start().line;
        match name.as_deref() {
            // The string the macro makes at compile time is a literal like any other.
            Some("stringify") => self.literal(&node.tokens.to_string(), line),
            Some("concat") => {
                let mut made = String::new();
                for t in node.tokens.clone() {
                    if let TokenTree::Literal(l) = t {
                        match syn::Lit::new(l) {
                            syn::Lit::Str(s) => made += &s.value(),
                            syn::Lit::Char(c) => made.push(c.value()),
                            syn::Lit::Int(i) => made += i.base10_digits(),
                            _ => {}
                        }
                    }
                }
                self.literal(&made, line);
                self.tokens(node.tokens.clone());
            }
            _ => {
                let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
                match syn::parse::Parser::parse2(parser, node.tokens.clone()) {
                    Ok(args) => args.iter().for_each(|e| self.visit_expr(e)),
                    Err(_) => self.tokens(node.tokens.clone()),
                }
            }
        }
        syn::visit::visit_macro(self, node);
    }
}

/// Every breach of the guard in one file's source: `(line, what, in test code)`.
fn violations(src: &str, facts: &[Fact]) -> Vec<(usize, String, bool)> {
    let file = syn::parse_file(src)
        .unwrap_or_else(|e| panic!("line {}: does not parse: {e}", e.span().start().line));
    let mut aliases = Aliases::default();
    aliases.visit_file(&file);
    let mut scan = Scan { facts, aliases, in_test: 0, out: vec![] };
    scan.visit_file(&file);
    let mut out = scan.out;
    out.sort();
    out.dedup();
    out
}

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn real_registry_facts() -> Vec<Fact> {
    registry_facts(&std::fs::read_to_string(repo_root().join(REGISTRY)).unwrap())
}

#[test]
fn registry_facts_appear_only_in_the_registry() {
    let facts = real_registry_facts();
    let root = repo_root();
    let mut files = super::common::rust_files(&root.join("src"));
    files.extend(super::common::rust_files(&root.join("launchd/src")));
    assert!(files.len() > 10, "the sources were found: {files:?}");
    let (mut product, mut test_code) = (vec![], vec![]);
    for f in &files {
        if f.ends_with(REGISTRY) {
            continue;
        }
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        for (line, what, in_test) in violations(&std::fs::read_to_string(f).unwrap(), &facts) {
            let hit = format!("  {rel}:{line}: {what}");
            if in_test {
                test_code.push(hit);
            } else {
                product.push(hit);
            }
        }
    }
    let mut msg = String::new();
    if !product.is_empty() {
        msg += &format!(
            "registry facts in product code outside {REGISTRY} (read a registry field, \
             `lookup(id)` or iterate PROVIDERS instead):\n{}\n",
            product.join("\n")
        );
    }
    if !test_code.is_empty() {
        msg += &format!(
            "registry facts in #[cfg(test)] modules of src/ (tests too take their values from \
             the registry: `p.id` in a loop over PROVIDERS, not `PROVIDERS[0]` or a literal):\n{}\n",
            test_code.join("\n")
        );
    }
    assert!(msg.is_empty(), "{msg}");
}

#[test]
fn every_field_of_every_registry_entry_is_read() {
    let facts = real_registry_facts();
    // The ids parsed from the file are exactly the ones the binary reports: the parser reads
    // the real table, not an empty or stale one.
    let ids: Vec<String> =
        facts.iter().filter(|f| f.name.ends_with(".id")).map(|f| f.value.clone()).collect();
    assert_eq!(ids, super::common::provider_ids());
    let fields: BTreeSet<&str> = facts.iter().map(|f| f.name.split_once('.').unwrap().1).collect();
    for field in [
        "id",
        "binary",
        "display_name",
        "command_key",
        "npm_package",
        "version_pattern",
        "native_dirs",
    ] {
        assert!(fields.contains(field), "no {field} in {facts:?}");
    }
    assert!(facts.iter().all(|f| !f.value.is_empty()), "{facts:?}");
}

#[test]
fn the_guard_sees_every_shape() {
    let facts = real_registry_facts();
    let id = &facts.iter().find(|f| f.name.ends_with(".id")).unwrap().value;
    // Statements, put in a function on the same line so line numbers stay those of `body`.
    let hits = |body: &str| violations(&format!("fn f() {{ {body}\n}}"), &facts);
    // Each registry value, in each literal shape: the real guard must flag them all.
    for f in &facts {
        let v = &f.value;
        let escaped = v.replace('\\', "\\\\");
        for src in [
            format!(r#"if x == "{escaped}" {{}}"#),
            format!(r#"if "{escaped}" != x {{}}"#),
            format!("match x {{\n    \"{escaped}\" => 1,\n    _ => 0,\n}};"),
            format!(r#"["{escaped}", "x"].contains(&x);"#),
            format!(r#"matches!(x, "{escaped}");"#),
            format!(r##"let s = r#"{v}"#;"##),
            format!(r#"let s = br"{v}";"#),
            format!(r#"say!("install {escaped} now");"#),
            format!("let s = \"\n  {escaped}\";"),
            format!(r#"let v = vec!["{escaped}"; 2];"#),
            format!(r#"let j = json!({{"k": "{escaped}"}});"#),
        ] {
            assert_eq!(hits(&src).len(), 1, "{} missed in {src}", f.name);
        }
    }
    let (head, tail) = id.split_at(id.len() / 2);
    for src in [
        format!(r#"map.get("{id}_command");"#),
        format!(r#"home.join("~/.{id}/x");"#),
        format!(r#"let s = "\x{:02x}{}";"#, id.as_bytes()[0], &id[1..]),
        format!(r#"let s = "\u{{{:x}}}{}";"#, id.as_bytes()[0], &id[1..]),
        format!("let a = '\"'; let s = \"{id}\";"),
        format!(r#"let s = r"C:\"; let t = "{id}";"#),
        format!(r##"let s = r#"say "{id}" now"#;"##),
        format!("fn g<'a>(x: &'a str) -> bool {{ x == \"{id}\" }}"),
        format!("let s = c\"{id}\";"),
        // Values made at compile time, compared in an expression: the line scanner saw two
        // harmless fragments or an identifier here.
        format!(r#"if name == concat!("{head}", "{tail}") {{}}"#),
        format!("if name == stringify!({id}) {{}}"),
        format!("assert_eq!(p.id.as_str(), concat!(\n    \"{head}\",\n    \"{tail}\"\n));"),
        "let p = &PROVIDERS[0];".into(),
        "let p = &registry::PROVIDERS [i];".into(),
        "let p = &PROVIDERS\n    [0];".into(),
        "assert!(PROVIDERS[1].id == x);".into(),
        "let v = vec![PROVIDERS[0]; 2];".into(),
        "if std::ptr::eq(a, b) {}".into(),
        "core::ptr :: eq(a, b);".into(),
        "std::ptr::addr_eq(a, b);".into(),
        "let same = xs.iter().any(|x| std::ptr::eq(*x, p));".into(),
    ] {
        assert_eq!(hits(&src).len(), 1, "missed: {src}");
    }
    // Through an alias the text never spells: `ALL[0]`, a bare `eq(a, b)`.
    let aliased = "use crate::provider::registry::{Provider, PROVIDERS as ALL};\n\
                   use std::ptr::{self, eq};\n\
                   fn f(x: &Provider) -> bool {\n    eq(x, &ALL[0]) || ptr::eq(x, x)\n}\n";
    let found = violations(aliased, &facts);
    let lines: Vec<(usize, &str)> =
        found.iter().map(|h| (h.0, h.1.split(' ').next().unwrap())).collect();
    assert_eq!(lines, [(4, "`PROVIDERS[…]`"), (4, "`ptr::eq`")], "{found:#?}");
    assert_eq!(found.len(), 2, "{found:#?}");
    // Line numbers count lines inside comments and multi-line literals.
    let src = format!("/* a\nb */ let s = \"x\ny\";\n// \"{id}\"\nx == \"{id}\";");
    assert_eq!(hits(&src)[0].0, 5);
    // Prose and near misses are fine.
    for src in [
        format!(r#"x; // "{id}" in a comment"#),
        format!("/* \"{id}\" /* nested */ \"{id}\" */ x;"),
        format!(r#"let s = "a//b"; // "{id}""#),
        format!(r#"let s = "{id}ette";"#),
        format!("let a = '\"'; // \"{id}\""),
        format!("let a = '\\''; // \"{id}\""),
        format!("let {id} = 1; {id}_command(x);"),
        format!("let r#type = 1; // \"{id}\""),
        format!(r#"let s = concat!("{head}", "{tail}ette");"#),
        r#"let s = "PROVIDERS[0] and ptr::eq";"#.into(),
        "for p in PROVIDERS { if p.id == name {} }".into(),
        "let p = PROVIDERS.iter().find(|p| p.id == name);".into(),
        "// PROVIDERS[0], std::ptr::eq".into(),
        "std::ptr::eq_ignore(a);".into(),
        "let eq = a == b; other[0];".into(),
    ] {
        assert_eq!(hits(&src), vec![], "{src}");
    }
    let doc = format!("/// `{id}` in a doc comment\n#[doc = \"{id}\"]\nfn g() {{}}\n");
    assert_eq!(violations(&doc, &facts), vec![], "{doc}");
    // A literal in an attribute is code, not prose.
    let attr = format!("#[arg(help = \"use {id}\")]\nstruct A;\n");
    assert_eq!(violations(&attr, &facts).len(), 1, "{attr}");
    // Hits inside a `#[cfg(test)] mod` are labelled as test code.
    let src =
        format!("fn a() {{ \"{id}\"; }}\n#[cfg(test)]\nmod tests {{\n fn b() {{ \"{id}\"; }}\n}}");
    let labels: Vec<bool> = violations(&src, &facts).into_iter().map(|h| h.2).collect();
    assert_eq!(labels, [false, true]);
}
