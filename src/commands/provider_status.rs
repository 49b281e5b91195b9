//! `oyster providers status`'s human output: every documented field of each provider —
//! intent, the command config.json holds, what resolution finds now (and from where), the
//! state, why, and authentication — one labelled line each, so it says more than `resolve`.

use crate::context::Context;
use crate::provider::resolve::Source;
use crate::provider::status::{Authentication, ProviderStatus};

pub fn print(ctx: &Context, rows: &[ProviderStatus]) {
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            ctx.out.out("");
        }
        ctx.out.out_toned(
            crate::output::Tone::Heading,
            &format!("{} ({})", r.provider, r.state.as_str()),
        );
        ctx.out
            .out(&format!("  intent:         {}", r.intent.as_str()));
        let command = match &r.command {
            _ if r.intent == crate::provider::resolve::Intent::Disabled => {
                "\"\" (disabled)".to_owned()
            }
            serde_json::Value::Null => "none recorded (found by discovery)".to_owned(),
            serde_json::Value::String(s) if s.is_empty() => "\"\" (disabled)".to_owned(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        ctx.out.out(&format!("  command:        {command}"));
        ctx.out.out(&format!(
            "  resolved:       {}",
            r.resolved.as_deref().unwrap_or("nothing")
        ));
        if let Some(source) = r.source {
            ctx.out
                .out(&format!("  source:         {}", Source::as_str(source)));
        }
        if let Some(reason) = &r.reason {
            ctx.out.out(&format!("  reason:         {reason}"));
        }
        let auth = match r.authentication {
            Authentication::NotChecked => {
                "not checked (discovery never runs a provider, nor its login)".to_owned()
            }
            Authentication::KeychainLocked => format!(
                "at risk: the Host runs in a Background session, where the login keychain that holds this provider's login is locked, so its authentication can fail; `{}` at the console moves the Host to the console session (or log in at the console once)",
                ctx.hint_cmd("restart")
            ),
        };
        ctx.out.out(&format!("  authentication: {auth}"));
    }
}
