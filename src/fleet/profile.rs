//! The managed login-items profile (`oyster mdm profile`): a `.mobileconfig` with Apple's
//! `com.apple.servicemanagement` payload whose one rule matches every stack's launchd label
//! (`com.oysterun.host`, `com.oysterun.host.NAME`), constrained to oyster's Developer ID team
//! when the binary has one. docs/fleet.md has Apple's sources and the effects.

use plist::{Dictionary, Value};

/// The profile's `PayloadIdentifier`: fixed, so a profile issued again (by any version, with
/// any organization) replaces the installed one instead of adding a second.
pub const PROFILE_IDENTIFIER: &str = "com.oysterun.oyster.managed-login-items";
/// The `com.apple.servicemanagement` payload's identifier inside it.
pub const PAYLOAD_IDENTIFIER: &str = "com.oysterun.oyster.managed-login-items.servicemanagement";
/// The label of the `.pkg`'s login step (packaging/pkg/com.oysterun.oyster.login.plist).
pub const LOGIN_STEP_LABEL: &str = "com.oysterun.oyster.login";
/// Apple's payload type for Managed Login Items (macOS 13+).
pub const PAYLOAD_TYPE: &str = "com.apple.servicemanagement";

/// What the profile is made from.
pub struct ProfileInputs<'a> {
    /// The launchd label every stack's label starts with.
    pub label_prefix: &'a str,
    /// oyster's Developer ID team, when it has one.
    pub team_id: Option<&'a str>,
    /// `PayloadOrganization`, when given.
    pub organization: Option<&'a str>,
}

/// The `PayloadUUID` of an identifier: a version-5 UUID of it, stable across runs.
pub fn payload_uuid(identifier: &str) -> String {
    super::uuid::v5_dns(identifier)
}

/// Refuses an organization name a plist (XML 1.0) cannot carry or a person could not read.
pub fn check_organization(name: &str) -> Result<(), BadOrganization> {
    if name.trim().is_empty() {
        return Err(BadOrganization::Empty);
    }
    if name.chars().count() > 200 {
        return Err(BadOrganization::TooLong);
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(BadOrganization::Control(c));
    }
    // XML 1.0 (§2.2, `Char`) has no U+FFFE or U+FFFF (nor surrogates, which a Rust string
    // cannot hold): a profile holding one is not XML, and macOS refuses it.
    if let Some(c) = name.chars().find(|c| !xml_char(*c)) {
        return Err(BadOrganization::NotXml(c));
    }
    Ok(())
}

/// Why `--organization` cannot be the profile's. Words: `commands/words/fleet.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadOrganization {
    Empty,
    /// Longer than 200 characters.
    TooLong,
    /// Holds this control character.
    Control(char),
    /// Holds a character XML 1.0 cannot carry.
    NotXml(char),
}

/// Whether XML 1.0 can carry `c` (its `Char` production: tab, line feed, carriage return,
/// U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF).
pub fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// The profile as a plist value.
pub fn build(inputs: &ProfileInputs<'_>) -> Value {
    let mut rule = Dictionary::new();
    rule.insert("RuleType".into(), "LabelPrefix".into());
    rule.insert("RuleValue".into(), inputs.label_prefix.into());
    if let Some(team) = inputs.team_id {
        rule.insert("TeamIdentifier".into(), team.into());
    }
    rule.insert(
        "Comment".into(),
        "The Oysterun Host LaunchAgents oyster installs (every stack)".into(),
    );

    // The .pkg's login step runs /bin/sh (Apple's, no team), so a team would never match it;
    // its exact label, in root-owned /Library/LaunchAgents, is the rule.
    let mut login = Dictionary::new();
    login.insert("RuleType".into(), "Label".into());
    login.insert("RuleValue".into(), LOGIN_STEP_LABEL.into());
    login.insert(
        "Comment".into(),
        "The oyster package's login step (regenerates each user's LaunchAgent once per version)"
            .into(),
    );

    let mut payload = Dictionary::new();
    payload.insert("PayloadType".into(), PAYLOAD_TYPE.into());
    payload.insert("PayloadVersion".into(), 1.into());
    payload.insert("PayloadIdentifier".into(), PAYLOAD_IDENTIFIER.into());
    payload.insert(
        "PayloadUUID".into(),
        payload_uuid(PAYLOAD_IDENTIFIER).into(),
    );
    payload.insert(
        "PayloadDisplayName".into(),
        "Oysterun Host login items".into(),
    );
    payload.insert(
        "Rules".into(),
        Value::Array(vec![Value::Dictionary(rule), Value::Dictionary(login)]),
    );

    let mut top = Dictionary::new();
    top.insert("PayloadType".into(), "Configuration".into());
    top.insert("PayloadVersion".into(), 1.into());
    top.insert("PayloadIdentifier".into(), PROFILE_IDENTIFIER.into());
    top.insert(
        "PayloadUUID".into(),
        payload_uuid(PROFILE_IDENTIFIER).into(),
    );
    top.insert("PayloadScope".into(), "System".into());
    top.insert(
        "PayloadDisplayName".into(),
        "Oysterun Host (Managed Login Items)".into(),
    );
    top.insert(
        "PayloadDescription".into(),
        "Allows the Oysterun Host LaunchAgents (launchd labels com.oysterun.host*) to run at \
         login without a Background Items alert. Install through MDM (macOS 13 or later)."
            .into(),
    );
    if let Some(org) = inputs.organization {
        top.insert("PayloadOrganization".into(), org.into());
    }
    top.insert(
        "PayloadContent".into(),
        Value::Array(vec![Value::Dictionary(payload)]),
    );
    Value::Dictionary(top)
}

/// The profile as XML plist bytes.
pub fn to_xml(inputs: &ProfileInputs<'_>) -> Result<Vec<u8>, plist::Error> {
    let mut bytes = vec![];
    build(inputs).to_writer_xml(&mut bytes)?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: &Value) -> &Dictionary {
        let top = v.as_dictionary().unwrap();
        let content = top["PayloadContent"].as_array().unwrap();
        let payload = content[0].as_dictionary().unwrap();
        payload["Rules"].as_array().unwrap()[0]
            .as_dictionary()
            .unwrap()
    }

    #[test]
    fn a_team_constrains_the_label_rule_and_none_leaves_the_label_alone() {
        let signed = build(&ProfileInputs {
            label_prefix: "com.oysterun.host",
            team_id: Some("ABCDE12345"),
            organization: None,
        });
        let r = rule(&signed);
        assert_eq!(r["RuleType"].as_string(), Some("LabelPrefix"));
        assert_eq!(r["TeamIdentifier"].as_string(), Some("ABCDE12345"));
        let unsigned = build(&ProfileInputs {
            label_prefix: "com.oysterun.host",
            team_id: None,
            organization: None,
        });
        assert!(!rule(&unsigned).contains_key("TeamIdentifier"));
    }

    #[test]
    fn organization_names_a_plist_cannot_carry_are_refused() {
        assert!(check_organization("Example Inc. & Söhne <IT>").is_ok());
        assert!(check_organization("").is_err());
        assert!(check_organization("  ").is_err());
        assert!(check_organization("a\u{1b}[31m").is_err());
        assert!(check_organization(&"x".repeat(201)).is_err());
        for bad in ["A\u{FFFE}", "A\u{FFFF}"] {
            let why = check_organization(bad).unwrap_err().to_string();
            assert!(why.contains("XML 1.0"), "{why}");
        }
        // Everything else XML 1.0 carries passes: the last BMP character before U+FFFE, a
        // private-use one, and one beyond the BMP.
        assert!(check_organization("A\u{FFFD}\u{E000}\u{1F600}").is_ok());
        assert!(!xml_char('\u{0}') && xml_char('\u{10FFFF}') && xml_char('\t'));
    }
}
