//! Java peers for interop and partition tests: Debian's Curator 5.4 jars, and a
//! peer's source compiled with `javac` once per source text.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::install::{jars, join_classpath, SYSTEM_JAR_DIR};
use crate::util::build_once;

/// The jars (names in `/usr/share/java`) Curator 5.4's locks, latches and
/// elections need: Debian's `libcurator-recipes-java` and its dependencies.
const CURATOR_JARS: &[&str] = &[
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
];

fn peer_error(what: String) -> Error {
    Error::JavaPeer { what }
}

/// The classpath of [`CURATOR_JARS`] (plus `slf4j-nop`, if there, to keep slf4j
/// quiet), or [`Error::JavaPeer`] naming the missing jars and the fix.
fn curator_classpath() -> Result<String> {
    let dir = Path::new(SYSTEM_JAR_DIR);
    let (mut entries, missing) = jars(dir, CURATOR_JARS);
    if !missing.is_empty() {
        return Err(peer_error(format!(
            "Curator 5.4 and ZooKeeper jars missing from {}: {missing:?}; install Debian's \
             libcurator-recipes-java (scripts/test.sh does)",
            dir.display()
        )));
    }
    let quiet = dir.join("slf4j-nop.jar");
    if quiet.is_file() {
        entries.push(quiet);
    }
    Ok(join_classpath(&entries))
}

/// Compiles `source`, the Java class `class`, against `classpath` once per
/// source text ([`build_once`] under `base`); returns the directory (for the
/// classpath). `javac` is `$JAVA_HOME/bin/javac` or the one on `PATH`.
fn compile_java(source: &str, class: &str, classpath: &str, base: &Path) -> Result<PathBuf> {
    let done = |dir: &Path| dir.join(format!("{class}.class")).is_file();
    build_once(base, class, source, done, |work| {
        let file = work.join(format!("{class}.java"));
        std::fs::write(&file, source)
            .map_err(|e| Error::io(format!("writing {}", file.display()), e))?;
        let javac = match std::env::var_os("JAVA_HOME").filter(|v| !v.is_empty()) {
            Some(home) => Path::new(&home).join("bin").join("javac"),
            None => PathBuf::from("javac"),
        };
        let output = Command::new(&javac)
            .args(["-nowarn", "-encoding", "UTF-8", "-d"])
            .arg(work)
            .arg("-cp")
            .arg(classpath)
            .arg(&file)
            .output()
            .map_err(|e| {
                peer_error(format!(
                    "running {} to build {class}: {e}; install a JDK (Debian: \
                     openjdk-17-jdk-headless; scripts/test.sh does)",
                    javac.display()
                ))
            })?;
        if !output.status.success() {
            return Err(peer_error(format!(
                "javac failed on {class} ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        Ok(())
    })
}

/// A Curator peer ready to run: `source` (class `class`) compiled under
/// `build_dir` against Debian's Curator 5.4 jars; returns the `java` executable
/// (the ZooKeeper servers') and the full classpath.
pub fn curator_peer(source: &str, class: &str, build_dir: &Path) -> Result<(PathBuf, String)> {
    let jars = curator_classpath()?;
    let classes = compile_java(source, class, &jars, build_dir)?;
    let java = crate::install::ZkInstall::locate()?.java().to_path_buf();
    Ok((java, format!("{}:{jars}", classes.display())))
}
