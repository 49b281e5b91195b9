//! Unit tests of `launchenv`.

use super::*;
use proptest::prelude::*;

#[test]
fn exactly_eight_variables_in_order() {
    let dirs = vec![
        PathBuf::from("/u/.local/bin"),
        PathBuf::from("/usr/local/bin"),
    ];
    let env = generate(&EnvInputs {
        node_bin: Path::new("/opt/homebrew/bin/node"),
        provider_dirs: &dirs,
        config_dir: Path::new("/u/.oysterun"),
        port: 8802,
        root: Path::new("/opt/oysterun"),
        stack_name: "production",
        stack_root: Path::new("/u/.oysterun"),
    })
    .unwrap();
    assert_eq!(env.vars.len(), 8);
    assert_eq!(env.get(STACK_NAME), Some("production"));
    assert_eq!(env.get(STACK_ROOT), Some("/u/.oysterun"));
    assert_eq!(
        env.get(MATRIX_STORAGE_PATH),
        Some("/u/.oysterun/matrix/homeserver.db")
    );
    assert_eq!(
        env.get(PATH),
        Some("/opt/homebrew/bin:/u/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
    );
}

#[test]
fn unusable_entries_are_errors() {
    for bad in ["rel/bin", "/a:b", "/a\nb", "/a\rb"] {
        assert!(build_path([Path::new(bad)]).is_err(), "{bad:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(3000)))]

    /// Fuzz: any entries either fail with an error or give a PATH whose every entry is an
    /// absolute, plain directory that appears once.
    #[test]
    fn path_is_safe_or_refused(entries in proptest::collection::vec(r"(/|[a-z]|:|\n|\r| |&|<|\.)*", 0..8)) {
        let dirs: Vec<&Path> = entries.iter().map(Path::new).collect();
        if let Ok(path) = build_path(dirs.iter().copied()) {
            if !path.is_empty() {
                let parts: Vec<&str> = path.split(':').collect();
                for (i, p) in parts.iter().enumerate() {
                    prop_assert!(p.starts_with('/'), "{:?}", p);
                    prop_assert!(!p.contains(['\n', '\r', '\0']));
                    prop_assert!(!parts[..i].contains(p), "duplicate {:?}", p);
                }
            }
        }
    }

    #[test]
    fn path_has_each_entry_once_in_first_seen_order(
        picks in proptest::collection::vec(0usize..6, 0..20)
    ) {
        let pool = ["/a", "/b/c", "/usr/bin", "/bin", "/a/", "/b/./c"];
        let dirs: Vec<&Path> = picks.iter().map(|i| Path::new(pool[*i])).collect();
        let path = build_path(dirs.iter().copied()).unwrap();
        let parts: Vec<&str> = if path.is_empty() { vec![] } else { path.split(':').collect() };
        let mut uniq = parts.clone();
        uniq.dedup();
        uniq.sort();
        uniq.dedup();
        prop_assert_eq!(uniq.len(), parts.len(), "duplicates in {}", path);
        let mut expect: Vec<String> = vec![];
        for d in &dirs {
            let n = crate::provider::resolve::normalize(d).to_string_lossy().into_owned();
            if !expect.contains(&n) { expect.push(n); }
        }
        prop_assert_eq!(parts, expect.iter().map(String::as_str).collect::<Vec<_>>());
    }
}
