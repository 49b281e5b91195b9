//! What a command line names beyond its verb: the stack (as `--stack`, as a plain name, or
//! every stack with `--all`), and how it was typed, so hints can echo that form.

use super::*;

/// Why a command line names no single stack, or names it twice (exit 2, said as a usage error).
pub struct StackConflict(pub String);

/// The stack the command line names, and how the user typed it (hints echo that form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub name: String,
    /// `--stack NAME` or a plain name was given (hints name the stack only then).
    pub given: bool,
    /// Given as a plain name after the verb (`oyster restart dev`).
    pub positional: bool,
    /// The user typed `oyster agent VERB` rather than the top-level alias.
    pub agent_form: bool,
}

impl Cli {
    /// The stack this run acts on: `--stack`, a plain name after the verb, or production.
    /// Both given and different, `--all` beside a name, or `--stack` on a command that shows
    /// every stack anyway, is refused.
    pub fn chosen(&self) -> Result<Chosen, StackConflict> {
        let flag = self.global.stack.as_deref();
        let plain = self.command.stack_arg();
        let verb = self.command.verb();
        if let Some(f) = flag {
            if self.command.ignores_stack() {
                return Err(StackConflict(format!(
                    "`oyster {verb}` does not take --stack (it is not about one stack), so --stack {f} would be ignored"
                )));
            }
            if self.command.all() {
                return Err(StackConflict(format!(
                    "--all means every stack, so --stack {f} contradicts it; give one or the other"
                )));
            }
        }
        let name = match (flag, plain) {
            (Some(f), Some(p)) if f != p => {
                return Err(StackConflict(format!(
                    "two different stacks given: `{p}` and `--stack {f}`; give the stack once"
                )))
            }
            (Some(f), _) => Some(f),
            (None, p) => p,
        };
        Ok(Chosen {
            name: name.unwrap_or(crate::host::stack::DEFAULT_STACK).to_owned(),
            given: name.is_some(),
            positional: flag.is_none() && plain.is_some(),
            agent_form: matches!(self.command, Command::Agent(_)),
        })
    }
}

impl Command {
    /// The `--port` given to this command, if it takes one (only commands that sync the config
    /// or plan the Host do).
    pub fn port(&self) -> Option<u16> {
        let host = |h: &HostArgs| h.port;
        match self {
            Command::Config(ConfigCommand::Sync { port, .. }) => *port,
            Command::Setup(a) => host(&a.host),
            Command::Start(a) => host(&a.host),
            Command::Restart { host: h, .. } | Command::Install { host: h, .. } => host(h),
            Command::Host(HostCommand::Start { host: h, .. }) => host(h),
            Command::Agent(a) => match a {
                AgentCommand::Print { host: h, .. }
                | AgentCommand::Install { host: h, .. }
                | AgentCommand::Regenerate { host: h, .. }
                | AgentCommand::Restart { host: h, .. } => host(h),
                AgentCommand::Start(a) => host(&a.host),
                _ => None,
            },
            _ => None,
        }
    }

    /// The stack given as a plain name after the verb, if this verb takes one.
    pub fn stack_arg(&self) -> Option<&str> {
        fn t(t: &Target) -> Option<&str> {
            t.stack_name.as_deref()
        }
        fn ts(t: &Targets) -> Option<&str> {
            t.stack_name.as_deref()
        }
        match self {
            Command::Setup(a) => t(&a.target),
            Command::Status { target, .. }
            | Command::Kill { target }
            | Command::Install { target, .. }
            | Command::Doctor { target, .. } => t(target),
            Command::Logs(a) => t(&a.target),
            Command::Start(a) => ts(&a.targets),
            Command::Stop { targets } | Command::Uninstall { targets } => ts(targets),
            Command::Restart { targets, .. } => ts(targets),
            Command::Agent(a) => match a {
                AgentCommand::Print { target, .. }
                | AgentCommand::Install { target, .. }
                | AgentCommand::Regenerate { target, .. }
                | AgentCommand::Status { target, .. }
                | AgentCommand::Kill { target } => t(target),
                AgentCommand::Restart { targets, .. }
                | AgentCommand::Stop { targets }
                | AgentCommand::Uninstall { targets } => ts(targets),
                AgentCommand::Start(a) => ts(&a.targets),
                AgentCommand::List { .. } => None,
            },
            Command::Host(
                HostCommand::Start { target, .. }
                | HostCommand::Stop { target }
                | HostCommand::Status { target, .. },
            )
            | Command::Config(
                ConfigCommand::Sync { target, .. } | ConfigCommand::Show { target, .. },
            )
            | Command::Providers(ProvidersCommand::Status { target, .. }) => t(target),
            _ => None,
        }
    }

    /// `--all`: every stack on disk.
    pub fn all(&self) -> bool {
        match self {
            Command::Start(a) | Command::Agent(AgentCommand::Start(a)) => a.targets.all,
            Command::Stop { targets }
            | Command::Uninstall { targets }
            | Command::Restart { targets, .. }
            | Command::Agent(
                AgentCommand::Stop { targets }
                | AgentCommand::Uninstall { targets }
                | AgentCommand::Restart { targets, .. },
            ) => targets.all,
            _ => false,
        }
    }

    /// Commands that are not about one stack, which refuse `--stack` rather than ignore it.
    fn ignores_stack(&self) -> bool {
        matches!(
            self,
            Command::List { .. }
                | Command::Agent(AgentCommand::List { .. })
                | Command::Completions { .. }
                | Command::Man { .. }
                | Command::Cleanup(_)
                | Command::CompleteStacks
                | Command::Mdm(_)
                | Command::Inventory(_)
        )
    }

    /// The verb as typed at the top level (`list`, `agent list`), for messages.
    fn verb(&self) -> String {
        let top = match self {
            Command::Setup(_) => "setup",
            Command::Status { .. } => "status",
            Command::Start(_) => "start",
            Command::Stop { .. } => "stop",
            Command::Restart { .. } => "restart",
            Command::Logs(_) => "logs",
            Command::List { .. } => "list",
            Command::Kill { .. } => "kill",
            Command::Install { .. } => "install",
            Command::Uninstall { .. } => "uninstall",
            Command::Cleanup(_) => "cleanup",
            Command::Doctor { .. } => "doctor",
            Command::Providers(_) => "providers",
            Command::Config(_) => "config",
            Command::Agent(AgentCommand::List { .. }) => return "agent list".into(),
            Command::Agent(_) => "agent",
            Command::Host(_) => "host",
            Command::Completions { .. } => "completions",
            Command::Man { .. } => "man",
            Command::CompleteStacks => "__complete-stacks",
            Command::Mdm(_) => "mdm",
            Command::Inventory(_) => "inventory",
        };
        top.to_owned()
    }

    /// A top-level alias as the `agent` verb it runs (`oyster stop` is `oyster agent stop`);
    /// any other command comes back as it was.
    #[allow(clippy::result_large_err)] // handed back by value once per run, never stored
    pub fn into_agent(self) -> Result<AgentCommand, Command> {
        Ok(match self {
            Command::Status { json, target } => AgentCommand::Status { json, target },
            Command::Start(a) => AgentCommand::Start(a),
            Command::Stop { targets } => AgentCommand::Stop { targets },
            Command::Restart {
                host,
                verify,
                targets,
                qr,
                restore_sessions,
            } => AgentCommand::Restart {
                host,
                verify,
                targets,
                qr,
                restore_sessions,
            },
            Command::List { json } => AgentCommand::List { json },
            Command::Kill { target } => AgentCommand::Kill { target },
            Command::Install {
                host,
                no_start,
                verify,
                target,
            } => AgentCommand::Install {
                host,
                no_start,
                verify,
                target,
            },
            Command::Uninstall { targets } => AgentCommand::Uninstall { targets },
            Command::Agent(a) => a,
            other => return Err(other),
        })
    }
}
