//! Starts a standalone ZooKeeper (lock-testkit's settings) and keeps it until
//! stdin closes or the process is killed: for measuring by hand.
//!
//! `cargo run -p lock-testkit --example serve` prints the connect string on its
//! first line.

#![forbid(unsafe_code)]

use std::io::Read;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = lock_testkit::ZkServer::start()?;
    println!("{}", server.connect_string());
    // Returns when stdin reaches its end: `serve < /dev/null` stops at once,
    // `serve <&-` in a pipeline lives as long as the writer.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(server);
    Ok(())
}
