//! Start-up on huge pages: the process runs again in place (same process id, same
//! arguments) with glibc's malloc asked to back its memory with transparent huge pages
//! (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), where the kernel gives them only on request.
//!
//! A question touches the model's weights and SQLite's page cache after the bot sat idle,
//! and memory left alone for a while is slow to touch again page by page: on the 2-core
//! machines this is measured on, ONNX Runtime alone took 1.7 ms for a question right after
//! another and 85-130 ms after a 2 s pause; 24 MB read after a pause took 120 ms on 4 KiB
//! pages and 3.6 ms on huge pages. dev60's questions, each asked after a conversation was
//! stored, went from 35 / 57 ms (p50 / p99) to 20 / 34 ms on huge pages.

use std::ffi::OsString;

/// The glibc tunable that makes malloc ask for transparent huge pages.
pub const TUNABLE: &str = "glibc.malloc.hugetlb";

/// Set to `0` to keep the memory as the system gives it (no second start). The second start
/// has it set to `STARTED`, so that there is never a third, whatever glibc makes of the
/// tunables (it rewrites the variable as it reads it).
pub const OPT_OUT: &str = "ENGRAM_HUGE_PAGES";

/// `OPT_OUT`'s value in the second start (and in the processes it starts).
pub const STARTED: &str = "started";

/// Where the kernel says when it gives transparent huge pages.
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// The `GLIBC_TUNABLES` to start again with, or None to go on as started: when the kernel
/// gives huge pages only on request (`thp` is the kernel's setting, `[madvise]` chosen),
/// nobody set the tunable already (`tunables`: the current value; not text, or naming it,
/// is left as it is) and `opt_out` is neither `0` nor `STARTED`. Other tunables are kept.
pub fn tunables_for(
    tunables: Option<&OsString>,
    thp: &str,
    opt_out: Option<&OsString>,
) -> Option<String> {
    if opt_out.is_some_and(|v| v == "0" || v == STARTED) || !thp.contains("[madvise]") {
        return None;
    }
    let current = match tunables {
        None => "",
        Some(t) => t.to_str()?,
    };
    if current
        .split(':')
        .any(|t| t.split('=').next() == Some(TUNABLE))
    {
        return None;
    }
    Some(if current.is_empty() {
        format!("{TUNABLE}=1")
    } else {
        format!("{current}:{TUNABLE}=1")
    })
}

/// True when glibc `version` ("2.36") reads `TUNABLE` (2.35 and later).
pub fn reads_the_tunable(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    matches!(
        (parts.next().flatten(), parts.next().flatten()),
        (Some(major), Some(minor)) if (major, minor) >= (2, 35)
    )
}

/// Starts this program again in place on huge pages when `tunables_for` says so, its glibc
/// reads the tunable and it was started by the kernel (not as `ld.so engram`, where
/// `/proc/self/exe` is the loader); call it first in `main`, before any thread starts.
/// Returns only when it did not: with None when there was no need, or the error that kept
/// the program from starting again (it goes on as it is; the caller logs it once logging is
/// set up).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn restart_on_huge_pages() -> Option<std::io::Error> {
    use std::os::unix::process::CommandExt;
    // SAFETY: both only read: the auxiliary vector, and glibc's static version string.
    let (loaded_by_kernel, version) = unsafe {
        (
            libc::getauxval(libc::AT_BASE) != 0,
            std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()),
        )
    };
    if !loaded_by_kernel || !reads_the_tunable(&version.to_string_lossy()) {
        return None;
    }
    let thp = std::fs::read_to_string(THP_ENABLED).unwrap_or_default();
    let tunables = tunables_for(
        std::env::var_os("GLIBC_TUNABLES").as_ref(),
        &thp,
        std::env::var_os(OPT_OUT).as_ref(),
    )?;
    // The program's own path (what /proc/self/exe names): started as /proc/self/exe, the
    // process would be called "exe" in ps and top.
    let program = match std::env::current_exe() {
        Ok(path) => path,
        Err(e) => return Some(e),
    };
    let mut args = std::env::args_os();
    let mut again = std::process::Command::new(program);
    if let Some(name) = args.next() {
        again.arg0(name);
    }
    let failed = again
        .args(args)
        .env("GLIBC_TUNABLES", tunables)
        .env(OPT_OUT, STARTED)
        .exec();
    // The standard library set SIGPIPE back to its default for the new program; this one
    // goes on, and expects a closed pipe to be an error, not the end of the process.
    // SAFETY: setting a signal's disposition to "ignore", as Rust's start-up does.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    Some(failed)
}

/// Elsewhere the memory stays as the system gives it.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn restart_on_huge_pages() -> Option<std::io::Error> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> OsString {
        OsString::from(s)
    }

    const MADVISE: &str = "always [madvise] never\n";

    #[test]
    fn asks_for_huge_pages_only_where_the_kernel_gives_them_on_request() {
        assert_eq!(
            tunables_for(None, MADVISE, None).as_deref(),
            Some("glibc.malloc.hugetlb=1")
        );
        // Given to every process already, or never: nothing to ask.
        assert_eq!(tunables_for(None, "[always] madvise never\n", None), None);
        assert_eq!(tunables_for(None, "always madvise [never]\n", None), None);
        // No such file (not Linux, no THP in the kernel).
        assert_eq!(tunables_for(None, "", None), None);
    }

    #[test]
    fn keeps_what_was_set_and_starts_again_only_once() {
        assert_eq!(
            tunables_for(Some(&os("glibc.malloc.trim_threshold=0")), MADVISE, None).as_deref(),
            Some("glibc.malloc.trim_threshold=0:glibc.malloc.hugetlb=1")
        );
        assert_eq!(
            tunables_for(Some(&os("")), MADVISE, None).as_deref(),
            Some("glibc.malloc.hugetlb=1")
        );
        // Set by the start before, or by the operator (to 0 as well): left as it is.
        for set in [
            "glibc.malloc.hugetlb=1",
            "glibc.malloc.hugetlb=0",
            "glibc.malloc.trim_threshold=0:glibc.malloc.hugetlb=2",
        ] {
            assert_eq!(tunables_for(Some(&os(set)), MADVISE, None), None, "{set}");
        }
        // A tunable whose name only begins the same is another one.
        assert_eq!(
            tunables_for(Some(&os("glibc.malloc.hugetlbx=1")), MADVISE, None).as_deref(),
            Some("glibc.malloc.hugetlbx=1:glibc.malloc.hugetlb=1")
        );
    }

    #[test]
    fn the_operator_can_opt_out_and_the_second_start_is_the_last() {
        assert_eq!(tunables_for(None, MADVISE, Some(&os("0"))), None);
        assert_eq!(tunables_for(None, MADVISE, Some(&os(STARTED))), None);
        assert!(tunables_for(None, MADVISE, Some(&os("1"))).is_some());
    }

    #[test]
    fn only_a_glibc_that_reads_the_tunable() {
        for (version, reads) in [
            ("2.36", true),
            ("2.35", true),
            ("3.0", true),
            ("2.34", false),
            ("2.31", false),
            ("1.99", false),
            ("", false),
            ("2", false),
            ("x.y", false),
        ] {
            assert_eq!(reads_the_tunable(version), reads, "{version}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn tunables_that_are_not_text_are_left_alone() {
        use std::os::unix::ffi::OsStringExt;
        let bytes = OsString::from_vec(vec![0x67, 0xff, 0x3d, 0x31]);
        assert_eq!(tunables_for(Some(&bytes), MADVISE, None), None);
    }
}
