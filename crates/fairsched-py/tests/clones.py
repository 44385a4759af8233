"""Python clones of two Rust policies (crates/fairsched-core/src/policy/
fifo.rs and fair_share.rs), written only from the documented interface;
the tests check that each gives the Rust policy's schedule."""

import heapq


class FirstFitClone:
    """first-fit: the earliest-submitted waiting task of the machine that
    fits in its free slots."""

    def __init__(self):
        # machine -> {task: (seq, slots)}
        self.waiting = {}

    def notify(self, view, n):
        if n.kind in ("queued", "requeued"):
            t = view.task(n.task)
            self.waiting.setdefault(n.machine, {})[n.task] = (t.seq, t.slots)
        elif n.kind in ("started", "left"):
            for q in self.waiting.values():
                q.pop(n.task, None)

    def fitting(self, view, machine):
        free = view.machine(machine).free
        q = self.waiting.get(machine, {})
        return [t for (s, t) in sorted((s, t) for t, (s, w) in q.items() if w <= free)]

    def pick(self, view, machine):
        free = view.machine(machine).free
        best = None
        for t, (s, w) in self.waiting.get(machine, {}).items():
            if w <= free and (best is None or s < best[0]):
                best = (s, t)
        return None if best is None else best[1]


class FairShareClone:
    """fair-share: the organization with the least slot-time used so far
    for its share of the slots first (organizations owning none last, by
    usage); each organization's tasks in submission order, the head
    starting only if it fits."""

    def __init__(self):
        self.queues = {}  # (machine, org) -> heap of (seq, task, slots)
        self.gone = set()
        self.usage = {}  # org -> [done_ms_slots, running_slots, start_sum]
        self.starts = {}  # task -> (org, slots, start_ms)

    @staticmethod
    def ms(view):
        return round(view.now * 1000)

    def notify(self, view, n):
        now = self.ms(view)
        if n.kind in ("queued", "requeued"):
            t = view.task(n.task)
            heapq.heappush(self.queues.setdefault((n.machine, t.org), []), (t.seq, n.task, t.slots))
            self.gone.discard(n.task)
        if n.kind == "started":
            self.gone.add(n.task)
            t = view.task(n.task)
            u = self.usage.setdefault(t.org, [0, 0, 0])
            u[1] += t.slots
            u[2] += t.slots * now
            self.starts[n.task] = (t.org, t.slots, now)
        elif n.kind == "left":
            self.gone.add(n.task)
            if n.was_running:
                self.stop(n.task, now)
        elif n.kind == "requeued":
            self.stop(n.task, now)

    def stop(self, task, now):
        if task in self.starts:
            org, q, start = self.starts.pop(task)
            u = self.usage[org]
            u[1] -= q
            u[2] -= q * start
            u[0] += q * (now - start)

    def head(self, machine, org):
        h = self.queues.get((machine, org))
        while h and h[0][1] in self.gone:
            heapq.heappop(h)
        return h[0] if h else None

    def pick(self, view, machine):
        now = self.ms(view)
        free = view.machine(machine).free
        best = None
        orgs = sorted(o for (m, o) in self.queues if m == machine)
        for org in orgs:
            h = self.head(machine, org)
            if h is None or h[2] > free:
                continue
            u = self.usage.get(org, [0, 0, 0])
            used = u[0] + u[1] * now - u[2]
            slots = view.org_slots(org) if org < view.org_count else 0
            if best is None:
                better = True
            else:
                bu, bs = best[0], best[1]
                if slots != 0 and bs == 0:
                    better = True
                elif slots == 0 and bs != 0:
                    better = False
                elif slots == 0 and bs == 0:
                    better = used < bu
                else:
                    better = used * bs < bu * slots
            if better:
                best = (used, slots, h[1])
        return None if best is None else best[2]
