//! The facade's blocking entry point is the blocking binding. (Its `sim` module
//! handing out the same `LockClient`: the module's doc example.)

/// TLS, which the async binding has and the blocking binding's crate cannot do,
/// is refused before anything is dialled. (Options every binding refuses are the
/// conformance suite's, `suite/options.rs`.)
#[test]
fn the_blocking_entry_point_refuses_tls_as_the_blocking_binding_does() {
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
