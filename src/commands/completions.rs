//! `oyster completions SHELL`: clap_complete's static script, taught to complete `--stack`
//! with the stacks on this machine (it asks the hidden `oyster __complete-stacks`, which
//! lists them one per line and needs nothing but HOME).

/// The completion script for `shell`.
pub fn script(shell: clap_complete::Shell, cmd: &mut clap::Command) -> Vec<u8> {
    let mut bytes = vec![];
    clap_complete::generate(shell, cmd, "oyster", &mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    stacks_completed(shell, &text).into_bytes()
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
