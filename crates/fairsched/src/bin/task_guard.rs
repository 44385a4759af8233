//! `fairsched-task-guard`: the guard a `fairsched worker` starts for each
//! run (`fairsched_worker::guard_hook`), as a program of its own: it is
//! started thousands of times a minute, and a small executable starts
//! several times faster than the whole `fairsched`.

fn main() {
    fairsched_worker::guard_hook();
    // Not started as a guard: it is not a command of its own.
    eprintln!(
        "fairsched-task-guard: started by `fairsched worker` for each run, not by hand (see `fairsched worker --help`)"
    );
    std::process::exit(2);
}
