//! What a user reads about the CLI: completions and man pages generated from the clap
//! definitions (and installed by make, the formula and the .pkg), and the README's quick start.

use crate::common::has_all;
use crate::common::repo::{formula, readme, readme_section, repo};
use crate::common::TestContext;

#[test]
fn completions_and_man_page_come_from_the_cli_and_are_listed_in_help() {
    let t = TestContext::new();
    for (shell, marker) in
        [("bash", "_oyster()"), ("zsh", "#compdef oyster"), ("fish", "complete -c oyster")]
    {
        let out = t.run(["completions", shell]).ok().stdout();
        assert!(out.contains(marker), "{shell}: {}", &out[..out.len().min(200)]);
        assert!(out.contains("regenerate"), "{shell} completes subcommands");
    }
    let man = t.run(["man"]).ok().stdout();
    assert!(man.contains(".TH oyster 1") && man.contains("setup"), "{}", &man[..200]);
    // Listed in --help (what a user looking for completions reads first).
    let help = t.run(["--help"]).ok().stdout();
    has_all(&help, &["\n  completions ", "\n  man "]);
    has_all(&help, &["Examples:\n  oyster setup"]);
    t.run(["completions", "tcsh"]).fails_with(2);
}

#[test]
fn a_man_page_per_subcommand_with_the_sections_a_reader_expects_installed_by_make() {
    let t = TestContext::new();
    let dir = t.path("man1");
    t.run(["man", "--dir", dir.to_str().unwrap()]).ok();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in ["oyster.1", "oyster-agent.1", "oyster-logs.1", "oyster-status.1"] {
        assert!(pages.contains(&page.to_owned()), "{pages:?}");
    }
    // The hidden helper the completion scripts call has no page.
    assert!(!pages.iter().any(|p| p.contains("__complete")), "{pages:?}");
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        let name = page.trim_end_matches(".1");
        assert!(text.contains(&format!("\n.TH {name} 1")), "{page}");
        for section in
            ["NAME", "SYNOPSIS", "EXAMPLES", "FILES", "ENVIRONMENT", "EXIT STATUS", "SEE ALSO"]
        {
            assert!(text.contains(&format!("\n.SH {section}\n")), "{page} lacks {section}");
        }
        assert!(text.contains("OYSTERUN_STACKS_DIR"), "{page}");
    }
    let agent = std::fs::read_to_string(dir.join("oyster-agent.1")).unwrap();
    assert!(agent.contains("oyster agent stop"), "its own examples");
    assert!(
        !agent.contains("agent\\-stop(1)") && agent.contains("oyster agent stop"),
        "no page is named that does not exist"
    );
    let main = std::fs::read_to_string(dir.join("oyster.1")).unwrap();
    assert!(main.contains("oyster\\-agent(1)"), "oyster(1) points at the pages");
    // `oyster man` alone still prints the main page (what older packaging ran).
    assert!(t.run(["man"]).ok().stdout().contains("\n.TH oyster 1"));
    // make install/uninstall, the formula and the .pkg install all of them.
    let makefile = std::fs::read_to_string(repo().join("Makefile")).unwrap();
    let listed: Vec<String> = makefile
        .split("MANPAGES = ")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .split_whitespace()
        .filter(|w| *w != "\\")
        .map(|w| format!("{w}.1"))
        .collect();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(listed_sorted, pages, "Makefile MANPAGES");
    assert!(makefile.contains("oyster man --dir $(SHAREDIR)/man/man1"));
    assert!(formula().contains("system bin/\"oyster\", \"man\", \"--dir\", man1"));
    let pkg = std::fs::read_to_string(repo().join("packaging/pkg/build-pkg.sh")).unwrap();
    assert!(pkg.contains("\"$bin\" man --dir \"$share/man/man1\""));
}

/// The README's quick start lists only commands that parse (each is run with `--help`, which
/// clap answers only for a verb and flags that exist), and every verb of `--help` is in it.
#[test]
fn the_readme_lists_only_commands_that_exist_and_every_verb() {
    let readme = readme();
    let quick = readme_section("Quick start");
    let t = TestContext::new();
    let mut seen = 0;
    for line in quick.lines().map(str::trim).filter(|l| l.starts_with("oyster ")) {
        let cmd = line.split("  #").next().unwrap().trim();
        let mut args: Vec<String> = vec![];
        // The words as a shell would split them (`""` is one empty word).
        for w in cmd.split_whitespace().skip(1) {
            args.push(w.trim_matches('"').to_owned());
        }
        args.push("--help".into());
        let r = t.run(&args);
        assert_eq!(r.code(), 0, "README: `{cmd}` does not parse: {}", r.stderr());
        seen += 1;
    }
    assert!(seen >= 8, "{quick}");
    let help = t.run(["--help"]).ok().stdout();
    let verbs = crate::help::subcommands(&help);
    assert!(verbs.len() > 20, "{help}");
    for verb in verbs {
        assert!(readme.contains(&format!("`oyster {verb}")), "README lacks `oyster {verb}`");
    }
    for alias in ["alias `info`", "alias `ls`", "oyster-uninstall", "--all"] {
        assert!(readme.contains(alias), "README lacks {alias}");
    }
}

/// The quick start works as written for a newcomer (issue 38): it installs from the clone it is
/// read in (no address the repository does not have yet); the tap's placeholder address comes
/// only after the README says it is one; "stack" is defined before it is used; and outside the
/// Commands table each command has one spelling (the top-level verb, not `agent VERB` or an
/// alias).
#[test]
fn the_quick_start_works_as_written() {
    let readme = readme();
    let quick = readme_section("Quick start");
    let first_block = quick.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    assert!(!first_block.contains("://"), "{first_block}");
    assert!(first_block.starts_with("cargo install --locked --path ."), "{first_block}");
    // The root package builds the oyster binary that line installs.
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("[[bin]]\nname = \"oyster\""), "Cargo.toml");
    let said = readme.find("stand for wherever it is published").expect("placeholder said");
    let url = readme.find("https://github.com/oysterun/oyster").unwrap();
    assert!(said < url, "the tap's placeholder address is used before it is said to be one");
    let lower = readme.to_lowercase();
    let first = lower.find("stack").unwrap();
    assert_eq!(
        Some(first),
        readme.find("A **stack** is").map(|i| i + "A **".len()),
        "\"stack\" is used before it is defined:\n{}",
        &readme[first.saturating_sub(200)..first + 50]
    );
    let prose: Vec<&str> = readme.lines().filter(|l| !l.starts_with('|')).collect();
    for verb in ["start", "stop", "restart", "status", "list", "kill", "install", "uninstall"] {
        let agent_form = format!("oyster agent {verb}");
        for l in &prose {
            assert!(
                !l.contains(&format!("{agent_form} ")) && !l.contains(&format!("{agent_form}`")),
                "README says `{agent_form}` where `oyster {verb}` is the spelling: {l}"
            );
        }
    }
    for alias in ["oyster info", "oyster ls"] {
        assert!(!prose.iter().any(|l| l.contains(alias)), "README spells {alias}");
    }
}
