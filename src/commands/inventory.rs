//! `oyster inventory [--json] [--result KEY]`: one document about oyster on this Mac, for MDM
//! inventory (docs/fleet.md; its keys in docs/json.md). Read-only, bounded, and exit 0 however
//! broken what it describes is: inventory tools read stdout. Only a usage error (an unknown
//! `--result` key) exits 2.

use serde_json::Value;

use crate::context::Context;
use crate::error::Invalid;
use crate::fleet::inventory::{self as inv, Inventory};
use crate::invocation::Inventory as Asked;
use crate::ExitStatus;

/// The keys `--result` prints (docs/fleet.md): the document's scalars and a few summaries.
pub const RESULT_KEYS: &[&str] = &[
    "problems",
    "summary",
    "stacks",
    "verified",
    "oyster_version",
    "oyster_path",
    "team_id",
    "login_items_profile",
    "schema_version",
    "generated_at",
];

pub fn run(ctx: &Context, args: &Asked) -> anyhow::Result<ExitStatus> {
    if args.user_part {
        // (The managed directory of root's run is passed on: see fleet::inventory::run_as.)
        // root's inventory runs oyster as each user: this is that user's part, as JSON.
        ctx.out.set_mode(crate::output::Mode::Json);
        ctx.out.json(&inv::user_part(ctx));
        return Ok(ExitStatus::Success);
    }
    if let Some(key) = &args.result {
        if !RESULT_KEYS.contains(&key.as_str()) {
            return Err(
                Invalid::new(format!("--result {key} is not a key oyster knows"))
                    .hint(format!("use one of: {}", RESULT_KEYS.join(", ")))
                    .into(),
            );
        }
    }
    let doc = build(ctx);
    if let Some(key) = &args.result {
        let value = ctx.out.document(&serde_json::to_value(&doc)?);
        ctx.out
            .raw(format!("<result>{}</result>\n", xml_text(&result(&value, key))).as_bytes());
        return Ok(ExitStatus::Success);
    }
    if args.json {
        ctx.out.set_mode(crate::output::Mode::Json);
        ctx.out.json(&doc);
    } else {
        human(ctx, &serde_json::to_value(&doc)?);
    }
    Ok(ExitStatus::Success)
}

fn build(ctx: &Context) -> Inventory {
    let exe = std::env::current_exe().unwrap_or_default();
    let sig = crate::fleet::signature::of(&exe);
    let as_root = crate::sys::user::euid() == 0;
    let mut users: Vec<Value> = vec![];
    let mut problems = vec![];
    // This user's own stacks (root's too, when its HOME is its own and holds any).
    let own_home = ctx.stack.home.clone();
    let own = !as_root
        || (crate::sys::user::owner_of(&own_home) == Some(0)
            && !crate::host::stack::discover(&ctx.env.stack_env()).is_empty());
    if own {
        users.push(serde_json::to_value(inv::user_part(ctx)).unwrap_or(Value::Null));
    }
    if as_root {
        let (accounts, p) = inv::accounts_with_stacks();
        problems.extend(p);
        // Root's own part was collected above (only when HOME is root's: under `sudo` that
        // keeps the caller's HOME, the caller is one of the accounts, collected as itself).
        for a in accounts
            .iter()
            .filter(|a| a.uid != 0 && !(own && a.home == own_home))
        {
            users.push(inv::part_as(&exe, a));
        }
    }
    Inventory {
        schema_version: inv::SCHEMA_VERSION,
        generated_at: inv::now_rfc3339(),
        oyster: inv::Oyster {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            path: exe.display().to_string(),
            team_id: sig.team_id,
            signature: sig.about,
        },
        login_items_profile: inv::profile_state(),
        managed_preferences: inv::managed_for_everyone(ctx.env.managed_dir.as_deref()),
        as_root,
        users,
        problems,
    }
}

/// Every stack of the document with the user it belongs to (`name/stack`).
fn stacks(doc: &Value) -> Vec<(String, &Value)> {
    let mut out = vec![];
    for u in doc["users"].as_array().into_iter().flatten() {
        let who = u["name"]
            .as_str()
            .map_or_else(|| u["uid"].to_string(), str::to_owned);
        for s in u["stacks"].as_array().into_iter().flatten() {
            out.push((format!("{who}/{}", s["stack"].as_str().unwrap_or("?")), s));
        }
    }
    out
}

/// Every problem code in the document, where it is (`name/stack:code`, `name:code`, `:code`).
fn problem_codes(doc: &Value) -> Vec<String> {
    let codes = |v: &Value, at: &str| -> Vec<String> {
        v["problems"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let code = p["code"].as_str().unwrap_or("?");
                // A stack has two providers: which one is the problem's subject.
                match p["detail"].as_str() {
                    Some(id) if code.starts_with("provider_") => format!("{at}:{code}({id})"),
                    _ => format!("{at}:{code}"),
                }
            })
            .collect()
    };
    let mut out = codes(doc, "");
    for u in doc["users"].as_array().into_iter().flatten() {
        let who = u["name"]
            .as_str()
            .map_or_else(|| u["uid"].to_string(), str::to_owned);
        out.extend(codes(u, &who));
    }
    for (at, s) in stacks(doc) {
        out.extend(codes(s, &at));
    }
    out
}

/// One value for `--result KEY` (a Jamf extension attribute).
fn result(doc: &Value, key: &str) -> String {
    let or_none = |v: &Value| match v {
        Value::Null => "none".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(",")
        }
    };
    match key {
        "problems" => list(problem_codes(doc)),
        "summary" => list(
            stacks(doc)
                .iter()
                .map(|(at, s)| format!("{at}={}", s["summary"].as_str().unwrap_or("?")))
                .collect(),
        ),
        "stacks" => stacks(doc).len().to_string(),
        "verified" => {
            let all = stacks(doc);
            let ok = all.iter().filter(|(_, s)| s["verified"] == true).count();
            format!("{ok}/{}", all.len())
        }
        "oyster_version" => or_none(&doc["oyster"]["version"]),
        "oyster_path" => or_none(&doc["oyster"]["path"]),
        "team_id" => or_none(&doc["oyster"]["team_id"]),
        "login_items_profile" => match doc["login_items_profile"]["installed"] {
            Value::Bool(true) => "installed".into(),
            Value::Bool(false) => "not installed".into(),
            _ => "unknown".into(),
        },
        other => or_none(&doc[other]),
    }
}

/// `&`, `<`, `>` as XML text (what Jamf reads between the tags).
fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The document in a few lines for people.
fn human(ctx: &Context, doc: &Value) {
    let o = &doc["oyster"];
    let team = match o["team_id"].as_str() {
        Some(t) => format!("Developer ID team {t}"),
        None => format!(
            "no Developer ID team: {}",
            o["signature"].as_str().unwrap_or("")
        ),
    };
    ctx.out.out(&format!(
        "oyster {} at {} ({team})",
        o["version"].as_str().unwrap_or("?"),
        o["path"].as_str().unwrap_or("?")
    ));
    let p = &doc["login_items_profile"];
    ctx.out.out(&format!(
        "login-items profile: {}{}",
        result(doc, "login_items_profile"),
        p["reason"]
            .as_str()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    ));
    let users = doc["users"].as_array().cloned().unwrap_or_default();
    if users.is_empty() {
        ctx.out.out("No Oysterun stack on this Mac.");
    }
    for u in &users {
        let console = if u["console"] == true {
            ", at the console"
        } else {
            ""
        };
        ctx.out.out(&format!(
            "{} (uid {}{console}), {}:",
            u["name"].as_str().unwrap_or("?"),
            u["uid"],
            u["home"].as_str().unwrap_or("?")
        ));
        for s in u["stacks"].as_array().into_iter().flatten() {
            let port = s["port"]
                .as_u64()
                .map_or_else(|| "-".to_owned(), |p| p.to_string());
            ctx.out.out(&format!(
                "  {:<12} {:<12} port {port}",
                s["stack"].as_str().unwrap_or("?"),
                s["summary"].as_str().unwrap_or("?").replace('_', " "),
            ));
            for pr in s["problems"].as_array().into_iter().flatten() {
                ctx.out.out(&format!(
                    "    {}: {}",
                    pr["code"].as_str().unwrap_or("?"),
                    pr["fix"].as_str().unwrap_or("")
                ));
            }
        }
        for pr in u["problems"].as_array().into_iter().flatten() {
            ctx.out.out(&format!(
                "  {}: {}",
                pr["code"].as_str().unwrap_or("?"),
                pr["fix"].as_str().unwrap_or("")
            ));
        }
    }
    for pr in doc["problems"].as_array().into_iter().flatten() {
        ctx.out.out(&format!(
            "{}: {}",
            pr["code"].as_str().unwrap_or("?"),
            pr["fix"].as_str().unwrap_or("")
        ));
    }
}
