//! A terminal screen rebuilt from what a program wrote to it: the text, and for
//! each cell whether it was drawn bold, red, or in reverse video. Understands what
//! ratatui (through crossterm) writes: cursor moves (`ESC [ row ; col H`), colours
//! and attributes (`ESC [ ... m`), text; other sequences are skipped. Fed as the
//! output arrives (a sequence or character cut between two reads waits for the
//! rest).

/// How a cell was drawn.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Look {
    pub bold: bool,
    pub red: bool,
    pub reversed: bool,
}

/// A screen of `rows` by `cols` cells.
pub struct Screen {
    cells: Vec<Vec<(char, Look)>>,
    row: usize,
    col: usize,
    look: Look,
    /// Bytes not yet understood (the start of a sequence or of a character).
    pending: Vec<u8>,
}

impl Screen {
    pub fn new(rows: usize, cols: usize) -> Screen {
        Screen {
            cells: vec![vec![(' ', Look::default()); cols]; rows],
            row: 0,
            col: 0,
            look: Look::default(),
            pending: Vec::new(),
        }
    }

    /// What the terminal shows after `output` too.
    pub fn feed(&mut self, output: &[u8]) {
        self.pending.extend_from_slice(output);
        let bytes = std::mem::take(&mut self.pending);
        let mut at = 0;
        while at < bytes.len() {
            match self.step(&bytes[at..]) {
                Some(used) => at += used,
                None => break,
            }
        }
        self.pending = bytes[at..].to_vec();
    }

    /// Handles what `rest` starts with; the bytes used, or `None` if incomplete.
    fn step(&mut self, rest: &[u8]) -> Option<usize> {
        match rest[0] {
            0x1b => {
                let &next = rest.get(1)?;
                if next != b'[' {
                    return Some(2);
                }
                let end = rest[2..]
                    .iter()
                    .position(|b| b.is_ascii_alphabetic() || *b == b'~')?;
                let params = std::str::from_utf8(&rest[2..2 + end]).unwrap_or("");
                match rest[2 + end] {
                    b'H' => {
                        let mut at = params.split(';').map(|n| n.parse::<usize>().unwrap_or(1));
                        self.row = at.next().unwrap_or(1).saturating_sub(1);
                        self.col = at.next().unwrap_or(1).saturating_sub(1);
                    }
                    b'm' => self.style(params),
                    _ => {}
                }
                Some(3 + end)
            }
            b'\r' => {
                self.col = 0;
                Some(1)
            }
            b'\n' => {
                self.row += 1;
                Some(1)
            }
            first => {
                let len = match first {
                    0..=0x7f => 1,
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    _ => 4,
                };
                let bytes = rest.get(..len)?;
                let c = std::str::from_utf8(bytes)
                    .ok()
                    .and_then(|s| s.chars().next())
                    .unwrap_or('?');
                if !c.is_control() {
                    if let Some(cell) = self
                        .cells
                        .get_mut(self.row)
                        .and_then(|r| r.get_mut(self.col))
                    {
                        *cell = (c, self.look);
                    }
                    self.col += 1;
                }
                Some(len)
            }
        }
    }

    /// Applies an SGR sequence's parameters.
    fn style(&mut self, params: &str) {
        let codes: Vec<u32> = params.split(';').map(|n| n.parse().unwrap_or(0)).collect();
        let mut i = 0;
        while i < codes.len() {
            match codes[i] {
                0 => self.look = Look::default(),
                1 => self.look.bold = true,
                22 => self.look.bold = false,
                7 => self.look.reversed = true,
                27 => self.look.reversed = false,
                31 | 91 => self.look.red = true,
                30 | 32..=37 | 39 | 90 | 92..=97 => self.look.red = false,
                38 if codes.get(i + 1) == Some(&5) => {
                    self.look.red = matches!(codes.get(i + 2), Some(1 | 9));
                    i += 2;
                }
                38 if codes.get(i + 1) == Some(&2) => {
                    self.look.red = false;
                    i += 4;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// The text shown, one line per row, trailing blanks trimmed.
    pub fn text(&self) -> String {
        let lines: Vec<String> = self
            .cells
            .iter()
            .map(|r| {
                r.iter()
                    .map(|(c, _)| *c)
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect();
        lines.join("\n")
    }

    /// How the first cell of `text` on the screen was drawn (`None` if not shown).
    pub fn look_of(&self, text: &str) -> Option<Look> {
        let screen = self.text();
        let (row, line) = screen.lines().enumerate().find(|(_, l)| l.contains(text))?;
        let col = line[..line.find(text)?].chars().count();
        Some(self.cells[row][col].1)
    }

    /// The text with a margin saying how each line was drawn: `R` where some cell
    /// of it was bold red, `>` where some cell was in reverse video.
    pub fn marked(&self) -> String {
        let text = self.text();
        text.lines()
            .zip(&self.cells)
            .map(|(line, cells)| {
                let red = cells.iter().any(|(c, l)| l.red && l.bold && *c != ' ');
                let reversed = cells.iter().any(|(c, l)| l.reversed && *c != ' ');
                let margin = format!(
                    "{}{}",
                    if red { 'R' } else { ' ' },
                    if reversed { '>' } else { ' ' }
                );
                format!("{margin} {line}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `zklock top ROOT` under script(1), on a pseudo-terminal of 40 rows of 160
/// columns, its screen kept current from a reader thread.
pub struct Terminal {
    /// script(1), whose child the shell exec'ed into zklock.
    pub script: std::process::Child,
    pub screen: std::sync::Arc<std::sync::Mutex<Screen>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    /// Starts `zklock top ROOT` (the binary `zklock`) against ZooKeeper at `zk`.
    pub fn top(zklock: &str, zk: &str, root: &str) -> Terminal {
        use std::io::Read;
        use std::process::{Command, Stdio};
        let cmd = format!("stty cols 160 rows 40; exec {zklock} top {root}");
        let mut script = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env("ZKLOCK_ZK", zk)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("script(1) from util-linux");
        let screen = std::sync::Arc::new(std::sync::Mutex::new(Screen::new(40, 160)));
        let reader = {
            let (mut tty, screen) = (script.stdout.take().unwrap(), screen.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n @ 1..) = tty.read(&mut buf) {
                    screen.lock().unwrap().feed(&buf[..n]);
                }
            })
        };
        Terminal {
            script,
            screen,
            reader: Some(reader),
        }
    }

    /// Types `keys`.
    pub fn press(&mut self, keys: &[u8]) {
        use std::io::Write;
        let stdin = self.script.stdin.as_mut().unwrap();
        stdin.write_all(keys).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for script(1) (and so zklock) to exit, and for the last output.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        let status = self.script.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        status
    }
}
