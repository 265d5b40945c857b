//! The man pages and shell completions mem-install writes (and `mem gen-man`), rendered from
//! the clap definitions of every tool.

use std::path::{Path, PathBuf};

use super::man;
use crate::cli::Tool;
use crate::{Context, Error, Result, config};

/// Writes the man page of each of `tools` into `dir`.
pub fn write_man_pages(dir: &Path, tools: &[Tool]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)
        .map_err_context(|| format!("cannot create directory {}", dir.display()))?;
    for t in tools {
        let path = dir.join(format!("{}.1", t.name));
        let writing = || format!("cannot write {}", path.display());
        std::fs::write(&path, man::render(t, tools)).map_err_context(writing)?;
        // Documentation is for everyone, whatever the private umask of memkit's tools.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err_context(writing)?;
    }
    Ok(())
}

/// Where the man pages and completions go, under the XDG data and config directories.
pub struct Docs {
    pub man: PathBuf,
    bash: PathBuf,
    zsh: PathBuf,
    fish: PathBuf,
}

impl Docs {
    pub fn under(home: &Path) -> Docs {
        let data = config::env_nonempty("XDG_DATA_HOME")
            .map_or_else(|| home.join(".local/share"), PathBuf::from);
        let config = config::env_nonempty("XDG_CONFIG_HOME")
            .map_or_else(|| home.join(".config"), PathBuf::from);
        Docs {
            man: data.join("man/man1"),
            bash: data.join("bash-completion/completions"),
            zsh: data.join("zsh/site-functions"),
            fish: config.join("fish/completions"),
        }
    }

    /// Each completion file with its shell and tool: one file per tool, since bash-completion
    /// and zsh load a command's completions by its name.
    fn completions<'t>(&self, tools: &'t [Tool]) -> Vec<(PathBuf, clap_complete::Shell, &'t Tool)> {
        use clap_complete::Shell;
        tools
            .iter()
            .flat_map(|t| {
                [
                    (self.bash.join(t.name), Shell::Bash, t),
                    (self.zsh.join(format!("_{}", t.name)), Shell::Zsh, t),
                    (self.fish.join(format!("{}.fish", t.name)), Shell::Fish, t),
                ]
            })
            .collect()
    }

    /// Writes the man pages and completions of `tools`.
    pub fn write(&self, tools: &[Tool]) -> Result<()> {
        write_man_pages(&self.man, tools)?;
        for (path, shell, t) in self.completions(tools) {
            let dir = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir)
                .map_err_context(|| format!("cannot create directory {}", dir.display()))?;
            std::fs::write(&path, man::completion(t, shell))
                .map_err_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// Removes the man pages and completions of `tools`; returns how many files there were.
    pub fn remove(&self, tools: &[Tool]) -> Result<usize> {
        let mut n = 0;
        let pages = tools.iter().map(|t| self.man.join(format!("{}.1", t.name)));
        for path in pages.chain(self.completions(tools).into_iter().map(|(p, ..)| p)) {
            match std::fs::remove_file(&path) {
                Ok(()) => n += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error::other(format!(
                        "cannot remove {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        Ok(n)
    }
}
