"""A Gymnasium environment: an agent schedules windows of a real log.

    import fairsched.gym
    env = fairsched.gym.SchedulingEnv(window=86400, queue=16)
    obs, info = env.reset(seed=1)
    while True:
        mask = info["action_mask"]
        action = int(mask.nonzero()[0][0])          # first valid: first-fit
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated:
            break

An episode is one simulation (``fairsched.simulate``) of the jobs a log
submitted in a window ``[start, start + window)`` (``start`` drawn
uniformly, from the environment's seeded generator, so that the window
lies inside the log's submit span; a window without a job is drawn again;
``reset(options={"start": s})`` fixes it; ``env.window`` is the episode's
``(start, length)``). The agent is the run's order policy: each time a slot
is free and a waiting task fits in the free slots, the simulator asks it
which waiting task starts (a step), and the answer takes effect at that
instant of simulated time. The next observation is the next such decision,
however far in simulated time it is. When no waiting task fits, the
simulator is not asking anything and the environment answers "wait" for the
agent (no step).

Actions (``Discrete(queue + 1)``): ``i < queue`` starts the i-th task of the
visible queue (the first ``queue`` waiting tasks of the machine, in
submission order); ``queue`` waits (leaves the free slots idle until the
next event: an arrival or a completion). A start is valid when ``i <
queue_len`` and the task fits in the free slots; ``info["action_mask"]``
(int8, as ``action_space.sample(mask=...)`` takes it; booleans from
:meth:`SchedulingEnv.action_masks`) says which actions are valid (the wait
action always is). An invalid in-space action waits
(``invalid_action="wait"``) or raises ``ValueError``
(``invalid_action="raise"``); an action outside the space always raises
``ValueError``.

An agent that waits while nothing runs on the machine could strand the
queue forever (no completion would wake it up): then the environment starts
the oldest waiting task that fits instead, and counts it in
``info["forced_starts"]`` (over the episode).

Observations (a ``Dict``, all ``float32``):

- ``queue``: ``[queue, 6]``, one row per visible waiting task, columns
  :data:`FEATURES` = slots, age (s since submit), user, org, priority,
  estimate (the user's runtime estimate in seconds with
  ``estimates=True``, else -1); rows past ``queue_len`` are zeros;
- ``queue_len``: ``[1]``, the machine's real number of waiting tasks (it
  may exceed ``queue``: the queue is shown truncated, never silently);
- ``platform``: ``[3]``, the deciding machine's free, busy and total slots
  (the platform's, for the default single pool).

Rewards telescope, so that an episode's return is the score of the run:

- ``"bsld"``: the return is minus the mean bounded slowdown of the
  completed tasks, bsld = max(1, (wait + run) / max(run, 10 s)) as in
  fairsched's ``summary.json`` (``mean_bounded_slowdown``);
- ``"jain"``: the return is Jain's index over the users of their mean
  bounded slowdowns (``jain_users_bsld``).

A completed task's run time is known once it left (the policy is told),
so the reward is computed from the notices the policy receives;
nothing else the agent sees is clairvoyant.

Implementation: the run is ``fairsched.simulate`` in a background thread,
with a registered Python order policy whose ``pick`` hands the observation
to :meth:`step` and blocks until it gets the action (the native run
releases the GIL while it simulates). :meth:`reset` and :meth:`close` end an
unfinished run. After the last step, ``env.result`` is the run's
``fairsched.Result`` (its ``summary`` has the same ``mean_bounded_slowdown``
as minus the ``"bsld"`` return), and ``env.sim_kwargs`` replays the same
window under another policy. ``gymnasium.make("fairsched/Scheduling-v0",
...)`` builds one once this module is imported.
"""

from __future__ import annotations

import atexit
import itertools
import queue as _queue
import sys
import threading
import warnings
import weakref
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

import fairsched

__all__ = ["SchedulingEnv", "FEATURES"]

#: The columns of the observation's ``queue``.
FEATURES = ("slots", "age", "user", "org", "priority", "estimate")

_TAU_MS = 10_000  # the bounded slowdown's bound, as fairsched's metrics
_names = itertools.count()

# Environments with an unfinished run. Their runs are ended at exit, before
# the interpreter's finalization: a daemon thread woken then is stopped in
# the middle of the native run, which aborts the process.
_live: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _abandon_all():
    for env in list(_live):
        try:
            env._abandon()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def _quiet_empty_windows():
    """An empty window is drawn again (see reset): simulate's warning about
    it, attributed to this module's call, would only be noise. Installed at
    each reset (no thread runs then), not once at import: a
    ``warnings.catch_warnings`` block around the import (pytest's, for one)
    would drop it."""
    warnings.filterwarnings(
        "ignore", message="no job in the window", category=RuntimeWarning, module=r"fairsched\.gym"
    )


class _Abandon(Exception):
    """Raised in the agent policy's pick to stop an abandoned episode's run."""


_ABANDON = object()  # sent instead of an action to abandon the run


def _ms(seconds: float) -> int:
    # Times are whole milliseconds in the simulator; Python sees ms / 1000.
    return int(round(seconds * 1000.0))


def _bsld(submit: float, start: float, end: float) -> float:
    """fairsched's bounded slowdown, with its arithmetic (milliseconds)."""
    response = _ms(end) - _ms(submit)
    run = _ms(end) - _ms(start)
    return max(1.0, response / max(run, _TAU_MS))


def _jain(xs) -> float:
    xs = list(xs)
    if not xs:
        return 0.0
    s = sum(xs)
    s2 = sum(x * x for x in xs)
    return (s * s) / (len(xs) * s2) if s2 > 0 else 1.0


class _Episode:
    """One run: its thread, its two queues and what the policy tracked."""

    def __init__(self, env: SchedulingEnv, window: tuple[int, int], seed: int):
        self.queue_cap = env.queue
        self.estimates = env.estimates
        self.window = window
        self.seed = seed
        self.obs_q: _queue.Queue = _queue.Queue()  # policy -> env
        self.act_q: _queue.Queue = _queue.Queue()  # env -> policy
        self.abandoned = False
        self.done = False
        self.result = None
        self.error: BaseException | None = None
        # machine -> {task: (seq, slots)}: the waiting tasks
        self.waiting: dict[int, dict[int, tuple[int, int]]] = {}
        self.completed = 0
        self.sum_bsld = 0.0
        self.users: dict[int, list] = {}  # user -> [sum bsld, n]
        self.forced_starts = 0
        self.decisions = 0
        self.now = 0.0
        # The decision being asked (set by pick before it blocks)
        self.visible: list[int] = []
        self.free = 0
        self.running = 0

    # -- the order policy (runs in the simulation's thread) --------------

    def notify(self, view, n) -> None:
        kind = n.kind
        if kind in ("queued", "requeued"):
            t = view.task(n.task)
            if t is not None:
                m = n.machine if n.machine is not None else t.machine
                self.waiting.setdefault(m, {})[n.task] = (t.seq, t.slots)
        elif kind == "started":
            self.waiting.get(n.machine, {}).pop(n.task, None)
        elif kind == "left":
            if n.machine is not None:
                self.waiting.get(n.machine, {}).pop(n.task, None)
            if n.outcome == "completed" and n.was_running:
                t = view.task(n.task)  # still shown as it was
                if t is not None and t.start is not None:
                    b = _bsld(t.submit, t.start, view.now)
                    self.completed += 1
                    self.sum_bsld += b
                    u = self.users.setdefault(t.user, [0.0, 0])
                    u[0] += b
                    u[1] += 1

    def pick(self, view, machine: int):
        if self.abandoned:
            raise _Abandon()
        waiting = self.waiting.get(machine)
        if not waiting:
            return None
        m = view.machine(machine)
        free = m.free
        order = sorted(waiting, key=lambda t: waiting[t][0])
        fits = [t for t in order if waiting[t][1] <= free]
        if not fits:
            return None  # nothing can start: no decision to ask for
        self.now = view.now
        self.free, self.running = free, m.running
        visible = order[: self.queue_cap]
        self.visible = visible
        rows = np.zeros((self.queue_cap, len(FEATURES)), dtype=np.float32)
        mask = np.zeros(self.queue_cap + 1, dtype=np.int8)
        mask[-1] = 1
        for i, tid in enumerate(visible):
            t = view.task(tid)
            est = -1.0
            if self.estimates and t.estimate is not None:
                est = t.estimate
            rows[i] = (t.slots, t.age, t.user, t.org, t.priority, est)
            mask[i] = t.slots <= free
        obs = {
            "queue": rows,
            "queue_len": np.array([len(order)], dtype=np.float32),
            "platform": np.array([free, m.busy, m.capacity], dtype=np.float32),
        }
        self.decisions += 1
        self.obs_q.put(("decision", obs, mask, machine))
        action = self.act_q.get()
        if action is _ABANDON:
            raise _Abandon()
        if action is None and m.running == 0:
            # Waiting with nothing running would strand the queue.
            self.forced_starts += 1
            return fits[0]
        return action

    # -- the thread -------------------------------------------------------

    def run(self, name: str, trace, procs) -> None:
        try:
            self.result = fairsched.simulate(
                trace,
                policies=[name],
                window=self.window,
                procs=procs,
                seed=self.seed,
                progress=False,
            )
        except BaseException as e:  # noqa: BLE001 - handed to the env
            self.error = e
        finally:
            self.obs_q.put(("done",))


class _AgentPolicy:
    """The registered order policy: forwards to the env's current episode."""

    def __init__(self, episode: _Episode):
        self._ep = episode

    def notify(self, view, notice):
        self._ep.notify(view, notice)

    def pick(self, view, machine):
        return self._ep.pick(view, machine)


class SchedulingEnv(gymnasium.Env):
    """Schedule windows of a real log; see the module's documentation.

    trace: an SWF log's path (plain or .gz); None = the bundled KTH-SP2 log.
    platform: the number of processors (int), or None for the log's.
    window: the episode's length of submissions, in seconds.
    queue: how many waiting tasks the observation shows.
    reward: "bsld" or "jain".
    estimates: show the users' runtime estimates (the policy is registered
        as reading estimates).
    seed: the default seed of the first reset.
    invalid_action: "wait" (an in-space action that starts nothing waits)
        or "raise" (it raises ValueError).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        trace=None,
        platform=None,
        *,
        window: int = 86400 * 3,
        queue: int = 16,
        reward: str = "bsld",
        estimates: bool = False,
        seed: int | None = None,
        invalid_action: str = "wait",
    ):
        super().__init__()
        if reward not in ("bsld", "jain"):
            raise ValueError(f"reward={reward!r}: use 'bsld' or 'jain'")
        if invalid_action not in ("wait", "raise"):
            raise ValueError(f"invalid_action={invalid_action!r}: use 'wait' or 'raise'")
        if isinstance(queue, bool) or not isinstance(queue, (int, np.integer)) or queue < 1:
            raise ValueError(f"queue={queue!r}: give the number of visible tasks, an int ≥ 1")
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise ValueError(f"window={window!r}: give a length in seconds, an int ≥ 1")
        if platform is not None and (
            isinstance(platform, bool) or not isinstance(platform, (int, np.integer)) or platform < 1
        ):
            raise ValueError(
                f"platform={platform!r}: give a number of processors (int ≥ 1) or None for the log's"
            )
        self.trace = trace
        self.platform = None if platform is None else int(platform)
        self.window_len = int(window)
        self.queue = int(queue)
        self.reward_kind = reward
        self.estimates = bool(estimates)
        self.invalid_action = invalid_action
        self._seed = seed
        self.span = fairsched.trace_span(trace)

        self.action_space = spaces.Discrete(self.queue + 1)
        inf = np.inf
        low = np.array([0, 0, -inf, 0, -inf, -1], dtype=np.float32)
        high = np.full(len(FEATURES), inf, dtype=np.float32)
        self.observation_space = spaces.Dict(
            {
                "queue": spaces.Box(
                    low=np.tile(low, (self.queue, 1)),
                    high=np.tile(high, (self.queue, 1)),
                    dtype=np.float32,
                ),
                "queue_len": spaces.Box(0, inf, shape=(1,), dtype=np.float32),
                "platform": spaces.Box(0, inf, shape=(3,), dtype=np.float32),
            }
        )

        # One registered policy per environment (registered at the first
        # reset, unregistered by close); its factory builds the policy of
        # the episode being started.
        self._name = f"gym-agent-{next(_names)}-{id(self):x}"
        self._registered = False

        self._ep: _Episode | None = None
        self._thread: threading.Thread | None = None
        self._mask = np.zeros(self.queue + 1, dtype=np.int8)
        self._obs = None
        self._machine = 0
        self._reported = 0.0
        self._episode_started = False
        self.window: tuple[int, int] | None = None
        self.run_seed: int | None = None
        #: Empty windows drawn (and drawn again) by the last reset.
        self.redraws = 0
        self.result = None

    # -- episodes ---------------------------------------------------------

    @property
    def sim_kwargs(self) -> dict:
        """The keyword arguments of ``fairsched.simulate`` for the current
        episode's run (trace, window, procs, seed), to run another policy
        on the same window: ``fairsched.simulate(policies=["easy"], **env.sim_kwargs)``."""
        if self.window is None:
            raise RuntimeError("call reset() first")
        return {
            "trace": self.trace,
            "window": self.window,
            "procs": self.platform,
            "seed": self.run_seed,
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Starts an episode (ending an unfinished one).

        options: {"start": s} fixes the window's start (log seconds) in
        place of drawing it.
        """
        if seed is None and not self._episode_started:
            seed = self._seed
        super().reset(seed=seed)
        self._episode_started = True
        self._abandon()
        options = options or {}
        first = int(self.span["first_submit"])
        last = int(self.span["last_submit"])
        fixed = options.get("start")
        self.redraws = 0
        _quiet_empty_windows()
        for _ in range(1000):
            if fixed is not None:
                start = int(fixed)
            else:
                hi = max(first, last - self.window_len + 1)
                start = int(self.np_random.integers(first, hi + 1))
            run_seed = int(self.np_random.integers(0, 2**32))
            msg = self._start((start, self.window_len), run_seed)
            if msg[0] == "decision":
                return self._observe(msg), self._info()
            # The run ended before any decision: an empty window (no job
            # submitted in it, or none that could start). Draw another one.
            self.redraws += 1
            if fixed is not None:
                raise ValueError(
                    f"window start {fixed} (length {self.window_len} s): no task to "
                    f"schedule there in the log"
                )
        raise RuntimeError("1000 windows drawn, none with a task to schedule")

    def _register(self):
        if self._registered:
            return
        ref = weakref.ref(self)  # the registry must not keep the env alive

        def factory():
            env = ref()
            if env is None or env._ep is None:
                raise RuntimeError("the SchedulingEnv of this policy is gone")
            return _AgentPolicy(env._ep)

        fairsched.register(
            "order",
            self._name,
            factory,
            estimates=self.estimates,
            doc="the agent of a fairsched.gym.SchedulingEnv",
        )
        self._registered = True

    def _start(self, window, run_seed):
        self._register()
        self.window = window
        self.run_seed = run_seed
        self.result = None
        self._reported = 0.0
        ep = _Episode(self, window, run_seed)
        self._ep = ep
        self._thread = threading.Thread(
            target=ep.run,
            args=(self._name, self.trace, self.platform),
            name=f"{self._name}-run",
            daemon=True,
        )
        self._thread.start()
        _live.add(self)
        msg = ep.obs_q.get()
        if msg[0] == "done":
            self._finish()
        return msg

    def _finish(self):
        """The run ended: join its thread and raise its error, if any."""
        ep = self._ep
        ep.done = True
        _live.discard(self)
        self._thread.join()
        self._thread = None
        if ep.error is not None and not ep.abandoned:
            err = ep.error
            if isinstance(err, Warning) and str(err).startswith("no job in the window"):
                return  # warnings as errors: an empty window all the same
            raise RuntimeError(f"the episode's simulation failed: {err}") from err
        self.result = ep.result

    def _abandon(self):
        """Ends the current run if it is unfinished (its pick raises)."""
        ep, thread = self._ep, self._thread
        if ep is None or ep.done or thread is None:
            return
        if threading.current_thread() is thread:
            # Collected from a policy call of the run itself: its next
            # pick raises.
            ep.abandoned = True
            return
        ep.abandoned = True
        ep.act_q.put(_ABANDON)
        while True:  # the run stops at its pick: PolicyError, ignored
            msg = ep.obs_q.get()
            if msg[0] == "done":
                break
            ep.act_q.put(_ABANDON)
        thread.join()
        ep.done = True
        _live.discard(self)
        self._thread = None

    def close(self):
        self._abandon()
        if self._registered:
            fairsched.unregister(self._name)
            self._registered = False
        super().close()

    def __del__(self):
        if sys.is_finalizing():
            return  # too late to wake the run's thread (see _live)
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection
            pass

    # -- steps ------------------------------------------------------------

    def action_masks(self) -> np.ndarray:
        """The valid actions of the current decision (bool, queue + 1)."""
        return self._mask.astype(bool)

    def _as_action(self, action) -> int:
        a = action
        if isinstance(a, np.ndarray) and a.shape in ((), (1,)):
            a = a.reshape(()).item() if np.issubdtype(a.dtype, np.integer) else a
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise ValueError(
                f"action {action!r} is not in the action space Discrete({self.queue + 1}): "
                f"give an int, 0..{self.queue - 1} to start a visible task, {self.queue} to wait"
            )
        a = int(a)
        if not 0 <= a <= self.queue:
            raise ValueError(
                f"action {a} is out of the action space Discrete({self.queue + 1}): "
                f"0..{self.queue - 1} start a visible task, {self.queue} waits"
            )
        return a

    def step(self, action):
        ep = self._ep
        if ep is None or ep.done:
            raise RuntimeError("the episode is over (or not started): call reset()")
        a = self._as_action(action)
        if a == self.queue:
            task = None
        elif self._mask[a]:
            task = ep.visible[a]
        else:
            n = len(ep.visible)
            if self.invalid_action == "raise":
                why = (
                    f"only {n} task(s) are visible"
                    if a >= n
                    else f"task {ep.visible[a]} needs more than the {ep.free} free slot(s)"
                )
                raise ValueError(
                    f"action {a} starts nothing: {why} (valid actions: "
                    f"{np.flatnonzero(self._mask).tolist()}; {self.queue} waits)"
                )
            task = None
        ep.act_q.put(task)
        msg = ep.obs_q.get()
        terminated = msg[0] == "done"
        if terminated:
            self._finish()
            obs = self._terminal_obs()
        else:
            obs = self._observe(msg)
        reward = self._reward()
        return obs, reward, terminated, False, self._info()

    def _observe(self, msg):
        _, obs, mask, machine = msg
        self._mask = mask
        self._obs = obs
        self._machine = machine
        return obs

    def _terminal_obs(self):
        total = float(self._obs["platform"][2]) if self._obs is not None else 0.0
        self._mask = np.zeros(self.queue + 1, dtype=np.int8)
        self._mask[-1] = 1
        self._obs = {
            "queue": np.zeros((self.queue, len(FEATURES)), dtype=np.float32),
            "queue_len": np.zeros(1, dtype=np.float32),
            "platform": np.array([total, 0.0, total], dtype=np.float32),
        }
        return self._obs

    def _score(self) -> float:
        ep = self._ep
        if self.reward_kind == "bsld":
            return -(ep.sum_bsld / ep.completed) if ep.completed else 0.0
        return _jain(s / n for s, n in ep.users.values())

    def _reward(self) -> float:
        score = self._score()
        r = score - self._reported
        self._reported = score
        return float(r)

    def _info(self) -> dict[str, Any]:
        ep = self._ep
        return {
            "action_mask": self._mask.copy(),
            "queue_len": int(self._obs["queue_len"][0]),
            "time": ep.now,
            "machine": self._machine,
            "forced_starts": ep.forced_starts,
            "decisions": ep.decisions,
            "completed": ep.completed,
            "mean_bsld": (ep.sum_bsld / ep.completed) if ep.completed else None,
            "window": self.window,
        }


# gymnasium.make("fairsched/Scheduling-v0", window=86400, ...) after
# `import fairsched.gym`.
if "fairsched/Scheduling-v0" not in gymnasium.registry:
    gymnasium.register(id="fairsched/Scheduling-v0", entry_point="fairsched.gym:SchedulingEnv")
