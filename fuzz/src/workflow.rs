//! The `workflow` target: a workflow file as `--workflow FILE` reads it
//! (`WorkflowSource::load`): a WfCommons JSON instance, plain or gzip, or a
//! TOML profile, the format chosen by the content (the file has no
//! extension), then instances drawn from it.
//!
//! The input is the file's bytes. Besides never panicking: every error
//! names the file, and an instance is topologically sorted, its critical
//! path at most its total work, with one child list per task.

use fairsched_trace::workflow::{LoadOptions, WorkflowSource};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use crate::tmp::TempFile;

/// Instances are drawn only from workflows this small (a profile may
/// declare up to 10⁷ tasks, a bounded but slow instance).
const DRAW_TASKS: usize = 2_000;

pub fn exercise(data: &[u8]) {
    let file = TempFile::new("", data);
    let source = match WorkflowSource::load(&file.0, &LoadOptions::default()) {
        Ok(source) => source,
        Err(e) => {
            let msg = e.to_string();
            let name = file.0.display().to_string();
            assert!(msg.contains(&name), "{msg}");
            return;
        }
    };
    let _ = source.name();
    if source.task_count() > DRAW_TASKS {
        return;
    }
    let w = source.instantiate(&mut Pcg64Mcg::seed_from_u64(1));
    assert_eq!(w.tasks.len(), source.task_count());
    assert!(w.is_topologically_sorted(), "{}", w.name);
    assert!(w.critical_path() <= w.total_work());
    assert_eq!(w.children().len(), w.tasks.len());
    assert_eq!(w.activity_sizes().iter().sum::<usize>(), w.tasks.len());
}
