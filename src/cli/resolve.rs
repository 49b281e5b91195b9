//! From clap's structs to the [`Invocation`]: the stack the command line names (as `--stack`,
//! as a plain name after the verb, or every stack with `--all`) and how it was typed, the verb
//! with its settings in plain types, and the output mode. Done once, right after parsing;
//! nothing after it looks at clap's structs.

use super::*;
use crate::context::{StackForm, Typed};
use crate::host::stack::StackName;
use crate::invocation::{
    Cleanup, ConfigVerb, HostVerb, Inventory, Invocation, Job, Logs, Packaging, ProvidersVerb, Qr,
    Setup, Stacks, Starting, Verb,
};
use crate::output::Mode;

/// Why a command line cannot be resolved.
pub enum Unresolved {
    /// The stack is named twice, or where none is taken (exit 2, said as a usage error).
    Conflict(String),
    /// The stack's name breaks the naming rule (exit 2).
    BadName(crate::error::Invalid),
}

/// What the command line says beyond its verb, gathered while the verb is read.
#[derive(Default)]
struct Named<'a> {
    plain: Option<&'a str>,
    /// `--stack` after the subcommand.
    flag: Option<&'a str>,
    all: bool,
    json: bool,
    /// `--dry-run` of a job verb.
    dry_run: bool,
    /// `list`, `cleanup`, `completions`, `man`: not about one stack, so `--stack` is refused.
    unnamed: bool,
}

impl<'a> Named<'a> {
    fn target(&mut self, t: &'a Target) {
        self.plain = t.stack_name.as_deref();
        self.flag = t.flag.stack.as_deref();
    }
    fn targets(&mut self, t: &'a Targets) {
        self.plain = t.stack_name.as_deref();
        self.flag = t.flag.stack.as_deref();
        self.all = t.all;
        self.preview(t.preview);
    }
    fn preview(&mut self, p: super::Preview) {
        self.dry_run = p.dry_run;
        self.json |= p.json;
    }
}

impl Cli {
    /// The run this command line asks for. Both a flag and a plain name that differ, `--all`
    /// beside a name, or `--stack` on a command that shows every stack anyway, are refused.
    pub fn resolve(self) -> Result<Invocation, Unresolved> {
        let before = self.global.stack.clone();
        let agent_form = matches!(self.command, Some(Command::Agent(_)));
        let mut named = Named::default();
        let verb = match &self.command {
            // `version -v`: the global `-v/--verbose`.
            Some(Command::Version) => {
                named.unnamed = true;
                Verb::Version {
                    verbose: self.global.verbose,
                }
            }
            Some(command) => verb(command, &mut named),
            None => {
                named.unnamed = true;
                Verb::Overview
            }
        };
        let word = match (&self.command, &verb) {
            (None, _) => String::new(),
            (Some(Command::Agent(_)), Verb::Job(Job::List { .. })) => "agent list".to_owned(),
            (Some(Command::Agent(_)), _) => "agent".to_owned(),
            _ => verb.word().to_owned(),
        };
        let flag = match (before.as_deref(), named.flag) {
            (Some(b), Some(a)) if a != b => {
                return Err(Unresolved::Conflict(format!(
                "two different stacks given: `--stack {b}` and `--stack {a}`; give the stack once"
            )))
            }
            (b, a) => b.or(a),
        };
        if let Some(f) = flag {
            if named.unnamed && word.is_empty() {
                return Err(Unresolved::Conflict(format!(
                    "`oyster` alone lists every stack, so --stack {f} would be ignored; `oyster status {f}` shows that one"
                )));
            }
            if named.unnamed {
                return Err(Unresolved::Conflict(format!(
                    "`oyster {word}` does not take --stack (it is not about one stack), so --stack {f} would be ignored"
                )));
            }
            if named.all {
                return Err(Unresolved::Conflict(format!(
                    "--all means every stack, so --stack {f} contradicts it; give one or the other"
                )));
            }
        }
        let name = match (flag, named.plain) {
            (Some(f), Some(p)) if f != p => {
                return Err(Unresolved::Conflict(format!(
                    "two different stacks given: `{p}` and `--stack {f}`; give the stack once"
                )))
            }
            (Some(f), _) => Some(f),
            (None, p) => p,
        };
        let form = match (name.is_some(), flag.is_none()) {
            (false, _) => StackForm::Default,
            (true, true) => StackForm::Plain,
            (true, false) => StackForm::Flag,
        };
        let stacks = stacks_of(&named, name, verb.word())?;
        Ok(Invocation {
            stacks,
            verb,
            mode: if named.json { Mode::Json } else { Mode::Human },
            dry_run: named.dry_run,
            typed: Typed {
                agent_form,
                stack: form,
                head: hint_head,
            },
        })
    }
}

/// How a suggested verb is typed: `oyster VERB` where the top level has it (unless the user
/// typed `oyster agent …` and agent has it too), else `oyster agent VERB`. Read from clap's
/// own tree, so no table of aliases stands beside it.
fn hint_head(verb: &str, agent_form: bool) -> &'static str {
    use clap::Subcommand;
    let top = Command::has_subcommand(verb);
    if top && !(agent_form && AgentCommand::has_subcommand(verb)) {
        "oyster"
    } else {
        "oyster agent"
    }
}

fn qr(q: QrArgs) -> Qr {
    if q.no_qr {
        Qr::Never
    } else if q.qr {
        Qr::Always
    } else {
        Qr::OnTerminal
    }
}

fn verb<'a>(command: &'a Command, n: &mut Named<'a>) -> Verb {
    match command {
        Command::Setup(Deferred(a)) => setup_verb(a, n),
        Command::Job(job) | Command::Agent(Deferred(AgentCommand::Job(job))) => job_verb(job, n),
        Command::Agent(Deferred(AgentCommand::Print { host, target })) => {
            n.target(target);
            Verb::Job(Job::Print(host.inputs()))
        }
        Command::Agent(Deferred(AgentCommand::Regenerate {
            host,
            no_restart,
            dry_run,
            verify,
            login_items,
            target,
        })) => {
            n.target(target);
            Verb::Job(Job::Regenerate {
                host: host.inputs(),
                no_restart: *no_restart,
                dry_run: *dry_run,
                timing: verify.loading(*login_items),
            })
        }
        Command::Logs(Deferred(a)) => {
            n.target(&a.target);
            Verb::Logs(Logs {
                lines: a.lines,
                follow: a.follow,
            })
        }
        Command::Cleanup(Deferred(a)) => {
            n.unnamed = true;
            Verb::Cleanup(Cleanup {
                yes: a.yes,
                dry_run: a.dry_run,
                purge: a.purge,
            })
        }
        Command::Doctor {
            json,
            probe,
            all,
            target,
        } => {
            n.target(target);
            n.all = *all;
            n.json = *json;
            Verb::Doctor { probe: *probe }
        }
        Command::Providers(Deferred(p)) => providers_verb(p, n),
        Command::Config(Deferred(c)) => config_verb(c, n),
        Command::Env(Deferred(e)) => env_verb(e, n),
        Command::Host(Deferred(h)) => host_verb(h, n),
        other => unnamed_verb(other, n),
    }
}

fn setup_verb<'a>(a: &'a SetupArgs, n: &mut Named<'a>) -> Verb {
    n.target(&a.target);
    Verb::Setup(Box::new(Setup {
        options: crate::setup::SetupOptions {
            mode: a.mode.map(Into::into),
            agent_folder: a.agent_folder.clone(),
            install_providers: a.install_providers,
            no_start: a.no_start,
            host: a.host.inputs(),
            timing: a.verify.timing(),
        },
        yes: a.yes,
        dry_run: a.dry_run,
        password_stdin: a.password_stdin,
        no_install_providers: a.no_install_providers,
        qr: qr(a.qr),
        retyped: a.retyped(),
    }))
}

/// The rest: the fleet's verbs, `version`, `open`, `qr` and the packaging helpers.
fn unnamed_verb<'a>(command: &'a Command, n: &mut Named<'a>) -> Verb {
    match command {
        Command::Mdm(Deferred(MdmCommand::Profile {
            output,
            organization,
        })) => {
            n.unnamed = true;
            Verb::MdmProfile {
                output: output.clone(),
                organization: organization.clone(),
            }
        }
        Command::Inventory(Deferred(a)) => {
            n.unnamed = true;
            n.json = a.json;
            Verb::Inventory(Inventory {
                json: a.json,
                result: a.result.clone(),
                user_part: a.user_part,
            })
        }
        Command::Version => {
            n.unnamed = true;
            Verb::Version { verbose: false }
        }
        Command::Open { target } => {
            n.target(target);
            Verb::Open
        }
        Command::Qr { target } => {
            n.target(target);
            Verb::Qr
        }
        Command::Completions { shell } => {
            n.unnamed = true;
            Verb::Packaging(Packaging::Completions(*shell))
        }
        Command::Man { dir } => {
            n.unnamed = true;
            Verb::Packaging(Packaging::Man { dir: dir.clone() })
        }
        Command::CompleteStacks => {
            n.unnamed = true;
            Verb::Packaging(Packaging::CompleteStacks)
        }
        other => unreachable!("{other:?} is resolved in verb()"),
    }
}

fn providers_verb<'a>(p: &'a ProvidersCommand, n: &mut Named<'a>) -> Verb {
    match p {
        ProvidersCommand::Resolve {
            providers,
            json,
            flag,
        } => {
            n.flag = flag.stack.as_deref();
            n.json = *json;
            Verb::Providers(ProvidersVerb::Resolve(providers.clone()))
        }
        ProvidersCommand::Set {
            provider,
            command,
            flag,
        } => {
            n.flag = flag.stack.as_deref();
            Verb::Providers(ProvidersVerb::Set {
                provider: provider.clone(),
                command: command.clone(),
            })
        }
        ProvidersCommand::Auto { provider, flag } => {
            n.flag = flag.stack.as_deref();
            Verb::Providers(ProvidersVerb::Auto(provider.clone()))
        }
        ProvidersCommand::Status { json, target } => {
            n.target(target);
            n.json = *json;
            Verb::Providers(ProvidersVerb::Status)
        }
    }
}

fn config_verb<'a>(c: &'a ConfigCommand, n: &mut Named<'a>) -> Verb {
    match c {
        ConfigCommand::Sync { port, target } => {
            n.target(target);
            Verb::Config(ConfigVerb::Sync { port: *port })
        }
        ConfigCommand::Show { json, target } => {
            n.target(target);
            n.json = *json;
            Verb::Config(ConfigVerb::Show)
        }
    }
}

fn env_verb<'a>(e: &'a EnvArgs, n: &mut Named<'a>) -> Verb {
    use crate::invocation::{EnvVerb, SecretArg};
    n.flag = e.flag.stack.as_deref();
    n.json = e.json;
    // `oyster env --stack a set … --stack b`: two stacks, refused as such below.
    let sub_flag = match &e.command {
        Some(EnvCommand::Set { flag, .. } | EnvCommand::Unset { flag, .. }) => {
            flag.stack.as_deref()
        }
        Some(EnvCommand::List { target, .. }) => target.flag.stack.as_deref(),
        None => None,
    };
    if let (Some(_), Some(sub)) = (n.flag, sub_flag) {
        n.plain = n.flag;
        n.flag = Some(sub);
    }
    Verb::Env(match &e.command {
        None => EnvVerb::List,
        Some(EnvCommand::List { json, target }) => {
            n.plain = n.plain.or(target.stack_name.as_deref());
            n.flag = n.flag.or(target.flag.stack.as_deref());
            n.json |= *json;
            EnvVerb::List
        }
        Some(EnvCommand::Set {
            name,
            value,
            value_stdin: _,
            restart,
            flag,
        }) => {
            n.flag = n.flag.or(flag.stack.as_deref());
            EnvVerb::Set {
                name: name.clone(),
                value: value.clone().map(SecretArg),
                restart: restart.wanted(),
            }
        }
        Some(EnvCommand::Unset {
            name,
            restart,
            flag,
        }) => {
            n.flag = n.flag.or(flag.stack.as_deref());
            EnvVerb::Unset {
                name: name.clone(),
                restart: restart.wanted(),
            }
        }
    })
}

fn host_verb<'a>(h: &'a HostCommand, n: &mut Named<'a>) -> Verb {
    match h {
        HostCommand::Start {
            host,
            verify,
            target,
        } => {
            n.target(target);
            Verb::Host(HostVerb::Start {
                host: host.inputs(),
                timing: verify.timing(),
            })
        }
        HostCommand::Stop { target } => {
            n.target(target);
            Verb::Host(HostVerb::Stop)
        }
        HostCommand::Status { json, target } => {
            n.target(target);
            n.json = *json;
            Verb::Host(HostVerb::Status)
        }
        HostCommand::Exec { flag } => {
            n.flag = flag.stack.as_deref();
            Verb::Host(HostVerb::Exec)
        }
    }
}

fn starting(
    host: &HostArgs,
    verify: &VerifyArgs,
    li: LoginItemsArgs,
    q: QrArgs,
    restore: bool,
) -> Starting {
    Starting {
        host: host.inputs(),
        timing: verify.loading(li),
        qr: qr(q),
        restore_sessions: restore,
    }
}

fn job_verb<'a>(job: &'a JobCommand, n: &mut Named<'a>) -> Verb {
    Verb::Job(match job {
        JobCommand::Status { json, all, target } => {
            n.target(target);
            n.json = *json;
            n.all = *all;
            Job::Status
        }
        JobCommand::Start(Deferred(a)) => {
            n.targets(&a.targets);
            Job::Start(starting(&a.host, &a.verify, a.login_items, a.qr, false))
        }
        JobCommand::Stop {
            keep,
            no_wait,
            targets,
        } => {
            n.targets(targets);
            Job::Stop {
                keep: *keep,
                no_wait: *no_wait,
            }
        }
        JobCommand::Restart(Deferred(a)) => {
            n.targets(&a.targets);
            let restore = a.restore_sessions;
            Job::Restart(starting(&a.host, &a.verify, a.login_items, a.qr, restore))
        }
        JobCommand::List { json, wide } => {
            n.unnamed = true;
            n.json = *json;
            Job::List { wide: *wide }
        }
        JobCommand::Kill { target } => {
            n.target(target);
            Job::Kill
        }
        JobCommand::Install {
            host,
            no_start,
            verify,
            login_items,
            target,
            preview,
        } => {
            n.target(target);
            n.preview(*preview);
            Job::Install {
                host: host.inputs(),
                no_start: *no_start,
                timing: verify.loading(*login_items),
            }
        }
        JobCommand::Uninstall {
            targets,
            purge,
            yes,
        } => {
            n.targets(targets);
            Job::Uninstall {
                purge: *purge,
                yes: *yes,
            }
        }
    })
}

/// Which stacks the run is about: every one (`--all`), none (a verb about no stack), or the
/// one named (production when none is).
fn stacks_of(named: &Named<'_>, name: Option<&str>, verb: &str) -> Result<Stacks, Unresolved> {
    Ok(if named.all {
        Stacks::All
    } else if named.unnamed {
        Stacks::Unnamed
    } else {
        match name {
            Some(n) => Stacks::One(
                StackName::parse(n)
                    .map_err(|e| Unresolved::BadName(all_for(n, verb).unwrap_or(e)))?,
            ),
            None => Stacks::One(StackName::production()),
        }
    })
}

/// `--stack all` (1.5.3's scripts' word for every stack): the `--all` of the verb typed, when
/// it has one, else `list`.
fn all_for(name: &str, verb: &str) -> Option<crate::error::Invalid> {
    (name == "all").then(|| {
        let takes_all = ["start", "stop", "restart", "uninstall", "status", "doctor"];
        let hint = if takes_all.contains(&verb) {
            format!("`oyster {verb} --all`")
        } else {
            "`oyster list` shows every stack".to_owned()
        };
        crate::error::Invalid::new(format!(
            "`all` is not a stack name: every stack is `--all`{}",
            if takes_all.contains(&verb) {
                String::new()
            } else {
                format!(", which `{verb}` does not take")
            }
        ))
        .hint(hint)
    })
}
