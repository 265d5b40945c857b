//! Where memkit's other programs are, for a program that runs one: beside the running program
//! (in the directory it was started from, symlinks kept), then on PATH. One place, so that
//! `mem TOOL`, `mem help`, `mem doctor --fix`, the pipeline's stages, the `mem pipeline`
//! mem-capture and mem-mcp start and mem-eval's recall hook all find the same program.

use std::path::{Path, PathBuf};

/// The path the running program was started by, made absolute, when it was started by a path
/// rather than a bare name looked up on PATH. Unlike `current_exe` it keeps symlinks: a bin
/// directory of links to the tools is where the other tools are.
pub fn invoked_path() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::args_os().next()?);
    (p.components().count() > 1)
        .then(|| std::path::absolute(&p).ok())
        .flatten()
}

/// The directory the running program's file is in, symlinks resolved: where a build or an
/// install put it.
pub fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
}

/// The directory beside the running program: the one it was started from, symlinks kept (a
/// directory of links to some of the tools holds the tools to run), else, when it was started
/// by a bare name looked up on PATH, the one its file is in.
pub fn beside() -> Option<PathBuf> {
    invoked_path()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .or_else(exe_dir)
}

/// The directories of PATH, in order.
pub fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

/// A file that can be run: a regular file (or a link to one) with an execute bit.
pub fn is_program(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Program `name` in `dir`.
pub fn in_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    let p = dir.join(name);
    is_program(&p).then_some(p)
}

/// Program `name` in the first of `dirs` that has it, else on PATH.
pub fn find_in(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .chain(path_dirs().iter())
        .filter(|d| !d.as_os_str().is_empty())
        .find_map(|d| in_dir(d, name))
}

/// Program `name` beside the running program, else on PATH.
pub fn find(name: &str) -> Option<PathBuf> {
    find_in(name, beside().as_slice())
}

/// What to run for program `name`: the one beside the running program, else the bare name,
/// which the system looks up on PATH when it runs (and an error then names as asked).
pub fn command(name: &str) -> PathBuf {
    beside()
        .and_then(|d| in_dir(&d, name))
        .unwrap_or_else(|| PathBuf::from(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_in_the_first_directory_that_has_it_and_a_plain_file_is_not_one() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        for dir in [&a, &b] {
            std::fs::create_dir_all(dir).unwrap();
            let p = dir.join("mem-x");
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(a.join("mem-y"), "not a program").unwrap();
        let dirs = [a.clone(), b.clone()];
        assert_eq!(find_in("mem-x", &dirs), Some(a.join("mem-x")));
        assert_eq!(in_dir(&a, "mem-y"), None);
        assert_eq!(find_in("mem-no-such-program", &dirs), None);
    }

    #[test]
    fn the_running_program_is_beside_itself() {
        let exe = std::env::current_exe().unwrap();
        let name = exe.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            beside().map(|d| d.canonicalize().unwrap()),
            exe_dir().map(|d| d.canonicalize().unwrap())
        );
        assert_eq!(
            find(name).map(|p| p.canonicalize().unwrap()),
            Some(exe.canonicalize().unwrap())
        );
        assert!(command(name).is_absolute());
        assert_eq!(
            command("mem-no-such-program"),
            PathBuf::from("mem-no-such-program")
        );
    }
}
