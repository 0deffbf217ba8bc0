//! An advisory lock across processes for a read-modify-write of one file (the config file,
//! the allowlist) or of one server's OAuth tokens: the daemon, a panel and the commands may
//! change the same file, or refresh the same tokens, at once.
//!
//! The lock is `flock(2)` (on Windows `LockFileEx`) on a lock file beside the file (`mcp.lock` beside `mcp.json`,
//! `allow_tool.lock` beside `allow_tool`), never on the file itself: saves rename a new file
//! over the old one, so a lock on the old one would guard nothing. It is taken after the
//! in-process lock and let go when the [`FileLock`] is dropped (closing the descriptor), so
//! a process that dies holding it frees it. Only programs that take it are held off; an
//! editor is not.
//!
//! Other platforms (none is built for today) take no lock: only the in-process lock guards the
//! file there.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long another process may hold a lock before [`lock`] gives up.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);

/// A held lock; dropping it lets go.
#[derive(Debug)]
pub(crate) struct FileLock {
    #[cfg(any(unix, windows))]
    _file: std::fs::File,
}

/// The lock file of `path`: its stem with `.lock` (`mcp.json` → `mcp.lock`), or its name
/// with `.lock` when that would be the file itself.
#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "file".to_string(), |n| n.to_string_lossy().into_owned());
    let stem = path
        .file_stem()
        .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
    let mut lock = format!("{stem}.lock");
    if lock == name {
        lock = format!("{name}.lock");
    }
    path.with_file_name(lock)
}

/// Takes the lock of `path` (see [`lock_path`]), waiting up to `limit` for another process
/// to let it go.
#[cfg(any(unix, windows))]
pub(crate) async fn lock(path: &Path, limit: Duration) -> std::io::Result<FileLock> {
    let lock_file = lock_path(path);
    if let Some(dir) = lock_file.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::secret_files::create_private_dir(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(&lock_file)?;
    let started = tokio::time::Instant::now();
    loop {
        match try_lock(&file) {
            Ok(()) => return Ok(FileLock { _file: file }),
            Err(e) if is_held_elsewhere(&e) => {}
            Err(e) => return Err(e),
        }
        if started.elapsed() >= limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "another process has held {} for over {} s; try again, or end the other agenvoy-mcp",
                    lock_file.display(),
                    limit.as_secs()
                ),
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Locks `file` exclusively without waiting (released when it is closed).
#[cfg(unix)]
fn try_lock(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor the caller owns; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    Err(std::io::Error::last_os_error())
}

/// Locks `file`'s first byte exclusively without waiting (released when it is closed).
#[cfg(windows)]
fn try_lock(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
    };
    // SAFETY: OVERLAPPED is plain data; all zero locks from offset 0.
    let mut at_start = unsafe { std::mem::zeroed() };
    // SAFETY: a handle the caller owns, opened synchronously, so the call completes before it
    // returns and `at_start` outlives it.
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle(),
            LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
            0,
            1,
            0,
            &mut at_start,
        )
    };
    if ok != 0 {
        return Ok(());
    }
    Err(std::io::Error::last_os_error())
}

/// Whether `error` from [`try_lock`] says another holder has the lock (try again).
#[cfg(any(unix, windows))]
fn is_held_elsewhere(error: &std::io::Error) -> bool {
    // ERROR_LOCK_VIOLATION: Windows's answer to a lock that is taken.
    const ERROR_LOCK_VIOLATION: i32 = 33;
    matches!(
        error.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
    ) || (cfg!(windows) && error.raw_os_error() == Some(ERROR_LOCK_VIOLATION))
}

/// Takes no lock: this build has neither `flock` nor `LockFileEx` (see the module doc).
#[cfg(not(any(unix, windows)))]
pub(crate) async fn lock(_path: &Path, _limit: Duration) -> std::io::Result<FileLock> {
    Ok(FileLock {})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_files_sit_beside_and_are_never_the_file() {
        let table = [
            ("/c/mcp.json", "/c/mcp.lock"),
            ("/c/allow_tool", "/c/allow_tool.lock"),
            ("/c/x.lock", "/c/x.lock.lock"),
            ("rel.json", "rel.lock"),
        ];
        for (file, lock) in table {
            assert_eq!(lock_path(Path::new(file)), Path::new(lock), "{file}");
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_missing_folder_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a").join("b");
        let _held = lock(&folder.join("mcp.json"), LOCK_WAIT).await.unwrap();
        for made in [dir.path().join("a"), folder] {
            let mode = std::fs::metadata(&made).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", made.display());
        }
    }

    #[tokio::test]
    async fn a_second_holder_waits_then_gives_up_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        let held = lock(&file, LOCK_WAIT).await.unwrap();
        // A second open file description conflicts as another process's would.
        let waited = lock(&file, Duration::from_millis(100)).await.unwrap_err();
        assert_eq!(waited.kind(), std::io::ErrorKind::TimedOut);
        assert!(waited.to_string().contains("mcp.lock"), "{waited}");
        drop(held);
        lock(&file, Duration::from_millis(100)).await.unwrap();
    }
}
