//! Error signatures: the line of a failed command's output that says what went wrong, with
//! paths, numbers, hashes and line numbers normalised, so the same error met again (another
//! day, another file, another line) has the same signature. The pipeline stores one per failed
//! call (`store::failures`); error recall looks a new failure's signature up there.

/// A failure's signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The normalised line: what is matched.
    pub key: String,
    /// The line as it was (cut), for showing.
    pub line: String,
}

/// Tools whose failures carry an error worth matching: a shell's output. Claude Code's own
/// tool errors (an edit's string not found, a file not read yet) say nothing about the code.
pub const SHELL_TOOLS: &[&str] = &["Bash", "PowerShell"];

/// The error text of a failed shell call, from its hook payload: PostToolUseFailure's `error`,
/// or the output of a PostToolUse whose response reports a non-zero exit code. `None` for any
/// other call.
pub fn failure_text(payload: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let field = |k: &str| payload.get(k).unwrap_or(&serde_json::Value::Null);
    let tool = field("tool_name").as_str()?;
    if !SHELL_TOOLS.contains(&tool) {
        return None;
    }
    match field("hook_event_name").as_str()? {
        "PostToolUseFailure" => match field("error") {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        },
        "PostToolUse" => {
            let r = field("tool_response");
            let code = ["exit_code", "exitCode", "returnCode", "code"]
                .iter()
                .find_map(|k| r[*k].as_i64())?;
            (code != 0).then(|| {
                let part = |k: &str| r[k].as_str().unwrap_or("").to_string();
                format!("Exit code {code}\n{}\n{}", part("stderr"), part("stdout"))
            })
        }
        _ => None,
    }
}

/// A signature longer than this is cut (a key of a few words is enough to tell errors apart).
const KEY_CHARS: usize = 160;

/// Errors that are not the code's: a permission refused, a call interrupted or rejected.
const NOT_AN_ERROR: &[&str] = &[
    "the user doesn't want to",
    "claude requested permissions",
    "this command requires approval",
    "this bash command contains multiple operations",
    "sibling tool call errored",
    "was blocked. for security",
    "interrupted by user",
    "[request interrupted",
    "command timed out",
];

/// Line starts that carry no information about what failed (runner banners, progress, stack
/// frames, hints).
const NOISE: &[&str] = &[
    "exit code",
    "traceback (most recent call last)",
    "file \"",
    "at ",
    "platform ",
    "cachedir:",
    "rootdir:",
    "configfile:",
    "plugins:",
    "testpaths:",
    "collecting",
    "collected",
    "running ",
    "getting extensions",
    "compiling",
    "generated ",
    "finished ",
    "resolved ",
    "hint:",
    "time=",
    "note:",
    "help:",
    "warning:",
    "during handling",
    "the above exception",
    "for more information",
    "to push the current branch",
    "use '--'",
    "npm err! a complete log",
    "npm err! log files",
];

/// The signature of a failed call's error text; `None` when it holds nothing distinctive
/// (a bare "Exit code 1", a rejected or interrupted call).
pub fn signature(error: &str) -> Option<Signature> {
    let lower = error.to_lowercase();
    if NOT_AN_ERROR.iter().any(|n| lower.contains(n)) {
        return None;
    }
    let lines: Vec<&str> = error
        .lines()
        .map(|l| l.trim().trim_start_matches("<tool_use_error>"))
        .map(|l| l.trim_end_matches("</tool_use_error>").trim())
        .filter(|l| !l.is_empty() && !is_noise(l))
        .take(400)
        .collect();
    // The last exception line (a traceback ends with the one raised), else the first line
    // that says error or failed, else the first line with words.
    let pick = lines
        .iter()
        .rev()
        .find(|l| exception(l).is_some())
        .or_else(|| lines.iter().find(|l| says_error(l)))
        .or_else(|| {
            lines
                .iter()
                .find(|l| l.chars().filter(|c| c.is_alphabetic()).count() >= 8)
        })?;
    let key = normalise(pick);
    if key.chars().filter(|c| c.is_alphabetic()).count() < 6 {
        return None;
    }
    Some(Signature {
        key,
        line: crate::clip(pick, 200),
    })
}

fn is_noise(line: &str) -> bool {
    let l = line.to_lowercase();
    NOISE.iter().any(|n| l.starts_with(n))
        || line.chars().all(|c| !c.is_alphanumeric())
        || l.starts_with("====") && !l.contains("error") && !l.contains("fail")
}

/// The exception type a line starts with: `ValueError: …`, `E   KeyError: …`,
/// `thread 'main' panicked`, `error[E0308]: …`.
pub fn exception(line: &str) -> Option<&str> {
    let l = line.trim_start_matches("E ").trim_start();
    let head = l.split([':', ' ', '(']).next().unwrap_or("");
    let name = head.rsplit('.').next().unwrap_or(head);
    let is_type = name.len() > 5
        && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && [
            "Error",
            "Exception",
            "Failure",
            "Fault",
            "Interrupt",
            "Exit",
        ]
        .iter()
        .any(|s| name.ends_with(s));
    if is_type && (l[head.len()..].starts_with(':') || l.len() == head.len()) {
        return Some(name);
    }
    if let Some(rest) = l.strip_prefix("error[")
        && let Some(code) = rest.split(']').next()
    {
        return Some(code);
    }
    None
}

fn says_error(line: &str) -> bool {
    let l = line.to_lowercase();
    [
        "error",
        "failed",
        "fatal:",
        "failure",
        "not found",
        "no such",
        "cannot",
        "panicked",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// Folds what differs between two occurrences of one error: paths become `<path>`, numbers
/// `<n>`, hex hashes and ids `<hex>`; whitespace collapses and case folds.
pub fn normalise(line: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for raw in line.split_whitespace() {
        let tok = raw.trim_matches(|c: char| "'\"`()[]{},;".contains(c));
        let lead = &raw[..raw.find(tok).unwrap_or(0)];
        let trail = &raw[raw.find(tok).map(|i| i + tok.len()).unwrap_or(raw.len())..];
        let word = if tok.contains('/') || tok.contains('\\') || tok.starts_with('~') {
            "<path>".to_string()
        } else {
            fold_numbers(tok)
        };
        out.push(format!("{lead}{word}{trail}").to_lowercase());
    }
    crate::clip(&out.join(" "), KEY_CHARS)
}

/// `line 42` → `line <n>`, `a1b2c3d4e5` → `<hex>`, `foo.py:12:5` → `foo.py:<n>:<n>`.
fn fold_numbers(tok: &str) -> String {
    let hexlike = tok.len() >= 7
        && tok.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        && tok.chars().any(|c| c.is_ascii_digit());
    if hexlike {
        return "<hex>".into();
    }
    let mut s = String::with_capacity(tok.len());
    let mut in_num = false;
    for c in tok.chars() {
        if c.is_ascii_digit() {
            if !in_num {
                s.push_str("<n>");
                in_num = true;
            }
        } else {
            in_num = false;
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceback_is_known_by_its_exception_whatever_the_paths_and_lines() {
        let a = "Exit code 1\nTraceback (most recent call last):\n  File \"/home/a/x.py\", line 4, in <module>\n    from foo import main\nModuleNotFoundError: No module named 'extract_feedback'";
        let b = "Traceback (most recent call last):\n  File \"/tmp/other/y.py\", line 90, in run\nModuleNotFoundError: No module named 'extract_feedback'";
        let (sa, sb) = (signature(a).unwrap(), signature(b).unwrap());
        assert_eq!(sa.key, sb.key);
        assert!(sa.line.starts_with("ModuleNotFoundError"));
        let c =
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'requests'";
        assert_ne!(signature(c).unwrap().key, sa.key);
    }

    #[test]
    fn paths_numbers_and_hashes_are_folded() {
        assert_eq!(
            normalise(
                "src/a.rs:12:5 error at 0x1f and commit 9fceb02d0ae598e95dc970b74767f19372d61af8"
            ),
            "<path> error at <n>x<n>f and commit <hex>"
        );
        let a = signature("/a/b/conv.py:184:17 - error: Type of \"x\" is unknown").unwrap();
        let b = signature("/c/conv.py:9:1 - error: Type of \"x\" is unknown").unwrap();
        assert_eq!(a.key, b.key);
    }

    #[test]
    fn rejections_and_bare_exit_codes_have_no_signature() {
        assert_eq!(signature("Exit code 1"), None);
        assert_eq!(
            signature("The user doesn't want to proceed with this tool use."),
            None
        );
        assert_eq!(signature(""), None);
        let s = signature("Exit code 128\nfatal: The current branch x has no upstream branch.\nTo push the current branch and set the remote as upstream, use").unwrap();
        assert!(s.key.starts_with("fatal: the current branch"), "{}", s.key);
    }
}
