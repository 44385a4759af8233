"""Agents in fairsched's Gymnasium environment beside the built-in policies.

    python examples/gym_random.py [EPISODES] [WINDOW_S]     # default: 5 windows of 3 days

Runs two agents for a few episodes of the bundled KTH-SP2 log (each episode
is a window of the log, its start drawn from the seed):

- a masked random agent: a random valid action (a task that fits, or wait);
- a first-fit agent: the first valid task of the visible queue, else wait;

and, on the same windows, fairsched's `fcfs`, `first-fit` and `easy` through
fairsched.simulate. Each score is the mean bounded slowdown of the window's
completed tasks (lower is better); an agent's is minus its episode return.
`forced` counts the starts the environment made for the random agent when it
waited with nothing running (it would have stranded the queue).

The first-fit agent is the `first-fit` policy as long as the waiting queue
is no longer than what the agent sees (`queue=16` tasks): when it is longer
(`max q` > 16) and none of the 16 visible tasks fits but a later one does,
`first-fit` starts that one while the agent can only wait, so their scores
may differ on such windows.

Needs the Python package with its gym extra: pip install '.[gym]' at the
repository's root (docs/python.md).
"""

import sys

import numpy as np

import fairsched
from fairsched.gym import SchedulingEnv


def random_agent(rng):
    def act(obs, info):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    return act


def first_fit_agent(obs, info):
    valid = np.flatnonzero(info["action_mask"][:-1])
    return int(valid[0]) if len(valid) else len(info["action_mask"]) - 1


def play(env, agent, seed):
    obs, info = env.reset(seed=seed)
    ret, steps, longest = 0.0, 0, info["queue_len"]
    while True:
        obs, reward, terminated, truncated, info = env.step(agent(obs, info))
        ret += reward
        steps += 1
        longest = max(longest, info["queue_len"])
        if terminated or truncated:
            info["longest_queue"] = longest
            return ret, steps, info


def main():
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    window = int(sys.argv[2]) if len(sys.argv) > 2 else 3 * 86400
    env = SchedulingEnv(window=window, queue=16)
    builtins = ["fcfs", "first-fit", "easy"]
    header = (
        f"{'episode':>7} {'window (log s)':>20} {'jobs':>5} {'steps':>6} "
        f"{'random':>8} {'forced':>6} {'ff agent':>8} {'max q':>5} "
        + " ".join(f"{p:>9}" for p in builtins)
    )
    print(f"KTH-SP2, windows of {window} s, mean bounded slowdown (lower is better)")
    print(header)
    rng = np.random.default_rng(0)
    totals = {k: [] for k in ["random", "ff agent", *builtins]}
    for ep in range(episodes):
        seed = 1000 + ep
        r_random, steps, info = play(env, random_agent(rng), seed)
        forced = info["forced_starts"]
        r_ff, _, ff_info = play(env, first_fit_agent, seed)  # same seed: same window
        res = fairsched.simulate(policies=builtins, progress=False, **env.sim_kwargs)
        scores = {p: res.summaries[p]["mean_bounded_slowdown"] for p in builtins}
        jobs = res.summaries[builtins[0]]["jobs"]
        totals["random"].append(-r_random)
        totals["ff agent"].append(-r_ff)
        for p in builtins:
            totals[p].append(scores[p])
        start, length = env.window
        print(
            f"{ep:>7} {f'{start}+{length}':>20} {jobs:>5} {steps:>6} "
            f"{-r_random:>8.2f} {forced:>6} {-r_ff:>8.2f} {ff_info['longest_queue']:>5} "
            + " ".join(f"{scores[p]:>9.2f}" for p in builtins)
        )
    print(
        f"{'mean':>7} {'':>20} {'':>5} {'':>6} {np.mean(totals['random']):>8.2f} {'':>6} "
        f"{np.mean(totals['ff agent']):>8.2f} {'':>5} "
        + " ".join(f"{np.mean(totals[p]):>9.2f}" for p in builtins)
    )
    env.close()


if __name__ == "__main__":
    main()
