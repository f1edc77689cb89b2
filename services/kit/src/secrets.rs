//! Files that hold secrets: the users file and the session key, written so that no other user
//! of the machine can read them and no reader ever sees half a file.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use boardcast_access::{Directory, SessionKey};
use rand::RngCore as _;

/// Where the users file is unless configured otherwise.
pub const DEFAULT_USERS_FILE: &str = "var/users.json";
/// Where the session key is unless configured otherwise.
pub const DEFAULT_SESSION_KEY_FILE: &str = "var/session.key";

/// A new random session key.
pub fn new_session_key() -> SessionKey {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    SessionKey::from_bytes(bytes)
}

/// Writes `text` to `path` readable by its owner only (0600), replacing the file in one step
/// (a temporary file renamed over it), creating the directory if needed.
pub fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let file_name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?;
    let mut temporary = PathBuf::from(dir);
    temporary.push(format!(".{}.tmp", file_name.to_string_lossy()));
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .with_context(|| format!("writing {}", temporary.display()))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", temporary.display()))?;
    }
    std::fs::rename(&temporary, path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

/// The users file, or an empty directory when it does not exist yet.
pub fn read_users(path: &Path) -> anyhow::Result<Directory> {
    match std::fs::read_to_string(path) {
        Ok(text) => Directory::parse(&text)
            .with_context(|| format!("reading the users file {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Directory::new()),
        Err(e) => Err(e).with_context(|| format!("reading the users file {}", path.display())),
    }
}

pub fn write_users(path: &Path, directory: &Directory) -> anyhow::Result<()> {
    write_private(path, &directory.to_json())
}

/// The session key at `path`, created (0600) when there is none.
pub fn session_key(path: &Path) -> anyhow::Result<SessionKey> {
    match std::fs::read_to_string(path) {
        Ok(text) => SessionKey::from_hex(&text)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("reading the session key {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = new_session_key();
            write_private(path, &(key.to_hex() + "\n"))?;
            Ok(key)
        }
        Err(e) => Err(e).with_context(|| format!("reading the session key {}", path.display())),
    }
}
