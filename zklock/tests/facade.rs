//! The facade's blocking entry point is the blocking binding. (Its `sim` module
//! handing out the same `LockClient`: the module's doc example.)

#[test]
fn the_blocking_binding_refuses_bad_and_unsupported_options() {
    // Refused before anything is dialled: options lock-client checks for every
    // binding, and TLS, which the blocking binding's crate cannot do.
    let creator_without_credentials =
        zklock::ConnectOptions::new().acl(zklock::NodeAcl::CreatorAll);
    let blocking = zklock::blocking::builder("127.0.0.1:1")
        .options(creator_without_credentials)
        .connect();
    assert!(
        matches!(
            blocking,
            Err(zklock::Error::BadOption { option: "acl", .. })
        ),
        "{blocking:?}"
    );
    let tls = zklock::ConnectOptions::new().tls(zklock::Tls::new("CA"));
    let blocking = zklock::blocking::builder("127.0.0.1:1")
        .options(tls)
        .connect();
    assert!(
        matches!(
            blocking,
            Err(zklock::Error::Unsupported { option: "TLS", .. })
        ),
        "{blocking:?}"
    );
}
