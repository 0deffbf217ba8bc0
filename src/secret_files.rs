//! Files that hold secrets: written whole or not at all, readable by their owner only.
//!
//! The temporary file is created beside the target under a random name, exclusively
//! (`O_CREAT | O_EXCL`, and `O_NOFOLLOW` on Unix; `CREATE_NEW` on Windows, which fails on any
//! existing name, a link too), mode 0600: whatever someone planted there (a file, a symlink to
//! the victim's other files) is never opened, followed or overwritten; a name that is taken is
//! skipped for another. Folders this crate creates are mode 0700, all of them made by
//! [`create_private_dir`], whatever the entry point.
//!
//! On Windows, modes are ACLs: each folder this crate creates and each private file gets an
//! explicit, protected DACL (nothing inherited from the folder above) that grants full access
//! to the current user and to SYSTEM only. The rename over an existing file replaces it
//! (`MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`, as `std::fs::rename` does).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How many random temporary names are tried: a clash is either chance (never, in practice)
/// or someone planting files, so a few tries are plenty.
const TEMP_TRIES: usize = 8;

/// Writes `bytes` to `path` by way of a new temporary file in the same folder, mode 0600,
/// then renames it over `path`: a reader sees the old file or the new one, never half of one.
/// A missing folder is created, mode 0700.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_private_with(path, bytes, true)
}

/// [`write_private`] without waiting for the disk (no `fsync`): for a cache, which a crash
/// may leave old or empty, never half written for a reader. Many times faster where a file
/// is written often (a cache entry per server connected).
pub(crate) fn write_private_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_private_with(path, bytes, false)
}

fn write_private_with(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let temporary = (0..TEMP_TRIES).map(|_| dir.join(format!(".{name}.{:016x}.tmp", random())));
    write_by_way_of(path, bytes, temporary, sync)
}

/// [`write_private`] with the temporary names to try, in order; `sync`: wait for the disk.
fn write_by_way_of(
    path: &Path,
    bytes: &[u8],
    temporary: impl IntoIterator<Item = PathBuf>,
    sync: bool,
) -> io::Result<()> {
    for tmp in temporary {
        let mut file = match create_new_private(&tmp) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let result = file
            .write_all(bytes)
            .and_then(|()| if sync { file.sync_all() } else { Ok(()) })
            .and_then(|()| std::fs::rename(&tmp, path));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        return result;
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "every temporary name tried beside {} was taken; remove the stray .*.tmp files there",
            path.display()
        ),
    ))
}

/// Creates `path`, which must not exist (not even as a symlink), mode 0600 (on Windows, the
/// current user's and SYSTEM's only).
pub(crate) fn create_new_private(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(path)?;
    #[cfg(windows)]
    if let Err(e) = acl::make_private(path, false) {
        // Nothing was written yet; an empty file is not left behind.
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(file)
}

/// Creates `dir` and any missing parent, each mode 0700 (on Windows, an ACL of the current
/// user's and SYSTEM's only); existing ones are left as they are. Every folder this crate
/// creates is made here.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(not(windows))]
    {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(dir)
    }
    #[cfg(windows)]
    {
        // The missing folders, outermost first; each gets its ACL before the next is made in it.
        let missing: Vec<&Path> = dir
            .ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .take_while(|a| !a.is_dir())
            .collect();
        for folder in missing.into_iter().rev() {
            match std::fs::create_dir(folder) {
                Ok(()) => acl::make_private(folder, true)?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && folder.is_dir() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Private ACLs on Windows.
#[cfg(windows)]
mod acl {
    use std::io;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, LocalFree};
    use windows_sys::Win32::Security::Authorization::{
        ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
        SDDL_REVISION_1, SE_FILE_OBJECT, SetNamedSecurityInfoW,
    };
    use windows_sys::Win32::Security::{
        ACL, DACL_SECURITY_INFORMATION, GetSecurityDescriptorDacl, GetTokenInformation,
        PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, TOKEN_QUERY, TOKEN_USER,
        TokenUser,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    /// `text` as a NUL-terminated wide string.
    fn wide(text: &std::ffi::OsStr) -> Vec<u16> {
        text.encode_wide().chain(Some(0)).collect()
    }

    /// The current user's SID, as text (`S-1-5-21-...`).
    pub(super) fn user_sid() -> io::Result<String> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: the pseudo-handle of this process; `token` receives a handle closed below.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let sid = (|| {
            // A TOKEN_USER and its SID fit in 256 bytes (a SID is at most 68); u64s align it.
            let mut buffer = [0u64; 32];
            let mut length = 0u32;
            // SAFETY: the buffer and its size in bytes; the token is open with TOKEN_QUERY.
            let ok = unsafe {
                GetTokenInformation(
                    token,
                    TokenUser,
                    buffer.as_mut_ptr().cast(),
                    size_of_val(&buffer) as u32,
                    &mut length,
                )
            };
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: GetTokenInformation wrote a TOKEN_USER at the start of the buffer.
            let user = unsafe { &*buffer.as_ptr().cast::<TOKEN_USER>() };
            let mut text = std::ptr::null_mut();
            // SAFETY: the SID inside the buffer; `text` receives a LocalAlloc'd string.
            if unsafe { ConvertSidToStringSidW(user.User.Sid, &mut text) } == 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a NUL-terminated wide string that Windows allocated.
            let length = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
            // SAFETY: `length` wide characters at `text`.
            let sid = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
            // SAFETY: allocated by ConvertSidToStringSidW with LocalAlloc.
            unsafe { LocalFree(text.cast()) };
            Ok(sid)
        })();
        // SAFETY: the token handle opened above.
        unsafe { CloseHandle(token) };
        sid
    }

    /// Gives `path` a protected DACL (nothing inherited) granting full access to the current
    /// user and to SYSTEM only; for a folder (`inherit`), inherited by what is made in it.
    pub(super) fn make_private(path: &Path, inherit: bool) -> io::Result<()> {
        let flags = if inherit { "OICI" } else { "" };
        let sid = user_sid()?;
        let sddl = format!("D:P(A;{flags};FA;;;{sid})(A;{flags};FA;;;SY)");
        let sddl = wide(std::ffi::OsStr::new(&sddl));
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a NUL-terminated SDDL string; `descriptor` receives a LocalAlloc'd one.
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut descriptor,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        let result = (|| {
            let (mut present, mut defaulted) = (0, 0);
            let mut dacl: *mut ACL = std::ptr::null_mut();
            // SAFETY: the descriptor made above; the DACL pointer points into it.
            let ok = unsafe {
                GetSecurityDescriptorDacl(descriptor, &mut present, &mut dacl, &mut defaulted)
            };
            if ok == 0 || present == 0 {
                return Err(io::Error::last_os_error());
            }
            let name = wide(path.as_os_str());
            // SAFETY: a NUL-terminated path and a DACL that lives until `descriptor` is freed.
            let status = unsafe {
                SetNamedSecurityInfoW(
                    name.as_ptr(),
                    SE_FILE_OBJECT,
                    DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    dacl,
                    std::ptr::null(),
                )
            };
            if status != 0 {
                return Err(io::Error::from_raw_os_error(status as i32));
            }
            Ok(())
        })();
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(descriptor) };
        result.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot make {} private to you: {e}", path.display()),
            )
        })
    }
}

/// 64 bits no one outside this process can guess: std's randomly keyed hasher (its keys come
/// from the OS) over the time, the process id and a counter.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn planted_symlinks_are_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let path = dir.path().join("tokens.json");
        // The name the old writer always used, and a dangling link it would have created.
        let old_name = dir
            .path()
            .join(format!(".tokens.json.{}.tmp", std::process::id()));
        symlink(&victim, &old_name).unwrap();
        write_private(&path, b"one").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        assert_eq!(mode(&path), 0o600);

        // Guessed names: each planted link is skipped for the next name.
        let guessed: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("g{i}"))).collect();
        symlink(&victim, &guessed[0]).unwrap();
        symlink(dir.path().join("created-through-a-link"), &guessed[1]).unwrap();
        write_by_way_of(&path, b"two", guessed.clone(), true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(mode(&path), 0o600);
        assert!(!guessed[2].exists(), "the temporary file was renamed");
        let e = write_by_way_of(&path, b"three", guessed[..2].to_vec(), false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(e.to_string().contains("remove the stray"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");

        // A symlink at the target itself is replaced, not followed.
        let link = dir.path().join("link.json");
        symlink(&victim, &link).unwrap();
        write_private(&link, b"four").unwrap();
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "four");

        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert!(!dir.path().join("created-through-a-link").exists());
    }

    #[test]
    fn temporary_names_are_unpredictable() {
        let names: std::collections::HashSet<u64> = (0..1000).map(|_| random()).collect();
        assert_eq!(names.len(), 1000);
    }

    #[test]
    fn created_folders_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("b").join("mcp.json");
        write_private(&path, b"{}").unwrap();
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&dir.path().join("a").join("b")), 0o700);
        assert_eq!(mode(&path), 0o600);
        // A folder that exists is left as it is.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_private(&open.join("f"), b"x").unwrap();
        assert_eq!(mode(&open), 0o755);
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;
    use windows_sys::Win32::Foundation::LocalFree;
    use windows_sys::Win32::Security::Authorization::{
        ConvertSecurityDescriptorToStringSecurityDescriptorW, GetNamedSecurityInfoW,
        SDDL_REVISION_1, SE_FILE_OBJECT,
    };
    use windows_sys::Win32::Security::{DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR};

    /// The DACL of `path` as SDDL (`D:P(A;;FA;;;S-1-5-...)...`).
    fn dacl(path: &Path) -> String {
        use std::os::windows::ffi::OsStrExt;
        let name: Vec<u16> = path.as_os_str().encode_wide().chain(Some(0)).collect();
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; `descriptor` receives a LocalAlloc'd one, freed below.
        let status = unsafe {
            GetNamedSecurityInfoW(
                name.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut descriptor,
            )
        };
        assert_eq!(status, 0, "reading the DACL of {}", path.display());
        let mut text = std::ptr::null_mut();
        // SAFETY: the descriptor read above; `text` receives a LocalAlloc'd wide string.
        let ok = unsafe {
            ConvertSecurityDescriptorToStringSecurityDescriptorW(
                descriptor,
                SDDL_REVISION_1,
                DACL_SECURITY_INFORMATION,
                &mut text,
                std::ptr::null_mut(),
            )
        };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        // SAFETY: a NUL-terminated wide string that Windows allocated.
        let length = (0..).take_while(|&i| unsafe { *text.add(i) } != 0).count();
        // SAFETY: `length` wide characters at `text`.
        let sddl = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, length) });
        // SAFETY: both allocated by Windows with LocalAlloc.
        unsafe {
            LocalFree(text.cast());
            LocalFree(descriptor);
        }
        sddl
    }

    /// Whether this runs under Wine (its ntdll exports `wine_get_version`; Windows's does not).
    fn under_wine() -> bool {
        use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
        // SAFETY: NUL-terminated names; ntdll is loaded in every process and never unloaded.
        unsafe {
            let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
            !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
        }
    }

    /// Files and the folders made for them grant the user and SYSTEM only, inheriting nothing
    /// from the folder above (which here grants others too).
    #[test]
    fn files_and_created_folders_are_the_users_and_systems_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("b").join("tokens.json");
        write_private(&path, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        if under_wine() {
            // Wine 8 takes the DACL without an error but does not keep it: it reads back one of
            // its own, unprotected and granting Everyone read (`...(A;;0x1200a9;;;WD)`).
            println!(
                "SKIPPED files_and_created_folders_are_the_users_and_systems_only: Wine reads back \
                 a DACL of its own ({}), not the one set",
                dacl(&path)
            );
            return;
        }
        let sid = acl::user_sid().unwrap();
        let folder = format!("D:P(A;OICI;FA;;;{sid})(A;OICI;FA;;;SY)");
        assert_eq!(dacl(&dir.path().join("a")), folder);
        assert_eq!(dacl(&dir.path().join("a").join("b")), folder);
        assert_eq!(dacl(&path), format!("D:P(A;;FA;;;{sid})(A;;FA;;;SY)"));
    }
}
