"""A model of the cp.async main loops of the tensor-core macro library
(crates/chorus-lang/lib/tensor-core.lisp): `tc-pipeline` (copies issued before the tile's
first ldmatrix, or among them with :issue-in-compute) and `tc-pipeline-fragments` (fragments
double-buffered in registers), run with several warps under random interleavings.

cp.async as PTX defines it: a copy lands in shared memory at any time between its issue and
the `cp.async.wait_group` that forces its group (the N most recent committed groups may stay
in flight); another thread sees it only after that wait and a barrier both threads pass. The
model checks that every ldmatrix of a stage finds the tile it expects, written by every warp
and visible to the reader (no read before its data), that no copy is issued into a stage that
a warp may still read (no write over data in use), and that the last tile is computed. The
CPU executor checks both on the real kernels (it faults an access to a copy not yet complete
for the accessing thread, and a copy over a word another warp read since the last barrier) but
runs a block's warps in one order; the model tries many orders. It models the macros' event
order, not their text: change both together.

    python3 benches/cp_async_pipeline_model.py   # under a second; prints one "ok" a loop (.ci/run)

Each check was seen to fail on a mutated loop: waiting for one group too few, leaving out the
barrier, fetching the next tile's fragments before the barrier, issuing copies one tile
further ahead."""
import random, sys

WARPS = 4


def tc_pipeline(n, stages, steps, issue_in_compute=False, mutate=None):
    """The event order of one warp in `tc-pipeline`: (load stage tile), commit, (wait N),
    sync, (fetch stage tile step), mma."""
    ev = []
    for p in range(stages - 1):
        if p < n:
            ev.append(('load', p, p))
        ev.append(('commit',))
    for t in range(n):
        ev.append(('wait', stages - 2 if mutate != 'wait-short' else stages - 1))
        if mutate != 'no-barrier':
            ev.append(('sync',))
        ahead = t + stages - 1 + (1 if mutate == 'too-far-ahead' else 0)
        issue = ([('load', ahead % stages, ahead)] if ahead < n else []) + [('commit',)]
        if not issue_in_compute:
            ev += issue
        for kk in range(steps):
            ev.append(('fetch', t % stages, t, kk))
            if issue_in_compute and kk == steps - 1:
                ev += issue
            ev.append(('mma',))
    ev.append(('wait', 0))
    return ev


def tc_pipeline_fragments(n, stages, steps, mutate=None):
    """The event order of one warp in `tc-pipeline-fragments`."""
    ev = []
    for p in range(stages - 1):
        if p < n:
            ev.append(('load', p, p))
        ev.append(('commit',))
    ev += [('wait', stages - 2), ('sync',), ('fetch', 0, 0, 0)]
    for t in range(n):
        for kk in range(steps):
            if kk < steps - 1:
                ev.append(('fetch', t % stages, t, kk + 1))
                if kk == 0:
                    ahead = t + stages - 1 + (1 if mutate == 'too-far-ahead' else 0)
                    if ahead < n:
                        ev.append(('load', ahead % stages, ahead))
                    ev.append(('commit',))
                ev.append(('mma',))
            else:
                nxt = ('fetch', (t + 1) % stages, t + 1 if t + 1 < n else None, 0)
                if mutate == 'fetch-before-barrier':
                    ev.append(nxt)
                ev.append(('wait', stages - 2 if mutate != 'wait-short' else stages - 1))
                if mutate != 'no-barrier':
                    ev.append(('sync',))
                if mutate != 'fetch-before-barrier':
                    ev.append(nxt)
                ev.append(('mma',))
    ev.append(('wait', 0))
    return ev


class Failure(Exception):
    pass


def run(events, n, stages, steps, seed):
    rng = random.Random(seed)
    pc = [0] * WARPS
    epoch = [0] * WARPS            # barriers each warp has passed
    at_barrier = set()
    groups = [[] for _ in range(WARPS)]   # committed groups per warp: lists of copies
    open_group = [[] for _ in range(WARPS)]
    # smem[stage][warp part] = (tile, landed, waited_epoch or None)
    smem = [[None] * WARPS for _ in range(stages)]
    pending = []                   # copies not landed: [warp, stage, tile]
    reads = {}                     # (stage, tile) -> list of (warp, epoch) of its fetches
    mmas = [0] * WARPS

    def land(copy):
        w, s, tile = copy
        pending.remove(copy)
        smem[s][w] = [tile, None]

    def wait(w, keep):
        committed = groups[w]
        force = committed[:len(committed) - keep] if keep else committed[:]
        for g in force:
            for copy in g:
                if copy in pending:
                    land(copy)
                w2, s, tile = copy
                if smem[s][w2] is not None and smem[s][w2][0] == tile and smem[s][w2][1] is None:
                    smem[s][w2][1] = epoch[w]
        groups[w] = committed[len(force):]

    while True:
        live = [w for w in range(WARPS) if pc[w] < len(events) and w not in at_barrier]
        if not live and not at_barrier:
            break
        if not live:
            raise Failure("deadlock at a barrier")
        if pending and rng.random() < 0.3:
            land(rng.choice(pending))
            continue
        w = rng.choice(live)
        e = events[pc[w]]
        pc[w] += 1
        kind = e[0]
        if kind == 'load':
            _, s, tile = e
            for (rw, rep) in reads.get((s, tile - stages), []):
                if rep >= epoch[w]:
                    raise Failure(f"warp {w} copies tile {tile} into stage {s} while warp {rw} "
                                  f"may still read tile {tile - stages} there")
            # Every warp must have read the previous tile of this stage before a barrier this
            # warp has passed (reads not yet done are not in `reads`).
            if tile - stages >= 0:
                done = {rw for (rw, rep) in reads.get((s, tile - stages), [])}
                if done != set(range(WARPS)):
                    raise Failure(f"warp {w} copies tile {tile} into stage {s} before every "
                                  f"warp read tile {tile - stages} there")
            copy = (w, s, tile)
            pending.append(copy)
            open_group[w].append(copy)
        elif kind == 'commit':
            groups[w].append(open_group[w])
            open_group[w] = []
        elif kind == 'wait':
            wait(w, e[1])
        elif kind == 'sync':
            at_barrier.add(w)
            if len(at_barrier) == WARPS:
                for x in range(WARPS):
                    epoch[x] += 1
                at_barrier.clear()
        elif kind == 'fetch':
            _, s, tile, kk = e
            if tile is not None:
                for p in range(WARPS):
                    part = smem[s][p]
                    if part is None or part[0] != tile:
                        raise Failure(f"warp {w} reads stage {s} step {kk} for tile {tile}: "
                                      f"warp {p}'s part holds {part and part[0]}")
                    if part[1] is None or (p != w and part[1] >= epoch[w]):
                        raise Failure(f"warp {w} reads tile {tile} in stage {s} before warp "
                                      f"{p}'s copy is waited for and behind a barrier")
                reads.setdefault((s, tile), []).append((w, epoch[w]))
            if any(c[1] == s for c in pending):
                raise Failure(f"warp {w} reads stage {s} with a copy into it in flight")
        elif kind == 'mma':
            mmas[w] += 1
    for w in range(WARPS):
        if mmas[w] != n * steps:
            raise Failure(f"warp {w} did {mmas[w]} mma steps")


def fails(events, n, stages, steps, seed):
    """The failure of one run, or None."""
    try:
        run(events, n, stages, steps, seed)
    except Failure as f:
        return f
    return None


def check(name, make, mutations, seeds=30):
    """Every loop shape passes under `seeds` interleavings; each mutation fails under some."""
    for n in (1, 2, 3, 5, 8):
        for stages in (2, 3, 4):
            for steps in (2, 4):
                events = make(n, stages, steps, None)
                for seed in range(seeds):
                    f = fails(events, n, stages, steps, seed)
                    if f:
                        sys.exit(f"{name}: n={n} stages={stages} steps={steps} seed={seed}: {f}")
    for mutation in mutations:
        if not any(fails(make(n, stages, 2, mutation), n, stages, 2, seed)
                   for n in (3, 5, 8) for stages in (2, 3, 4) for seed in range(40)):
            sys.exit(f"{name}: the model missed the mutation {mutation}")
    print(f"ok {name}")


MUTATIONS = ('wait-short', 'no-barrier', 'too-far-ahead')
check("tc-pipeline", lambda n, s, k, m: tc_pipeline(n, s, k, False, m), MUTATIONS)
check("tc-pipeline :issue-in-compute", lambda n, s, k, m: tc_pipeline(n, s, k, True, m),
      MUTATIONS)
check("tc-pipeline-fragments", tc_pipeline_fragments, MUTATIONS + ('fetch-before-barrier',))
