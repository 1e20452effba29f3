//! The live view of `zklock top`: a full-screen table redrawn when something
//! changes under the root. One persistent recursive watch on the root says so
//! (no polling per lock); refreshes are at most one per [`MIN_REFRESH`], and the
//! ages tick once a second without asking the server.

use super::rows::{self, Row};
use super::table::{self, SortBy};
use crate::ls::now_ms;
use lock_zookeeper_client::zookeeper_client::{AddWatchMode, Client};
use lock_zookeeper_client::{Error, LockClient};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::widgets::{Block, Row as Line, Table};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The least time between two refreshes (a burst of changes is one refresh).
const MIN_REFRESH: Duration = Duration::from_millis(100);
/// How often ages are redrawn when nothing changes.
const TICK: Duration = Duration::from_secs(1);

/// Why the view stopped other than by a key.
pub(crate) enum Failure {
    /// ZooKeeper (or the lock client) failed.
    Zk(Error),
    /// The terminal could not be driven.
    Terminal(std::io::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Zk(e)
    }
}

/// What the keyboard asks for.
enum Key {
    Quit,
    Sort(SortBy),
}

/// Runs the live view until q (or Esc, Ctrl-C) is pressed.
pub(crate) async fn run(
    raw: &Client,
    locks: &LockClient,
    root: &str,
    mut sort: SortBy,
) -> Result<(), Failure> {
    let mut changes = raw
        .watch(root, AddWatchMode::PersistentRecursive)
        .await
        .map_err(|e| Error::Connect(format!("watching {root}: {e}")))?;
    let mut terminal = ratatui::try_init().map_err(Failure::Terminal)?;
    let keys = keyboard();
    let outcome = view(
        &mut terminal,
        raw,
        locks,
        root,
        &mut sort,
        &mut changes,
        keys,
    )
    .await;
    ratatui::restore();
    outcome
}

async fn view(
    terminal: &mut ratatui::DefaultTerminal,
    raw: &Client,
    locks: &LockClient,
    root: &str,
    sort: &mut SortBy,
    changes: &mut lock_zookeeper_client::zookeeper_client::PersistentWatcher,
    mut keys: mpsc::UnboundedReceiver<Key>,
) -> Result<(), Failure> {
    let mut gathered_at = now_ms();
    let mut rows = rows::gather(raw, locks, root, gathered_at).await?;
    let mut last_refresh = Instant::now();
    let mut stale = false;
    loop {
        let mut shown = aged(&rows, now_ms() - gathered_at);
        table::sort(&mut shown, *sort);
        terminal
            .draw(|frame| frame.render_widget(widget(root, *sort, &shown), frame.area()))
            .map_err(Failure::Terminal)?;
        let refresh_at = last_refresh + MIN_REFRESH;
        tokio::select! {
            key = keys.recv() => match key {
                None | Some(Key::Quit) => return Ok(()),
                Some(Key::Sort(by)) => *sort = by,
            },
            _ = changes.changed() => stale = true,
            _ = tokio::time::sleep_until(refresh_at), if stale => {
                gathered_at = now_ms();
                rows = rows::gather(raw, locks, root, gathered_at).await?;
                last_refresh = Instant::now();
                stale = false;
            }
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// `rows` as seen `by_ms` after they were gathered.
fn aged(rows: &[Row], by_ms: i64) -> Vec<Row> {
    let older = |age: Option<i64>| age.map(|a| a + by_ms);
    rows.iter()
        .cloned()
        .map(|mut row| {
            row.longest_wait = older(row.longest_wait);
            row.longest_hold = older(row.longest_hold);
            for holder in &mut row.holders {
                holder.1 = older(holder.1);
            }
            row
        })
        .collect()
}

/// The table, deadlocked rows in bold red, with the summary and keys as title.
fn widget<'a>(root: &str, sort: SortBy, rows: &[Row]) -> Table<'a> {
    let mut cells = table::cells(rows);
    let header = Line::new(cells.remove(0)).bold();
    let widths: Vec<Constraint> = (0..7)
        .map(|i| {
            let widest = cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0);
            Constraint::Length(widest.max(12) as u16)
        })
        .collect();
    let lines = cells.into_iter().zip(rows).map(|(cells, row)| {
        let line = Line::new(cells);
        if row.deadlocked {
            line.style(Style::new().red().add_modifier(Modifier::BOLD))
        } else {
            line
        }
    });
    let summary = table::summary(root, rows);
    let title = format!(" {summary} | sort: {sort:?} (w wait, h hold, p path) | q quit ",);
    Table::new(lines, widths)
        .header(header)
        .block(Block::bordered().title(title))
}

/// Keys, read on a thread of their own (crossterm's reads block).
fn keyboard() -> mpsc::UnboundedReceiver<Key> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || loop {
        let key = match event::read() {
            Ok(Event::Key(key)) => key,
            Ok(_) => continue,
            // No terminal to read: only a signal ends the view.
            Err(_) => return,
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        let ctrl_c =
            key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        let sent = match key.code {
            _ if ctrl_c => tx.send(Key::Quit),
            KeyCode::Char('q') | KeyCode::Esc => tx.send(Key::Quit),
            KeyCode::Char('w') => tx.send(Key::Sort(SortBy::Wait)),
            KeyCode::Char('h') => tx.send(Key::Sort(SortBy::Hold)),
            KeyCode::Char('p') => tx.send(Key::Sort(SortBy::Path)),
            _ => Ok(()),
        };
        if sent.is_err() {
            return;
        }
    });
    rx
}
