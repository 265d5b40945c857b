//! Headless chromium driven over the DevTools protocol on a pipe (no port, no websocket): the
//! browser test of mem-report --html and the report bench's page-open figure.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Headless chromium and one page of it, over `--remote-debugging-pipe`: commands go in on
/// the browser's fd 3, answers and events come out on its fd 4, each a JSON text ended by NUL.
pub struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: Receiver<Value>,
    session: String,
    next: u64,
    events: Vec<Value>,
}

/// Long enough for a cold start on a busy CI machine, short enough that a stall fails fast.
const WAIT: Duration = Duration::from_secs(30);

impl Browser {
    pub fn launch(chromium: &str, scratch: &Path) -> Browser {
        let profile = scratch.join("chromium-profile");
        std::fs::create_dir_all(&profile).unwrap();
        let (cmd_r, cmd_w) = std::io::pipe().unwrap();
        let (out_r, out_w) = std::io::pipe().unwrap();
        let (a, b) = (cmd_r.as_raw_fd(), out_w.as_raw_fd());
        let mut c = Command::new(chromium);
        // Without these the browser waits on a network this machine does not have.
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-pipe",
            "about:blank",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2), moving the
        // pipe ends to the fds the protocol names; high copies first so neither end is
        // overwritten if it already sits on 3 or 4.
        unsafe {
            c.pre_exec(move || {
                let (ha, hb) = (
                    libc::fcntl(a, libc::F_DUPFD, 10),
                    libc::fcntl(b, libc::F_DUPFD, 10),
                );
                if ha < 0 || hb < 0 || libc::dup2(ha, 3) < 0 || libc::dup2(hb, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {chromium}: {e}"));
        drop((cmd_r, out_w));
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(out_r);
            let mut buf = Vec::new();
            while r.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop_if(|c| *c == 0);
                if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                    && tx.send(v).is_err()
                {
                    break;
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            to: cmd_w,
            from: rx,
            session: String::new(),
            next: 0,
            events: Vec::new(),
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}), false);
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
            false,
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page", "Runtime", "Log", "Network"] {
            b.send(&format!("{domain}.enable"), json!({}));
        }
        b
    }

    /// One command, to the browser or (`page`) to the page; its result. Events read meanwhile
    /// are kept.
    pub fn call(&mut self, method: &str, params: Value, page: bool) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if page {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("chromium did not answer {method} in {WAIT:?}"));
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    pub fn send(&mut self, method: &str, params: Value) -> Value {
        self.call(method, params, true)
    }

    /// The value of a script run in the page.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// Waits until a script's value is true; false when it was not in `WAIT`.
    pub fn wait_for(&mut self, expr: &str) -> bool {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if self.eval(expr) == json!(true) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The page's navigation timing in ms from the start of navigation: DOMContentLoaded's end,
    /// the load event's end, and the first contentful paint (null if none was recorded).
    pub fn load_times(&mut self) -> (f64, f64, Option<f64>) {
        self.wait_for("performance.getEntriesByType('navigation')[0].loadEventEnd > 0");
        let v = self.eval(
            "(() => { const n = performance.getEntriesByType('navigation')[0]; \
             const p = performance.getEntriesByName('first-contentful-paint')[0]; \
             return [n.domContentLoadedEventEnd, n.loadEventEnd, p ? p.startTime : null]; })()",
        );
        (
            v[0].as_f64().unwrap_or(f64::NAN),
            v[1].as_f64().unwrap_or(f64::NAN),
            v[2].as_f64(),
        )
    }

    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.send(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        );
    }

    /// Navigates and waits for the load event (the page's script has run by then).
    pub fn open(&mut self, url: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        self.send("Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + WAIT;
        while !self
            .events
            .iter()
            .any(|e| e["method"] == "Page.loadEventFired")
        {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("{url} did not load in {WAIT:?}"));
            self.events.push(v);
        }
    }

    pub fn screenshot(&mut self, to: &Path) {
        let r = self.send("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64(r["data"].as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(to, png).unwrap();
    }

    /// Closes the browser; every event it sent.
    pub fn close(mut self) -> Vec<Value> {
        self.call("Browser.close", json!({}), false);
        let _ = self.child.wait();
        self.events.extend(self.from.try_iter());
        std::mem::take(&mut self.events)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64, as the protocol sends screenshots.
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=').map(val).collect();
    bytes
        .chunks(4)
        .flat_map(|q| {
            let n = q.iter().fold(0u32, |n, v| n << 6 | u32::from(*v)) << (6 * (4 - q.len()));
            let out = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out.into_iter().take(q.len() - 1)
        })
        .collect()
}
