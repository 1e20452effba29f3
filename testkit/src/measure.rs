//! What zklock's measurement harnesses share (the benches of
//! lock-zookeeper-client, the fleet, the partition tolerance bench): medians
//! and percentiles, `/proc` readings of a process and the machine, the
//! environment knobs, the splice of a generated section into a Markdown file,
//! and [`LinePeer`], a child process driven one line at a time.
//!
//! Linux-only in what it reads from `/proc`: elsewhere the readings are zero or
//! `?`, never an error, so that a bench still runs.

use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime};

/// The median of `values`, NaNs left out (the mean of the middle two of an even
/// count); NaN when nothing is left.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile (0 to 1) of `values`: the value at index
/// `round((n - 1) q)` once sorted, no interpolation; NaN when empty.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(((v.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// The environment variable `key`, or `default` when it is unset.
pub fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

/// The number in `key`, or `default` when it is unset. Panics, naming the
/// variable, when it is not a number: a knob misspelt must not measure
/// something else.
pub fn env_usize(key: &str, default: usize) -> usize {
    let text = env_or(key, &default.to_string());
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{key}={text:?}: not a number"))
}

/// The comma-separated numbers in `key` (or `default`); panics as [`env_usize`].
pub fn env_list(key: &str, default: &str) -> Vec<usize> {
    env_words(key, default)
        .iter()
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("{key}: {s:?} is not a number"))
        })
        .collect()
}

/// The comma-separated words in `key` (or `default`), trimmed, empty ones left out.
pub fn env_words(key: &str, default: &str) -> Vec<String> {
    env_or(key, default)
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `number` with thousands separators on its integer part: `12345.6` as
/// `12,345.6`, `-1000` as `-1,000`.
pub fn thousands(number: impl std::fmt::Display) -> String {
    let text = number.to_string();
    let (sign, unsigned) = text.split_at(usize::from(text.starts_with('-')));
    let (int, frac) = unsigned
        .split_once('.')
        .map_or((unsigned, None), |(a, b)| (a, Some(b)));
    let mut out = sign.to_owned();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(frac) = frac {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// `/proc/loadavg`'s first three fields (1, 5 and 15 minutes), or `?`.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The machine, for a report: cores (`nproc`), the CPU model and the memory.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{cpus} cores (`nproc`), {model}, {gib:.0} GiB")
}

/// `at` in UTC, `YYYY-MM-DD HH:MM`.
pub fn utc(at: SystemTime) -> String {
    let secs = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// CPU time (user + system) a process has used so far, threads that exited
/// included, from `/proc/<pid>/stat` (10 ms ticks); `None`: this process. Zero
/// when it cannot be read.
pub fn cpu_time(pid: Option<u32>) -> Duration {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        return Duration::ZERO;
    };
    // Fields after the command name (which may hold spaces): state is field 3,
    // utime and stime are fields 14 and 15.
    let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis((ticks(14) + ticks(15)) * 10)
}

/// The resident set of a process (`VmRSS`), KiB; zero when it cannot be read.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Replaces the text between the lines `<!-- {name}:start -->` and
/// `<!-- {name}:end -->` of the Markdown file at `path` by `text`, and says so
/// on stdout. Panics when the file or its markers are missing: a generated
/// section must land where the document expects it.
pub fn splice(path: &Path, name: &str, text: &str) {
    let doc =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let (start, end) = (
        format!("<!-- {name}:start -->"),
        format!("<!-- {name}:end -->"),
    );
    let (Some(a), Some(b)) = (doc.find(&start), doc.find(&end)) else {
        panic!("{} has no {start} ... {end} markers", path.display());
    };
    let out = format!("{}{start}\n{text}\n{}", &doc[..a], &doc[b..]);
    std::fs::write(path, out).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    println!("wrote {} ({name})", path.display());
}

/// A child process driven one line at a time: commands written to its stdin,
/// replies read from its stdout (its stderr is the caller's). The benches'
/// peers (Curator, kazoo, Rust) and the fleet's workers speak this way.
pub struct LinePeer {
    name: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl LinePeer {
    /// Starts `command` with piped stdin and stdout; `name` is what errors and
    /// [`name`](Self::name) call it.
    pub fn spawn(command: &mut Command, name: impl Into<String>) -> io::Result<LinePeer> {
        let name = name.into();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting {name}: {e}")))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Ok(LinePeer {
            name,
            child,
            stdin,
            stdout,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` and a newline, flushed.
    pub fn send(&mut self, line: &str) -> io::Result<()> {
        writeln!(self.stdin, "{line}")?;
        self.stdin.flush()
    }

    /// Its next line, without the line end; `UnexpectedEof` (with its exit
    /// status, if it has one yet) when it closed its stdout.
    pub fn read_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            let status = self.child.try_wait().ok().flatten();
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{} closed its output (exit: {status:?})", self.name),
            ));
        }
        Ok(line.trim_end().to_owned())
    }

    /// Its resident set, KiB ([`rss_kib`]).
    pub fn rss_kib(&self) -> u64 {
        rss_kib(self.pid())
    }

    /// Its CPU time so far ([`cpu_time`]).
    pub fn cpu_time(&self) -> Duration {
        cpu_time(Some(self.pid()))
    }

    /// Waits for it to exit (after the line that tells it to, or closing
    /// nothing: its stdin stays open until it is dropped).
    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        self.child.wait()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_and_leaves_out_nan() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn percentile_takes_the_rounded_index() {
        let v: Vec<f64> = (1..=101).rev().map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 100.0);
        assert_eq!(percentile(&v, 1.0), 101.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn env_knobs_read_lists_and_defaults() {
        std::env::set_var("LOCK_TESTKIT_MEASURE_LIST", " 2, 8 ,");
        assert_eq!(env_list("LOCK_TESTKIT_MEASURE_LIST", "1"), [2, 8]);
        assert_eq!(env_words("LOCK_TESTKIT_MEASURE_UNSET", "a,b"), ["a", "b"]);
        assert_eq!(env_usize("LOCK_TESTKIT_MEASURE_UNSET", 7), 7);
        assert_eq!(env_or("LOCK_TESTKIT_MEASURE_UNSET", "x"), "x");
    }

    #[test]
    #[should_panic(expected = "LOCK_TESTKIT_MEASURE_BAD=\"many\": not a number")]
    fn a_misspelt_number_knob_panics_naming_it() {
        std::env::set_var("LOCK_TESTKIT_MEASURE_BAD", "many");
        env_usize("LOCK_TESTKIT_MEASURE_BAD", 1);
    }

    #[test]
    fn thousands_groups_the_integer_part() {
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands("1234567.125"), "1,234,567.125");
        assert_eq!(thousands(-123), "-123");
        assert_eq!(thousands(-1000.5), "-1,000.5");
    }

    #[test]
    fn utc_is_the_civil_date() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_210_096); // 2024-02-29 12:34:56
        assert_eq!(utc(at), "2024-02-29 12:34");
        assert_eq!(utc(SystemTime::UNIX_EPOCH), "1970-01-01 00:00");
        let day = |days: u64| utc(SystemTime::UNIX_EPOCH + Duration::from_secs(days * 86_400));
        assert_eq!(day(20_785), "2026-11-28 00:00");
        assert_eq!(day(11_016), "2000-02-29 00:00");
    }

    #[test]
    fn proc_readings_of_this_process() {
        assert!(rss_kib(std::process::id()) > 0);
        let spin = std::time::Instant::now();
        while cpu_time(None) < Duration::from_millis(20) && spin.elapsed() < Duration::from_secs(5)
        {
        }
        assert!(cpu_time(Some(std::process::id())) >= Duration::from_millis(20));
        assert_eq!(loadavg().split(' ').count(), 3);
        assert!(machine().contains("cores (`nproc`)"));
    }

    #[test]
    fn splice_replaces_between_the_markers_only() {
        let path = std::env::temp_dir().join(format!("measure-splice-{}.md", std::process::id()));
        std::fs::write(&path, "a\n<!-- t:start -->\nold\n<!-- t:end -->\nb\n").unwrap();
        splice(&path, "t", "new");
        let doc = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(doc, "a\n<!-- t:start -->\nnew\n<!-- t:end -->\nb\n");
    }

    #[test]
    fn line_peer_answers_line_by_line_and_reports_its_end() {
        let mut command = Command::new("/bin/sh");
        command.args([
            "-c",
            "while read l; do [ \"$l\" = quit ] && exit 3; echo \"ok $l\"; done",
        ]);
        let mut peer = LinePeer::spawn(&mut command, "echo peer").unwrap();
        assert_eq!(peer.name(), "echo peer");
        peer.send("one").unwrap();
        assert_eq!(peer.read_line().unwrap(), "ok one");
        assert!(peer.rss_kib() > 0);
        peer.send("quit").unwrap();
        let end = peer.read_line().unwrap_err();
        assert_eq!(end.kind(), io::ErrorKind::UnexpectedEof);
        assert!(end.to_string().contains("echo peer closed its output"));
        assert_eq!(peer.wait().unwrap().code(), Some(3));
    }
}
