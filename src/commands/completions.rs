//! `oyster completions SHELL`: clap_complete's static script, taught to complete `--stack`
//! with the stacks on this machine (it asks the hidden `oyster __complete-stacks`, which
//! lists them one per line and needs nothing but HOME).

/// The hidden verb the scripts call; clap_complete offers hidden verbs too, so it is taken
/// out of the verbs a user is offered.
const HELPER: &str = "__complete-stacks";

/// The completion script for `shell`.
pub fn script(shell: clap_complete::Shell, cmd: &mut clap::Command) -> Vec<u8> {
    let mut bytes = vec![];
    clap_complete::generate(shell, cmd, "oyster", &mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    stacks_completed(shell, &without_helper(shell, &text)).into_bytes()
}

/// The script without the hidden helper among the verbs it offers (the lines that handle it
/// once typed stay: they offer nothing).
fn without_helper(shell: clap_complete::Shell, text: &str) -> String {
    use clap_complete::Shell;
    let lines = text.lines().filter_map(|l| match shell {
        Shell::Bash if l.trim_start().starts_with("opts=") => {
            Some(l.replace(&format!(" {HELPER}"), ""))
        }
        Shell::Zsh if l.starts_with(&format!("'{HELPER}:")) => None,
        Shell::Fish if l.contains(&format!("-a \"{HELPER}\"")) => None,
        _ => Some(l.to_owned()),
    });
    lines.collect::<Vec<_>>().join("\n") + "\n"
}

/// Where clap_complete completes `--stack` as any word (or a file), the stacks instead.
fn stacks_completed(shell: clap_complete::Shell, text: &str) -> String {
    use clap_complete::Shell;
    const LIST: &str = "oyster __complete-stacks 2>/dev/null";
    match shell {
        Shell::Bash => {
            let mut out = String::new();
            let mut in_stack = false;
            for line in text.split_inclusive('\n') {
                if line.trim() == "--stack)" {
                    in_stack = true;
                } else if in_stack && line.contains("COMPREPLY=") {
                    let indent = &line[..line.len() - line.trim_start().len()];
                    out.push_str(&format!(
                        "{indent}COMPREPLY=($(compgen -W \"$({LIST})\" -- \"${{cur}}\"))\n"
                    ));
                    in_stack = false;
                    continue;
                }
                out.push_str(line);
            }
            out
        }
        // `--stack NAME` and the plain STACK after a verb.
        Shell::Zsh => {
            text.replace(
                ":NAME:_default'",
                &format!(":NAME:{{compadd -- $({LIST})}}'"),
            )
            .lines()
            .map(|l| match l.strip_suffix(":_default' \\") {
                Some(head) if l.starts_with("'::stack_name") => {
                    format!("{head}:{{compadd -- $({LIST})}}' \\")
                }
                _ => l.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n")
                + "\n"
        }
        Shell::Fish => {
            text.lines()
                .map(|l| {
                    if l.contains(" -l stack ") {
                        format!("{l} -f -a \"({LIST})\"")
                    } else {
                        l.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
                + "\n"
        }
        _ => text.to_owned(),
    }
}
