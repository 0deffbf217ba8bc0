//! The Windows side of a stdio server: how its command is started (found over `PATH` and
//! `PATHEXT`, batch files through `cmd.exe` with their arguments checked), and its process
//! tree held in a Job Object, the Windows counterpart of the Unix process group.
//!
//! The server is created suspended, put in a new job and only then resumed, so nothing it
//! starts escapes the job. The job is made to kill every process in it when its last handle
//! closes: when the transport is closed or dropped, and when this process dies, however it
//! dies. It also gets `CREATE_NO_WINDOW` (its console is a hidden one of its own, so it never
//! writes over a panel, and the console's Ctrl-C and closing reach only us, who close it in
//! order) and `CREATE_NEW_PROCESS_GROUP`.

use super::command;
use super::{GRACE, StdioConfig, wait_until};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::time::Duration;
use tokio::process::{Child, Command};
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, CREATE_SUSPENDED, OpenThread, ResumeThread,
    THREAD_SUSPEND_RESUME,
};

/// A variable of the server's environment: its `env` entry when it sets one (names ignore
/// case on Windows), else this process's when the server inherits it.
fn variable(config: &StdioConfig, name: &str) -> Option<String> {
    if let Some((_, value)) = config
        .env
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
    {
        return Some(value.clone());
    }
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// The command that starts the server of `config`: its program found as Windows finds it
/// (`npx` is `npx.cmd`), a batch file run by the system's `cmd.exe` on a command line built by
/// [`command::batch_command_line`] (or refused: the error names the argument). Created
/// suspended, in a new process group, with no window.
pub(super) fn command(config: &StdioConfig) -> Result<Command, String> {
    let cwd = config
        .cwd
        .as_ref()
        .map(|d| d.to_string_lossy().into_owned());
    let program = command::resolve(
        &config.command,
        variable(config, "PATH").as_deref(),
        variable(config, "PATHEXT").as_deref(),
        cwd.as_deref(),
        &|p: &str| std::path::Path::new(p).is_file(),
    )
    .unwrap_or_else(|| config.command.clone());
    let mut cmd = if command::is_batch(&program) {
        let line = command::batch_command_line(&program, &config.args)
            .map_err(|refusal| format!("{}: {refusal}", config.command))?;
        let system_root = std::env::var("SystemRoot").ok();
        let mut cmd = Command::new(command::cmd_exe(system_root.as_deref()));
        cmd.raw_arg(line);
        cmd
    } else {
        let mut cmd = Command::new(&program);
        cmd.args(&config.args);
        cmd
    };
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
    Ok(cmd)
}

/// The Job Object holding a server's process tree. Dropping it closes its handle, which kills
/// every process still in it.
pub(super) struct Tree {
    job: OwnedHandle,
}

impl Tree {
    /// Puts `child`, started suspended by [`command`], in a new job that kills its processes
    /// when closed, then resumes it. On an error the child is killed, and the error says what
    /// failed.
    pub(super) fn adopt(child: &mut Child) -> Result<Tree, String> {
        let adopted = Self::job(child).and_then(|tree| {
            let pid = child.id().ok_or("the server exited before it started")?;
            resume(pid)?;
            Ok(tree)
        });
        if adopted.is_err() {
            let _ = child.start_kill();
        }
        adopted
    }

    fn job(child: &Child) -> Result<Tree, String> {
        let process = child
            .raw_handle()
            .ok_or("the server exited before it started")?;
        // SAFETY: no name and no security attributes; the handle returned is ours to own.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(os_error("cannot create a Job Object for the server"));
        }
        // SAFETY: `raw` is a new handle that nothing else owns.
        let job = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the job handle is open; the struct is of the class named, with its size.
        let set = unsafe {
            SetInformationJobObject(
                job.as_raw_handle() as HANDLE,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == 0 {
            return Err(os_error("cannot set up the server's Job Object"));
        }
        // SAFETY: both handles are open (the child's is held by `child`).
        if unsafe { AssignProcessToJobObject(job.as_raw_handle() as HANDLE, process as HANDLE) }
            == 0
        {
            return Err(os_error("cannot put the server in a Job Object"));
        }
        Ok(Tree { job })
    }

    /// How many processes of the job still run; 0 when it cannot be asked (nothing to wait for).
    fn active(&self) -> u32 {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the job handle is open; the struct is of the class named, with its size.
        let ok = unsafe {
            QueryInformationJobObject(
                self.job.as_raw_handle() as HANDLE,
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 { 0 } else { info.ActiveProcesses }
    }

    /// Ends every process of the job.
    fn terminate(&self) {
        // SAFETY: the job handle is open.
        unsafe {
            TerminateJobObject(self.job.as_raw_handle() as HANDLE, 1);
        }
    }
}

/// Resumes every thread of process `pid` (one, the main thread, for a process created
/// suspended).
fn resume(pid: u32) -> Result<(), String> {
    // SAFETY: a snapshot of all threads; the handle is closed by the OwnedHandle.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE || raw.is_null() {
        return Err(os_error("cannot list the server's threads to start it"));
    }
    // SAFETY: a new handle that nothing else owns.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
    // SAFETY: all-zero is a valid value of this plain C struct; dwSize is set as required.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: the snapshot is open and `entry` has its size set.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle() as HANDLE, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a thread id from the snapshot; the handle is closed by the OwnedHandle.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                // SAFETY: a new handle that nothing else owns.
                let thread = unsafe { OwnedHandle::from_raw_handle(thread as RawHandle) };
                // SAFETY: the thread handle is open with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle() as HANDLE, &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(os_error("cannot start the server's suspended main thread"));
    }
    Ok(())
}

/// `what` and the last OS error.
fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// The close sequence on Windows, after stdin is closed: wait up to [`GRACE`] for the server to
/// exit; then, if it or anything it started still runs, terminate the whole job and wait up to
/// [`GRACE`] again. Windows has no polite counterpart of SIGTERM for a process with no
/// console window of ours, so the second step is the kill; the bounds are those of Unix (at
/// most 4 s). Closing the job's handle at the end kills anything left.
pub(super) fn shut_down(mut child: Child, tree: Tree) {
    let mut exited = || matches!(child.try_wait(), Ok(Some(_)) | Err(_));
    wait_until(GRACE, Duration::from_millis(1), &mut exited);
    if exited() && tree.active() == 0 {
        return;
    }
    tree.terminate();
    wait_until(GRACE, Duration::from_millis(10), || {
        exited() && tree.active() == 0
    });
}
