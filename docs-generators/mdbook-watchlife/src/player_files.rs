//! The player's files (`make embed`'s folder: `player.js`, `embed.html`,
//! the app and the scenarios) copied into the book's source folder, where
//! mdBook copies them into the built book like any other file.

use std::io;
use std::path::Path;

/// Copies the folder `from` into `to`, each file only when its bytes
/// differ, so that `mdbook serve` does not see a change on every build.
pub fn copy(from: &Path, to: &Path) -> io::Result<usize> {
    if !from.join("player.js").is_file() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{} has no player.js: point [preprocessor.watchlife] player at the folder `make embed` writes",
                from.display()
            ),
        ));
    }
    copy_changed(from, to)
}

fn copy_changed(from: &Path, to: &Path) -> io::Result<usize> {
    std::fs::create_dir_all(to)?;
    let mut copied = 0;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copied += copy_changed(&entry.path(), &target)?;
            continue;
        }
        let bytes = std::fs::read(entry.path())?;
        if std::fs::read(&target).ok().as_ref() != Some(&bytes) {
            std::fs::write(&target, bytes)?;
            copied += 1;
        }
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_copied_once_and_a_folder_without_the_player_is_refused() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        std::fs::write(from.path().join("player.js"), "x").unwrap();
        std::fs::create_dir(from.path().join("scenarios")).unwrap();
        std::fs::write(from.path().join("scenarios/a.jsonl"), "{}").unwrap();
        assert_eq!(copy(from.path(), to.path()).unwrap(), 2);
        assert_eq!(copy(from.path(), to.path()).unwrap(), 0, "nothing changed");
        assert!(to.path().join("scenarios/a.jsonl").is_file());
        let error = copy(to.path().join("scenarios").as_path(), from.path()).unwrap_err();
        assert!(error.to_string().contains("has no player.js"), "{error}");
    }
}
