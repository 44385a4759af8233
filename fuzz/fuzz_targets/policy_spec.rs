#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairsched_fuzz::policy_spec::exercise(data));
