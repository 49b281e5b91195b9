//! Unit tests of the config store: parse errors in plain words, migration, merge, writes.

mod messages {
    #[test]
    fn no_rust_terms_reach_the_user() {
        for (raw, want) in [
            (
                "invalid type: string \"x\", expected u16",
                "it is the string \"x\", expected a port number (a whole number from 1 to 65535)",
            ),
            (
                "invalid value: integer `70000`, expected u16",
                "it is the number `70000`, expected a port number (a whole number from 1 to 65535)",
            ),
            (
                "invalid type: sequence, expected a JSON object at the top level",
                "it is an array, expected a JSON object at the top level",
            ),
        ] {
            assert_eq!(super::super::humanize(raw), want);
        }
    }
}

mod store_and_merge {
    use super::super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn a_change_is_said_redacted() {
        let change = |key: &str, to: Value| Change {
            key: key.into(),
            from: Value::Null,
            to,
        };
        assert_eq!(
            change("relay_url", json!("https://u:pw@h/x?token=t&n=1")).to_string(),
            r#"relay_url: null -> "https://<redacted>@h/x?token=<redacted>&n=1""#
        );
        assert_eq!(
            change("device_token", json!("dt-1")).to_string(),
            r#"device_token: null -> "<redacted>""#
        );
        assert_eq!(
            change("port", json!(8802)).to_string(),
            "port: null -> 8802"
        );
    }

    /// Two providers from the registry, whichever they are (tests never name one).
    fn p0() -> &'static Provider {
        PROVIDERS
            .iter()
            .next()
            .expect("the registry lists providers")
    }

    fn p1() -> &'static Provider {
        PROVIDERS.get(1).expect("the registry lists two providers")
    }

    fn parse(s: &str) -> Result<ConfigDoc, ConfigError> {
        ConfigDoc::parse(Path::new("/c/config.json"), s.as_bytes())
    }

    #[test]
    fn migration_table() {
        let bare = Value::String(p0().binary.into());
        for (cmd, want) in [
            (None, Intent::Auto),
            (Some(Value::Null), Intent::Auto),
            (Some(json!("")), Intent::Auto),
            (Some(json!("   ")), Intent::Auto),
            (Some(bare), Intent::Auto),
            (Some(json!("/opt/x/bin/thing")), Intent::Manual),
            (Some(json!("~/bin/thing")), Intent::Manual),
            (Some(json!("other-name")), Intent::Manual),
        ] {
            assert_eq!(migrated_intent(p0(), cmd.as_ref()), want, "{cmd:?}");
        }
    }

    #[test]
    fn type_errors_name_key_line_and_column() {
        let key = p0().command_key;
        let e = parse(&format!("{{\n  \"a\": 1,\n  \"{key}\": 5\n}}")).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ConfigError::Type { line: 3, .. }), "{msg}");
        assert!(msg.contains(key) && msg.contains("line 3"), "{msg}");
        let id = p1().id;
        let e = parse(&format!(
            "{{\"{INTENT_KEY}\": {{\"{id}\": \"sometimes\"}}}}"
        ))
        .unwrap_err();
        assert!(e.to_string().contains("provider_command_intent"), "{e}");
        assert!(parse("{\"provider_command_intent\": {\"other\": 1}}").is_ok());
        assert!(matches!(parse("[]"), Err(ConfigError::Type { .. })));
        assert!(matches!(
            parse("{\"port\": 70000}"),
            Err(ConfigError::Type { .. })
        ));
        assert!(matches!(parse("{\"a\": "), Err(ConfigError::Syntax { .. })));
        assert!(matches!(parse(""), Err(ConfigError::Empty { .. })));
        assert!(matches!(parse("\u{feff}{}"), Err(ConfigError::Bom { .. })));
    }

    #[test]
    fn merge_never_writes_a_detector_null_over_a_value() {
        let mut doc = parse(&format!("{{\"{}\": \"/old/x\"}}", p0().command_key)).unwrap();
        let mut changes = vec![];
        doc.migrate(&mut changes);
        assert_eq!(doc.intent(p0()), Intent::Manual);
        let nothing = Resolution::Missing {
            reason: crate::provider::resolve::Unresolved::Disabled { id: "x".into() },
        };
        doc.merge(p0(), &nothing, &mut changes);
        assert_eq!(doc.command(p0()), Some("/old/x"));
        doc.set_intent(p0(), Intent::Auto, &mut changes);
        doc.merge(p0(), &nothing, &mut changes);
        assert_eq!(doc.command(p0()), Some("/old/x"));
    }

    fn arb_doc() -> impl Strategy<Value = String> {
        let cmd = prop_oneof![
            Just("null".to_string()),
            Just("\"\"".to_string()),
            Just(format!("\"{}\"", p0().binary)),
            Just("\"/nowhere/bin/x\"".to_string()),
            Just("\"rel/x\"".to_string()),
        ];
        let intent = prop_oneof![
            Just(None),
            Just(Some("auto")),
            Just(Some("manual")),
            Just(Some("disabled"))
        ];
        (cmd.clone(), cmd, intent.clone(), intent, any::<bool>()).prop_map(
            |(c0, c1, i0, i1, extra)| {
                let mut intents = vec![];
                if let Some(i) = i0 {
                    intents.push(format!("\"{}\": \"{i}\"", p0().id));
                }
                if let Some(i) = i1 {
                    intents.push(format!("\"{}\": \"{i}\"", p1().id));
                }
                format!(
                    "{{{}\"{}\": {c0}, \"{}\": {c1}, \"{INTENT_KEY}\": {{{}}}, \"history\": [1]}}",
                    if extra {
                        "\"zz\": {\"resume\": true}, "
                    } else {
                        ""
                    },
                    p0().command_key,
                    p1().command_key,
                    intents.join(", ")
                )
            },
        )
    }

    /// Arbitrary JSON values, biased towards the keys and shapes oyster owns.
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
            prop_oneof![
                Just("auto"),
                Just("manual"),
                Just("disabled"),
                Just("/a/b"),
                Just("")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            let key = prop_oneof![
                Just(p0().command_key.to_owned()),
                Just(p1().command_key.to_owned()),
                Just(INTENT_KEY.to_owned()),
                Just(p0().id.as_str().to_owned()),
                Just(PORT_KEY.to_owned()),
                "[a-z_]{1,6}",
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((key, inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(3000)))]

        /// Fuzz: no byte string makes the parser panic; whatever parses survives a sync and
        /// re-parses to what was written, and a second sync changes nothing.
        #[test]
        fn parser_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = ConfigDoc::parse(Path::new("/c"), &bytes);
        }

        #[test]
        fn any_accepted_document_syncs_idempotently(v in arb_json()) {
            let text = serde_json::to_vec(&v).unwrap();
            let Ok(mut doc) = ConfigDoc::parse(Path::new("/c"), &text) else { return Ok(()) };
            let search = Search { path_var: None, fallback_dirs: vec![] };
            let mut changes = vec![];
            doc.sync_providers(&search, &mut changes);
            let written = doc.to_bytes();
            let mut again = ConfigDoc::parse(Path::new("/c"), &written).expect("oyster parses what it wrote");
            prop_assert_eq!(again.value(), doc.value());
            let mut changes2 = vec![];
            again.sync_providers(&search, &mut changes2);
            prop_assert!(changes2.is_empty(), "{:?}", changes2);
        }
    }

    proptest! {
        #[test]
        fn sync_is_idempotent_and_keeps_unknown_keys(text in arb_doc(), found in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let bin = dir.path().join(p0().binary);
            if found {
                std::fs::write(&bin, "").unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            let search = Search { path_var: Some(dir.path().as_os_str().into()), fallback_dirs: vec![] };
            let mut doc = parse(&text).unwrap();
            let before = doc.value().clone();
            let mut changes = vec![];
            doc.sync_providers(&search, &mut changes);
            let once = doc.to_bytes();
            let mut again = ConfigDoc::parse(Path::new("/c"), &once).unwrap();
            let mut changes2 = vec![];
            again.sync_providers(&search, &mut changes2);
            prop_assert!(changes2.is_empty(), "second sync changed {:?}", changes2);
            prop_assert!(!again.changed());
            // Unknown keys survive, in order.
            let keys: Vec<_> = before.keys().collect();
            let after: Vec<_> = doc.value().keys().filter(|k| before.contains_key(*k)).collect();
            prop_assert_eq!(keys, after);
            prop_assert_eq!(&doc.value()["history"], &json!([1]));
            for p in PROVIDERS {
                match doc.intent(p) {
                    Intent::Disabled => prop_assert!(doc.value()[p.command_key].is_null()),
                    Intent::Manual => prop_assert_eq!(&doc.value()[p.command_key], &before[p.command_key]),
                    Intent::Auto => {
                        let had = &before[p.command_key];
                        if doc.resolve(p, &search).path().is_none() {
                            prop_assert_eq!(&doc.value()[p.command_key], had);
                        }
                    }
                }
            }
        }
    }
}
