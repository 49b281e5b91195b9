//! `oyster completions SHELL`: clap_complete's static script, taught to complete `--stack`
//! and the plain STACK after a verb (`oyster restart d<TAB>`) with the stacks on this machine
//! (it asks the hidden `oyster __complete-stacks`, which lists them one per line and needs
//! nothing but HOME).

/// The hidden verb the scripts call; clap_complete offers hidden verbs too, so it is taken
/// out of the verbs a user is offered.
const HELPER: &str = "__complete-stacks";

/// The completion script for `shell`.
pub fn script(shell: clap_complete::Shell, cmd: &mut clap::Command) -> Vec<u8> {
    let mut bytes = vec![];
    clap_complete::generate(shell, cmd, "oyster", &mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let plain = verbs_taking_a_plain_stack(cmd, &[]);
    stacks_completed(shell, &without_helper(shell, &text), &plain).into_bytes()
}

/// The verb paths (`["restart"]`, `["agent", "restart"]`, `["host", "start"]`) whose
/// commands take the stack as a plain name ([`crate::cli::Target`]), each alias too
/// (`["info"]`, `["agent", "info"]`): fish matches the word typed, not the verb it names.
fn verbs_taking_a_plain_stack(cmd: &clap::Command, above: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut path = above.to_vec();
        path.push(sub.get_name().to_owned());
        if sub.get_arguments().any(|a| a.get_id() == "stack_name") {
            out.push(path.clone());
            for alias in sub.get_all_aliases() {
                let mut aliased = above.to_vec();
                aliased.push(alias.to_owned());
                out.push(aliased);
            }
        }
        out.extend(verbs_taking_a_plain_stack(sub, &path));
    }
    out
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
fn stacks_completed(shell: clap_complete::Shell, text: &str, plain: &[Vec<String>]) -> String {
    use clap_complete::Shell;
    match shell {
        Shell::Bash => bash(text, plain),
        Shell::Zsh => zsh(text),
        Shell::Fish => fish(text, plain),
        _ => text.to_owned(),
    }
}

/// What the completion scripts run for the stacks on this machine.
const LIST: &str = "oyster __complete-stacks 2>/dev/null";

/// bash: the stacks after `--stack`, and beside the options of each verb taking a plain STACK.
fn bash(text: &str, plain: &[Vec<String>]) -> String {
    // clap_complete names a verb's case `oyster__subcmd__agent__subcmd__restart)`.
    let cases: Vec<String> = plain
        .iter()
        .map(|p| format!("oyster__subcmd__{})", p.join("__subcmd__")))
        .collect();
    let mut out = String::new();
    let mut in_stack = false;
    let mut in_plain = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with("oyster") && t.ends_with(')') && !t.contains(',') {
            in_plain = cases.iter().any(|c| c == t);
        }
        if in_plain && line.contains(r#"compgen -W "${opts}""#) {
            // A plain STACK is offered wherever the verb's options are.
            out.push_str(&line.replace(
                r#"compgen -W "${opts}""#,
                &format!(r#"compgen -W "${{opts}} $({LIST})""#),
            ));
            continue;
        }
        if t == "--stack)" {
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

/// zsh: `--stack NAME` and the plain STACK after a verb.
fn zsh(text: &str) -> String {
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

/// fish: `--stack`, and (clap_complete's fish script completes no positional value) the plain
/// STACK of each verb that takes one.
fn fish(text: &str, plain: &[Vec<String>]) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains(" -l stack ") {
                format!("{l} -f -a \"({LIST})\"")
            } else {
                l.to_owned()
            }
        })
        .collect();
    for path in plain {
        let when = match path.as_slice() {
            [verb] => format!("__fish_oyster_using_subcommand {verb}"),
            [group, verb] => format!(
                "__fish_oyster_using_subcommand {group}; and __fish_seen_subcommand_from {verb}"
            ),
            _ => continue,
        };
        lines.push(format!(
            "complete -c oyster -n \"{when}\" -f -a \"({LIST})\" -d 'stack'"
        ));
    }
    lines.join("\n") + "\n"
}
