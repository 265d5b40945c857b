//! mem-install: merging with the user's hooks, idempotence, uninstall, refusal of comments.

use serde_json::{Value, json};

use crate::{Env, bin, show};

fn user_settings() -> Value {
    json!({
        "model": "opus",
        "hooks": {
            "PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write", "timeout": 30}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}]
        },
        "permissions": {"allow": ["Bash(git *)"]}
    })
}

#[test]
fn install_merges_is_idempotent_and_uninstall_restores() {
    let env = Env::new();
    let settings = env.dir.path().join("settings.json");
    let original = serde_json::to_string_pretty(&user_settings()).unwrap();
    std::fs::write(&settings, &original).unwrap();
    let bin_dir = bin("mem").parent().unwrap().display().to_string();
    let s = settings.to_str().unwrap();
    env.ok(
        "mem-install",
        &["--settings", s, "--bin-dir", &bin_dir, "--no-copy"],
        b"",
    );
    let installed: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(installed["model"], "opus");
    assert_eq!(
        installed["hooks"]["PostToolUse"][0],
        user_settings()["hooks"]["PostToolUse"][0],
        "user hook kept first"
    );
    let cmd = installed["hooks"]["PostToolUse"][1]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        cmd.starts_with('/') && cmd.ends_with("mem-capture --hook"),
        "{cmd}"
    );
    for ev in [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUseFailure",
        "PreCompact",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ] {
        assert!(installed["hooks"][ev].is_array(), "{ev} registered");
    }
    // The context hooks: SessionStart gets the block, each prompt its relevant memories.
    let commands = |ev: &str| -> Vec<String> {
        installed["hooks"][ev]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap().iter())
            .map(|h| h["command"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        commands("SessionStart")
            .iter()
            .any(|c| c.starts_with('/') && c.ends_with("mem-context --hook")),
        "{:?}",
        commands("SessionStart")
    );
    assert!(
        commands("UserPromptSubmit")
            .iter()
            .any(|c| c.ends_with("mem-context --hook --prompt")),
        "{:?}",
        commands("UserPromptSubmit")
    );
    assert!(
        std::path::Path::new(&format!("{s}.memkit.bak")).exists(),
        "backup written"
    );

    let bytes = std::fs::read(&settings).unwrap();
    let out = env.ok(
        "mem-install",
        &["--settings", s, "--bin-dir", &bin_dir, "--no-copy"],
        b"",
    );
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        bytes,
        "second run changes nothing"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("unchanged"));

    env.ok("mem-install", &["--settings", s, "--uninstall"], b"");
    let restored: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(restored, user_settings());
}

#[test]
fn settings_with_comments_are_refused_untouched() {
    let env = Env::new();
    let settings = env.dir.path().join("settings.json");
    let text = "{\n  // my model\n  \"model\": \"opus\"\n}\n";
    std::fs::write(&settings, text).unwrap();
    let bin_dir = bin("mem").parent().unwrap().display().to_string();
    let out = install_into(&env, &settings);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("settings.json:2") && err.contains("comments") && err.contains("--dry-run"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    // What the message suggests works: --dry-run prints memkit's hooks, to merge by hand.
    let out = env.run(
        "mem-install",
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--bin-dir",
            &bin_dir,
            "--no-copy",
            "--dry-run",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let hooks: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stop = hooks["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(stop.contains("mem-capture --hook"), "{stop}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("by hand"),
        "{}",
        show(&out)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
}

#[test]
fn a_symlinked_settings_file_is_written_through_the_link() {
    let env = Env::new();
    let dotfiles = env.dir.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("claude-settings.json");
    std::fs::write(
        &real,
        serde_json::to_string_pretty(&user_settings()).unwrap(),
    )
    .unwrap();
    let claude = env.dir.path().join("home/.claude");
    std::fs::create_dir_all(&claude).unwrap();
    let link = claude.join("settings.json");
    // A relative link, as dotfile managers make them.
    std::os::unix::fs::symlink("../../dotfiles/claude-settings.json", &link).unwrap();
    let bin_dir = bin("mem").parent().unwrap().display().to_string();
    env.ok("mem-install", &["--bin-dir", &bin_dir, "--no-copy"], b"");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::Path::new("../../dotfiles/claude-settings.json")
    );
    let installed: Value = serde_json::from_slice(&std::fs::read(&real).unwrap()).unwrap();
    assert!(installed["hooks"]["Stop"].is_array(), "{installed}");
    assert_eq!(installed["model"], "opus");
    let leftovers: Vec<_> = std::fs::read_dir(&dotfiles).unwrap().collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no temporary file left beside the target"
    );
    env.ok("mem-install", &["--uninstall"], b"");
    let restored: Value = serde_json::from_slice(&std::fs::read(&real).unwrap()).unwrap();
    assert_eq!(restored, user_settings());
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn an_event_that_is_not_a_list_is_an_error_naming_it() {
    let env = Env::new();
    let settings = env.dir.path().join("settings.json");
    let text = "{\"hooks\": {\"Stop\": \"x\", \"Notification\": []}}\n";
    std::fs::write(&settings, text).unwrap();
    let out = install_into(&env, &settings);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"Stop\"") && err.contains("a string") && err.contains("settings.json"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
}

#[test]
fn dry_run_prints_and_writes_nothing() {
    let env = Env::new();
    let bin_dir = bin("mem").parent().unwrap().display().to_string();
    let out = env.ok(
        "mem-install",
        &["--dry-run", "--bin-dir", &bin_dir, "--no-copy"],
        b"",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["hooks"]["Stop"].is_array());
    assert!(!env.dir.path().join("home/.claude/settings.json").exists());
    // Without --dry-run the user settings file is created under HOME.
    env.ok("mem-install", &["--bin-dir", &bin_dir, "--no-copy"], b"");
    assert!(env.dir.path().join("home/.claude/settings.json").exists());
}

#[test]
fn a_settings_file_that_cannot_be_written_is_named_with_the_cause() {
    let env = Env::new();
    let settings = env.dir.path().join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    // A directory where the backup goes: the write fails (even for root).
    let bak = env.dir.path().join("settings.json.memkit.bak");
    std::fs::create_dir(&bak).unwrap();
    let out = install_into(&env, &settings);
    assert_eq!(out.status.code(), Some(5), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // What was being done, then why: the context chain of `Error`.
    assert!(
        err.starts_with(&format!(
            "mem-install: error: cannot write the backup {}: i/o: ",
            bak.display()
        )),
        "{err}"
    );
}

/// `mem-install --settings FILE` with this build's binaries.
pub(crate) fn install_into(env: &Env, settings: &std::path::Path) -> std::process::Output {
    let bin_dir = bin("mem").parent().unwrap().display().to_string();
    env.run(
        "mem-install",
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--bin-dir",
            &bin_dir,
            "--no-copy",
        ],
        b"",
    )
}

/// A cargo profile directory holding this build's programs (hard links: cheap, and deleting the
/// directory is then exactly what `cargo clean` does to them), beside the real one so that
/// the links work.
fn fake_build_dir() -> tempfile::TempDir {
    let real = bin("mem").parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir_in(real.parent().unwrap()).unwrap();
    for sub in [".fingerprint", "deps"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    for entry in std::fs::read_dir(&real).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if p.is_file() && name.starts_with("mem") && !name.contains('.') {
            std::fs::hard_link(&p, dir.path().join(&name)).unwrap();
        }
    }
    dir
}

#[test]
fn installed_from_a_build_directory_the_hooks_survive_cargo_clean() {
    let build = fake_build_dir();
    // A fresh HOME beside the build, on the same file system (the copies are hard links).
    let home = tempfile::tempdir_in(build.path().parent().unwrap()).unwrap();
    let local_bin = home.path().join(".local/bin");
    let env = Env::new()
        .set("HOME", home.path().to_str().unwrap())
        .set("PATH", &format!("{}:/usr/bin:/bin", local_bin.display()));
    let out = env.ok(build.path().join("mem-install").to_str().unwrap(), &[], b"");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("copied 15 programs"), "{said}");
    let settings = home.path().join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(!text.contains(build.path().to_str().unwrap()), "{text}");

    // cargo clean.
    drop(build);

    // Every program a hook names exists, and the hooks work: an event is stored, and the
    // SessionStart block is built from it.
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut commands = Vec::new();
    for (event, groups) in v["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            for h in g["hooks"].as_array().unwrap() {
                commands.push((event.clone(), h["command"].as_str().unwrap().to_string()));
            }
        }
    }
    assert!(commands.len() >= 9, "{commands:?}");
    for (_, c) in &commands {
        for part in c.split("; ") {
            let program = part.split(' ').next().unwrap();
            assert!(program.starts_with(local_bin.to_str().unwrap()), "{c}");
            assert!(std::path::Path::new(program).is_file(), "{program} is gone");
        }
    }
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let run_hook = |event: &str, payload: Value| {
        let (_, command) = commands.iter().find(|(e, _)| e == event).unwrap();
        let mut c = std::process::Command::new("sh");
        c.env_clear().envs(env.vars.iter().map(|(k, v)| (k, v)));
        c.args(["-c", command]);
        let out = crate::piped(&mut c, payload.to_string().as_bytes());
        assert!(out.status.success(), "{event}: {}", show(&out));
        out
    };
    let cwd = project.to_str().unwrap();
    run_hook(
        "UserPromptSubmit",
        serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s-clean",
            "cwd": cwd, "transcript_path": "/nonexistent.jsonl",
            "prompt": "Make the retry loop back off exponentially"}),
    );
    assert_eq!(
        env.count("SELECT count(*) FROM pending_queue WHERE session_id = 's-clean'"),
        1
    );
    run_hook(
        "SessionStart",
        serde_json::json!({"hook_event_name": "SessionStart", "session_id": "s-next",
            "cwd": cwd, "source": "startup", "transcript_path": "/nonexistent.jsonl"}),
    );

    // man finds the pages through PATH (~/.local/bin → ~/.local/share/man).
    let page = home.path().join(".local/share/man/man1/mem-search.1");
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains("\n.TH mem-search 1")
    );
    // (man-db is part of the machine, not of memkit: where it is missing, the file is what counts.)
    let man = std::process::Command::new("man")
        .env_clear()
        .envs(env.vars.iter().map(|(k, v)| (k, v)))
        .args(["-w", "mem-search"])
        .output();
    if let Ok(man) = man {
        assert_eq!(
            String::from_utf8_lossy(&man.stdout).trim(),
            page.to_str().unwrap(),
            "{}",
            show(&man)
        );
    }
    for f in [
        ".local/share/bash-completion/completions/mem-search",
        ".local/share/zsh/site-functions/_mem-search",
        ".config/fish/completions/mem-search.fish",
    ] {
        let text = std::fs::read_to_string(home.path().join(f)).unwrap();
        assert!(text.contains("mem-search"), "{f}");
    }

    // Uninstalled: hooks, pages and completions go; the programs stay, and it says where.
    let out = env.ok(
        local_bin.join("mem-install").to_str().unwrap(),
        &["--uninstall"],
        b"",
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(local_bin.to_str().unwrap()), "{said}");
    assert!(!page.exists());
    let v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert!(v.get("hooks").is_none(), "{v}");
}
