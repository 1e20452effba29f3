//! The live view of `zklock top`: a full-screen table kept current from one
//! persistent recursive watch on the root, which names each node created,
//! deleted or changed under it. Only the lock directories named are read again
//! (never every lock), [`COALESCE`] after the first notification so that a burst
//! is one refresh, and at most one refresh per [`MIN_REFRESH`]. Ages tick once a
//! second from the creation times, without asking the server; deadlocks are
//! found in memory among the listings kept. After a reconnection everything is
//! read again: notifications may have been lost while disconnected.
//!
//! One lock can be followed into its `zklock ls` view (Enter), kept current the
//! same way.

use super::listing::Listing;
use super::rows::Row;
use super::table::{self, SortBy};
use crate::ls::text_view;
use crate::render::now_ms;
use lock_zookeeper_client::zookeeper_client::{
    AddWatchMode, Client, EventType, PersistentWatcher, SessionState,
};
use lock_zookeeper_client::{Error, LockClient, Participants};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::Line as TextLine;
use ratatui::widgets::{Block, Paragraph, Row as Line, Table};
use ratatui::Frame;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

/// The least time between two refreshes.
const MIN_REFRESH: Duration = Duration::from_millis(100);
/// How long a refresh waits after the first notification for more of a burst.
const COALESCE: Duration = Duration::from_millis(10);
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

/// A key the view acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Quit,
    Sort(SortBy),
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    /// Esc: back from a followed lock, else quit.
    Esc,
    Backspace,
}

/// Runs the live view until q (or Esc on the table, Ctrl-C) is pressed.
pub(crate) async fn run(
    raw: &Client,
    locks: &LockClient,
    root: &str,
    sort: SortBy,
) -> Result<(), Failure> {
    let changes = raw
        .watch(root, AddWatchMode::PersistentRecursive)
        .await
        .map_err(|e| crate::raw::listing_failed(format!("watching {root} failed"), Some(e)))?;
    let listing = Listing::read(raw, locks, root).await?;
    let mut terminal = ratatui::try_init().map_err(Failure::Terminal)?;
    let view = View {
        root: root.to_owned(),
        sort,
        selected: None,
        offset: 0,
        page: 1,
        following: None,
    };
    let outcome = live(
        &mut terminal,
        raw,
        locks,
        listing,
        view,
        changes,
        keyboard(),
    )
    .await;
    ratatui::restore();
    outcome
}

/// What the notifications since the last refresh ask to read again.
#[derive(Default)]
struct Stale {
    dirs: BTreeSet<String>,
    everything: bool,
    since: Option<Instant>,
}

async fn live(
    terminal: &mut ratatui::DefaultTerminal,
    raw: &Client,
    locks: &LockClient,
    mut listing: Listing,
    mut view: View,
    mut changes: PersistentWatcher,
    mut keys: mpsc::UnboundedReceiver<Key>,
) -> Result<(), Failure> {
    let mut stale = Stale::default();
    let mut last_refresh = Instant::now();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut redraw = true;
    loop {
        if redraw {
            terminal
                .draw(|frame| view.draw(frame, &listing))
                .map_err(Failure::Terminal)?;
            redraw = false;
        }
        let refresh_at = stale
            .since
            .map(|since| (since + COALESCE).max(last_refresh + MIN_REFRESH));
        tokio::select! {
            key = keys.recv() => match key {
                None => return Ok(()),
                Some(key) => {
                    if view.on_key(key, &listing) {
                        return Ok(());
                    }
                    redraw = true;
                }
            },
            event = changes.changed() => {
                match event.event_type {
                    EventType::Session => match event.session_state {
                        SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                            stale.everything = true;
                        }
                        SessionState::Disconnected => {}
                        ended => {
                            let how = match ended {
                                SessionState::Expired => "expired",
                                SessionState::AuthFailed => "its credentials were refused",
                                SessionState::Closed => "was closed",
                                _ => "ended",
                            };
                            let what = format!("the listing session of {} {how}", view.root);
                            return Err(crate::raw::listing_failed(what, None).into());
                        }
                    },
                    _ => match listing.touched(&event.path) {
                        Some(dirs) => stale.dirs.extend(dirs),
                        None => stale.everything = true,
                    },
                }
                if (stale.everything || !stale.dirs.is_empty()) && stale.since.is_none() {
                    stale.since = Some(Instant::now());
                }
            }
            _ = tokio::time::sleep_until(refresh_at.unwrap_or_else(Instant::now)), if refresh_at.is_some() => {
                let stale = std::mem::take(&mut stale);
                if stale.everything {
                    listing.read_all(raw, locks).await?;
                } else {
                    listing.reread(locks, stale.dirs).await?;
                }
                last_refresh = Instant::now();
                redraw = true;
            }
            _ = tick.tick() => redraw = true,
        }
    }
}

/// What the screen shows and where the selection is.
struct View {
    root: String,
    sort: SortBy,
    /// The selected lock (the first row when none).
    selected: Option<String>,
    /// The first row shown.
    offset: usize,
    /// How many rows the table showed last.
    page: usize,
    /// The lock followed into its `ls` view.
    following: Option<String>,
}

impl View {
    /// Acts on `key`; `true` to quit.
    fn on_key(&mut self, key: Key, listing: &Listing) -> bool {
        if self.following.is_some() {
            match key {
                Key::Quit => return true,
                Key::Esc | Key::Backspace => self.following = None,
                _ => {}
            }
            return false;
        }
        let rows = self.sorted(listing);
        let at = self.position(&rows);
        let last = rows.len().saturating_sub(1);
        let go = match key {
            Key::Quit | Key::Esc => return true,
            Key::Sort(by) => {
                self.sort = by;
                None
            }
            Key::Up => Some(at.saturating_sub(1)),
            Key::Down => Some((at + 1).min(last)),
            Key::PageUp => Some(at.saturating_sub(self.page)),
            Key::PageDown => Some((at + self.page).min(last)),
            Key::Home => Some(0),
            Key::End => Some(last),
            Key::Enter => {
                self.following = rows.get(at).map(|r| r.path.clone());
                None
            }
            Key::Backspace => None,
        };
        if let Some(row) = go.and_then(|i| rows.get(i)) {
            self.selected = Some(row.path.clone());
        }
        false
    }

    fn sorted<'a>(&self, listing: &'a Listing) -> Vec<&'a Row> {
        let mut rows = listing.rows();
        table::sort(&mut rows, self.sort);
        rows
    }

    /// Where the selected lock is among `rows` (the first row when it is gone).
    fn position(&self, rows: &[&Row]) -> usize {
        let selected = self.selected.as_deref();
        rows.iter()
            .position(|r| Some(r.path.as_str()) == selected)
            .unwrap_or(0)
    }

    fn draw(&mut self, frame: &mut Frame, listing: &Listing) {
        let area = frame.area();
        match self.following.clone() {
            Some(path) => self.draw_lock(frame, area, listing, &path),
            None => self.draw_table(frame, area, listing),
        }
    }

    /// The table, only the rows that fit made into cells: deadlocked rows in
    /// bold red, the selected one in reverse video; the summary and keys as title.
    fn draw_table(&mut self, frame: &mut Frame, area: Rect, listing: &Listing) {
        let rows = self.sorted(listing);
        let at = self.position(&rows);
        // Two borders and the header.
        self.page = usize::from(area.height.saturating_sub(3)).max(1);
        if at < self.offset {
            self.offset = at;
        } else if at >= self.offset + self.page {
            self.offset = at + 1 - self.page;
        }
        self.offset = self.offset.min(rows.len().saturating_sub(self.page));
        let shown = &rows[self.offset..rows.len().min(self.offset + self.page)];
        let mut cells = table::cells(shown, now_ms());
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
        let lines = cells
            .into_iter()
            .zip(shown)
            .enumerate()
            .map(|(i, (cells, row))| {
                let mut style = Style::new();
                if row.deadlocked {
                    style = style.red().add_modifier(Modifier::BOLD);
                }
                if self.offset + i == at {
                    style = style.add_modifier(Modifier::REVERSED);
                }
                Line::new(cells).style(style)
            });
        let summary = table::summary(&self.root, &rows);
        let title = format!(
            " {summary} | sort: {:?} (w h p) | j/k Enter: follow | q quit ",
            self.sort
        );
        let widget = Table::new(lines, widths)
            .header(header)
            .block(Block::bordered().title(title));
        frame.render_widget(widget, area);
    }

    /// The followed lock's `zklock ls` view.
    fn draw_lock(&self, frame: &mut Frame, area: Rect, listing: &Listing, path: &str) {
        let nobody = Participants::default();
        let who = listing.participants(path).unwrap_or(&nobody);
        let (table, notes) = text_view(who, path, now_ms());
        let mut lines: Vec<TextLine> = table.lines().map(|l| TextLine::raw(l.to_owned())).collect();
        if listing.deadlocked(path) {
            let note = format!(
                "DEADLOCK: in a deadlock (zklock deadlocks {} shows the cycle)",
                self.root
            );
            lines.push(TextLine::raw(note).red().bold());
        }
        lines.extend(notes.into_iter().map(TextLine::raw));
        let title = format!(" zklock ls {path} | Esc back | q quit ");
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(title)),
            area,
        );
    }
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
        let mapped = match key.code {
            _ if ctrl_c => Some(Key::Quit),
            KeyCode::Char('q') => Some(Key::Quit),
            KeyCode::Esc => Some(Key::Esc),
            KeyCode::Backspace => Some(Key::Backspace),
            KeyCode::Enter => Some(Key::Enter),
            KeyCode::Up | KeyCode::Char('k') => Some(Key::Up),
            KeyCode::Down | KeyCode::Char('j') => Some(Key::Down),
            KeyCode::PageUp => Some(Key::PageUp),
            KeyCode::PageDown => Some(Key::PageDown),
            KeyCode::Home => Some(Key::Home),
            KeyCode::End => Some(Key::End),
            KeyCode::Char('w') => Some(Key::Sort(SortBy::Wait)),
            KeyCode::Char('h') => Some(Key::Sort(SortBy::Hold)),
            KeyCode::Char('p') => Some(Key::Sort(SortBy::Path)),
            _ => None,
        };
        if mapped.is_some_and(|key| tx.send(key).is_err()) {
            return;
        }
    });
    rx
}
