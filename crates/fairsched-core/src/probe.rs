//! Code the core must not be able to contain. Off unless built with
//! `--cfg fairsched_probe` (std access: the build must fail, the core being
//! `no_std`) or `--cfg fairsched_probe_macros` (compile-time reads: clippy
//! must refuse them). `tests/core/discipline.rs` does both.

#[cfg(fairsched_probe)]
pub mod std_access {
    pub fn open_a_file() -> bool {
        std::fs::File::open("trace.swf").is_ok() // PROBE: file
    }
    pub fn read_the_environment() -> bool {
        std::env::var("HOME").is_ok() // PROBE: environment
    }
    pub fn look_at_the_wall_clock() -> bool {
        std::time::SystemTime::now() > std::time::UNIX_EPOCH // PROBE: wall clock
    }
    pub fn look_at_a_monotonic_clock() -> bool {
        std::time::Instant::now().elapsed().as_nanos() > 0 // PROBE: monotonic clock
    }
    pub fn start_a_thread() {
        std::thread::spawn(|| ()); // PROBE: thread
    }
    pub fn open_a_socket() -> bool {
        std::net::TcpStream::connect("127.0.0.1:1").is_ok() // PROBE: network
    }
    pub fn run_a_process() -> bool {
        std::process::Command::new("true").status().is_ok() // PROBE: process
    }
}

#[cfg(fairsched_probe_macros)]
pub mod compile_time_reads {
    pub static A_FILE: &[u8] = include_bytes!("lib.rs"); // PROBE: include_bytes
    pub static A_TEXT: &str = include_str!("lib.rs"); // PROBE: include_str
    pub static A_VARIABLE: Option<&str> = option_env!("HOME"); // PROBE: option_env
    pub static A_BUILD_VARIABLE: &str = env!("CARGO_PKG_NAME"); // PROBE: env
}
