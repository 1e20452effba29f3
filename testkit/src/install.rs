//! Locating a ZooKeeper installation and a Java runtime.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where Debian's `zookeeper` package puts its jars.
pub(crate) const SYSTEM_JAR_DIR: &str = "/usr/share/java";

/// Jars a ZooKeeper 3.8 server cannot start without.
const REQUIRED_JARS: &[&str] = &["zookeeper", "zookeeper-jute", "slf4j-api"];

/// Jars the server uses at runtime; included when present.
const RUNTIME_JARS: &[&str] = &[
    "netty-handler",
    "netty-common",
    "netty-buffer",
    "netty-transport",
    "netty-codec",
    "netty-resolver",
    "netty-transport-native-epoll",
    "netty-transport-native-unix-common",
    "metrics-core",
    "commons-cli",
    "snappy-java",
    "commons-io",
];

/// SLF4J bindings in order of preference. `slf4j-simple` writes the server log
/// to stderr (which the testkit captures into a file, so that startup failures
/// can show it); `slf4j-nop` silences it.
const SLF4J_BINDINGS: &[&str] = &["slf4j-simple", "slf4j-nop", "slf4j-jdk14"];

/// A ZooKeeper server classpath plus the `java` to run it with, found as the
/// crate documentation says ("Finding ZooKeeper").
#[derive(Debug)]
pub(crate) struct ZkInstall {
    java: PathBuf,
    classpath: String,
}

impl ZkInstall {
    pub(crate) fn locate() -> Result<ZkInstall> {
        Self::locate_with(&|key| std::env::var_os(key), Path::new(SYSTEM_JAR_DIR))
    }

    pub(crate) fn java(&self) -> &Path {
        &self.java
    }

    pub(crate) fn classpath(&self) -> &str {
        &self.classpath
    }

    /// [`ZkInstall::locate`] with the environment and the system jar directory
    /// injected (for tests).
    pub(crate) fn locate_with(
        env: &dyn Fn(&str) -> Option<OsString>,
        system_dir: &Path,
    ) -> Result<ZkInstall> {
        let non_empty = |key: &str| env(key).filter(|v| !v.is_empty());
        let classpath = if let Some(cp) = non_empty("ZOOKEEPER_CLASSPATH") {
            cp.into_string().map_err(|_| Error::NotInstalled {
                searched: "ZOOKEEPER_CLASSPATH is not valid UTF-8".into(),
            })?
        } else if let Some(home) = non_empty("ZOOKEEPER_HOME") {
            home_classpath(Path::new(&home))?
        } else {
            system_classpath(system_dir)?
        };
        Ok(ZkInstall {
            java: find_java(env)?,
            classpath,
        })
    }
}

pub(crate) fn join_classpath(entries: &[PathBuf]) -> String {
    let entries: Vec<_> = entries.iter().map(|e| e.to_string_lossy()).collect();
    entries.join(":")
}

/// `dir/<name>.jar` for each of `names`, and the names of those missing.
pub(crate) fn jars(dir: &Path, names: &[&'static str]) -> (Vec<PathBuf>, Vec<&'static str>) {
    let paths: Vec<PathBuf> = names.iter().map(|n| dir.join(format!("{n}.jar"))).collect();
    let missing = (names.iter().zip(&paths))
        .filter(|(_, path)| !path.is_file())
        .map(|(name, _)| *name)
        .collect();
    (paths, missing)
}

fn system_classpath(dir: &Path) -> Result<String> {
    let jar = |name: &str| dir.join(format!("{name}.jar"));
    let (mut entries, missing) = jars(dir, REQUIRED_JARS);
    if !missing.is_empty() {
        let mut searched = format!(
            "ZOOKEEPER_CLASSPATH and ZOOKEEPER_HOME are unset, and {} lacks",
            dir.display()
        );
        for name in &missing {
            let _ = write!(searched, " {name}.jar");
        }
        return Err(Error::NotInstalled { searched });
    }
    entries.extend(
        RUNTIME_JARS
            .iter()
            .map(|name| jar(name))
            .filter(|path| path.is_file()),
    );
    if let Some(binding) = SLF4J_BINDINGS
        .iter()
        .map(|name| jar(name))
        .find(|path| path.is_file())
    {
        entries.push(binding);
    }
    Ok(join_classpath(&entries))
}

fn jars_in(dir: &Path) -> Vec<PathBuf> {
    let mut jars: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension() == Some(OsStr::new("jar")) && path.is_file())
        .collect();
    jars.sort();
    jars
}

fn home_classpath(home: &Path) -> Result<String> {
    let mut jars = jars_in(home);
    jars.extend(jars_in(&home.join("lib")));
    let has_server_jar = jars.iter().any(|jar| {
        jar.file_name()
            .and_then(OsStr::to_str)
            .is_some_and(|name| name.starts_with("zookeeper") && !name.contains("jute"))
    });
    if !has_server_jar {
        return Err(Error::NotInstalled {
            searched: format!(
                "ZOOKEEPER_HOME={} has no zookeeper*.jar in it or in its lib/",
                home.display()
            ),
        });
    }
    let mut entries = Vec::with_capacity(jars.len() + 1);
    let conf = home.join("conf");
    if conf.is_dir() {
        // logback.xml / log4j.properties of the distribution.
        entries.push(conf);
    }
    entries.extend(jars);
    Ok(join_classpath(&entries))
}

fn find_java(env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    if let Some(home) = env("JAVA_HOME").filter(|v| !v.is_empty()) {
        let java = Path::new(&home).join("bin").join("java");
        if java.is_file() {
            return Ok(java);
        }
        return Err(Error::JavaNotFound {
            searched: format!("JAVA_HOME is set but {} does not exist", java.display()),
        });
    }
    let path = env("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let java = dir.join("java");
        if java.is_file() {
            return Ok(java);
        }
    }
    Err(Error::JavaNotFound {
        searched: format!("JAVA_HOME is unset and no `java` on PATH ({path:?})"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::TempDir;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |key| map.get(key).cloned()
    }

    fn fake_java(dir: &Path) -> String {
        let bin = dir.join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("java"), "").unwrap();
        bin.to_string_lossy().into_owned()
    }

    #[test]
    fn missing_install_is_a_clear_error() {
        let tmp = TempDir::new("zk-testkit-unit").unwrap();
        let path = fake_java(tmp.path());
        let err = ZkInstall::locate_with(&env_of(&[("PATH", &path)]), tmp.path()).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::NotInstalled { .. }), "{err:?}");
        assert!(msg.contains("scripts/install-zookeeper.sh"), "{msg}");
        assert!(msg.contains("apt-get install"), "{msg}");
        assert!(msg.contains("ZOOKEEPER_HOME"), "{msg}");
        assert!(msg.contains("ZOOKEEPER_CLASSPATH"), "{msg}");
        assert!(msg.contains("zookeeper.jar"), "{msg}");
    }

    #[test]
    fn system_jars_are_picked_in_order() {
        let tmp = TempDir::new("zk-testkit-unit").unwrap();
        let path = fake_java(tmp.path());
        for name in [
            "zookeeper",
            "zookeeper-jute",
            "slf4j-api",
            "netty-common",
            "slf4j-nop",
        ] {
            fs::write(tmp.path().join(format!("{name}.jar")), "").unwrap();
        }
        let install = ZkInstall::locate_with(&env_of(&[("PATH", &path)]), tmp.path()).unwrap();
        let d = tmp.path().display();
        assert_eq!(
            install.classpath(),
            format!(
                "{d}/zookeeper.jar:{d}/zookeeper-jute.jar:{d}/slf4j-api.jar:{d}/netty-common.jar:{d}/slf4j-nop.jar"
            )
        );
        assert_eq!(install.java(), tmp.path().join("bin/java"));
    }

    #[test]
    fn env_vars_take_precedence_and_are_checked() {
        let tmp = TempDir::new("zk-testkit-unit").unwrap();
        let path = fake_java(tmp.path());
        let home = tmp.path().join("zk");
        fs::create_dir_all(home.join("lib")).unwrap();
        fs::create_dir_all(home.join("conf")).unwrap();

        let home_str = home.to_string_lossy().into_owned();
        let env = env_of(&[("PATH", &path), ("ZOOKEEPER_HOME", &home_str)]);
        let err = ZkInstall::locate_with(&env, tmp.path()).unwrap_err();
        assert!(err.to_string().contains("ZOOKEEPER_HOME="), "{err}");

        fs::write(home.join("lib/zookeeper-3.9.2.jar"), "").unwrap();
        fs::write(home.join("lib/logback-core-1.2.13.jar"), "").unwrap();
        let install = ZkInstall::locate_with(&env, tmp.path()).unwrap();
        assert_eq!(
            install.classpath(),
            format!(
                "{h}/conf:{h}/lib/logback-core-1.2.13.jar:{h}/lib/zookeeper-3.9.2.jar",
                h = home.display()
            )
        );

        let env = env_of(&[
            ("PATH", &path),
            ("ZOOKEEPER_HOME", &home_str),
            ("ZOOKEEPER_CLASSPATH", "/x/a.jar:/x/b.jar"),
        ]);
        let install = ZkInstall::locate_with(&env, tmp.path()).unwrap();
        assert_eq!(install.classpath(), "/x/a.jar:/x/b.jar");
    }

    #[test]
    fn missing_java_is_a_clear_error() {
        let tmp = TempDir::new("zk-testkit-unit").unwrap();
        let env = env_of(&[
            ("ZOOKEEPER_CLASSPATH", "/x/a.jar"),
            ("PATH", "/nonexistent"),
        ]);
        let err = ZkInstall::locate_with(&env, tmp.path()).unwrap_err();
        assert!(matches!(err, Error::JavaNotFound { .. }), "{err:?}");
        assert!(err.to_string().contains("JAVA_HOME"), "{err}");
    }
}
