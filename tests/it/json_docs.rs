//! docs/json.md is checked against the binary: each example's keys and types must be what the
//! real command prints (against a real Host under the launchd simulator), and every `--json`
//! document of every command, in several states, keeps the conventions (docs/behaviour.md §10): no
//! `~`, enum fields hold only their documented values, number fields hold numbers or `null`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::common::TestContext;

/// One `### \`oyster …\`` heading and the JSON block under it.
pub(crate) struct Example {
    pub(crate) command: String,
    pub(crate) value: Value,
}

fn docs() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md")).unwrap()
}

pub(crate) fn examples() -> Vec<Example> {
    let text = docs();
    let mut out = vec![];
    let mut command = None;
    let mut block: Option<String> = None;
    for line in text.lines() {
        if let Some(b) = block.as_mut() {
            if line.trim() == "```" {
                let value = serde_json::from_str(b)
                    .unwrap_or_else(|e| panic!("docs/json.md: {command:?} example: {e}"));
                out.push(Example {
                    command: command.take().expect("a heading before each example"),
                    value,
                });
                block = None;
            } else {
                b.push_str(line);
                b.push('\n');
            }
        } else if let Some(rest) = line.strip_prefix("### `") {
            command = Some(rest.trim_end_matches('`').to_owned());
        } else if line.trim() == "```json" {
            block = Some(String::new());
        }
    }
    out
}

/// `key -> values` from the Enums table, and the keys of the Numbers paragraph.
pub(crate) fn conventions() -> (BTreeMap<String, BTreeSet<String>>, BTreeSet<String>) {
    let text = docs();
    let ticked =
        |s: &str| -> Vec<String> { s.split('`').skip(1).step_by(2).map(str::to_owned).collect() };
    let enums = text
        .split("## Enums")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            (ticked(cells[1])[0].clone(), ticked(cells[2]).into_iter().collect())
        })
        .collect();
    let numbers = text.split("## Numbers").nth(1).unwrap();
    let numbers = ticked(numbers.split("whole number:").nth(1).unwrap()).into_iter().collect();
    (enums, numbers)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The example's keys and types against the real document. `null` on either side matches
/// anything (unknown, or "may be null"); `loose` objects are maps whose keys vary (a config
/// file, an environment), where only the example's keys are required.
pub(crate) fn compare(doc: &Value, real: &Value, at: &str, loose: bool, errors: &mut Vec<String>) {
    if doc.is_null() || real.is_null() {
        return;
    }
    if kind(doc) != kind(real) {
        errors.push(format!("{at}: documented {}, printed {}", kind(doc), kind(real)));
        return;
    }
    match (doc, real) {
        (Value::Object(d), Value::Object(r)) => {
            for k in d.keys().filter(|k| !r.contains_key(*k)) {
                errors.push(format!("{at}.{k}: documented, not printed"));
            }
            if !loose {
                for k in r.keys().filter(|k| !d.contains_key(*k)) {
                    errors.push(format!("{at}.{k}: printed, not documented"));
                }
            }
            for (k, dv) in d {
                if let Some(rv) = r.get(k) {
                    let loose = matches!(k.as_str(), "environment" | "provider_command_intent");
                    compare(dv, rv, &format!("{at}.{k}"), loose, errors);
                }
            }
        }
        (Value::Array(d), Value::Array(r)) => {
            if let Some(first) = d.first() {
                for (i, rv) in r.iter().enumerate() {
                    compare(first, rv, &format!("{at}[{i}]"), loose, errors);
                }
            }
        }
        _ => {}
    }
}

fn run_json(t: &TestContext, args: &[&str]) -> (String, Value) {
    let r = t.run(args);
    assert!(r.code() <= 1, "{args:?}: {}", r.stderr());
    let text = r.stdout();
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}):\n{text}\n{}", r.stderr()));
    (text, value)
}

#[test]
fn every_example_in_docs_json_matches_the_real_output() {
    let examples = examples();
    let documented: BTreeSet<&str> = examples.iter().map(|e| e.command.as_str()).collect();
    for must in [
        "oyster providers resolve --json",
        "oyster providers status --json",
        "oyster config show --json",
        "oyster agent status --json",
        "oyster agent list --json",
        "oyster host status --json",
        "oyster doctor --json",
    ] {
        assert!(documented.contains(must), "docs/json.md lacks {must}");
    }
    let t = TestContext::with_three_stacks("three");
    let mut errors = vec![];
    for ex in &examples {
        let args: Vec<&str> = ex.command.split_whitespace().skip(1).collect();
        let (_, real) = run_json(&t, &args);
        let loose = ex.command.contains("config show");
        compare(&ex.value, &real, &ex.command, loose, &mut errors);
    }
    assert!(errors.is_empty(), "docs/json.md is out of date:\n{}", errors.join("\n"));
}

/// Walks a document: `~` nowhere, enums in their sets, numbers numbers.
pub(crate) fn check_conventions(
    doc: &Value,
    at: &str,
    enums: &BTreeMap<String, BTreeSet<String>>,
    numbers: &BTreeSet<String>,
    errors: &mut Vec<String>,
) {
    match doc {
        Value::Object(map) => {
            for (k, v) in map {
                let here = format!("{at}.{k}");
                if let Some(allowed) = enums.get(k) {
                    if !(v.is_null() || v.as_str().is_some_and(|s| allowed.contains(s))) {
                        errors.push(format!("{here} = {v} is not one of {allowed:?}"));
                    }
                }
                // The two enums whose key is shared with other meanings, by where they sit.
                if k == "state" && map.contains_key("provider") {
                    let ok = ["available", "unavailable", "disabled"];
                    if !v.as_str().is_some_and(|s| ok.contains(&s)) {
                        errors.push(format!("{here} = {v}"));
                    }
                }
                let levels = ["ok", "warn", "fail"];
                if k == "status"
                    && map.contains_key("check")
                    && !v.as_str().is_some_and(|s| levels.contains(&s))
                {
                    errors.push(format!("{here} = {v}"));
                }
                if numbers.contains(k) && !(v.is_null() || v.is_u64() || v.is_i64()) {
                    errors.push(format!("{here} = {v} is not a number or null"));
                }
                check_conventions(v, &here, enums, numbers, errors);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_conventions(v, &format!("{at}[{i}]"), enums, numbers, errors);
            }
        }
        Value::String(s) if s.contains('~') => {
            errors.push(format!("{at} = {s:?} holds ~ (documents carry absolute paths)"));
        }
        _ => {}
    }
}

#[test]
fn no_json_document_holds_tilde_or_prose_where_an_enum_or_number_belongs() {
    let (enums, numbers) = conventions();
    assert!(enums.contains_key("summary") && numbers.contains("last_exit_code"));
    let mut t = TestContext::with_three_stacks("three");
    // A secret, a manual command that is broken and a disabled provider widen the shapes.
    t.run(["providers", "set", "codex", ""]).ok();
    let mut runs: Vec<Vec<String>> = vec![];
    for stack in ["production", "two", "three", "staging"] {
        for args in [
            &["agent", "status", "--json"][..],
            &["status", "--json"],
            &["host", "status", "--json"],
            &["doctor", "--json"],
            &["providers", "status", "--json"],
            &["providers", "resolve", "--json"],
            &["config", "show", "--json"],
        ] {
            let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            a.extend(["--stack".into(), stack.into()]);
            runs.push(a);
        }
    }
    runs.push(vec!["list".into(), "--json".into()]);
    runs.push(vec!["agent".into(), "list".into(), "--json".into()]);
    let mut errors = vec![];
    let check = |t: &TestContext, runs: &[Vec<String>], errors: &mut Vec<String>| {
        for args in runs {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (text, value) = run_json(t, &args);
            assert!(!text.contains('~'), "{args:?} printed ~:\n{text}");
            check_conventions(&value, &args.join(" "), &enums, &numbers, errors);
        }
    };
    check(&t, &runs, &mut errors);
    // Without launchd nothing about it is known: null, never a word.
    t.extra_env.retain(|(k, _)| k != "OYSTER_LAUNCHCTL");
    check(&t, &runs, &mut errors);
    let v = run_json(&t, &["agent", "status", "--json"]).1;
    // Unknown, unless a Host started directly runs: that much oyster knows without launchd.
    let direct = v["managed_by"] == "direct";
    assert_eq!(
        (&v["summary"], &v["disabled"]),
        (&(if direct { "direct" } else { "unknown" }).into(), &Value::Null),
        "{v}"
    );
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
