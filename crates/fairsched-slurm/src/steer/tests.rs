//! The controller against a scripted Slurm: a queue that starts the
//! pending jobs of highest priority (site factor, then job number) as
//! processors free up, as Slurm's main scheduler does when the site
//! factor dominates. The real Slurm's tests are in
//! crates/fairsched/tests/cli/slurm_steer.rs.

use super::*;

#[derive(Clone, Debug)]
struct FakeJob {
    id: u64,
    user: String,
    account: String,
    cpus: u32,
    running_since: Option<i64>,
    /// Seconds it runs once started (Slurm knows; the controller never).
    runtime: i64,
    site: i64,
    held: bool,
    /// A pending element of array 900 not yet split off: squeue shows it
    /// as `900_ID` of record 900, sprio lists record 900 once.
    in_array: bool,
    /// Submitted as an array element: shown as `900_ID` for good.
    array_born: bool,
    name: String,
    /// Starts only once this job has left the queue (`afterok`).
    after: Option<u64>,
}

/// A one-partition Slurm with `cpus` processors.
#[derive(Clone, Debug)]
struct Fake {
    cpus: u32,
    now: i64,
    next: u64,
    jobs: Vec<FakeJob>,
    /// Printed instead of squeue's output once.
    garbage: Option<String>,
    updates: u64,
    calls: u32,
    config: String,
}

impl Fake {
    fn new(cpus: u32) -> Fake {
        Fake {
            cpus,
            now: 0,
            next: 100,
            jobs: Vec::new(),
            garbage: None,
            updates: 0,
            calls: 0,
            config: "PriorityType = priority/multifactor\nPrioritySiteFactorPlugin = (null)\nPriorityWeightAge = 1000\nPriorityWeightFairShare = 10000\n".into(),
        }
    }
    fn submit(&mut self, user: &str, account: &str, n: usize, runtime: i64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                self.next += 1;
                self.jobs.push(FakeJob {
                    id: self.next,
                    user: user.into(),
                    account: account.into(),
                    cpus: 1,
                    running_since: None,
                    runtime,
                    site: 0,
                    held: false,
                    in_array: false,
                    array_born: false,
                    name: "job".into(),
                    after: None,
                });
                self.next
            })
            .collect()
    }
    /// A workflow of `user`: a root job, then `width` jobs named
    /// `activity` that depend on it (each runs `runtime` s).
    fn workflow(&mut self, user: &str, account: &str, width: usize, runtime: i64) -> (u64, Vec<u64>) {
        let root = self.submit(user, account, 1, runtime)[0];
        let tasks = self.submit(user, account, width, runtime);
        for j in self.jobs.iter_mut().filter(|j| tasks.contains(&j.id)) {
            (j.name, j.after) = ("activity".into(), Some(root));
        }
        (root, tasks)
    }
    /// Its parent still in the queue.
    fn blocked(&self, j: &FakeJob) -> bool {
        j.after.is_some_and(|p| self.jobs.iter().any(|o| o.id == p))
    }
    /// Time passes: finished jobs leave, then the highest-priority
    /// pending jobs start while processors are free.
    fn advance(&mut self, secs: i64) {
        self.now += secs;
        let now = self.now;
        self.jobs
            .retain(|j| j.running_since.is_none_or(|s| now - s < j.runtime));
        loop {
            let busy: u32 = self
                .jobs
                .iter()
                .filter(|j| j.running_since.is_some())
                .map(|j| j.cpus)
                .sum();
            let next = self
                .jobs
                .iter()
                .filter(|j| j.running_since.is_none() && !j.held && !self.blocked(j))
                .max_by_key(|j| (j.site, std::cmp::Reverse(j.id)))
                .map(|j| (j.id, j.cpus));
            match next {
                Some((id, cpus)) if busy + cpus <= self.cpus => {
                    let j = self.jobs.iter_mut().find(|j| j.id == id).unwrap();
                    j.running_since = Some(now);
                }
                _ => break,
            }
        }
    }
    /// The array's own record: its last element, the one never split off.
    fn meta(&self) -> Option<&FakeJob> {
        self.jobs.iter().filter(|j| j.in_array).max_by_key(|j| j.id)
    }
    fn started(&self, ids: &[u64]) -> usize {
        self.jobs
            .iter()
            .filter(|j| ids.contains(&j.id) && j.running_since.is_some())
            .count()
            + ids
                .iter()
                .filter(|id| !self.jobs.iter().any(|j| j.id == **id))
                .count()
    }
}

impl Cluster for Fake {
    fn squeue(&mut self) -> Result<String, SlurmError> {
        if let Some(g) = self.garbage.take() {
            return Ok(g);
        }
        Ok(self
            .jobs
            .iter()
            .map(|j| {
                let shown = if j.array_born {
                    format!("900_{}", j.id)
                } else {
                    j.id.to_string()
                };
                let record = if j.in_array {
                    "900".to_string()
                } else {
                    j.id.to_string()
                };
                let (reason, dependency) = match j.after {
                    Some(p) if self.blocked(j) => ("Dependency", format!("afterok:{p}(unfulfilled)")),
                    _ => ("Priority", "(null)".to_string()),
                };
                format!(
                    "{}|{}|{}|{}|{}|1:00:00|{}|{reason}|{dependency}|{}\n",
                    shown,
                    record,
                    j.user,
                    j.account,
                    j.cpus,
                    if j.running_since.is_some() {
                        "RUNNING"
                    } else {
                        "PENDING"
                    },
                    j.name
                )
            })
            .collect())
    }
    fn sprio(&mut self) -> Result<String, SlurmError> {
        Ok(self
            .jobs
            .iter()
            .filter(|j| j.running_since.is_none() && !j.held && !j.in_array)
            .map(|j| format!("{}|{}\n", j.id, j.site))
            .chain(self.meta().map(|m| format!("900|{}\n", m.site)))
            .collect())
    }
    fn sinfo_cpus(&mut self) -> Result<String, SlurmError> {
        Ok(format!("0/{0}/0/{0}\n", self.cpus))
    }
    fn config(&mut self) -> Result<String, SlurmError> {
        Ok(self.config.clone())
    }
    fn accounts(&mut self) -> Result<String, SlurmError> {
        Ok("root|\nroot|root\nphysics|\nphysics|alice\nchemistry|carol\n".into())
    }
    fn set_site_factors(&mut self, updates: &[(String, i64)]) -> Result<Sent, SlurmError> {
        let mut sent = Sent::default();
        for chunk in updates.chunks(UPDATES_PER_CALL) {
            sent.calls += 1;
            for (id, v) in chunk {
                let split = id.strip_prefix("900_");
                match self.jobs.iter_mut().find(|j| {
                    split.map_or(j.id.to_string() == *id && !j.array_born, |k| {
                        j.array_born && j.id.to_string() == k
                    })
                }) {
                    Some(j) => {
                        j.site = *v;
                        self.updates += 1;
                        if j.in_array {
                            // Split off, unless it is the array's own record
                            // (then the value is every unsplit element's).
                            let id = j.id;
                            let meta = self.jobs.iter().filter(|j| j.in_array).map(|j| j.id).max();
                            if meta == Some(id) {
                                for e in self.jobs.iter_mut().filter(|e| e.in_array) {
                                    e.site = *v;
                                }
                            } else if let Some(j) = self.jobs.iter_mut().find(|j| j.id == id) {
                                j.in_array = false;
                            }
                        }
                    }
                    None => sent
                        .refused
                        .push((id.clone(), format!("Invalid job id specified for job {id}"))),
                }
            }
        }
        self.calls += sent.calls;
        Ok(sent)
    }
}

fn settings(policy: &str) -> Settings {
    Settings {
        policy: policy.into(),
        control: None,
        seed: 0,
        partition: None,
        orgs: vec![("physics".into(), 8), ("chemistry".into(), 8)],
        step: None,
    }
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("steer.db")
}

fn controller(path: &Path, policy: &str, fake: &mut Fake) -> Controller {
    Controller::open_or_create(path, &settings(policy), &Registry::builtin(), fake).unwrap()
}

/// One cycle at the fake's time.
fn cycle(c: &mut Controller, fake: &mut Fake) -> Cycle {
    let at = c.live().store().epoch_ms() + fake.now * 1000;
    c.cycle(fake, at, false).unwrap()
}

#[test]
fn under_fair_share_the_trickle_passes_the_flood() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(16);
    let mut c = controller(&db(&dir), "fair-share", &mut fake);
    // alice (physics) floods: 64 jobs of 60 s; 16 start at once.
    let flood = fake.submit("alice", "physics", 64, 60);
    fake.advance(1);
    cycle(&mut c, &mut fake);
    // carol (chemistry) submits 4 later, while the flood waits.
    fake.advance(10);
    let trickle = fake.submit("carol", "chemistry", 4, 60);
    let r = cycle(&mut c, &mut fake);
    assert_eq!(r.pending, 48 + 4);
    // Each of carol's jobs is above every waiting flood job.
    let site = |id: u64| fake.jobs.iter().find(|j| j.id == id).unwrap().site;
    let lowest_trickle = trickle.iter().map(|&id| site(id)).min().unwrap();
    let waiting_flood: Vec<u64> = flood
        .iter()
        .copied()
        .filter(|&id| fake.jobs.iter().any(|j| j.id == id && j.running_since.is_none()))
        .collect();
    assert!(waiting_flood.iter().all(|&id| site(id) < lowest_trickle));
    // When the first wave ends, carol's 4 jobs start before the flood's.
    fake.advance(50);
    assert_eq!(fake.started(&trickle), 4);
    // Without steering (every factor 0) the job numbers decide: carol
    // waits behind the whole flood.
    let mut plain = Fake::new(16);
    let _ = plain.submit("alice", "physics", 64, 60);
    plain.advance(11);
    let trickle = plain.submit("carol", "chemistry", 4, 60);
    plain.advance(50);
    assert_eq!(plain.started(&trickle), 0);
}

/// Two controllers on one queue (two databases, two orders: round-robin
/// interleaves the accounts, FCFS runs alice's first) undo each
/// other's factors: each finds, every cycle after its first, factors
/// changed behind its back (what `slurm steer` warns of, naming a second
/// controller from the second such cycle in a row).
#[test]
fn two_controllers_on_one_queue_find_each_others_factors_every_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(4);
    let mut fair = controller(&db(&dir), "round-robin", &mut fake);
    let mut fcfs = controller(&db(&other), "fcfs", &mut fake);
    fake.submit("alice", "physics", 10, 100);
    fake.submit("carol", "chemistry", 10, 100);
    fake.advance(1);
    let (a, b) = (cycle(&mut fair, &mut fake), cycle(&mut fcfs, &mut fake));
    assert!(a.not_stuck.is_empty() && b.not_stuck.is_empty());
    assert!(!a.changes.is_empty() && !b.changes.is_empty());
    for _ in 0..3 {
        let a = cycle(&mut fair, &mut fake);
        let b = cycle(&mut fcfs, &mut fake);
        assert!(!a.not_stuck.is_empty(), "{a:?}");
        assert!(!b.not_stuck.is_empty(), "{b:?}");
        for (job, set, found) in &a.not_stuck {
            assert_ne!(set, found, "{job}");
        }
    }
    // Alone again, the round-robin controller's factors stick.
    cycle(&mut fair, &mut fake);
    assert!(cycle(&mut fair, &mut fake).not_stuck.is_empty());
}

#[test]
fn a_factor_changed_behind_its_back_is_restored_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(4);
    let mut c = controller(&db(&dir), "fair-share", &mut fake);
    fake.submit("alice", "physics", 10, 100);
    fake.submit("carol", "chemistry", 10, 100);
    fake.advance(1);
    let first = cycle(&mut c, &mut fake);
    assert!(first.not_stuck.is_empty());
    assert_eq!(first.calls, 1);
    let pending: Vec<&FakeJob> = fake.jobs.iter().filter(|j| j.running_since.is_none()).collect();
    let (victim, good) = (pending[3].id, pending[3].site);
    fake.jobs.iter_mut().find(|j| j.id == victim).unwrap().site = 7;
    let next = cycle(&mut c, &mut fake);
    assert_eq!(next.not_stuck, vec![(victim.to_string(), good, 7)]);
    assert_eq!(next.changes.len(), 1, "{:?}", next.changes);
    assert_eq!(fake.jobs.iter().find(|j| j.id == victim).unwrap().site, good);
    assert_eq!(c.totals().not_stuck, 1);
    // A cycle where nothing changed sends nothing.
    let quiet = cycle(&mut c, &mut fake);
    assert!(quiet.changes.is_empty() && quiet.calls == 0);
}

/// The same script, with the controller dropped (as by `kill -9`: no
/// shutdown runs) and reopened between cycles, sets the same factors.
#[test]
fn a_restarted_controller_decides_as_one_that_was_not_stopped() {
    let run = |restart_every: Option<usize>| -> Vec<Vec<(String, i64, i64)>> {
        let dir = tempfile::tempdir().unwrap();
        let path = db(&dir);
        let mut fake = Fake::new(8);
        let mut c = controller(&path, "fair-share", &mut fake);
        let mut out = Vec::new();
        for round in 0..12 {
            let (user, account) = if round % 3 == 0 {
                ("carol", "chemistry")
            } else {
                ("alice", "physics")
            };
            fake.submit(user, account, 3 + round % 4, 20 + 7 * (round as i64 % 5));
            fake.advance(9);
            out.push(cycle(&mut c, &mut fake).changes);
            if restart_every.is_some_and(|k| round % k == k - 1) {
                drop(c);
                c = Controller::open(&path, &Registry::builtin()).unwrap();
            }
        }
        out
    };
    let straight = run(None);
    assert!(straight.iter().map(Vec::len).sum::<usize>() > 20);
    assert_eq!(run(Some(1)), straight);
    assert_eq!(run(Some(5)), straight);
}

#[test]
fn a_dry_run_changes_nothing_and_reset_puts_every_factor_back_to_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut fake = Fake::new(2);
    let mut c = controller(&path, "fair-share", &mut fake);
    fake.submit("alice", "physics", 6, 100);
    fake.submit("carol", "chemistry", 2, 100);
    fake.advance(1);
    let epoch = c.live().store().epoch_ms();
    let dry = c.cycle(&mut fake, epoch + 1000, true).unwrap();
    assert_eq!(dry.changes.len(), 6, "{:?}", dry.changes);
    assert_eq!(dry.who.len(), 6, "each change with its user, account and rank");
    let ranks: BTreeSet<u64> = dry.who.values().map(|w| w.2).collect();
    assert_eq!(ranks, (0..6).collect(), "{:?}", dry.who);
    assert_eq!(fake.updates, 0);
    assert!(fake.jobs.iter().all(|j| j.site == 0));
    assert_eq!(c.totals().cycles, 0);
    let steps = c.live().steps();
    drop(c);
    let mut c = Controller::open(&path, &Registry::builtin()).unwrap();
    assert_eq!(c.live().steps(), steps, "a dry run logs nothing");
    // The real cycle does what the dry run said.
    let real = cycle(&mut c, &mut fake);
    assert_eq!(real.changes, dry.changes);
    assert!(fake.jobs.iter().any(|j| j.site != 0));
    let (reset, sent) = c.reset(&mut fake).unwrap();
    assert!(sent.refused.is_empty());
    assert_eq!(reset, 6, "every pending job had a factor (2 of the 8 run)");
    assert!(fake.jobs.iter().all(|j| j.site == 0));
}

#[test]
fn output_that_does_not_parse_skips_the_whole_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(2);
    let mut c = controller(&db(&dir), "fair-share", &mut fake);
    fake.submit("alice", "physics", 4, 100);
    fake.advance(1);
    let steps = c.live().steps();
    fake.garbage = Some("101|101|alice|physics|1|1:00:00|RUNNING|None|(null)|job\n102|102|alice\n".into());
    let epoch = c.live().store().epoch_ms();
    let e = c.cycle(&mut fake, epoch + 1000, false).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    assert_eq!(c.live().steps(), steps, "nothing of the cycle was applied");
    assert!(c.jobs().is_empty());
    assert_eq!(c.totals().skipped, 1);
    assert_eq!(fake.updates, 0);
    // The next cycle runs normally.
    let r = cycle(&mut c, &mut fake);
    assert_eq!(r.pending + r.running, 4);
}

#[test]
fn jobs_gone_between_squeue_and_scontrol_are_refused_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(1);
    let mut c = controller(&db(&dir), "fair-share", &mut fake);
    fake.submit("alice", "physics", 3, 100);
    fake.submit("carol", "chemistry", 3, 100);
    fake.advance(1);
    // A Slurm whose queue lost two pending jobs after squeue ran.
    struct Losing<'a>(&'a mut Fake, Vec<String>);
    impl Cluster for Losing<'_> {
        fn squeue(&mut self) -> Result<String, SlurmError> {
            self.0.squeue()
        }
        fn sprio(&mut self) -> Result<String, SlurmError> {
            let s = self.0.sprio();
            let lost = &self.1;
            self.0.jobs.retain(|j| !lost.contains(&j.id.to_string()));
            s
        }
        fn sinfo_cpus(&mut self) -> Result<String, SlurmError> {
            self.0.sinfo_cpus()
        }
        fn config(&mut self) -> Result<String, SlurmError> {
            self.0.config()
        }
        fn accounts(&mut self) -> Result<String, SlurmError> {
            self.0.accounts()
        }
        fn set_site_factors(&mut self, u: &[(String, i64)]) -> Result<Sent, SlurmError> {
            self.0.set_site_factors(u)
        }
    }
    let lost: Vec<String> = fake.jobs.iter().rev().take(2).map(|j| j.id.to_string()).collect();
    let epoch = c.live().store().epoch_ms();
    let r = c
        .cycle(&mut Losing(&mut fake, lost.clone()), epoch + 1000, false)
        .unwrap();
    let mut refused: Vec<String> = r.refused.iter().map(|(j, _)| j.clone()).collect();
    refused.sort();
    let mut lost = lost;
    lost.sort();
    assert_eq!(refused, lost);
    assert_eq!(c.totals().refused, 2);
    // Next cycle: they are gone, cancelled in the core.
    let r = cycle(&mut c, &mut fake);
    assert_eq!(r.ended, 2);
}

/// Why creating a controller for `policy` on `fake` fails.
fn refused(dir: &tempfile::TempDir, fake: &mut Fake, policy: &str) -> String {
    match Controller::open_or_create(&db(dir), &settings(policy), &Registry::builtin(), fake) {
        Ok(_) => panic!("{policy} accepted on {fake:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_slurm_without_multifactor_or_with_a_site_factor_plugin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(2);
    fake.config = "PriorityType = priority/basic\n".into();
    let e = refused(&dir, &mut fake, "fair-share");
    assert!(e.contains("priority/multifactor"), "{e}");
    fake.config =
        "PriorityType = priority/multifactor\nPrioritySiteFactorPlugin = site_factor/example\n".into();
    let e = refused(&dir, &mut fake, "fair-share");
    assert!(e.contains("site factor plugin"), "{e}");
    assert!(!db(&dir).exists());
}

#[test]
fn clairvoyant_and_preempting_policies_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(2);
    for (policy, says) in [("ref", "clairvoyant"), ("diet-ethic", "never stops a job")] {
        let e = refused(&dir, &mut fake, policy);
        assert!(e.contains(says), "{policy}: {e}");
    }
}

#[test]
fn reopening_with_other_settings_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(2);
    drop(controller(&db(&dir), "fair-share", &mut fake));
    let e = refused(&dir, &mut fake, "round-robin");
    assert!(e.contains("created for --policy fair-share"), "{e}");
    // Only what differs is named.
    let other = Settings {
        orgs: vec![("physics".into(), 8), ("biology".into(), 8)],
        ..settings("fair-share")
    };
    let e = Controller::open_or_create(&db(&dir), &other, &Registry::builtin(), &mut fake)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(
            "created for (organizations physics=8,chemistry=8), not (organizations physics=8,biology=8)"
        ),
        "{e}"
    );
}

#[test]
fn scontrol_lines_that_say_the_caller_lacks_rights() {
    // As Slurm 22.05 prints them to a user without operator rights.
    assert!(no_rights("Job 43016: Access/permission denied"));
    assert!(no_rights("slurm_update error: Invalid user id for job 43016"));
    assert!(!no_rights(
        "slurm_update error: Invalid job id specified for job 42"
    ));
}

#[test]
fn scontrol_error_lines_name_their_job() {
    assert!(mentions_job("Invalid job id specified for job 42", "42"));
    assert!(!mentions_job("Invalid job id specified for job 421", "42"));
    assert!(mentions_job("Job 13_2 is not pending", "13_2"));
}

/// Pending array elements share one job record until an update gives one
/// a factor of its own (Slurm splits it off): the controller follows the
/// new record, so the next cycle finds every factor where it put it.
#[test]
fn array_elements_split_off_by_their_update_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(1);
    let mut c = controller(&db(&dir), "fcfs", &mut fake);
    fake.submit("alice", "physics", 6, 100);
    for j in fake.jobs.iter_mut().skip(1) {
        (j.in_array, j.array_born) = (true, true);
    }
    fake.advance(1);
    let first = cycle(&mut c, &mut fake);
    assert_eq!(first.changes.len(), 5);
    assert_eq!(fake.jobs.iter().filter(|j| j.in_array).count(), 1);
    let second = cycle(&mut c, &mut fake);
    assert!(
        second.changes.is_empty() && second.not_stuck.is_empty(),
        "{second:?}"
    );
}

#[test]
fn a_broker_database_or_a_folder_is_not_a_controller() {
    let dir = tempfile::tempdir().unwrap();
    let broker = dir.path().join("broker.db");
    drop(Live::create(&broker, &Config::default(), &Registry::builtin()).unwrap());
    let e = Controller::open(&broker, &Registry::builtin())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("a broker's"), "{e}");
    let mut fake = Fake::new(2);
    let e = Controller::open_or_create(dir.path(), &settings("fcfs"), &Registry::builtin(), &mut fake)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a file"), "{e}");
}

fn with_control(policy: &str, control: &str) -> Settings {
    Settings {
        control: Some(control.into()),
        ..settings(policy)
    }
}

/// The workflow each followed job's task has in the core.
fn workflow_refs(c: &Controller) -> BTreeMap<String, Option<WorkflowRef>> {
    let view = c.live().core().view();
    c.jobs()
        .iter()
        .map(|(id, t)| (id.clone(), view.task(t.task).and_then(|v| v.spec().workflow())))
        .collect()
}

/// A dependency chain is a workflow: its first job and the jobs after
/// it share one workflow, a job's name is its activity, and a job that
/// waits on a dependency reaches the core only when Slurm can run it.
#[test]
fn dependency_chains_are_workflows_whose_jobs_reach_the_core_when_runnable() {
    let dir = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(4);
    let set = with_control("workflow-fcfs", "workflow-fairness[tau=0.05]");
    let mut c = Controller::open_or_create(&db(&dir), &set, &Registry::builtin(), &mut fake).unwrap();
    let (root, tasks) = fake.workflow("alice", "physics", 6, 10);
    let lone = fake.submit("carol", "chemistry", 1, 10)[0];
    fake.advance(1);
    let first = cycle(&mut c, &mut fake);
    assert_eq!((first.submitted, first.waiting), (2, 6), "{first:?}");
    let refs = workflow_refs(&c);
    let root_ref = refs[&root.to_string()].expect("the root is in a workflow");
    assert_eq!(refs[&lone.to_string()], None, "a job without dependencies is not");
    // Restarted, it still knows the workflow once its root has ended.
    drop(c);
    let mut c = Controller::open(&db(&dir), &Registry::builtin()).unwrap();
    fake.advance(10);
    let second = cycle(&mut c, &mut fake);
    assert_eq!(second.submitted, 6, "{second:?}");
    let refs = workflow_refs(&c);
    for t in &tasks {
        let r = refs[&t.to_string()].expect("a task after the root is in its workflow");
        assert_eq!(r.workflow, root_ref.workflow);
        assert_ne!(r.activity, root_ref.activity, "another name, another activity");
    }
    let activities: BTreeSet<u32> = tasks
        .iter()
        .map(|t| refs[&t.to_string()].unwrap().activity)
        .collect();
    assert_eq!(activities.len(), 1);
}

/// Two workflows of one user: the first is wide, the second arrives when
/// the first is under way. Under workflow-fcfs alone the second's first
/// job waits behind every task of the first; the workflow-fairness
/// Control raises it (its workflow has all its work pending), and Slurm
/// starts it in the next wave, ahead of the first's waiting tasks.
#[test]
fn the_workflow_controls_raises_reach_slurm() {
    // (the first's last start, the second's first start, each one's end)
    let run = |control: Option<&str>| -> (i64, i64, i64, i64) {
        let dir = tempfile::tempdir().unwrap();
        let mut fake = Fake::new(4);
        let set = Settings {
            control: control.map(str::to_owned),
            ..settings("workflow-fcfs")
        };
        let mut c = Controller::open_or_create(&db(&dir), &set, &Registry::builtin(), &mut fake).unwrap();
        let (r1, w1) = fake.workflow("alice", "physics", 32, 20);
        let mut second = None;
        let (mut started, mut ended) = (BTreeMap::new(), BTreeMap::new());
        for step in 0..200 {
            if step == 10 {
                second = Some(fake.workflow("alice", "physics", 8, 20));
            }
            fake.advance(5);
            cycle(&mut c, &mut fake);
            for j in fake.jobs.iter().filter(|j| j.running_since.is_some()) {
                started.entry(j.id).or_insert(fake.now);
            }
            for id in (r1..=fake.next).filter(|id| !fake.jobs.iter().any(|j| j.id == *id)) {
                ended.entry(id).or_insert(fake.now);
            }
            if fake.jobs.is_empty() {
                break;
            }
        }
        let (r2, w2) = second.unwrap();
        let last = |root: u64, tasks: &[u64]| tasks.iter().chain([&root]).map(|id| ended[id]).max().unwrap();
        (
            w1.iter().map(|id| started[id]).max().unwrap(),
            started[&r2],
            last(r1, &w1),
            last(r2, &w2),
        )
    };
    let fcfs = run(None);
    let fair = run(Some("workflow-fairness[tau=0.05]"));
    eprintln!(
        "(first's last start, second's first start, first's end, second's end): fcfs {fcfs:?}, workflow-fairness {fair:?}"
    );
    assert!(fcfs.1 >= fcfs.0, "workflow-fcfs: {fcfs:?}");
    assert!(fair.1 < fair.0, "workflow-fairness: {fair:?}");
    // Slurm started it in the first wave after the second was submitted
    // (at 50 s; the first's tasks end in waves of 20 s from 45 s).
    assert!(fair.1 <= 65, "workflow-fairness: {fair:?}");
}
