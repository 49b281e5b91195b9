//! `oyster version [--verbose]`: `--version`, and with `--verbose` what each stack runs — the
//! pinned Node and the Oysterun root with its version (read from its `package.json`).

use crate::context::Context;
use crate::host::plan::{self, HostInputs};
use crate::ExitStatus;

pub fn run(ctx: &Context, verbose: bool) -> anyhow::Result<ExitStatus> {
    ctx.out
        .out(&format!("oyster {}", env!("CARGO_PKG_VERSION")));
    if !verbose {
        return Ok(ExitStatus::Success);
    }
    ctx.out.out(&format!("  path:  {}", ctx.launcher.display()));
    let names = crate::host::stack::discover(&ctx.env.stack_env());
    if names.is_empty() {
        ctx.out
            .out("  no stack on this machine yet (`oyster setup` sets one up)");
    }
    for name in names {
        let sub = ctx.for_stack(&name)?;
        // What the stack runs, not what it would be planned with: a stack without a port
        // still has a Node and a root.
        match plan::node_and_root_only(&sub, &HostInputs::default()) {
            Ok((node, root)) => {
                ctx.out.out(&format!("stack {name}:"));
                // One line each, whatever a path or a package's version holds.
                let one_line = |s: &str| crate::output::one_line(std::path::Path::new(s));
                ctx.out.out(&format!(
                    "  node:     {} {}",
                    crate::output::one_line(&node.path),
                    one_line(&node.version.to_string())
                ));
                ctx.out.out(&format!(
                    "  oysterun: {} {}",
                    crate::output::one_line(&root.path),
                    oysterun_version(&root.path)
                        .map_or_else(|| "(version unknown)".into(), |v| one_line(&v))
                ));
            }
            Err(e) => ctx.out.out(&format!(
                "stack {name}: {}",
                format!("{e:#}").lines().next().unwrap_or_default()
            )),
        }
    }
    Ok(ExitStatus::Success)
}

/// The root's version where Oysterun's own CLI finds it.
fn oysterun_version(root: &std::path::Path) -> Option<String> {
    crate::host::root::oysterun_version(root)
}
