"""fairsched.gym.SchedulingEnv on small windows of the bundled KTH-SP2 log."""

import threading
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import fairsched  # noqa: E402
from fairsched.gym import FEATURES, SchedulingEnv  # noqa: E402

# Small windows keep every test well under a second. WINDOW_START is a
# 12-hour stretch of the log (in the log's seconds) with a few dozen jobs
# and a queue that builds up, so that order matters.
WINDOW = 12 * 3600
WINDOW_START = 1_800_000


def first_fit(obs, info):
    """The first visible task that fits, else wait."""
    valid = np.flatnonzero(info["action_mask"][:-1])
    return int(valid[0]) if len(valid) else len(info["action_mask"]) - 1


def always_wait(obs, info):
    return len(info["action_mask"]) - 1


def masked_random(seed):
    rng = np.random.default_rng(seed)

    def act(obs, info):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    return act


def play(env, agent, **reset_kw):
    """Runs one episode; returns (return, trajectory, last info)."""
    obs, info = env.reset(**reset_kw)
    traj = [(obs, None, info)]
    total = 0.0
    while True:
        obs, reward, terminated, truncated, info = env.step(agent(obs, info))
        assert not truncated
        total += reward
        traj.append((obs, reward, info))
        if terminated:
            return total, traj, info


def same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, list, tuple)):
        return len(a) == len(b) and np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


@pytest.fixture
def env():
    e = SchedulingEnv(window=WINDOW, queue=16)
    yield e
    e.close()


# The observation's bounds are honest: ages, users and priorities have none.
@pytest.mark.filterwarnings("ignore:.*Box observation space m..imum value is")
def test_check_env():
    from gymnasium.utils.env_checker import check_env

    e = SchedulingEnv(window=6 * 3600, queue=8, seed=0)
    check_env(e, skip_render_check=True)
    e.close()


def test_spaces_and_first_observation(env):
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert obs["queue"].shape == (16, len(FEATURES))
    n = info["queue_len"]
    assert n == int(obs["queue_len"][0]) >= 1
    visible = min(n, 16)
    assert (obs["queue"][:visible, 0] >= 1).all()  # slots
    assert (obs["queue"][visible:] == 0).all()  # padding
    assert (obs["queue"][:visible, 5] == -1).all()  # no estimates
    free, busy, total = obs["platform"]
    assert free + busy == total == fairsched.trace_span()["max_procs"]
    mask = info["action_mask"]
    assert mask.dtype == np.int8 and mask.shape == (17,) and mask[-1] == 1
    assert mask[:-1].any()  # asked only when some waiting task fits
    assert (mask[visible:-1] == 0).all()
    assert np.array_equal(env.action_masks(), mask.astype(bool))
    start, length = env.window
    span = fairsched.trace_span()
    assert length == WINDOW and span["first_submit"] <= start <= span["last_submit"]


def test_same_seed_same_episode():
    episodes = []
    for _ in range(2):
        e = SchedulingEnv(window=WINDOW, queue=8)
        episodes.append(play(e, masked_random(5), seed=11))
        window = e.window
        e.close()
    (r1, t1, _), (r2, t2, _) = episodes
    assert r1 == r2 and len(t1) == len(t2)
    for (o1, rw1, i1), (o2, rw2, i2) in zip(t1, t2):
        assert same(o1, o2) and rw1 == rw2 and same(i1, i2)
    # A reset with the same seed on a used environment gives it again.
    e = SchedulingEnv(window=WINDOW, queue=8)
    play(e, first_fit, seed=99)
    r3, t3, _ = play(e, masked_random(5), seed=11)
    assert e.window == window and r3 == r1 and len(t3) == len(t1)
    e.close()


def test_bad_actions_raise(env):
    obs, info = env.reset(options={"start": WINDOW_START})
    for bad in (-1, 17, 100, 1.0, "0", None, True, np.array([1, 2])):
        with pytest.raises(ValueError, match="action space"):
            env.step(bad)
    # In the space but starting nothing: waits by default...
    n = info["queue_len"]
    if n < 16:
        env.step(n)  # no task there: a wait
    strict = SchedulingEnv(window=WINDOW, queue=16, invalid_action="raise")
    obs, info = strict.reset(options={"start": WINDOW_START})
    invalid = np.flatnonzero(info["action_mask"] == 0)
    assert len(invalid) > 0
    with pytest.raises(ValueError, match="starts nothing"):
        strict.step(int(invalid[0]))
    # ...and the refused action left the decision pending.
    strict.step(first_fit(obs, info))
    strict.close()


def _first_fit_run(env, **reset_kw):
    ret, traj, info = play(env, first_fit, **reset_kw)
    builtin = fairsched.simulate(policies=["first-fit"], progress=False, **env.sim_kwargs)
    longest = max(i["queue_len"] for _, _, i in traj)
    return ret, info, builtin, longest


# Windows (start, length) where the queue builds up and the order matters:
# first-fit's mean bounded slowdown is 3.46 and 11.4, fcfs's 12.1 and 100.
WINDOWS = [(WINDOW_START, WINDOW), (11_400_000, 86400)]


@pytest.mark.parametrize("start,length", WINDOWS)
def test_first_fit_agent_is_the_first_fit_policy(start, length):
    # The agent sees the first `queue` waiting tasks. While the queue is no
    # longer than that, "the first visible task that fits" is the Rust
    # `first-fit` pick (the first waiting task in submission order that
    # fits) and the agent is asked exactly when `first-fit` is (a slot is
    # free and some waiting task fits): the same decisions, the same run.
    env = SchedulingEnv(window=length, queue=16)
    ret, info, builtin, longest = _first_fit_run(env, options={"start": start})
    assert longest <= 16, "the window's queue must fit in the observation for this test"
    assert info["forced_starts"] == 0
    mean_bsld = builtin.summary["mean_bounded_slowdown"]
    assert ret == pytest.approx(-mean_bsld, rel=1e-12)
    # The env's own run is the built-in's, task for task.
    assert env.result.summary["mean_bounded_slowdown"] == mean_bsld
    cols = ["task", "start", "end"]
    mine = env.result.tasks[cols].sort_values("task").reset_index(drop=True)
    theirs = builtin.tasks[cols].sort_values("task").reset_index(drop=True)
    assert mine.equals(theirs)
    env.close()


@pytest.mark.parametrize("start,length", WINDOWS)
def test_first_fit_agent_on_a_truncated_queue(start, length):
    # Truncation is the one difference: when none of the visible tasks fits
    # but a later one does, `first-fit` starts the later one and the agent
    # can only wait. With queue=1 the agent sees only the head, starts it
    # when it fits and otherwise waits: that is `fcfs` (head-of-line
    # blocking). A forced start cannot happen: it needs a wait while
    # nothing runs, and then the head fits (all slots are free).
    env = SchedulingEnv(window=length, queue=1)
    ret, info, first_fit_run, longest = _first_fit_run(env, options={"start": start})
    assert longest > 1
    assert info["forced_starts"] == 0
    fcfs = fairsched.simulate(policies=["fcfs"], progress=False, **env.sim_kwargs)
    assert ret == pytest.approx(-fcfs.summary["mean_bounded_slowdown"], rel=1e-12)
    assert -ret > first_fit_run.summary["mean_bounded_slowdown"] * 2
    env.close()


def test_jain_return_is_the_run_index():
    env = SchedulingEnv(window=WINDOW, queue=16, reward="jain")
    ret, _, _ = play(env, masked_random(2), options={"start": WINDOW_START})
    assert ret == pytest.approx(env.result.summary["jain_users_bsld"]["index"], rel=1e-9)
    assert 0 < ret <= 1
    env.close()


def test_bsld_return_is_the_run_mean(env):
    ret, _, info = play(env, masked_random(4), seed=21)
    assert ret == pytest.approx(-env.result.summary["mean_bounded_slowdown"], rel=1e-9)
    assert info["mean_bsld"] == pytest.approx(-ret, rel=1e-9)


def test_an_always_waiting_agent_strands_nothing(env):
    ret, traj, info = play(env, always_wait, options={"start": WINDOW_START})
    tasks = env.result.tasks
    assert len(tasks) == env.result.summary["jobs"] > 0
    assert (tasks["outcome"] == "completed").all()
    assert info["completed"] == len(tasks)
    # Every start was forced (the agent never starts anything), and they
    # happen only when nothing runs: one task at a time.
    assert info["forced_starts"] == len(tasks)
    assert ret == pytest.approx(-env.result.summary["mean_bounded_slowdown"], rel=1e-9)


def test_estimates_are_shown_only_when_asked():
    env = SchedulingEnv(window=WINDOW, queue=16, estimates=True)
    obs, info = env.reset(options={"start": WINDOW_START})
    visible = min(info["queue_len"], 16)
    assert (obs["queue"][:visible, 5] >= 0).all()
    env.close()


def test_reset_and_close_abandon_an_unfinished_episode():
    env = SchedulingEnv(window=WINDOW, queue=16)
    before = threading.active_count()
    obs, info = env.reset(options={"start": WINDOW_START})
    env.step(first_fit(obs, info))
    first = env.reset(options={"start": WINDOW_START})  # abandons the first run
    assert threading.active_count() == before + 1
    ret, _, _ = play(env, first_fit, options={"start": WINDOW_START})
    assert same(first[0], env.reset(options={"start": WINDOW_START})[0])
    env.close()  # abandons that one
    env.close()  # twice is fine
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    # A finished episode: step again is refused.
    play(env, first_fit, options={"start": WINDOW_START})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.close()


def test_gymnasium_make():
    e = gymnasium.make("fairsched/Scheduling-v0", window=6 * 3600, queue=4)
    obs, info = e.reset(seed=1)
    assert e.observation_space.contains(obs)
    e.close()


@pytest.mark.parametrize("warnings_are_errors", [False, True])
def test_empty_windows_are_drawn_again(warnings_are_errors):
    # KTH-SP2 has long quiet stretches: many 10-minute windows hold no job.
    # reset draws again, quietly (simulate's "no job in the window" warning
    # is silenced); a fixed empty window is an error.
    env = SchedulingEnv(window=600, queue=4)
    redraws = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error" if warnings_are_errors else "always")
        obs, info = env.reset(seed=2)  # its first 3 windows are empty
        assert info["queue_len"] >= 1
        redraws += env.redraws
    assert redraws > 0
    assert [str(w.message) for w in caught] == []
    with pytest.raises(ValueError, match="no task to schedule"):
        env.reset(options={"start": 3_400_000})
    env.close()


def test_close_unregisters_the_agent_policy():
    env = SchedulingEnv(window=WINDOW, queue=4)
    env.reset(options={"start": WINDOW_START})
    names = {p["name"] for p in fairsched.policies()}
    assert env._name in names
    env.close()
    assert env._name not in {p["name"] for p in fairsched.policies()}
    env.reset(options={"start": WINDOW_START})  # registered again
    env.close()


def test_exit_with_an_unfinished_episode_is_clean():
    # The run's thread is ended at exit (before the interpreter's
    # finalization, where waking it would abort the process).
    import subprocess
    import sys

    code = (
        "from fairsched.gym import SchedulingEnv\n"
        f"env = SchedulingEnv(window={WINDOW})\n"
        f"obs, info = env.reset(options={{'start': {WINDOW_START}}})\n"
        "env.step(len(info['action_mask']) - 1)\n"
        "print('bye')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "bye\n"
