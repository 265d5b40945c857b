//! The files mem-install writes: the settings file (atomically, through symlinks, with a backup)
//! and the copies of the programs out of a cargo build directory.

use std::path::{Path, PathBuf};

use crate::cli::Tool;
use crate::{Context, Error, Result};

/// Follows `path` through symlinks to the file they name (which may not exist yet), so that
/// writing it replaces the target and keeps the links.
pub fn resolve_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// A cargo profile directory (target/debug, target/release): what cargo clean empties.
pub fn is_build_dir(dir: &Path) -> bool {
    dir.join(".fingerprint").is_dir() && dir.join("deps").is_dir()
}

pub fn on_path(dir: &Path) -> bool {
    crate::programs::path_dirs().iter().any(|d| d == dir)
}

/// The programs of `tools` found in `from`, copied (hard-linked when possible) to `to`; each
/// replaced by a rename, so a hook running the old one is not cut short. Returns how many.
pub fn copy_programs(from: &Path, to: &Path, tools: &[Tool]) -> Result<usize> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to)
        .map_err_context(|| format!("cannot create directory {}", to.display()))?;
    let mut n = 0;
    for t in tools {
        let src = from.join(t.name);
        if !src.is_file() {
            continue;
        }
        let dst = to.join(t.name);
        if std::fs::canonicalize(&src).ok() == std::fs::canonicalize(&dst).ok() {
            n += 1;
            continue;
        }
        let tmp = to.join(format!(".{}.memkit-tmp-{}", t.name, std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let writing = || format!("cannot copy {} to {}", src.display(), dst.display());
        if std::fs::hard_link(&src, &tmp).is_err() {
            std::fs::copy(&src, &tmp).map_err_context(writing)?;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
                .map_err_context(writing)?;
        }
        std::fs::rename(&tmp, &dst)
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
            .map_err_context(writing)?;
        n += 1;
    }
    if n == 0 {
        return Err(no_tools(from));
    }
    Ok(n)
}

pub fn no_tools(bin_dir: &Path) -> Error {
    Error::Usage(format!(
        "no memkit tools found in {}; use --bin-dir",
        bin_dir.display()
    ))
}

/// Backs up the old file beside `path`, then writes a temporary file beside the file `path`
/// names (through any symlinks, which stay as they are) and renames it over that file.
pub fn write_atomic(path: &Path, original: Option<&str>, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let target = resolve_links(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err_context(|| format!("cannot create directory {}", dir.display()))?;
    let mode = std::fs::metadata(&target)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    if let Some(o) = original {
        let mut bak = path.as_os_str().to_owned();
        bak.push(".memkit.bak");
        std::fs::write(&bak, o)
            .map_err_context(|| format!("cannot write the backup {}", Path::new(&bak).display()))?;
    }
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(format!(".memkit-tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let writing = || format!("cannot write {}", target.display());
    std::fs::write(&tmp, text).map_err_context(writing)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .map_err_context(writing)?;
    std::fs::rename(&tmp, &target)
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
        .map_err_context(writing)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_settings_file_is_written_through_the_link_with_a_backup() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{}").unwrap();
        let link = d.path().join("settings.json");
        std::os::unix::fs::symlink("dotfiles/settings.json", &link).unwrap();
        write_atomic(&link, Some("{}"), "{\"a\": 1}\n").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"a\": 1}\n");
        let bak = d.path().join("settings.json.memkit.bak");
        assert_eq!(std::fs::read_to_string(bak).unwrap(), "{}");
    }

    #[test]
    fn a_symlink_loop_is_an_error_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::os::unix::fs::symlink("b", &a).unwrap();
        std::os::unix::fs::symlink("a", d.path().join("b")).unwrap();
        let e = resolve_links(&a).unwrap_err().to_string();
        assert!(e.contains("too many levels of symbolic links"), "{e}");
    }

    #[test]
    fn programs_are_copied_and_a_directory_without_them_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let (from, to) = (d.path().join("target/release"), d.path().join("bin"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::write(from.join("mem-search"), "#!/bin/sh\n").unwrap();
        assert_eq!(copy_programs(&from, &to, crate::cmd::ALL).unwrap(), 1);
        assert_eq!(
            std::fs::read_to_string(to.join("mem-search")).unwrap(),
            "#!/bin/sh\n"
        );
        let e = copy_programs(&to.join("nothing"), &to, crate::cmd::ALL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no memkit tools found"), "{e}");
    }
}
