//! Unit tests of `digest`.

use super::*;

#[test]
fn the_standards_test_vectors() {
    assert_eq!(
        hex(&sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        hex(&sha256(
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        )),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
    assert_eq!(
        hex(&sha256(&vec![b'a'; 1_000_000])),
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    );
    // Lengths around the padding boundary (55, 56, 64 bytes).
    assert_eq!(
        hex(&sha256(&[b'a'; 55])),
        "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"
    );
    assert_eq!(
        hex(&sha256(&[b'a'; 56])),
        "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"
    );
    assert_eq!(
        hex(&sha256(&[b'a'; 64])),
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"
    );
}

#[test]
fn a_fingerprint_matches_its_value_only_and_holds_no_part_of_it() {
    let secret = "http://user:hunter2@proxy.corp:8080";
    let a = fingerprint(secret);
    let b = fingerprint(secret);
    assert_ne!(a, b, "each fingerprint has its own salt");
    assert!(matches(&a, secret) && matches(&b, secret));
    assert!(!matches(&a, "http://user:hunter3@proxy.corp:8080"));
    assert!(!matches("garbage", secret));
    assert!(!a.contains("hunter2") && !a.contains("proxy"));
}
