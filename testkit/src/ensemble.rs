//! A ZooKeeper ensemble on loopback.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::fourlw::Mode;
use crate::install::ZkInstall;
use crate::server::{Prepare, Probe, Role, ZkServer, ZkServerBuilder, POLL, START_ATTEMPTS};
use crate::util::{poll, reserve_port, TempDir};

const LOG_TAIL_LINES: usize = 12;

/// A ZooKeeper ensemble of real servers (`QuorumPeerMain` JVMs) on
/// `127.0.0.1`, each with its own client, quorum and election port.
///
/// [`ZkEnsemble::start`] returns once every member serves and exactly one is
/// the leader. Members are indexed from 0 (member `i` has `myid` `i + 1`).
/// Each member is a [`ZkServer`] ([`member`](Self::member),
/// [`members`](Self::members)): stop, kill, restart or pause it there. A paused
/// leader is abandoned by its followers after `syncLimit` ticks (3 s by
/// default). Dropping the ensemble kills every member and removes the directory.
#[derive(Debug)]
pub struct ZkEnsemble {
    members: Vec<ZkServer>,
    // Dropped after the members.
    root: TempDir,
}

impl ZkEnsemble {
    /// Starts an ensemble of `size` members with default settings (use
    /// [`ZkServer::builder`]`.start_ensemble(size)` to change them) and waits
    /// until it is ready. `size` 3 is the usual choice; 1 gives a single
    /// quorum peer (not a standalone server).
    pub fn start(size: usize) -> Result<ZkEnsemble> {
        ZkServerBuilder::default().start_ensemble(size)
    }

    /// A builder to change the settings; finish with
    /// [`start_ensemble`](ZkServerBuilder::start_ensemble).
    pub fn builder() -> ZkServerBuilder {
        ZkServerBuilder::default()
    }

    /// What every ensemble start checks first (`no_tls` says why TLS is refused),
    /// and the installation and startup timeout it starts with.
    pub(crate) fn checked(
        builder: &ZkServerBuilder,
        size: usize,
        no_tls: &str,
    ) -> Result<(ZkInstall, Duration)> {
        if size == 0 {
            return Err(Error::InvalidConfig(
                "an ensemble needs at least 1 member".into(),
            ));
        }
        builder.validate()?;
        if builder.has_tls() {
            return Err(Error::InvalidConfig(no_tls.into()));
        }
        Ok((ZkInstall::locate()?, builder.ensemble_startup_timeout()))
    }

    pub(crate) fn start_with(builder: ZkServerBuilder, size: usize) -> Result<ZkEnsemble> {
        let no_tls =
            "tls: standalone servers only (ensemble members would need a secure port each)";
        let (install, timeout) = ZkEnsemble::checked(&builder, size, no_tls)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let root = TempDir::new("zk-testkit-ensemble")
                .map_err(|e| Error::io("creating a temporary directory", e))?;
            let mut ports = Vec::with_capacity(size);
            for _ in 0..size {
                ports.push([reserve_port()?, reserve_port()?, reserve_port()?]);
            }
            let servers: Vec<(Ipv4Addr, u16, u16)> = ports
                .iter()
                .map(|[_, quorum, election]| (Ipv4Addr::LOCALHOST, quorum.port(), election.port()))
                .collect();
            let mut members = Vec::with_capacity(size);
            for (i, member_ports) in ports.into_iter().enumerate() {
                let member = ZkServer::prepare(Prepare {
                    builder: &builder,
                    install: &install,
                    role: Role::Member {
                        id: i + 1,
                        servers: servers.clone(),
                    },
                    dir: root.path().join(format!("member-{}", i + 1)),
                    host: Ipv4Addr::LOCALHOST,
                    client_port: member_ports[0].port(),
                    netns: None,
                    secure_port: None,
                    cleanup: root.path().to_path_buf(),
                    startup_timeout: timeout,
                })?;
                members.push(member.owning(None, member_ports.into()));
            }
            match ZkEnsemble::launch(members, root, timeout, attempt < START_ATTEMPTS) {
                Ok(ensemble) => return Ok(ensemble),
                Err(None) => {}
                Err(Some(e)) => return Err(e),
            }
        }
    }

    /// Starts prepared members and waits until they serve with one leader. On
    /// failure the members are killed, and `Err(None)` means that a member lost a
    /// race for a port and `may_retry` allowed another attempt; otherwise the
    /// directory is kept for inspection.
    pub(crate) fn launch(
        members: Vec<ZkServer>,
        root: TempDir,
        timeout: Duration,
        may_retry: bool,
    ) -> std::result::Result<ZkEnsemble, Option<Error>> {
        let spawned = members.iter().try_for_each(ZkServer::spawn);
        let ensemble = ZkEnsemble { members, root };
        match spawned.and_then(|()| ensemble.wait_ready(timeout).map(drop)) {
            Ok(()) => Ok(ensemble),
            Err(e) => {
                let retry = may_retry && ensemble.members.iter().any(ZkServer::lost_port_race);
                let ZkEnsemble { members, mut root } = ensemble;
                drop(members);
                if retry {
                    return Err(None);
                }
                root.keep();
                Err(Some(e))
            }
        }
    }

    /// The connect string listing every member,
    /// `"127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"`.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(ZkServer::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The members, in `myid` order.
    pub fn members(&self) -> &[ZkServer] {
        &self.members
    }

    /// Member `index`, or [`Error::NoSuchMember`].
    pub fn member(&self, index: usize) -> Result<&ZkServer> {
        self.members.get(index).ok_or(Error::NoSuchMember {
            index,
            len: self.members.len(),
        })
    }

    /// Asks every running member (`srvr`) and returns the index of the one
    /// that reports `leader`, if exactly one does.
    pub fn leader_index(&self) -> Option<usize> {
        let leaders: Vec<usize> = self
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_running())
            .filter(|(_, m)| m.srvr().is_ok_and(|mode| mode == Mode::Leader))
            .map(|(i, _)| i)
            .collect();
        match leaders.as_slice() {
            [leader] => Some(*leader),
            _ => None,
        }
    }

    /// Waits until exactly one running member reports `leader`, and returns
    /// its index. The leader only says so once it has a quorum.
    pub fn wait_for_leader(&self, timeout: Duration) -> Result<usize> {
        poll(timeout, POLL, || self.leader_index()).ok_or_else(|| Error::NoLeader {
            timeout,
            detail: self.describe(),
        })
    }

    /// Waits until every running member serves (leader or follower) and
    /// exactly one is the leader; returns the leader's index. Members that
    /// were stopped or killed are not waited for.
    pub fn wait_ready(&self, timeout: Duration) -> Result<usize> {
        let ready = poll(timeout, POLL, || {
            let mut leaders = Vec::new();
            let mut all_serving = true;
            for (i, member) in self.members.iter().enumerate() {
                match member.probe() {
                    Probe::Down => {}
                    Probe::Crashed(status) => return Some(Err(member.exited(status))),
                    // A standalone server (an ensemble of 1 in a NetLab) serves
                    // as its own leader.
                    Probe::Running => match member.srvr() {
                        Ok(Mode::Leader | Mode::Standalone) => leaders.push(i),
                        Ok(mode) if mode.is_serving() => {}
                        _ => all_serving = false,
                    },
                }
            }
            (all_serving && leaders.len() == 1).then(|| Ok(leaders[0]))
        });
        ready.unwrap_or_else(|| {
            Err(Error::StartTimeout {
                what: format!("ZooKeeper ensemble of {}", self.members.len()),
                timeout,
                detail: self.describe(),
            })
        })
    }

    /// One line per member with its state, plus log tails of members that do
    /// not serve.
    fn describe(&self) -> String {
        let mut out = String::new();
        for member in &self.members {
            let (state, serving) = match member.probe() {
                Probe::Down => ("stopped".to_owned(), true),
                Probe::Crashed(status) => (format!("exited ({status})"), false),
                Probe::Running => match member.srvr() {
                    Ok(mode) => (format!("{mode:?}"), mode.is_serving()),
                    Err(e) => (e.to_string(), false),
                },
            };
            let _ = write!(out, "\n  {}: {state}", member.name());
            if !serving {
                let _ = write!(
                    out,
                    "\n    log {}:\n    {}",
                    member.log_path().display(),
                    member.log_tail(LOG_TAIL_LINES).replace('\n', "\n    ")
                );
            }
        }
        out
    }

    /// The directory holding every member's directory.
    pub fn root_dir(&self) -> &std::path::Path {
        self.root.path()
    }
}
