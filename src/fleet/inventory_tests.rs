//! Unit tests of the inventory: problems, summaries and the pieces of each document.

use super::*;

#[test]
fn accounts_are_people_from_the_minimum_uid() {
    // dscl's layout: the name, spaces, the uid.
    let dscl = "_spotlight              89\nalice                   501\ndaemon                  1\nnobody                  -2\nroot                    0\nbob 1026\n";
    assert_eq!(parse_accounts(dscl, 500), [501, 1026]);
    assert_eq!(
        parse_accounts("pat 1000\nnobody 65534\nsys 3\n", 1000),
        [1000]
    );
}

#[test]
fn the_profile_is_named_by_its_whole_identifier() {
    let id = super::super::profile::PROFILE_IDENTIFIER;
    let report = format!(
        "There are 2 configuration profiles installed\n\
         _computerlevel[1] attribute: name: Oysterun Host (Managed Login Items)\n\
         _computerlevel[1] attribute: profileIdentifier: {id}\n\
         _computerlevel[2] attribute: profileIdentifier: com.example.ssh\n"
    );
    assert!(names_profile(&report, id));
    let longer = report.replace(id, &format!("{id}.old"));
    assert!(!names_profile(&longer, id));
    assert!(!names_profile(
        "There are no configuration profiles installed",
        id
    ));
}
