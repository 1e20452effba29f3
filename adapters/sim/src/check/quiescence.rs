//! What is checked once faults stop: acquisitions that never ended, and lock nodes
//! left that their owner does not know about.

use super::*;

impl Checker {
    /// Acquisitions that have not ended, with their lock path.
    pub fn unfinished(&self) -> Vec<(Key, String)> {
        self.tracks
            .iter()
            .filter(|(_, t)| t.phase != Phase::Ended)
            .map(|(k, t)| (*k, t.path.clone()))
            .collect()
    }

    /// Every lock path ever used.
    pub fn lock_paths(&self) -> BTreeSet<String> {
        self.tracks
            .values()
            .filter(|t| t.recipe.is_some())
            .map(|t| t.path.clone())
            .collect()
    }

    /// Orphans: participant nodes under a lock path whose owner is not a client's
    /// current session with an unfinished acquisition on that path.
    pub fn orphans(&self, model: &ZkModel, sessions: &[(ClientId, Option<i64>)]) -> Vec<String> {
        let mut out = Vec::new();
        // Every directory participants of a lock path create nodes in: the path,
        // and the queues and lease pools of semaphores in peers' layouts on it.
        let mut dirs: BTreeSet<(String, String)> = BTreeSet::new();
        for t in self.tracks.values().filter(|t| t.recipe.is_some()) {
            dirs.insert((t.path.clone(), t.path.clone()));
            if let Some(pool) = lease_dir(t) {
                let mutex = semaphore_mutex_dir(t.scheme, &t.path).expect("a peer layout");
                dirs.insert((t.path.clone(), pool));
                dirs.insert((t.path.clone(), mutex));
            }
        }
        for (path, dir) in dirs {
            for name in model.children(&dir).unwrap_or_default() {
                if parse_name(&name).is_none() && parse_kazoo_lease(&name).is_none() {
                    continue;
                }
                let node = format!("{dir}/{name}");
                let owner = model.stat(&node).map(|s| s.ephemeral_owner).unwrap_or(0);
                let client = sessions
                    .iter()
                    .find(|(_, s)| *s == Some(owner))
                    .map(|(c, _)| *c);
                let known = client.is_some_and(|c| {
                    self.tracks.iter().any(|((tc, _), t)| {
                        *tc == c && t.path == path && t.recipe.is_some() && t.phase != Phase::Ended
                    })
                });
                if !known {
                    out.push(format!("{node} (owner {owner:#x})"));
                }
            }
        }
        out
    }
}
