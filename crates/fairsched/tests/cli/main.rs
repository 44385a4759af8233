//! The integration tests of the `fairsched` binary, one test binary (one
//! link): each runs the program as a user would (real processes: the
//! command line, the live service, Slurm, the browser, the README's
//! examples).

mod admin;
mod browser;
mod cli;
mod common;
mod examples;
mod experiment_diet;
mod experiment_pffp;
mod experiment_workflow;
mod formats_out;
mod live_auth;
mod live_cheap_reads;
mod live_cost;
mod live_crash;
mod live_dashboard;
mod live_door;
mod live_files;
mod live_hostile;
mod live_isolation;
mod live_kill;
mod live_limits;
mod live_log_bounds;
mod live_operator;
mod live_optional;
mod live_scale;
mod live_tls;
mod live_worker_loss;
mod live_workflow;
mod one_read;
mod out_folder;
mod outputs;
mod report_exp;
mod report_sim;
mod simulate_semantics;
mod slurm_array;
mod slurm_pilots;
mod slurm_steer;
mod stdout_and_errors;
mod trace_tau;
mod trial_inputs;
mod trips;
