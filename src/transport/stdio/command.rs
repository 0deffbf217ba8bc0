//! How Windows finds and starts a server's command, as plain functions of what they are given
//! (the `PATH`, the `PATHEXT`, which files exist), so that they run and are tested on every
//! platform; only their call sites are Windows-only.
//!
//! - [`resolve`]: a command is found as `cmd.exe` finds it. `npx` is `npx.cmd` (npm also puts
//!   an extensionless shell script `npx` beside it, which Windows cannot start), so the
//!   configs copied from server READMEs work unchanged. `CreateProcess`, and so
//!   `std::process::Command`, would only try `npx.exe`.
//! - [`batch_command_line`]: a `.cmd` or `.bat` file runs inside `cmd.exe`, which reads its
//!   command line for `&`, `|`, `<`, `>`, `^`, `%` and quotes before the script sees it (the
//!   2024 "BatBadBut" class of command injection). Every argument that holds anything but
//!   plain characters is quoted, and an argument that no quoting makes safe (one holding `"`,
//!   `%` or a control character) is refused with an error that names it.

/// What `PATHEXT` is when it is not set: the extensions `CreateProcess` can start.
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The extensions of `PATHEXT` that name programs `CreateProcess` starts (directly, or
/// through `cmd.exe` for batch files); others (`.VBS`, `.JS`, `.MSC`, ...) need another
/// program, so a search never stops at them.
const STARTABLE: &[&str] = &[".com", ".exe", ".bat", ".cmd"];

/// The extensions to try, in `pathext`'s order (`;`-separated, as `PATHEXT` is), only those
/// of [`STARTABLE`]; [`DEFAULT_PATHEXT`]'s when that leaves none.
fn extensions(pathext: Option<&str>) -> Vec<String> {
    let pick = |list: &str| -> Vec<String> {
        list.split(';')
            .map(str::trim)
            .filter(|e| STARTABLE.iter().any(|s| s.eq_ignore_ascii_case(e)))
            .map(str::to_string)
            .collect()
    };
    let picked = pick(pathext.unwrap_or(""));
    if picked.is_empty() {
        pick(DEFAULT_PATHEXT)
    } else {
        picked
    }
}

/// Whether `command` names a path (it holds a separator or a drive) rather than a program to
/// look for on `PATH`.
fn is_path(command: &str) -> bool {
    command.contains(['/', '\\']) || command.as_bytes().get(1) == Some(&b':')
}

/// Whether `path` is absolute on Windows: `C:\...`, `\\server\...` or `\...` (the current
/// drive's root).
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    matches!(b.first(), Some(b'\\' | b'/'))
        || (b.len() >= 3 && b[1] == b':' && matches!(b[2], b'\\' | b'/'))
}

/// `dir` and `name` joined with a backslash.
fn join(dir: &str, name: &str) -> String {
    if dir.ends_with(['\\', '/']) {
        format!("{dir}{name}")
    } else {
        format!("{dir}\\{name}")
    }
}

/// The extension of the last component of `path`, with its dot (`.cmd`), if it has one.
fn extension(path: &str) -> Option<&str> {
    let name = path.rsplit(['\\', '/']).next().unwrap_or(path);
    name.rfind('.').filter(|&i| i > 0).map(|i| &name[i..])
}

/// The files that `path` (a command with its folder, if any) may mean, in the order
/// `cmd.exe` tries them: the name itself when its extension is one that starts, then the name
/// with each extension.
fn candidates(path: &str, extensions: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if extension(path).is_some_and(|e| extensions.iter().any(|x| x.eq_ignore_ascii_case(e))) {
        out.push(path.to_string());
    }
    out.extend(extensions.iter().map(|e| format!("{path}{e}")));
    out
}

/// The file Windows would start for `command`, given the `PATH` and `PATHEXT` the server
/// gets (`None`: unset), its working folder `cwd` (for a relative path), and `is_file`, which
/// says whether a path is an existing file (Windows file names ignore case).
///
/// A command with a separator or a drive is a path: it is tried as it is (when its extension
/// starts) and with each extension of `PATHEXT`. A bare name is looked for in each folder of
/// `PATH`, in order, the same way; the current folder is not searched (unlike `cmd.exe`, as
/// `CreateProcess` with `NoDefaultCurrentDirectoryInExePath` does), so a file planted in the
/// folder a server starts in is never run for it. `None` when nothing is found: the command
/// is then left to `CreateProcess` (which also tries the system folders), and its error.
pub(crate) fn resolve(
    command: &str,
    path: Option<&str>,
    pathext: Option<&str>,
    cwd: Option<&str>,
    is_file: &dyn Fn(&str) -> bool,
) -> Option<String> {
    if command.is_empty() {
        return None;
    }
    let extensions = extensions(pathext);
    if is_path(command) {
        let full = match cwd {
            Some(cwd) if !is_absolute(command) && !cwd.is_empty() => join(cwd, command),
            _ => command.to_string(),
        };
        return candidates(&full, &extensions)
            .into_iter()
            .find(|c| is_file(c));
    }
    path.unwrap_or("")
        .split(';')
        .map(|dir| dir.trim().trim_matches('"'))
        .filter(|dir| !dir.is_empty())
        .flat_map(|dir| candidates(&join(dir, command), &extensions))
        .find(|c| is_file(c))
}

/// Whether `program` is a batch file, which only `cmd.exe` runs.
pub(crate) fn is_batch(program: &str) -> bool {
    extension(program)
        .is_some_and(|e| e.eq_ignore_ascii_case(".cmd") || e.eq_ignore_ascii_case(".bat"))
}

/// `cmd.exe` of the system folder (`%SystemRoot%\System32\cmd.exe`, given `SystemRoot`), never
/// one found on `PATH` or in the current folder.
pub(crate) fn cmd_exe(system_root: Option<&str>) -> String {
    let root = system_root
        .filter(|r| is_absolute(r))
        .unwrap_or("C:\\Windows");
    join(&join(root, "System32"), "cmd.exe")
}

/// Why a batch file's command line cannot be made safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The script's own path holds `"` or `%`.
    Script {
        /// The character.
        found: char,
    },
    /// Argument `index` (0-based, as in the config's `args`) holds `found`.
    Argument {
        /// Its place in `args`.
        index: usize,
        /// The character.
        found: char,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = |c: char| match c {
            '"' => "a double quote (\")".to_string(),
            '%' => "a percent sign (%), which cmd.exe expands even inside quotes".to_string(),
            c => format!("the control character U+{:04X}", c as u32),
        };
        match self {
            Refusal::Script { found } => write!(
                f,
                "the batch file's path holds {}; move it to a folder whose path does not",
                what(*found)
            ),
            // The argument itself is not shown: arguments are expanded from the environment,
            // and may be secrets.
            Refusal::Argument { index, found } => write!(
                f,
                "args[{index}] holds {}, which cannot be passed safely to a .cmd or .bat file through cmd.exe; remove it, or start the program the batch file runs (node, python, ...) directly",
                what(*found)
            ),
        }
    }
}

/// The character of `text` that no quoting makes safe on a `cmd.exe` command line, if any:
/// `"` (it ends a quoted stretch, so what follows is read as commands), `%` (variables are
/// expanded inside quotes too), and control characters (a line break ends the command).
fn unsafe_char(text: &str) -> Option<char> {
    text.chars()
        .find(|&c| c == '"' || c == '%' || (c.is_control() && c != '\t'))
}

/// Whether `arg` goes on the command line as it is: not empty, only letters, digits and
/// `-_./\:@+` (nothing `cmd.exe` or a batch file's own argument splitting reads).
fn plain(arg: &str) -> bool {
    !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./\\:@+".contains(&b))
}

/// What goes after `cmd.exe` to run batch file `script` with `args`:
/// `/d /e:ON /v:OFF /s /c ""<script>" <arg> "<arg>" ..."`.
///
/// `/d` skips the AutoRun commands of the registry, `/v:OFF` keeps `!` literal, and `/s`
/// makes `cmd.exe` drop only the outer pair of quotes and read the rest as it is. The script
/// is quoted; each argument that is not [`plain`] is quoted too, its trailing backslashes
/// doubled (so that the program the script hands `%*` to reads the closing quote as one).
/// Inside quotes `&`, `|`, `<`, `>`, `^`, `(` and `)` are text, and no argument holds a quote
/// (refused), so every special character stays inside a quoted stretch. Arguments holding
/// `"`, `%` or a control character are refused ([`Refusal`]).
pub(crate) fn batch_command_line(script: &str, args: &[String]) -> Result<String, Refusal> {
    if let Some(found) = script.chars().find(|&c| c == '"' || c == '%') {
        return Err(Refusal::Script { found });
    }
    let mut line = format!("/d /e:ON /v:OFF /s /c \"\"{script}\"");
    for (index, arg) in args.iter().enumerate() {
        if let Some(found) = unsafe_char(arg) {
            return Err(Refusal::Argument { index, found });
        }
        line.push(' ');
        if plain(arg) {
            line.push_str(arg);
        } else {
            line.push('"');
            line.push_str(arg);
            let trailing = arg.len() - arg.trim_end_matches('\\').len();
            line.extend(std::iter::repeat_n('\\', trailing));
            line.push('"');
        }
    }
    line.push('"');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `is_file` over a set of files, ignoring case and taking `/` for `\\` as Windows does.
    fn files(list: &[&str]) -> impl Fn(&str) -> bool {
        let normal = |p: &str| p.replace('/', "\\").to_ascii_lowercase();
        let list: Vec<String> = list.iter().map(|f| normal(f)).collect();
        move |p: &str| list.contains(&normal(p))
    }

    const PATH: &str = "C:\\Windows\\system32;C:\\Program Files\\nodejs\\;;\"C:\\Users\\Ann\\AppData\\Roaming\\npm\"";

    #[test]
    fn bare_names_are_found_over_path_and_pathext() {
        let exists = files(&[
            "C:\\Windows\\system32\\cmd.exe",
            "C:\\Program Files\\nodejs\\node.exe",
            "C:\\Program Files\\nodejs\\npx",
            "C:\\Program Files\\nodejs\\npx.cmd",
            "C:\\Users\\Ann\\AppData\\Roaming\\npm\\uvx.exe",
            "C:\\Users\\Ann\\AppData\\Roaming\\npm\\tool.bat",
            "C:\\Users\\Ann\\AppData\\Roaming\\npm\\tool.vbs",
        ]);
        let find = |c: &str, ext: Option<&str>| resolve(c, Some(PATH), ext, None, &exists);
        let pathext = Some(".COM;.EXE;.BAT;.CMD;.VBS;.VBE;.JS;.JSE;.WSF;.WSH;.MSC");
        // npm's extensionless shell script `npx` sits beside npx.cmd: never picked.
        assert_eq!(
            find("npx", pathext).as_deref(),
            Some("C:\\Program Files\\nodejs\\npx.CMD")
        );
        assert_eq!(
            find("node", pathext).as_deref(),
            Some("C:\\Program Files\\nodejs\\node.EXE")
        );
        // A folder quoted in PATH, and the default PATHEXT when none is set.
        assert_eq!(
            find("uvx", None).as_deref(),
            Some("C:\\Users\\Ann\\AppData\\Roaming\\npm\\uvx.EXE")
        );
        // PATHEXT's order decides; extensions that CreateProcess cannot start are skipped.
        assert_eq!(
            find("tool", Some(".VBS;.BAT")).as_deref(),
            Some("C:\\Users\\Ann\\AppData\\Roaming\\npm\\tool.BAT")
        );
        assert_eq!(
            find("tool", Some(".VBS")).as_deref(),
            find("tool", None).as_deref()
        );
        // A name with its extension is taken as it is.
        assert_eq!(
            find("npx.cmd", pathext).as_deref(),
            Some("C:\\Program Files\\nodejs\\npx.cmd")
        );
        assert_eq!(
            find("CMD.EXE", pathext).as_deref(),
            Some("C:\\Windows\\system32\\CMD.EXE")
        );
        // Not found: left to CreateProcess.
        assert_eq!(find("uv", pathext), None);
        assert_eq!(resolve("npx", None, pathext, None, &exists), None);
        assert_eq!(find("", pathext), None);
    }

    #[test]
    fn paths_are_tried_with_each_extension_and_never_searched() {
        let exists = files(&[
            "D:\\servers\\weather.cmd",
            "D:\\work\\bin\\local.exe",
            "D:\\work\\npx.cmd",
        ]);
        let find = |c: &str, cwd| resolve(c, Some("C:\\none"), None, cwd, &exists);
        assert_eq!(
            find("D:\\servers\\weather", None).as_deref(),
            Some("D:\\servers\\weather.CMD")
        );
        assert_eq!(
            find("D:/servers/weather.cmd", None).as_deref(),
            Some("D:/servers/weather.cmd")
        );
        // Relative paths are the server's working folder's.
        assert_eq!(
            find("bin\\local", Some("D:\\work")).as_deref(),
            Some("D:\\work\\bin\\local.EXE")
        );
        assert_eq!(
            find("bin\\local.exe", Some("D:\\work\\")).as_deref(),
            Some("D:\\work\\bin\\local.exe")
        );
        // A bare name is never looked for in the working folder.
        assert_eq!(find("npx", Some("D:\\work")), None);
    }

    #[test]
    fn batch_files_and_cmd_exe_are_recognized() {
        assert!(is_batch("C:\\x\\npx.CMD"));
        assert!(is_batch("run.bat"));
        assert!(!is_batch("C:\\x.cmd\\node.exe"));
        assert!(!is_batch("C:\\x\\.cmd"));
        assert_eq!(
            cmd_exe(Some("C:\\WINDOWS")),
            "C:\\WINDOWS\\System32\\cmd.exe"
        );
        // Unset or relative: never a cmd.exe of the current folder.
        assert_eq!(cmd_exe(None), "C:\\Windows\\System32\\cmd.exe");
        assert_eq!(cmd_exe(Some("Windows")), "C:\\Windows\\System32\\cmd.exe");
    }

    #[test]
    fn batch_arguments_are_quoted_so_they_stay_text() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let line = batch_command_line(
            "C:\\Program Files\\nodejs\\npx.cmd",
            &args(&["-y", "@modelcontextprotocol/server-everything", "C:\\data"]),
        )
        .unwrap();
        assert_eq!(
            line,
            "/d /e:ON /v:OFF /s /c \"\"C:\\Program Files\\nodejs\\npx.cmd\" -y @modelcontextprotocol/server-everything C:\\data\""
        );
        // Every character cmd.exe reads is kept inside quotes.
        let line = batch_command_line(
            "C:\\s.bat",
            &args(&[
                "a&calc",
                "x|y",
                "<in",
                ">out",
                "^",
                "(a)",
                "!PATH!",
                "two words",
                "",
                "k=v",
                "日本",
            ]),
        )
        .unwrap();
        assert_eq!(
            line,
            "/d /e:ON /v:OFF /s /c \"\"C:\\s.bat\" \"a&calc\" \"x|y\" \"<in\" \">out\" \"^\" \"(a)\" \"!PATH!\" \"two words\" \"\" \"k=v\" \"日本\"\""
        );
        // Trailing backslashes are doubled before a closing quote, not elsewhere.
        let line = batch_command_line("C:\\s.cmd", &args(&["C:\\my dir\\", "C:\\dir\\"])).unwrap();
        assert!(line.ends_with(" \"C:\\my dir\\\\\" C:\\dir\\\""), "{line}");
        // Outside the quotes of the script, only plain arguments and quoted stretches.
        for arg in ["a&b", "a b", "|", "x^y", "a,b;c"] {
            let line = batch_command_line("C:\\s.cmd", &args(&[arg])).unwrap();
            let body = &line["/d /e:ON /v:OFF /s /c \"".len()..line.len() - 1];
            let mut quoted = false;
            for c in body.chars() {
                if c == '"' {
                    quoted = !quoted;
                } else if !quoted {
                    assert!(
                        c == ' ' || c.is_ascii_alphanumeric() || "-_./\\:@+".contains(c),
                        "{c} in {line}"
                    );
                }
            }
            assert!(!quoted, "{line}");
        }
    }

    #[test]
    fn batch_arguments_that_cannot_be_quoted_are_refused_by_name() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let table = [
            (&["ok", "a\" & calc & \""][..], 1, '"'),
            (&["%PATH%"][..], 0, '%'),
            (&["50%"][..], 0, '%'),
            (&["a", "b", "line\nnext"][..], 2, '\n'),
            (&["cr\r"][..], 0, '\r'),
            (&["nul\0"][..], 0, '\0'),
        ];
        for (list, index, found) in table {
            let refusal = batch_command_line("C:\\s.cmd", &args(list)).unwrap_err();
            assert_eq!(refusal, Refusal::Argument { index, found }, "{list:?}");
            let text = refusal.to_string();
            assert!(text.contains(&format!("args[{index}]")), "{text}");
            // The value itself is never shown: it may be a secret.
            assert!(!text.contains("calc") && !text.contains("PATH"), "{text}");
        }
        assert_eq!(
            batch_command_line("C:\\%TEMP%\\s.cmd", &[]).unwrap_err(),
            Refusal::Script { found: '%' }
        );
        // A tab is quoted, not refused.
        assert!(batch_command_line("C:\\s.cmd", &args(&["a\tb"])).is_ok());
    }
}
